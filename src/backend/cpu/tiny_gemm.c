/* tiny_gemm.c: see tiny_gemm.h. Two kernels:
 * - the row kernel (A B^T and A B, AVX-512VL intrinsics): op(B), at most
 *   16 x 8, is packed on the stack, and each row of C is a sum over k of
 *   an element of A times a packed row, kept in registers and written
 *   whole, or with a masked store when n is shorter than the vector. For
 *   n <= 4 in float one vector holds 4 rows.
 * - the reduction (A^T B, plain C): the m x n sums stay in registers while
 *   A and B stream past once; fixed-width `omp simd` loops over the
 *   narrow side become whole AVX2 vectors (the project builds for
 *   x86-64-v3).
 * What they save is the BLAS's per-call work, which for these shapes
 * (about 0.1 MFLOP) takes longer than the arithmetic: dev/tiny_gemm.c
 * times both. */
#include "backend/cpu/tiny_gemm.h"
#include "backend/cpu/cpu_features.h"

#include <math.h>

/* The narrow side: columns of C. Up to 4 the kernels work 4 wide, else 8. */
#define TINY_MAX_N 8
/* The inner dimension of the row kernel: B, packed k x 8, stays in L1 and
 * each row of A is at most a few vectors. */
#define TINY_MAX_K 16
/* Rows of C of the weight gradient: 4 x 8 sums, twice (two rows of B in
 * flight), fill 8 of the 16 AVX2 registers in float. */
#define TINY_MAX_M 4
/* Rows of C the row kernel computes at once, so that 4 independent sums
 * hide the latency of the multiply-adds. */
#define TINY_ROWS 4

#define TINY_INLINE static inline __attribute__((always_inline))

static bool disabled = false;

void ax_tiny_gemm_disable(bool disable) { disabled = disable; }

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* The row kernel keeps each row's sums in 8-wide vectors and writes C with
 * AVX-512VL masked stores: plain C ended each row with n scalar stores and
 * was 1.4 to 2x slower than OpenBLAS, AVX2's vmaskmov stores 10 % slower
 * than these (dev/tiny_gemm.c). The target attribute lets the sanitizer
 * build, compiled for plain x86-64, run it too, after a CPU check; CPUs
 * without AVX-512VL leave these shapes to the BLAS. */
#define TINY_TARGET __attribute__((target("avx2,fma,avx512f,avx512vl")))

/* C (R rows from c) = alpha A (R rows from a, k columns) BP + beta C, where
 * BP is op(B) packed as k rows of 8 with zero columns past n. R is a
 * constant where this is inlined, which keeps the R sums in registers. */
TINY_TARGET TINY_INLINE void row_step_f32(int R, int64_t k, float alpha, const float *a,
                                          int64_t lda, const float *bp, float beta, float *c,
                                          int64_t ldc, __mmask8 mask)
{
    __m256 acc[TINY_ROWS];
    for (int r = 0; r < R; r++)
        acc[r] = _mm256_setzero_ps();
    for (int64_t p = 0; p < k; p++) {
        const __m256 y = _mm256_loadu_ps(bp + p * 8);
        for (int r = 0; r < R; r++)
            acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + r * lda + p), y, acc[r]);
    }
    const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    for (int r = 0; r < R; r++) {
        __m256 v = _mm256_mul_ps(va, acc[r]);
        /* beta 0 must not read C, which may hold NaN (BLAS semantics) */
        if (beta != 0)
            v = _mm256_fmadd_ps(vb, _mm256_maskz_loadu_ps(mask, c + r * ldc), v);
        /* whole rows unmasked: inside training that took the input
         * gradient of the galaxy network 1024-8-3 on 2700 rows from 2.9-3.3
         * to 2.6-2.7 us per call */
        if (mask == 0xff)
            _mm256_storeu_ps(c + r * ldc, v);
        else
            _mm256_mask_storeu_ps(c + r * ldc, mask, v);
    }
}

/* The same in double: a row of up to 4 is one 4-wide vector (W = 4), of up
 * to 8 one 8-wide vector (W = 8; two 4-wide ones made the input gradient
 * of the galaxy network's float64 CG run 25 % slower than OpenBLAS).
 * Whole rows are stored
 * without a mask: inside training, masked stores of all 8 lanes made that
 * product 1.4x slower than plain ones (6.2 against 4.4 us). */
