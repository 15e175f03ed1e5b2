/* amx_gemm.h: bf16's GEMMs on AMX's tiles (TDPBF16PS), for CPUs that have
 * them (amx_gemm.c). oneDNN's bf16 matmul in fixed blocks (onednn_matmul.h)
 * ran LeNet's dense layer (batch 128, 1024 -> 1024) at 140-250 GFLOP/s on a
 * 2-core AMX Xeon, its weight gradient (k = 128) slowest: its AMX kernels
 * take only dense blocks, and the blocks are views. Here each 32 x 32 block
 * of C is one thread's whole sum over k in a fixed order, so the bits
 * never depend on the thread count. The mode (hardware, emulated, off) is
 * conv_weight_amx.h's. */
#ifndef AX_BACKEND_CPU_AMX_GEMM_H
#define AX_BACKEND_CPU_AMX_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/cpu/bf16_gemm.h"

/* Whether the kernel takes a product of this size: an AMX mode other than
 * off, AXON_BF16_KERNEL unset, empty or auto (a kernel it names runs every
 * bf16 GEMM), and at least 2^20 multiply-adds (smaller ones keep
 * bf16_gemm.c's kernels). */
bool ax_amx_gemm_takes(int64_t m, int64_t n, int64_t k);

/* C (m, n) = alpha op(A) op(B) + beta C, row-major as cblas_sgemm, with
 * op(A) and op(B) rounded to bfloat16 (bf16_round.h), their products exact
 * and summed in float32 by the tiles (which treat subnormal bf16 inputs and
 * float32 results as zero, as AMX does) in blocks of 32 along k, in order;
 * then each element alpha times the sum, plus beta times C where beta is
 * not 0 (C is not read where it is 0). The operands are packed in
 * workspace. False, with nothing written, when the kernel does not take
 * the product or memory runs out. */
bool ax_amx_gemm(ax_bf16_workspace *workspace, bool trans_a, bool trans_b, int64_t m, int64_t n,
                 int64_t k, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                 float beta, float *c, int64_t ldc);

#endif
