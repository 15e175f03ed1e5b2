/* peak.c: what this machine could do at best, found by measuring rather
 * than by trusting /proc/cpuinfo (a VM reports its TSC's nominal 2.1 GHz for
 * a core that runs at 3.6): the clock from a chain of dependent integer
 * additions of a register (one per cycle on every x86 core since the
 * Pentium Pro), the
 * vector FMA throughput from independent FMA chains on every core. The GEMM
 * rate at a network's own shapes is core/gemm_rate.c. */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "perf/peak.h"

/* Seconds for `cycles` dependent additions: one cycle each. The addend is
 * a register, not an immediate: Golden Cove and later Intel cores fold
 * chains of immediate additions in the renamer (measured here: "add $1"
 * chains ran at 11.9 "GHz" on a 3.0 GHz core, which made axon report one
 * FMA pipe at 11.2 GHz and a float32 peak of 715 GFLOP/s for 384). */
static double time_dependent_adds(long cycles)
{
    double start = ax_seconds_now();
    long x = 0, one = 1;
    for (long i = 0; i < cycles / 8; i++)
        __asm__ volatile("add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
                         "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
                         : "+r"(x)
                         : "r"(one));
    return ax_seconds_now() - start;
}

static double measure_clock_hz(void)
{
    const long cycles = 200000000;
    time_dependent_adds(cycles / 4); /* let the core reach its working clock */
    double best = INFINITY;
    for (int i = 0; i < 3; i++) {
        double seconds = time_dependent_adds(cycles);
        best = seconds < best ? seconds : best;
    }
    return (double)cycles / best;
}

/* 12 independent FMA chains hide a 4-cycle latency on two FMA pipes. */
__attribute__((target("avx512f"))) static double fma_flops_avx512(long iterations)
{
    __m512 a[12];
    const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++)
        a[i] = _mm512_set1_ps((float)i);
    double start = ax_seconds_now();
    for (long n = 0; n < iterations; n++)
        for (int i = 0; i < 12; i++)
            a[i] = _mm512_fmadd_ps(a[i], b, c);
    double seconds = ax_seconds_now() - start;
    float sink[16];
    __m512 sum = a[0];
    for (int i = 1; i < 12; i++)
        sum = _mm512_add_ps(sum, a[i]);
    _mm512_storeu_ps(sink, sum);
    __asm__ volatile("" : : "r"(sink) : "memory");
    return (double)iterations * 12.0 * 16.0 * 2.0 / seconds;
}

__attribute__((target("avx2,fma"))) static double fma_flops_avx2(long iterations)
{
    __m256 a[12];
    const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++)
        a[i] = _mm256_set1_ps((float)i);
    double start = ax_seconds_now();
    for (long n = 0; n < iterations; n++)
        for (int i = 0; i < 12; i++)
            a[i] = _mm256_fmadd_ps(a[i], b, c);
    double seconds = ax_seconds_now() - start;
    float sink[8];
    __m256 sum = a[0];
    for (int i = 1; i < 12; i++)
        sum = _mm256_add_ps(sum, a[i]);
    _mm256_storeu_ps(sink, sum);
    __asm__ volatile("" : : "r"(sink) : "memory");
    return (double)iterations * 12.0 * 8.0 * 2.0 / seconds;
}

