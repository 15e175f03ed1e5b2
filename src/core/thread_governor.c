/* thread_governor.c: see thread_governor.h. */
#include "core/thread_governor.h"

#include <string.h>

#include "axon.h"

/* Long enough that a window holds several steps of B1(a) (each about
 * 1 ms) and outlasts a scheduler time slice, short enough that a probe
 * on the slower count costs little. */
#define WINDOW_SECONDS 0.05
/* Windows between probes: the first probe comes early (a run started on a
 * busy machine finds out within a tenth of a second); each probe that
 * loses quadruples the wait, up to one probe window in 129 (6.4 s): a
 * probe on half the threads of an idle machine then costs about 0.5 %, and
 * load that arrives mid-run is found within 6.4 s. After a move the next
 * probe (back) waits 8 windows: a probe of the count just left is likely to
 * lose, and each costs a slow window. Measured on B1(a) beside two busy
 * loops: first probe after 4 windows and doubling, 24 % slower than
 * --threads 1; after 2 and quadrupling, 9 % (docs/notes/threads.md). */
#define FIRST_PROBE_INTERVAL 2
#define AFTER_SWITCH_PROBE_INTERVAL 8
#define LONGEST_PROBE_INTERVAL 128
/* A probe must be this much faster than the recent windows to move: one
 * window on an idle machine can be 10 % off its neighbours, and at 1.05
 * idle runs moved to 1 thread now and then (B1(a): 3 of 10 runs 20 %
 * slower); the gain that load brings is 1.5x and more. */
#define SWITCH_GAIN 1.15


void ax_thread_governor_start(ax_thread_governor *g, bool enabled)
{
    memset(g, 0, sizeof *g);
    g->most = g->threads = ax_threads();
    g->enabled = enabled && g->most > 1;
    g->probe_interval = FIRST_PROBE_INTERVAL;
    g->next_probe_down = 1;
}

/* The count a probe tries: half or double the current one, alternating
 * where both exist. */
static int probe_target(ax_thread_governor *g)
{
    const int down = g->threads / 2, up = g->threads * 2 < g->most ? g->threads * 2 : g->most;
    const bool can_down = down >= 1 && down < g->threads, can_up = up > g->threads;
    bool go_down = can_down && (g->next_probe_down || !can_up);
    g->next_probe_down = !go_down;
    return go_down ? down : can_up ? up : 0;
}

static void end_window(ax_thread_governor *g)
{
    const double rate = g->window_flops / g->window_seconds;
    g->window_seconds = g->window_flops = 0.0;
    if (g->probing) {
        const int tried = g->probing;
        g->probing = 0;
        if (rate > SWITCH_GAIN * g->current_rate) {
            g->threads = tried;
            g->current_rate = rate;
            g->probe_interval = AFTER_SWITCH_PROBE_INTERVAL;
        } else {
            ax_threads_run_on(g->threads);
            g->probe_interval *= 4;
            if (g->probe_interval > LONGEST_PROBE_INTERVAL)
                g->probe_interval = LONGEST_PROBE_INTERVAL;
        }
        g->windows_since_probe = 0;
        return;
    }
    /* The recent windows' rate, half from this one: a probe is compared
     * with more than one window's luck. */
    g->current_rate = g->current_rate > 0 ? 0.5 * (g->current_rate + rate) : rate;
    if (++g->windows_since_probe < g->probe_interval)
        return;
    const int target = probe_target(g);
    if (target > 0) {
        g->probing = target;
        ax_threads_run_on(target);
    }
}

void ax_thread_governor_step(ax_thread_governor *g, double seconds, double flops)
{
    if (!g->enabled)
        return;
    if (!g->probing && g->threads < g->most) /* probes are not the load's doing */
        g->fewer_seconds += seconds;
    g->window_seconds += seconds;
    g->window_flops += flops;
    if (g->window_seconds >= WINDOW_SECONDS && g->window_flops > 0.0)
        end_window(g);
}

void ax_thread_governor_finish(ax_thread_governor *g)
{
    if (g->enabled && (g->threads != g->most || g->probing))
        ax_threads_run_on(g->most);
    g->enabled = false;
}
