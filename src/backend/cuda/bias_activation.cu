/* bias_activation.cu: z = act(z + bias) in place after each layer's GEMM,
 * the same arithmetic as the CPU kernel (cpu_kernels.inc): elementwise
 * activations on 32 x 8 tiles, softmax with one warp per row. */
#include "backend/cuda/cuda_kernels.cuh"

template <typename real>
static __device__ __forceinline__ real activate(ax_activation activation, real v)
{
    switch (activation) {
    case AX_ACT_SIGMOID:
        return (real)1 / ((real)1 + ax_exp(-v));
    case AX_ACT_TANH:
        return ax_tanh(v);
    case AX_ACT_RELU:
        /* v > 0 ? v : 0, keeping NaN visible as the CPU does. */
        return v > 0 ? v : (v == v ? (real)0 : v);
    default:
        return v;
    }
}

template <typename real>
__global__ void bias_activation_kernel(ax_activation activation, real *z, const real *bias,
                                       int64_t rows, int64_t cols)
{
    int64_t c = (int64_t)blockIdx.x * 32 + threadIdx.x;
    if (c >= cols)
        return;
    const real b = bias[c];
    for (int64_t r = (int64_t)blockIdx.y * AX_CUDA_TILE_ROWS + threadIdx.y; r < rows;
         r += (int64_t)gridDim.y * AX_CUDA_TILE_ROWS) {
        real *value = z + r * cols + c;
        *value = activate(activation, *value + b);
    }
}

/* One warp per row: add the bias and find the largest value, exponentiate
 * the differences and sum them, scale by the inverse sum. */
template <typename real>
__global__ void softmax_kernel(real *z, const real *bias, int64_t rows, int64_t cols)
{
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t r = (int64_t)blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5); r < rows;
         r += warps) {
        real *row = z + r * cols;
        real largest = row[0] + bias[0];
        for (int64_t c = lane; c < cols; c += 32) {
            real v = row[c] + bias[c];
            row[c] = v;
            largest = v > largest ? v : largest;
        }
        for (int offset = 16; offset > 0; offset >>= 1) {
            real other = __shfl_xor_sync(0xffffffffu, largest, offset);
            largest = other > largest ? other : largest;
        }
        real sum = 0;
        for (int64_t c = lane; c < cols; c += 32) {
            real e = ax_exp(row[c] - largest);
            row[c] = e;
            sum += e;
        }
        for (int offset = 16; offset > 0; offset >>= 1)
            sum += __shfl_xor_sync(0xffffffffu, sum, offset);
        const real inverse = (real)1 / sum;
        for (int64_t c = lane; c < cols; c += 32)
            row[c] *= inverse;
    }
}

extern "C" void ax_cuda_bias_activation(ax_backend *backend, ax_activation activation, void *z,
                                        const void *bias, int64_t rows, int64_t cols)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    if (rows <= 0 || cols <= 0)
        return;
    cudaSetDevice(cb->device);
    if (activation == AX_ACT_SOFTMAX) {
        const int rows_per_block = AX_CUDA_THREADS / 32;
        int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
        unsigned grid = (unsigned)(blocks < 65535 ? blocks : 65535);
        AX_CUDA_DISPATCH(backend, softmax_kernel<real><<<grid, AX_CUDA_THREADS, 0, cb->stream>>>(
                                      (real *)z, (const real *)bias, rows, cols));
    } else {
        AX_CUDA_DISPATCH(backend,
                         bias_activation_kernel<real>
                         <<<ax_cuda_tile_grid(rows, cols), dim3(32, AX_CUDA_TILE_ROWS), 0,
                            cb->stream>>>(activation, (real *)z, (const real *)bias, rows, cols));
    }
    AX_CUDA_LAUNCHED(cb, "bias_activation");
}
