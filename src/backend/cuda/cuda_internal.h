/* cuda_internal.h: what the CUDA backend's C file (the table, memory,
 * streams, transfers) shares with its kernel files (*.cu, one per group of
 * operations): the backend object and the kernels' host-side entry points.
 * Included from C and from CUDA C++, so plain C declarations only.
 *
 * Every operation runs on `stream`, in order; the host waits only where an
 * operation returns a value to it (a loss, a dot product, argmax indices, a
 * download). Streams and graphs: all launches go through `stream`, so a
 * later multi-stream trainer can give each in-flight mini-batch its own
 * backend view (same device, cuBLAS handle bound to the view's stream) and
 * CUDA-graph capture can wrap a forward/backward pass unchanged, provided
 * no operation inside it reads a result back (see docs/cuda.md). */
#ifndef AX_BACKEND_CUDA_INTERNAL_H
#define AX_BACKEND_CUDA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "backend/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Threads per block of the elementwise kernels and most reductions. */
#define AX_CUDA_THREADS 256
/* Blocks of a reduction's first pass; the second pass sums their partial
 * results in a fixed order, so a reduction gives the same bits every run. */
#define AX_CUDA_REDUCE_BLOCKS 512
/* Rows per block of the column-sum kernels (see activation_backward.cu). */
#define AX_CUDA_COLUMN_CHUNK_ROWS 128
/* Reals of column-sum partials kept on the device (8 MiB of doubles). */
#define AX_CUDA_COLUMN_PARTIALS (1 << 20)
/* Doubles of the reductions' result slots (cb->result): five, then one
 * per reduction of a batch (reduce). */
#define AX_CUDA_BATCH_SLOT 5
#define AX_CUDA_RESULTS (AX_CUDA_BATCH_SLOT + AX_BACKEND_REDUCE_MAX)
/* Bytes of each of the two host<->device staging buffers. */
#define AX_CUDA_STAGE_BYTES ((size_t)8 << 20)

typedef struct ax_cuda_backend {
    ax_backend base; /* first: the table's functions get &base */
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;

    /* Reductions: per-block partial sums, the final values, and a pinned
     * host copy they are read back into. */
    double *partials;        /* device (AX_CUDA_REDUCE_BLOCKS) */
    double *result;          /* device (AX_CUDA_RESULTS): [0] reductions read back;
                                losses kept on the device: [1] the last deferred
                                sum, [2] the running total, [3] the first bad step
                                or -1, [4] its loss; [5..] reduce's batch */
    double *host_result;     /* pinned (AX_CUDA_RESULTS) */
    double *column_partials; /* device (AX_CUDA_COLUMN_PARTIALS) */

    /* Transfers go through two pinned host buffers in turn, each with a
     * device twin; an event recorded after a buffer's copy tells when the
     * host may fill it again, so gathering the next chunk overlaps the
     * copy of the last. */
    void *host_stage[2];   /* pinned (AX_CUDA_STAGE_BYTES) */
    void *device_stage[2]; /* device (AX_CUDA_STAGE_BYTES) */
    cudaEvent_t stage_free[2];
    int next_stage;

    /* The first CUDA or cuBLAS failure, kept: the table's operations return
     * no status, so a failure turns every later reduction into NaN (and
     * all_finite into false), and the table's `status` reports it (the
     * call, the error's name, code and description), which the trainer
     * asks before it calls a NaN divergence. */
    int error;
    char error_text[256];

    /* While set, the losses leave their sum in result[1] (losses.cu). */
    bool defer_losses;
} ax_cuda_backend;

static inline ax_cuda_backend *ax_cuda(ax_backend *backend) { return (ax_cuda_backend *)backend; }

/* Records the first failure (cudaError_t or cublasStatus_t) at `where` (a
 * call's source text, of which the function's name is kept, or a kernel's
 * name); returns true when code is a failure. */
bool ax_cuda_check(ax_cuda_backend *cb, int code, bool is_cublas, const char *where);
#define AX_CUDA_CHECK(cb, call) ax_cuda_check((cb), (int)(call), false, #call)
#define AX_CUBLAS_CHECK(cb, call) ax_cuda_check((cb), (int)(call), true, #call)
/* Checks the last kernel launch. */
#define AX_CUDA_LAUNCHED(cb, name) \
    ax_cuda_check((cb), (int)cudaGetLastError(), false, "kernel " name)

/* Takes the next staging buffer pair, waiting until its last copy is done. */
int ax_cuda_stage_acquire(ax_cuda_backend *cb);
/* Marks staging buffer `index` busy until the work queued so far is done. */
void ax_cuda_stage_release(ax_cuda_backend *cb, int index);

/* Sums cb->partials[0 .. blocks) on the device in a fixed order into
 * cb->result[slot]; with read_back, waits and returns the value (NaN after
 * a failure), else returns 0. (vector_ops.cu) */
double ax_cuda_finish_sum(ax_cuda_backend *cb, int blocks, int slot, bool read_back);
/* Blocks for a reduction over count elements. */
int ax_cuda_reduce_blocks(int64_t count);

