/* skinny_gemm.h: AVX-512 kernels for the two GEMM shapes where one side has
 * 5 to 8 rows, the shapes of a narrow first hidden layer over wide inputs
 * (the galaxy classifier 1024-8-3: 2700 x 1024 inputs, 8 hidden units):
 *   forward   C (m, n) = alpha A (m, k) B (n, k)^T + beta C,  n in 5..8
 *   gradient  C (m, n) = alpha A (k, m)^T B (k, n) + beta C,  m in 5..8
 * The BLAS packs and blocks for large square products; here the big
 * operand is read once, in order, with the 8-wide side held in registers,
 * which takes the product from 4-7x the memory-bandwidth bound to near it
 * (docs/notes/galaxy.md). Other shapes, and CPUs without AVX-512F, are left to
 * the BLAS. */
#ifndef AX_BACKEND_CPU_SKINNY_GEMM_H
#define AX_BACKEND_CPU_SKINNY_GEMM_H

#include <stdbool.h>
#include <stdint.h>

/* Computes C as cblas_?gemm (row-major) would and returns true when the
 * shape and the CPU suit the kernels; returns false, touching nothing,
 * otherwise. */
bool ax_skinny_gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                        float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                        float beta, float *c, int64_t ldc);
bool ax_skinny_gemm_f64(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                        double alpha, const double *a, int64_t lda, const double *b,
                        int64_t ldb, double beta, double *c, int64_t ldc);

/* Turns the kernels off (true) or back on (false), so that tests and
 * benchmarks can compare them with the BLAS in one process; not
 * thread-safe: call it between products. */
void ax_skinny_gemm_disable(bool disabled);

#endif
