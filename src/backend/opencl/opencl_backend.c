/* opencl_backend.c: the OpenCL plugin's table (ax_backend_plugin_opencl, at
 * the end) and the OpenCL backend's table of operations: buffers and their
 * addresses, the command queue, CLBlast GEMMs, transfers, the kernel
 * launcher and the sticky error. The kernels are kernels.cl, launched from
 * opencl_ops.c; the devices and programs are opencl_devices.c.
 *
 * It runs in every test run on PoCL (the CPU as an OpenCL device) and
 * unchanged on GPUs through their vendors' drivers. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clblast_c.h>

#include "backend/opencl/opencl_internal.h"
#include "base/error.h"

/* Made-up addresses of device memory start here (never dereferenced; far
 * from what the host's allocator hands out, and never NULL), and buffers
 * are spaced by a gap so that one past a buffer's end is in no other. */
#define ADDRESS_BASE ((uintptr_t)0x7a0000000000ULL)
#define ADDRESS_ALIGN ((uintptr_t)4096)

static const char *const kernel_names[AX_OCL_KERNEL_COUNT] = {
    [AX_OCL_BIAS_ACTIVATION] = "ax_bias_activation",
    [AX_OCL_SOFTMAX] = "ax_softmax",
    [AX_OCL_COLUMN_PARTIALS_KERNEL] = "ax_column_partials",
    [AX_OCL_SUM_CHUNKS] = "ax_sum_chunks",
    [AX_OCL_CROSS_ENTROPY] = "ax_cross_entropy",
    [AX_OCL_BINARY_CROSS_ENTROPY] = "ax_binary_cross_entropy",
    [AX_OCL_SQUARED_ERROR] = "ax_squared_error",
    [AX_OCL_DROPOUT] = "ax_dropout",
    [AX_OCL_AXPY] = "ax_axpy",
    [AX_OCL_SCALE] = "ax_scale",
    [AX_OCL_DOT] = "ax_dot",
    [AX_OCL_COUNT_NONFINITE] = "ax_count_nonfinite",
    [AX_OCL_SGD] = "ax_sgd",
    [AX_OCL_ADAM] = "ax_adam",
    [AX_OCL_ARGMAX] = "ax_argmax",
    [AX_OCL_IM2COL] = "ax_im2col",
    [AX_OCL_COL2IM] = "ax_col2im",
    [AX_OCL_POOL_FORWARD] = "ax_pool_forward",
    [AX_OCL_POOL_BACKWARD] = "ax_pool_backward",
    [AX_OCL_TRANSPOSE] = "ax_transpose",
    [AX_OCL_GATHER_ROWS] = "ax_gather_rows",
    [AX_OCL_GATHER_LABELS] = "ax_gather_labels",
    [AX_OCL_LOSS_FINISH] = "ax_loss_finish",
    [AX_OCL_LOSS_ACCUMULATE] = "ax_loss_accumulate",
    [AX_OCL_LOSS_RESET] = "ax_loss_reset",
    [AX_OCL_L1] = "ax_l1",
    [AX_OCL_CLAMP] = "ax_clamp",
};

void ax_ocl_fail(ax_ocl_backend *ob, int code, ax_status status, const char *format, ...)
{
    if (ob->error)
        return;
    ob->error = code ? code : -1;
    ob->error_status = status;
    va_list args;
    va_start(args, format);
    vsnprintf(ob->error_text, sizeof ob->error_text, format, args);
    va_end(args);
}

bool ax_ocl_check(ax_ocl_backend *ob, int code, const char *where)
{
    if (code == CL_SUCCESS)
        return false;
    /* Keep the function's name, not its arguments. */
    int name_length = (int)strcspn(where, "(");
    while (name_length > 0 && where[name_length - 1] == ' ')
        name_length--;
    ax_ocl_fail(ob, code,
                code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES ||
                        code == CL_OUT_OF_HOST_MEMORY
                    ? AX_STATUS_OUT_OF_MEMORY
                    : AX_STATUS_DEVICE,
                "%.*s failed: %s (%d)", name_length, where, ax_ocl_error_name(code), code);
    return true;
}

