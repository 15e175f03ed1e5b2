/* cpu_features.h: the instruction sets the CPU backend's own kernels
 * (tiny_gemm.c, skinny_gemm.c, long_gemm.c) may use: the CPU's, or only
 * x86-64's baseline where AXON_CPU_KERNELS=generic asks for the path a CPU
 * without AVX-512 takes: every GEMM the kernels would take goes to the
 * BLAS (a user reproducing a run across CPUs, or a test running that path
 * on a CPU that has AVX-512), and bf16's GEMMs are emulated unless
 * AXON_BF16_KERNEL says otherwise (bf16_gemm.c). The BLAS's own kernels
 * are not axon's to choose (OPENBLAS_CORETYPE is; docs/cli.md). */
#ifndef AX_BACKEND_CPU_CPU_FEATURES_H
#define AX_BACKEND_CPU_CPU_FEATURES_H

#include <stdbool.h>
#include <stddef.h>

/* AXON_CPU_KERNELS=generic is set (read once per process, at the first
 * call; unset, empty or "auto": the CPU's kernels). */
bool ax_cpu_kernels_generic(void);

/* Whether AXON_CPU_KERNELS, read now, is unset, empty, "auto" or
 * "generic"; when it is not, why names it and the values it takes. */
bool ax_cpu_kernels_setting_valid(char *why, size_t capacity);

/* The CPU has AVX-512F, and the kernels may use it. */
bool ax_cpu_kernels_avx512f(void);
/* The CPU has AVX2, FMA, AVX-512F and AVX-512VL, and the kernels may use
 * them. */
bool ax_cpu_kernels_avx512vl(void);
/* The CPU has AVX-512F and AVX-512BW (16-bit lanes, e.g. masked bf16
 * rows), and the kernels may use them. */
bool ax_cpu_kernels_avx512bw(void);

#endif
