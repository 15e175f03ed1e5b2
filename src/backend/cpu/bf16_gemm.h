/* bf16_gemm.h: float32 GEMMs whose operands are rounded to bfloat16 (round
 * to nearest even) and whose products are summed in float32: the GEMM of
 * AX_PRECISION_BF16, as PyTorch's CPU autocast runs nn.Linear.
 *
 * Native: VDPBF16PS (two bf16 products per float32 lane and instruction),
 * with the operands converted while they are packed for the kernel.
 * Emulated: the operands rounded to bfloat16 values held in float32 and
 * multiplied by the BLAS's sgemm: the same roundings (a product of two bf16
 * values is exact in float32) at float32's speed. Native runs where the CPU
 * has AVX512_BF16 and a probe finds VDPBF16PS faster than float32 FMAs;
 * AXON_BF16_KERNEL=native|emulated|auto overrides; without it,
 * AXON_CPU_KERNELS=generic means emulated. docs/notes/blas-choice.md has
 * the measurements. */
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
/* The workspace at least bytes long (64-byte aligned; its contents
 * dropped when it grows), or NULL when that cannot be had. */
void *ax_bf16_workspace_reserve(ax_bf16_workspace *workspace, size_t bytes);

/* A float32 GEMM with cblas_sgemm's arguments (row-major). */
typedef void (*ax_bf16_sgemm)(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                              float alpha, const float *a, int64_t lda, const float *b,
                              int64_t ldb, float beta, float *c, int64_t ldc);

/* C (m, n) = alpha op(A) op(B) + beta C, row-major as cblas_sgemm, with
 * op(A) and op(B) rounded to bfloat16 and float32 accumulation. The
 * emulation multiplies the rounded operands with sgemm (NULL:
 * cblas_sgemm). */
void ax_bf16_gemm(ax_bf16_workspace *workspace, ax_bf16_sgemm sgemm, bool trans_a, bool trans_b, int64_t m, int64_t n,
                  int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                  int64_t ldb, float beta, float *c, int64_t ldc);

/* Which kernel bf16 GEMMs run on, and why (decided once per process). */
typedef struct ax_bf16_choice {
    bool instructions;  /* the CPU has AVX512_BF16 (and AVX512BW) */
    bool native;        /* the VDPBF16PS kernel runs; else the emulation */
    double speed_ratio; /* VDPBF16PS multiply-adds per second over float32
                           FMAs', measured; 0 when not measured */
    const char *reason; /* one line for the user */
} ax_bf16_choice;
ax_bf16_choice ax_bf16_cpu_choice(void);
/* ax_bf16_cpu_choice().native */
bool ax_bf16_cpu_native(void);
/* The CPU has AVX512_BF16 and AVX512BW (the native kernel can run). */
bool ax_bf16_cpu_has_instructions(void);

/* Tests and benchmarks: the kernel of the following products whatever was
 * chosen (NATIVE only where the instructions exist, else emulated). Not
 * thread-safe: call it between products. */
typedef enum ax_bf16_kernel {
    AX_BF16_KERNEL_CHOSEN = 0,
    AX_BF16_KERNEL_EMULATED = 1,
    AX_BF16_KERNEL_NATIVE = -1,
} ax_bf16_kernel;
void ax_bf16_gemm_force(ax_bf16_kernel kernel);

/* x rounded to the nearest bfloat16 (ties to even; NaN stays NaN), as float. */
float ax_bf16_round(float x);

#endif
