/* bench_stats.h: `axon bench entropy-mi|tensor-mean` (bench_stats.c). */
#ifndef AXON_CLI_BENCH_STATS_H
#define AXON_CLI_BENCH_STATS_H

#include <stdbool.h>

/* True for the workload names bench_stats.c runs. */
bool bench_stats_handles(const char *name);

/* argv[0] is "bench", argv[1] the workload; returns the exit status. */
int command_bench_stats(int argc, char **argv);

#endif
