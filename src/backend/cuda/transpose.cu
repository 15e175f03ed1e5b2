/* transpose.cu: dst (batches, cols, rows) = each (rows, cols) matrix of src
 * transposed (backend.h: a convolution's weights between torch's layout and
 * the columns'); one thread per value of dst, a copy. */
#include "backend/cuda/cuda_kernels.cuh"

template <typename real>
__global__ void transpose_kernel(const real *src, real *dst, int64_t batches, int64_t rows,
                                 int64_t cols)
{
    const int64_t count = batches * rows * cols;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < count;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t bc = e / rows, r = e - bc * rows;
        const int64_t b = bc / cols, col = bc - b * cols;
        dst[e] = src[(b * rows + r) * cols + col];
    }
}

extern "C" void ax_cuda_transpose(ax_backend *backend, const void *src, void *dst,
                                  int64_t batches, int64_t rows, int64_t cols)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    const int64_t count = batches * rows * cols;
    if (count <= 0)
        return;
    cudaSetDevice(cb->device);
    AX_CUDA_DISPATCH(backend, transpose_kernel<real><<<ax_cuda_elementwise_blocks(count),
                                                        AX_CUDA_THREADS, 0, cb->stream>>>(
                                  (const real *)src, (real *)dst, batches, rows, cols));
    AX_CUDA_LAUNCHED(cb, "transpose");
}