#define TINY_ROW_STEP_F64(W, V, ZERO, LOAD, SET1, FMADD, MUL, MASKZ_LOAD, MASK_STORE, STORE)   \
    TINY_TARGET TINY_INLINE void row_step##W##_f64(int R, int64_t k, double alpha,             \
                                                   const double *a, int64_t lda,               \
                                                   const double *bp, double beta, double *c,   \
                                                   int64_t ldc, __mmask8 mask)                 \
    {                                                                                          \
        V acc[TINY_ROWS];                                                                      \
        for (int r = 0; r < R; r++)                                                            \
            acc[r] = ZERO();                                                                   \
        for (int64_t p = 0; p < k; p++) {                                                      \
            const V y = LOAD(bp + p * 8);                                                      \
            for (int r = 0; r < R; r++)                                                        \
                acc[r] = FMADD(SET1(a[r * lda + p]), y, acc[r]);                               \
        }                                                                                      \
        const V va = SET1(alpha), vb = SET1(beta);                                             \
        for (int r = 0; r < R; r++) {                                                          \
            V v = MUL(va, acc[r]);                                                             \
            if (beta != 0)                                                                     \
                v = FMADD(vb, MASKZ_LOAD(mask, c + r * ldc), v);                               \
            if (mask == (1u << W) - 1)                                                         \
                STORE(c + r * ldc, v);                                                         \
            else                                                                               \
                MASK_STORE(c + r * ldc, mask, v);                                              \
        }                                                                                      \
    }
TINY_ROW_STEP_F64(4, __m256d, _mm256_setzero_pd, _mm256_loadu_pd, _mm256_set1_pd, _mm256_fmadd_pd,
                  _mm256_mul_pd, _mm256_maskz_loadu_pd, _mm256_mask_storeu_pd, _mm256_storeu_pd)
TINY_ROW_STEP_F64(8, __m512d, _mm512_setzero_pd, _mm512_loadu_pd, _mm512_set1_pd, _mm512_fmadd_pd,
                  _mm512_mul_pd, _mm512_maskz_loadu_pd, _mm512_mask_storeu_pd, _mm512_storeu_pd)

/* C (m, n) = alpha A (m, k) op(B) + beta C with op(B) packed in BP, rows
 * in groups of TINY_ROWS and then one by one. */
TINY_TARGET static void rows_f32(int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                                 int64_t lda, const float *bp, float beta, float *c, int64_t ldc)
{
    const __mmask8 mask = (__mmask8)((1u << n) - 1);
    int64_t i = 0;
    for (; i + TINY_ROWS <= m; i += TINY_ROWS)
        row_step_f32(TINY_ROWS, k, alpha, a + i * lda, lda, bp, beta, c + i * ldc, ldc, mask);
    for (; i < m; i++)
        row_step_f32(1, k, alpha, a + i * lda, lda, bp, beta, c + i * ldc, ldc, mask);
}

/* The load mask of row r of a group of `rows`: none past the last. */
static inline __mmask8 r_mask(int r, int rows, __mmask8 mask) { return r < rows ? mask : 0; }

/* C rows i .. i + rows - 1 (rows <= 4) for n <= 4 in float: one 16-wide
 * vector holds 4 rows of 4 sums, a quarter of the multiply-adds of
 * row_step_f32. Each 128-bit lane takes 4 elements of one row of A; an
 * in-lane shuffle spreads element q over its lane, to meet row p + q of B
 * repeated 4 times (BQ: k rounded up to 4 rows of 16, zero past k and n).
 * Rows past `rows` load and store nothing. */
