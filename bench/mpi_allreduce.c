/* mpi_allreduce.c: what overlapping axon's gradient sum with the backward
 * pass can gain under this MPI (bench/mpi_scaling.sh builds and runs it with
 * mpicc; docs/mpi.md has the figures). Per step, with the ranks lined up by
 * a barrier, it times B2's gradient sum (268,801 floats by default):
 *   - MPI_Allreduce, the blocking sum axon uses by default;
 *   - MPI_Iallreduce + MPI_Wait with nothing between: the same sum, begun
 *     and waited for;
 *   - the wait after MPI_Iallreduce and COMPUTE seconds of busy work without
 *     MPI calls: near 0 if the MPI moves the sum on by itself, near the sum's
 *     own time if it does so only inside MPI calls;
 *   - the wait after six sums begun between six parts of the work, each begin
 *     followed by MPI_Testall, as axon's AXON_ALLREDUCE=overlap does per layer.
 * usage: mpirun -np 2 mpi_allreduce [FLOATS] [STEPS] [COMPUTE_SECONDS]
 *
 * mpirun -np 2 mpi_allreduce compare STEPS BYTES...: for each message size
 * and for float and double, MPI_Allreduce against MPI_Iallreduce + MPI_Wait,
 * nothing else: the two alternate step by step (which goes first alternates
 * too), the ranks lined up by a barrier before each and the buffer refilled
 * (outside the timing) so that the sums never overflow. Prints the median,
 * the 10th and 90th percentiles and the mean per sum, in ms: on a loaded
 * machine the median says more than the mean. Run it under the MCA flags
 * to compare (coll_tuned_use_dynamic_rules 1, coll_tuned_allreduce_algorithm
 * N). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double now(void) { return MPI_Wtime(); }

static volatile double sink;
static void compute(double seconds) /* busy work on this core */
{
    double end = now() + seconds, x = 1.0;
    while (now() < end)
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *what, double *times, int steps)
{
    double mean = 0;
    for (int s = 0; s < steps; s++)
        mean += times[s] / steps;
    qsort(times, (size_t)steps, sizeof *times, by_value);
    printf("  %-26s median %7.3f ms  (p10 %7.3f .. p90 %7.3f)  mean %7.3f\n", what,
           1e3 * times[steps / 2], 1e3 * times[steps / 10], 1e3 * times[steps * 9 / 10], 1e3 * mean);
}

/* One sum of `bytes` bytes of `type`, blocking (0) or begun and waited (1),
 * after a barrier; returns its seconds on this rank. */