/* CLBlast's status codes are OpenCL's where they overlap, and its own below -1000. */
static bool clblast_check(ax_ocl_backend *ob, CLBlastStatusCode code, const char *call)
{
    if (code == CLBlastSuccess)
        return false;
    if ((int)code > -1000) {
        ax_ocl_fail(ob, (int)code, AX_STATUS_DEVICE, "%s failed: %s (%d)", call,
                    ax_ocl_error_name((int)code), (int)code);
    } else {
        const char *name = code == CLBlastNotImplemented         ? "CLBlastNotImplemented"
                           : code == CLBlastInvalidDimension     ? "CLBlastInvalidDimension"
                           : code == CLBlastInvalidLeadDimA      ? "CLBlastInvalidLeadDimA"
                           : code == CLBlastInvalidLeadDimB      ? "CLBlastInvalidLeadDimB"
                           : code == CLBlastInvalidLeadDimC      ? "CLBlastInvalidLeadDimC"
                           : code == CLBlastInsufficientMemoryA  ? "CLBlastInsufficientMemoryA"
                           : code == CLBlastInsufficientMemoryB  ? "CLBlastInsufficientMemoryB"
                           : code == CLBlastInsufficientMemoryC  ? "CLBlastInsufficientMemoryC"
                           : code == CLBlastNoDoublePrecision    ? "CLBlastNoDoublePrecision"
                           : code == CLBlastInvalidLocalMemUsage ? "CLBlastInvalidLocalMemUsage"
                           : code == CLBlastDatabaseError        ? "CLBlastDatabaseError"
                           : code == CLBlastUnknownError         ? "CLBlastUnknownError"
                           : code == CLBlastUnexpectedError      ? "CLBlastUnexpectedError"
                                                                 : "a CLBlast error";
        ax_ocl_fail(ob, (int)code, AX_STATUS_DEVICE, "%s failed: %s (%d)", call, name, (int)code);
    }
    return true;
}

/* ------------------------------------------------------------ memory */

cl_mem ax_ocl_locate(ax_ocl_backend *ob, const void *pointer, size_t *offset)
{
    const uintptr_t address = (uintptr_t)pointer;
    int low = 0, high = ob->buffer_count - 1;
    while (low <= high) {
        const int middle = (low + high) / 2;
        const ax_ocl_buffer *b = &ob->buffers[middle];
        if (address < b->address)
            high = middle - 1;
        else if (address >= b->address + (b->bytes ? b->bytes : 1))
            low = middle + 1;
        else {
            *offset = (size_t)(address - b->address);
            return b->memory;
        }
    }
    ax_ocl_fail(ob, CL_INVALID_MEM_OBJECT, AX_STATUS_DEVICE,
                "an operation was given %p, which is no buffer of this backend (an axon bug)",
                pointer);
    *offset = 0;
    return NULL;
}

static void *ocl_alloc(ax_backend *backend, size_t bytes)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    if (ob->buffer_count == ob->buffer_capacity) {
        int capacity = ob->buffer_capacity ? 2 * ob->buffer_capacity : 64;
        ax_ocl_buffer *grown = realloc(ob->buffers, (size_t)capacity * sizeof *grown);
        if (!grown)
            return NULL;
        ob->buffers = grown;
        ob->buffer_capacity = capacity;
    }
    const size_t size = bytes ? bytes : 1;
    /* A failed allocation is the caller's out-of-memory (it names what it
     * wanted), not a sticky failure; the message says what the device has. */
    if (size > ob->device->max_alloc) {
        ax_fail(AX_STATUS_OUT_OF_MEMORY, "OpenCL device %d (%s): a buffer of %zu bytes is larger "
                "than the largest the device allows (%llu bytes of its %.2f GiB)", ob->index,
                ob->device->name, size, (unsigned long long)ob->device->max_alloc,
                (double)ob->device->memory / 1073741824.0);
        return NULL;
    }
    cl_int code = CL_SUCCESS;
    cl_mem memory = clCreateBuffer(ob->context, CL_MEM_READ_WRITE, size, NULL, &code);
    if (code == CL_SUCCESS) {
        /* Zeroed, as the table promises; drivers allocate lazily, so a
         * shortage of device memory shows here or not at all. */
        const cl_uchar zero = 0;
        code = clEnqueueFillBuffer(ob->queue, memory, &zero, 1, 0, size, 0, NULL, NULL);
        if (code == CL_SUCCESS)
            code = clFinish(ob->queue);
        if (code != CL_SUCCESS) {
            clReleaseMemObject(memory);
            memory = NULL;
        }
    }
    if (code != CL_SUCCESS) {
        ax_fail(AX_STATUS_OUT_OF_MEMORY, "OpenCL device %d (%s): a buffer of %zu bytes could not "
                "be allocated: %s (%d) (the device has %.2f GiB)", ob->index, ob->device->name,
                size, ax_ocl_error_name(code), code, (double)ob->device->memory / 1073741824.0);
        return NULL;
    }
    const uintptr_t address = ob->next_address;
    ob->next_address += (size + 2 * ADDRESS_ALIGN - 1) / ADDRESS_ALIGN * ADDRESS_ALIGN;
    ob->buffers[ob->buffer_count++] = (ax_ocl_buffer){address, size, memory};
    return (void *)address;
}