static bool cpu_has_width(int vector_bits)
{
    __builtin_cpu_init();
    return vector_bits == 512 ? __builtin_cpu_supports("avx512f")
                              : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* One core's float32 GFLOP/s on one FMA pipe at the measured clock. */
static double one_pipe_gflops(const ax_peak *peak)
{
    return peak->vector_bits / 32.0 * 2.0 * peak->clock_ghz;
}

static void set_fma_units(ax_peak *peak, int units)
{
    peak->fma_units = units < 1 ? 1 : units;
    peak->f32_gflops = one_pipe_gflops(peak) * peak->fma_units * peak->cores;
    peak->f64_gflops = peak->f32_gflops / 2.0;
}

/* The widest vectors the CPU has; one without AVX2 is refused at 256. */
ax_status ax_machine_peak(ax_peak *out) { return ax_machine_peak_at(cpu_has_width(512) ? 512 : 256, out); }

ax_status ax_machine_peak_at(int vector_bits, ax_peak *out)
{
    memset(out, 0, sizeof *out);
    if (vector_bits != 256 && vector_bits != 512)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "a peak at %d-bit vectors: axon measures 256 (AVX2) or 512 (AVX-512)",
                       vector_bits);
    if (!cpu_has_width(vector_bits))
        return ax_fail(AX_STATUS_UNSUPPORTED, "peak measurement at %d bits needs %s, which this CPU lacks",
                       vector_bits, vector_bits == 512 ? "AVX-512F" : "AVX2 and FMA");
    const bool avx512 = vector_bits == 512;
    out->vector_bits = vector_bits;
    out->cores = ax_threads();
    out->clock_ghz = measure_clock_hz() * 1e-9;
    /* each thread's best of three runs: a virtual machine's cores drift
     * between a fast state and one at half the FMA rate within seconds (a
     * 2-core AMX Xeon: one run alone read one FMA pipe there, a peak of
     * 160 GFLOP/s for 317, and the runs' percentages of it up to 137 %) */
    const long iterations = 8000000;
    double total = 0.0, fastest = 0.0;
#pragma omp parallel num_threads(out->cores) reduction(+ : total) reduction(max : fastest)
    {
        double rate = 0.0;
        for (int run = 0; run < 3; run++) {
            const double r = avx512 ? fma_flops_avx512(iterations) : fma_flops_avx2(iterations);
            rate = r > rate ? r : rate;
        }
        total += rate;
        fastest = rate;
    }
    out->measured_f32_gflops = total * 1e-9;
    /* FMA pipes per core: the fastest thread's rate over one pipe's rate at
     * this clock, or the cores' together where that says more (the same
     * machine once read one pipe on thread 0 while both threads together
     * ran at 1.6 pipes a core: a theoretical peak below the loop's) */
    const double pipe_gflops = one_pipe_gflops(out);
    const long by_fastest = lround(fastest * 1e-9 / pipe_gflops);
    const long by_total = lround(out->measured_f32_gflops / (pipe_gflops * out->cores));
    set_fma_units(out, (int)(by_fastest > by_total ? by_fastest : by_total));
    out->method = "clock from dependent register additions; FMA pipes from the throughput of "
                  "12 independent vector FMA chains per core; peak = lanes x 2 x pipes x clock x cores";
    return AX_STATUS_OK;
}

double ax_peak_bf16_gflops(const ax_peak *peak) { return ax_peak_bf16_for(peak, ax_bf16_support_get()); }

double ax_peak_bf16_for(const ax_peak *peak, ax_bf16_support bf16)
{
    /* VDPBF16PS does two multiply-adds per lane but need not issue as often
     * as an FMA: the bf16 probe measured how it compares. */
    return bf16.native && bf16.speed_ratio > 0.0 ? bf16.speed_ratio * peak->f32_gflops
           : bf16.native                        ? 2.0 * peak->f32_gflops
                                                : peak->f32_gflops;
}

bool ax_peak_at_least(ax_peak *peak, double f32_gflops)
{
    /* 10 % of slack for the clock's measurement, which can put an
     * operation at the peak a little above it */
    if (!(f32_gflops > 1.1 * peak->f32_gflops) || !(peak->clock_ghz > 0.0) || peak->cores < 1 ||
        peak->vector_bits < 128)
        return false;
    /* more than 64 pipes a core is no CPU's: a rate mismeasured, not a peak */
    const double units = ceil(f32_gflops / (1.1 * one_pipe_gflops(peak) * peak->cores));
    if (!(units <= 64.0))
        return false;
    set_fma_units(peak, (int)units);
    return true;
}
