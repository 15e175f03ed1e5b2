/* opencl_fault_shim.c: a test-only library that stands between the OpenCL
 * plugin and the ICD loader and makes one chosen OpenCL call fail.
 *
 * A test executable linked with it (test_opencl_faults) puts this library
 * ahead of libOpenCL in the process's global symbol scope, so the plugin,
 * dlopen'ed later, binds its clXxx calls here; each call is passed on to the
 * real one (dlsym RTLD_NEXT) unless it is the armed one. Why a shim rather
 * than a hook inside the plugin: the plugin's error handling is tested as it
 * ships, with no test-only branch in it, and every failure OpenCL can report
 * (a lost device, an exhausted allocation, a refused enqueue) can be made on
 * PoCL, which never fails by itself.
 *
 * It also counts the buffers, kernels and queues alive (created here and not
 * yet released), so a test can check that a failure path releases what it
 * made. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl.h>

#include "opencl_fault_shim.h"

static struct {
    char call[64];   /* the armed call's name; "" when none is armed */
    long remaining;  /* calls of it still to pass before the failing one */
    int code;        /* what the failing call returns */
    long fired;      /* armed faults that fired since the start */
} armed;

static atomic_long live[AX_TEST_OCL_OBJECT_KINDS];

void ax_test_ocl_fault_arm(const char *call, long nth, int code)
{
    snprintf(armed.call, sizeof armed.call, "%s", call ? call : "");
    armed.remaining = nth - 1;
    armed.code = code;
}

long ax_test_ocl_fault_fired(void) { return armed.fired; }

long ax_test_ocl_live(ax_test_ocl_object kind) { return atomic_load(&live[kind]); }

/* True when this call of `call` is the one to fail (once: then disarmed). */
static bool fail_now(const char *call)
{
    if (!armed.call[0] || strcmp(call, armed.call) != 0)
        return false;
    if (armed.remaining-- > 0)
        return false;
    armed.call[0] = '\0';
    armed.fired++;
    return true;
}

/* The real function behind this library (the ICD loader's). */
static void *real(const char *name)
{
    void *function = dlsym(RTLD_NEXT, name);
    if (!function) {
        fprintf(stderr, "opencl_fault_shim: no %s after this library (%s)\n", name, dlerror());
        abort(); /* a broken test setup, not a result */
    }
    return function;
}

#define REAL(name) ((__typeof__(&name))real(#name))

/* Creators: NULL with the code in *errcode_ret; the kind counted on success. */
#define CREATED(kind, object)                                              \
    do {                                                                   \
        if ((object) != NULL)                                              \
            atomic_fetch_add(&live[kind], 1);                              \
    } while (0)
