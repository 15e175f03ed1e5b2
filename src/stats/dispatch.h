/* dispatch.h: which kernels the statistics run. On x86-64 CPUs with
 * AVX-512 (checked at run time) entropy-mi and tensor-mean use hand-written
 * 16-lane kernels; elsewhere, portable ones (libmvec `omp simd` loops and
 * the BLAS). Tests and benchmarks can force the portable kernels to check
 * and time both on one machine. */
#ifndef AX_STATS_DISPATCH_H
#define AX_STATS_DISPATCH_H

#include <stdbool.h>

/* True when the AVX-512 kernels are compiled in, the CPU has AVX-512F and
 * the portable kernels are not forced. */
bool ax_stats_use_avx512(void);

/* Forces (true) or releases (false) the portable kernels; not thread-safe:
 * call it between statistics, not during one. */
void ax_stats_force_portable(bool portable);

/* AX_STATS_AVX512 is defined where the AVX-512 kernels can be compiled
 * (GCC or Clang on x86-64). */
#if defined(__x86_64__) && defined(__GNUC__)
#define AX_STATS_AVX512 1
#endif

#endif