TINY_TARGET TINY_INLINE void group4_f32(int rows, int64_t k, __m512 va, __m512 vb, bool beta_zero,
                                        const float *a, int64_t lda, const float *bq, float *c,
                                        int64_t ldc, __mmask8 nmask)
{
    const float *ar[4];
    float *cr[4];
    __mmask8 cm[4];
    for (int r = 0; r < 4; r++) {
        ar[r] = a + (r < rows ? r : 0) * lda;
        cr[r] = c + (r < rows ? r : 0) * ldc;
        cm[r] = r_mask(r, rows, nmask);
    }
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int64_t p = 0; p < k; p += 4) {
        const __mmask8 km = k - p >= 4 ? 0xf : (__mmask8)((1u << (k - p)) - 1);
        __m512 x = _mm512_castps128_ps512(_mm_maskz_loadu_ps(r_mask(0, rows, km), ar[0] + p));
        x = _mm512_insertf32x4(x, _mm_maskz_loadu_ps(r_mask(1, rows, km), ar[1] + p), 1);
        x = _mm512_insertf32x4(x, _mm_maskz_loadu_ps(r_mask(2, rows, km), ar[2] + p), 2);
        x = _mm512_insertf32x4(x, _mm_maskz_loadu_ps(r_mask(3, rows, km), ar[3] + p), 3);
        const float *y = bq + p * 16;
        acc0 = _mm512_fmadd_ps(_mm512_permute_ps(x, 0x00), _mm512_loadu_ps(y), acc0);
        acc1 = _mm512_fmadd_ps(_mm512_permute_ps(x, 0x55), _mm512_loadu_ps(y + 16), acc1);
        acc0 = _mm512_fmadd_ps(_mm512_permute_ps(x, 0xAA), _mm512_loadu_ps(y + 32), acc0);
        acc1 = _mm512_fmadd_ps(_mm512_permute_ps(x, 0xFF), _mm512_loadu_ps(y + 48), acc1);
    }
    __m512 v = _mm512_mul_ps(va, _mm512_add_ps(acc0, acc1));
    /* beta 0 must not read C, which may hold NaN (BLAS semantics) */
    if (!beta_zero) {
        __m512 old = _mm512_castps128_ps512(_mm_maskz_loadu_ps(cm[0], cr[0]));
        old = _mm512_insertf32x4(old, _mm_maskz_loadu_ps(cm[1], cr[1]), 1);
        old = _mm512_insertf32x4(old, _mm_maskz_loadu_ps(cm[2], cr[2]), 2);
        old = _mm512_insertf32x4(old, _mm_maskz_loadu_ps(cm[3], cr[3]), 3);
        v = _mm512_fmadd_ps(vb, old, v);
    }
    _mm_mask_storeu_ps(cr[0], cm[0], _mm512_castps512_ps128(v));
    _mm_mask_storeu_ps(cr[1], cm[1], _mm512_extractf32x4_ps(v, 1));
    _mm_mask_storeu_ps(cr[2], cm[2], _mm512_extractf32x4_ps(v, 2));
    _mm_mask_storeu_ps(cr[3], cm[3], _mm512_extractf32x4_ps(v, 3));
}

/* C (m, n) = alpha A (m, k) op(B) + beta C for n <= 4 in float, with op(B)
 * packed as BQ (see group4_f32). */
TINY_TARGET static void rows4_f32(int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                                  int64_t lda, const float *bq, float beta, float *c,
                                  int64_t ldc)
{
    const __mmask8 nmask = (__mmask8)((1u << n) - 1);
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    int64_t i = 0;
    for (; i + 4 <= m; i += 4)
        group4_f32(4, k, va, vb, beta == 0, a + i * lda, lda, bq, c + i * ldc, ldc, nmask);
    if (i < m)
        group4_f32((int)(m - i), k, va, vb, beta == 0, a + i * lda, lda, bq, c + i * ldc, ldc,
                   nmask);
}

TINY_TARGET static void rows_f64(int64_t m, int64_t n, int64_t k, double alpha, const double *a,
                                 int64_t lda, const double *bp, double beta, double *c,
                                 int64_t ldc)
{
    const __mmask8 mask = (__mmask8)((1u << n) - 1);
    int64_t i = 0;
    if (n <= 4) {
        for (; i + TINY_ROWS <= m; i += TINY_ROWS)
            row_step4_f64(TINY_ROWS, k, alpha, a + i * lda, lda, bp, beta, c + i * ldc, ldc, mask);
        for (; i < m; i++)
            row_step4_f64(1, k, alpha, a + i * lda, lda, bp, beta, c + i * ldc, ldc, mask);
    } else {
        for (; i + TINY_ROWS <= m; i += TINY_ROWS)
            row_step8_f64(TINY_ROWS, k, alpha, a + i * lda, lda, bp, beta, c + i * ldc, ldc, mask);
        for (; i < m; i++)
            row_step8_f64(1, k, alpha, a + i * lda, lda, bp, beta, c + i * ldc, ldc, mask);
    }
}


