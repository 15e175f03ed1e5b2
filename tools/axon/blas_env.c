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
 * without it, axon re-executes itself once with the variable set to the core
 * that fits the CPU and AXON_IGNORED_OPENBLAS_CORETYPE set to the old value,
 * so that `axon info` can say what happened. Likewise when OpenBLAS's own
 * detection does not know the CPU and falls back to old kernels
 * (AXON_DETECTED_OPENBLAS_CORETYPE records its choice).
 * AXON_KEEP_OPENBLAS_CORETYPE=1 keeps the user's choice, or OpenBLAS's.
 *
 * libgomp's threads spin (300,000 rounds) before they sleep at the end of a
 * parallel region. On an idle machine that saves a wake-up per region; when
 * another process holds a core, a spinning thread takes the time slice the
 * thread it waits for needs, and 2-thread training slows down 9x (the
 * Fashion-MNIST MLP 784-128-128-10 at batch 128: 0.25 s per epoch idle, 2.3 s
 * with one core busy; docs/notes/blas-choice.md). So when neither
 * GOMP_SPINCOUNT nor OMP_WAIT_POLICY is set, axon sets GOMP_SPINCOUNT in
 * the same restart, from the machine as it finds it: SPIN_IDLE where no
 * other process runs now, SPIN_BUSY where one does or that cannot be told.
 * Load that comes later is the thread governor's (training in float32 and
 * bf16 leaves threads that wait for a core; docs/notes/threads.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "axon.h"
#include "common.h"

/* The spin counts of libgomp's waits: on an idle machine the least of those
 * that gave the fastest small-network epochs, beside other processes a
 * short one (docs/notes/threads.md has the runs). */
#define SPIN_IDLE "10000"
#define SPIN_BUSY "1000"

static bool names_core_in(const char *core, const char *const *cores, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (strcasecmp(core, cores[i]) == 0)
            return true;
    return false;
}

static bool names_avx512_core(const char *core)
{
    static const char *const avx512_cores[] = {"skylakex", "cooperlake", "sapphirerapids"};
    return names_core_in(core, avx512_cores, sizeof avx512_cores / sizeof *avx512_cores);
}

/* OpenBLAS's x86 cores from before AVX2 (its fallbacks included). */
static bool names_pre_avx2_core(const char *core)
{
    static const char *const old_cores[] = {
        "prescott", "core2",    "penryn",    "dunnington", "nehalem",    "sandybridge",
        "atom",     "katmai",   "coppermine", "northwood", "banias",     "opteron",
        "opteron_sse3", "barcelona", "bobcat", "bulldozer", "piledriver", "steamroller",
        "excavator", "nano"};
    return names_core_in(core, old_cores, sizeof old_cores / sizeof *old_cores);
}

static bool is_openblas(void) { return strncmp(ax_build_info_get().blas, "OpenBLAS", 8) == 0; }

/* The OpenBLAS core whose kernels fit this CPU best: Cooperlake (AVX-512
 * with BF16; Sapphire Rapids and later run the same float kernels),
 * SkylakeX (AVX-512), Haswell (AVX2 + FMA); NULL for older CPUs. */
static const char *best_core(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
    return NULL;
}

/* True when OPENBLAS_CORETYPE names a core without AVX-512 on a CPU with it. */
static bool core_override_is_stale(const char *core)
{
    if (!core || getenv("AXON_IGNORED_OPENBLAS_CORETYPE") || getenv("AXON_KEEP_OPENBLAS_CORETYPE"))
        return false;
    if (!is_openblas())
        return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && !names_avx512_core(core);
}

/* True when OpenBLAS, left to detect the CPU, chose kernels older than the
 * CPU: OpenBLAS 0.3.21 (Debian 12) knows Intel CPUs by model number up to
 * Sapphire Rapids, and on a newer one (Emerald Rapids, family 6 model 207)
 * falls back to Prescott's SSE3 kernels, several times slower. */
static bool detected_core_falls_short(const char *core, const char *best)
{
    if (core || !best || getenv("AXON_DETECTED_OPENBLAS_CORETYPE") ||
        getenv("AXON_KEEP_OPENBLAS_CORETYPE") || !is_openblas())
        return false;
    const char *detected = ax_build_info_get().blas_kernels;
    if (!detected)
        return false;
    return strcmp(best, "Haswell") == 0 ? names_pre_avx2_core(detected) : !names_avx512_core(detected);
}

void cli_release_blas_core_override(char **argv)
{
    const char *core = getenv("OPENBLAS_CORETYPE");
    const char *best = best_core();
    const bool drop_core = core_override_is_stale(core);
    const bool choose_core = detected_core_falls_short(core, best);
    const bool set_spin = !getenv("GOMP_SPINCOUNT") && !getenv("OMP_WAIT_POLICY");
    if (!drop_core && !choose_core && !set_spin)
        return;
    if (drop_core) {
        /* Set the fitting core rather than unset the variable: OpenBLAS's
         * own detection may not know this CPU either (see below). */
        if (setenv("AXON_IGNORED_OPENBLAS_CORETYPE", core, 1) != 0 ||
            (best ? setenv("OPENBLAS_CORETYPE", best, 1) : unsetenv("OPENBLAS_CORETYPE")) != 0)
            return;
    }
    if (choose_core && (setenv("AXON_DETECTED_OPENBLAS_CORETYPE", ax_build_info_get().blas_kernels, 1) != 0 ||
                        setenv("OPENBLAS_CORETYPE", best, 1) != 0))
        return;
    const bool idle = set_spin && ax_others_running() == 0;
    if (set_spin && (setenv("GOMP_SPINCOUNT", idle ? SPIN_IDLE : SPIN_BUSY, 1) != 0 ||
                     setenv("AXON_CHOSE_GOMP_SPINCOUNT", idle ? "idle" : "busy", 1) != 0))
        return;
    execv("/proc/self/exe", argv);
    /* Could not restart (no /proc): carry on as we are. */
    if (drop_core) {
        setenv("OPENBLAS_CORETYPE", getenv("AXON_IGNORED_OPENBLAS_CORETYPE"), 1);
        unsetenv("AXON_IGNORED_OPENBLAS_CORETYPE");
    }
    if (choose_core) {
        unsetenv("OPENBLAS_CORETYPE");
        unsetenv("AXON_DETECTED_OPENBLAS_CORETYPE");
    }
    if (set_spin) {
        unsetenv("GOMP_SPINCOUNT");
        unsetenv("AXON_CHOSE_GOMP_SPINCOUNT");
    }
}
