/* opencl_stats.c: the activation statistics on an OpenCL device, the
 * plugin table's stats_entropy_mi and stats_tensor_mean (plugin.h), as the
 * CUDA plugin's stats.cu: inputs go over in blocks of rows, so device memory
 * does not bound the number of rows; entropy-mi reduces per group in a fixed
 * order and the host adds the groups' partials in order; tensor-mean writes
 * each block's row-wise Khatri-Rao product K and CLBlast's SGEMM adds
 * K^T fz / n into the tensor (beta 0 for the first block, 1 after). The
 * kernels are stats.cl, in the device's float32 program. Each call makes
 * its own queue and buffers and releases them (a call is not in any inner
 * loop); times are host clock around finished phases. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <clblast_c.h>

#include "backend/opencl/opencl_internal.h"
#include "base/clock.h"
#include "base/error.h"

/* Floats per array per block of rows copied over (64 MiB). */
#define INPUT_FLOATS ((int64_t)1 << 24)
/* Floats of the Khatri-Rao block (64 MiB). */
#define KR_FLOATS ((int64_t)1 << 24)
/* Most rows per GEMM (the CUDA plugin's bound: float sums of at most 8192 rows). */
#define GEMM_MAX_ROWS 8192

typedef struct session {
    const char *statistic;
    int index;
    ax_ocl_device *device;
    cl_context context;
    cl_command_queue queue;
    cl_kernel kernel;
    cl_mem buffers[5];
    ax_status status;
} session;

/* Records the first failing call (named with its code); true on failure. */
static bool failed(session *s, cl_int code, const char *call)
{
    if (code == CL_SUCCESS)
        return false;
    if (s->status == AX_STATUS_OK)
        s->status = ax_fail(code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES
                                ? AX_STATUS_OUT_OF_MEMORY
                                : AX_STATUS_DEVICE,
                            "%s on OpenCL device %d (%s): %s failed: %s (%d)", s->statistic,
                            s->index, s->device->name, call, ax_ocl_error_name(code), code);
    return true;
}

static ax_status begin(session *s, const char *statistic, int index, const char *kernel)
{
    memset(s, 0, sizeof *s);
    s->statistic = statistic;
    s->index = index;
    s->device = ax_ocl_device_get(index);
    if (!s->device)
        return ax_fail_context(ax_ocl_no_device(index), "%s", statistic);
    cl_program program;
    ax_status status = ax_ocl_device_prepare(index, AX_PRECISION_F32, &s->context, &program);
    if (status != AX_STATUS_OK)
        return ax_fail_context(status, "%s", statistic);
    cl_int code = CL_SUCCESS;
    s->queue = clCreateCommandQueue(s->context, s->device->id, 0, &code);
    if (failed(s, code, "clCreateCommandQueue")) {
        s->queue = NULL;
        return s->status;
    }
    s->kernel = clCreateKernel(program, kernel, &code);
    if (failed(s, code, "clCreateKernel")) {
        s->kernel = NULL;
        return s->status;
    }
    return AX_STATUS_OK;
}

static void end(session *s)
{
    if (s->queue)
        clFinish(s->queue);
    for (int i = 0; i < 5; i++)
        if (s->buffers[i])
            clReleaseMemObject(s->buffers[i]);
    if (s->kernel)
        clReleaseKernel(s->kernel);
    if (s->queue)
        clReleaseCommandQueue(s->queue);
}

/* buffers[slot] of `bytes`; names the buffer, its size and the device's
 * memory when it does not fit. */
static bool allocate(session *s, int slot, size_t bytes, const char *what)
{
    cl_int code = bytes <= s->device->max_alloc ? CL_SUCCESS : CL_INVALID_BUFFER_SIZE;
    if (code == CL_SUCCESS)
        s->buffers[slot] = clCreateBuffer(s->context, CL_MEM_READ_WRITE, bytes, NULL, &code);
    if (code != CL_SUCCESS) {
        s->buffers[slot] = NULL;
        s->status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s on OpenCL device %d (%s): %s of %zu bytes "
                            "could not be allocated: %s (%d) (the device has %.2f GiB, at most "
                            "%llu bytes a buffer)", s->statistic, s->index, s->device->name, what,
                            bytes, ax_ocl_error_name(code), code,
                            (double)s->device->memory / 1073741824.0,
                            (unsigned long long)s->device->max_alloc);
        return false;
    }
    return true;
}

static bool set_args(session *s, int count, const size_t *sizes, const void *const *values)
{
    for (int i = 0; i < count; i++)
        if (failed(s, clSetKernelArg(s->kernel, (cl_uint)i, sizes[i], values[i]), "clSetKernelArg"))
            return false;
    return true;
}

