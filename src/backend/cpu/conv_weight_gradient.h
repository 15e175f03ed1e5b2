/* conv_weight_gradient.h: the CPU backend's convolution weight gradient
 * (backend.h: conv_backward_weights), in float32, float64 and bf16, parallel over
 * a split of the batch that does not depend on the thread count
 * (conv_weight_gradient.c). */
#ifndef AX_BACKEND_CPU_CONV_WEIGHT_GRADIENT_H
#define AX_BACKEND_CPU_CONV_WEIGHT_GRADIENT_H

#include "backend/backend.h"

/* A backend's memory for the weight gradient: each thread's columns and
 * each slice's partial sums. Grown when a call needs more, kept until the
 * backend is destroyed, so a warm training step allocates nothing. */
typedef struct ax_conv_weight_scratch {
    void *memory;
    size_t bytes;
} ax_conv_weight_scratch;

/* The backend's GEMM (backend.h's gemm), called from inside an OpenMP
 * parallel region, one product per slice: it must be safe to call from
 * several threads at once and give the same bits whatever the threads
 * (the CPU's gemm_f32 and gemm_f64 are and do, cpu_backend.c). */
typedef void ax_cpu_gemm_function(ax_backend *backend, bool trans_a, bool trans_b, int64_t m,
                                  int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                                  const void *b, int64_t ldb, double beta, void *c, int64_t ldc);

/* weight_gradient (filters, channels, kernel_height, kernel_width) = the
 * sum over images of delta (images, out_height, out_width, filters)^T
 * times the columns of x (images, height, width, channels) (im2col's),
 * overwritten; read from columns where not NULL (x's, as im2col lays them
 * out), gathered slice by slice otherwise. backend->real_size picks float32 or
 * float64; round_bf16 (float32 only) rounds both operands to bfloat16
 * first, as bf16_gemm.c does, and then ignores columns. False, with
 * nothing written, for a layer of more than 2^18 weights (the BLAS splits
 * its one GEMM well) or when its scratch cannot be allocated. */
bool ax_cpu_conv_weight_gradient(ax_backend *backend, ax_conv_weight_scratch *scratch,
                                 ax_cpu_gemm_function *gemm, const ax_window_geometry *geometry,
                                 int64_t filters, const void *delta, const void *x,
                                 const void *columns, void *weight_gradient, int64_t images,
                                 bool round_bf16);

/* One way of making a slice's partial sums of the weight gradient: the
 * GEMM above (conv_weight_gradient.c) or oneDNN's (onednn_conv.h).
 * ax_cpu_conv_weight_slices_sum cuts the batch, runs `slice` for each
 * slice on whichever thread takes it, adds the partials in slice order and
 * hands their sum to `finish`. */
typedef struct ax_conv_slice_product {
    void *context;
    int64_t weights;       /* values of the weight gradient */
    int64_t partial_reals; /* values of one slice's partial sums, in the product's order */
    size_t thread_bytes;   /* scratch each thread gets, 64-byte aligned */
    /* partial = the gradient of images [first, first + count), on the
     * calling thread alone, the same bits whichever thread; false on failure */
    bool (*slice)(void *context, int64_t first, int64_t count, void *thread_scratch,
                  void *partial);
    /* weight_gradient (torch's order) from sum, the partials' sum */
    bool (*finish)(void *context, const void *sum, void *weight_gradient);
} ax_conv_slice_product;

/* weight_gradient = the sum of product's partials over the slices of a
 * batch of images (ax_cpu_conv_weight_slices), added slice 0, 1, 2, ...
 * for every element in real_size's type, so the bits do not depend on the
 * thread count. False, with nothing written, when a slice or finish fails,
 * the partials exceed 2^18 values or scratch cannot be allocated. */
bool ax_cpu_conv_weight_slices_sum(ax_conv_weight_scratch *scratch, size_t real_size,
                                   const ax_window_geometry *geometry, int64_t images,
                                   const ax_conv_slice_product *product, void *weight_gradient);

/* The extent of an image that a layer's windows read, padding included:
 * what a direct kernel's copy of a padded image holds. */
static inline int64_t ax_window_read_height(const ax_window_geometry *g)
{
    return (g->out_height - 1) * g->stride + g->kernel_height;
}

static inline int64_t ax_window_read_width(const ax_window_geometry *g)
{
    return (g->out_width - 1) * g->stride + g->kernel_width;
}

/* The images of a batch's largest slice (0 for no images). */
int64_t ax_cpu_conv_weight_widest(const ax_window_geometry *geometry, int64_t images);

/* The float32 values a thread's scratch needs for the direct kernels'
 * slices of at most `widest` images (conv_one_channel.c,
 * conv_weight_direct.c): the images with their padding made real, where
 * padded or rounded, then the delta, where rounded to bf16, then the
 * delta made from a pooling's output gradient (ax_pooled_delta), where
 * pooled. */
static inline int64_t ax_conv_direct_thread_reals(const ax_window_geometry *g, int64_t filters,
                                                  int64_t widest, bool round_bf16, bool pooled)
{
    const int64_t images = g->padding || round_bf16 ? widest * ax_window_read_height(g) *
                                                          ax_window_read_width(g) * g->channels
                                                    : 0;
    const int64_t delta = widest * g->out_height * g->out_width * filters;
    return images + (round_bf16 ? delta : 0) + (pooled ? delta : 0);
}

/* A max pooling's output gradient standing in for a convolution's delta
 * (backend.h: conv_backward_weights_bias_pooled): y, the convolution's
 * output after its ReLU (the pooling's input), and dy, the pooling's
 * output gradient, both float32; or, where codes is not NULL (backend.h:
 * conv_backward_weights_bias_coded, 2x2 windows), the window positions
 * that conv_forward_relu_max_pool wrote in y's stead. */
typedef struct ax_pooled_delta {
    const ax_window_geometry *pool;
    const float *y, *dy;
    const uint8_t *codes;
} ax_pooled_delta;

/* Whether pool's windows are 2x2 of stride 2 without padding and tile its
 * input, as the window codes (one position of four) require. */
static inline bool ax_max_pool_2x2_tiles(const ax_window_geometry *pool)
{
    return pool->kernel_height == 2 && pool->kernel_width == 2 && pool->stride == 2 &&
           pool->padding == 0 && pool->out_height * 2 == pool->height &&
           pool->out_width * 2 == pool->width;
}

/* delta (count images of the convolution's output) = the delta of images
 * [first, first + count): max_pool_backward_relu's values for them, on the
 * calling thread (a parallel region's slice): the same bits as the whole
 * batch's pass; from the codes, each window's dy at its coded position and
 * 0 at the others, the same bits again. */
void ax_pooled_delta_make(const ax_pooled_delta *pooled, int64_t first, int64_t count,
                          float *delta);

/* How many slices a batch of `images` is cut into (a function of the
 * images and the geometry only): for tests. */
int64_t ax_cpu_conv_weight_slices(const ax_window_geometry *geometry, int64_t images);

void ax_conv_weight_scratch_free(ax_conv_weight_scratch *scratch);

#endif
