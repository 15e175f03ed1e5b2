/* cuda_kernels.cuh: device helpers shared by the kernel files: grid sizes,
 * a block-wide sum in a fixed order, and dispatch on the backend's
 * precision. Reductions are two-pass with a fixed grid (never atomics), so
 * every result is the same from run to run. */
#ifndef AX_BACKEND_CUDA_KERNELS_CUH
#define AX_BACKEND_CUDA_KERNELS_CUH

#include "backend/cuda/cuda_internal.h"

/* The libm function of each precision, so one template serves both. */
static __device__ __forceinline__ float ax_exp(float x) { return expf(x); }
static __device__ __forceinline__ double ax_exp(double x) { return exp(x); }
static __device__ __forceinline__ float ax_tanh(float x) { return tanhf(x); }
static __device__ __forceinline__ double ax_tanh(double x) { return tanh(x); }
static __device__ __forceinline__ float ax_sqrt(float x) { return sqrtf(x); }
static __device__ __forceinline__ double ax_sqrt(double x) { return sqrt(x); }

/* Smallest normal number of a precision: the floor under probabilities
 * before a logarithm, as the CPU kernels use. */
template <typename real> static __device__ __forceinline__ double ax_log_floor()
{
    return sizeof(real) == 4 ? 1.1754943508222875e-38 : 2.2250738585072014e-308;
}

/* A 2D launch over a row-major (rows, cols) matrix: blocks of 32 columns x
 * 8 rows, the rows of the grid capped and walked with a stride. */
#define AX_CUDA_TILE_ROWS 8
static inline dim3 ax_cuda_tile_grid(int64_t rows, int64_t cols)
{
    int64_t x = (cols + 31) / 32, y = (rows + AX_CUDA_TILE_ROWS - 1) / AX_CUDA_TILE_ROWS;
    if (y > 65535)
        y = 65535;
    if (y < 1)
        y = 1;
    return dim3((unsigned)x, (unsigned)y, 1);
}

/* Blocks for an elementwise kernel over count elements with a grid-stride
 * loop: enough to fill any current GPU, few enough to keep launches cheap. */
static inline unsigned ax_cuda_elementwise_blocks(int64_t count)
{
    int64_t blocks = (count + AX_CUDA_THREADS - 1) / AX_CUDA_THREADS;
    if (blocks < 1)
        blocks = 1;
    return (unsigned)(blocks < 65536 ? blocks : 65536);
}

/* Sum of v over the block (AX_CUDA_THREADS threads), valid in thread 0.
 * The order of additions depends only on thread indices. */
static __device__ __forceinline__ double ax_block_sum(double v)
{
    __shared__ double warp_sums[AX_CUDA_THREADS / 32];
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < AX_CUDA_THREADS / 32 ? warp_sums[lane] : 0.0;
        for (int offset = 16; offset > 0; offset >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    __syncthreads(); /* warp_sums may be reused by a later call */
    return v;
}

/* Runs the statements with `real` as float or double, the backend's precision. */
#define AX_CUDA_DISPATCH(backend, ...)                                              \
    do {                                                                           \
        if ((backend)->precision == AX_PRECISION_F64) {                            \
            typedef double real;                                                   \
            __VA_ARGS__;                                                           \
        } else {                                                                   \
            typedef float real;                                                    \
            __VA_ARGS__;                                                           \
        }                                                                          \
    } while (0)

/* A window geometry (backend.h) passed to kernels by value. */
struct ax_cuda_window {
    int64_t height, width, channels, kh, kw, stride, padding, oh, ow;
};
static inline ax_cuda_window ax_cuda_window_of(const ax_window_geometry *g)
{
    return ax_cuda_window{g->height,       g->width,  g->channels,
                          g->kernel_height, g->kernel_width, g->stride,
                          g->padding,      g->out_height,   g->out_width};
}

/* A rounded product that nvcc never fuses with a following addition (its
 * default --fmad=true would), so sums of products round as the CPU's. */
static __device__ __forceinline__ float ax_mul_rn(float a, float b) { return __fmul_rn(a, b); }
static __device__ __forceinline__ double ax_mul_rn(double a, double b) { return __dmul_rn(a, b); }

#endif
