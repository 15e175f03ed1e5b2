/* stats.cu: the activation statistics (entropy and mutual information of
 * softmax outputs, third-order tensor mean) on a CUDA device (docs/stats.md;
 * the CPU versions are src/stats/entropy.c and tensor_mean.c, whose
 * definitions and precision choices these follow). Entries of the plugin's
 * table (cuda_backend.c), which src/stats/device.c reaches through
 * ax_backend_stats_* in backend.c; inputs and outputs are host memory,
 * arguments already checked there.
 *
 * entropy-mi: one warp per row (x's row and y's row together: two
 * independent chains), rows taken by the warps of a fixed grid in turn.
 * Per row: the maximum (warp max by shuffles), then e = exp(v - max) with
 * s = sum e and s2 = sum e^2 (float within chunks of 32 values per lane,
 * chunk sums added in double, as the CPU's chunks), so sum P^2 = s2 / s^2
 * and MI's double sum factorises into (sum P^2)(sum Q^2). Each block adds
 * its warps' row figures in warp order into one partial per block; a
 * one-block pass adds the partials in a fixed order. No atomics: the same
 * input gives the same bits on every run. Rows holding NaN or Inf are
 * counted (isfinite in the maximum pass) and left out of the sums; the
 * caller then names the place from the host arrays.
 *
 * tensor-mean: A (d*d, d) = K^T fz / n with K the row-wise Khatri-Rao
 * product, K[r, i*d + j] = fx[r,i] fy[r,j]. Per block of rows, a kernel
 * writes K's block (at most GEMM_MAX_ROWS rows and KR_FLOATS floats: 64 MiB)
 * and cuBLAS SGEMM adds
 * K^T fz / n into A (beta = 0 for the first block, 1 after), so no
 * (n, d*d) buffer exists at any n. Full float32 (CUBLAS_DEFAULT_MATH, no
 * TF32), like the CPU's float GEMM.
 *
 * Inputs go over in blocks of rows (at most INPUT_FLOATS floats per array),
 * so device memory does not bound the number of rows. Work buffers, the
 * stream and the cuBLAS handle are kept per device between calls (created
 * on the first, grown when a call needs more, held until the process
 * exits), so repeated calls pay for copies and kernels only. One call at a
 * time (a lock). */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backend/cuda/cuda_kernels.cuh"

extern "C" {
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/pinned_upload.h"
#include "base/error.h"
}

/* Warps per block of the entropy kernel (AX_CUDA_THREADS = 256 threads). */
#define ENTROPY_WARPS (AX_CUDA_THREADS / 32)
/* Most blocks of the entropy kernel: 8192 warps, a full H100 (132 SMs x 64
 * warps = 8448) at one pass; also the size of the partials. */
#define ENTROPY_MAX_BLOCKS 1024
/* Values of a row each lane sums in float before adding into double. */
#define ENTROPY_LANE_CHUNK 32
/* Floats per array per block of rows copied over (64 MiB). */
#define INPUT_FLOATS ((int64_t)1 << 24)
/* Floats of the Khatri-Rao block (64 MiB). */
#define KR_FLOATS ((int64_t)1 << 24)
/* Most rows per GEMM: each GEMM sums its rows in float, and the blocks'
 * results are added in float into the tensor; bounding both keeps the
 * rounding of large n near the CPU's (whose direct kernel adds blocks of
 * 64 rows). 8192 rows: the largest benchmark size, n = 8192, in one GEMM. */
#define GEMM_MAX_ROWS 8192
/* Devices whose buffers are kept. */
#define MAX_DEVICES 64
/* Each of the two pinned staging buffers of the inputs' copies. */
#define STAGE_BYTES ((size_t)8 << 20)

#define FULL_MASK 0xffffffffu

/* ---------------------------------------------------------------- kernels */

/* Per row of x and y (rows, d): sum P^2 and sum Q^2; per block, partials
 * [block] (sum over its rows of P2), [grid + block] (of P2 * Q2) and
 * [2 grid + block] (rows holding NaN/Inf), added to what is there when
 * accumulate (later blocks of rows; the grid is the same for all blocks of
 * a call, so each slot belongs to the same block every time). */
