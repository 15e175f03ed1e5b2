/* tiny_gemm.h: kernels for GEMMs so small that OpenBLAS's per-call work
 * (argument checks, packing, thread dispatch) costs more than the
 * arithmetic: 2 to 8 columns with an inner dimension of at most 16, or a
 * result of at most 4 x 8 summed over a long inner dimension. These are
 * the shapes of a small output layer (physics classifiers with 1 to 3
 * outputs; the galaxy classifier, 1024-8-3, on 2700 rows):
 *   forward         C (m, n) = A (m, k) B (n, k)^T,  2 <= n <= 8, k <= 16
 *   input gradient  C (m, n) = A (m, k) B (k, n),    2 <= n <= 8, k <= 16
 *   weight gradient C (m, n) = A (k, m)^T B (k, n),  m <= 4, n <= 8, any k
 * The first two need AVX-512VL (masked stores) and are left to the BLAS
 * without it; the third is plain C. One column (n = 1) is a matrix-vector
 * product, which the BLAS does as fast. Each element's sum runs over the
 * inner dimension in one fixed order on one thread, so results never
 * depend on the thread count. Everything else is left to the skinny
 * kernels and the BLAS (docs/notes/galaxy.md). */
#ifndef AX_BACKEND_CPU_TINY_GEMM_H
#define AX_BACKEND_CPU_TINY_GEMM_H

#include <stdbool.h>
#include <stdint.h>

/* Computes C as cblas_?gemm (row-major) would, with beta 0 never reading
 * C, and returns true when the shape suits the kernels; returns false,
 * touching nothing, otherwise. */
bool ax_tiny_gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                      float *c, int64_t ldc);
bool ax_tiny_gemm_f64(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                      const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                      double *c, int64_t ldc);

/* Turns the kernels off (true) or back on (false), so that tests and
 * benchmarks can compare them with the BLAS in one process; not
 * thread-safe: call it between products. */
void ax_tiny_gemm_disable(bool disabled);

#endif
