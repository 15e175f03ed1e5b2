/* runtime.c: the facts `axon info` reports about the build and the
 * machine (the threads are perf/threads.c's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <omp.h>

#include "backend/cpu/blas.h"
#include "base/error.h"

#if defined(AXON_BLAS_BLIS)
#include <blis.h>
#endif

#ifndef AXON_COMPILER
#define AXON_COMPILER "unknown compiler"
#endif


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
    /* The backends the loader found (their plugins not opened: a CPU run
     * does not pay for a GPU runtime; axon info names each runtime). */
    static char backends[256];
    backends[0] = '\0';
    for (int i = 0; i < ax_backend_count(); i++) {
        const size_t used = strlen(backends);
        snprintf(backends + used, sizeof backends - used, "%s%s", i ? " " : "", ax_backend_name(i));
    }
    info.backends = backends;
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
