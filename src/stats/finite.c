/* finite.c: see finite.h. */
#include "stats/finite.h"

#include <limits.h>
#include <math.h>

#include "base/error.h"

ax_status ax_stats_find_non_finite(const float *a, const char *statistic, const char *name,
                                   const char *inputs, int64_t rows, int64_t d)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < d; c++) {
            float v = a[r * d + c];
            if (!isfinite(v))
                return ax_fail(AX_STATUS_BAD_DATA, "%s: %s [row %lld, column %lld] is %s; the %s must be finite",
                               statistic, name, (long long)r, (long long)c, isnan(v) ? "NaN" : "Inf", inputs);
        }
    return AX_STATUS_OK;
}

ax_status ax_stats_check_entropy_mi(const float *x, const float *y, int64_t rows, int64_t d)
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
    return AX_STATUS_OK;
}

ax_status ax_stats_check_tensor_mean(const float *fx, const float *fy, const float *fz,
                                     const float *out, int64_t n, int64_t d)
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
    return AX_STATUS_OK;
}
