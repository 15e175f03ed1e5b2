/* entropy.c: the entropy and mutual information of softmax outputs, as an
 * optimisation case study of a Python training loop defines them
 * (docs/stats.md), in one pass over memory.
 *
 * For a row with logits x, m = max x, e_i = exp(x_i - m) and s = sum e_i,
 * P_i = e_i / s, so sum_i P_i^2 = (sum_i e_i^2) / s^2: the softmax is never
 * stored, each row is read from memory once (its second read hits L1). MI's
 * double sum factorises,
 *   sum_{i,j} (P_i Q_j)^2 = (sum_i P_i^2) (sum_j Q_j^2),
 * so a row costs O(d) exponentials and adds, not O(d^2).
 *
 * Two kernels (dispatch.h): with AVX-512, 16 lanes and an inline exp (11
 * vector operations, relative error below 1.5e-6; 1e-3 is asked); elsewhere
 * `omp simd` loops through glibc's vector expf (libmvec). The exponentials
 * dominate: at D = 256 a row is 256 exps for 1 KB read.
 *
 * Precision: within a row the exponentials and partial sums are float, in
 * chunks of CHUNK elements whose sums are added in double; the per-row
 * figures and the sums over rows are double. Threads take contiguous ranges
 * of rows and their partial sums are added in thread order, so a result
 * depends on the thread count only, never on scheduling.
 *
 * NaN and Inf are caught in the same pass without a branch in the inner loop:
 * sum v * 0 is NaN exactly when some v is NaN or Inf (the build keeps IEEE
 * semantics: no -ffast-math). Only when a row is flagged is the input scanned
 * again to name the place. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "base/error.h"
#include "stats/dispatch.h"
#include "stats/finite.h"

#ifdef AX_STATS_AVX512
#include <immintrin.h>
#endif

/* libmvec's vector expf, callable from `omp simd` loops (see cpu_backend.c). */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__)
float expf(float) __attribute__((simd("notinbranch")));
#endif

/* Elements summed in float before the partial sum goes into a double. */
enum { CHUNK = 512 };

/* Below this many elements (rows * d, both inputs: about 100 us on one
 * core) threads cost more than they save: a fork/join takes a few us on a
 * quiet machine, but up to a scheduler tick (ms) when other processes keep
 * the cores busy. */
#define PARALLEL_ELEMENTS (1 << 19)

/* What a range of rows adds up to. */
typedef struct row_sums {
    double p2;     /* sum over rows of sum_i P_i^2 */
    double p2q2;   /* sum over rows of (sum_i P_i^2)(sum_j Q_j^2) */
    int64_t bad;   /* rows holding NaN or Inf */
} row_sums;

/* ---------------------------------------------------------------- portable */

/* sum_i P_i^2 of one row of softmax(x); *finite_check is NaN when the row
 * holds NaN or Inf. */
static inline double row_sum_p2(const float *restrict x, int64_t d, float *finite_check)
{
    float m = x[0], check = 0.0f;
#pragma omp simd reduction(max : m) reduction(+ : check)
    for (int64_t i = 0; i < d; i++) {
        m = x[i] > m ? x[i] : m;
        check += x[i] * 0.0f;
    }
    *finite_check = check;
    double s = 0.0, s2 = 0.0;
    for (int64_t first = 0; first < d; first += CHUNK) {
        int64_t last = first + CHUNK < d ? first + CHUNK : d;
        float cs = 0.0f, cs2 = 0.0f;
#pragma omp simd reduction(+ : cs, cs2)
        for (int64_t i = first; i < last; i++) {
            float e = expf(x[i] - m);
            cs += e;
            cs2 += e * e;
        }
        s += cs;
        s2 += cs2;
    }
    return s2 / (s * s); /* s >= 1: the maximum contributes exp(0) */
}