static void ocl_free(ax_backend *backend, void *pointer)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    if (!pointer)
        return;
    for (int i = 0; i < ob->buffer_count; i++)
        if (ob->buffers[i].address == (uintptr_t)pointer) {
            /* Released only when no queued command uses it any more. */
            AX_OCL_CHECK(ob, clReleaseMemObject(ob->buffers[i].memory));
            memmove(&ob->buffers[i], &ob->buffers[i + 1],
                    (size_t)(ob->buffer_count - i - 1) * sizeof *ob->buffers);
            ob->buffer_count--;
            return;
        }
    ax_ocl_fail(ob, CL_INVALID_MEM_OBJECT, AX_STATUS_DEVICE,
                "free was given %p, which is no buffer of this backend (an axon bug)", pointer);
}

static void ocl_copy(ax_backend *backend, void *dst, const void *src, int64_t count)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    if (count <= 0 || dst == src)
        return;
    size_t dst_offset, src_offset;
    cl_mem to = ax_ocl_locate(ob, dst, &dst_offset), from = ax_ocl_locate(ob, src, &src_offset);
    if (to && from)
        AX_OCL_CHECK(ob, clEnqueueCopyBuffer(ob->queue, from, to, src_offset, dst_offset,
                                             (size_t)count * backend->real_size, 0, NULL, NULL));
}

/* ---------------------------------------------------------- transfers */

/* Writes `bytes` from the host to device address dst (blocking: the host
 * buffer is reused at once). */
static void write_bytes(ax_ocl_backend *ob, void *dst, const void *host, size_t bytes)
{
    size_t offset;
    cl_mem to = ax_ocl_locate(ob, dst, &offset);
    if (to && bytes > 0)
        AX_OCL_CHECK(ob, clEnqueueWriteBuffer(ob->queue, to, CL_TRUE, offset, bytes, host, 0,
                                              NULL, NULL));
}

static bool read_bytes(ax_ocl_backend *ob, void *host, const void *src, size_t bytes)
{
    size_t offset;
    cl_mem from = ax_ocl_locate(ob, src, &offset);
    return from && bytes > 0 &&
           !AX_OCL_CHECK(ob, clEnqueueReadBuffer(ob->queue, from, CL_TRUE, offset, bytes, host, 0,
                                                 NULL, NULL));
}

static void ocl_upload_f64(ax_backend *backend, void *dst, const double *src, int64_t count)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    if (backend->precision == AX_PRECISION_F64) {
        write_bytes(ob, dst, src, (size_t)(count > 0 ? count : 0) * sizeof(double));
        return;
    }
    const int64_t chunk = (int64_t)(AX_OCL_STAGE_BYTES / sizeof(float));
    float *packed = ob->stage;
    for (int64_t i0 = 0; i0 < count; i0 += chunk) {
        const int64_t n = count - i0 < chunk ? count - i0 : chunk;
        for (int64_t i = 0; i < n; i++)
            packed[i] = (float)src[i0 + i];
        write_bytes(ob, (char *)dst + (size_t)i0 * sizeof(float), packed, (size_t)n * sizeof(float));
    }
}

/* Reads count reals in chunks through the stage and converts each: to
 * double (f64_out) or float (f32_out); NaN after a failure. */
