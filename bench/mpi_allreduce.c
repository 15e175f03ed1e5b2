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
 * usage: mpirun -np 2 mpi_allreduce [FLOATS] [STEPS] [COMPUTE_SECONDS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

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

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const int n = argc > 1 ? atoi(argv[1]) : 268801, steps = argc > 2 ? atoi(argv[2]) : 200;
    const double work = argc > 3 ? atof(argv[3]) : 0.016;
    enum { LAYERS = 6 };
    float *g = malloc((size_t)n * sizeof *g);
    for (int i = 0; i < n; i++)
        g[i] = (float)i;
    double blocking = 0, overlapped_wait = 0, tested_wait = 0, alone = 0;
    for (int s = 0; s < steps; s++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = now();
        MPI_Allreduce(MPI_IN_PLACE, g, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        blocking += now() - t;
        MPI_Request r;
        MPI_Barrier(MPI_COMM_WORLD);
        t = now();
        MPI_Iallreduce(MPI_IN_PLACE, g, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        alone += now() - t;
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
