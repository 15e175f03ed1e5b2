/* cpu_backend.c: the CPU backend: GEMMs through CBLAS (multithreaded BLAS,
 * as ROOT/TMVA's deep-learning CPU backend does), everything else in the
 * OpenMP kernels of cpu_kernels.inc, instantiated here for float and double.
 * bf16 is the float table with its GEMMs on bfloat16 operands (bf16_gemm.c),
 * its weight gradient on them through the float32 slice product
 * (conv_weight_gradient.c) and, built with oneDNN, its convolutions on
 * them through oneDNN (onednn_conv_bf16.c, onednn_conv_weights.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/amx_gemm.h"
#include "backend/cpu/bf16_gemm.h"
#include "backend/cpu/blas.h"
#include "backend/cpu/conv_input_amx.h"
#include "backend/cpu/conv_input_direct.h"
#include "backend/cpu/conv_winograd.h"
#include "backend/cpu/conv_one_channel.h"
#include "backend/cpu/conv_weight_amx.h"
#include "backend/cpu/conv_weight_direct.h"
#include "backend/cpu/conv_weight_gradient.h"
#include "backend/cpu/cpu_image.h"
#include "backend/cpu/long_gemm.h"
#ifdef AXON_ONEDNN
#include "backend/cpu/onednn_conv.h"
#include "backend/cpu/onednn_matmul.h"
#endif
#include "backend/cpu/skinny_gemm.h"
#include "backend/cpu/tiny_gemm.h"
#include "base/error.h"
#include "base/memory.h"
#include "base/random.h"

/* glibc's libmvec has vector versions of these; declaring them `simd` lets
 * the compiler call them from `omp simd` loops without -ffast-math (which
 * would also drop NaN checks we rely on). */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__)
float expf(float) __attribute__((simd("notinbranch")));
double exp(double) __attribute__((simd("notinbranch")));
float tanhf(float) __attribute__((simd("notinbranch")));
double tanh(double) __attribute__((simd("notinbranch")));
double log(double) __attribute__((simd("notinbranch")));
#endif

static void *cpu_alloc(ax_backend *backend, size_t bytes)
{
    return ax_allocate_zeroed(bytes);
}

static void cpu_free(ax_backend *backend, void *memory) { free(memory); }

static void cpu_synchronize(ax_backend *backend) {}

/* CPU operations cannot fail once their memory is allocated. */
static ax_status cpu_status(ax_backend *backend) { return AX_STATUS_OK; }

static ax_status cpu_alloc_status(ax_backend *backend, size_t bytes, void **memory)
{
    *memory = ax_allocate_zeroed(bytes);
    return *memory ? AX_STATUS_OK
                   : ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for %zu bytes on the CPU",
                             bytes);
}

static ax_status cpu_synchronize_status(ax_backend *backend) { return AX_STATUS_OK; }

/* The float32 and float64 backends: the weight gradient's scratch
 * (conv_weight_gradient.h) and, in float32 where built, oneDNN's state
 * (onednn_conv.h: primitives per shape, created by the first convolution). */
typedef struct cpu_backend {
    ax_backend base;
    ax_conv_weight_scratch weight_scratch;
#ifdef AXON_ONEDNN
    ax_onednn_convs *convs;
    bool onednn; /* AXON_ONEDNN_CONV's, at creation */
    ax_onednn_matmuls *matmuls; /* float32's large forward products (onednn_matmul.h) */
#endif
} cpu_backend;

/* Float32 only: single-channel layers through the direct kernels
 * (conv_one_channel.h), 5x5 kernels of stride 1 by Winograd's F(4x4, 5x5)
 * (conv_winograd.h: 1.5-3x oneDNN's direct kernels at LeNet's second
 * layer), the others through oneDNN where built. A table
 * copied onto another backend (the test plugin copies one precision's table
 * for both float sizes) declines rather than handing them doubles. */
static bool cpu_conv_forward(ax_backend *backend, const ax_window_geometry *geometry,
                             int64_t filters, const void *x, const void *weights, void *z,
                             int64_t images)
{
    if (backend->precision != AX_PRECISION_F32)
        return false;
    if (ax_conv_one_channel_forward(geometry, filters, x, weights, z, images, false) ||
        ax_conv_winograd_forward(geometry, filters, x, weights, z, images))
        return true;
#ifdef AXON_ONEDNN
    return ((cpu_backend *)backend)->onednn &&
           ax_onednn_conv_forward(&((cpu_backend *)backend)->convs, geometry, filters, x,
                                  weights, z, images);
#else
    return false;
#endif
}

