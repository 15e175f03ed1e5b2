/* opencl_devices.c: the OpenCL devices of this process and what is made
 * once per device: the list (every platform's devices, GPUs first, so that
 * `--device opencl`, device 0, is the first GPU when there is one, else the
 * first device, and opencl:N is line N of `axon info`), the context, and the
 * program of kernels.cl built from the source compiled into the plugin, once
 * per precision (PoCL and GPU drivers also keep compiled binaries in their
 * own on-disk caches: PoCL in ~/.cache/pocl). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl_ext.h> /* CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV */

#include "backend/opencl/opencl_internal.h"
#include "backend/opencl/opencl_peak.h"
#include "base/error.h"
/* Generated in the build tree (cmake/embed_text.cmake), hence <>: */
#include <kernels_cl.h> /* ax_opencl_source_kernels, from kernels.cl */
#include <stats_cl.h>   /* ax_opencl_source_stats, from stats.cl */
#include <image_cl.h>   /* ax_opencl_source_image, from image.cl */

enum { MAX_DEVICES = 64 };

static struct {
    pthread_once_t once;
    pthread_mutex_t lock;
    int count;
    ax_ocl_device devices[MAX_DEVICES];
} list = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

const char *ax_ocl_error_name(int code)
{
    switch (code) {
#define NAME(c) \
    case c:     \
        return #c
        NAME(CL_SUCCESS);
        NAME(CL_DEVICE_NOT_FOUND);
        NAME(CL_DEVICE_NOT_AVAILABLE);
        NAME(CL_COMPILER_NOT_AVAILABLE);
        NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE);
        NAME(CL_OUT_OF_RESOURCES);
        NAME(CL_OUT_OF_HOST_MEMORY);
        NAME(CL_PROFILING_INFO_NOT_AVAILABLE);
        NAME(CL_MEM_COPY_OVERLAP);
        NAME(CL_IMAGE_FORMAT_MISMATCH);
        NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED);
        NAME(CL_BUILD_PROGRAM_FAILURE);
        NAME(CL_MAP_FAILURE);
        NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET);
        NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
        NAME(CL_COMPILE_PROGRAM_FAILURE);
        NAME(CL_LINKER_NOT_AVAILABLE);
        NAME(CL_LINK_PROGRAM_FAILURE);
        NAME(CL_DEVICE_PARTITION_FAILED);
        NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE);
        NAME(CL_INVALID_VALUE);
        NAME(CL_INVALID_DEVICE_TYPE);
        NAME(CL_INVALID_PLATFORM);
        NAME(CL_INVALID_DEVICE);
        NAME(CL_INVALID_CONTEXT);
        NAME(CL_INVALID_QUEUE_PROPERTIES);
        NAME(CL_INVALID_COMMAND_QUEUE);
        NAME(CL_INVALID_HOST_PTR);
        NAME(CL_INVALID_MEM_OBJECT);
        NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
        NAME(CL_INVALID_IMAGE_SIZE);
        NAME(CL_INVALID_SAMPLER);
        NAME(CL_INVALID_BINARY);
        NAME(CL_INVALID_BUILD_OPTIONS);
        NAME(CL_INVALID_PROGRAM);
        NAME(CL_INVALID_PROGRAM_EXECUTABLE);
        NAME(CL_INVALID_KERNEL_NAME);
        NAME(CL_INVALID_KERNEL_DEFINITION);
        NAME(CL_INVALID_KERNEL);
        NAME(CL_INVALID_ARG_INDEX);
        NAME(CL_INVALID_ARG_VALUE);
        NAME(CL_INVALID_ARG_SIZE);
        NAME(CL_INVALID_KERNEL_ARGS);
        NAME(CL_INVALID_WORK_DIMENSION);
        NAME(CL_INVALID_WORK_GROUP_SIZE);
        NAME(CL_INVALID_WORK_ITEM_SIZE);
        NAME(CL_INVALID_GLOBAL_OFFSET);
        NAME(CL_INVALID_EVENT_WAIT_LIST);
        NAME(CL_INVALID_EVENT);
        NAME(CL_INVALID_OPERATION);
        NAME(CL_INVALID_GL_OBJECT);
        NAME(CL_INVALID_BUFFER_SIZE);
        NAME(CL_INVALID_MIP_LEVEL);
        NAME(CL_INVALID_GLOBAL_WORK_SIZE);
        NAME(CL_INVALID_PROPERTY);
        NAME(CL_INVALID_IMAGE_DESCRIPTOR);
        NAME(CL_INVALID_COMPILER_OPTIONS);
        NAME(CL_INVALID_LINKER_OPTIONS);
        NAME(CL_INVALID_DEVICE_PARTITION_COUNT);