static void rows_portable(const float *x, const float *y, int64_t first, int64_t last, int64_t d,
                          row_sums *out)
{
    row_sums sums = {0.0, 0.0, 0};
    for (int64_t r = first; r < last; r++) {
        float check_x, check_y;
        double p2 = row_sum_p2(x + r * d, d, &check_x);
        double q2 = row_sum_p2(y + r * d, d, &check_y);
        sums.p2 += p2;
        sums.p2q2 += p2 * q2;
        sums.bad += isnan(check_x) || isnan(check_y);
    }
    *out = sums;
}

/* ----------------------------------------------------------------- AVX-512 */

#ifdef AX_STATS_AVX512
#define AVX512 __attribute__((target("avx512f")))

/* exp(t) for t <= 0, 16 lanes: u = t log2(e) = n + f with n an integer and
 * |f| <= 1/2, 2^f by a degree-5 polynomial (fitted to 2^f on [-1/2, 1/2]
 * for relative error with p(0) = 1 by Lawson's weighted least squares over
 * Chebyshev nodes: 9.1e-8, 1.6e-7 in float arithmetic), then times 2^n
 * by vscalefps, which gives 0 below the smallest float. The rounding of u
 * costs |u| 6e-8 relatively: 1.4e-6 at most for the terms that matter
 * (u > -24; smaller ones are below float resolution of the sum, s >= 1).
 * n is clamped because vscalefps gives 0, not NaN, for a NaN and n = -Inf;
 * with the clamp, t = -Inf gives f = -Inf - (-Inf) = NaN and NaN results. */
AVX512 static inline __m512 exp_avx512(__m512 t)
{
    const __m512 u = _mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f));
    const __m512 n = _mm512_roundscale_ps(u, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(u, n);
    __m512 p = _mm512_set1_ps(1.3264727065e-3f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6715126489e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5507337437e-2f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022242085e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314697760e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f)); /* exp(0) = 1 exactly */
    return _mm512_scalef_ps(p, _mm512_max_ps(n, _mm512_set1_ps(-150.0f)));
}

/* Maximum of a row, 16 lanes, two accumulators. NaN may be dropped here:
 * the exponentials below catch it. */
AVX512 static inline __m512 row_max_avx512(const float *restrict x, int64_t whole, __mmask16 tail)
{
    __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0;
    int64_t i = 0;
    for (; i + 32 <= whole; i += 32) {
        m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + i));
        m1 = _mm512_max_ps(m1, _mm512_loadu_ps(x + i + 16));
    }
    if (i < whole)
        m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + i));
    if (tail)
        m1 = _mm512_max_ps(m1, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), tail, x + whole));
    return _mm512_set1_ps(_mm512_reduce_max_ps(_mm512_max_ps(m0, m1)));
}

/* sum_i P_i^2 and sum_j Q_j^2 of row x and row y together (two independent
 * chains for the out-of-order core to overlap). Non-finite input needs no
 * separate check here: NaN propagates, +Inf makes the maximum Inf and
 * x - max NaN, and -Inf gives NaN in exp_avx512 (f = -Inf - (-Inf));
 * so the result is NaN exactly when the row holds NaN or Inf. */