/* The forward pass with bias and activation in one pass: single-channel
 * layers in float32 and bf16 (conv_one_channel.h), identity and ReLU. */
static bool cpu_conv_forward_bias_activation(ax_backend *backend,
                                             const ax_window_geometry *geometry, int64_t filters,
                                             const void *x, const void *weights, const void *bias,
                                             ax_activation activation, void *z, int64_t images)
{
    if (backend->precision != AX_PRECISION_F32 && backend->precision != AX_PRECISION_BF16)
        return false;
    return ax_conv_one_channel_forward_bias_activation(geometry, filters, x, weights, bias,
                                                       activation, z, images,
                                                       backend->precision == AX_PRECISION_BF16);
}

/* The forward pass with bias and ReLU and the 2x2 max pooling over it in
 * one: single-channel layers in float32 and bf16 (conv_one_channel.h). */
static bool cpu_conv_forward_relu_max_pool(ax_backend *backend, const ax_window_geometry *geometry,
                                           int64_t filters, const ax_window_geometry *pool,
                                           const void *x, const void *weights, const void *bias,
                                           void *y, void *pooled, uint8_t *codes, int64_t images)
{
    if (backend->precision != AX_PRECISION_F32 && backend->precision != AX_PRECISION_BF16)
        return false;
    const char *asked = getenv("AXON_CONV_POOL"); /* off: the two passes (tests) */
    if (asked && strcmp(asked, "off") == 0)
        return false;
    return ax_conv_one_channel_forward_relu_max_pool(geometry, filters, pool, x, weights, bias, y,
                                                     pooled, codes, images,
                                                     backend->precision == AX_PRECISION_BF16);
}

/* Float32 only: 5x5 kernels of stride 1 by Winograd's F(4x4, 5x5)
 * (conv_winograd.h), else oneDNN's backward-data primitive where built and on, else
 * stride-1 layers of channels in 16s through the direct kernel
 * (conv_input_direct.h: on a 2-core AMX Xeon as fast as oneDNN's at
 * LeNet's second layer, 0.9x at 3x3 with padding, and 1.5-3x the GEMM and
 * col2im that a build without oneDNN took before; docs/notes/conv.md). */
static bool cpu_conv_backward_input(ax_backend *backend, const ax_window_geometry *geometry,
                                    int64_t filters, const void *delta, const void *weights,
                                    void *previous, int64_t images)
{
    if (backend->precision != AX_PRECISION_F32)
        return false;
    if (ax_conv_winograd_backward_input(geometry, filters, delta, weights, previous, images))
        return true;
#ifdef AXON_ONEDNN
    if (((cpu_backend *)backend)->onednn &&
        ax_onednn_conv_backward_input(&((cpu_backend *)backend)->convs, geometry, filters, delta,
                                      weights, previous, images))
        return true;
#endif
    return ax_conv_input_direct(geometry, filters, delta, weights, previous, images);
}


/* C (m, n) = alpha * a (m) b (n)^T, the k = 1 case of GEMM. */
#define OUTER_PRODUCT(suffix, real)                                                          \
    static void outer_product_##suffix(bool trans_a, bool trans_b, int64_t m, int64_t n,      \
                                       double alpha, const void *a_, int64_t lda,            \
                                       const void *b_, int64_t ldb, void *c_, int64_t ldc)   \
    {                                                                                        \
        const real *a = a_, *b = b_;                                                         \
        real *c = c_;                                                                        \
        const int64_t a_step = trans_a ? 1 : lda, b_step = trans_b ? ldb : 1;                \
        _Pragma("omp parallel for schedule(static) if (m * n >= 32768)")                     \
        for (int64_t i = 0; i < m; i++) {                                                    \
            const real scale = (real)alpha * a[i * a_step];                                  \
            real *row = c + i * ldc;                                                         \
            for (int64_t j = 0; j < n; j++)                                                  \
                row[j] = scale * b[j * b_step];                                              \
        }                                                                                    \
    }
OUTER_PRODUCT(f32, float)
OUTER_PRODUCT(f64, double)

/* The BLAS's own blocking of the inner dimension k depends on its thread
 * count (OpenBLAS 0.3.21 splits a k between its block size Q and 2Q at
 * other places with one thread than with two: k = 400 and 784 give other
 * bits), and each block's partial sums are rounded into C. Handing it k in
 * fixed blocks no larger than its Q makes every element's sum the same
 * whatever the threads, so a run's weights do not depend on --threads (or
 * on how many threads axon chooses under load). C is read and written once
 * per block, as the BLAS does for its own blocks. */
