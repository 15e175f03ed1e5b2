/* bf16_gemm.h: float32 GEMMs whose operands are rounded to bfloat16 (round
 * to nearest even) and whose products are summed in float32: the GEMM of
 * AX_PRECISION_BF16, as PyTorch's CPU autocast runs nn.Linear.
 *
 * On a CPU with AVX512_BF16 the product runs on VDPBF16PS (two bf16
 * products per float32 lane and instruction: twice the float32 FMA rate),
 * with the operands converted while they are packed for the kernel. Without
 * it, or with AXON_BF16_EMULATE=1 in the environment, the operands are
 * rounded to bfloat16 values held in float32 and multiplied by the BLAS's
 * sgemm: the same roundings (a product of two bf16 values is exact in
 * float32), float32's speed. docs/blas-choice.md has the measurements. */
#ifndef AX_BACKEND_CPU_BF16_GEMM_H
#define AX_BACKEND_CPU_BF16_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Scratch memory for the converted operands, grown on first use to the
 * largest product seen (so a training loop allocates in its first step
 * only). Zero-initialise; free with ax_bf16_workspace_free. */
typedef struct ax_bf16_workspace {
    void *memory;
    size_t bytes;
} ax_bf16_workspace;

void ax_bf16_workspace_free(ax_bf16_workspace *workspace);

/* C (m, n) = alpha op(A) op(B) + beta C, row-major as cblas_sgemm, with
 * op(A) and op(B) rounded to bfloat16 and float32 accumulation. */
void ax_bf16_gemm(ax_bf16_workspace *workspace, bool trans_a, bool trans_b, int64_t m, int64_t n,
                  int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                  int64_t ldb, float beta, float *c, int64_t ldc);

/* True when this CPU has AVX512_BF16 (and AVX512BW) and the environment
 * does not set AXON_BF16_EMULATE to something other than 0. */
bool ax_bf16_cpu_native(void);

/* Tests and benchmarks: true runs the emulation even where the native
 * kernel could run; false goes back to the CPU's answer. Not thread-safe:
 * call it between products. */
void ax_bf16_gemm_force_emulation(bool emulate);

/* x rounded to the nearest bfloat16 (ties to even; NaN stays NaN), as float. */
float ax_bf16_round(float x);

#endif
