/* cpu_load.h: how busy the cores are, as the kernel counts it (Linux's
 * /proc): the time this process's threads spent runnable but waiting for a
 * core (each thread's schedstat, in nanoseconds), the idle time of the CPUs
 * the process may run on (/proc/stat, in clock ticks), and how many tasks of
 * other processes are running now. The thread governor (core/thread_governor.h)
 * chooses a training run's thread count from them. */
#ifndef AX_CPU_LOAD_H
#define AX_CPU_LOAD_H

#include <stdbool.h>

/* Running totals since boot; a window's figures are two samples' differences. */
typedef struct ax_cpu_load_sample {
    double seconds;         /* the monotonic clock */
    double waiting_seconds; /* this process's threads' time runnable on no core */
    double idle_seconds;    /* idle time of the CPUs in this process's affinity set */
} ax_cpu_load_sample;

/* Takes a sample; false where /proc lacks either figure (another system, or
 * a kernel without schedstat), and then *out is unusable. */
bool ax_cpu_load_read(ax_cpu_load_sample *out);

/* CPUs in this process's affinity set. */
int ax_cpu_load_cores(void);

/* Tasks of other processes running or waiting for a core now (the least of
 * three looks a millisecond apart, so that a passing task does not count),
 * or -1 where that cannot be told: the count is machine-wide, so it is
 * given only when this process may run on every CPU of the machine. */
int ax_cpu_load_others_running(void);

/* The two above reading the files under proc, a folder laid out as /proc
 * (proc/stat, proc/self/task/ID/schedstat and .../stat), rather than /proc
 * itself: a test gives them figures it knows. */
bool ax_cpu_load_read_at(const char *proc, ax_cpu_load_sample *out);
int ax_cpu_load_others_running_at(const char *proc);

#endif