static ax_status entropy_mi(int index, const float *x, const float *y, int64_t rows, int64_t d,
                            double sums[3], ax_stats_timing *timing)
{
    session s;
    const ax_status started = begin(&s, "entropy-mi", index, "ax_entropy_rows");
    if (started != AX_STATUS_OK) {
        end(&s);
        return started;
    }
    size_t group = AX_OCL_GROUP;
    while (group > 1 && group > s.device->max_group)
        group /= 2;
    const size_t acc_size = s.device->fp64 ? sizeof(double) : sizeof(float);
    int64_t block_rows = INPUT_FLOATS / d;
    block_rows = block_rows < 1 ? 1 : block_rows > rows ? rows : block_rows;
    int64_t groups = (block_rows + (int64_t)group - 1) / (int64_t)group;
    groups = groups < 1 ? 1 : groups > AX_OCL_REDUCE_GROUPS ? AX_OCL_REDUCE_GROUPS : groups;
    const size_t bytes = (size_t)(block_rows * d) * sizeof(float);
    double upload = 0.0, compute = 0.0, download = 0.0;
    bool ok = allocate(&s, 0, bytes, "a block of rows of x") &&
              allocate(&s, 1, bytes, "a block of rows of y") &&
              allocate(&s, 2, (size_t)(3 * groups) * acc_size, "the partial sums");
    for (int64_t first = 0; ok && first < rows; first += block_rows) {
        const int64_t count = rows - first < block_rows ? rows - first : block_rows;
        const size_t block_bytes = (size_t)(count * d) * sizeof(float);
        double start = ax_seconds_now();
        ok = !failed(&s, clEnqueueWriteBuffer(s.queue, s.buffers[0], CL_FALSE, 0, block_bytes,
                                              x + first * d, 0, NULL, NULL), "clEnqueueWriteBuffer") &&
             !failed(&s, clEnqueueWriteBuffer(s.queue, s.buffers[1], CL_FALSE, 0, block_bytes,
                                              y + first * d, 0, NULL, NULL), "clEnqueueWriteBuffer") &&
             !failed(&s, clFinish(s.queue), "clFinish");
        upload += ax_seconds_now() - start;
        start = ax_seconds_now();
        const cl_long count_arg = count, d_arg = d;
        const cl_int accumulate = first > 0;
        const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof count_arg, sizeof d_arg,
                                sizeof(cl_mem), sizeof accumulate};
        const void *values[] = {&s.buffers[0], &s.buffers[1], &count_arg, &d_arg, &s.buffers[2],
                                &accumulate};
        const size_t global = (size_t)groups * group;
        ok = ok && set_args(&s, 6, sizes, values) &&
             !failed(&s, clEnqueueNDRangeKernel(s.queue, s.kernel, 1, NULL, &global, &group, 0,
                                                NULL, NULL), "clEnqueueNDRangeKernel (ax_entropy_rows)") &&
             !failed(&s, clFinish(s.queue), "clFinish");
        compute += ax_seconds_now() - start;
    }
    if (ok) {
        const double start = ax_seconds_now();
        void *partials = malloc((size_t)(3 * groups) * acc_size);
        ok = partials && !failed(&s, clEnqueueReadBuffer(s.queue, s.buffers[2], CL_TRUE, 0,
                                                         (size_t)(3 * groups) * acc_size, partials,
                                                         0, NULL, NULL), "clEnqueueReadBuffer");
        for (int k = 0; ok && k < 3; k++) {
            sums[k] = 0.0;
            for (int64_t g = 0; g < groups; g++)
                sums[k] += s.device->fp64 ? ((const double *)partials)[k * groups + g]
                                          : (double)((const float *)partials)[k * groups + g];
        }
        if (!partials && s.status == AX_STATUS_OK)
            s.status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "entropy-mi: out of host memory");
        free(partials);
        download += ax_seconds_now() - start;
    }
    end(&s);
    if (ok && timing)
        *timing = (ax_stats_timing){upload, compute, download};
    return ok ? AX_STATUS_OK : s.status;
}

