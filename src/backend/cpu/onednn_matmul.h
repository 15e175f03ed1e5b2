/* onednn_matmul.h: GEMMs on oneDNN's matmul, cut into fixed blocks of the
 * output so that their bits never follow the thread count.
 *
 * oneDNN's matmul splits its work by the thread count it is created under,
 * and may split the sum over k. Here the output is cut into fixed blocks
 * (at most 256 rows by 64 columns, whatever the thread count), each block
 * is one single-threaded primitive's whole product over k, and threads
 * take whole blocks: the bits depend on the shape and the CPU alone.
 *
 * bf16 (the bf16 backend's GEMMs, chosen on CPUs with AMX): operands
 * rounded to bfloat16 as bf16_round.h does it, products exact, sums
 * float32, as bf16_gemm.h's kernels. oneDNN picks each block's kernel: on
 * the lent Sapphire Rapids its bf16 gemm (gemm:jit, VDPBF16PS) at about 2
 * TFLOP/s on 16 cores for LeNet's dense products, where bf16_gemm.c's
 * emulation ran OpenBLAS's sgemm at 0.3 (dev/amx_matmul.c).
 *
 * float32 (the CPU backend's forward products x W^T of 2^24 multiply-adds
 * or more on AVX-512 CPUs): oneDNN's brgemm kernels on dense blocks, 1.4x
 * OpenBLAS's sgemm for LeNet's 128 x 1024 x 1024 on the 2-core Xeon; its
 * weight gradient and input gradient shapes were no faster there and stay
 * with the BLAS (docs/notes/conv.md). */
#ifndef AX_BACKEND_CPU_ONEDNN_MATMUL_H
#define AX_BACKEND_CPU_ONEDNN_MATMUL_H

#include <stdbool.h>
#include <stdint.h>

/* The primitives made so far, their streams and scratch memory. NULL until
 * the first call; free with ax_onednn_matmuls_free. */
typedef struct ax_onednn_matmuls ax_onednn_matmuls;
void ax_onednn_matmuls_free(ax_onednn_matmuls *matmuls);

/* Whether the bf16 backend's GEMMs go here (decided once per process):
 * AXON_BF16_KERNEL=onednn says yes on any CPU (oneDNN emulates bf16 where
 * the CPU lacks it: for tests), native or emulated say no; otherwise
 * (unset or auto) yes where oneDNN's effective ISA has AMX and
 * AXON_CPU_KERNELS is not generic. */
bool ax_onednn_bf16_matmul_chosen(void);
/* Whether the bf16 backend's product of this shape goes here: chosen, and
 * at least 2^24 multiply-adds. Below that (B1(a)'s 128 x 128 x 784) the
 * blocks' fixed costs (memory objects, a stream wait each) ate the gain on
 * the lent Sapphire Rapids, where B2's 1024 x 256 x 256 ran 1.17x the
 * emulation (docs/notes/conv.md). */
bool ax_onednn_bf16_matmul_takes(int64_t m, int64_t n, int64_t k);
/* Whether the float32 backend's product of this shape goes here: a
 * forward product (A (m, k) B (n, k)^T) of at least 2^24 multiply-adds on
 * a CPU with AVX-512 (not AXON_CPU_KERNELS=generic), unless
 * AXON_ONEDNN_MATMUL=off; =on takes every shape (for tests). */
bool ax_onednn_f32_matmul_takes(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k);
/* oneDNN's effective ISA has AMX (avx512_core_amx: its bf16 tiles, with
 * the OS's permission to use them). */
bool ax_onednn_cpu_has_amx(void);

/* C (m, n) = op(A) op(B), row-major as cblas_sgemm with alpha 1 and beta
 * 0: bf16 with op(A) and op(B) rounded to bfloat16, float32 as they are;
 * float32 sums. False, with C's contents unspecified, where this does not
 * take the product: another alpha or beta, empty shapes, or oneDNN unable
 * to make a primitive or memory running out; the caller then computes it
 * another way. */
bool ax_onednn_bf16_matmul(ax_onednn_matmuls **matmuls, bool trans_a, bool trans_b, int64_t m,
                           int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                           const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
bool ax_onednn_f32_matmul(ax_onednn_matmuls **matmuls, bool trans_a, bool trans_b, int64_t m,
                          int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                          const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* The implementation oneDNN chose for the last primitive made (e.g.
 * "gemm:jit", "brg:avx512_core"), for benchmarks and notes; "" before any. */
const char *ax_onednn_matmuls_kernel(const ax_onednn_matmuls *matmuls);

#endif