AVX512 static inline void pair_sum_p2_avx512(const float *restrict x, const float *restrict y,
                                             int64_t d, double *p2, double *q2)
{
    const int64_t whole = d & ~(int64_t)15;
    const __mmask16 tail = (__mmask16)((1u << (d - whole)) - 1u);
    const __m512 mx = row_max_avx512(x, whole, tail), my = row_max_avx512(y, whole, tail);
    const __m512 zero = _mm512_setzero_ps();
    double sx = 0.0, sx2 = 0.0, sy = 0.0, sy2 = 0.0;
    for (int64_t first = 0; first < whole; first += CHUNK) {
        const int64_t last = first + CHUNK < whole ? first + CHUNK : whole;
        __m512 cx = zero, cx2 = zero, cy = zero, cy2 = zero;
        for (int64_t i = first; i < last; i += 16) {
            __m512 ex = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(x + i), mx));
            __m512 ey = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(y + i), my));
            cx = _mm512_add_ps(cx, ex);
            cx2 = _mm512_fmadd_ps(ex, ex, cx2);
            cy = _mm512_add_ps(cy, ey);
            cy2 = _mm512_fmadd_ps(ey, ey, cy2);
        }
        sx += _mm512_reduce_add_ps(cx);
        sx2 += _mm512_reduce_add_ps(cx2);
        sy += _mm512_reduce_add_ps(cy);
        sy2 += _mm512_reduce_add_ps(cy2);
    }
    if (tail) { /* the last d % 16 values; masked lanes give exactly 0 */
        __m512 vx = _mm512_maskz_loadu_ps(tail, x + whole), vy = _mm512_maskz_loadu_ps(tail, y + whole);
        __m512 ex = _mm512_maskz_mov_ps(tail, exp_avx512(_mm512_sub_ps(vx, mx)));
        __m512 ey = _mm512_maskz_mov_ps(tail, exp_avx512(_mm512_sub_ps(vy, my)));
        sx += _mm512_reduce_add_ps(ex);
        sx2 += _mm512_reduce_add_ps(_mm512_mul_ps(ex, ex));
        sy += _mm512_reduce_add_ps(ey);
        sy2 += _mm512_reduce_add_ps(_mm512_mul_ps(ey, ey));
    }
    *p2 = sx2 / (sx * sx);
    *q2 = sy2 / (sy * sy);
}

AVX512 static void rows_avx512(const float *x, const float *y, int64_t first, int64_t last,
                               int64_t d, row_sums *out)
{
    row_sums sums = {0.0, 0.0, 0};
    for (int64_t r = first; r < last; r++) {
        double p2, q2;
        pair_sum_p2_avx512(x + r * d, y + r * d, d, &p2, &q2);
        sums.p2 += p2;
        sums.p2q2 += p2 * q2;
        sums.bad += isnan(p2) || isnan(q2);
    }
    *out = sums;
}
#endif

/* ------------------------------------------------------------------ driver */

typedef void rows_kernel(const float *x, const float *y, int64_t first, int64_t last, int64_t d,
                         row_sums *out);

ax_status ax_stats_entropy_mi(const float *x, const float *y, int64_t rows, int64_t d,
                              double *entropy, double *mutual_information)
{
    AX_TRY(ax_stats_check_entropy_mi(x, y, rows, d));

    rows_kernel *kernel = rows_portable;
#ifdef AX_STATS_AVX512
    if (ax_stats_use_avx512())
        kernel = rows_avx512;
#endif
    int threads = 1;
#ifdef _OPENMP
    if (rows * d * 2 >= PARALLEL_ELEMENTS)
        threads = omp_get_max_threads();
#endif
    if (threads > rows)
        threads = (int)rows;
    row_sums total = {0.0, 0.0, 0};
    if (threads <= 1) {
        kernel(x, y, 0, rows, d, &total);
    } else {
        row_sums *partial = calloc((size_t)threads, sizeof *partial);
        if (!partial)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "entropy-mi: out of memory");
        int used = threads;
#pragma omp parallel num_threads(threads)
        {
            int t = 0, count = 1;
#ifdef _OPENMP
            t = omp_get_thread_num();
            count = omp_get_num_threads();
#endif
            if (t == 0)
                used = count;
            kernel(x, y, rows * t / count, rows * (t + 1) / count, d, &partial[t]);
        }
        for (int t = 0; t < used; t++) { /* in thread order: reproducible */
            total.p2 += partial[t].p2;
            total.p2q2 += partial[t].p2q2;
            total.bad += partial[t].bad;
        }
        free(partial);
    }
    if (total.bad > 0) {
        AX_TRY(ax_stats_find_non_finite(x, "entropy-mi", "x", "logits", rows, d));
        AX_TRY(ax_stats_find_non_finite(y, "entropy-mi", "y", "logits", rows, d));
    }
    if (entropy)
        *entropy = -total.p2 / (double)rows;
    if (mutual_information)
        *mutual_information = total.p2q2 / (double)rows;
    return AX_STATUS_OK;
}
