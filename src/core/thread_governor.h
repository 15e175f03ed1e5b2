/* thread_governor.h: how many of its threads a training run uses, chosen
 * as it trains from how busy the cores are.
 *
 * On an idle machine all of them are fastest. When other processes hold
 * the cores, OpenMP's and the BLAS's barriers wait for whichever thread the
 * kernel has descheduled, and fewer threads are faster (docs/notes/threads.md
 * has the measurements). The governor reads what the kernel counts
 * (perf/cpu_load.h) every WINDOW_SECONDS of steps: when the run's threads
 * waited for a core, other processes hold them, and it uses fewer threads;
 * when the cores it leaves unused stay idle, it takes them back. Nothing is
 * tried on the slower count to find out, so an idle run loses nothing.
 *
 * Changing the thread count leaves the results alone only where every
 * kernel sums in an order that does not depend on it: the CPU backend in
 * float32 and bf16 (cpu_backend.c's GEMM_K_BLOCK; dev/thread_bits.sh). The
 * trainer enables the governor only there, alone (not as one of several
 * replicas or ranks), and when ax_train_config.adapt_threads is set; and
 * only on a Linux that reports the figures (else the count stays). */
#ifndef AX_THREAD_GOVERNOR_H
#define AX_THREAD_GOVERNOR_H

#include <stdbool.h>
#include <stdint.h>

#include "axon.h"
#include "perf/cpu_load.h"
#include "perf/threads.h"

typedef struct ax_thread_governor {
    bool enabled;
    int most;    /* the run's threads (ax_threads() at the start) */
    int cores;   /* CPUs the process may run on */
    int threads; /* in use now */
    ax_cpu_load_sample window_start;
    double window_seconds;        /* step time in the window so far */
    double idle_in_span;          /* core-seconds the CPUs idled in this span */
    double span_seconds;          /* of the span (IDLE_SPAN), since the last move */
    double fewer_seconds; /* step time this epoch on fewer threads than `most` */
} ax_thread_governor;


/* True when the CPU backend's GEMMs in precision give the same bits on
 * 1 thread as on `threads` for a set of awkward shapes, and its whole
 * convolutions (oneDNN's, where built) at LeNet's shapes
 * (thread_invariance.c; computed once per precision and thread count,
 * a few milliseconds). */
bool ax_gemm_thread_invariant(ax_precision precision, int threads);

/* Starts governing (when enabled and the figures can be read) from the
 * current ax_threads(), on fewer where other processes run now. */
void ax_thread_governor_start(ax_thread_governor *governor, bool enabled);
/* Records a step that took `seconds`; may change the thread count for the
 * next one. */
void ax_thread_governor_step(ax_thread_governor *governor, double seconds);
/* Gives the run back its own thread count. */
void ax_thread_governor_finish(ax_thread_governor *governor);

/* The decisions alone, for tests: a window of `seconds` in which the run's
 * threads waited waiting_seconds in all and the CPUs idled idle_seconds in
 * all; start_on, the count to start on with `others` tasks of other
 * processes running (-1: unknown). */
void ax_thread_governor_observe(ax_thread_governor *governor, double seconds,
                                double waiting_seconds, double idle_seconds);
int ax_thread_governor_start_on(int most, int cores, int others);

#endif