/* The table's operations implemented by the kernel files; each dispatches
 * on the backend's precision. */
void ax_cuda_bias_activation(ax_backend *backend, ax_activation activation, void *z,
                             const void *bias, int64_t rows, int64_t cols);
void ax_cuda_activation_backward(ax_backend *backend, ax_activation activation, void *delta,
                                 const void *a, double a_scale, void *bias_gradient, int64_t rows,
                                 int64_t cols);
void ax_cuda_column_sums(ax_backend *backend, const void *delta, void *bias_gradient, int64_t rows,
                         int64_t cols);
double ax_cuda_cross_entropy(ax_backend *backend, const void *outputs, const int32_t *labels,
                             void *delta, double scale, int64_t rows, int64_t cols);
double ax_cuda_binary_cross_entropy(ax_backend *backend, const void *outputs,
                                    const int32_t *labels, const void *targets, void *delta,
                                    double scale, int64_t rows, int64_t cols);
double ax_cuda_squared_error(ax_backend *backend, const void *outputs, const int32_t *labels,
                             const void *targets, void *delta, double scale, int64_t rows,
                             int64_t cols);
void ax_cuda_dropout(ax_backend *backend, void *a, double rate, uint64_t key, int64_t row_offset,
                     int64_t rows, int64_t cols);
void ax_cuda_axpy(ax_backend *backend, int64_t count, double alpha, const void *x, void *y);
double ax_cuda_dot(ax_backend *backend, int64_t count, const void *x, const void *y);
void ax_cuda_scale(ax_backend *backend, int64_t count, double alpha, void *x);
bool ax_cuda_all_finite(ax_backend *backend, int64_t count, const void *x);
void ax_cuda_reduce(ax_backend *backend, int n, ax_reduction *reductions);
double ax_cuda_l1_penalty(ax_backend *backend, int64_t count, const void *x, double alpha,
                          void *y);
void ax_cuda_clamp(ax_backend *backend, int64_t count, double limit, void *x);
void ax_cuda_sgd_update(ax_backend *backend, int64_t count, void *params, const void *grads,
                        void *velocity, double learning_rate, double momentum, bool nesterov);
void ax_cuda_adam_update(ax_backend *backend, int64_t count, void *params, const void *grads,
                         void *first_moment, void *second_moment, double learning_rate,
                         double beta1, double beta2, double epsilon, int64_t step);
void ax_cuda_argmax_rows(ax_backend *backend, const void *outputs, int32_t *host_indices,
                         int64_t rows, int64_t cols);

/* The optional image operations (backend.h), one file each: im2col.cu,
 * col2im.cu, pool_forward.cu, pool_backward.cu, transpose.cu. */
void ax_cuda_im2col(ax_backend *backend, const ax_window_geometry *geometry, const void *x,
                    void *columns, int64_t images);
void ax_cuda_col2im(ax_backend *backend, const ax_window_geometry *geometry, const void *columns,
                    void *x, int64_t images);
void ax_cuda_pool_forward(ax_backend *backend, bool max, const ax_window_geometry *geometry,
                          const void *x, void *y, int64_t images);
void ax_cuda_pool_backward(ax_backend *backend, bool max, const ax_window_geometry *geometry,
                           const void *x, const void *dy, void *dx, int64_t images);
void ax_cuda_transpose(ax_backend *backend, const void *src, void *dst, int64_t batches,
                       int64_t rows, int64_t cols);

/* gather.cu: transfers and conversions through the staging buffers. */
void ax_cuda_gather_rows(ax_backend *backend, void *dst, const float *src, int64_t width,
                         const int64_t *order, int64_t first, int64_t count);
void ax_cuda_gather_labels(ax_backend *backend, int32_t *dst, const int32_t *labels,
                           const int64_t *order, int64_t first, int64_t count);
void ax_cuda_upload_f64(ax_backend *backend, void *dst, const double *src, int64_t count);
/* Losses kept on the device (backend.h, version 4; losses.cu). */
bool ax_cuda_loss_defer(ax_backend *backend, bool on);
void ax_cuda_loss_accumulate(ax_backend *backend, double scale, double weight, int64_t step);
void ax_cuda_loss_reset(ax_backend *backend, double start);
void ax_cuda_loss_read(ax_backend *backend, double *total, int64_t *first_bad,
                       double *bad_value);
/* Data sets on the device (backend.h, version 4), also gather.cu. */
void ax_cuda_write_bytes(ax_backend *backend, void *dst, const void *src, size_t bytes);
void ax_cuda_gather_rows_device(ax_backend *backend, void *dst, const float *block, int64_t width,
                                int64_t block_first, int64_t block_rows, const void *order,
                                int order_bytes, int64_t first, int64_t count);
void ax_cuda_gather_labels_device(ax_backend *backend, int32_t *dst, const int32_t *labels,
                                  const void *order, int order_bytes, int64_t first,
                                  int64_t count);
void ax_cuda_download_f64(ax_backend *backend, double *dst, const void *src, int64_t count);
void ax_cuda_download_f32(ax_backend *backend, float *dst, const void *src, int64_t count);

#ifdef __cplusplus
}
#endif

#endif