/* Packs op(B) (k x n) as `rows` rows of `width`, with column j of a row
 * holding column j % repeat of op(B), zero past n and past k. */
#define TINY_PACK(suffix, real)                                                              \
    static void pack_##suffix(bool trans_b, int64_t n, int64_t k, const real *b, int64_t ldb, \
                              int64_t rows, int64_t width, int64_t repeat, real *packed)     \
    {                                                                                        \
        for (int64_t p = 0; p < rows; p++)                                                   \
            for (int64_t j = 0; j < width; j++) {                                            \
                const int64_t col = j % repeat;                                              \
                packed[p * width + j] = p >= k || col >= n ? 0                               \
                                        : trans_b          ? b[col * ldb + p]                \
                                                           : b[p * ldb + col];               \
            }                                                                                \
    }
TINY_PACK(f32, float)
TINY_PACK(f64, double)

static bool rows_entry_f32(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                           const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                           float *c, int64_t ldc)
{
    if (!ax_cpu_kernels_avx512vl())
        return false;
    if (n <= 4) {
        float bq[TINY_MAX_K * 16];
        pack_f32(trans_b, n, k, b, ldb, (k + 3) / 4 * 4, 16, 4, bq);
        rows4_f32(m, n, k, alpha, a, lda, bq, beta, c, ldc);
    } else {
        float bp[TINY_MAX_K * TINY_MAX_N];
        pack_f32(trans_b, n, k, b, ldb, k, TINY_MAX_N, TINY_MAX_N, bp);
        rows_f32(m, n, k, alpha, a, lda, bp, beta, c, ldc);
    }
    return true;
}

static bool rows_entry_f64(bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                           const double *a, int64_t lda, const double *b, int64_t ldb,
                           double beta, double *c, int64_t ldc)
{
    if (!ax_cpu_kernels_avx512vl())
        return false;
    double bp[TINY_MAX_K * TINY_MAX_N];
    pack_f64(trans_b, n, k, b, ldb, k, TINY_MAX_N, TINY_MAX_N, bp);
    rows_f64(m, n, k, alpha, a, lda, bp, beta, c, ldc);
    return true;
}

#else /* not x86-64 with GCC or Clang: the BLAS does these shapes */

#define TINY_ROWS_ENTRY(suffix, real)                                                        \
    static bool rows_entry_##suffix(bool trans_b, int64_t m, int64_t n, int64_t k,           \
                                    real alpha, const real *a, int64_t lda, const real *b,   \
                                    int64_t ldb, real beta, real *c, int64_t ldc)            \
    {                                                                                        \
        return false;                                                                        \
    }
TINY_ROWS_ENTRY(f32, float)
TINY_ROWS_ENTRY(f64, double)

#endif

/* C (MM, n) = alpha A (k, MM)^T B (k, n) + beta C: the sums stay in
 * registers while A and B stream past once. Two rows of B go at a time
 * into separate sums, added at the end (a fixed order). Rows of B are read
 * NV wide where that stays inside B; the lanes past n then hold the next
 * row's values, whose sums are never stored. The last rows are copied. */
