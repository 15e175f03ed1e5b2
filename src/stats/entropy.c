/* entropy.c: seed 004's entropy and mutual information of softmax outputs
 * (BENCHMARKS.md B4), in one pass over memory.
 *
 * For a row with logits x, m = max x, e_i = exp(x_i - m) and s = sum e_i,
 * P_i = e_i / s, so sum_i P_i^2 = (sum_i e_i^2) / s^2: the softmax is never
 * stored, each row is read from memory once (its second and third reads hit
 * L1). MI's double sum factorises,
 *   sum_{i,j} (P_i Q_j)^2 = (sum_i P_i^2) (sum_j Q_j^2),
 * so a row costs O(d) exponentials and adds, not O(d^2).
 *
 * Precision: within a row the exponentials and partial sums are float (8
 * lanes wide), in chunks of CHUNK elements whose sums are added in double;
 * the per-row figures and the mean over rows are double.
 *
 * NaN and Inf are caught in the same pass without a branch in the inner loop:
 * sum v * 0 is NaN exactly when some v is NaN or Inf (the build keeps IEEE
 * semantics: no -ffast-math). Only when a row is flagged is the input scanned
 * again to name the place. */
#include <math.h>
#include <stdbool.h>

#include "core/error.h"
#include "stats/finite.h"

/* libmvec's vector expf, callable from `omp simd` loops (see cpu_backend.c). */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__)
float expf(float) __attribute__((simd("notinbranch")));
#endif

/* Elements summed in float before the partial sum goes into a double. */
enum { CHUNK = 512 };

/* Below this many elements (rows * d, both inputs) threads cost more than
 * they save. */
#define PARALLEL_ELEMENTS 65536

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

ax_status ax_stats_entropy_mi(const float *x, const float *y, int64_t rows, int64_t d,
                              double *entropy, double *mutual_information)
{
    if (rows < 1 || d < 1)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "entropy-mi: the arrays are empty (%lld rows of %lld values); at least "
                       "one row of one value is needed",
                       (long long)rows, (long long)d);
    if (!x || !y)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "entropy-mi: the %s array is missing",
                       !x ? "x" : "y");
    if (rows > INT64_MAX / d)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "entropy-mi: %lld x %lld is too large",
                       (long long)rows, (long long)d);

    double sum_p2 = 0.0, sum_p2q2 = 0.0;
    int64_t bad_rows = 0;
    const bool parallel = rows * d * 2 >= PARALLEL_ELEMENTS && rows > 1;
#pragma omp parallel for schedule(static) if (parallel) reduction(+ : sum_p2, sum_p2q2, bad_rows)
    for (int64_t r = 0; r < rows; r++) {
        float check_x, check_y;
        double p2 = row_sum_p2(x + r * d, d, &check_x);
        double q2 = row_sum_p2(y + r * d, d, &check_y);
        sum_p2 += p2;
        sum_p2q2 += p2 * q2;
        bad_rows += isnan(check_x) || isnan(check_y);
    }
    if (bad_rows > 0) {
        AX_TRY(ax_stats_find_non_finite(x, "entropy-mi", "x", "logits", rows, d));
        AX_TRY(ax_stats_find_non_finite(y, "entropy-mi", "y", "logits", rows, d));
    }
    if (entropy)
        *entropy = -sum_p2 / (double)rows;
    if (mutual_information)
        *mutual_information = sum_p2q2 / (double)rows;
    return AX_STATUS_OK;
}
