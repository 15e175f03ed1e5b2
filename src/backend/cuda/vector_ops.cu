/* vector_ops.cu: operations on flat parameter-shaped arrays (axpy, scale,
 * dot, all_finite) and the second pass every reduction ends with: the
 * per-block partial sums added in a fixed order on the device, then read
 * back through pinned memory. */
#include <math.h>

#include "backend/cuda/cuda_kernels.cuh"

extern "C" int ax_cuda_reduce_blocks(int64_t count)
{
    /* About four elements per thread before blocks fill the partials. */
    int64_t blocks = (count + 4 * AX_CUDA_THREADS - 1) / (4 * AX_CUDA_THREADS);
    if (blocks < 1)
        blocks = 1;
    return (int)(blocks < AX_CUDA_REDUCE_BLOCKS ? blocks : AX_CUDA_REDUCE_BLOCKS);
}

__global__ void finish_sum_kernel(const double *partials, int blocks, double *result)
{
    double v = 0.0;
    for (int i = threadIdx.x; i < blocks; i += blockDim.x)
        v += partials[i];
    v = ax_block_sum(v);
    if (threadIdx.x == 0)
        *result = v;
}

extern "C" double ax_cuda_finish_sum(ax_cuda_backend *cb, int blocks, int slot, bool read_back)
{
    finish_sum_kernel<<<1, AX_CUDA_THREADS, 0, cb->stream>>>(cb->partials, blocks,
                                                             cb->result + slot);
    AX_CUDA_LAUNCHED(cb, "finish_sum");
    if (!read_back)
        return 0.0;
    AX_CUDA_CHECK(cb, cudaMemcpyAsync(cb->host_result + slot, cb->result + slot, sizeof(double),
                                      cudaMemcpyDeviceToHost, cb->stream));
    AX_CUDA_CHECK(cb, cudaStreamSynchronize(cb->stream));
    return cb->error ? NAN : cb->host_result[slot];
}

template <typename real> __global__ void axpy_kernel(int64_t count, real alpha, const real *x, real *y)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] += alpha * x[i];
}

template <typename real> __global__ void scale_kernel(int64_t count, real alpha, real *x)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x)
        x[i] *= alpha;
}

template <typename real>
__global__ void dot_kernel(int64_t count, const real *x, const real *y, double *partials)
{
    double sum = 0.0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x)
        sum += (double)x[i] * (double)y[i];
    sum = ax_block_sum(sum);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = sum;
}

/* Counts the values that are NaN or infinite (x - x is NaN for both). */
template <typename real>
__global__ void count_nonfinite_kernel(int64_t count, const real *x, double *partials)
{
    double bad = 0.0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x)
        bad += !(x[i] - x[i] == 0) ? 1.0 : 0.0;
    bad = ax_block_sum(bad);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = bad;
}

extern "C" void ax_cuda_axpy(ax_backend *backend, int64_t count, double alpha, const void *x,
                             void *y)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    if (count <= 0)
        return;
    cudaSetDevice(cb->device);
    AX_CUDA_DISPATCH(backend, axpy_kernel<real><<<ax_cuda_elementwise_blocks(count),
                                                  AX_CUDA_THREADS, 0, cb->stream>>>(
                                  count, (real)alpha, (const real *)x, (real *)y));
    AX_CUDA_LAUNCHED(cb, "axpy");
}

extern "C" void ax_cuda_scale(ax_backend *backend, int64_t count, double alpha, void *x)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    if (count <= 0)
        return;
    cudaSetDevice(cb->device);
    AX_CUDA_DISPATCH(backend, scale_kernel<real><<<ax_cuda_elementwise_blocks(count),
                                                   AX_CUDA_THREADS, 0, cb->stream>>>(
                                  count, (real)alpha, (real *)x));
    AX_CUDA_LAUNCHED(cb, "scale");
}

/* Queues a dot (y non-NULL) or a count of the values that are not finite
 * into cb->result[slot]; with read_back, waits and returns it. */