#define TINY_REDUCE_KERNEL(suffix, real, fma_fn)                                             \
    TINY_INLINE void reduce_##suffix(int MM, int NV, int64_t n, int64_t k, real alpha,       \
                                     const real *a, int64_t lda, const real *b, int64_t ldb, \
                                     real beta, real *c, int64_t ldc)                        \
    {                                                                                        \
        real acc0[TINY_MAX_M][TINY_MAX_N] = {{0}}, acc1[TINY_MAX_M][TINY_MAX_N] = {{0}};     \
        /* rows p with p ldb + NV <= (k - 1) ldb + n, the end of B */                        \
        const int64_t end = (k - 1) * ldb + n;                                               \
        int64_t safe = end >= NV ? (end - NV) / ldb + 1 : 0;                                 \
        if (safe > k)                                                                        \
            safe = k;                                                                        \
        int64_t p = 0;                                                                       \
        for (; p + 2 <= safe; p += 2) {                                                      \
            const real *b0 = b + p * ldb, *b1 = b0 + ldb;                                    \
            const real *a0 = a + p * lda, *a1 = a0 + lda;                                    \
            for (int i = 0; i < MM; i++) {                                                   \
                const real x0 = a0[i], x1 = a1[i];                                           \
                _Pragma("omp simd") for (int j = 0; j < NV; j++) {                           \
                    acc0[i][j] = fma_fn(x0, b0[j], acc0[i][j]);                              \
                    acc1[i][j] = fma_fn(x1, b1[j], acc1[i][j]);                              \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
        for (; p < k; p++) {                                                                 \
            real row[TINY_MAX_N] = {0};                                                      \
            for (int64_t j = 0; j < n; j++)                                                  \
                row[j] = b[p * ldb + j];                                                     \
            for (int i = 0; i < MM; i++) {                                                   \
                const real x = a[p * lda + i];                                               \
                _Pragma("omp simd") for (int j = 0; j < NV; j++) acc0[i][j] =                \
                    fma_fn(x, row[j], acc0[i][j]);                                           \
            }                                                                                \
        }                                                                                    \
        for (int i = 0; i < MM; i++) {                                                       \
            real *out = c + i * ldc;                                                         \
            if (beta == 0)                                                                   \
                for (int64_t j = 0; j < n; j++)                                              \
                    out[j] = alpha * (acc0[i][j] + acc1[i][j]);                              \
            else                                                                             \
                for (int64_t j = 0; j < n; j++)                                              \
                    out[j] = alpha * (acc0[i][j] + acc1[i][j]) + beta * out[j];              \
        }                                                                                    \
    }

/* The entry: picks a kernel and makes its widths constants. */
#define TINY_ENTRY(suffix, real)                                                             \
    bool ax_tiny_gemm_##suffix(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,  \
                               real alpha, const real *a, int64_t lda, const real *b,        \
                               int64_t ldb, real beta, real *c, int64_t ldc)                 \
    {                                                                                        \
        if (disabled || m <= 0 || n <= 0 || k <= 0 || n > TINY_MAX_N)                        \
            return false;                                                                    \
        /* leading dimensions shorter than a row are the BLAS's to report */                 \
        if (lda < (trans_a ? m : k) || ldb < (trans_b ? k : n) || ldc < n)                   \
            return false;                                                                    \
        if (!trans_a && k <= TINY_MAX_K && n >= 2)                                           \
            return rows_entry_##suffix(trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); \
        if (trans_a && !trans_b && m <= TINY_MAX_M) {                                        \
            const int nv = n <= 4 ? 4 : 8;                                                   \
            switch (m * 16 + nv) {                                                           \
            case 16 + 4: reduce_##suffix(1, 4, n, k, alpha, a, lda, b, ldb, beta, c, ldc); break; \
            case 16 + 8: reduce_##suffix(1, 8, n, k, alpha, a, lda, b, ldb, beta, c, ldc); break; \
            case 32 + 4: reduce_##suffix(2, 4, n, k, alpha, a, lda, b, ldb, beta, c, ldc); break; \
            case 32 + 8: reduce_##suffix(2, 8, n, k, alpha, a, lda, b, ldb, beta, c, ldc); break; \
            case 48 + 4: reduce_##suffix(3, 4, n, k, alpha, a, lda, b, ldb, beta, c, ldc); break; \
            case 48 + 8: reduce_##suffix(3, 8, n, k, alpha, a, lda, b, ldb, beta, c, ldc); break; \
            case 64 + 4: reduce_##suffix(4, 4, n, k, alpha, a, lda, b, ldb, beta, c, ldc); break; \
            default: reduce_##suffix(4, 8, n, k, alpha, a, lda, b, ldb, beta, c, ldc); break;  \
            }                                                                                \
            return true;                                                                     \
        }                                                                                    \
        return false;                                                                        \
    }

TINY_REDUCE_KERNEL(f32, float, fmaf)
TINY_ENTRY(f32, float)

TINY_REDUCE_KERNEL(f64, double, fma)
TINY_ENTRY(f64, double)