static void download(ax_ocl_backend *ob, const void *src, int64_t count, double *f64_out,
                     float *f32_out)
{
    const bool f64 = ob->base.precision == AX_PRECISION_F64;
    const size_t real_size = ob->base.real_size;
    const int64_t chunk = (int64_t)(AX_OCL_STAGE_BYTES / real_size);
    for (int64_t i0 = 0; i0 < count; i0 += chunk) {
        const int64_t n = count - i0 < chunk ? count - i0 : chunk;
        const bool ok = read_bytes(ob, ob->stage, (const char *)src + (size_t)i0 * real_size,
                                   (size_t)n * real_size) && !ob->error;
        const double *d = ob->stage;
        const float *f = ob->stage;
        for (int64_t i = 0; i < n; i++) {
            const double value = !ok ? NAN : f64 ? d[i] : (double)f[i];
            if (f64_out)
                f64_out[i0 + i] = value;
            else
                f32_out[i0 + i] = !ok ? NAN : f64 ? (float)d[i] : f[i];
        }
    }
}

static void ocl_download_f64(ax_backend *backend, double *dst, const void *src, int64_t count)
{
    download(ax_ocl(backend), src, count, dst, NULL);
}

static void ocl_download_f32(ax_backend *backend, float *dst, const void *src, int64_t count)
{
    download(ax_ocl(backend), src, count, NULL, dst);
}

/* The batch's rows packed on the host in the backend's precision, then
 * written: on PoCL host and device memory are the same memory, and on a
 * GPU the float64 copy costs twice the bytes of a float32 one (the CUDA
 * backend widens on the device instead; the same would pay here on GPUs). */
static void ocl_gather_rows(ax_backend *backend, void *dst, const float *src, int64_t width,
                            const int64_t *order, int64_t first, int64_t count)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    const size_t real_size = backend->real_size;
    const int64_t stage_reals = (int64_t)(AX_OCL_STAGE_BYTES / real_size);
    const bool f64 = backend->precision == AX_PRECISION_F64;
    /* Pieces of whole rows, or of one row when a row outgrows the stage. */
    const int64_t piece_width = width < stage_reals ? width : stage_reals;
    const int64_t piece_rows = stage_reals / piece_width;
    if (piece_width == width) {
        for (int64_t r0 = 0; r0 < count; r0 += piece_rows) {
            const int64_t rows = count - r0 < piece_rows ? count - r0 : piece_rows;
            for (int64_t r = 0; r < rows; r++) {
                const float *from = src + (order ? order[first + r0 + r] : first + r0 + r) * width;
                if (f64) {
                    double *to = (double *)ob->stage + r * width;
                    for (int64_t c = 0; c < width; c++)
                        to[c] = (double)from[c];
                } else {
                    memcpy((float *)ob->stage + r * width, from, (size_t)width * sizeof(float));
                }
            }
            write_bytes(ob, (char *)dst + (size_t)(r0 * width) * real_size, ob->stage,
                        (size_t)(rows * width) * real_size);
        }
        return;
    }
    for (int64_t r = 0; r < count; r++) {
        const float *from = src + (order ? order[first + r] : first + r) * width;
        for (int64_t c0 = 0; c0 < width; c0 += piece_width) {
            const int64_t n = width - c0 < piece_width ? width - c0 : piece_width;
            for (int64_t c = 0; c < n; c++) {
                if (f64)
                    ((double *)ob->stage)[c] = (double)from[c0 + c];
                else
                    ((float *)ob->stage)[c] = from[c0 + c];
            }
            write_bytes(ob, (char *)dst + (size_t)(r * width + c0) * real_size, ob->stage,
                        (size_t)n * real_size);
        }
    }
}

static void ocl_gather_labels(ax_backend *backend, int32_t *dst, const int32_t *labels,
                              const int64_t *order, int64_t first, int64_t count)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    const int64_t chunk = (int64_t)(AX_OCL_STAGE_BYTES / sizeof(int32_t));
    int32_t *packed = ob->stage;
    for (int64_t r0 = 0; r0 < count; r0 += chunk) {
        const int64_t n = count - r0 < chunk ? count - r0 : chunk;
        for (int64_t r = 0; r < n; r++)
            packed[r] = labels[order ? order[first + r0 + r] : first + r0 + r];
        write_bytes(ob, dst + r0, packed, (size_t)n * sizeof(int32_t));
    }
}

static void ocl_write_bytes(ax_backend *backend, void *dst, const void *src, size_t bytes)
{
    write_bytes(ax_ocl(backend), dst, src, bytes);
}

/* ------------------------------------------------------------- GEMM */

