/* bench_stats.h: `axon bench entropy-mi|tensor-mean` (bench_stats.c). */
#ifndef AXON_CLI_BENCH_STATS_H
#define AXON_CLI_BENCH_STATS_H

#include <stdbool.h>
#include <stdio.h>

/* The columns of `axon bench --csv`, bench/compare.sh's and bench/report.py's. */
#define BENCH_CSV_COLUMNS                                                                        \
    "system,workload,variant,precision,threads,batch,width,repeat,epoch,seconds,loss,"           \
    "test_accuracy,gflops,samples_per_second"

/* Opens path for appending rows, writing the header line first when the file is new or
 * empty (report.py reads the columns by name); NULL with errno set on failure. */
FILE *bench_csv_open(const char *path);

/* True for the workload names bench_stats.c runs. */
bool bench_stats_handles(const char *name);

/* argv[0] is "bench", argv[1] the workload; returns the exit status. */
int command_bench_stats(int argc, char **argv);

#endif
