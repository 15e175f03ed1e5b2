/* cuda_backend.h: the CUDA plugin's entry points: its plugin table (what
 * backend.c looks up in libaxon_cuda.so), and the functions behind it:
 * creating a backend on a device, describing devices (cuda_backend.c) and
 * the statistics of stats.cu. Only built with AXON_CUDA. */
#ifndef AX_BACKEND_CUDA_BACKEND_H
#define AX_BACKEND_CUDA_BACKEND_H

#include "backend/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The one symbol backend.c looks for (plugin.h). */
extern const ax_backend_plugin ax_backend_plugin_cuda;

/* A backend on CUDA device `device`: AX_STATUS_UNSUPPORTED when there is no
 * such device, AX_STATUS_OUT_OF_MEMORY when its buffers do not fit. */
ax_status ax_backend_cuda_create(ax_precision precision, int device, ax_backend **out);
/* Devices visible to this process; 0 when the driver or devices are missing. */
int ax_backend_cuda_device_count(void);
/* One line describing device `device` (the plugin's device_info). */
ax_status ax_backend_cuda_device_info(int device, char *text, size_t capacity);

/* The activation statistics (stats.cu), the plugin's extensions
 * AX_BACKEND_EXTENSION_STATS_* (plugin.h). */
ax_status ax_cuda_stats_entropy_mi(int device, const float *x, const float *y, int64_t rows,
                                   int64_t d, double sums[3], ax_stats_timing *timing);
ax_status ax_cuda_stats_tensor_mean(int device, const float *fx, const float *fy, const float *fz,
                                    int64_t n, int64_t d, float *out, ax_stats_timing *timing);

#ifdef __cplusplus
}
#endif

#endif