static void ocl_gemm(ax_backend *backend, bool trans_a, bool trans_b, int64_t m, int64_t n,
                     int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                     int64_t ldb, double beta, void *c, int64_t ldc)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    if (m <= 0 || n <= 0)
        return;
    if (k <= 0) { /* C = beta C: CLBlast refuses k = 0. Through the table, so
                   * that this file calls nothing of opencl_ops.c, which
                   * launches its kernels through this one. */
        for (int64_t r = 0; r < m; r++)
            backend->ops->scale(backend, n, beta, (char *)c + (size_t)(r * ldc) * backend->real_size);
        return;
    }
    size_t a_offset, b_offset, c_offset;
    cl_mem a_buffer = ax_ocl_locate(ob, a, &a_offset), b_buffer = ax_ocl_locate(ob, b, &b_offset);
    cl_mem c_buffer = ax_ocl_locate(ob, c, &c_offset);
    if (!a_buffer || !b_buffer || !c_buffer)
        return;
    const size_t real_size = backend->real_size;
    const CLBlastTranspose op_a = trans_a ? CLBlastTransposeYes : CLBlastTransposeNo;
    const CLBlastTranspose op_b = trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    if (backend->precision == AX_PRECISION_F64)
        clblast_check(ob, CLBlastDgemm(CLBlastLayoutRowMajor, op_a, op_b, (size_t)m, (size_t)n,
                                       (size_t)k, alpha, a_buffer, a_offset / real_size,
                                       (size_t)lda, b_buffer, b_offset / real_size, (size_t)ldb,
                                       beta, c_buffer, c_offset / real_size, (size_t)ldc,
                                       &ob->queue, NULL),
                      "CLBlastDgemm");
    else
        clblast_check(ob, CLBlastSgemm(CLBlastLayoutRowMajor, op_a, op_b, (size_t)m, (size_t)n,
                                       (size_t)k, (float)alpha, a_buffer, a_offset / real_size,
                                       (size_t)lda, b_buffer, b_offset / real_size, (size_t)ldb,
                                       (float)beta, c_buffer, c_offset / real_size, (size_t)ldc,
                                       &ob->queue, NULL),
                      "CLBlastSgemm");
}

/* ----------------------------------------------------------- launches */

ax_ocl_launch ax_ocl_begin(ax_ocl_backend *ob, ax_ocl_kernel_id id, const char *name)
{
    return (ax_ocl_launch){.ob = ob, .kernel = ob->kernels[id], .name = name};
}

static void set_arg(ax_ocl_launch *launch, size_t size, const void *value)
{
    if (launch->failed)
        return;
    cl_int code = clSetKernelArg(launch->kernel, launch->next, size, value);
    if (code != CL_SUCCESS) {
        ax_ocl_fail(launch->ob, code, AX_STATUS_DEVICE, "clSetKernelArg (kernel %s, argument %u) "
                    "failed: %s (%d)", launch->name, launch->next, ax_ocl_error_name(code), code);
        launch->failed = true;
    }
    launch->next++;
}

void ax_ocl_arg_array(ax_ocl_launch *launch, const void *pointer)
{
    size_t offset = 0;
    cl_mem memory = pointer ? ax_ocl_locate(launch->ob, pointer, &offset) : launch->ob->partials;
    if (!memory)
        launch->failed = true;
    cl_ulong offset_value = offset;
    set_arg(launch, sizeof memory, &memory);
    set_arg(launch, sizeof offset_value, &offset_value);
}

void ax_ocl_arg_buffer(ax_ocl_launch *launch, cl_mem buffer)
{
    set_arg(launch, sizeof buffer, &buffer);
}

void ax_ocl_arg_real(ax_ocl_launch *launch, double value)
{
    if (launch->ob->base.precision == AX_PRECISION_F64) {
        cl_double v = value;
        set_arg(launch, sizeof v, &v);
    } else {
        cl_float v = (cl_float)value;
        set_arg(launch, sizeof v, &v);
    }
}

void ax_ocl_arg_acc(ax_ocl_launch *launch, double value)
{
    if (launch->ob->acc_f64) {
        cl_double v = value;
        set_arg(launch, sizeof v, &v);
    } else {
        cl_float v = (cl_float)value;
        set_arg(launch, sizeof v, &v);
    }
}

void ax_ocl_arg_long(ax_ocl_launch *launch, int64_t value)
{
    cl_long v = value;
    set_arg(launch, sizeof v, &v);
}

