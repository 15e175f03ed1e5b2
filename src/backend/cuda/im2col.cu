/* im2col.cu: columns (images * oh * ow, kh * kw * channels) = each window
 * position's input values in (kernel row, kernel column, channel) order, 0
 * where the window covers padding (backend.h); one thread per column entry,
 * a copy, so the CPU's values bit for bit. The shared window helpers are in
 * cuda_kernels.cuh. */
#include "backend/cuda/cuda_kernels.cuh"

template <typename real>
__global__ void im2col_kernel(ax_cuda_window g, const real *x, real *cols, int64_t images)
{
    const int64_t patch = g.kh * g.kw * g.channels, run = g.kw * g.channels;
    const int64_t count = images * g.oh * g.ow * patch;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < count;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t row = e / patch, v = e - row * patch;
        const int64_t i = v / run, rest = v - i * run;
        const int64_t j = rest / g.channels, ch = rest - j * g.channels;
        const int64_t n = row / (g.oh * g.ow), position = row - n * (g.oh * g.ow);
        const int64_t oy = position / g.ow, ox = position - oy * g.ow;
        const int64_t y = oy * g.stride - g.padding + i, xx = ox * g.stride - g.padding + j;
        const bool inside = y >= 0 && y < g.height && xx >= 0 && xx < g.width;
        cols[e] = inside ? x[((n * g.height + y) * g.width + xx) * g.channels + ch] : (real)0;
    }
}

extern "C" void ax_cuda_im2col(ax_backend *backend, const ax_window_geometry *geometry,
                               const void *x, void *columns, int64_t images)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    const ax_cuda_window g = ax_cuda_window_of(geometry);
    const int64_t count = images * g.oh * g.ow * g.kh * g.kw * g.channels;
    if (count <= 0)
        return;
    cudaSetDevice(cb->device);
    AX_CUDA_DISPATCH(backend, im2col_kernel<real><<<ax_cuda_elementwise_blocks(count),
                                                     AX_CUDA_THREADS, 0, cb->stream>>>(
                                  g, (const real *)x, (real *)columns, images));
    AX_CUDA_LAUNCHED(cb, "im2col");
}
