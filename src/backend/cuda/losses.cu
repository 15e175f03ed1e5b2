/* losses.cu: the output layer's losses with their gradients fused into the
 * same pass: softmax + cross-entropy, sigmoid + binary cross-entropy and
 * squared error. The summed loss is reduced on the device in double (per-
 * block partials added in a fixed order, vector_ops.cu) and read back; the
 * arithmetic of each element is the CPU kernels' (cpu_kernels.inc). */
#include <math.h>

#include "backend/cuda/cuda_kernels.cuh"

template <typename real>
__global__ void cross_entropy_kernel(const real *p, const int32_t *labels, real *delta,
                                     double scale, int64_t rows, int64_t cols, double *partials)
{
    const double floor_value = ax_log_floor<real>();
    const real s = (real)scale;
    double loss = 0.0;
    const int64_t count = rows * cols;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = i / cols, c = i - r * cols;
        const bool is_label = labels[r] == c;
        if (is_label) {
            double probability = (double)p[i];
            loss -= log(probability > floor_value ? probability : floor_value);
        }
        if (delta) {
            real d = s * p[i];
            delta[i] = is_label ? d - s : d;
        }
    }
    loss = ax_block_sum(loss);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = loss;
}

/* The answer y of element (r, c): one-hot labels or a target value. */
template <typename real>
static __device__ __forceinline__ double answer(const int32_t *labels, const real *targets,
                                                int64_t i, int64_t r, int64_t c)
{
    return labels ? (labels[r] == c ? 1.0 : 0.0) : (double)targets[i];
}

template <typename real>
__global__ void binary_cross_entropy_kernel(const real *p, const int32_t *labels,
                                            const real *targets, real *delta, double scale,
                                            int64_t rows, int64_t cols, double *partials)
{
    const double floor_value = ax_log_floor<real>();
    double loss = 0.0;
    const int64_t count = rows * cols;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = i / cols, c = i - r * cols;
        double y = answer(labels, targets, i, r, c);
        double q = (double)p[i], q1 = 1.0 - q;
        loss -= y * log(q > floor_value ? q : floor_value) +
                (1.0 - y) * log(q1 > floor_value ? q1 : floor_value);
        if (delta)
            delta[i] = (real)(scale * (q - y));
    }
    loss = ax_block_sum(loss);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = loss;
}

template <typename real>
__global__ void squared_error_kernel(const real *p, const int32_t *labels, const real *targets,
                                     real *delta, double scale, int64_t rows, int64_t cols,
                                     double *partials)
{
    double loss = 0.0;
    const int64_t count = rows * cols;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = i / cols, c = i - r * cols;
        double difference = (double)p[i] - answer(labels, targets, i, r, c);
        loss += difference * difference;
        if (delta)
            delta[i] = (real)(2.0 * scale * difference);
    }
    loss = ax_block_sum(loss);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = loss;
}

extern "C" double ax_cuda_cross_entropy(ax_backend *backend, const void *outputs,
                                        const int32_t *labels, void *delta, double scale,
                                        int64_t rows, int64_t cols)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    cudaSetDevice(cb->device);
    int blocks = ax_cuda_reduce_blocks(rows * cols);
    AX_CUDA_DISPATCH(backend,
                     cross_entropy_kernel<real><<<blocks, AX_CUDA_THREADS, 0, cb->stream>>>(
                         (const real *)outputs, labels, (real *)delta, scale, rows, cols,
                         cb->partials));
    AX_CUDA_LAUNCHED(cb, "cross_entropy");
    /* Deferred: the sum stays in result[1], and the host does not wait. */
    return ax_cuda_finish_sum(cb, blocks, cb->defer_losses ? 1 : 0, !cb->defer_losses);
}

extern "C" double ax_cuda_binary_cross_entropy(ax_backend *backend, const void *outputs,
                                               const int32_t *labels, const void *targets,
                                               void *delta, double scale, int64_t rows,
                                               int64_t cols)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    cudaSetDevice(cb->device);
    int blocks = ax_cuda_reduce_blocks(rows * cols);
    AX_CUDA_DISPATCH(backend, binary_cross_entropy_kernel<real>
                              <<<blocks, AX_CUDA_THREADS, 0, cb->stream>>>(
                                  (const real *)outputs, labels, (const real *)targets,
                                  (real *)delta, scale, rows, cols, cb->partials));
    AX_CUDA_LAUNCHED(cb, "binary_cross_entropy");
    /* Deferred: the sum stays in result[1], and the host does not wait. */
    return ax_cuda_finish_sum(cb, blocks, cb->defer_losses ? 1 : 0, !cb->defer_losses);
}

extern "C" double ax_cuda_squared_error(ax_backend *backend, const void *outputs,
                                        const int32_t *labels, const void *targets, void *delta,
                                        double scale, int64_t rows, int64_t cols)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    cudaSetDevice(cb->device);
    int blocks = ax_cuda_reduce_blocks(rows * cols);
    AX_CUDA_DISPATCH(backend,
                     squared_error_kernel<real><<<blocks, AX_CUDA_THREADS, 0, cb->stream>>>(
                         (const real *)outputs, labels, (const real *)targets, (real *)delta,
                         scale, rows, cols, cb->partials));
    AX_CUDA_LAUNCHED(cb, "squared_error");
    /* Deferred: the sum stays in result[1], and the host does not wait. */
    return ax_cuda_finish_sum(cb, blocks, cb->defer_losses ? 1 : 0, !cb->defer_losses);
}

/* ------------------------------------------ losses kept on the device */

/* The host's arithmetic (train.c: loss_sum += (sum * scale) * weight) in
 * float64, one thread: the same bits as a loss read back each step. */
__global__ void loss_accumulate_kernel(double *result, double scale, double weight, double step)
{
    const double v = result[1] * scale;
    result[2] += v * weight;
    if (!isfinite(v) && result[3] < 0.0) {
        result[3] = step;
        result[4] = v;
    }
}

__global__ void loss_reset_kernel(double *result, double start)
{
    result[2] = start;
    result[3] = -1.0;
}

extern "C" bool ax_cuda_loss_defer(ax_backend *backend, bool on)
{
    ax_cuda(backend)->defer_losses = on;
    return on;
}

extern "C" void ax_cuda_loss_accumulate(ax_backend *backend, double scale, double weight,
                                        int64_t step)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    cudaSetDevice(cb->device);
    loss_accumulate_kernel<<<1, 1, 0, cb->stream>>>(cb->result, scale, weight, (double)step);
    AX_CUDA_LAUNCHED(cb, "loss_accumulate");
}

extern "C" void ax_cuda_loss_reset(ax_backend *backend, double start)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    cudaSetDevice(cb->device);
    loss_reset_kernel<<<1, 1, 0, cb->stream>>>(cb->result, start);
    AX_CUDA_LAUNCHED(cb, "loss_reset");
}

extern "C" void ax_cuda_loss_read(ax_backend *backend, double *total, int64_t *first_bad,
                                  double *bad_value)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    cudaSetDevice(cb->device);
    AX_CUDA_CHECK(cb, cudaMemcpyAsync(cb->host_result + 2, cb->result + 2, 3 * sizeof(double),
                                      cudaMemcpyDeviceToHost, cb->stream));
    AX_CUDA_CHECK(cb, cudaStreamSynchronize(cb->stream));
    *total = cb->error ? NAN : cb->host_result[2];
    *first_bad = cb->error ? -1 : (int64_t)cb->host_result[3];
    *bad_value = cb->host_result[4];
}