void ax_ocl_arg_ulong(ax_ocl_launch *launch, uint64_t value)
{
    cl_ulong v = value;
    set_arg(launch, sizeof v, &v);
}

void ax_ocl_arg_int(ax_ocl_launch *launch, int value)
{
    cl_int v = value;
    set_arg(launch, sizeof v, &v);
}

void ax_ocl_run(ax_ocl_launch *launch, size_t global, size_t local)
{
    ax_ocl_backend *ob = launch->ob;
    if (launch->failed || ob->error)
        return;
    if (local)
        global = (global + local - 1) / local * local;
    if (global == 0)
        global = local ? local : 1;
    cl_int code = clEnqueueNDRangeKernel(ob->queue, launch->kernel, 1, NULL, &global,
                                         local ? &local : NULL, 0, NULL, NULL);
    if (code != CL_SUCCESS)
        ax_ocl_fail(ob, code, AX_STATUS_DEVICE, "clEnqueueNDRangeKernel (kernel %s, %zu "
                    "work-items) failed: %s (%d)", launch->name, global,
                    ax_ocl_error_name(code), code);
}

size_t ax_ocl_elementwise_items(int64_t count)
{
    const int64_t most = (int64_t)AX_OCL_GROUP * 1024;
    const int64_t items = count < most ? count : most;
    return (size_t)(items > 0 ? items : 1);
}

int ax_ocl_reduce_groups(const ax_ocl_backend *ob, int64_t count)
{
    const int64_t per_group = 4 * (int64_t)ob->group; /* about four elements per work-item */
    int64_t groups = (count + per_group - 1) / per_group;
    if (groups < 1)
        groups = 1;
    return (int)(groups < AX_OCL_REDUCE_GROUPS ? groups : AX_OCL_REDUCE_GROUPS);
}

double ax_ocl_add_partials(const ax_ocl_backend *ob, const void *partials, int groups)
{
    double sum = 0.0;
    if (ob->acc_f64) {
        const double *partial = partials;
        for (int i = 0; i < groups; i++)
            sum += partial[i];
    } else {
        const float *partial = partials;
        for (int i = 0; i < groups; i++)
            sum += (double)partial[i];
    }
    return sum;
}

double ax_ocl_finish_sum(ax_ocl_backend *ob, int groups)
{
    if (ob->error)
        return NAN;
    double partials[AX_OCL_REDUCE_GROUPS]; /* room for either accumulator */
    const size_t acc_size = ob->acc_f64 ? sizeof(double) : sizeof(float);
    if (AX_OCL_CHECK(ob, clEnqueueReadBuffer(ob->queue, ob->partials, CL_TRUE, 0,
                                             (size_t)groups * acc_size, partials, 0, NULL, NULL)))
        return NAN;
    return ax_ocl_add_partials(ob, partials, groups);
}

/* ------------------------------------------------------------- the rest */

static void ocl_synchronize(ax_backend *backend)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    AX_OCL_CHECK(ob, clFinish(ob->queue));
}

static ax_status ocl_status(ax_backend *backend)
{
    const ax_ocl_backend *ob = ax_ocl(backend);
    if (!ob->error)
        return AX_STATUS_OK;
    return ax_fail(ob->error_status ? ob->error_status : AX_STATUS_DEVICE,
                   "OpenCL device %d (%s): %s; the results since then are void", ob->index,
                   ob->device->name, ob->error_text);
}

static ax_status ocl_alloc_status(ax_backend *backend, size_t bytes, void **memory)
{
    const ax_ocl_backend *ob = ax_ocl(backend);
    *memory = ocl_alloc(backend, bytes);
    if (*memory)
        return AX_STATUS_OK;
    if (ob->error)
        return ocl_status(backend);
    if ((bytes ? bytes : 1) > ob->device->max_alloc)
        return AX_STATUS_OUT_OF_MEMORY; /* ocl_alloc said why */
    return ax_fail(AX_STATUS_OUT_OF_MEMORY, "OpenCL device %d (%s): no room for %zu bytes of its "
                   "%.2f GiB", ob->index, ob->device->name, bytes,
                   (double)ob->device->memory / 1073741824.0);
}

static ax_status ocl_synchronize_status(ax_backend *backend)
{
    ocl_synchronize(backend);
    return ocl_status(backend);
}

