/* device.c: the statistics on a chosen device (ax_stats_entropy_mi_on,
 * ax_stats_tensor_mean_on): the CPU runs the kernels of entropy.c and
 * tensor_mean.c, another device its plugin's extensions of those names
 * (backend/plugin.h). The input checks and the
 * error messages are the CPU's for every device: shapes are checked here
 * before anything is copied, and NaN/Inf, which the device only flags
 * (entropy-mi: rows holding one; tensor-mean: a non-finite result), are
 * named by scanning the host arrays, so the caller sees the same array,
 * row and column as on the CPU. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <string.h>

#include "backend/plugin.h"
#include "base/clock.h"
#include "base/error.h"
#include "stats/finite.h"

static ax_status check_device(ax_device device)
{
    if (strnlen(device.backend, AX_DEVICE_NAME_CAPACITY) == AX_DEVICE_NAME_CAPACITY)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "a device's backend name has no end within %d "
                       "characters", AX_DEVICE_NAME_CAPACITY);
    if (device.index < 0 || (ax_device_is_cpu(device) && device.index != 0)) {
        char name[AX_DEVICE_NAME_CAPACITY + 16];
        ax_device_format(device, name, sizeof name);
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "device %s is not a device: device numbers start "
                       "at 0, and there is one CPU", name);
    }
    return AX_STATUS_OK;
}

ax_status ax_stats_entropy_mi_on(ax_device device, const float *x, const float *y, int64_t rows,
                                 int64_t d, double *entropy, double *mutual_information,
                                 ax_stats_timing *timing)
{
    if (timing)
        *timing = (ax_stats_timing){0.0, 0.0, 0.0};
    AX_TRY(check_device(device));
    if (ax_device_is_cpu(device)) {
        const double start = ax_seconds_now();
        AX_TRY(ax_stats_entropy_mi(x, y, rows, d, entropy, mutual_information));
        if (timing)
            timing->compute_seconds = ax_seconds_now() - start;
        return AX_STATUS_OK;
    }
    AX_TRY(ax_stats_check_entropy_mi(x, y, rows, d));
    double sums[3] = {0.0, 0.0, 0.0};
    AX_TRY(ax_backend_stats_entropy_mi(device.backend, device.index, x, y, rows, d, sums, timing));
    if (sums[2] > 0.0) {
        AX_TRY(ax_stats_find_non_finite(x, "entropy-mi", "x", "logits", rows, d));
        AX_TRY(ax_stats_find_non_finite(y, "entropy-mi", "y", "logits", rows, d));
        /* Flagged on the device but finite here: a fault of the kernels. */
        return ax_fail(AX_STATUS_UNSUPPORTED, "entropy-mi on device %s:%d: %.0f rows were "
                       "flagged as NaN/Inf although the inputs are finite (a fault of the "
                       "backend's kernels: please report it)", device.backend, device.index,
                       sums[2]);
    }
    if (entropy)
        *entropy = -sums[0] / (double)rows;
    if (mutual_information)
        *mutual_information = sums[1] / (double)rows;
    return AX_STATUS_OK;
}

ax_status ax_stats_tensor_mean_on(ax_device device, const float *fx, const float *fy, const float *fz,
                                  int64_t n, int64_t d, float *out, ax_stats_timing *timing)
{
    if (timing)
        *timing = (ax_stats_timing){0.0, 0.0, 0.0};
    AX_TRY(check_device(device));
    if (ax_device_is_cpu(device)) {
        const double start = ax_seconds_now();
        AX_TRY(ax_stats_tensor_mean(fx, fy, fz, n, d, out));
        if (timing)
            timing->compute_seconds = ax_seconds_now() - start;
        return AX_STATUS_OK;
    }
    AX_TRY(ax_stats_check_tensor_mean(fx, fy, fz, out, n, d));
    AX_TRY(ax_backend_stats_tensor_mean(device.backend, device.index, fx, fy, fz, n, d, out, timing));
    /* Any NaN or Inf among the inputs makes some element of the mean NaN or
     * Inf (x Inf is Inf or NaN, never finite), so one pass over the d^3
     * results replaces the CPU's pass over the 3 n d inputs; a non-finite
     * result from finite inputs is an overflow, which the CPU returns too. */
    const int64_t count = d * d * d;
    float check = 0.0f;
    for (int64_t i = 0; i < count; i++)
        check += out[i] * 0.0f;
    if (isnan(check)) {
        AX_TRY(ax_stats_find_non_finite(fx, "tensor-mean", "fx", "features", n, d));
        AX_TRY(ax_stats_find_non_finite(fy, "tensor-mean", "fy", "features", n, d));
        AX_TRY(ax_stats_find_non_finite(fz, "tensor-mean", "fz", "features", n, d));
    }
    return AX_STATUS_OK;
}
