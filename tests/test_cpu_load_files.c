/* test_cpu_load_files.c: what perf/cpu_load.c makes of the kernel's
 * figures, given fake /proc folders whose figures the test knows
 * (ax_cpu_load_read_at, ax_cpu_load_others_running_at):
 * - the idle seconds are the idle + iowait ticks of the CPUs of this
 *   process's affinity set over _SC_CLK_TCK: the machine's "cpu " line,
 *   CPUs outside the set (one beyond CPU_SETSIZE too) and a "cpuN" line of
 *   too few fields count for nothing;
 * - the waiting seconds are the second field of every thread's schedstat,
 *   in nanoseconds; a thread folder without the file (a thread that ended)
 *   or with an unreadable one adds nothing;
 * - the others running are procs_running less this process's threads in
 *   state R (the letter after the last ')' of each thread's stat: a
 *   command with ')' in its name, an empty file and a line without ')'
 *   count as not running), never below 0;
 * - no figure where it cannot be told: no stat file, no CPU of the set in
 *   it, no task folder (both calls); no procs_running line, or a "cpuN"
 *   line of a CPU the process may not run on (the count is machine-wide),
 *   for the others running, -1. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* CPU_COUNT, nftw, mkdtemp */
#endif
#include <ftw.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perf/cpu_load.h"
#include "test_util.h"

static char root[64];

static void write_file(const char *relative, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", root, relative);
    /* the folders on the way, one at a time */
    for (char *slash = strchr(path + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(path, 0700);
        *slash = '/';
    }
    if (!text) { /* a folder only */
        mkdir(path, 0700);
        return;
    }
    FILE *file = fopen(path, "w");
    CHECK(file != NULL);
    if (file) {
        fputs(text, file);
        fclose(file);
    }
}

static int remove_one(const char *path, const struct stat *info, int flag, struct FTW *ftw)
{
    (void)info, (void)flag, (void)ftw;
    return remove(path);
}

static void clear_root(void) { nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS); }

/* A /proc/stat of the CPUs of set: cpuN with idle 1000 (N + 1) and iowait
 * N + 3, then extra, then procs_running (absent where running < 0). Returns
 * the idle + iowait ticks of the set. */
static long long write_stat(const cpu_set_t *set, const char *extra, long long running)
{
    char text[65536];
    int used = snprintf(text, sizeof text, "cpu  100 0 50 9999999 7 0 0 0 0 0\n");
    long long ticks = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, set)) {
            used += snprintf(text + used, sizeof text - (size_t)used, "cpu%d 10 1 2 %d %d 0 0 0 0 0\n",
                             cpu, 1000 * (cpu + 1), cpu + 3);
            ticks += 1000 * (cpu + 1) + cpu + 3;
        }
    used += snprintf(text + used, sizeof text - (size_t)used, "%sintr 12345 0 0\nctxt 999\n", extra);
    if (running >= 0)
        snprintf(text + used, sizeof text - (size_t)used, "procs_running %lld\nprocs_blocked 0\n", running);
    write_file("stat", text);
    return ticks;
}

/* Six threads: two running (R), one sleeping with ')' in its command, one
 * ended (a folder only), one with an empty stat and a garbled schedstat,
 * one with a stat line without ')'. Waiting: 4.5 s in all. */
static void write_threads(void)
{
    write_file("self/task/101/schedstat", "123 4000000000 7\n");
    write_file("self/task/101/stat", "101 (axon) R 1 101 101 0 -1\n");
    write_file("self/task/102/schedstat", "1 500000000 3\n");
    write_file("self/task/102/stat", "102 (odd) name) S 1 101 101\n");
    write_file("self/task/103", NULL);
    write_file("self/task/104/schedstat", "garbled\n");
    write_file("self/task/104/stat", "");
    write_file("self/task/105/stat", "105 (omp) R 1 101 101\n");
    write_file("self/task/106/stat", "106 no-parenthesis R 1\n");
}

int main(void)
{
    snprintf(root, sizeof root, "/tmp/axon_cpu_load_XXXXXX");
    if (!mkdtemp(root)) {
        perror("test_cpu_load_files: mkdtemp");
        return 1;
    }
    cpu_set_t set;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
    const double ticks_per_second = (double)sysconf(_SC_CLK_TCK);
    ax_cpu_load_sample sample;

    /* A machine of exactly this process's CPUs, 5 tasks running. */
    long long ticks = write_stat(&set, "cpu7 1 2\n", 5);
    write_threads();
    CHECK(ax_cpu_load_read_at(root, &sample));
    CHECK_NEAR(sample.idle_seconds, (double)ticks / ticks_per_second, 1e-15);
    CHECK_NEAR(sample.waiting_seconds, 4.5, 1e-15);
    CHECK(sample.seconds > 0.0);
    CHECK(ax_cpu_load_others_running_at(root) == 3);
    write_stat(&set, "", 1); /* fewer running than this process's R threads */
    CHECK(ax_cpu_load_others_running_at(root) == 0);

    /* A CPU the process may not run on, and one beyond CPU_SETSIZE: their
     * ticks are not the process's; the machine-wide count is not told. */
    int outside = 0;
    while (outside < CPU_SETSIZE && CPU_ISSET(outside, &set))
        outside++;
    char extra[128];
    snprintf(extra, sizeof extra, "cpu%d 1 1 1 777777 1 0 0\ncpu%d 1 1 1 888888 1 0 0\n", outside,
             CPU_SETSIZE + 5);
    ticks = write_stat(&set, extra, 5);
    CHECK(ax_cpu_load_read_at(root, &sample));
    CHECK_NEAR(sample.idle_seconds, (double)ticks / ticks_per_second, 1e-15);
    CHECK(ax_cpu_load_others_running_at(root) == -1);

    /* No procs_running line: the load is told, the others running are not. */
    write_stat(&set, "", -1);
    CHECK(ax_cpu_load_read_at(root, &sample));
    CHECK(ax_cpu_load_others_running_at(root) == -1);

    /* A stat file with none of the process's CPUs. */
    write_file("stat", "cpu  1 2 3 4 5\nprocs_running 3\n");
    CHECK(!ax_cpu_load_read_at(root, &sample));
    CHECK(ax_cpu_load_others_running_at(root) == -1);

    /* No task folder, then no stat file at all. */
    write_stat(&set, "", 5);
    clear_root();
    CHECK(mkdir(root, 0700) == 0);
    write_stat(&set, "", 5);
    CHECK(!ax_cpu_load_read_at(root, &sample));
    CHECK(ax_cpu_load_others_running_at(root) == -1);
    char stat_path[96];
    snprintf(stat_path, sizeof stat_path, "%s/stat", root);
    CHECK(remove(stat_path) == 0);
    write_threads();
    CHECK(!ax_cpu_load_read_at(root, &sample));
    CHECK(ax_cpu_load_others_running_at(root) == -1);

    /* The real /proc, as the public calls read it. */
    ax_cpu_load_sample real;
    if (ax_cpu_load_read_at("/proc", &real))
        CHECK(real.idle_seconds >= 0.0 && real.waiting_seconds >= 0.0);
    else
        printf("/proc has no schedstat here: the real figures are not checked\n");
    CHECK(ax_cpu_load_cores() == CPU_COUNT(&set));

    clear_root();
    return test_finish("test_cpu_load_files");
}
