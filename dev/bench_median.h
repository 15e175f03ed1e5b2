/* bench_median.h: the median of a dev benchmark's timings (sorts them in
 * place), for the benchmarks that alternate contenders in rounds and report
 * medians (conv_onednn_vs_axon.c, conv_weight_gradient.c,
 * dense_gemm_libraries.c, amx_matmul.c). Their clock is libaxon's
 * ax_seconds_now, except amx_matmul.c's, which links oneDNN alone. */
#ifndef AX_DEV_BENCH_MEDIAN_H
#define AX_DEV_BENCH_MEDIAN_H

#include <stdlib.h>

static int bench_compare_doubles(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double bench_median(double *values, int count)
{
    qsort(values, (size_t)count, sizeof *values, bench_compare_doubles);
    return count % 2 ? values[count / 2] : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

#endif
