/* backend.h: the private table of operations every backend provides.
 *
 * Network, loss and optimizer code calls only these; a CPU backend (BLAS +
 * OpenMP) and a CUDA backend (cuBLAS + kernels) each fill the table. All
 * buffers are backend memory ("device" pointers; on the CPU plain memory)
 * holding `real` values of the backend's precision (float or double);
 * matrices are row-major. Shapes in comments: (rows, cols).
 */
#ifndef AX_BACKEND_H
#define AX_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "axon.h"

typedef struct ax_backend ax_backend;

/* A window (a convolution's kernel, a pooling window) sliding over images
 * of (height, width, channels), each image's values in (row, column,
 * channel) order, `padding` zeros around it, by `stride` along rows and
 * columns; out_height x out_width positions,
 * out = (in + 2 padding - kernel) / stride + 1. */
typedef struct ax_window_geometry {
    int64_t height, width, channels;
    int64_t kernel_height, kernel_width;
    int64_t stride, padding;
    int64_t out_height, out_width;
} ax_window_geometry;

/* The table grows at its tail, in SQLite's way (sqlite3_io_methods): each
 * version's entries follow the last version's, under a line saying "valid
 * for version N", and nothing above such a line ever moves or changes
 * meaning. A plugin says which version of the headers it was built with
 * and the size of its table (plugin.h: abi, ops_size); the loader gives a
 * backend from an older plugin a copy of its table with the later entries
 * NULL (backend.c), so callers test an optional entry for NULL, or ask
 * ax_backend_supports, and never read past what the plugin had. A plugin
 * of a newer version is used through the entries this version knows.
 *
 * AX_BACKEND_TABLE_VERSION is the version of these headers. A test plugin
 * (tests/plugin_fake_v4.c) defines AX_BACKEND_HEADERS_AS_OF to an older
 * version before including them, to be compiled as a plugin of that
 * version would have been; nothing else does. */
#define AX_BACKEND_TABLE_VERSION 15
#ifndef AX_BACKEND_HEADERS_AS_OF
#define AX_BACKEND_HEADERS_AS_OF AX_BACKEND_TABLE_VERSION
#endif

/* One reduction of a batch read back together (reduce, version 9). */
typedef enum ax_reduction_kind {
    AX_REDUCTION_DOT,      /* value = dot(count, x, y), the bits dot gives */
    AX_REDUCTION_NONFINITE /* value = 0 exactly when all_finite(count, x); y unused */
} ax_reduction_kind;

typedef struct ax_reduction {
    ax_reduction_kind kind;
    int64_t count;
    const void *x, *y;
    double value; /* written by reduce */
} ax_reduction;

/* The most reductions one reduce call takes (ax_backend_reduce splits more). */
#define AX_BACKEND_REDUCE_MAX 8

