/* argmax.cu: the index of each row's largest output (the predicted class),
 * one thread per row with the CPU's rule (first index wins ties, NaN never
 * wins), written to a staging buffer and copied back to the host in chunks. */
#include <string.h>

#include "backend/cuda/cuda_kernels.cuh"

template <typename real>
__global__ void argmax_kernel(const real *outputs, int32_t *indices, int64_t rows, int64_t cols)
{
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < rows;
         r += (int64_t)gridDim.x * blockDim.x) {
        const real *row = outputs + r * cols;
        int32_t best = 0;
        real best_value = row[0];
        for (int64_t c = 1; c < cols; c++)
            if (row[c] > best_value) {
                best_value = row[c];
                best = (int32_t)c;
            }
        indices[r] = best;
    }
}

extern "C" void ax_cuda_argmax_rows(ax_backend *backend, const void *outputs,
                                    int32_t *host_indices, int64_t rows, int64_t cols)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    cudaSetDevice(cb->device);
    const int64_t chunk = (int64_t)(AX_CUDA_STAGE_BYTES / sizeof(int32_t));
    for (int64_t first = 0; first < rows; first += chunk) {
        int64_t count = rows - first < chunk ? rows - first : chunk;
        int stage = ax_cuda_stage_acquire(cb);
        int32_t *device_indices = (int32_t *)cb->device_stage[stage];
        AX_CUDA_DISPATCH(backend,
                         argmax_kernel<real><<<ax_cuda_elementwise_blocks(count), AX_CUDA_THREADS,
                                               0, cb->stream>>>(
                             (const real *)outputs + first * cols, device_indices, count, cols));
        AX_CUDA_LAUNCHED(cb, "argmax_rows");
        AX_CUDA_CHECK(cb, cudaMemcpyAsync(cb->host_stage[stage], device_indices,
                                          (size_t)count * sizeof(int32_t),
                                          cudaMemcpyDeviceToHost, cb->stream));
        AX_CUDA_CHECK(cb, cudaStreamSynchronize(cb->stream));
        ax_cuda_stage_release(cb, stage);
        if (cb->error)
            memset(host_indices + first, 0, (size_t)count * sizeof(int32_t));
        else
            memcpy(host_indices + first, cb->host_stage[stage], (size_t)count * sizeof(int32_t));
    }
}