__global__ void __launch_bounds__(AX_CUDA_THREADS)
entropy_rows_kernel(const float *__restrict__ x, const float *__restrict__ y, int64_t rows,
                    int64_t d, double *__restrict__ partials, int accumulate)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t warps = (int64_t)gridDim.x * ENTROPY_WARPS;
    double p2_sum = 0.0, p2q2_sum = 0.0, bad_rows = 0.0; /* lane 0's are the warp's */
    /* r depends on the warp only: every lane of a warp takes the same rows,
     * so the full-mask shuffles below see all 32 lanes. */
    for (int64_t r = (int64_t)blockIdx.x * ENTROPY_WARPS + warp; r < rows; r += warps) {
        const float *xr = x + r * d, *yr = y + r * d;
        float mx = -INFINITY, my = -INFINITY;
        int finite = 1;
        for (int64_t i = lane; i < d; i += 32) {
            const float a = xr[i], b = yr[i];
            finite &= isfinite(a) & isfinite(b);
            mx = fmaxf(mx, a);
            my = fmaxf(my, b);
        }
        for (int offset = 16; offset > 0; offset >>= 1) { /* every lane gets the maximum */
            mx = fmaxf(mx, __shfl_xor_sync(FULL_MASK, mx, offset));
            my = fmaxf(my, __shfl_xor_sync(FULL_MASK, my, offset));
        }
        const bool row_finite = __all_sync(FULL_MASK, finite);
        double sx = 0.0, sx2 = 0.0, sy = 0.0, sy2 = 0.0;
        for (int64_t first = 0; first < d; first += 32 * ENTROPY_LANE_CHUNK) {
            const int64_t last = first + 32 * ENTROPY_LANE_CHUNK < d ? first + 32 * ENTROPY_LANE_CHUNK : d;
            float cx = 0.0f, cx2 = 0.0f, cy = 0.0f, cy2 = 0.0f;
            for (int64_t i = first + lane; i < last; i += 32) {
                const float ex = expf(xr[i] - mx), ey = expf(yr[i] - my);
                cx += ex;
                cx2 = fmaf(ex, ex, cx2);
                cy += ey;
                cy2 = fmaf(ey, ey, cy2);
            }
            sx += cx;
            sx2 += cx2;
            sy += cy;
            sy2 += cy2;
        }
        for (int offset = 16; offset > 0; offset >>= 1) { /* fixed order, into lane 0 */
            sx += __shfl_down_sync(FULL_MASK, sx, offset);
            sx2 += __shfl_down_sync(FULL_MASK, sx2, offset);
            sy += __shfl_down_sync(FULL_MASK, sy, offset);
            sy2 += __shfl_down_sync(FULL_MASK, sy2, offset);
        }
        if (lane == 0) {
            if (row_finite) { /* s >= 1: the maximum contributes exp(0) = 1 */
                const double p2 = sx2 / (sx * sx), q2 = sy2 / (sy * sy);
                p2_sum += p2;
                p2q2_sum += p2 * q2;
            } else {
                bad_rows += 1.0;
            }
        }
    }
    __shared__ double warp_sums[3][ENTROPY_WARPS];
    if (lane == 0) {
        warp_sums[0][warp] = p2_sum;
        warp_sums[1][warp] = p2q2_sum;
        warp_sums[2][warp] = bad_rows;
    }
    __syncthreads();
    if (threadIdx.x < 3) {
        const int s = threadIdx.x;
        double v = 0.0;
        for (int w = 0; w < ENTROPY_WARPS; w++)
            v += warp_sums[s][w];
        double *slot = partials + (int64_t)s * gridDim.x + blockIdx.x;
        *slot = accumulate ? *slot + v : v;
    }
}

/* sums[s] = partials[s * blocks .. (s + 1) * blocks) added in a fixed order;
 * one block of AX_CUDA_THREADS threads. */