typedef struct ax_backend_ops {
    const char *name;

    /* Memory. alloc returns zeroed, 64-byte aligned memory or NULL. The
     * library calls ax_backend_alloc (alloc_status, version 6), which
     * falls back on alloc for older plugins only. */
    void *(*alloc)(ax_backend *backend, size_t bytes);
    void (*free)(ax_backend *backend, void *memory);
    /* Copies count reals between host doubles and backend memory. */
    void (*upload_f64)(ax_backend *backend, void *dst, const double *src, int64_t count);
    void (*download_f64)(ax_backend *backend, double *dst, const void *src, int64_t count);
    /* Copies count reals to host floats (for outputs). */
    void (*download_f32)(ax_backend *backend, float *dst, const void *src, int64_t count);
    void (*copy)(ax_backend *backend, void *dst, const void *src, int64_t count);

    /* dst (count, width) = rows order[first .. first+count) of a host float
     * matrix src (rows, width) (rows first.. when order is NULL), converted
     * to the backend's precision. */
    void (*gather_rows)(ax_backend *backend, void *dst, const float *src, int64_t width,
                        const int64_t *order, int64_t first, int64_t count);
    /* dst (count) int32 backend memory = host labels[order[first + r]]. */
    void (*gather_labels)(ax_backend *backend, int32_t *dst, const int32_t *labels,
                          const int64_t *order, int64_t first, int64_t count);

    /* C (m, n) = alpha op(A) op(B) + beta C, op = transpose when trans_*. */
    void (*gemm)(ax_backend *backend, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 double alpha, const void *a, int64_t lda, const void *b, int64_t ldb, double beta,
                 void *c, int64_t ldc);

    /* z (rows, cols) = act(z + bias (cols)), in place; softmax is row-wise. */
    void (*bias_activation)(ax_backend *backend, ax_activation activation, void *z,
                            const void *bias, int64_t rows, int64_t cols);
    /* In one pass: delta (rows, cols) *= act'(y), y = a * a_scale, where a
     * holds the layer's outputs (a_scale undoes dropout's 1/(1-rate) on the
     * units kept; dropped ones have delta 0 already); bias_gradient (cols) =
     * column sums of the resulting delta. */
    void (*activation_backward)(ax_backend *backend, ax_activation activation, void *delta,
                                const void *a, double a_scale, void *bias_gradient, int64_t rows,
                                int64_t cols);
    /* bias_gradient (cols) = column sums of delta (rows, cols). */
    void (*column_sums)(ax_backend *backend, const void *delta, void *bias_gradient,
                        int64_t rows, int64_t cols);

    /* Output layer losses. outputs (rows, cols) hold the activated outputs.
     * Each returns the summed (not averaged) loss in float64 and writes
     * delta = d(loss * scale)/d(pre-activation) for the matching activation
     * (softmax + cross-entropy, sigmoid + binary cross-entropy) or
     * d(loss * scale)/d(output) for MSE, when delta is non-NULL. */
    double (*cross_entropy)(ax_backend *backend, const void *outputs, const int32_t *labels,
                            void *delta, double scale, int64_t rows, int64_t cols);
    /* targets (rows, cols) in backend memory, or when labels is non-NULL the
     * one-hot rows of labels (rows) in backend memory. */
    double (*binary_cross_entropy)(ax_backend *backend, const void *outputs, const int32_t *labels,
                                   const void *targets, void *delta, double scale, int64_t rows,
                                   int64_t cols);
    double (*squared_error)(ax_backend *backend, const void *outputs, const int32_t *labels,
                            const void *targets, void *delta, double scale, int64_t rows,
                            int64_t cols);

    /* Inverted dropout on a (rows, cols): each element is kept with
     * probability 1 - rate and scaled by 1 / (1 - rate); the mask is a pure
     * function of (key, row_offset + row, col). backward applies the same
     * mask to delta. */
    void (*dropout)(ax_backend *backend, void *a, double rate, uint64_t key, int64_t row_offset,
                    int64_t rows, int64_t cols);

    /* Vector operations on flat parameter-shaped arrays of count reals. */
    void (*axpy)(ax_backend *backend, int64_t count, double alpha, const void *x, void *y);
    double (*dot)(ax_backend *backend, int64_t count, const void *x, const void *y);
    void (*scale)(ax_backend *backend, int64_t count, double alpha, void *x);
    /* False when any of count values is NaN or infinite. */
    bool (*all_finite)(ax_backend *backend, int64_t count, const void *x);

    /* Optimizer updates (PyTorch semantics), elementwise over count reals. */
    void (*sgd_update)(ax_backend *backend, int64_t count, void *params, const void *grads,
                       void *velocity, double learning_rate, double momentum, bool nesterov);
    void (*adam_update)(ax_backend *backend, int64_t count, void *params, const void *grads,
                        void *first_moment, void *second_moment, double learning_rate,
                        double beta1, double beta2, double epsilon, int64_t step);

    /* For each row of outputs (rows, cols), the index of the largest value. */
    void (*argmax_rows)(ax_backend *backend, const void *outputs, int32_t *host_indices,
                        int64_t rows, int64_t cols);

    /* --- images (optional: NULL where a backend lacks them; the network
     * then refuses convolution or pooling layers on it, naming the layer) --- */
    /* columns (images * out_height * out_width, kernel_height * kernel_width
     * * channels) = each window position's input values, a row per position
     * in (image, out row, out column) order, its values in (kernel row,
     * kernel column, channel) order (runs of channels, as the image holds
     * them), 0 where the window covers padding; x (images, height, width,
     * channels). */
    void (*im2col)(ax_backend *backend, const ax_window_geometry *geometry, const void *x,
                   void *columns, int64_t images);
    /* x (images, height, width, channels) = the sum, for each input value, of
     * the entries of columns (laid out as im2col writes them) that im2col
     * copies it to; overwrites x. */
    void (*col2im)(ax_backend *backend, const ax_window_geometry *geometry, const void *columns,
                   void *x, int64_t images);
    /* y (images, out_height, out_width, channels) = the largest value
     * (max) or the mean of each window of x (images, height, width,
     * channels), channel by channel; padding must be 0. */
    void (*pool_forward)(ax_backend *backend, bool max, const ax_window_geometry *geometry,
                         const void *x, void *y, int64_t images);
    /* dx (images, height, width, channels) = d loss / d x for dy (images,
     * out_height, out_width, channels): each window's gradient goes to its
     * first largest value of x (max; PyTorch's choice on ties) or is shared
     * evenly (mean); overwrites dx. */
    void (*pool_backward)(ax_backend *backend, bool max, const ax_window_geometry *geometry,
                          const void *x, const void *dy, void *dx, int64_t images);
    /* dst (batches, cols, rows) = each of the batches (rows, cols) matrices of
     * src transposed (a convolution's weights between torch's (filters,
     * channels, kh kw) and the columns' (filters, kh kw, channels)). */
    void (*transpose)(ax_backend *backend, const void *src, void *dst, int64_t batches,
                      int64_t rows, int64_t cols);

    /* Waits until queued work is done (timing and host reads). Called
     * through ax_backend_synchronize, as alloc through ax_backend_alloc. */
    void (*synchronize)(ax_backend *backend);
    /* AX_STATUS_OK while every operation so far has succeeded. Operations
     * return no status, so a backend keeps its first failure (a failed
     * launch, copy or library call) and from then on answers it here:
     * AX_STATUS_DEVICE (or another ax_status), with ax_error_message() set
     * to name the operation and the runtime's error and code. Sticky: the
     * failing operation's results and every later one are void (a device
     * backend returns NaN from reductions after a failure, so callers that
     * find a non-finite value ask here before calling it divergence). */
    ax_status (*status)(ax_backend *backend);
    void (*destroy)(ax_backend *backend);
    /* ---- entries above are valid for version 3 and later ---- */
    /* (version 4 added nothing here: the plugin table's init, plugin.h) */
#if AX_BACKEND_HEADERS_AS_OF >= 5
    /* --- data sets on the device (optional, AX_BACKEND_FEATURE_DEVICE_DATA;
     * without them batches are gathered from host memory by gather_rows and
     * gather_labels; core/device_data.c uses them) --- */
    /* Copies `bytes` bytes from host memory into backend memory at dst as
     * they are (float32 rows, int32 labels, a row order); src may be reused
     * as soon as it returns. */
    void (*write_bytes)(ax_backend *backend, void *dst, const void *src, size_t bytes);
    /* For each r < count, row = order[first + r] (first + r when order is
     * NULL): when block_first <= row < block_first + block_rows, dst row r
     * (dst is (count, width) in the backend's precision) = row
     * (row - block_first) of block, a float32 (block_rows, width) matrix in
     * backend memory, converted; other rows of dst are left as they are (a
     * data set held in several blocks is gathered one block at a time).
     * order: backend memory, int32 (order_bytes 4) or int64 (8). */
    void (*gather_rows_device)(ax_backend *backend, void *dst, const float *block, int64_t width,
                               int64_t block_first, int64_t block_rows, const void *order,
                               int order_bytes, int64_t first, int64_t count);
    /* dst (count) int32 = labels[order[first + r]] (labels[first + r]
     * without an order); labels, order and dst in backend memory. */
    void (*gather_labels_device)(ax_backend *backend, int32_t *dst, const int32_t *labels,
                                 const void *order, int order_bytes, int64_t first, int64_t count);
    /* --- losses kept on the device (optional, AX_BACKEND_FEATURE_DEVICE_LOSS;
     * without them the trainer reads each step's loss; train.c uses them) --- */
    /* Turns deferral on or off and says whether it is on (a backend may
     * decline: an OpenCL device without float64). While on, cross_entropy,
     * binary_cross_entropy and squared_error return 0 at once, without
     * waiting for the device, and keep their sum there for loss_accumulate. */
    bool (*loss_defer)(ax_backend *backend, bool on);
    /* With s the last deferred sum, in float64 on the device: v = s * scale;
     * total += v * weight; and when v is NaN or infinite and no step is
     * recorded since loss_reset, records `step` and v. (The host's own
     * arithmetic, loss_sum += (s * scale) * weight: the same bits.) */
    void (*loss_accumulate)(ax_backend *backend, double scale, double weight, int64_t step);
    /* total = start; no step recorded. */
    void (*loss_reset)(ax_backend *backend, double start);
    /* Waits for the queued work; *total, *first_bad the recorded step (-1:
     * none) and *bad_value its v (NaN or infinite). */
    void (*loss_read)(ax_backend *backend, double *total, int64_t *first_bad, double *bad_value);
    /* ---- entries above are valid for version 5 and later ---- */
#endif
#if AX_BACKEND_HEADERS_AS_OF >= 6
    /* alloc and synchronize with a status (SQLite's rule: every method
     * returns rc). alloc_status: *memory = zeroed, 64-byte aligned memory
     * of `bytes`, or NULL with AX_STATUS_OUT_OF_MEMORY and a message naming
     * the device and the size. synchronize_status: waits as synchronize
     * does, then answers status. Callers use ax_backend_alloc and
     * ax_backend_synchronize (below), which fall back on alloc and
     * synchronize for plugins of versions 3 to 5. */
    ax_status (*alloc_status)(ax_backend *backend, size_t bytes, void **memory);
    ax_status (*synchronize_status)(ax_backend *backend);
    /* ---- entries above are valid for version 6 and later ---- */
#endif
#if AX_BACKEND_HEADERS_AS_OF >= 7
    /* --- training strategies (optional, AX_BACKEND_FEATURE_STRATEGIES; without
     * them L1 penalties and clip_value are refused) --- */
    /* Returns sum |x| over count reals (float64, summed in an order that does
     * not depend on the thread count) and, when y is not NULL,
     * y += alpha * sign(x) elementwise, sign(0) = 0 (L1's subgradient). */
    double (*l1_penalty)(ax_backend *backend, int64_t count, const void *x, double alpha, void *y);
    /* x = min(max(x, -limit), limit) elementwise (NaN stays NaN). */
    void (*clamp)(ax_backend *backend, int64_t count, double limit, void *x);
    /* ---- entries above are valid for version 7 and later ---- */
#endif
#if AX_BACKEND_HEADERS_AS_OF >= 8
    /* --- whole convolutions (optional, each alone; layer_conv.c runs im2col
     * + gemm and col2im where an entry is NULL or declines). The weights are
     * (filters, channels, kernel_height, kernel_width), torch's order; images
     * as in ax_window_geometry. Each returns false, with nothing written, when
     * it does not take the call (the CPU's oneDNN could not create its
     * primitive); the results must not depend on the thread count. --- */
    /* z (images, out_height, out_width, filters) = x (images, height, width,
     * channels) convolved with weights, no bias. */
    bool (*conv_forward)(ax_backend *backend, const ax_window_geometry *geometry,
                         int64_t filters, const void *x, const void *weights, void *z,
                         int64_t images);
    /* previous (images, height, width, channels) = the gradient of that
     * convolution's input given delta (images, out_height, out_width,
     * filters), the gradient of its output (overwritten, not added to). */
    bool (*conv_backward_input)(ax_backend *backend, const ax_window_geometry *geometry,
                                int64_t filters, const void *delta, const void *weights,
                                void *previous, int64_t images);
    /* ---- entries above are valid for version 8 and later ---- */
#endif
#if AX_BACKEND_HEADERS_AS_OF >= 9
    /* Several reductions, the host waiting once (optional: without it
     * ax_backend_reduce makes one call per reduction). Sets each of the n
     * (1 <= n <= AX_BACKEND_REDUCE_MAX) values to exactly the bits the
     * separate dot or all_finite call would give at this point of the
     * queue (the same kernels, the same order of summation); NaN after a
     * failure. Callers use ax_backend_reduce. */
    void (*reduce)(ax_backend *backend, int n, ax_reduction *reductions);
    /* ---- entries above are valid for version 9 and later ---- */
#endif
#if AX_BACKEND_HEADERS_AS_OF >= 10
    /* The third whole convolution (optional, as conv_forward above: the
     * layer runs im2col + gemm where it is NULL or declines; the results
     * must not depend on the thread count). weight_gradient (filters,
     * channels, kernel_height, kernel_width) = the gradient of the weights
     * given delta (images, out_height, out_width, filters), the gradient of
     * the convolution's output, and its input x (images, height, width,
     * channels): the sum over images and positions of delta^T times x's
     * windows, overwritten (not added to). columns: x's windows as im2col
     * lays them out, where the caller still has them (the forward pass's),
     * to be read instead of gathered again; NULL otherwise. */
    bool (*conv_backward_weights)(ax_backend *backend, const ax_window_geometry *geometry,
                                  int64_t filters, const void *delta, const void *x,
                                  const void *columns, void *weight_gradient, int64_t images);
    /* ---- entries above are valid for version 10 and later ---- */
#endif
#if AX_BACKEND_HEADERS_AS_OF >= 11
    /* Max pooling's input gradient with ReLU's derivative of the layer
     * below applied, in one pass where the two take two (optional: the
     * layers run pool_backward and the derivative where it is NULL). dx =
     * pool_backward(max = true)'s dx, then 0 wherever x (the pooling's
     * input, that layer's ReLU output) is not > 0: the same bits as the
     * two passes. */
    void (*max_pool_backward_relu)(ax_backend *backend, const ax_window_geometry *geometry,
                                   const void *x, const void *dy, void *dx, int64_t images);
    /* ---- entries above are valid for version 11 and later ---- */
#endif
#if AX_BACKEND_HEADERS_AS_OF >= 12
    /* The forward pass with the layer's bias and activation applied, in one
     * pass where the two take two (optional, as conv_forward: the layer runs
     * conv_forward, or im2col + gemm, then bias_activation where it is NULL
     * or declines). z = act(x convolved with weights + bias) with exactly the
     * bits of conv_forward's z followed by bias_activation, so a backend
     * takes only the layers and activations where it can keep them. */
    bool (*conv_forward_bias_activation)(ax_backend *backend, const ax_window_geometry *geometry,
                                         int64_t filters, const void *x, const void *weights,
                                         const void *bias, ax_activation activation, void *z,
                                         int64_t images);
    /* ---- entries above are valid for version 12 and later ---- */
#endif
#if AX_BACKEND_HEADERS_AS_OF >= 13
    /* conv_backward_weights, and bias_gradient (filters) = the sums of delta
     * (images, out_height, out_width, filters) over the batch's positions,
     * in the same pass over delta (optional: where it is NULL or declines,
     * with nothing written, the layer runs column_sums and
     * conv_backward_weights). weight_gradient gets exactly
     * conv_backward_weights' bits; bias_gradient any summation order's
     * (the layers ask only where delta is already pre-activation: the
     * derivative below a max pooling was applied in its pass). */
    bool (*conv_backward_weights_bias)(ax_backend *backend, const ax_window_geometry *geometry,
                                       int64_t filters, const void *delta, const void *x,
                                       const void *columns, void *weight_gradient,
                                       void *bias_gradient, int64_t images);
    /* ---- entries above are valid for version 13 and later ---- */
#endif
#if AX_BACKEND_HEADERS_AS_OF >= 14
    /* conv_backward_weights_bias of a convolution whose output y (images,
     * out_height, out_width, filters; after its ReLU) a max pooling (pool:
     * its geometry, y its input) reads, from the pooling's output gradient
     * dy: the convolution's delta is max_pool_backward_relu's of y and dy,
     * made a slice of the batch at a time where the weight gradient reads
     * it, never written whole (optional: where it is NULL or declines,
     * with nothing written, the layers run max_pool_backward_relu and then
     * conv_backward_weights_bias or its fallback). Both gradients get
     * exactly the bits of that pair of calls. For a network's first layer,
     * whose input gradient nobody needs. */
    bool (*conv_backward_weights_bias_pooled)(ax_backend *backend,
                                              const ax_window_geometry *geometry, int64_t filters,
                                              const ax_window_geometry *pool, const void *y,
                                              const void *dy, const void *x,
                                              void *weight_gradient, void *bias_gradient,
                                              int64_t images);
    /* ---- entries above are valid for version 14 and later ---- */
#endif
#if AX_BACKEND_HEADERS_AS_OF >= 15
    /* conv_forward_bias_activation with ReLU into y, and the 2x2 max
     * pooling of stride 2 over y (pool: its geometry; its windows tile y)
     * in the same pass: pooled gets pool_forward's bits, and codes (one
     * byte per value of pooled) the window position, 0-3 in row order,
     * that max_pool_backward_relu gives that value's gradient to, or 4 for
     * none (a window whose maximum is not above 0, or holds a NaN); y gets
     * conv_forward_bias_activation's bits (optional: where it is NULL or
     * declines, with nothing written, the layers run the two passes). */
    bool (*conv_forward_relu_max_pool)(ax_backend *backend, const ax_window_geometry *geometry,
                                       int64_t filters, const ax_window_geometry *pool,
                                       const void *x, const void *weights, const void *bias,
                                       void *y, void *pooled, uint8_t *codes, int64_t images);
    /* conv_backward_weights_bias_pooled with the codes that
     * conv_forward_relu_max_pool wrote standing in for y (which it then
     * never reads): the same bits (optional, as that entry). */
    bool (*conv_backward_weights_bias_coded)(ax_backend *backend,
                                             const ax_window_geometry *geometry, int64_t filters,
                                             const ax_window_geometry *pool, const uint8_t *codes,
                                             const void *dy, const void *x,
                                             void *weight_gradient, void *bias_gradient,
                                             int64_t images);
    /* ---- entries above are valid for version 15 and later ---- */
#endif
} ax_backend_ops;

