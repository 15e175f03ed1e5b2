/* gather.cu: moving data between host and device through the backend's two
 * pinned staging buffers (cuda_internal.h).
 *
 * gather_rows packs the batch's rows (in the shuffled order) on the host
 * into a pinned buffer as float32, copies that over the bus and, for a
 * float64 network, widens it on the device: half the bytes of a float64
 * copy, and the host never waits for the device while packing except to
 * reuse a buffer whose copy is still in flight (the two buffers alternate,
 * so packing one chunk overlaps the copy of the previous one). A piece of
 * whole rows is one contiguous run of bytes in the buffer and on the device,
 * so it goes up as one 1-D copy; only a piece of part of a row (a row wider
 * than the buffer) needs the 2-D copy's row pitch.
 *
 * Data sets on the device (backend.h, version 4; core/device_data.c): the
 * sets go up once per run by write_bytes (through the same pinned buffers),
 * the epoch's order once per epoch, and gather_rows_device and
 * gather_labels_device gather each batch on the device, the same
 * conversion as here (OpenCL's kernels.cl does the same, and is what runs
 * in the tests without a GPU).
 *
 * Uploads of parameters convert on the host into the pinned buffer; the
 * downloads copy into it, wait, and convert on the host. */
#include <math.h>
#include <string.h>

#include "backend/cuda/cuda_kernels.cuh"

template <typename real>
__global__ void widen_kernel(const float *src, real *dst, int64_t rows, int64_t cols,
                             int64_t dst_stride)
{
    int64_t c = (int64_t)blockIdx.x * 32 + threadIdx.x;
    if (c >= cols)
        return;
    for (int64_t r = (int64_t)blockIdx.y * AX_CUDA_TILE_ROWS + threadIdx.y; r < rows;
         r += (int64_t)gridDim.y * AX_CUDA_TILE_ROWS)
        dst[r * dst_stride + c] = (real)src[r * cols + c];
}

extern "C" void ax_cuda_gather_rows(ax_backend *backend, void *dst, const float *src,
                                    int64_t width, const int64_t *order, int64_t first,
                                    int64_t count)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    cudaSetDevice(cb->device);
    const int64_t stage_floats = (int64_t)(AX_CUDA_STAGE_BYTES / sizeof(float));
    /* Pieces of whole rows, or of one row when a row outgrows the buffer. */
    const int64_t piece_width = width < stage_floats ? width : stage_floats;
    const int64_t piece_rows = stage_floats / piece_width;
    const size_t real_size = backend->real_size;
    for (int64_t r0 = 0; r0 < count; r0 += piece_rows) {
        int64_t rows = count - r0 < piece_rows ? count - r0 : piece_rows;
        for (int64_t c0 = 0; c0 < width; c0 += piece_width) {
            int64_t cols = width - c0 < piece_width ? width - c0 : piece_width;
            int stage = ax_cuda_stage_acquire(cb);
            float *packed = (float *)cb->host_stage[stage];
            for (int64_t r = 0; r < rows; r++) {
                int64_t row = order ? order[first + r0 + r] : first + r0 + r;
                memcpy(packed + r * cols, src + row * width + c0, (size_t)cols * sizeof(float));
            }
            char *target = (char *)dst + ((size_t)r0 * (size_t)width + (size_t)c0) * real_size;
            if (real_size == sizeof(float) && cols == width) {
                /* Whole rows: contiguous on both sides. */
                AX_CUDA_CHECK(cb, cudaMemcpyAsync(target, packed,
                                                  (size_t)(rows * cols) * sizeof(float),
                                                  cudaMemcpyHostToDevice, cb->stream));
            } else if (real_size == sizeof(float)) { /* float32 and bf16 (float32 storage) */
                AX_CUDA_CHECK(cb, cudaMemcpy2DAsync(target, (size_t)width * sizeof(float), packed,
                                                    (size_t)cols * sizeof(float),
                                                    (size_t)cols * sizeof(float), (size_t)rows,
                                                    cudaMemcpyHostToDevice, cb->stream));
            } else {
                float *staged = (float *)cb->device_stage[stage];
                AX_CUDA_CHECK(cb, cudaMemcpyAsync(staged, packed,
                                                  (size_t)(rows * cols) * sizeof(float),
                                                  cudaMemcpyHostToDevice, cb->stream));
                widen_kernel<double><<<ax_cuda_tile_grid(rows, cols), dim3(32, AX_CUDA_TILE_ROWS),
                                       0, cb->stream>>>(staged, (double *)target, rows, cols,
                                                        width);
                AX_CUDA_LAUNCHED(cb, "gather_rows (widen)");
            }
            ax_cuda_stage_release(cb, stage);
        }
    }
}