static double timed_sum(int how, void *buffer, const void *fresh, long bytes, MPI_Datatype type,
                        int count)
{
    memcpy(buffer, fresh, (size_t)bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = now();
    if (how == 0) {
        MPI_Allreduce(MPI_IN_PLACE, buffer, count, type, MPI_SUM, MPI_COMM_WORLD);
    } else {
        MPI_Request r;
        MPI_Iallreduce(MPI_IN_PLACE, buffer, count, type, MPI_SUM, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    return now() - t;
}

static int compare(int rank, int steps, int sizes, char **size_texts)
{
    for (int i = 0; i < sizes; i++) {
        long bytes = atol(size_texts[i]);
        if (bytes < 8 || steps < 10) {
            if (rank == 0)
                fprintf(stderr, "mpi_allreduce: compare needs STEPS >= 10 and sizes >= 8 bytes\n");
            return 1;
        }
        char *buffer = malloc((size_t)bytes), *fresh = malloc((size_t)bytes);
        double *times[2] = {malloc((size_t)steps * sizeof(double)), malloc((size_t)steps * sizeof(double))};
        for (int type_index = 0; type_index < 2; type_index++) {
            MPI_Datatype type = type_index ? MPI_DOUBLE : MPI_FLOAT;
            int count = (int)(bytes / (type_index ? 8 : 4));
            for (int k = 0; k < count; k++) {
                if (type_index)
                    ((double *)fresh)[k] = 0.001 * (k % 1000) + rank;
                else
                    ((float *)fresh)[k] = 0.001f * (float)(k % 1000) + (float)rank;
            }
            timed_sum(0, buffer, fresh, bytes, type, count); /* warm up both paths */
            timed_sum(1, buffer, fresh, bytes, type, count);
            for (int s = 0; s < steps; s++) {
                int first = s % 2;
                times[first][s] = timed_sum(first, buffer, fresh, bytes, type, count);
                times[!first][s] = timed_sum(!first, buffer, fresh, bytes, type, count);
            }
            if (rank == 0) {
                printf("%ld bytes of %s (%d values), %d steps:\n", bytes, type_index ? "double" : "float",
                       count, steps);
                report("MPI_Allreduce", times[0], steps);
                report("MPI_Iallreduce + MPI_Wait", times[1], steps);
                fflush(stdout);
            }
        }
        free(times[0]);
        free(times[1]);
        free(buffer);
        free(fresh);
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc > 1 && strcmp(argv[1], "compare") == 0) {
        int code = compare(rank, argc > 2 ? atoi(argv[2]) : 200, argc - 3, argv + 3);
        MPI_Finalize();
        return code;
    }
    const int n = argc > 1 ? atoi(argv[1]) : 268801, steps = argc > 2 ? atoi(argv[2]) : 200;
    const double work = argc > 3 ? atof(argv[3]) : 0.016;
    enum { LAYERS = 6 };
    float *g = malloc((size_t)n * sizeof *g);
    for (int i = 0; i < n; i++)
        g[i] = (float)i;
    double blocking = 0, overlapped_wait = 0, tested_wait = 0, alone = 0;
    for (int s = 0; s < steps; s++) {
        /* The two sums alone, in turns: the one that comes first after the
         * previous step's busy work is the one a loaded machine's scheduler
         * interrupts most (a fixed order made MPI_Allreduce look 2-3x slower
         * than MPI_Iallreduce; docs/mpi.md). */
        for (int k = 0; k < 2; k++) {
            const int blocking_now = (k + s) % 2 == 0;
            for (int i = 0; i < n; i++) /* sums of sums would overflow */
                g[i] = (float)(i % 1000);
            MPI_Barrier(MPI_COMM_WORLD);
            double t = now();
            if (blocking_now) {
                MPI_Allreduce(MPI_IN_PLACE, g, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                blocking += now() - t;
            } else {
                MPI_Request r;
                MPI_Iallreduce(MPI_IN_PLACE, g, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
                alone += now() - t;
            }
        }
        MPI_Request r;
        double t;
        /* Iallreduce, then compute with no MPI call, then wait. */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Iallreduce(MPI_IN_PLACE, g, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
        compute(work);
        t = now();
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        overlapped_wait += now() - t;
        /* Per-layer sums begun between parts of the compute, tested at each. */
        MPI_Request rs[LAYERS];
        MPI_Barrier(MPI_COMM_WORLD);
        int per = n / LAYERS, flag;
        for (int l = 0; l < LAYERS; l++) {
            int count = l == LAYERS - 1 ? n - per * l : per;
            MPI_Iallreduce(MPI_IN_PLACE, g + per * l, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &rs[l]);
            MPI_Testall(l + 1, rs, &flag, MPI_STATUSES_IGNORE);
            compute(work / LAYERS);
        }
        t = now();
        MPI_Waitall(LAYERS, rs, MPI_STATUSES_IGNORE);
        tested_wait += now() - t;
    }
    if (rank == 0)
        printf("%d floats, %d steps, %.1f ms of work: MPI_Allreduce %.3f ms, MPI_Iallreduce+MPI_Wait "
               "%.3f ms; wait after the work: without MPI calls %.3f ms, with 6 begins+MPI_Testall "
               "%.3f ms\n",
               n, steps, work * 1e3, 1e3 * blocking / steps, 1e3 * alone / steps, 1e3 * overlapped_wait / steps,
               1e3 * tested_wait / steps);
    free(g);
    MPI_Finalize();
    return 0;
}