static void ocl_destroy(ax_backend *backend)
{
    if (!backend)
        return;
    ax_ocl_backend *ob = ax_ocl(backend);
    if (ob->queue)
        clFinish(ob->queue);
    for (int i = 0; i < ob->buffer_count; i++)
        clReleaseMemObject(ob->buffers[i].memory);
    free(ob->buffers);
    if (ob->partials)
        clReleaseMemObject(ob->partials);
    if (ob->batch_partials)
        clReleaseMemObject(ob->batch_partials);
    if (ob->column_partials)
        clReleaseMemObject(ob->column_partials);
    if (ob->indices)
        clReleaseMemObject(ob->indices);
    if (ob->loss_state)
        clReleaseMemObject(ob->loss_state);
    for (int i = 0; i < AX_OCL_KERNEL_COUNT; i++)
        if (ob->kernels[i])
            clReleaseKernel(ob->kernels[i]);
    if (ob->queue)
        clReleaseCommandQueue(ob->queue);
    free(ob->stage);
    free(ob);
}

static const ax_backend_ops ocl_ops = {
    .name = "opencl",
    .alloc = ocl_alloc,
    .free = ocl_free,
    .upload_f64 = ocl_upload_f64,
    .download_f64 = ocl_download_f64,
    .download_f32 = ocl_download_f32,
    .copy = ocl_copy,
    .gather_rows = ocl_gather_rows,
    .gather_labels = ocl_gather_labels,
    .gemm = ocl_gemm,
    .bias_activation = ax_ocl_bias_activation,
    .activation_backward = ax_ocl_activation_backward,
    .column_sums = ax_ocl_column_sums,
    .cross_entropy = ax_ocl_cross_entropy,
    .binary_cross_entropy = ax_ocl_binary_cross_entropy,
    .squared_error = ax_ocl_squared_error,
    .dropout = ax_ocl_dropout,
    .axpy = ax_ocl_axpy,
    .dot = ax_ocl_dot,
    .scale = ax_ocl_scale,
    .all_finite = ax_ocl_all_finite,
    .sgd_update = ax_ocl_sgd_update,
    .adam_update = ax_ocl_adam_update,
    .argmax_rows = ax_ocl_argmax_rows,
    .im2col = ax_ocl_im2col,
    .col2im = ax_ocl_col2im,
    .pool_forward = ax_ocl_pool_forward,
    .pool_backward = ax_ocl_pool_backward,
    .transpose = ax_ocl_transpose,
    .synchronize = ocl_synchronize,
    .status = ocl_status,
    .destroy = ocl_destroy,
    .write_bytes = ocl_write_bytes,
    .gather_rows_device = ax_ocl_gather_rows_device,
    .gather_labels_device = ax_ocl_gather_labels_device,
    .loss_defer = ax_ocl_loss_defer,
    .loss_accumulate = ax_ocl_loss_accumulate,
    .loss_reset = ax_ocl_loss_reset,
    .loss_read = ax_ocl_loss_read,
    .alloc_status = ocl_alloc_status,
    .synchronize_status = ocl_synchronize_status,
    .l1_penalty = ax_ocl_l1_penalty,
    .clamp = ax_ocl_clamp,
    .reduce = ax_ocl_reduce,
};

