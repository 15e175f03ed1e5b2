/* tensor_mean.c: seed 004's third-order tensor mean (BENCHMARKS.md B5),
 *   A[i,j,k] = (1/n) sum_r fx[r,i] fy[r,j] fz[r,k],
 * as a GEMM. With K the row-wise Khatri-Rao product, K[r, i*d + j] =
 * fx[r,i] fy[r,j], A viewed as (d*d, d) is K^T fz / n: 2 n d^3 flops in the
 * BLAS instead of seed 004's loop of n outer products.
 *
 * K is never made whole (for n = 8192, d = 32 it would be 32 MB): BLOCK rows
 * of it at a time are built into a buffer of about 1 MB (stays in L2/L3) and
 * multiplied in with beta = 1, so the work is n/BLOCK GEMMs of shape
 * (d*d, BLOCK) x (BLOCK, d) that accumulate into out. */
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include <cblas.h>

#include "core/error.h"
#include "core/memory.h"

/* Floats in the Khatri-Rao block buffer (1 MB), and the most rows per block. */
enum { BLOCK_FLOATS = 1 << 18, BLOCK_MAX_ROWS = 256 };

static ax_status find_non_finite(const float *a, const char *name, int64_t n, int64_t d)
{
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = 0; c < d; c++) {
            float v = a[r * d + c];
            if (!isfinite(v))
                return ax_fail(AX_STATUS_BAD_DATA,
                               "tensor-mean: %s [row %lld, column %lld] is %s; the features "
                               "must be finite",
                               name, (long long)r, (long long)c, isnan(v) ? "NaN" : "Inf");
        }
    return AX_STATUS_OK;
}

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

ax_status ax_stats_tensor_mean(const float *fx, const float *fy, const float *fz, int64_t n,
                               int64_t d, float *out)
{
    if (n < 1 || d < 1)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "tensor-mean: the arrays are empty (%lld rows of %lld values); at least "
                       "one row of one value is needed",
                       (long long)n, (long long)d);
    if (!fx || !fy || !fz || !out)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "tensor-mean: the %s array is missing",
                       !fx ? "fx" : !fy ? "fy" : !fz ? "fz" : "output");
    /* The BLAS takes int dimensions: d*d rows of the GEMM, and d*d*d outputs. */
    if (d > 1290 || n > INT_MAX)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "tensor-mean: %lld rows of %lld values is too large (at most %d rows "
                       "and 1290 values per row: the result has d^3 elements)",
                       (long long)n, (long long)d, INT_MAX);
    const int64_t dd = d * d;
    for (int a = 0; a < 3; a++) {
        const float *array = a == 0 ? fx : a == 1 ? fy : fz;
        const char *name = a == 0 ? "fx" : a == 1 ? "fy" : "fz";
        if (!all_finite(array, n * d))
            return find_non_finite(array, name, n, d);
    }

    int64_t block = BLOCK_FLOATS / dd;
    block = block < 1 ? 1 : block > BLOCK_MAX_ROWS ? BLOCK_MAX_ROWS : block;
    if (block > n)
        block = n;
    float *k = ax_allocate_zeroed((size_t)(block * dd) * sizeof(float));
    if (!k)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY,
                       "tensor-mean: out of memory for a %lld x %lld block", (long long)block,
                       (long long)dd);
    const float scale = (float)(1.0 / (double)n);
    for (int64_t first = 0; first < n; first += block) {
        const int64_t count = n - first < block ? n - first : block;
#pragma omp parallel for schedule(static) if (count * dd >= 16384)
        for (int64_t r = 0; r < count; r++) {
            const float *x = fx + (first + r) * d, *y = fy + (first + r) * d;
            float *row = k + r * dd;
            for (int64_t i = 0; i < d; i++) {
                const float xi = x[i];
#pragma omp simd
                for (int64_t j = 0; j < d; j++)
                    row[i * d + j] = xi * y[j];
            }
        }
        /* out (d*d, d) (+)= scale * K^T (d*d, count) x fz (count, d) */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)dd, (int)d, (int)count, scale,
                    k, (int)dd, fz + first * d, (int)d, first == 0 ? 0.0f : 1.0f, out, (int)d);
    }
    free(k);
    return AX_STATUS_OK;
}
