/* activation_backward.cu: the backward pass's fused elementwise step,
 * delta *= act'(y) with the bias gradient (column sums of delta) in the
 * same pass, and plain column sums for the output layer.
 *
 * Column sums of a row-major (rows, cols) matrix: blocks of 32 columns x 8
 * rows, each block covering one chunk of rows, so reads are coalesced along
 * columns and tall batches still fill the GPU. Each block writes one double
 * partial sum per column; a second kernel adds the chunks' partials in
 * order. No atomics: the result is the same bits every run. */
#include "backend/cuda/cuda_kernels.cuh"

template <typename real>
static __device__ __forceinline__ real derivative(ax_activation activation, real d, real y, real s)
{
    switch (activation) {
    case AX_ACT_SIGMOID:
        return d * (s * y * ((real)1 - s * y));
    case AX_ACT_TANH:
        return d * ((real)1 - s * s * y * y);
    case AX_ACT_RELU:
        return y > 0 ? d : (real)0;
    default: /* identity; softmax only through the fused loss */
        return d;
    }
}

/* With apply, delta is multiplied by the derivative first. Partials go to
 * partials[chunk * cols + c], or straight to out when there is one chunk. */
template <typename real, bool apply>
__global__ void column_sums_kernel(ax_activation activation, real *delta, const real *a,
                                   real a_scale, int64_t rows, int64_t cols,
                                   int64_t rows_per_chunk, double *partials, real *out)
{
    __shared__ double sums[AX_CUDA_TILE_ROWS][33];
    const int64_t c = (int64_t)blockIdx.x * 32 + threadIdx.x;
    const int64_t first = (int64_t)blockIdx.y * rows_per_chunk;
    int64_t last = first + rows_per_chunk;
    if (last > rows)
        last = rows;
    double sum = 0.0;
    if (c < cols) {
        for (int64_t r = first + threadIdx.y; r < last; r += AX_CUDA_TILE_ROWS) {
            real d = delta[r * cols + c];
            if (apply) {
                d = derivative(activation, d, a[r * cols + c], a_scale);
                delta[r * cols + c] = d;
            }
            sum += (double)d;
        }
    }
    sums[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        double total = 0.0;
        for (int i = 0; i < AX_CUDA_TILE_ROWS; i++)
            total += sums[i][threadIdx.x];
        if (gridDim.y == 1)
            out[c] = (real)total;
        else
            partials[(int64_t)blockIdx.y * cols + c] = total;
    }
}

template <typename real>
__global__ void sum_chunks_kernel(const double *partials, int64_t chunks, int64_t cols, real *out)
{
    for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < cols;
         c += (int64_t)gridDim.x * blockDim.x) {
        double total = 0.0;
        for (int64_t k = 0; k < chunks; k++)
            total += partials[k * cols + c];
        out[c] = (real)total;
    }
}

template <typename real, bool apply>
static void launch(ax_cuda_backend *cb, ax_activation activation, void *delta, const void *a,
                   double a_scale, void *out, int64_t rows, int64_t cols)
{
    /* Chunks of rows, as many as the partials buffer holds for this width. */
    int64_t chunks = (rows + AX_CUDA_COLUMN_CHUNK_ROWS - 1) / AX_CUDA_COLUMN_CHUNK_ROWS;
    int64_t fit = AX_CUDA_COLUMN_PARTIALS / cols;
    if (chunks > fit)
        chunks = fit;
    if (chunks > 65535)
        chunks = 65535;
    if (chunks < 1)
        chunks = 1;
    int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
    if (rows_per_chunk < 1) /* no rows: one chunk writes zeros */
        rows_per_chunk = 1;
    chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
    if (chunks < 1)
        chunks = 1;
    dim3 grid((unsigned)((cols + 31) / 32), (unsigned)chunks, 1);
    column_sums_kernel<real, apply><<<grid, dim3(32, AX_CUDA_TILE_ROWS), 0, cb->stream>>>(
        activation, (real *)delta, (const real *)a, (real)a_scale, rows, cols, rows_per_chunk,
        cb->column_partials, (real *)out);
    AX_CUDA_LAUNCHED(cb, "column_sums");
    if (chunks > 1) {
        sum_chunks_kernel<real><<<ax_cuda_elementwise_blocks(cols), AX_CUDA_THREADS, 0,
                                  cb->stream>>>(cb->column_partials, chunks, cols, (real *)out);
        AX_CUDA_LAUNCHED(cb, "column_sums (chunks)");
    }
}

extern "C" void ax_cuda_activation_backward(ax_backend *backend, ax_activation activation,
                                            void *delta, const void *a, double a_scale,
                                            void *bias_gradient, int64_t rows, int64_t cols)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    if (cols <= 0)
        return;
    cudaSetDevice(cb->device);
    bool apply = activation != AX_ACT_IDENTITY && activation != AX_ACT_SOFTMAX;
    if (apply)
        AX_CUDA_DISPATCH(backend, launch<real, true>(cb, activation, delta, a, a_scale,
                                                     bias_gradient, rows, cols));
    else
        AX_CUDA_DISPATCH(backend, launch<real, false>(cb, activation, delta, a, a_scale,
                                                      bias_gradient, rows, cols));
}

extern "C" void ax_cuda_column_sums(ax_backend *backend, const void *delta, void *bias_gradient,
                                    int64_t rows, int64_t cols)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    if (cols <= 0)
        return;
    cudaSetDevice(cb->device);
    AX_CUDA_DISPATCH(backend, launch<real, false>(cb, AX_ACT_IDENTITY, (void *)delta, NULL, 1.0,
                                                  bias_gradient, rows, cols));
}
