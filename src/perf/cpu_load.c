/* cpu_load.c: see cpu_load.h. Each sample reads /proc/stat and one small
 * file per thread of this process: about 13 us, taken once per 50 ms (0.2 s on one thread). */
#include "perf/cpu_load.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

static bool affinity(cpu_set_t *set)
{
    CPU_ZERO(set);
    return sched_getaffinity(0, sizeof *set, set) == 0;
}

int ax_cpu_load_cores(void)
{
    cpu_set_t set;
    return affinity(&set) ? CPU_COUNT(&set) : 1;
}

/* What /proc/stat says in one read: the idle and iowait ticks of the CPUs
 * in set, how many "cpuN" lines it has in all, and procs_running (the
 * tasks running or runnable now, machine-wide; -1 if absent). False
 * without the file or without a CPU of set in it. */
typedef struct proc_stat {
    long long idle_ticks, running;
    int cpus;
} proc_stat;

static bool read_proc_stat(const char *proc, const cpu_set_t *set, proc_stat *out)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/stat", proc);
    FILE *file = fopen(path, "r");
    if (!file)
        return false;
    *out = (proc_stat){.running = -1};
    char line[512];
    bool found = false;
    while (fgets(line, sizeof line, file)) {
        int cpu;
        long long user, nice, system, idle, iowait;
        if (sscanf(line, "procs_running %lld", &out->running) == 1 ||
            strncmp(line, "cpu", 3) != 0 || !isdigit((unsigned char)line[3]) ||
            sscanf(line, "cpu%d %lld %lld %lld %lld %lld", &cpu, &user, &nice, &system, &idle,
                   &iowait) != 6)
            continue;
        out->cpus++;
        if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, set)) {
            out->idle_ticks += idle + iowait;
            found = true;
        }
    }
    fclose(file);
    return found;
}

/* Calls visit(the open file named leaf of each of this process's threads). */
static bool each_thread(const char *proc, const char *leaf, void (*visit)(FILE *, void *),
                        void *context)
{
    char folder[PATH_MAX];
    snprintf(folder, sizeof folder, "%s/self/task", proc);
    DIR *tasks = opendir(folder);
    if (!tasks)
        return false;
    bool any = false;
    for (struct dirent *entry; (entry = readdir(tasks));) {
        if (entry->d_name[0] == '.')
            continue;
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/%.20s/%s", folder, entry->d_name, leaf);
        FILE *file = fopen(path, "r");
        if (!file) /* the thread has ended since readdir */
            continue;
        visit(file, context);
        fclose(file);
        any = true;
    }
    closedir(tasks);
    return any;
}

/* schedstat: nanoseconds on a core, nanoseconds runnable waiting, slices. */
static void add_waiting(FILE *file, void *context)
{
    unsigned long long running, waiting;
    if (fscanf(file, "%llu %llu", &running, &waiting) == 2)
        *(unsigned long long *)context += waiting;
}

bool ax_cpu_load_read(ax_cpu_load_sample *out) { return ax_cpu_load_read_at("/proc", out); }

bool ax_cpu_load_read_at(const char *proc, ax_cpu_load_sample *out)
{
    cpu_set_t set;
    proc_stat stat;
    unsigned long long waiting = 0;
    static long ticks_per_second;
    if (!ticks_per_second)
        ticks_per_second = sysconf(_SC_CLK_TCK);
    if (ticks_per_second <= 0 || !affinity(&set) || !read_proc_stat(proc, &set, &stat) ||
        !each_thread(proc, "schedstat", add_waiting, &waiting))
        return false;
    out->seconds = ax_seconds_now();
    out->waiting_seconds = (double)waiting * 1e-9;
    out->idle_seconds = (double)stat.idle_ticks / (double)ticks_per_second;
    return true;
}

/* The state letter of /proc/.../stat, after the command's closing ')'. */
static void count_running(FILE *file, void *context)
{
    char line[1024];
    if (!fgets(line, sizeof line, file))
        return;
    const char *end = strrchr(line, ')');
    if (end && end[1] == ' ' && end[2] == 'R')
        ++*(int *)context;
}

int ax_cpu_load_others_running(void) { return ax_cpu_load_others_running_at("/proc"); }

int ax_cpu_load_others_running_at(const char *proc)
{
    cpu_set_t set;
    if (!affinity(&set))
        return -1;
    int least = -1;
    for (int look = 0; look < 3; look++) {
        if (look)
            nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
        proc_stat stat;
        int own = 0;
        /* Machine-wide, so only where the process may run on every CPU. */
        if (!read_proc_stat(proc, &set, &stat) || stat.cpus != CPU_COUNT(&set) || stat.running < 0 ||
            !each_thread(proc, "stat", count_running, &own))
            return -1;
        const int others = stat.running > own ? (int)(stat.running - own) : 0;
        least = least < 0 || others < least ? others : least;
    }
    return least;
}
