/* long_gemm.h: an AVX-512 kernel for a small product summed over a long
 * inner dimension,
 *   C (m, n) = alpha A (k, m)^T B (k, n) + beta C,
 *   m a multiple of 16 up to 64, n up to 32, k at least 4096,
 * the weight gradient of a convolution with few filters and a small window
 * (LeNet's first layer: 32 filters x 25 window values over 73,728
 * positions of a batch of 128). The BLAS, handed k in blocks of 256 for
 * thread invariance (cpu_backend.c), spends such a product in per-call
 * overhead and in re-reading C; here each tile of C stays in registers
 * while a fixed quarter of k streams by. Each quarter's sums run in one
 * order on one thread and the quarters are added in a fixed order, so the
 * result does not depend on the thread count. Other shapes, float64 and
 * CPUs without AVX-512F are left to the other kernels and the BLAS. */
#ifndef AX_BACKEND_CPU_LONG_GEMM_H
#define AX_BACKEND_CPU_LONG_GEMM_H

#include <stdbool.h>
#include <stdint.h>

/* Computes C as cblas_sgemm (row-major) would, with beta 0 never reading
 * C, and returns true when the shape and the CPU suit the kernel; returns
 * false, touching nothing, otherwise. */
bool ax_long_gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                      float *c, int64_t ldc);

/* As ax_long_gemm_f32 from any k up: for a caller that cuts a long sum
 * into pieces itself and runs each on one thread (a slice of a
 * convolution's weight gradient, conv_weight_gradient.c: LeNet's first
 * layer in slices of 4 images, k = 2,304), where the BLAS, handed the
 * piece in blocks of 256 rows, spends more in per-call work than this
 * kernel does. */
bool ax_long_gemm_f32_any_k(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                            float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                            float beta, float *c, int64_t ldc);

/* Turns the kernel off (true) or back on (false), so that tests and
 * benchmarks can compare it with the BLAS in one process; not
 * thread-safe: call it between products. */
void ax_long_gemm_disable(bool disabled);

#endif
