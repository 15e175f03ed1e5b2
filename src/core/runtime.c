/* runtime.c: threads (OpenMP loops and the BLAS together) and the facts
 * `axon info` reports about the build and the machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <omp.h>

#include "backend/cpu/blas.h"
#include "base/error.h"
#include "core/thread_governor.h"

#if defined(AXON_BLAS_BLIS)
#include <blis.h>
#endif

#ifndef AXON_COMPILER
#define AXON_COMPILER "unknown compiler"
#endif

static int threads_in_use;

static int default_threads(void)
{
    const char *text = getenv("OMP_NUM_THREADS");
    if (text && atoi(text) > 0)
        return atoi(text);
    /* The CPUs this process may run on (a container's or taskset's), not
     * every CPU online. */
    return ax_cpu_load_cores();
}

int ax_others_running(void) { return ax_cpu_load_others_running(); }

void ax_threads_run_on(int n)
{
    omp_set_num_threads(n);
#if defined(AXON_BLAS_OPENBLAS)
    ax_blas.set_num_threads(n);
#elif defined(AXON_BLAS_BLIS)
    bli_thread_set_num_threads(n);
#endif
}

ax_status ax_set_threads(int n)
{
    if (n > 4096)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%d threads is more than this machine can use", n);
    if (n <= 0)
        n = default_threads();
    ax_threads_run_on(n);
    threads_in_use = n;
    return AX_STATUS_OK;
}

int ax_threads(void) { return threads_in_use > 0 ? threads_in_use : default_threads(); }

static const char *cpu_features(void)
{
    static char text[160];
    if (text[0])
        return text;
    static const char *const names[] = {"sse4.2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl"};
    __builtin_cpu_init();
    int supported[] = {
        __builtin_cpu_supports("sse4.2"), __builtin_cpu_supports("avx"),
        __builtin_cpu_supports("avx2"),   __builtin_cpu_supports("fma"),
        __builtin_cpu_supports("avx512f"), __builtin_cpu_supports("avx512bw"),
        __builtin_cpu_supports("avx512vl"),
    };
    size_t used = 0;
    for (size_t i = 0; i < sizeof supported / sizeof supported[0]; i++)
        if (supported[i])
            used += (size_t)snprintf(text + used, sizeof text - used, "%s%s", used ? " " : "", names[i]);
    return text;
}

ax_build_info ax_build_info_get(void)
{
    ax_build_info info;
    memset(&info, 0, sizeof info);
    info.version = AX_VERSION;
#if defined(AXON_BLAS_OPENBLAS)
    /* "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ... USE_OPENMP ...": keep the
     * name, the version and the threading model, and say when libaxon runs
     * its own copy beside another build loaded first (backend/cpu/blas.c). */
    static char blas[96];
    const char *config = ax_blas.config();
    char version[32] = "";
    sscanf(config, "OpenBLAS %31s", version);
    snprintf(blas, sizeof blas, "OpenBLAS %s (%s threads%s)", version,
             strstr(config, "USE_OPENMP") ? "OpenMP" : "pthread",
             ax_blas.own_copy ? "; axon's own copy: another build was loaded first" : "");
    info.blas = blas;
    info.blas_kernels = ax_blas.corename();
#elif defined(AXON_BLAS_BLIS)
    static char blas[64];
    snprintf(blas, sizeof blas, "BLIS %s", bli_info_get_version_str());
    info.blas = blas;
    info.blas_kernels = bli_arch_string(bli_arch_query_id());
#else
    info.blas = "unknown CBLAS";
    info.blas_kernels = "unknown";
#endif
    info.cpu_features = cpu_features();
#if defined(AXON_CUDA) && defined(AXON_OPENCL)
    info.backends = "cpu cuda (CUDA " AXON_CUDA_VERSION ") opencl";
#elif defined(AXON_CUDA)
    info.backends = "cpu cuda (CUDA " AXON_CUDA_VERSION ")";
#elif defined(AXON_OPENCL)
    info.backends = "cpu opencl";
#else
    info.backends = "cpu";
#endif
    info.compiler = AXON_COMPILER;
    info.openmp = true;
    /* The optional components (CMake's AXON_PREP and AXON_STATS): without
     * one, its folder's absent.c refuses its functions. */
#ifdef AXON_PREP
    info.prep = true;
#endif
#ifdef AXON_STATS
    info.stats = true;
#endif
    return info;
}
