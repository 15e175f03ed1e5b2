/* blas_env.c: the environment the BLAS and OpenMP read before main() runs:
 * keeps a stale OPENBLAS_CORETYPE from halving axon's speed, and keeps
 * OpenMP's idle threads from spinning for long on a shared machine.
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
 * AXON_KEEP_OPENBLAS_CORETYPE=1 keeps the user's choice.
 *
 * libgomp's threads spin (300,000 rounds) before they sleep at the end of a
 * parallel region. On an idle machine that saves a wake-up per region; when
 * another process holds a core, a spinning thread takes the time slice the
 * thread it waits for needs, and 2-thread training slows down 9x (B1(a):
 * 0.25 s per epoch idle, 2.3 s with one core busy). 1,000 rounds cost nothing
 * measurable idle (0.25 s) and give 0.8-1.6 s loaded (docs/blas-choice.md). So
 * when neither GOMP_SPINCOUNT nor OMP_WAIT_POLICY is set, axon sets
 * GOMP_SPINCOUNT=1000 in the same restart. */
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

/* True when OPENBLAS_CORETYPE names a core without AVX-512 on a CPU with it. */
static bool core_override_is_stale(const char *core)
{
    if (!core || getenv("AXON_IGNORED_OPENBLAS_CORETYPE") || getenv("AXON_KEEP_OPENBLAS_CORETYPE"))
        return false;
    if (strncmp(ax_build_info_get().blas, "OpenBLAS", 8) != 0)
        return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && !names_avx512_core(core);
}

void cli_release_blas_core_override(char **argv)
{
    const char *core = getenv("OPENBLAS_CORETYPE");
    const bool drop_core = core_override_is_stale(core);
    const bool set_spin = !getenv("GOMP_SPINCOUNT") && !getenv("OMP_WAIT_POLICY");
    if (!drop_core && !set_spin)
        return;
    if (drop_core &&
        (setenv("AXON_IGNORED_OPENBLAS_CORETYPE", core, 1) != 0 || unsetenv("OPENBLAS_CORETYPE") != 0))
        return;
    if (set_spin && setenv("GOMP_SPINCOUNT", "1000", 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    /* Could not restart (no /proc): carry on as we are. */
    if (drop_core) {
        setenv("OPENBLAS_CORETYPE", getenv("AXON_IGNORED_OPENBLAS_CORETYPE"), 1);
        unsetenv("AXON_IGNORED_OPENBLAS_CORETYPE");
    }
    if (set_spin)
        unsetenv("GOMP_SPINCOUNT");
}