static ax_status tensor_mean(int index, const float *fx, const float *fy, const float *fz,
                             int64_t n, int64_t d, float *out, ax_stats_timing *timing)
{
    session s;
    const ax_status started = begin(&s, "tensor-mean", index, "ax_khatri_rao");
    if (started != AX_STATUS_OK) {
        end(&s);
        return started;
    }
    const int64_t dd = d * d, d3 = dd * d;
    int64_t block_rows = KR_FLOATS / dd;
    block_rows = block_rows < 1 ? 1 : block_rows > GEMM_MAX_ROWS ? GEMM_MAX_ROWS : block_rows;
    block_rows = block_rows > n ? n : block_rows;
    const size_t bytes = (size_t)(block_rows * d) * sizeof(float);
    bool ok = allocate(&s, 0, bytes, "a block of rows of fx") &&
              allocate(&s, 1, bytes, "a block of rows of fy") &&
              allocate(&s, 2, bytes, "a block of rows of fz") &&
              allocate(&s, 3, (size_t)(block_rows * dd) * sizeof(float), "the Khatri-Rao block") &&
              allocate(&s, 4, (size_t)d3 * sizeof(float), "the d^3 tensor");
    const float *host[3] = {fx, fy, fz};
    const float scale = (float)(1.0 / (double)n);
    double upload = 0.0, compute = 0.0, download = 0.0;
    for (int64_t first = 0; ok && first < n; first += block_rows) {
        const int64_t count = n - first < block_rows ? n - first : block_rows;
        const size_t block_bytes = (size_t)(count * d) * sizeof(float);
        double start = ax_seconds_now();
        for (int a = 0; a < 3 && ok; a++)
            ok = !failed(&s, clEnqueueWriteBuffer(s.queue, s.buffers[a], CL_FALSE, 0, block_bytes,
                                                  host[a] + first * d, 0, NULL, NULL),
                         "clEnqueueWriteBuffer");
        ok = ok && !failed(&s, clFinish(s.queue), "clFinish");
        upload += ax_seconds_now() - start;
        start = ax_seconds_now();
        const cl_long count_arg = count, d_arg = d;
        const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof count_arg, sizeof d_arg,
                                sizeof(cl_mem)};
        const void *values[] = {&s.buffers[0], &s.buffers[1], &count_arg, &d_arg, &s.buffers[3]};
        const size_t global = ax_ocl_elementwise_items(count * dd);
        ok = ok && set_args(&s, 5, sizes, values) &&
             !failed(&s, clEnqueueNDRangeKernel(s.queue, s.kernel, 1, NULL, &global, NULL, 0,
                                                NULL, NULL), "clEnqueueNDRangeKernel (ax_khatri_rao)");
        if (ok) {
            /* Row-major tensor (d*d, d) (+)= scale K^T (d*d, count) fz (count, d). */
            CLBlastStatusCode code = CLBlastSgemm(
                CLBlastLayoutRowMajor, CLBlastTransposeYes, CLBlastTransposeNo, (size_t)dd,
                (size_t)d, (size_t)count, scale, s.buffers[3], 0, (size_t)dd, s.buffers[2], 0,
                (size_t)d, first == 0 ? 0.0f : 1.0f, s.buffers[4], 0, (size_t)d, &s.queue, NULL);
            if (code != CLBlastSuccess) {
                s.status = ax_fail(AX_STATUS_DEVICE, "tensor-mean on OpenCL device %d (%s): "
                                   "CLBlastSgemm failed: %s (%d)", index, s.device->name,
                                   (int)code > -1000 ? ax_ocl_error_name((int)code)
                                                     : "a CLBlast error", (int)code);
                ok = false;
            }
        }
        ok = ok && !failed(&s, clFinish(s.queue), "clFinish");
        compute += ax_seconds_now() - start;
    }
    if (ok) {
        const double start = ax_seconds_now();
        ok = !failed(&s, clEnqueueReadBuffer(s.queue, s.buffers[4], CL_TRUE, 0,
                                             (size_t)d3 * sizeof(float), out, 0, NULL, NULL),
                     "clEnqueueReadBuffer");
        download += ax_seconds_now() - start;
    }
    end(&s);
    if (ok && timing)
        *timing = (ax_stats_timing){upload, compute, download};
    return ok ? AX_STATUS_OK : s.status;
}

/* One call at a time per process (the device's context is shared). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

ax_status ax_ocl_stats_entropy_mi(int index, const float *x, const float *y, int64_t rows,
                                  int64_t d, double sums[3], ax_stats_timing *timing)
{
    pthread_mutex_lock(&lock);
    ax_status status = entropy_mi(index, x, y, rows, d, sums, timing);
    pthread_mutex_unlock(&lock);
    return status;
}

ax_status ax_ocl_stats_tensor_mean(int index, const float *fx, const float *fy, const float *fz,
                                   int64_t n, int64_t d, float *out, ax_stats_timing *timing)
{
    pthread_mutex_lock(&lock);
    ax_status status = tensor_mean(index, fx, fy, fz, n, d, out, timing);
    pthread_mutex_unlock(&lock);
    return status;
}
