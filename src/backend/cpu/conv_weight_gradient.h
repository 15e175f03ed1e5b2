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

/* How many slices a batch of `images` is cut into (a function of the
 * images and the geometry only): for tests. */
int64_t ax_cpu_conv_weight_slices(const ax_window_geometry *geometry, int64_t images);

void ax_conv_weight_scratch_free(ax_conv_weight_scratch *scratch);

#endif
