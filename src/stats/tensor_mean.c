/* tensor_mean.c: the third-order tensor mean of activations (docs/stats.md),
 *   A[i,j,k] = (1/n) sum_r fx[r,i] fy[r,j] fz[r,k],
 * as a GEMM. With K the row-wise Khatri-Rao product, K[r, i*d + j] =
 * fx[r,i] fy[r,j], A viewed as (d*d, d) is K^T fz / n: 2 n d^3 flops in
 * GEMM form instead of the Python case study's loop of n outer products.
 * Two kernels
 * (dispatch.h), neither of which makes K whole (32 MB at n = 8192, d = 32):
 *
 * AVX-512, d <= 64 (`direct`): a GEMM microkernel that forms K's entries on
 * the fly, fx[r,i] times a vector of fz[r,:] then one FMA per column j, so
 * nothing is stored or packed and 16 FMAs cost one load and one multiply.
 * Threads own disjoint slices out[i, :, :]. The BLAS's GEMM is slower here
 * because this GEMM is narrow (d = 32 columns) and K must be packed.
 *
 * Portable (no AVX-512, or d > 64): BLOCK rows of K at a time are built
 * into a buffer of about 1 MB (stays in L2/L3) and multiplied in with
 * beta = 1, so the work is n/BLOCK GEMMs of shape (d*d, BLOCK) x (BLOCK, d)
 * that accumulate into out. With several threads and a small tensor
 * (d <= 101), each thread takes a range of blocks into its own copy of A
 * (single-threaded GEMMs) and the copies are summed. */
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/cpu/blas.h"

#include "base/error.h"
#include "base/memory.h"
#include "stats/dispatch.h"
#include "stats/finite.h"

#ifdef AX_STATS_AVX512
#include <immintrin.h>
#endif

/* Floats in the Khatri-Rao block buffer (1 MB), and the most rows per block. */
enum { BLOCK_FLOATS = 1 << 18, BLOCK_MAX_ROWS = 256 };
/* Largest tensor (floats) of which each thread keeps its own copy (4 MB). */
enum { PRIVATE_TENSOR_FLOATS = 1 << 20 };

/* True when every element is finite: one vectorised pass (v * 0 is NaN
 * exactly for NaN and Inf). */
static bool all_finite(const float *a, int64_t count)
{
    float check = 0.0f;
#pragma omp parallel for simd reduction(+ : check) if (count > 1 << 20)
    for (int64_t i = 0; i < count; i++)
        check += a[i] * 0.0f;
    return !isnan(check);
}

/* out (d*d, d) = scale * sum over rows [first, last) of the outer products,
 * BLOCK rows at a time through the buffer k. With parallel_blocks the
 * Khatri-Rao block is built by all threads (the BLAS being threaded too);
 * otherwise the caller is one of several threads. */
static void accumulate(const float *fx, const float *fy, const float *fz, int64_t first,
                       int64_t last, int64_t d, int64_t block, float *k, float scale, float *out,
                       bool parallel_blocks)
{
    const int64_t dd = d * d;
    for (int64_t start = first; start < last; start += block) {
        const int64_t count = last - start < block ? last - start : block;
#pragma omp parallel for schedule(static) if (parallel_blocks && count * dd >= 16384)
        for (int64_t r = 0; r < count; r++) {
            const float *x = fx + (start + r) * d, *y = fy + (start + r) * d;
            float *row = k + r * dd;
            for (int64_t i = 0; i < d; i++) {
                const float xi = x[i];
#pragma omp simd
                for (int64_t j = 0; j < d; j++)
                    row[i * d + j] = xi * y[j];
            }
        }
        /* out (d*d, d) (+)= scale * K^T (d*d, count) x fz (count, d) */
        ax_blas.sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)dd, (int)d, (int)count, scale,
                      k, (int)dd, fz + start * d, (int)d, start == first ? 0.0f : 1.0f, out, (int)d);
    }
}

/* ---------------------------------------------------------------- AVX-512 */

#ifdef AX_STATS_AVX512
#define AVX512 __attribute__((target("avx512f")))

