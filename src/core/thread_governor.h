/* thread_governor.h: how many of its threads a training run uses, chosen
 * as it trains.
 *
 * On an idle machine all of them are fastest. When other processes hold
 * the cores, OpenMP's and the BLAS's barriers wait for whichever thread the
 * kernel has descheduled, and fewer threads are faster: beside two busy
 * loops on 2 cores, B1(a) took 1.5-3.3 s per epoch on 2 threads and
 * 0.6 s on 1 (docs/notes/threads.md). The governor times the steps in
 * windows of about WINDOW_SECONDS, now and then runs one window on the
 * neighbouring thread count (half or double, within [1, the run's]) and
 * moves there when it was faster. A probe that loses waits four times as
 * long before the next, so an idle run spends about 0.5 % of its time on
 * probes.
 *
 * Changing the thread count leaves the results alone only where every
 * kernel sums in an order that does not depend on it: the CPU backend in
 * float32 and bf16 (cpu_backend.c's GEMM_K_BLOCK; dev/thread_bits.sh). The
 * trainer enables the governor only there, alone (not as one of several
 * replicas or ranks), and when ax_train_config.adapt_threads is set. */
#ifndef AX_THREAD_GOVERNOR_H
#define AX_THREAD_GOVERNOR_H

#include <stdbool.h>
#include <stdint.h>

#include "axon.h"

typedef struct ax_thread_governor {
    bool enabled;
    int most;             /* the run's threads (ax_threads() at the start) */
    int threads;          /* in use now */
    int probing;          /* the count a probe window runs on, else 0 */
    int next_probe_down;  /* alternates the probe's direction */
    double window_seconds, window_flops; /* the window so far */
    double current_rate;  /* FLOP/s on `threads`, recent windows (0: none yet) */
    int windows_since_probe, probe_interval;
    double fewer_seconds; /* time this epoch on fewer threads than `most`, probes aside */
} ax_thread_governor;

/* Runs OpenMP loops (the calling thread's) and the BLAS on n threads,
 * leaving ax_threads(), the run's own count, as it is (runtime.c). */
void ax_threads_run_on(int n);

/* True when the CPU backend's GEMMs in precision give the same bits on
 * 1 thread as on `threads` for a set of awkward shapes (thread_invariance.c;
 * computed once per precision and thread count, about a millisecond). */
bool ax_gemm_thread_invariant(ax_precision precision, int threads);

/* Starts governing (when enabled) from the current ax_threads(). */
void ax_thread_governor_start(ax_thread_governor *governor, bool enabled);
/* Records a step that took `seconds` for `flops` of work; may change the
 * thread count for the next one. */
void ax_thread_governor_step(ax_thread_governor *governor, double seconds, double flops);
/* Gives the run back its own thread count. */
void ax_thread_governor_finish(ax_thread_governor *governor);

#endif
