/* cpu_features.c: see cpu_features.h. The hardware is asked on every call,
 * not cached: replicas ask from several threads at once, and
 * __builtin_cpu_supports only reads what libgcc filled in at load time.
 * The environment is read once (pthread_once), so that a setenv while
 * products run cannot switch kernels halfway through a step. */
#include "backend/cpu/cpu_features.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool generic = false;
static pthread_once_t generic_once = PTHREAD_ONCE_INIT;

static void read_setting(void)
{
    const char *setting = getenv("AXON_CPU_KERNELS");
    generic = setting && strcmp(setting, "generic") == 0;
}

bool ax_cpu_kernels_generic(void)
{
    pthread_once(&generic_once, read_setting);
    return generic;
}

bool ax_cpu_kernels_setting_valid(char *why, size_t capacity)
{
    const char *setting = getenv("AXON_CPU_KERNELS");
    if (!setting || !setting[0] || strcmp(setting, "auto") == 0 ||
        strcmp(setting, "generic") == 0)
        return true;
    if (why && capacity > 0)
        snprintf(why, capacity,
                 "AXON_CPU_KERNELS='%.100s' is not generic (x86-64's baseline kernels: the "
                 "BLAS for every GEMM) or auto (the CPU's, the default)",
                 setting);
    return false;
}

#if defined(__x86_64__) && defined(__GNUC__)
bool ax_cpu_kernels_avx512f(void)
{
    return !ax_cpu_kernels_generic() && __builtin_cpu_supports("avx512f");
}

bool ax_cpu_kernels_avx512vl(void)
{
    return !ax_cpu_kernels_generic() && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512vl");
}

bool ax_cpu_kernels_avx512bw(void)
{
    return !ax_cpu_kernels_generic() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw");
}
#else
bool ax_cpu_kernels_avx512f(void) { return false; }
bool ax_cpu_kernels_avx512vl(void) { return false; }
bool ax_cpu_kernels_avx512bw(void) { return false; }
#endif