#undef NAME
    case -1001:
        return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
        return "unknown";
    }
}

static void text_info(cl_device_id device, cl_device_info what, char *text, size_t capacity)
{
    text[0] = '\0';
    if (clGetDeviceInfo(device, what, capacity, text, NULL) != CL_SUCCESS)
        snprintf(text, capacity, "?");
    text[capacity - 1] = '\0';
}

static void add_device(cl_platform_id platform, cl_device_id id)
{
    if (list.count == MAX_DEVICES)
        return;
    ax_ocl_device *d = &list.devices[list.count++];
    memset(d, 0, sizeof *d);
    d->platform = platform;
    d->id = id;
    text_info(id, CL_DEVICE_NAME, d->name, sizeof d->name);
    text_info(id, CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor);
    text_info(id, CL_DEVICE_VERSION, d->version, sizeof d->version);
    text_info(id, CL_DRIVER_VERSION, d->driver, sizeof d->driver);
    if (clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof d->platform_name, d->platform_name,
                          NULL) != CL_SUCCESS)
        snprintf(d->platform_name, sizeof d->platform_name, "?");
    d->platform_name[sizeof d->platform_name - 1] = '\0';
    cl_device_type type = 0;
    clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    d->gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
    cl_device_fp_config fp64 = 0;
    clGetDeviceInfo(id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL);
    char extensions[8192];
    text_info(id, CL_DEVICE_EXTENSIONS, extensions, sizeof extensions);
    d->fp64 = fp64 != 0 || strstr(extensions, "cl_khr_fp64") != NULL;
    /* A test build's way to meet a device without float64 on any machine:
     * AXON_OPENCL_HIDE_FP64=1 makes every device look as if it lacked it. */
    const char *hide = getenv("AXON_OPENCL_HIDE_FP64");
    if (hide && hide[0] == '1')
        d->fp64 = false;
    clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof d->compute_units, &d->compute_units,
                    NULL);
    clGetDeviceInfo(id, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof d->clock_mhz, &d->clock_mhz, NULL);
    clGetDeviceInfo(id, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof d->vector_width_f32,
                    &d->vector_width_f32, NULL);
    clGetDeviceInfo(id, CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE, sizeof d->vector_width_f64,
                    &d->vector_width_f64, NULL);
    /* NVIDIA's compute capability, for the lanes per SM (opencl_peak.c). */
    if (strstr(extensions, "cl_nv_device_attribute_query")) {
        cl_uint major = 0, minor = 0;
        if (clGetDeviceInfo(id, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, sizeof major, &major,
                            NULL) == CL_SUCCESS &&
            clGetDeviceInfo(id, CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, sizeof minor, &minor,
                            NULL) == CL_SUCCESS)
            d->nv_major = (int)major, d->nv_minor = (int)minor;
    }
    clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof d->memory, &d->memory, NULL);
    clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc, &d->max_alloc, NULL);
    clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof d->max_group, &d->max_group, NULL);
    cl_bool unified = CL_FALSE;
    clGetDeviceInfo(id, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
    d->unified_memory = unified == CL_TRUE;
}

static void enumerate(void)
{
    cl_uint platforms = 0;
    if (clGetPlatformIDs(0, NULL, &platforms) != CL_SUCCESS || platforms == 0)
        return;
    cl_platform_id *ids = calloc(platforms, sizeof *ids);
    if (!ids || clGetPlatformIDs(platforms, ids, NULL) != CL_SUCCESS) {
        free(ids);
        return;
    }
    /* Two passes: GPUs, then everything else. */
    for (int pass = 0; pass < 2; pass++)
        for (cl_uint p = 0; p < platforms; p++) {
            cl_uint devices = 0;
            cl_device_type type = pass == 0 ? CL_DEVICE_TYPE_GPU
                                            : (CL_DEVICE_TYPE_ALL & ~(cl_device_type)CL_DEVICE_TYPE_GPU);
            if (clGetDeviceIDs(ids[p], type, 0, NULL, &devices) != CL_SUCCESS || devices == 0)
                continue;
            cl_device_id *device_ids = calloc(devices, sizeof *device_ids);
            if (device_ids && clGetDeviceIDs(ids[p], type, devices, device_ids, NULL) == CL_SUCCESS)
                for (cl_uint d = 0; d < devices; d++)
                    add_device(ids[p], device_ids[d]);
            free(device_ids);
        }
    free(ids);
}