extern "C" void ax_cuda_gather_labels(ax_backend *backend, int32_t *dst, const int32_t *labels,
                                      const int64_t *order, int64_t first, int64_t count)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    cudaSetDevice(cb->device);
    const int64_t chunk = (int64_t)(AX_CUDA_STAGE_BYTES / sizeof(int32_t));
    for (int64_t r0 = 0; r0 < count; r0 += chunk) {
        int64_t n = count - r0 < chunk ? count - r0 : chunk;
        int stage = ax_cuda_stage_acquire(cb);
        int32_t *packed = (int32_t *)cb->host_stage[stage];
        for (int64_t r = 0; r < n; r++)
            packed[r] = labels[order ? order[first + r0 + r] : first + r0 + r];
        AX_CUDA_CHECK(cb, cudaMemcpyAsync(dst + r0, packed, (size_t)n * sizeof(int32_t),
                                          cudaMemcpyHostToDevice, cb->stream));
        ax_cuda_stage_release(cb, stage);
    }
}

/* ------------------------------------------- data sets on the device */

extern "C" void ax_cuda_write_bytes(ax_backend *backend, void *dst, const void *src, size_t bytes)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    cudaSetDevice(cb->device);
    for (size_t i0 = 0; i0 < bytes; i0 += AX_CUDA_STAGE_BYTES) {
        const size_t n = bytes - i0 < AX_CUDA_STAGE_BYTES ? bytes - i0 : AX_CUDA_STAGE_BYTES;
        int stage = ax_cuda_stage_acquire(cb);
        memcpy(cb->host_stage[stage], (const char *)src + i0, n);
        AX_CUDA_CHECK(cb, cudaMemcpyAsync((char *)dst + i0, cb->host_stage[stage], n,
                                          cudaMemcpyHostToDevice, cb->stream));
        ax_cuda_stage_release(cb, stage);
    }
}

static __device__ __forceinline__ int64_t order_at(const void *order, int order_bytes, int64_t i)
{
    return order_bytes == 4 ? (int64_t)((const int32_t *)order)[i] : ((const int64_t *)order)[i];
}

/* One block row of threads per batch row (blockIdx.y, strided), 32 columns
 * a block: rows outside [block_first, block_first + block_rows) are left. */
template <typename real>
__global__ void gather_rows_kernel(real *dst, const float *block, int64_t width,
                                   int64_t block_first, int64_t block_rows, const void *order,
                                   int order_bytes, int64_t first, int64_t count)
{
    int64_t c = (int64_t)blockIdx.x * 32 + threadIdx.x;
    if (c >= width)
        return;
    for (int64_t r = (int64_t)blockIdx.y * AX_CUDA_TILE_ROWS + threadIdx.y; r < count;
         r += (int64_t)gridDim.y * AX_CUDA_TILE_ROWS) {
        int64_t row = order ? order_at(order, order_bytes, first + r) : first + r;
        if (row >= block_first && row < block_first + block_rows)
            dst[r * width + c] = (real)block[(row - block_first) * width + c];
    }
}

__global__ void gather_labels_kernel(int32_t *dst, const int32_t *labels, const void *order,
                                     int order_bytes, int64_t first, int64_t count)
{
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < count;
         r += (int64_t)gridDim.x * blockDim.x)
        dst[r] = labels[order ? order_at(order, order_bytes, first + r) : first + r];
}

extern "C" void ax_cuda_gather_rows_device(ax_backend *backend, void *dst, const float *block,
                                           int64_t width, int64_t block_first,
                                           int64_t block_rows, const void *order, int order_bytes,
                                           int64_t first, int64_t count)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    if (count <= 0 || width <= 0 || block_rows <= 0)
        return;
    cudaSetDevice(cb->device);
    AX_CUDA_DISPATCH(backend, gather_rows_kernel<real><<<ax_cuda_tile_grid(count, width),
                                                          dim3(32, AX_CUDA_TILE_ROWS), 0,
                                                          cb->stream>>>(
                                  (real *)dst, block, width, block_first, block_rows, order,
                                  order_bytes, first, count));
    AX_CUDA_LAUNCHED(cb, "gather_rows_device");
}

