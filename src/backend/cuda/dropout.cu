/* dropout.cu: inverted dropout on the device with the CPU's mask bit for
 * bit: the same counter-based hash (ax_hash64 of base/random.h, compiled
 * for host and device), the same key per row and column, the same 32-bit
 * threshold and keep scale computed once on the host. */
#include "backend/cuda/cuda_kernels.cuh"
#include "base/random.h"

template <typename real>
__global__ void dropout_kernel(real *a, uint64_t threshold, real keep_scale, uint64_t key,
                               int64_t row_offset, int64_t rows, int64_t cols)
{
    int64_t c = (int64_t)blockIdx.x * 32 + threadIdx.x;
    if (c >= cols)
        return;
    for (int64_t r = (int64_t)blockIdx.y * AX_CUDA_TILE_ROWS + threadIdx.y; r < rows;
         r += (int64_t)gridDim.y * AX_CUDA_TILE_ROWS) {
        uint64_t row_key = ax_hash64(key ^ ((uint64_t)(row_offset + r) * 0xd1b54a32d192ed03ULL));
        uint64_t bits = ax_hash64(row_key + (uint64_t)c) >> 32;
        real *value = a + r * cols + c;
        *value = bits >= threshold ? *value * keep_scale : (real)0;
    }
}

extern "C" void ax_cuda_dropout(ax_backend *backend, void *a, double rate, uint64_t key,
                                int64_t row_offset, int64_t rows, int64_t cols)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    if (rows <= 0 || cols <= 0)
        return;
    cudaSetDevice(cb->device);
    const uint64_t threshold = (uint64_t)(rate * 4294967296.0);
    AX_CUDA_DISPATCH(backend,
                     dropout_kernel<real><<<ax_cuda_tile_grid(rows, cols),
                                            dim3(32, AX_CUDA_TILE_ROWS), 0, cb->stream>>>(
                         (real *)a, threshold, (real)(1.0 / (1.0 - rate)), key, row_offset, rows,
                         cols));
    AX_CUDA_LAUNCHED(cb, "dropout");
}