#define GEMM_K_BLOCK 256

/* Offset of index `first` along k in a row-major operand whose rows are
 * indexed by k (A transposed, B untransposed) or whose columns are. */
static int64_t k_offset(bool k_indexes_rows, int64_t first, int64_t ld)
{
    return k_indexes_rows ? first * ld : first;
}

static void gemm_f32(ax_backend *backend, bool trans_a, bool trans_b, int64_t m, int64_t n,
                     int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                     int64_t ldb, double beta, void *c, int64_t ldc)
{
    /* An outer product (k = 1, e.g. the input gradient of a 1-wide output
     * layer) runs at a few GFLOP/s through GEMM; as a plain loop it streams. */
    if (k == 1 && beta == 0.0) {
        outer_product_f32(trans_a, trans_b, m, n, alpha, a, lda, b, ldb, c, ldc);
        return;
    }
    if (ax_tiny_gemm_f32(trans_a, trans_b, m, n, k, (float)alpha, a, lda, b, ldb, (float)beta, c,
                         ldc))
        return;
    if (ax_skinny_gemm_f32(trans_a, trans_b, m, n, k, (float)alpha, a, lda, b, ldb, (float)beta,
                           c, ldc))
        return;
    if (ax_long_gemm_f32(trans_a, trans_b, m, n, k, (float)alpha, a, lda, b, ldb, (float)beta, c,
                         ldc))
        return;
#ifdef AXON_ONEDNN
    /* float32 backends only: the state is a cpu_backend's (the bf16
     * emulation passes NULL, the bf16 weight gradient its own backend) */
    if (backend && backend->precision == AX_PRECISION_F32 &&
        ax_onednn_f32_matmul_takes(trans_a, trans_b, m, n, k) &&
        ax_onednn_f32_matmul(&((cpu_backend *)backend)->matmuls, trans_a, trans_b, m, n, k,
                             (float)alpha, a, lda, b, ldb, (float)beta, c, ldc))
        return;
#endif
    const float *a_ = a, *b_ = b;
    for (int64_t first = 0; first < k; first += GEMM_K_BLOCK) {
        const int64_t depth = k - first < GEMM_K_BLOCK ? k - first : GEMM_K_BLOCK;
        ax_blas.sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                      trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)depth,
                      (float)alpha, a_ + k_offset(trans_a, first, lda), (int)lda,
                      b_ + k_offset(!trans_b, first, ldb), (int)ldb,
                      first == 0 ? (float)beta : 1.0f, c, (int)ldc);
    }
}