extern "C" void ax_cuda_gather_labels_device(ax_backend *backend, int32_t *dst,
                                             const int32_t *labels, const void *order,
                                             int order_bytes, int64_t first, int64_t count)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    if (count <= 0)
        return;
    cudaSetDevice(cb->device);
    gather_labels_kernel<<<ax_cuda_elementwise_blocks(count), AX_CUDA_THREADS, 0, cb->stream>>>(
        dst, labels, order, order_bytes, first, count);
    AX_CUDA_LAUNCHED(cb, "gather_labels_device");
}

extern "C" void ax_cuda_upload_f64(ax_backend *backend, void *dst, const double *src,
                                   int64_t count)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    cudaSetDevice(cb->device);
    const size_t real_size = backend->real_size;
    const int64_t chunk = (int64_t)(AX_CUDA_STAGE_BYTES / real_size);
    for (int64_t i0 = 0; i0 < count; i0 += chunk) {
        int64_t n = count - i0 < chunk ? count - i0 : chunk;
        int stage = ax_cuda_stage_acquire(cb);
        if (backend->precision == AX_PRECISION_F64) {
            memcpy(cb->host_stage[stage], src + i0, (size_t)n * sizeof(double));
        } else {
            float *packed = (float *)cb->host_stage[stage];
            for (int64_t i = 0; i < n; i++)
                packed[i] = (float)src[i0 + i];
        }
        AX_CUDA_CHECK(cb, cudaMemcpyAsync((char *)dst + (size_t)i0 * real_size,
                                          cb->host_stage[stage], (size_t)n * real_size,
                                          cudaMemcpyHostToDevice, cb->stream));
        ax_cuda_stage_release(cb, stage);
    }
}

/* Copies count reals from the device through a staging buffer and hands
 * each chunk to convert(chunk, first, n). */
template <typename convert_fn>
static void download(ax_cuda_backend *cb, const void *src, int64_t count, convert_fn convert)
{
    const size_t real_size = cb->base.real_size;
    const int64_t chunk = (int64_t)(AX_CUDA_STAGE_BYTES / real_size);
    for (int64_t i0 = 0; i0 < count; i0 += chunk) {
        int64_t n = count - i0 < chunk ? count - i0 : chunk;
        int stage = ax_cuda_stage_acquire(cb);
        AX_CUDA_CHECK(cb, cudaMemcpyAsync(cb->host_stage[stage],
                                          (const char *)src + (size_t)i0 * real_size,
                                          (size_t)n * real_size, cudaMemcpyDeviceToHost,
                                          cb->stream));
        AX_CUDA_CHECK(cb, cudaStreamSynchronize(cb->stream));
        ax_cuda_stage_release(cb, stage);
        convert(cb->host_stage[stage], i0, n);
    }
}

extern "C" void ax_cuda_download_f64(ax_backend *backend, double *dst, const void *src,
                                     int64_t count)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    cudaSetDevice(cb->device);
    const bool f64 = backend->precision == AX_PRECISION_F64;
    download(cb, src, count, [&](const void *chunk, int64_t i0, int64_t n) {
        for (int64_t i = 0; i < n; i++)
            dst[i0 + i] = cb->error  ? NAN
                          : f64 ? ((const double *)chunk)[i]
                                : (double)((const float *)chunk)[i];
    });
}

extern "C" void ax_cuda_download_f32(ax_backend *backend, float *dst, const void *src,
                                     int64_t count)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    cudaSetDevice(cb->device);
    const bool f64 = backend->precision == AX_PRECISION_F64;
    download(cb, src, count, [&](const void *chunk, int64_t i0, int64_t n) {
        for (int64_t i = 0; i < n; i++)
            dst[i0 + i] = cb->error  ? NAN
                          : f64 ? (float)((const double *)chunk)[i]
                                : ((const float *)chunk)[i];
    });
}
