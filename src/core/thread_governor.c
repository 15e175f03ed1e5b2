/* thread_governor.c: see thread_governor.h. */
#include "core/thread_governor.h"

#include <math.h>
#include <string.h>

#include "axon.h"

/* Long enough that a window holds several steps of a small network (each
 * about 1 ms) and several clock ticks of /proc/stat's idle time, short enough
 * that a window on too many threads costs little. */
#define WINDOW_SECONDS 0.05
/* Fewer threads when the run's threads waited this long per second of the
 * window, in all: 0.3 of a thread, between what an idle machine and one
 * beside busy loops show (docs/notes/threads.md has the measurements). */
#define WAITING_TO_LEAVE 0.3
/* More threads when the unused CPUs idled this much per second (a core's
 * worth, less the ticks' coarseness: at 50 ms a tick is 0.2 of a core)
 * over a span of IDLE_SPAN seconds (docs/notes/threads.md). */
#define IDLE_TO_RETURN 0.8
#define IDLE_SPAN 0.2

int ax_thread_governor_start_on(int most, int cores, int others)
{
    const int free = others < 0 ? most : cores - others;
    return free < 1 ? 1 : free < most ? free : most;
}

void ax_thread_governor_start(ax_thread_governor *g, bool enabled)
{
    memset(g, 0, sizeof *g);
    g->most = g->threads = ax_threads();
    g->cores = ax_cpu_load_cores();
    g->enabled = enabled && g->most > 1 && ax_cpu_load_read(&g->window_start);
    if (!g->enabled)
        return;
    g->threads = ax_thread_governor_start_on(g->most, g->cores, ax_cpu_load_others_running());
    if (g->threads != g->most)
        ax_threads_run_on(g->threads);
}

static void move_to(ax_thread_governor *g, int threads)
{
    g->threads = threads;
    g->idle_in_span = g->span_seconds = 0.0;
    ax_threads_run_on(threads);
}

void ax_thread_governor_observe(ax_thread_governor *g, double seconds, double waiting_seconds,
                                double idle_seconds)
{
    if (seconds <= 0.0)
        return;
    const double waiting = waiting_seconds / seconds; /* threads, on average */
    if (g->threads > 1 && waiting >= WAITING_TO_LEAVE) {
        const long leave = lround(waiting) > 1 ? lround(waiting) : 1;
        move_to(g, g->threads > leave ? g->threads - (int)leave : 1);
        return;
    }
    /* Judged over spans of IDLE_SPAN, each on its own: a long busy past
     * does not hold the run back once a core is free. */
    g->idle_in_span += idle_seconds > 0.0 ? idle_seconds : 0.0;
    g->span_seconds += seconds;
    if (g->span_seconds < IDLE_SPAN)
        return;
    const double idle = g->idle_in_span / g->span_seconds; /* cores */
    g->idle_in_span = g->span_seconds = 0.0;
    if (g->threads < g->most && idle >= IDLE_TO_RETURN) {
        const int more = g->threads + (int)floor(idle + 1.0 - IDLE_TO_RETURN);
        move_to(g, more < g->most ? more : g->most);
    }
}

void ax_thread_governor_step(ax_thread_governor *g, double seconds)
{
    if (!g->enabled)
        return;
    if (g->threads < g->most)
        g->fewer_seconds += seconds;
    g->window_seconds += seconds;
    /* On one thread only a span can change the count: read /proc once a span. */
    if (g->window_seconds < (g->threads > 1 ? WINDOW_SECONDS : IDLE_SPAN))
        return;
    ax_cpu_load_sample now;
    if (!ax_cpu_load_read(&now))
        return; /* a passing failure: try again at the next step */
    /* Thread ends take their waiting time with them: no negative windows. */
    const double waited = now.waiting_seconds - g->window_start.waiting_seconds;
    ax_thread_governor_observe(g, now.seconds - g->window_start.seconds, waited > 0 ? waited : 0,
                               now.idle_seconds - g->window_start.idle_seconds);
    g->window_start = now;
    g->window_seconds = 0.0;
}

void ax_thread_governor_finish(ax_thread_governor *g)
{
    if (g->enabled && g->threads != g->most)
        ax_threads_run_on(g->most);
    g->enabled = false;
}