static void gemm_f64(ax_backend *backend, bool trans_a, bool trans_b, int64_t m, int64_t n,
                     int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                     int64_t ldb, double beta, void *c, int64_t ldc)
{
    /* An outer product (k = 1, e.g. the input gradient of a 1-wide output
     * layer) runs at a few GFLOP/s through GEMM; as a plain loop it streams. */
    if (k == 1 && beta == 0.0) {
        outer_product_f64(trans_a, trans_b, m, n, alpha, a, lda, b, ldb, c, ldc);
        return;
    }
    if (ax_tiny_gemm_f64(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
        return;
    if (ax_skinny_gemm_f64(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
        return;
    const double *a_ = a, *b_ = b;
    for (int64_t first = 0; first < k; first += GEMM_K_BLOCK) {
        const int64_t depth = k - first < GEMM_K_BLOCK ? k - first : GEMM_K_BLOCK;
        ax_blas.dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                      trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)depth, alpha,
                      a_ + k_offset(trans_a, first, lda), (int)lda,
                      b_ + k_offset(!trans_b, first, ldb), (int)ldb,
                      first == 0 ? beta : 1.0, c, (int)ldc);
    }
}

/* A slice's product of the weight gradient: gemm_f32's kernels, with the
 * long-sum kernel taken at any length (a slice's sum is a piece of the
 * batch's, long_gemm.h). */
static void slice_gemm_f32(ax_backend *backend, bool trans_a, bool trans_b, int64_t m, int64_t n,
                           int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                           int64_t ldb, double beta, void *c, int64_t ldc)
{
    if (!ax_long_gemm_f32_any_k(trans_a, trans_b, m, n, k, (float)alpha, a, lda, b, ldb,
                                (float)beta, c, ldc))
        gemm_f32(backend, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* float32's weight gradient (and bias gradient, where not NULL) through
 * axon's direct kernels, single-channel or several, where one takes the
 * layer. */
static bool direct_weight_gradient(cpu_backend *cpu, const ax_window_geometry *geometry,
                                   int64_t filters, const void *delta, const void *x,
                                   void *weight_gradient, void *bias_gradient, int64_t images)
{
    return ax_conv_one_channel_weight_gradient(&cpu->weight_scratch, geometry, filters, delta, x,
                                               weight_gradient, bias_gradient, images, false) ||
           ax_conv_weight_direct(&cpu->weight_scratch, geometry, filters, delta, x,
                                 weight_gradient, bias_gradient, images, false);
}

/* The weight gradient over slices of the batch (conv_weight_gradient.c),
 * each slice's product through this backend's own GEMM. Only backends
 * made by ax_backend_cpu_create in float32 or float64 are cpu_backends
 * (the test plugin copies tables across precisions). */
static bool cpu_conv_backward_weights(ax_backend *backend, const ax_window_geometry *geometry,
                                      int64_t filters, const void *delta, const void *x,
                                      const void *columns, void *weight_gradient, int64_t images)
{
    if (backend->precision != AX_PRECISION_F32 && backend->precision != AX_PRECISION_F64)
        return false;
    if (backend->precision == AX_PRECISION_F32 &&
        (ax_conv_winograd_weight_gradient(geometry, filters, delta, x, weight_gradient, images) ||
         direct_weight_gradient((cpu_backend *)backend, geometry, filters, delta, x,
                                weight_gradient, NULL, images)))
        return true;
#ifdef AXON_ONEDNN
    cpu_backend *cpu = (cpu_backend *)backend;
    if (backend->precision == AX_PRECISION_F32 && cpu->onednn &&
        ax_onednn_conv_backward_weights(&cpu->convs, &cpu->weight_scratch, geometry, filters,
                                        delta, x, weight_gradient, images))
        return true;
#endif
    return ax_cpu_conv_weight_gradient(
        backend, &((cpu_backend *)backend)->weight_scratch,
        backend->precision == AX_PRECISION_F64 ? gemm_f64 : slice_gemm_f32, geometry, filters, delta,
        x, columns, weight_gradient, images, false);
}

/* The bf16 backend: float32 memory and kernels, bfloat16 GEMM operands
 * with float32 sums, the scratch memory its packing needs and its own
 * weight-gradient scratch (its GEMM workspace is one, shared, so the
 * slices take float32's product on operands rounded in the slice). */
typedef struct cpu_bf16_backend {
    ax_backend base;
    ax_bf16_workspace workspace;
    ax_conv_weight_scratch weight_scratch;
    bool rounded_asked; /* AXON_ONEDNN_BF16=rounded at creation: float32 kernels */
#ifdef AXON_ONEDNN
    ax_onednn_convs *convs;
    ax_onednn_bf16_mode conv_mode; /* AXON_ONEDNN_BF16's, at creation */
    ax_onednn_matmuls *matmuls;    /* the GEMMs on AMX (onednn_matmul.h) */
#endif
} cpu_bf16_backend;

/* AMX's tiles for bf16's weight gradient where this CPU has them, unless
 * AXON_ONEDNN_BF16=rounded asks for float32 kernels on rounded operands;
 * their emulation (AXON_CONV_AMX=emulate, for tests) always. */
static bool bf16_amx_allowed(const cpu_bf16_backend *bf16)
{
    const ax_conv_amx_mode mode = ax_conv_amx_mode_chosen();
    if (mode == AX_CONV_AMX_EMULATED)
        return true;
#ifdef AXON_ONEDNN
    if (bf16->conv_mode == AX_ONEDNN_BF16_ROUNDED) /* asked, or native refused */
        return false;
#endif
    return !bf16->rounded_asked && mode == AX_CONV_AMX_HARDWARE;
}

/* bf16 operands, float32 products (exact) and sums: axon's bf16 GEMM,
 * summed in the slices' order; before it, as the forward pass (below):
 * the direct kernels, Winograd's F(5x5, 4x4) on rounded operands, AMX's
 * tiles. */
static bool cpu_bf16_conv_backward_weights(ax_backend *backend,
                                           const ax_window_geometry *geometry, int64_t filters,
                                           const void *delta, const void *x, const void *columns,
                                           void *weight_gradient, int64_t images)
{
    if (backend->precision != AX_PRECISION_BF16)
        return false;
    /* single-channel layers: the direct kernels on rounded operands (as
     * the forward pass, below) */
    if (ax_conv_one_channel_weight_gradient(&((cpu_bf16_backend *)backend)->weight_scratch,
                                            geometry, filters, delta, x, weight_gradient, NULL,
                                            images, true) ||
        ax_conv_winograd_weight_gradient_bf16(geometry, filters, delta, x, weight_gradient, images))
        return true;
    if (bf16_amx_allowed((cpu_bf16_backend *)backend) &&
        ax_conv_weight_amx(&((cpu_bf16_backend *)backend)->weight_scratch, geometry, filters,
                           delta, x, weight_gradient, NULL, images))
        return true;
#ifdef AXON_ONEDNN
    /* as cpu_bf16_conv_forward below: native, else rounded for good, else
     * (AXON_ONEDNN_BF16=off, or oneDNN declining) the GEMM product */
    cpu_bf16_backend *bf16 = (cpu_bf16_backend *)backend;
    if (bf16->conv_mode == AX_ONEDNN_BF16_NATIVE &&
        ax_onednn_conv_backward_weights_bf16(&bf16->convs, &bf16->weight_scratch, bf16->conv_mode,
                                             geometry, filters, delta, x, weight_gradient, images))
        return true;
    if (bf16->conv_mode == AX_ONEDNN_BF16_NATIVE)
        bf16->conv_mode = AX_ONEDNN_BF16_ROUNDED;
#endif
    /* rounded operands: the direct kernels, as float32's */
    if (ax_conv_weight_direct(&((cpu_bf16_backend *)backend)->weight_scratch, geometry, filters,
                              delta, x, weight_gradient, NULL, images, true))
        return true;
#ifdef AXON_ONEDNN
    if (ax_onednn_conv_backward_weights_bf16(&bf16->convs, &bf16->weight_scratch, bf16->conv_mode,
                                             geometry, filters, delta, x, weight_gradient, images))
        return true;
#endif
    return ax_cpu_conv_weight_gradient(backend, &((cpu_bf16_backend *)backend)->weight_scratch,
                                       slice_gemm_f32, geometry, filters, delta, x, columns,
                                       weight_gradient, images, true);
}

/* The weight gradient and the bias gradient in one pass over delta, where
 * the direct kernels (float32; bf16's single-channel ones) or AMX's tiles
 * (bf16) take the layer, their
 * weight gradient the one conv_backward_weights gives: the bias sums ride
 * on the slices' reads of delta, sparing the layer a pass over it. */
static bool cpu_conv_backward_weights_bias(ax_backend *backend, const ax_window_geometry *geometry,
                                           int64_t filters, const void *delta, const void *x,
                                           const void *columns, void *weight_gradient,
                                           void *bias_gradient, int64_t images)
{
    (void)columns;
    if (backend->precision == AX_PRECISION_BF16) { /* as cpu_bf16_conv_backward_weights */
        cpu_bf16_backend *bf16 = (cpu_bf16_backend *)backend;
        return ax_conv_one_channel_weight_gradient(&bf16->weight_scratch, geometry, filters,
                                                   delta, x, weight_gradient, bias_gradient,
                                                   images, true) ||
               (bf16_amx_allowed(bf16) && !ax_conv_winograd_weights_takes(geometry, filters) &&
                ax_conv_weight_amx(&bf16->weight_scratch, geometry, filters, delta, x,
                                   weight_gradient, bias_gradient, images));
    }
    /* float32's layers that Winograd's F(5x5, 4x4) takes decline here: the
     * layer sums the bias in its own pass and calls conv_backward_weights
     * (2.5x the direct tiles at LeNet's second layer, conv_winograd.h) */
    return backend->precision == AX_PRECISION_F32 &&
           !ax_conv_winograd_weights_takes(geometry, filters) &&
           direct_weight_gradient((cpu_backend *)backend, geometry, filters, delta, x,
                                  weight_gradient, bias_gradient, images);
}

/* A first layer's weight and bias gradients straight from the max
 * pooling's output gradient above it, where the direct kernels take the
 * layer (float32; bf16's single-channel ones): the kernels of
 * cpu_conv_backward_weights_bias, each slice's delta made in the thread's
 * scratch by max_pool_backward_relu's code, so the 9.4 MB of LeNet's
 * first delta are never written whole nor read back. */
static bool weights_bias_from_pooling(ax_backend *backend, const ax_window_geometry *geometry,
                                      int64_t filters, const ax_pooled_delta *pooled,
                                      const void *x, void *weight_gradient, void *bias_gradient,
                                      int64_t images)
{
    const ax_window_geometry *pool = pooled->pool;
    if (pool->height != geometry->out_height || pool->width != geometry->out_width ||
        pool->channels != filters || pool->padding != 0)
        return false;
    if (backend->precision == AX_PRECISION_BF16)
        return ax_conv_one_channel_weight_gradient_pooled(
            &((cpu_bf16_backend *)backend)->weight_scratch, geometry, filters, pooled, x,
            weight_gradient, bias_gradient, images, true);
    if (backend->precision != AX_PRECISION_F32)
        return false;
    ax_conv_weight_scratch *scratch = &((cpu_backend *)backend)->weight_scratch;
    return ax_conv_one_channel_weight_gradient_pooled(scratch, geometry, filters, pooled, x,
                                                      weight_gradient, bias_gradient, images,
                                                      false) ||
           ax_conv_weight_direct_pooled(scratch, geometry, filters, pooled, x, weight_gradient,
                                        bias_gradient, images, false);
}

static bool cpu_conv_backward_weights_bias_pooled(ax_backend *backend,
                                                  const ax_window_geometry *geometry,
                                                  int64_t filters, const ax_window_geometry *pool,
                                                  const void *y, const void *dy, const void *x,
                                                  void *weight_gradient, void *bias_gradient,
                                                  int64_t images)
{
    const ax_pooled_delta pooled = {pool, y, dy, NULL};
    return weights_bias_from_pooling(backend, geometry, filters, &pooled, x, weight_gradient,
                                     bias_gradient, images);
}

/* The same from the codes of cpu_conv_forward_relu_max_pool: 2x2 windows
 * of stride 2 that tile the layer's output, and nothing of y read. */
static bool cpu_conv_backward_weights_bias_coded(ax_backend *backend,
                                                 const ax_window_geometry *geometry,
                                                 int64_t filters, const ax_window_geometry *pool,
                                                 const uint8_t *codes, const void *dy,
                                                 const void *x, void *weight_gradient,
                                                 void *bias_gradient, int64_t images)
{
    if (!ax_max_pool_2x2_tiles(pool))
        return false;
    const ax_pooled_delta pooled = {pool, NULL, dy, codes};
    return weights_bias_from_pooling(backend, geometry, filters, &pooled, x, weight_gradient,
                                     bias_gradient, images);
}

/* The emulation's float32 product: gemm_f32's choice of kernels. */
static void sgemm_for_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                           float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                           float beta, float *c, int64_t ldc)
{
    gemm_f32(NULL, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void gemm_bf16(ax_backend *backend, bool trans_a, bool trans_b, int64_t m, int64_t n,
                      int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                      int64_t ldb, double beta, void *c, int64_t ldc)
{
    /* axon's AMX tiles where this CPU has them (amx_gemm.h), else oneDNN's
     * matmul where it runs on AMX; where both decline, below */
    if (ax_amx_gemm_takes(m, n, k) &&
        ax_amx_gemm(&((cpu_bf16_backend *)backend)->workspace, trans_a, trans_b, m, n, k,
                    (float)alpha, a, lda, b, ldb, (float)beta, c, ldc))
        return;
#ifdef AXON_ONEDNN
    if (ax_onednn_bf16_matmul_takes(m, n, k) &&
        ax_onednn_bf16_matmul(&((cpu_bf16_backend *)backend)->matmuls, trans_a, trans_b, m, n, k,
                              (float)alpha, a, lda, b, ldb, (float)beta, c, ldc))
        return;
#endif
    ax_bf16_gemm(&((cpu_bf16_backend *)backend)->workspace, sgemm_for_bf16, trans_a, trans_b, m,
                 n, k, (float)alpha, a, lda, b, ldb, (float)beta, c, ldc);
}

/* Every table's destroy: the struct follows the precision the backend was
 * created with, not the table (the test plugin copies tables across). */
static void cpu_backend_destroy(ax_backend *backend)
{
    if (!backend)
        return;
    if (backend->precision == AX_PRECISION_BF16) {
        ax_bf16_workspace_free(&((cpu_bf16_backend *)backend)->workspace);
        ax_conv_weight_scratch_free(&((cpu_bf16_backend *)backend)->weight_scratch);
#ifdef AXON_ONEDNN
        ax_onednn_convs_free(((cpu_bf16_backend *)backend)->convs);
        ax_onednn_matmuls_free(((cpu_bf16_backend *)backend)->matmuls);
#endif
    } else {
        cpu_backend *cpu = (cpu_backend *)backend;
        ax_conv_weight_scratch_free(&cpu->weight_scratch);
#ifdef AXON_ONEDNN
        ax_onednn_convs_free(cpu->convs);
        ax_onednn_matmuls_free(cpu->matmuls);
#endif
    }
    free(backend);
}

/* bf16 convolutions: single-channel layers through the direct kernels on
 * rounded operands (conv_one_channel.h), the 5x5 ones Winograd takes
 * through it on rounded operands (float32's F(4x4, 5x5) beat oneDNN's bf16
 * kernels and AMX's direct tiles at LeNet's second layer, conv_winograd.h),
 * the others through oneDNN where
 * built (onednn_conv.h): natively where oneDNN has bf16 kernels, else its
 * float32 ones on rounded operands. A native primitive oneDNN refuses
 * turns the backend to rounded ones for good (a refused creation costs as
 * much as a created one). Only a bf16 backend is a cpu_bf16_backend, as
 * for float32 above. */
static bool cpu_bf16_conv_forward(ax_backend *backend, const ax_window_geometry *geometry,
                                  int64_t filters, const void *x, const void *weights, void *z,
                                  int64_t images)
{
    if (backend->precision != AX_PRECISION_BF16)
        return false;
    if (ax_conv_one_channel_forward(geometry, filters, x, weights, z, images, true) ||
        ax_conv_winograd_forward_bf16(geometry, filters, x, weights, z, images))
        return true;
#ifdef AXON_ONEDNN
    cpu_bf16_backend *bf16 = (cpu_bf16_backend *)backend;
    if (bf16->conv_mode == AX_ONEDNN_BF16_NATIVE &&
        ax_onednn_conv_forward_bf16(&bf16->convs, bf16->conv_mode, geometry, filters, x, weights,
                                    z, images))
        return true;
    if (bf16->conv_mode == AX_ONEDNN_BF16_NATIVE)
        bf16->conv_mode = AX_ONEDNN_BF16_ROUNDED;
    return ax_onednn_conv_forward_bf16(&bf16->convs, bf16->conv_mode, geometry, filters, x,
                                       weights, z, images);
#else
    return false;
#endif
}

/* bf16's input gradient: AMX's tiles where this CPU has them (conv_input_amx.h,
 * as the weight gradient's), else oneDNN's as cpu_bf16_conv_forward. */
static bool cpu_bf16_conv_backward_input(ax_backend *backend, const ax_window_geometry *geometry,
                                         int64_t filters, const void *delta, const void *weights,
                                         void *previous, int64_t images)
{
    if (backend->precision != AX_PRECISION_BF16)
        return false;
    cpu_bf16_backend *bf16 = (cpu_bf16_backend *)backend;
    if (ax_conv_winograd_backward_input_bf16(geometry, filters, delta, weights, previous, images) ||
        (bf16_amx_allowed(bf16) &&
         ax_conv_input_amx(geometry, filters, delta, weights, previous, images)))
        return true;
#ifdef AXON_ONEDNN
    if (bf16->conv_mode == AX_ONEDNN_BF16_NATIVE &&
        ax_onednn_conv_backward_input_bf16(&bf16->convs, bf16->conv_mode, geometry, filters,
                                           delta, weights, previous, images))
        return true;
    if (bf16->conv_mode == AX_ONEDNN_BF16_NATIVE)
        bf16->conv_mode = AX_ONEDNN_BF16_ROUNDED;
    return ax_onednn_conv_backward_input_bf16(&bf16->convs, bf16->conv_mode, geometry, filters,
                                              delta, weights, previous, images);
#else
    return false;
#endif
}

#define REAL float
#define SUFFIX f32
#define EXP expf
#define TANH tanhf
#define SQRT sqrtf
#include "backend/cpu/cpu_kernels.inc"
#undef REAL
#undef SUFFIX
#undef EXP
#undef TANH
#undef SQRT

#define REAL double
#define SUFFIX f64
#define EXP exp
#define TANH tanh
#define SQRT sqrt
#include "backend/cpu/cpu_kernels.inc"
#undef REAL
#undef SUFFIX
#undef EXP
#undef TANH
#undef SQRT

#define CPU_OPS(suffix, gemm_suffix, destroy_function, conv_forward_function, \
                conv_backward_input_function, conv_backward_weights_function) \
    {                                                       \
        .name = "cpu",                                      \
        .alloc = cpu_alloc,                                 \
        .free = cpu_free,                                   \
        .upload_f64 = upload_f64_##suffix,                  \
        .download_f64 = download_f64_##suffix,              \
        .download_f32 = download_f32_##suffix,              \
        .copy = copy_##suffix,                              \
        .gather_rows = gather_rows_##suffix,                \
        .gather_labels = gather_labels_##suffix,            \
        .gemm = gemm_##gemm_suffix,                         \
        .bias_activation = bias_activation_##suffix,        \
        .activation_backward = activation_backward_##suffix, \
        .column_sums = column_sums_##suffix,                \
        .cross_entropy = cross_entropy_##suffix,            \
        .binary_cross_entropy = binary_cross_entropy_##suffix, \
        .squared_error = squared_error_##suffix,            \
        .dropout = dropout_##suffix,                        \
        .axpy = axpy_##suffix,                              \
        .dot = dot_##suffix,                                \
        .scale = scale_##suffix,                            \
        .all_finite = all_finite_##suffix,                  \
        .sgd_update = sgd_update_##suffix,                  \
        .adam_update = adam_update_##suffix,                \
        .argmax_rows = argmax_rows_##suffix,                \
        .im2col = ax_cpu_im2col_##suffix,                   \
        .col2im = ax_cpu_col2im_##suffix,                   \
        .pool_forward = ax_cpu_pool_forward_##suffix,       \
        .pool_backward = ax_cpu_pool_backward_##suffix,     \
        .transpose = ax_cpu_transpose_##suffix,             \
        .synchronize = cpu_synchronize,                     \
        .status = cpu_status,                               \
        .destroy = destroy_function,                        \
        .alloc_status = cpu_alloc_status,                   \
        .synchronize_status = cpu_synchronize_status,       \
        .l1_penalty = l1_penalty_##suffix,                  \
        .clamp = clamp_##suffix,                            \
        .conv_forward = conv_forward_function,              \
        .conv_backward_input = conv_backward_input_function, \
        .reduce = reduce_##suffix,                          \
        .conv_backward_weights = conv_backward_weights_function, \
        .max_pool_backward_relu = ax_cpu_max_pool_backward_relu_##suffix, \
        .conv_forward_bias_activation = cpu_conv_forward_bias_activation, \
        .conv_backward_weights_bias = cpu_conv_backward_weights_bias, \
        .conv_backward_weights_bias_pooled = cpu_conv_backward_weights_bias_pooled, \
        .conv_forward_relu_max_pool = cpu_conv_forward_relu_max_pool, \
        .conv_backward_weights_bias_coded = cpu_conv_backward_weights_bias_coded, \
    }

/* oneDNN's convolutions in float32 and bf16 (onednn_conv.h): it has no
 * float64 convolutions. */
static const ax_backend_ops cpu_ops_f32 =
    CPU_OPS(f32, f32, cpu_backend_destroy, cpu_conv_forward, cpu_conv_backward_input,
            cpu_conv_backward_weights);
static const ax_backend_ops cpu_ops_f64 =
    CPU_OPS(f64, f64, cpu_backend_destroy, NULL, NULL, cpu_conv_backward_weights);
static const ax_backend_ops cpu_ops_bf16 =
    CPU_OPS(f32, bf16, cpu_backend_destroy, cpu_bf16_conv_forward, cpu_bf16_conv_backward_input,
            cpu_bf16_conv_backward_weights);

ax_backend *ax_backend_cpu_create(ax_precision precision)
{
    if (precision == AX_PRECISION_BF16) {
        cpu_bf16_backend *bf16 = calloc(1, sizeof *bf16);
        if (!bf16)
            return NULL;
        bf16->base.precision = precision;
        bf16->base.ops = &cpu_ops_bf16;
        bf16->base.real_size = sizeof(float);
        bf16->base.host_memory = true;
        const char *asked = getenv("AXON_ONEDNN_BF16");
        bf16->rounded_asked = asked && strcmp(asked, "rounded") == 0;
#ifdef AXON_ONEDNN
        bf16->conv_mode = ax_onednn_bf16_mode_chosen();
#endif
        return &bf16->base;
    }
    cpu_backend *cpu = calloc(1, sizeof *cpu);
    if (!cpu)
        return NULL;
    ax_backend *backend = &cpu->base;
    backend->precision = precision;
    backend->ops = precision == AX_PRECISION_F64 ? &cpu_ops_f64 : &cpu_ops_f32;
    backend->real_size = precision == AX_PRECISION_F64 ? sizeof(double) : sizeof(float);
    backend->host_memory = true;
#ifdef AXON_ONEDNN
    cpu->onednn = ax_onednn_conv_enabled();
#endif
    return backend;
}
