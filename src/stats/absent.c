/* absent.c: the activation statistics in a build without them
 * (AXON_STATS=OFF). CMake compiles this file instead of the rest of
 * src/stats, so the public functions of axon.h still exist and programs need
 * no #ifdef: each refuses with AX_STATUS_UNSUPPORTED and says how to
 * rebuild, as src/parallel/mpi_communicator.c does for MPI. The statistics need
 * no library of their own (the BLAS and OpenMP are libaxon's). */
#include "base/error.h"

static ax_status no_stats(void)
{
    return ax_fail(AX_STATUS_UNSUPPORTED,
                   "this build of axon has no activation statistics (axon stats); rebuild with "
                   "them (cmake -DAXON_STATS=ON; they need no further Debian package)");
}

ax_status ax_stats_entropy_mi(const float *x, const float *y, int64_t rows, int64_t d,
                              double *entropy, double *mutual_information)
{
    return no_stats();
}

ax_status ax_stats_tensor_mean(const float *fx, const float *fy, const float *fz, int64_t n,
                               int64_t d, float *out)
{
    return no_stats();
}

ax_status ax_stats_entropy_mi_on(ax_device device, const float *x, const float *y, int64_t rows,
                                 int64_t d, double *entropy, double *mutual_information,
                                 ax_stats_timing *timing)
{
    if (timing)
        *timing = (ax_stats_timing){0.0, 0.0, 0.0};
    return no_stats();
}

ax_status ax_stats_tensor_mean_on(ax_device device, const float *fx, const float *fy,
                                  const float *fz, int64_t n, int64_t d, float *out,
                                  ax_stats_timing *timing)
{
    if (timing)
        *timing = (ax_stats_timing){0.0, 0.0, 0.0};
    return no_stats();
}