static ax_status create(ax_precision precision, int index, ax_backend **out)
{
    *out = NULL;
    ax_ocl_device *device = ax_ocl_device_get(index);
    if (!device)
        return ax_ocl_no_device(index);
    if (precision == AX_PRECISION_F64 && !device->fp64)
        return ax_fail(AX_STATUS_UNSUPPORTED, "OpenCL device %d (%s) has no float64 (it does not "
                       "report cl_khr_fp64): use --precision f32 on it", index, device->name);
    if (precision != AX_PRECISION_F64 && precision != AX_PRECISION_F32)
        return ax_fail(AX_STATUS_UNSUPPORTED, "OpenCL device %d: only f32 and f64 are supported",
                       index);
    cl_context context;
    cl_program program;
    AX_TRY(ax_ocl_device_prepare(index, precision, &context, &program));
    ax_ocl_backend *ob = calloc(1, sizeof *ob);
    if (!ob)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory creating the OpenCL backend");
    ob->base.ops = &ocl_ops;
    ob->base.precision = precision;
    ob->base.real_size = precision == AX_PRECISION_F64 ? sizeof(double) : sizeof(float);
    ob->base.host_memory = false;
    ob->index = index;
    ob->device = device;
    ob->context = context;
    ob->acc_f64 = device->fp64;
    ob->group = AX_OCL_GROUP;
    while (ob->group > 1 && ob->group > device->max_group)
        ob->group /= 2;
    ob->next_address = ADDRESS_BASE;
    ob->stage = malloc(AX_OCL_STAGE_BYTES);
    cl_int code = CL_SUCCESS;
    bool ok = ob->stage != NULL;
    if (ok) {
        ob->queue = clCreateCommandQueue(context, device->id, 0, &code);
        /* The call's name, not AX_OCL_CHECK's text of its argument ("code"). */
        ok = !ax_ocl_check(ob, code, "clCreateCommandQueue");
    }
    for (int i = 0; i < AX_OCL_KERNEL_COUNT && ok; i++) {
        if (!ob->acc_f64 && (i == AX_OCL_LOSS_FINISH || i == AX_OCL_LOSS_ACCUMULATE ||
                             i == AX_OCL_LOSS_RESET))
            continue; /* float64 only (kernels.cl); loss_defer declines there */
        ob->kernels[i] = clCreateKernel(program, kernel_names[i], &code);
        if (code != CL_SUCCESS) {
            ax_ocl_fail(ob, code, AX_STATUS_DEVICE, "clCreateKernel (%s) failed: %s (%d)",
                        kernel_names[i], ax_ocl_error_name(code), code);
            ok = false;
        }
    }
    const size_t acc_size = ob->acc_f64 ? sizeof(double) : sizeof(float);
    if (ok) {
        ob->partials = clCreateBuffer(context, CL_MEM_READ_WRITE, AX_OCL_REDUCE_GROUPS * acc_size,
                                      NULL, &code);
        ok = !ax_ocl_check(ob, code, "clCreateBuffer");
    }
    if (ok) {
        ob->batch_partials = clCreateBuffer(
            context, CL_MEM_READ_WRITE, AX_BACKEND_REDUCE_MAX * AX_OCL_REDUCE_GROUPS * acc_size,
            NULL, &code);
        ok = !ax_ocl_check(ob, code, "clCreateBuffer");
    }
    if (ok) {
        ob->column_partials = clCreateBuffer(context, CL_MEM_READ_WRITE,
                                             AX_OCL_COLUMN_PARTIALS * acc_size, NULL, &code);
        ok = !ax_ocl_check(ob, code, "clCreateBuffer");
    }
    if (ok && ob->acc_f64) {
        ob->loss_state = clCreateBuffer(context, CL_MEM_READ_WRITE, 4 * sizeof(double), NULL, &code);
        ok = !ax_ocl_check(ob, code, "clCreateBuffer");
    }
    if (!ok) {
        ax_status status = ob->stage ? ob->error_status : AX_STATUS_OUT_OF_MEMORY;
        char text[sizeof ob->error_text];
        snprintf(text, sizeof text, "%s", ob->stage ? ob->error_text : "out of host memory");
        ocl_destroy(&ob->base);
        return ax_fail(status == AX_STATUS_OUT_OF_MEMORY ? status : AX_STATUS_UNSUPPORTED,
                       "OpenCL device %d (%s): %s", index, device->name, text);
    }
    *out = &ob->base;
    return AX_STATUS_OK;
}

static int device_count(void) { return ax_ocl_device_count(); }

static ax_backend_proc get_proc_address(const char *name)
{
    if (strcmp(name, AX_BACKEND_EXTENSION_STATS_ENTROPY_MI) == 0)
        return (ax_backend_proc)ax_ocl_stats_entropy_mi;
    if (strcmp(name, AX_BACKEND_EXTENSION_STATS_TENSOR_MEAN) == 0)
        return (ax_backend_proc)ax_ocl_stats_tensor_mean;
    return NULL;
}

AX_PLUGIN_EXPORT const ax_backend_plugin ax_backend_plugin_opencl = {
    .abi = AX_BACKEND_PLUGIN_ABI,
    .ops_size = sizeof(ax_backend_ops),
    .name = "opencl",
    .device_count = device_count,
    .device_info = ax_ocl_device_info,
    .create = create,
    .init = ax_plugin_host_init,
    .device_properties = ax_ocl_device_properties,
    .get_proc_address = get_proc_address,
    .runtime = "OpenCL 1.2 (CLBlast)",
};