/* Rows per pass of the direct kernel: the slices of fx, fy, fz it streams
 * through per tile stay in L1 (3 * 64 rows * 32 floats = 24 KB of the 48 KB L1). */
enum { DIRECT_ROWS = 64, DIRECT_MAX_D = 64 };

/* One tile of the direct kernel: for columns j0 .. j0+JT-1 of fy and 16
 * columns k0.. of fz (kmask: those below d), over rows [r0, r1):
 *   out[i, j, k] += scale * sum_r fx[r,i] fy[r,j] fz[r,k].
 * JT accumulators of 16 lanes stay in registers; per row, w = fx[r,i] *
 * fz[r, k0..] (one multiply), then one FMA per j with fy[r,j] broadcast
 * from memory: the GEMM microkernel with the Khatri-Rao factor formed on
 * the fly, so K is never stored and nothing is packed. */
AVX512 static inline __attribute__((always_inline)) void
direct_tile(const float *restrict fx, const float *restrict fy, const float *restrict fz,
            int64_t r0, int64_t r1, int64_t d, int64_t i, int64_t j0, const int jt, int64_t k0,
            __mmask16 kmask, float scale, float *restrict out)
{
    __m512 acc[16];
#pragma GCC unroll 16
    for (int t = 0; t < jt; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t r = r0; r < r1; r++) {
        const float *y = fy + r * d + j0;
        const __m512 w = _mm512_mul_ps(_mm512_set1_ps(fx[r * d + i]),
                                       _mm512_maskz_loadu_ps(kmask, fz + r * d + k0));
#pragma GCC unroll 16
        for (int t = 0; t < jt; t++)
            acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(y[t]), w, acc[t]);
    }
    const __m512 s = _mm512_set1_ps(scale);
#pragma GCC unroll 16
    for (int t = 0; t < jt; t++) {
        float *o = out + (i * d + j0 + t) * d + k0;
        _mm512_mask_storeu_ps(o, kmask, _mm512_fmadd_ps(acc[t], s, _mm512_maskz_loadu_ps(kmask, o)));
    }
}

/* The slices out[i, :, :] for i in [i0, i1), over all n rows: row blocks
 * outermost so that each block's rows are read from memory once, then
 * tiles of 16, 8, 4, 2, 1 columns j (specialised copies of the tile) times
 * vectors of 16 columns k. */
AVX512 static void direct_slices(const float *fx, const float *fy, const float *fz, int64_t n,
                                 int64_t d, int64_t i0, int64_t i1, float scale, float *out)
{
    memset(out + i0 * d * d, 0, (size_t)((i1 - i0) * d * d) * sizeof *out);
    for (int64_t r0 = 0; r0 < n; r0 += DIRECT_ROWS) {
        const int64_t r1 = r0 + DIRECT_ROWS < n ? r0 + DIRECT_ROWS : n;
        for (int64_t i = i0; i < i1; i++)
            for (int64_t k0 = 0; k0 < d; k0 += 16) {
                const __mmask16 kmask =
                    d - k0 >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (d - k0)) - 1u);
                int64_t j0 = 0;
                for (; j0 + 16 <= d; j0 += 16)
                    direct_tile(fx, fy, fz, r0, r1, d, i, j0, 16, k0, kmask, scale, out);
                if (d - j0 >= 8) {
                    direct_tile(fx, fy, fz, r0, r1, d, i, j0, 8, k0, kmask, scale, out);
                    j0 += 8;
                }
                if (d - j0 >= 4) {
                    direct_tile(fx, fy, fz, r0, r1, d, i, j0, 4, k0, kmask, scale, out);
                    j0 += 4;
                }
                if (d - j0 >= 2) {
                    direct_tile(fx, fy, fz, r0, r1, d, i, j0, 2, k0, kmask, scale, out);
                    j0 += 2;
                }
                if (d - j0 >= 1)
                    direct_tile(fx, fy, fz, r0, r1, d, i, j0, 1, k0, kmask, scale, out);
            }
    }
}