/* Groups of optional entries, asked for together. */
typedef enum ax_backend_feature {
    AX_BACKEND_FEATURE_IMAGES,      /* im2col, col2im, pool_forward, pool_backward, transpose (3) */
    AX_BACKEND_FEATURE_DEVICE_DATA, /* write_bytes, gather_rows_device, gather_labels_device (4) */
    AX_BACKEND_FEATURE_DEVICE_LOSS, /* loss_defer, loss_accumulate, loss_reset, loss_read (4) */
    AX_BACKEND_FEATURE_STRATEGIES,  /* l1_penalty, clamp (6) */
    AX_BACKEND_FEATURE_COUNT
} ax_backend_feature;

/* Whether ops has every entry of feature (ggml's supports_op, for a table
 * that grows); when it lacks some and missing is not NULL, missing gets
 * their names ("write_bytes and gather_labels_device"). */
bool ax_backend_supports(const ax_backend_ops *ops, ax_backend_feature feature, char *missing,
                         size_t capacity);
/* AX_STATUS_UNSUPPORTED when ops lacks an entry of feature, with a message
 * naming the entries, the table and `purpose` ("data sets on the device");
 * AX_STATUS_OK otherwise. */
ax_status ax_backend_require(const ax_backend_ops *ops, ax_backend_feature feature,
                             const char *purpose);

