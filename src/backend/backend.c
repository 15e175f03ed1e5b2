/* backend.c: picks the backend a network computes on (the CPU, or a CUDA
 * device when this build has the CUDA backend), and answers the public
 * questions about CUDA devices in builds with and without it. */
#include "backend/backend.h"

#include <stdio.h>

#include "backend/cpu/bf16_gemm.h"
#include "base/error.h"

#ifdef AXON_CUDA
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

/* The CUDA backend lives in libaxon_cuda.so, opened the first time a CUDA
 * device is asked about, so that CPU runs never load cuBLAS. Looked for at
 * $AXON_CUDA_PLUGIN, then in the build tree, then where it is installed,
 * then on the loader's search path. */
static struct {
    pthread_once_t once;
    ax_status (*create)(ax_precision, int, ax_backend **);
    int (*device_count)(void);
    ax_status (*device_info)(int, char *, size_t);
    /* Seed 004's statistics (stats.cu); NULL in a plugin without them. */
    ax_status (*entropy_mi)(int, const float *, const float *, int64_t, int64_t, double *,
                            ax_stats_timing *);
    ax_status (*tensor_mean)(int, const float *, const float *, const float *, int64_t, int64_t,
                             float *, ax_stats_timing *);
    char failure[512];
} plugin = {.once = PTHREAD_ONCE_INIT};

static void open_plugin(void)
{
    const char *candidates[] = {getenv("AXON_CUDA_PLUGIN"), AXON_CUDA_PLUGIN_BUILD,
                                AXON_CUDA_PLUGIN_INSTALLED, "libaxon_cuda.so"};
    void *handle = NULL;
    for (size_t i = 0; i < sizeof candidates / sizeof *candidates && !handle; i++)
        if (candidates[i] && candidates[i][0]) {
            handle = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
            if (!handle)
                snprintf(plugin.failure, sizeof plugin.failure, "%s", dlerror());
        }
    if (!handle)
        return;
    plugin.create = (ax_status(*)(ax_precision, int, ax_backend **))dlsym(handle, "ax_backend_cuda_create");
    plugin.device_count = (int (*)(void))dlsym(handle, "ax_backend_cuda_device_count");
    plugin.device_info = (ax_status(*)(int, char *, size_t))dlsym(handle, "ax_backend_cuda_device_info");
    plugin.entropy_mi = (ax_status(*)(int, const float *, const float *, int64_t, int64_t,
                                      double *, ax_stats_timing *))dlsym(handle,
                                                                         "ax_cuda_stats_entropy_mi");
    plugin.tensor_mean = (ax_status(*)(int, const float *, const float *, const float *, int64_t,
                                       int64_t, float *, ax_stats_timing *))
        dlsym(handle, "ax_cuda_stats_tensor_mean");
    if (!plugin.create || !plugin.device_count || !plugin.device_info) {
        snprintf(plugin.failure, sizeof plugin.failure, "libaxon_cuda.so lacks its entry points");
        plugin.create = NULL;
    }
}

static bool plugin_ready(void)
{
    pthread_once(&plugin.once, open_plugin);
    return plugin.create != NULL;
}
#endif

bool ax_bf16_native(void) { return ax_bf16_cpu_native(); }

ax_bf16_support ax_bf16_support_get(void)
{
    ax_bf16_choice choice = ax_bf16_cpu_choice();
    return (ax_bf16_support){choice.instructions, choice.native, choice.speed_ratio, choice.reason};
}

ax_status ax_backend_create(ax_precision precision, int device, ax_backend **out)
{
    *out = NULL;
    if (precision == AX_PRECISION_BF16 && device >= 0)
        return ax_fail(AX_STATUS_UNSUPPORTED,
                       "bf16 runs on the CPU only: use f32 on CUDA device %d, or --device cpu",
                       device);
    if (device < -1)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "device %d is not a device: -1 is the CPU, 0 and up a CUDA device", device);
    if (device == -1) {
        *out = ax_backend_cpu_create(precision);
        return *out ? AX_STATUS_OK
                    : ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory creating the CPU backend");
    }
#ifdef AXON_CUDA
    if (!plugin_ready())
        return ax_fail(AX_STATUS_UNSUPPORTED, "the CUDA backend could not be loaded: %s", plugin.failure);
    return plugin.create(precision, device, out);
#else
    return ax_fail(AX_STATUS_UNSUPPORTED,
                   "this build has no CUDA backend (CUDA device %d was asked for); "
                   "rebuild with -DAXON_CUDA=ON where nvcc is installed", device);
#endif
}

int ax_cuda_device_count(void)
{
#ifdef AXON_CUDA
    return plugin_ready() ? plugin.device_count() : 0;
#else
    return 0;
#endif
}

ax_status ax_cuda_device_info(int device, char *text, size_t capacity)
{
    if (text && capacity > 0)
        text[0] = '\0';
    if (!text || capacity == 0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "ax_cuda_device_info needs a text buffer");
#ifdef AXON_CUDA
    if (!plugin_ready())
        return ax_fail(AX_STATUS_UNSUPPORTED, "the CUDA backend could not be loaded: %s", plugin.failure);
    return plugin.device_info(device, text, capacity);
#else
    return ax_fail(AX_STATUS_UNSUPPORTED, "this build has no CUDA backend (device %d)", device);
#endif
}

/* The statistics need the plugin and entry points in it; a plugin built
 * before them still trains. */
#ifdef AXON_CUDA
static ax_status stats_unavailable(const char *statistic, int device)
{
    if (!plugin_ready())
        return ax_fail(AX_STATUS_UNSUPPORTED, "%s on CUDA device %d: the CUDA backend could not "
                       "be loaded: %s", statistic, device, plugin.failure);
    return ax_fail(AX_STATUS_UNSUPPORTED, "%s on CUDA device %d: this libaxon_cuda.so has no "
                   "statistics kernels (rebuild it)", statistic, device);
}
#endif

ax_status ax_backend_cuda_entropy_mi(int device, const float *x, const float *y, int64_t rows,
                                     int64_t d, double sums[3], ax_stats_timing *timing)
{
#ifdef AXON_CUDA
    if (!plugin_ready() || !plugin.entropy_mi)
        return stats_unavailable("entropy-mi", device);
    return plugin.entropy_mi(device, x, y, rows, d, sums, timing);
#else
    (void)x, (void)y, (void)rows, (void)d, (void)sums, (void)timing;
    return ax_fail(AX_STATUS_UNSUPPORTED,
                   "entropy-mi: this build has no CUDA backend (CUDA device %d was asked for); "
                   "rebuild with -DAXON_CUDA=ON where nvcc is installed", device);
#endif
}

ax_status ax_backend_cuda_tensor_mean(int device, const float *fx, const float *fy,
                                      const float *fz, int64_t n, int64_t d, float *out,
                                      ax_stats_timing *timing)
{
#ifdef AXON_CUDA
    if (!plugin_ready() || !plugin.tensor_mean)
        return stats_unavailable("tensor-mean", device);
    return plugin.tensor_mean(device, fx, fy, fz, n, d, out, timing);
#else
    (void)fx, (void)fy, (void)fz, (void)n, (void)d, (void)out, (void)timing;
    return ax_fail(AX_STATUS_UNSUPPORTED,
                   "tensor-mean: this build has no CUDA backend (CUDA device %d was asked for); "
                   "rebuild with -DAXON_CUDA=ON where nvcc is installed", device);
#endif
}
