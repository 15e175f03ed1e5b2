/* test_reference.h: what the kernel tests share: reproducible values and a
 * float64 GEMM to compare with (test_skinny_gemm, test_tiny_gemm,
 * test_narrow_kernels). */
#ifndef AX_TEST_REFERENCE_H
#define AX_TEST_REFERENCE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* Reproducible values in [-1, 1). */
static inline double value_at(uint64_t i, uint64_t seed)
{
    uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 29;
    return (double)(h >> 11) / (double)(1ull << 52) - 1.0;
}

/* C (m, n) = alpha op(A) op(B) + beta C in float64, and the sum of |terms|
 * per element, which bounds the rounding of any summation order. */
static inline void reference_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                                  double alpha, const double *a, int64_t lda, const double *b,
                                  int64_t ldb, double beta, const double *c_in, int64_t ldc,
                                  double *c, double *magnitude)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double sum = 0, size = 0;
            for (int64_t p = 0; p < k; p++) {
                const double x = trans_a ? a[p * lda + i] : a[i * lda + p];
                const double y = trans_b ? b[j * ldb + p] : b[p * ldb + j];
                sum += x * y, size += fabs(x * y);
            }
            /* beta 0: C holds NaN, which must not reach the result */
            const double old = beta == 0 ? 0 : beta * c_in[i * ldc + j];
            c[i * n + j] = alpha * sum + old;
            magnitude[i * n + j] = fabs(alpha) * size + fabs(old);
        }
}

/* The largest error of C (m, n, leading dimension ldc) from double or
 * float storage against the reference, relative to each element's
 * magnitude; a NaN (a read of C under beta 0) counts as the worst. */
#define REFERENCE_WORST_ERROR(name, real)                                                      \
    static inline double name(const real *c, int64_t ldc, int64_t m, int64_t n,              \
                              const double *expected, const double *magnitude)                \
    {                                                                                          \
        double worst = 0;                                                                      \
        for (int64_t i = 0; i < m; i++)                                                        \
            for (int64_t j = 0; j < n; j++) {                                                  \
                const double e = fabs(c[i * ldc + j] - expected[i * n + j]) /                  \
                                 (magnitude[i * n + j] + 1e-300);                              \
                worst = isnan(e) ? INFINITY : fmax(worst, e);                                  \
            }                                                                                  \
        return worst;                                                                          \
    }
REFERENCE_WORST_ERROR(worst_error_f64, double)
REFERENCE_WORST_ERROR(worst_error_f32, float)

#endif