struct ax_backend {
    const ax_backend_ops *ops;
    ax_precision precision;
    size_t real_size; /* sizeof(float) or sizeof(double) */
    bool host_memory; /* buffers are plain host memory (the CPU backend) */
};

/* The CPU backend for a precision; NULL when out of memory. */
ax_backend *ax_backend_cpu_create(ax_precision precision);

/* Memory of `bytes` from backend (alloc_status, or alloc for an older
 * plugin's table): AX_STATUS_OUT_OF_MEMORY naming `what` when it does not
 * fit. */
ax_status ax_backend_alloc(ax_backend *backend, size_t bytes, const char *what, void **memory);
/* Waits for the queued work and answers the backend's status
 * (synchronize_status, or synchronize then status). */
ax_status ax_backend_synchronize(ax_backend *backend);

/* Sets each reductions[i].value, as reduce promises, for any n >= 0:
 * through reduce, AX_BACKEND_REDUCE_MAX at a time, or one dot or all_finite
 * call each for tables without it (plugins before version 9) and under
 * AXON_BATCHED_READS=off (to compare: the same values, more waits). The
 * optimizers read their scalars through it: one host wait per batch. */
void ax_backend_reduce(ax_backend *backend, int n, ax_reduction *reductions);

/* The device of an integer in files written before ax_device had a name
 * (checkpoints): -1 the CPU, N device N of the one GPU backend of then. */
ax_device ax_device_from_number(int number);

/* The CPU's device properties (src/backend/cpu/cpu_device.c). */
void ax_backend_cpu_properties(ax_device_properties *out);

/* The backend for a precision on a device: the CPU or a plugin's device
 * (AX_STATUS_UNSUPPORTED, with a message, when this build has no such
 * backend or there is no such device; AX_STATUS_BAD_ARGUMENT for a
 * malformed device). Plugins: plugin.h. */
ax_status ax_backend_create(ax_precision precision, ax_device device, ax_backend **out);

#endif
