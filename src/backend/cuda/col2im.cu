/* col2im.cu: x (images, height, width, channels) = for each input value the
 * sum of the column entries im2col copies it to (backend.h). One thread per
 * value of x gathers them (no atomics, no two threads writing one value) in
 * the CPU's order (kernel row, then kernel column) from 0, without fused
 * multiply-adds: the CPU's sums bit for bit. */
#include "backend/cuda/cuda_kernels.cuh"

template <typename real>
__global__ void col2im_kernel(ax_cuda_window g, const real *cols, real *x, int64_t images)
{
    const int64_t patch = g.kh * g.kw * g.channels;
    const int64_t count = images * g.height * g.width * g.channels;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < count;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t pixel = e / g.channels, ch = e - pixel * g.channels;
        const int64_t nrow = pixel / g.width, xx = pixel - nrow * g.width;
        const int64_t n = nrow / g.height, y = nrow - n * g.height;
        real sum = 0;
        for (int64_t i = 0; i < g.kh; i++) {
            const int64_t ty = y + g.padding - i;
            if (ty < 0 || ty % g.stride != 0 || ty / g.stride >= g.oh)
                continue;
            const real *band = cols + (n * g.oh + ty / g.stride) * g.ow * patch + i * g.kw * g.channels;
            for (int64_t j = 0; j < g.kw; j++) {
                const int64_t tx = xx + g.padding - j;
                if (tx < 0 || tx % g.stride != 0 || tx / g.stride >= g.ow)
                    continue;
                sum += band[(tx / g.stride) * patch + j * g.channels + ch];
            }
        }
        x[e] = sum;
    }
}

extern "C" void ax_cuda_col2im(ax_backend *backend, const ax_window_geometry *geometry,
                               const void *columns, void *x, int64_t images)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    const ax_cuda_window g = ax_cuda_window_of(geometry);
    const int64_t count = images * g.height * g.width * g.channels;
    if (count <= 0)
        return;
    cudaSetDevice(cb->device);
    AX_CUDA_DISPATCH(backend, col2im_kernel<real><<<ax_cuda_elementwise_blocks(count),
                                                     AX_CUDA_THREADS, 0, cb->stream>>>(
                                  g, (const real *)columns, (real *)x, images));
    AX_CUDA_LAUNCHED(cb, "col2im");
}
