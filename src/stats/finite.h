/* finite.h: the message both statistics give for a NaN or Inf input. */
#ifndef AX_STATS_FINITE_H
#define AX_STATS_FINITE_H

#include <stdint.h>

#include "axon.h"

/* AX_STATUS_BAD_DATA naming the first NaN or Inf of a (rows, d) array as
 * "<statistic>: <name> [row r, column c] is NaN; the <inputs> must be
 * finite", or AX_STATUS_OK. */
ax_status ax_stats_find_non_finite(const float *a, const char *statistic, const char *name,
                                   const char *inputs, int64_t rows, int64_t d);

#endif