static double queue_reduction(ax_backend *backend, int64_t count, const void *x, const void *y,
                              int slot, bool read_back)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    int blocks = ax_cuda_reduce_blocks(count);
    if (y) {
        AX_CUDA_DISPATCH(backend, dot_kernel<real><<<blocks, AX_CUDA_THREADS, 0, cb->stream>>>(
                                      count, (const real *)x, (const real *)y, cb->partials));
        AX_CUDA_LAUNCHED(cb, "dot");
    } else {
        AX_CUDA_DISPATCH(backend,
                         count_nonfinite_kernel<real><<<blocks, AX_CUDA_THREADS, 0, cb->stream>>>(
                             count, (const real *)x, cb->partials));
        AX_CUDA_LAUNCHED(cb, "all_finite");
    }
    return ax_cuda_finish_sum(cb, blocks, slot, read_back);
}

extern "C" double ax_cuda_dot(ax_backend *backend, int64_t count, const void *x, const void *y)
{
    cudaSetDevice(ax_cuda(backend)->device);
    return queue_reduction(backend, count, x, y, 0, true);
}

extern "C" bool ax_cuda_all_finite(ax_backend *backend, int64_t count, const void *x)
{
    cudaSetDevice(ax_cuda(backend)->device);
    double bad = queue_reduction(backend, count, x, NULL, 0, true);
    return bad == 0.0; /* NaN after a failure: not finite */
}

/* The same kernels as dot and all_finite, each final sum left in its own
 * result slot, then one copy of them all and one wait. */
extern "C" void ax_cuda_reduce(ax_backend *backend, int n, ax_reduction *reductions)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    cudaSetDevice(cb->device);
    for (int i = 0; i < n; i++) {
        const ax_reduction *r = &reductions[i];
        queue_reduction(backend, r->count, r->x, r->kind == AX_REDUCTION_DOT ? r->y : NULL,
                        AX_CUDA_BATCH_SLOT + i, false);
    }
    const int first = AX_CUDA_BATCH_SLOT;
    AX_CUDA_CHECK(cb, cudaMemcpyAsync(cb->host_result + first, cb->result + first,
                                      (size_t)n * sizeof(double), cudaMemcpyDeviceToHost,
                                      cb->stream));
    AX_CUDA_CHECK(cb, cudaStreamSynchronize(cb->stream));
    for (int i = 0; i < n; i++)
        reductions[i].value = cb->error ? NAN : cb->host_result[first + i];
}

/* sum |x| into partials; with y, y += alpha sign(x) (sign(0) = 0): L1's
 * penalty and subgradient. */
template <typename real>
__global__ void l1_kernel(int64_t count, const real *x, real alpha, real *y, double *partials)
{
    double sum = 0.0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x) {
        const real v = x[i];
        sum += fabs((double)v);
        if (y)
            y[i] += alpha * (real)((v > (real)0) - (v < (real)0));
    }
    sum = ax_block_sum(sum);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = sum;
}

template <typename real> __global__ void clamp_kernel(int64_t count, real limit, real *x)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x)
        x[i] = x[i] > limit ? limit : x[i] < -limit ? -limit : x[i];
}

extern "C" double ax_cuda_l1_penalty(ax_backend *backend, int64_t count, const void *x,
                                     double alpha, void *y)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    cudaSetDevice(cb->device);
    int blocks = ax_cuda_reduce_blocks(count);
    AX_CUDA_DISPATCH(backend, l1_kernel<real><<<blocks, AX_CUDA_THREADS, 0, cb->stream>>>(
                                  count, (const real *)x, (real)alpha, (real *)y, cb->partials));
    AX_CUDA_LAUNCHED(cb, "l1_penalty");
    return ax_cuda_finish_sum(cb, blocks, 0, true);
}

extern "C" void ax_cuda_clamp(ax_backend *backend, int64_t count, double limit, void *x)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    if (count <= 0)
        return;
    cudaSetDevice(cb->device);
    AX_CUDA_DISPATCH(backend, clamp_kernel<real><<<ax_cuda_elementwise_blocks(count),
                                                   AX_CUDA_THREADS, 0, cb->stream>>>(
                                  count, (real)limit, (real *)x));
    AX_CUDA_LAUNCHED(cb, "clamp");
}
