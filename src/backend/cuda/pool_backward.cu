/* pool_backward.cu: dx (images, height, width, channels) = d loss / dx for
 * dy (images, oh, ow, channels) (backend.h). One thread per value of x
 * gathers from the windows that hold it, in the CPU's order (output row,
 * then column), what the CPU's kernel scatters: a max window's gradient
 * goes to the first position in window order equal to its largest value
 * (PyTorch's choice on ties; NaN as on the CPU), a mean window's dy times
 * 1 / (kh kw) to each; sums from 0 without fused multiply-adds, so the
 * CPU's values bit for bit. No atomics: windows may overlap. A value is its
 * max window's chosen position when no value before it is as large, none
 * after it larger and none NaN (a NaN value: no NaN before it), found in one
 * pass over the window that stops at the first value ruling it out. */
#include "backend/cuda/cuda_kernels.cuh"

template <typename real>
__global__ void pool_backward_kernel(bool is_max, real mean, ax_cuda_window g, const real *x,
                                     const real *dy, real *dx, int64_t images)
{
    const int64_t count = images * g.height * g.width * g.channels;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < count;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t pixel = e / g.channels, ch = e - pixel * g.channels;
        const int64_t nrow = pixel / g.width, xx = pixel - nrow * g.width;
        const int64_t n = nrow / g.height, y = nrow - n * g.height;
        /* windows oy with oy stride <= y < oy stride + kh, likewise ox */
        const int64_t oy_first = y >= g.kh ? (y - g.kh) / g.stride + 1 : 0;
        const int64_t ox_first = xx >= g.kw ? (xx - g.kw) / g.stride + 1 : 0;
        const int64_t oy_last = min(y / g.stride, g.oh - 1), ox_last = min(xx / g.stride, g.ow - 1);
        const real *image = x + n * g.height * g.width * g.channels + ch;
        const real mine = image[(y * g.width + xx) * g.channels];
        real sum = 0;
        for (int64_t oy = oy_first; oy <= oy_last; oy++)
            for (int64_t ox = ox_first; ox <= ox_last; ox++) {
                const real top = dy[((n * g.oh + oy) * g.ow + ox) * g.channels + ch];
                if (!is_max) {
                    sum += ax_mul_rn(top, mean);
                    continue;
                }
                const real *origin = image + (oy * g.stride * g.width + ox * g.stride) * g.channels;
                const int64_t here = (y - oy * g.stride) * g.kw + (xx - ox * g.stride);
                bool hit = true;
                for (int64_t i = 0; i < g.kh && hit; i++)
                    for (int64_t j = 0; j < g.kw && hit; j++) {
                        const int64_t k = i * g.kw + j;
                        const real v = origin[(i * g.width + j) * g.channels];
                        hit = k == here || !(mine != mine ? k < here && v != v
                                                          : v != v || v > mine ||
                                                                (k < here && v == mine));
                    }
                if (hit)
                    sum += top;
            }
        dx[e] = sum;
    }
}

extern "C" void ax_cuda_pool_backward(ax_backend *backend, bool max,
                                      const ax_window_geometry *geometry, const void *x,
                                      const void *dy, void *dx, int64_t images)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    const ax_cuda_window g = ax_cuda_window_of(geometry);
    const int64_t count = images * g.height * g.width * g.channels;
    if (count <= 0)
        return;
    cudaSetDevice(cb->device);
    AX_CUDA_DISPATCH(backend, pool_backward_kernel<real><<<ax_cuda_elementwise_blocks(count),
                                                            AX_CUDA_THREADS, 0, cb->stream>>>(
                                  max, (real)1 / (real)(g.kh * g.kw), g, (const real *)x,
                                  (const real *)dy, (real *)dx, images));
    AX_CUDA_LAUNCHED(cb, "pool_backward");
}