#define FAIL_CREATE(name, errcode_ret)                                     \
    do {                                                                   \
        if (fail_now(#name)) {                                             \
            if (errcode_ret)                                               \
                *(errcode_ret) = armed.code;                               \
            return NULL;                                                   \
        }                                                                  \
    } while (0)
#define FAIL_CALL(name)                                                    \
    do {                                                                   \
        if (fail_now(#name))                                               \
            return armed.code;                                             \
    } while (0)

CL_API_ENTRY cl_context CL_API_CALL
clCreateContext(const cl_context_properties *properties, cl_uint num_devices,
                const cl_device_id *devices,
                void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
                void *user_data, cl_int *errcode_ret)
{
    FAIL_CREATE(clCreateContext, errcode_ret);
    return REAL(clCreateContext)(properties, num_devices, devices, notify, user_data, errcode_ret);
}

CL_API_ENTRY cl_program CL_API_CALL
clCreateProgramWithSource(cl_context context, cl_uint count, const char **strings,
                          const size_t *lengths, cl_int *errcode_ret)
{
    FAIL_CREATE(clCreateProgramWithSource, errcode_ret);
    return REAL(clCreateProgramWithSource)(context, count, strings, lengths, errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL
clBuildProgram(cl_program program, cl_uint num_devices, const cl_device_id *device_list,
               const char *options, void(CL_CALLBACK *notify)(cl_program, void *), void *user_data)
{
    FAIL_CALL(clBuildProgram);
    return REAL(clBuildProgram)(program, num_devices, device_list, options, notify, user_data);
}

CL_API_ENTRY cl_command_queue CL_API_CALL
clCreateCommandQueue(cl_context context, cl_device_id device,
                     cl_command_queue_properties properties, cl_int *errcode_ret)
{
    FAIL_CREATE(clCreateCommandQueue, errcode_ret);
    cl_command_queue queue = REAL(clCreateCommandQueue)(context, device, properties, errcode_ret);
    CREATED(AX_TEST_OCL_QUEUES, queue);
    return queue;
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseCommandQueue(cl_command_queue queue)
{
    cl_int code = REAL(clReleaseCommandQueue)(queue);
    if (code == CL_SUCCESS)
        atomic_fetch_sub(&live[AX_TEST_OCL_QUEUES], 1);
    return code;
}

CL_API_ENTRY cl_kernel CL_API_CALL clCreateKernel(cl_program program, const char *kernel_name,
                                                  cl_int *errcode_ret)
{
    FAIL_CREATE(clCreateKernel, errcode_ret);
    cl_kernel kernel = REAL(clCreateKernel)(program, kernel_name, errcode_ret);
    CREATED(AX_TEST_OCL_KERNELS, kernel);
    return kernel;
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseKernel(cl_kernel kernel)
{
    cl_int code = REAL(clReleaseKernel)(kernel);
    if (code == CL_SUCCESS)
        atomic_fetch_sub(&live[AX_TEST_OCL_KERNELS], 1);
    return code;
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size,
                                               void *host_ptr, cl_int *errcode_ret)
{
    FAIL_CREATE(clCreateBuffer, errcode_ret);
    cl_mem memory = REAL(clCreateBuffer)(context, flags, size, host_ptr, errcode_ret);
    CREATED(AX_TEST_OCL_BUFFERS, memory);
    return memory;
}

CL_API_ENTRY cl_int CL_API_CALL clRetainMemObject(cl_mem memory)
{
    cl_int code = REAL(clRetainMemObject)(memory);
    if (code == CL_SUCCESS)
        atomic_fetch_add(&live[AX_TEST_OCL_BUFFERS], 1);
    return code;
}

/* A failed release still releases (the test then counts a leak it did not
 * cause): the fault is in what the plugin is told, not in the driver. */
CL_API_ENTRY cl_int CL_API_CALL clReleaseMemObject(cl_mem memory)
{
    const bool fail = fail_now("clReleaseMemObject");
    cl_int code = REAL(clReleaseMemObject)(memory);
    if (code == CL_SUCCESS)
        atomic_fetch_sub(&live[AX_TEST_OCL_BUFFERS], 1);
    return fail ? armed.code : code;
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueFillBuffer(cl_command_queue queue, cl_mem buffer,
                                                    const void *pattern, size_t pattern_size,
                                                    size_t offset, size_t size, cl_uint waits,
                                                    const cl_event *wait_list, cl_event *event)
{
    FAIL_CALL(clEnqueueFillBuffer);
    return REAL(clEnqueueFillBuffer)(queue, buffer, pattern, pattern_size, offset, size, waits,
                                     wait_list, event);
}

CL_API_ENTRY cl_int CL_API_CALL clFinish(cl_command_queue queue)
{
    FAIL_CALL(clFinish);
    return REAL(clFinish)(queue);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueCopyBuffer(cl_command_queue queue, cl_mem from, cl_mem to,
                                                    size_t from_offset, size_t to_offset,
                                                    size_t size, cl_uint waits,
                                                    const cl_event *wait_list, cl_event *event)
{
    FAIL_CALL(clEnqueueCopyBuffer);
    return REAL(clEnqueueCopyBuffer)(queue, from, to, from_offset, to_offset, size, waits,
                                     wait_list, event);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueWriteBuffer(cl_command_queue queue, cl_mem buffer,
                                                     cl_bool blocking, size_t offset, size_t size,
                                                     const void *ptr, cl_uint waits,
                                                     const cl_event *wait_list, cl_event *event)
{
    FAIL_CALL(clEnqueueWriteBuffer);
    return REAL(clEnqueueWriteBuffer)(queue, buffer, blocking, offset, size, ptr, waits, wait_list,
                                      event);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueReadBuffer(cl_command_queue queue, cl_mem buffer,
                                                    cl_bool blocking, size_t offset, size_t size,
                                                    void *ptr, cl_uint waits,
                                                    const cl_event *wait_list, cl_event *event)
{
    FAIL_CALL(clEnqueueReadBuffer);
    return REAL(clEnqueueReadBuffer)(queue, buffer, blocking, offset, size, ptr, waits, wait_list,
                                     event);
}

CL_API_ENTRY cl_int CL_API_CALL clSetKernelArg(cl_kernel kernel, cl_uint index, size_t size,
                                               const void *value)
{
    FAIL_CALL(clSetKernelArg);
    return REAL(clSetKernelArg)(kernel, index, size, value);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueNDRangeKernel(cl_command_queue queue, cl_kernel kernel,
                                                       cl_uint dims, const size_t *offset,
                                                       const size_t *global, const size_t *local,
                                                       cl_uint waits, const cl_event *wait_list,
                                                       cl_event *event)
{
    FAIL_CALL(clEnqueueNDRangeKernel);
    return REAL(clEnqueueNDRangeKernel)(queue, kernel, dims, offset, global, local, waits,
                                        wait_list, event);
}

/* The questions of the device list (opencl_devices.c), asked once per
 * process: a test fails them in a child process of its own. */
CL_API_ENTRY cl_int CL_API_CALL clGetPlatformIDs(cl_uint entries, cl_platform_id *platforms,
                                                 cl_uint *count)
{
    FAIL_CALL(clGetPlatformIDs);
    return REAL(clGetPlatformIDs)(entries, platforms, count);
}

CL_API_ENTRY cl_int CL_API_CALL clGetDeviceIDs(cl_platform_id platform, cl_device_type type,
                                               cl_uint entries, cl_device_id *devices,
                                               cl_uint *count)
{
    FAIL_CALL(clGetDeviceIDs);
    return REAL(clGetDeviceIDs)(platform, type, entries, devices, count);
}

CL_API_ENTRY cl_int CL_API_CALL clGetDeviceInfo(cl_device_id device, cl_device_info what,
                                                size_t size, void *value, size_t *size_ret)
{
    FAIL_CALL(clGetDeviceInfo);
    return REAL(clGetDeviceInfo)(device, what, size, value, size_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clGetPlatformInfo(cl_platform_id platform, cl_platform_info what,
                                                  size_t size, void *value, size_t *size_ret)
{
    FAIL_CALL(clGetPlatformInfo);
    return REAL(clGetPlatformInfo)(platform, what, size, value, size_ret);
}