__global__ void __launch_bounds__(AX_CUDA_THREADS)
entropy_finish_kernel(const double *__restrict__ partials, int blocks, double *__restrict__ sums)
{
    for (int s = 0; s < 3; s++) {
        double v = 0.0;
        for (int i = threadIdx.x; i < blocks; i += blockDim.x)
            v += partials[(int64_t)s * blocks + i];
        v = ax_block_sum(v); /* ends with __syncthreads: safe to call again */
        if (threadIdx.x == 0)
            sums[s] = v;
    }
}

/* k (rows, d*d) = the row-wise Khatri-Rao product of fx and fy (rows, d):
 * k[r, i*d + j] = fx[r,i] fy[r,j]. Threads along the columns of k (writes
 * coalesced), blockIdx.y and a stride along the rows. d <= 1290, so d*d
 * fits an int. */
__global__ void __launch_bounds__(AX_CUDA_THREADS)
khatri_rao_kernel(const float *__restrict__ fx, const float *__restrict__ fy, int64_t rows, int d,
                  float *__restrict__ k)
{
    const int dd = d * d;
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= dd)
        return;
    const int i = c / d, j = c - i * d;
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y)
        k[r * dd + c] = fx[r * d + i] * fy[r * d + j];
}

/* ------------------------------------------------------ per-device state */

typedef struct stats_context {
    bool ready;
    cudaStream_t stream;
    cublasHandle_t blas;
    cudaEvent_t marks[3]; /* timing: before copies, after copies, after kernels */
    float *input[3];        /* blocks of rows of x, y or fx, fy, fz */
    size_t input_floats[3]; /* their capacities */
    float *kr;            /* the Khatri-Rao block */
    size_t kr_floats;
    float *out; /* the tensor */
    size_t out_floats;
    double *partials; /* 3 x ENTROPY_MAX_BLOCKS */
    double *sums;     /* 3 */
    ax_pinned_stage stage; /* the inputs' copies (pinned_upload.c) */
} stats_context;

static stats_context contexts[MAX_DEVICES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Frees what a context holds (calls that fail after a device fault are
 * ignored: the context is given up either way). */
static void context_release(stats_context *c)
{
    if (c->stream)
        cudaStreamSynchronize(c->stream);
    for (int a = 0; a < 3; a++) {
        cudaFree(c->input[a]);
        if (c->marks[a])
            cudaEventDestroy(c->marks[a]);
    }
    cudaFree(c->kr);
    cudaFree(c->out);
    cudaFree(c->partials);
    cudaFree(c->sums);
    ax_pinned_stage_release(&c->stage);
    if (c->blas)
        cublasDestroy(c->blas);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    memset(c, 0, sizeof *c);
    (void)cudaGetLastError();
}

/* The failure of a CUDA call `where`: out of memory is kept as such (the
 * context stays usable); anything else may have broken the context, which
 * is released so that the next call starts afresh. */
static ax_status cuda_failure(stats_context *c, const char *statistic, int device,
                              const char *where, cudaError_t error)
{
    (void)cudaGetLastError();
    if (error == cudaErrorMemoryAllocation)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s on CUDA device %d: out of device memory (%s)",
                       statistic, device, where);
    context_release(c);
    return ax_fail(AX_STATUS_UNSUPPORTED, "%s on CUDA device %d: %s: %s", statistic, device, where,
                   cudaGetErrorString(error));
}

static ax_status cublas_failure(stats_context *c, const char *statistic, int device,
                                const char *where, cublasStatus_t status)
{
    const bool memory = status == CUBLAS_STATUS_ALLOC_FAILED;
    if (!memory)
        context_release(c);
    (void)cudaGetLastError();
    return ax_fail(memory ? AX_STATUS_OUT_OF_MEMORY : AX_STATUS_UNSUPPORTED,
                   "%s on CUDA device %d: %s: %s", statistic, device, where,
                   cublasGetStatusString(status));
}

