/* finite.c: see finite.h. */
#include "stats/finite.h"

#include <math.h>

#include "core/error.h"

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
