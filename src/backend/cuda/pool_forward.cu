/* pool_forward.cu: y (images, oh, ow, channels) = the largest value (max; a
 * NaN wins, as on the CPU) or the mean of each window of x, channel by
 * channel; padding is 0 (backend.h). One thread per output value; the mean
 * is the window's sum from 0 in window order times 1 / (kh kw) rounded in
 * the backend's precision, a rounded product (no fused multiply-add): the
 * CPU's values bit for bit. */
#include "backend/cuda/cuda_kernels.cuh"

template <typename real>
__global__ void pool_forward_kernel(bool is_max, real mean, ax_cuda_window g, const real *x,
                                    real *y, int64_t images)
{
    const int64_t count = images * g.oh * g.ow * g.channels;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < count;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t position = e / g.channels, ch = e - position * g.channels;
        const int64_t nrow = position / g.ow, ox = position - nrow * g.ow;
        const int64_t n = nrow / g.oh, oy = nrow - n * g.oh;
        const real *corner =
            x + ((n * g.height + oy * g.stride) * g.width + ox * g.stride) * g.channels + ch;
        real out = is_max ? corner[0] : (real)0;
        for (int64_t i = 0; i < g.kh; i++)
            for (int64_t j = 0; j < g.kw; j++) {
                const real v = corner[(i * g.width + j) * g.channels];
                if (is_max)
                    out = v > out || v != v ? v : out;
                else
                    out += v;
            }
        y[e] = is_max ? out : ax_mul_rn(out, mean);
    }
}

extern "C" void ax_cuda_pool_forward(ax_backend *backend, bool max,
                                     const ax_window_geometry *geometry, const void *x, void *y,
                                     int64_t images)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    const ax_cuda_window g = ax_cuda_window_of(geometry);
    const int64_t count = images * g.oh * g.ow * g.channels;
    if (count <= 0)
        return;
    cudaSetDevice(cb->device);
    AX_CUDA_DISPATCH(backend, pool_forward_kernel<real><<<ax_cuda_elementwise_blocks(count),
                                                           AX_CUDA_THREADS, 0, cb->stream>>>(
                                  max, (real)1 / (real)(g.kh * g.kw), g, (const real *)x,
                                  (real *)y, images));
    AX_CUDA_LAUNCHED(cb, "pool_forward");
}
