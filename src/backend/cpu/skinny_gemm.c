/* skinny_gemm.c: see skinny_gemm.h. The kernels are written once, in
 * skinny_gemm_kernels.inc, and instantiated here for float and double. */
#include "backend/cpu/skinny_gemm.h"
#include "backend/cpu/cpu_features.h"

#include <stdlib.h>
#include <string.h>

static bool disabled = false;

void ax_skinny_gemm_disable(bool disable) { disabled = disable; }

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <omp.h>

#define SKINNY_TARGET __attribute__((target("avx512f")))
/* The narrow side: 8 rows of B (forward) or columns of A (gradient). */
#define SKINNY_WIDTH 8
/* Below this many elements of the wide operand (about 1 MB of float) one
 * thread finishes before a team would start. */
#define SKINNY_PARALLEL_MIN (INT64_C(1) << 18)
/* Vectors of columns per chunk of the gradient: 8 x 3 sums take 24 of the
 * 32 registers, and 8 x 4 would leave none for the rows of B. */
#define SKINNY_CHUNK 3
/* Rows of B swept per column chunk by the gradient. With the next chunk
 * prefetched, 96 to 256 rows time alike and 16 or 32 are slower, as each
 * block reloads and stores its chunk's 24 vectors of sums (tuned:
 * dev/skinny_gemm.c); 128 keeps what the block prefetches, 128 x 192
 * bytes, within half of a 48 KB L1. */
#ifndef SKINNY_ROW_BLOCK
#define SKINNY_ROW_BLOCK 128
#endif
/* How many vectors ahead the forward product prefetches its rows of A
 * (512 bytes; 6 to 12 time alike). */
#ifndef SKINNY_PREFETCH_AHEAD
#define SKINNY_PREFETCH_AHEAD 8
#endif
#define SKINNY_LINE 64

/* The forward kernel's k blocks (0: none) and the triples that pass over a
 * block in turn (tuned: dev/skinny_gemm.c). In float32 the 8 rows of B fit
 * L1 for the galaxy network 1024-8-3 (32 KB) and blocks only cost time;
 * in float64 (64 KB) they do not. */
#ifndef SKINNY_FORWARD_KBLOCK_F32
#define SKINNY_FORWARD_KBLOCK_F32 0
#endif
#ifndef SKINNY_FORWARD_KBLOCK_F64
#define SKINNY_FORWARD_KBLOCK_F64 512
#endif
#ifndef SKINNY_FORWARD_GROUP_F64
#define SKINNY_FORWARD_GROUP_F64 8
#endif

#define REAL float
#define SKINNY_FORWARD_KBLOCK SKINNY_FORWARD_KBLOCK_F32
#define SKINNY_FORWARD_GROUP 1
#define SUFFIX f32
#define LANES 16
#define V __m512
#define MASK __mmask16
#define V_ZERO _mm512_setzero_ps
#define V_LOAD _mm512_loadu_ps
#define V_MASKZ_LOAD _mm512_maskz_loadu_ps
#define V_MASK_STORE _mm512_mask_storeu_ps
#define V_FMADD _mm512_fmadd_ps
#define V_MUL _mm512_mul_ps
#define V_SET1 _mm512_set1_ps
#define V_REDUCE _mm512_reduce_add_ps
#include "backend/cpu/skinny_gemm_kernels.inc"
#undef REAL
#undef SKINNY_FORWARD_KBLOCK
#undef SKINNY_FORWARD_GROUP
#undef SUFFIX
#undef LANES
#undef V
#undef MASK
#undef V_ZERO
#undef V_LOAD
#undef V_MASKZ_LOAD
#undef V_MASK_STORE
#undef V_FMADD
#undef V_MUL
#undef V_SET1
#undef V_REDUCE

#define REAL double
#define SKINNY_FORWARD_KBLOCK SKINNY_FORWARD_KBLOCK_F64
#define SKINNY_FORWARD_GROUP SKINNY_FORWARD_GROUP_F64
#define SUFFIX f64
#define LANES 8
#define V __m512d
#define MASK __mmask8
#define V_ZERO _mm512_setzero_pd
#define V_LOAD _mm512_loadu_pd
#define V_MASKZ_LOAD _mm512_maskz_loadu_pd
#define V_MASK_STORE _mm512_mask_storeu_pd
#define V_FMADD _mm512_fmadd_pd
#define V_MUL _mm512_mul_pd
#define V_SET1 _mm512_set1_pd
#define V_REDUCE _mm512_reduce_add_pd
#include "backend/cpu/skinny_gemm_kernels.inc"

/* The kernels pay off once the wide side is a few vectors long; below
 * that the BLAS's own small-matrix paths are as good. */
static bool suits(int64_t narrow, int64_t length)
{
    return !disabled && narrow >= 5 && narrow <= SKINNY_WIDTH && length >= 64 &&
           ax_cpu_kernels_avx512f();
}

#define SKINNY_ENTRY(suffix, real)                                                          \
    bool ax_skinny_gemm_##suffix(bool trans_a, bool trans_b, int64_t m, int64_t n,          \
                                 int64_t k, real alpha, const real *a, int64_t lda,         \
                                 const real *b, int64_t ldb, real beta, real *c,            \
                                 int64_t ldc)                                               \
    {                                                                                       \
        if (m <= 0 || n <= 0 || k <= 0)                                                     \
            return false;                                                                   \
        if (!trans_a && trans_b && suits(n, k)) {                                           \
            forward_##suffix(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);                 \
            return true;                                                                    \
        }                                                                                   \
        if (trans_a && !trans_b && suits(m, n) && k >= 64)                                  \
            return gradient_##suffix(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);         \
        return false;                                                                       \
    }
SKINNY_ENTRY(f32, float)
SKINNY_ENTRY(f64, double)

#else /* not x86-64 with GCC or Clang: the BLAS does every shape */

bool ax_skinny_gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                        float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                        float beta, float *c, int64_t ldc)
{
    return false;
}

bool ax_skinny_gemm_f64(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                        double alpha, const double *a, int64_t lda, const double *b,
                        int64_t ldb, double beta, double *c, int64_t ldc)
{
    return false;
}

#endif
