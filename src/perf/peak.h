/* peak.h: the parts of the machine peak (peak.c) that ax_machine_peak and
 * ax_peak_bf16_gflops put together from what this CPU has, open to a test
 * that chooses them: the measurement at a vector width the CPU supports
 * (an AVX-512 machine runs the AVX2 loop of the machines without it), and
 * the bf16 peak for a given bf16 support (native or not, measured or not). */
#ifndef AX_PERF_PEAK_H
#define AX_PERF_PEAK_H

#include "axon.h"

/* ax_machine_peak at vector_bits 256 (AVX2 + FMA) or 512 (AVX-512F).
 * AX_STATUS_BAD_ARGUMENT for another width, AX_STATUS_UNSUPPORTED where the
 * CPU lacks the instructions; *out zeroed first either way. */
AX_NODISCARD ax_status ax_machine_peak_at(int vector_bits, ax_peak *out);

/* The bf16 GEMM peak beside peak for the support bf16 (ax_peak_bf16_gflops
 * passes ax_bf16_support_get()). */
double ax_peak_bf16_for(const ax_peak *peak, ax_bf16_support bf16);

#endif