int ax_ocl_device_count(void)
{
    pthread_once(&list.once, enumerate);
    return list.count;
}

ax_ocl_device *ax_ocl_device_get(int index)
{
    return index >= 0 && index < ax_ocl_device_count() ? &list.devices[index] : NULL;
}

ax_status ax_ocl_no_device(int index)
{
    int count = ax_ocl_device_count();
    if (count == 0)
        return ax_fail(AX_STATUS_UNSUPPORTED, "no OpenCL device %d: this machine has no OpenCL "
                       "platform with a device (install an ICD: pocl-opencl-icd for the CPU, or "
                       "the GPU vendor's OpenCL driver)", index);
    return ax_fail(AX_STATUS_UNSUPPORTED, "no OpenCL device %d: this machine has %d (0 to %d; "
                   "axon info lists them)", index, count, count - 1);
}

static void estimate_peak(const ax_ocl_device *d, ax_ocl_peak *peak)
{
    const ax_ocl_peak_facts facts = {
        .gpu = d->gpu, .fp64 = d->fp64, .vendor = d->vendor,
        .compute_units = d->compute_units, .clock_mhz = d->clock_mhz,
        .vector_width_f32 = d->vector_width_f32, .vector_width_f64 = d->vector_width_f64,
        .nv_major = d->nv_major, .nv_minor = d->nv_minor};
    ax_ocl_peak_estimate(&facts, peak);
}

ax_status ax_ocl_device_properties(int index, ax_device_properties *out, size_t size)
{
    const ax_ocl_device *d = ax_ocl_device_get(index);
    if (!d)
        return ax_ocl_no_device(index);
    ax_device_properties p;
    memset(&p, 0, sizeof p);
    ax_ocl_peak peak;
    estimate_peak(d, &peak);
    p.kind = d->gpu ? AX_DEVICE_KIND_GPU : AX_DEVICE_KIND_ACCELERATOR;
    snprintf(p.name, sizeof p.name, "%.*s", (int)sizeof p.name - 1, d->name);
    p.memory_bytes = (int64_t)d->memory;
    p.compute_units = (int)d->compute_units;
    p.clock_ghz = d->clock_mhz / 1e3;
    p.peak_f32_gflops = peak.f32 / 1e9;
    p.peak_f64_gflops = d->fp64 ? peak.f64 / 1e9 : 0.0;
    /* Losses kept on the device need float64 there (loss_defer declines
     * without it). */
    p.capabilities = AX_DEVICE_CAPABILITY_IMAGES | AX_DEVICE_CAPABILITY_DEVICE_DATA |
                     (d->fp64 ? AX_DEVICE_CAPABILITY_F64 | AX_DEVICE_CAPABILITY_DEVICE_LOSS : 0u);
    AX_TRY(ax_ocl_device_info(index, p.description, sizeof p.description));
    memcpy(out, &p, size < sizeof p ? size : sizeof p);
    return AX_STATUS_OK;
}

ax_status ax_ocl_device_info(int index, char *text, size_t capacity)
{
    const ax_ocl_device *d = ax_ocl_device_get(index);
    if (!d)
        return ax_ocl_no_device(index);
    const ax_ocl_peak_facts facts = {
        .gpu = d->gpu, .fp64 = d->fp64, .vendor = d->vendor,
        .compute_units = d->compute_units, .clock_mhz = d->clock_mhz,
        .vector_width_f32 = d->vector_width_f32, .vector_width_f64 = d->vector_width_f64,
        .nv_major = d->nv_major, .nv_minor = d->nv_minor};
    ax_ocl_peak peak;
    ax_ocl_peak_estimate(&facts, &peak);
    char fp64[320];
    if (d->fp64)
        snprintf(fp64, sizeof fp64, "fp64, est. peak %.1f GFLOP/s float32, %.1f float64 (%s)",
                 peak.f32 / 1e9, peak.f64 / 1e9, peak.basis);
    else
        snprintf(fp64, sizeof fp64, "no fp64, est. peak %.1f GFLOP/s float32 (%s)",
                 peak.f32 / 1e9, peak.basis);
    /* "OpenCL 3.0 PoCL HSTR: ..." -> "OpenCL 3.0" */
    int version_length = 0;
    for (int spaces = 0; d->version[version_length] && spaces < 2; version_length++)
        spaces += d->version[version_length + 1] == ' ';
    snprintf(text, capacity, "%s (%s, %s, %.*s), %u compute units at %u MHz, %.1f GiB, %s",
             d->name, d->gpu ? "GPU" : "not a GPU", d->platform_name, version_length, d->version,
             d->compute_units, d->clock_mhz, (double)d->memory / 1073741824.0, fp64);
    return AX_STATUS_OK;
}