/* The direct kernel over all of out: threads take ranges of i (disjoint
 * slices of out, so no per-thread copies and no reduction), one fork. */
static void direct(const float *fx, const float *fy, const float *fz, int64_t n, int64_t d,
                   float scale, float *out)
{
    int threads = 1;
#ifdef _OPENMP
    /* Below ~16 MFLOP (about 100 us on one core) a fork costs more than
     * it saves (entropy.c: PARALLEL_ELEMENTS). */
    if (2 * n * d * d * d >= 16 << 20)
        threads = omp_get_max_threads();
#endif
    if (threads > d)
        threads = (int)d;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        int t = 0, count = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        count = omp_get_num_threads();
#endif
        direct_slices(fx, fy, fz, n, d, d * t / count, d * (t + 1) / count, scale, out);
    }
}
#endif

/* ------------------------------------------------------------------ driver */

ax_status ax_stats_tensor_mean(const float *fx, const float *fy, const float *fz, int64_t n,
                               int64_t d, float *out)
{
    AX_TRY(ax_stats_check_tensor_mean(fx, fy, fz, out, n, d));
    const int64_t dd = d * d;
    for (int a = 0; a < 3; a++) {
        const float *array = a == 0 ? fx : a == 1 ? fy : fz;
        const char *name = a == 0 ? "fx" : a == 1 ? "fy" : "fz";
        if (!all_finite(array, n * d))
            return ax_stats_find_non_finite(array, "tensor-mean", name, "features", n, d);
    }

    const float scale = (float)(1.0 / (double)n);
#ifdef AX_STATS_AVX512
    if (d <= DIRECT_MAX_D && ax_stats_use_avx512()) {
        direct(fx, fy, fz, n, d, scale, out);
        return AX_STATUS_OK;
    }
#endif

    int64_t block = BLOCK_FLOATS / dd;
    block = block < 1 ? 1 : block > BLOCK_MAX_ROWS ? BLOCK_MAX_ROWS : block;
    if (block > n)
        block = n;
    const int64_t d3 = dd * d;
    const int64_t blocks = (n + block - 1) / block;
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    /* One thread per range of blocks, each with its own accumulator: one
     * fork/join in all instead of one per block (which on a loaded machine
     * costs a scheduler tick each). Only while the accumulators are small. */
    if (threads > blocks)
        threads = (int)blocks;
    if (threads < 1 || d3 > PRIVATE_TENSOR_FLOATS)
        threads = 1;
    float *k = ax_allocate_zeroed((size_t)(threads * block * dd) * sizeof(float));
    /* Threads after the first accumulate into their own copies. */
    float *copies =
        threads > 1 ? ax_allocate_zeroed((size_t)((threads - 1) * d3) * sizeof(float)) : NULL;
    if (!k || (threads > 1 && !copies)) {
        free(k);
        free(copies);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY,
                       "tensor-mean: out of memory for %d blocks of %lld x %lld", threads,
                       (long long)block, (long long)dd);
    }
    if (threads == 1) {
        accumulate(fx, fy, fz, 0, n, d, block, k, scale, out, true);
    } else {
#pragma omp parallel num_threads(threads)
        {
            int t = 0, count = 1;
#ifdef _OPENMP
            t = omp_get_thread_num();
            count = omp_get_num_threads();
#endif
            /* Whole blocks per thread; the BLAS runs single-threaded inside. */
            int64_t first = blocks * t / count * block, last = blocks * (t + 1) / count * block;
            last = last < n ? last : n;
            float *target = t == 0 ? out : copies + (t - 1) * d3;
            if (first < last)
                accumulate(fx, fy, fz, first, last, d, block, k + t * block * dd, scale, target,
                           false);
            else
                memset(target, 0, (size_t)d3 * sizeof(float));
        }
        for (int t = 1; t < threads; t++) {
            const float *add = copies + (t - 1) * d3;
#pragma omp simd
            for (int64_t i = 0; i < d3; i++)
                out[i] += add[i];
        }
    }
    free(copies);
    free(k);
    return AX_STATUS_OK;
}
