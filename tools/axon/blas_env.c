/* blas_env.c: keeps a stale OPENBLAS_CORETYPE from halving axon's speed.
 *
 * OpenBLAS chooses its kernels once, when it is loaded, and an
 * OPENBLAS_CORETYPE in the environment overrides its own CPU detection. Some
 * environments preset a value naming an older core (Haswell on an AVX-512
 * machine), which holds GEMMs to AVX2 at about half the rate. The variable is
 * read before main() runs, so the only fix open to a program is to start
 * again without it: when the CPU has AVX-512 and the value names a core
 * without it, axon re-executes itself once with the variable removed and
 * AXON_IGNORED_OPENBLAS_CORETYPE set to the old value, so that `axon info`
 * and the training header can say what happened.
 * AXON_KEEP_OPENBLAS_CORETYPE=1 keeps the user's choice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "axon.h"
#include "common.h"

static bool names_avx512_core(const char *core)
{
    static const char *const avx512_cores[] = {"skylakex", "cooperlake", "sapphirerapids"};
    for (size_t i = 0; i < sizeof avx512_cores / sizeof *avx512_cores; i++)
        if (strcasecmp(core, avx512_cores[i]) == 0)
            return true;
    return false;
}

void cli_release_blas_core_override(char **argv)
{
    const char *core = getenv("OPENBLAS_CORETYPE");
    if (!core || getenv("AXON_IGNORED_OPENBLAS_CORETYPE") || getenv("AXON_KEEP_OPENBLAS_CORETYPE"))
        return;
    if (strncmp(ax_build_info_get().blas, "OpenBLAS", 8) != 0)
        return;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || names_avx512_core(core))
        return;
    if (setenv("AXON_IGNORED_OPENBLAS_CORETYPE", core, 1) != 0 || unsetenv("OPENBLAS_CORETYPE") != 0)
        return;
    execv("/proc/self/exe", argv);
    /* Could not restart (no /proc): carry on with the kernels we have. */
    setenv("OPENBLAS_CORETYPE", getenv("AXON_IGNORED_OPENBLAS_CORETYPE"), 1);
    unsetenv("AXON_IGNORED_OPENBLAS_CORETYPE");
}