/* Builds kernels.cl (with stats.cl and image.cl) for one precision; the build log in the message on
 * failure. */
static ax_status build_program(int index, ax_ocl_device *d, ax_precision precision,
                               cl_program *out)
{
    const char *sources[3] = {ax_opencl_source_kernels, ax_opencl_source_stats,
                              ax_opencl_source_image};
    cl_int code = CL_SUCCESS;
    cl_program program = clCreateProgramWithSource(d->context, 3, sources, NULL, &code);
    if (code != CL_SUCCESS)
        return ax_fail(AX_STATUS_DEVICE, "OpenCL device %d (%s): clCreateProgramWithSource "
                       "failed: %s (%d)", index, d->name, ax_ocl_error_name(code), code);
    size_t group = AX_OCL_GROUP;
    while (group > 1 && group > d->max_group)
        group /= 2;
    char options[512];
    snprintf(options, sizeof options,
             "-cl-std=CL1.2 -DAX_GROUP=%zu %s %s -DACT_IDENTITY=%d -DACT_SIGMOID=%d "
             "-DACT_TANH=%d -DACT_RELU=%d -DACT_SOFTMAX=%d",
             group, precision == AX_PRECISION_F64 ? "-DAX_F64" : "",
             d->fp64 ? "-DAX_ACC_F64" : "", (int)AX_ACT_IDENTITY, (int)AX_ACT_SIGMOID,
             (int)AX_ACT_TANH, (int)AX_ACT_RELU, (int)AX_ACT_SOFTMAX);
    const char *extra = getenv("AXON_OPENCL_BUILD_OPTIONS"); /* for testing a failing build */
    if (extra && extra[0]) {
        size_t used = strlen(options);
        snprintf(options + used, sizeof options - used, " %s", extra);
    }
    code = clBuildProgram(program, 1, &d->id, options, NULL, NULL);
    if (code != CL_SUCCESS) {
        /* The log's end holds the errors' summary; its start the first error. */
        char log[640] = "";
        size_t length = 0;
        char *full = NULL;
        if (clGetProgramBuildInfo(program, d->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &length) ==
                CL_SUCCESS &&
            length > 0 && (full = calloc(1, length + 1)) != NULL &&
            clGetProgramBuildInfo(program, d->id, CL_PROGRAM_BUILD_LOG, length, full, NULL) ==
                CL_SUCCESS)
            snprintf(log, sizeof log, "%s", full);
        free(full);
        clReleaseProgram(program);
        return ax_fail(AX_STATUS_DEVICE, "OpenCL device %d (%s): clBuildProgram of kernels.cl, stats.cl "
                       "and image.cl "
                       "(%s) failed: %s (%d); build log: %s", index, d->name,
                       precision == AX_PRECISION_F64 ? "float64" : "float32",
                       ax_ocl_error_name(code), code, log[0] ? log : "(empty)");
    }
    *out = program;
    return AX_STATUS_OK;
}

ax_status ax_ocl_device_prepare(int index, ax_precision precision, cl_context *context,
                                cl_program *program)
{
    ax_ocl_device *d = ax_ocl_device_get(index);
    if (!d)
        return ax_ocl_no_device(index);
    ax_status status = AX_STATUS_OK;
    pthread_mutex_lock(&list.lock);
    if (!d->context) {
        cl_int code = CL_SUCCESS;
        cl_context_properties properties[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform,
                                              0};
        d->context = clCreateContext(properties, 1, &d->id, NULL, NULL, &code);
        if (code != CL_SUCCESS) {
            d->context = NULL;
            status = ax_fail(AX_STATUS_DEVICE, "OpenCL device %d (%s): clCreateContext failed: "
                             "%s (%d)", index, d->name, ax_ocl_error_name(code), code);
        }
    }
    const int slot = precision == AX_PRECISION_F64 ? 1 : 0;
    if (status == AX_STATUS_OK && !d->programs[slot])
        status = build_program(index, d, precision, &d->programs[slot]);
    *context = d->context;
    *program = d->programs[slot];
    pthread_mutex_unlock(&list.lock);
    return status;
}
