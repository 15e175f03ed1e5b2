/* finite.h: the checks both statistics make on their input, shared by the
 * CPU kernels (entropy.c, tensor_mean.c) and the device entry points
 * (device.c), so that every device refuses the same input with the same
 * message. */
#ifndef AX_STATS_FINITE_H
#define AX_STATS_FINITE_H

#include <stdint.h>

#include "axon.h"

/* AX_STATUS_BAD_DATA naming the first NaN or Inf of a (rows, d) array as
 * "<statistic>: <name> [row r, column c] is NaN; the <inputs> must be
 * finite", or AX_STATUS_OK. */
ax_status ax_stats_find_non_finite(const float *a, const char *statistic, const char *name,
                                   const char *inputs, int64_t rows, int64_t d);

/* AX_STATUS_BAD_ARGUMENT for empty shapes, missing arrays and sizes the
 * kernels cannot index; AX_STATUS_OK otherwise. NaN and Inf are checked by
 * the kernels. */
ax_status ax_stats_check_entropy_mi(const float *x, const float *y, int64_t rows, int64_t d);
ax_status ax_stats_check_tensor_mean(const float *fx, const float *fy, const float *fz,
                                     const float *out, int64_t n, int64_t d);

#endif