/* In functions with locals c, statistic and device. */
#define TRY_CUDA(call)                                                         \
    do {                                                                       \
        cudaError_t try_error_ = (call);                                       \
        if (try_error_ != cudaSuccess)                                         \
            return cuda_failure(c, statistic, device, #call, try_error_);      \
    } while (0)
#define TRY_CUBLAS(call)                                                       \
    do {                                                                       \
        cublasStatus_t try_status_ = (call);                                   \
        if (try_status_ != CUBLAS_STATUS_SUCCESS)                              \
            return cublas_failure(c, statistic, device, #call, try_status_);   \
    } while (0)
#define LAUNCHED(name)                                                         \
    do {                                                                       \
        cudaError_t try_error_ = cudaGetLastError();                           \
        if (try_error_ != cudaSuccess)                                         \
            return cuda_failure(c, statistic, device, "launching " name, try_error_); \
    } while (0)

/* AX_STATUS_OUT_OF_MEMORY for a buffer that did not fit. */
static ax_status memory_failure(const char *statistic, int device, const char *what, double bytes)
{
    (void)cudaGetLastError();
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess)
        (void)cudaGetLastError();
    return ax_fail(AX_STATUS_OUT_OF_MEMORY,
                   "%s on CUDA device %d: out of device memory for %s (%.1f MiB; %.1f MiB free "
                   "of %.1f MiB)",
                   statistic, device, what, bytes / 1048576.0, (double)free_bytes / 1048576.0,
                   (double)total_bytes / 1048576.0);
}

/* *buffer holds at least floats floats (contents not kept). */
static cudaError_t reserve(float **buffer, size_t *capacity, size_t floats)
{
    if (*capacity >= floats)
        return cudaSuccess;
    cudaFree(*buffer); /* waits for the device: nothing queued still uses it */
    *buffer = NULL;
    *capacity = 0;
    cudaError_t error = cudaMalloc((void **)buffer, floats * sizeof(float));
    if (error == cudaSuccess)
        *capacity = floats;
    else
        *buffer = NULL;
    return error;
}

/* Stream, cuBLAS handle, events and the reductions' buffers of a context;
 * the device is current. */
static ax_status context_create(stats_context *c, int device, const char *statistic)
{
    TRY_CUDA(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    TRY_CUBLAS(cublasCreate(&c->blas));
    TRY_CUBLAS(cublasSetStream(c->blas, c->stream));
    /* Full float32 products: TF32 (10-bit mantissa) would not keep 1e-3. */
    TRY_CUBLAS(cublasSetMathMode(c->blas, CUBLAS_DEFAULT_MATH));
    for (int m = 0; m < 3; m++)
        TRY_CUDA(cudaEventCreate(&c->marks[m]));
    TRY_CUDA(cudaMalloc((void **)&c->partials, 3 * ENTROPY_MAX_BLOCKS * sizeof(double)));
    TRY_CUDA(cudaMalloc((void **)&c->sums, 3 * sizeof(double)));
    TRY_CUDA(ax_pinned_stage_create(&c->stage, STAGE_BYTES));
    c->ready = true;
    return AX_STATUS_OK;
}

/* The context of device, created on first use; the device is made current. */
static ax_status context_get(int device, const char *statistic, stats_context **out)
{
    *out = NULL;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        count = 0;
    }
    if (count == 0)
        return ax_fail(AX_STATUS_UNSUPPORTED, "%s: no CUDA device %d: this machine has no CUDA "
                       "device (or no driver)", statistic, device);
    if (device < 0 || device >= count)
        return ax_fail(AX_STATUS_UNSUPPORTED, "%s: no CUDA device %d: this machine has %d (0 to %d)",
                       statistic, device, count, count - 1);
    if (device >= MAX_DEVICES)
        return ax_fail(AX_STATUS_UNSUPPORTED, "%s: CUDA device %d: at most %d devices are supported",
                       statistic, device, MAX_DEVICES);
    stats_context *c = &contexts[device];
    TRY_CUDA(cudaSetDevice(device));
    if (!c->ready) {
        ax_status status = context_create(c, device, statistic);
        if (status != AX_STATUS_OK) {
            context_release(c); /* what was made before the failure */
            return status;
        }
    }
    *out = c;
    return AX_STATUS_OK;
}

/* Adds the time between marks[from] and marks[to] to *seconds (waits for
 * marks[to]). */
static cudaError_t add_elapsed(stats_context *c, int from, int to, double *seconds)
{
    cudaError_t error = cudaEventSynchronize(c->marks[to]);
    float ms = 0.0f;
    if (error == cudaSuccess)
        error = cudaEventElapsedTime(&ms, c->marks[from], c->marks[to]);
    *seconds += 1e-3 * (double)ms;
    return error;
}

/* ------------------------------------------------------------ entropy-mi */

static ax_status entropy_mi(int device, const float *x, const float *y, int64_t rows, int64_t d,
                            double sums[3], ax_stats_timing *timing)
{
    const char *statistic = "entropy-mi";
    stats_context *c = NULL;
    AX_TRY(context_get(device, statistic, &c));
    int64_t block_rows = INPUT_FLOATS / d;
    block_rows = block_rows < 1 ? 1 : block_rows > rows ? rows : block_rows;
    const size_t floats = (size_t)(block_rows * d);
    for (int a = 0; a < 2; a++)
        if (reserve(&c->input[a], &c->input_floats[a], floats) != cudaSuccess)
            return memory_failure(statistic, device, "a block of rows of x and y",
                                  2.0 * (double)floats * sizeof(float));
    int64_t blocks = (block_rows + ENTROPY_WARPS - 1) / ENTROPY_WARPS;
    const int grid = (int)(blocks < ENTROPY_MAX_BLOCKS ? blocks : ENTROPY_MAX_BLOCKS);
    double upload = 0.0, compute = 0.0, download = 0.0;
    for (int64_t first = 0; first < rows; first += block_rows) {
        const int64_t count = rows - first < block_rows ? rows - first : block_rows;
        const size_t bytes = (size_t)(count * d) * sizeof(float);
        TRY_CUDA(cudaEventRecord(c->marks[0], c->stream));
        TRY_CUDA(ax_pinned_upload(&c->stage, c->input[0], x + first * d, bytes, c->stream));
        TRY_CUDA(ax_pinned_upload(&c->stage, c->input[1], y + first * d, bytes, c->stream));
        TRY_CUDA(cudaEventRecord(c->marks[1], c->stream));
        entropy_rows_kernel<<<grid, AX_CUDA_THREADS, 0, c->stream>>>(c->input[0], c->input[1], count,
                                                                     d, c->partials, first > 0);
        LAUNCHED("entropy_rows_kernel");
        if (first + count >= rows) {
            entropy_finish_kernel<<<1, AX_CUDA_THREADS, 0, c->stream>>>(c->partials, grid, c->sums);
            LAUNCHED("entropy_finish_kernel");
        }
        TRY_CUDA(cudaEventRecord(c->marks[2], c->stream));
        /* The marks are recorded again for the next block: read them now. */
        TRY_CUDA(add_elapsed(c, 0, 1, &upload));
        TRY_CUDA(add_elapsed(c, 1, 2, &compute));
    }
    TRY_CUDA(cudaEventRecord(c->marks[0], c->stream));
    TRY_CUDA(cudaMemcpyAsync(sums, c->sums, 3 * sizeof(double), cudaMemcpyDeviceToHost, c->stream));
    TRY_CUDA(cudaEventRecord(c->marks[1], c->stream));
    TRY_CUDA(cudaStreamSynchronize(c->stream));
    TRY_CUDA(add_elapsed(c, 0, 1, &download));
    if (timing) {
        const ax_stats_timing spent = {upload, compute, download};
        *timing = spent;
    }
    return AX_STATUS_OK;
}

/* ----------------------------------------------------------- tensor-mean */

static ax_status tensor_mean(int device, const float *fx, const float *fy, const float *fz,
                             int64_t n, int64_t d, float *out, ax_stats_timing *timing)
{
    const char *statistic = "tensor-mean";
    stats_context *c = NULL;
    AX_TRY(context_get(device, statistic, &c));
    const int64_t dd = d * d, d3 = dd * d;
    /* Rows per block: the Khatri-Rao block's, which also bounds the inputs'. */
    int64_t block_rows = KR_FLOATS / dd;
    block_rows = block_rows < 1 ? 1 : block_rows > GEMM_MAX_ROWS ? GEMM_MAX_ROWS : block_rows;
    block_rows = block_rows > n ? n : block_rows;
    const size_t floats = (size_t)(block_rows * d);
    for (int a = 0; a < 3; a++)
        if (reserve(&c->input[a], &c->input_floats[a], floats) != cudaSuccess)
            return memory_failure(statistic, device, "a block of rows of fx, fy and fz",
                                  3.0 * (double)floats * sizeof(float));
    if (reserve(&c->kr, &c->kr_floats, (size_t)(block_rows * dd)) != cudaSuccess)
        return memory_failure(statistic, device, "the Khatri-Rao block",
                              (double)(block_rows * dd) * sizeof(float));
    if (reserve(&c->out, &c->out_floats, (size_t)d3) != cudaSuccess)
        return memory_failure(statistic, device, "the d^3 tensor", (double)d3 * sizeof(float));

    const float scale = (float)(1.0 / (double)n), zero = 0.0f, one = 1.0f;
    const float *host[3] = {fx, fy, fz};
    double upload = 0.0, compute = 0.0, download = 0.0;
    const int64_t grid_y = block_rows < 65535 ? block_rows : 65535;
    const dim3 kr_grid((unsigned)((dd + AX_CUDA_THREADS - 1) / AX_CUDA_THREADS), (unsigned)grid_y, 1);
    for (int64_t first = 0; first < n; first += block_rows) {
        const int64_t count = n - first < block_rows ? n - first : block_rows;
        const size_t bytes = (size_t)(count * d) * sizeof(float);
        TRY_CUDA(cudaEventRecord(c->marks[0], c->stream));
        for (int a = 0; a < 3; a++)
            TRY_CUDA(ax_pinned_upload(&c->stage, c->input[a], host[a] + first * d, bytes, c->stream));
        TRY_CUDA(cudaEventRecord(c->marks[1], c->stream));
        khatri_rao_kernel<<<kr_grid, AX_CUDA_THREADS, 0, c->stream>>>(c->input[0], c->input[1],
                                                                      count, (int)d, c->kr);
        LAUNCHED("khatri_rao_kernel");
        /* Row-major out (d*d, d) (+)= scale K^T (d*d, count) fz (count, d) is
         * column-major out^T (d, d*d) = fz^T (d, count) K (count, d*d): fz
         * read as column-major (d, count) untransposed, K as column-major
         * (d*d, count) transposed. */
        TRY_CUBLAS(cublasSgemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_T, (int)d, (int)dd, (int)count,
                               &scale, c->input[2], (int)d, c->kr, (int)dd,
                               first == 0 ? &zero : &one, c->out, (int)d));
        TRY_CUDA(cudaEventRecord(c->marks[2], c->stream));
        TRY_CUDA(add_elapsed(c, 0, 1, &upload));
        TRY_CUDA(add_elapsed(c, 1, 2, &compute));
    }
    TRY_CUDA(cudaEventRecord(c->marks[0], c->stream));
    TRY_CUDA(cudaMemcpyAsync(out, c->out, (size_t)d3 * sizeof(float), cudaMemcpyDeviceToHost,
                             c->stream));
    TRY_CUDA(cudaEventRecord(c->marks[1], c->stream));
    TRY_CUDA(cudaStreamSynchronize(c->stream));
    TRY_CUDA(add_elapsed(c, 0, 1, &download));
    if (timing) {
        const ax_stats_timing spent = {upload, compute, download};
        *timing = spent;
    }
    return AX_STATUS_OK;
}

/* ------------------------------------------------------------ entry points */

extern "C" ax_status ax_cuda_stats_entropy_mi(int device, const float *x, const float *y,
                                              int64_t rows, int64_t d, double sums[3],
                                              ax_stats_timing *timing)
{
    pthread_mutex_lock(&lock);
    ax_status status = entropy_mi(device, x, y, rows, d, sums, timing);
    pthread_mutex_unlock(&lock);
    return status;
}

extern "C" ax_status ax_cuda_stats_tensor_mean(int device, const float *fx, const float *fy,
                                               const float *fz, int64_t n, int64_t d, float *out,
                                               ax_stats_timing *timing)
{
    pthread_mutex_lock(&lock);
    ax_status status = tensor_mean(device, fx, fy, fz, n, d, out, timing);
    pthread_mutex_unlock(&lock);
    return status;
}
