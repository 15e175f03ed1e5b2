/* test_mpi_world.c: the MPI communicator of src/parallel/mpi_communicator.c
 * under mpirun, and its refusals when MPI fails. Started by CTest as a
 * plain program, it launches itself under mpirun (2 ranks; then 1 rank for
 * each start-up failure) and passes on their exit status; 77 (skipped)
 * without mpirun or in a build without MPI. It proves:
 * - ax_mpi_library names the MPI in one line before MPI is started, and
 *   ax_mpi_launched reads the launchers' variables (a size that is no
 *   number or out of range is 0, not a guess);
 * - the world communicator refuses to exist before ax_mpi_init; after it,
 *   it has MPI's rank and size, and ax_mpi_init again is no error;
 * - sums (float64 and float32) are exact over the ranks, and so are 4 x
 *   AX_MAX_LAYERS + 3 overlapped sums begun before one wait (the begin that
 *   finds no room waits for the earlier ones itself);
 * - a failing MPI_Allreduce, MPI_Iallreduce, MPI_Testall, MPI_Waitall or
 *   MPI_Comm_rank is reported as "<call> failed: <MPI's own text>"
 *   (AX_STATUS_IO_ERROR), and a failed MPI_Init_thread, or one without
 *   thread support, is refused (AX_STATUS_UNSUPPORTED) with MPI finalised.
 * The failures come from this program's own MPI_* functions, which MPI's
 * profiling interface lets stand in front of the library's (PMPI_*): each
 * passes the call on unless a test has armed it. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

#ifndef AXON_TEST_MPI
int main(void)
{
    TEST_SKIP("this build of axon has no MPI");
}
#else

#include <mpi.h>

/* ------------------------------------------------- MPI calls that fail */

static const char *failing; /* the MPI function that fails next, or NULL */

static bool fails(const char *name)
{
    if (!failing || strcmp(failing, name) != 0)
        return false;
    failing = NULL;
    return true;
}

static enum { INIT_WORKS, INIT_FAILS, INIT_UNTHREADED } init_mode;

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    if (init_mode == INIT_FAILS)
        return MPI_ERR_OTHER;
    int code = PMPI_Init_thread(argc, argv, required, provided);
    if (init_mode == INIT_UNTHREADED)
        *provided = MPI_THREAD_SINGLE;
    return code;
}

int MPI_Allreduce(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    return fails("MPI_Allreduce") ? MPI_ERR_OTHER : PMPI_Allreduce(in, out, count, type, op, comm);
}

int MPI_Iallreduce(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request)
{
    return fails("MPI_Iallreduce") ? MPI_ERR_OTHER
                                   : PMPI_Iallreduce(in, out, count, type, op, comm, request);
}

/* The request completes either way (so no sum is left half-done between
 * the ranks); the failure is in what is reported. */
int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    int code = PMPI_Waitall(count, requests, statuses);
    return fails("MPI_Waitall") ? MPI_ERR_OTHER : code;
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    int code = PMPI_Testall(count, requests, flag, statuses);
    return fails("MPI_Testall") ? MPI_ERR_OTHER : code;
}

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
    return fails("MPI_Comm_rank") ? MPI_ERR_COMM : PMPI_Comm_rank(comm, rank);
}

static char error_text[MPI_MAX_ERROR_STRING];

static const char *mpi_text(int code)
{
    int length = 0;
    PMPI_Error_string(code, error_text, &length);
    return error_text;
}

/* ------------------------------------------------------------ the ranks */

static void check_library_and_launch(void)
{
    const char *library = ax_mpi_library();
    CHECK(library && strstr(library, "MPI") && !strchr(library, ',') && !strchr(library, '\n'));
    CHECK(ax_mpi_library() == library); /* asked once */
    ax_communicator world;
    CHECK_FAILS(ax_communicator_mpi_world(&world), AX_STATUS_BAD_ARGUMENT,
                "MPI is not initialised: call ax_mpi_init first");
}

/* value i of rank r: exact in float32 too. */
static double value_of(int rank, int64_t i)
{
    return (double)((rank + 1) * 1000 + i % 97) / 4.0;
}

static double sum_of(int size, int64_t i)
{
    double total = 0;
    for (int r = 0; r < size; r++)
        total += value_of(r, i);
    return total;
}

static void check_sums(const ax_communicator *world)
{
    enum { COUNT = 1000 };
    double *d = malloc(COUNT * sizeof *d);
    float *f = malloc(COUNT * sizeof *f);
    for (int64_t i = 0; i < COUNT; i++)
        d[i] = value_of(world->rank, i), f[i] = (float)value_of(world->rank, i);
    CHECK_OK(world->sum(world, d, COUNT, AX_PRECISION_F64));
    CHECK_OK(world->sum(world, f, COUNT, AX_PRECISION_F32));
    int wrong = 0;
    for (int64_t i = 0; i < COUNT; i++)
        wrong += d[i] != sum_of(world->size, i) || f[i] != (float)sum_of(world->size, i);
    CHECK(wrong == 0);
    free(d);
    free(f);

    /* More overlapped sums than there is room for pending requests. */
    enum { PARTS = 4 * AX_MAX_LAYERS + 3, PART = 5 };
    double *parts = malloc(PARTS * PART * sizeof *parts);
    float *floats = malloc(PARTS * PART * sizeof *floats);
    for (int64_t i = 0; i < PARTS * PART; i++)
        parts[i] = value_of(world->rank, i), floats[i] = (float)value_of(world->rank, i);
    for (int p = 0; p < PARTS; p++)
        CHECK_OK(world->sum_begin(world, parts + p * PART, PART, AX_PRECISION_F64));
    CHECK_OK(world->sum_begin(world, floats, PARTS * PART, AX_PRECISION_F32));
    CHECK_OK(world->sum_wait(world));
    wrong = 0;
    for (int64_t i = 0; i < PARTS * PART; i++)
        wrong += parts[i] != sum_of(world->size, i) || floats[i] != (float)sum_of(world->size, i);
    CHECK(wrong == 0);
    free(parts);
    free(floats);
}

/* Every rank arms the same failure, so none waits in a collective that
 * another skipped. */
static void check_failures(const ax_communicator *world)
{
    double values[4] = {1, 2, 3, 4};
    char message[400];
    failing = "MPI_Allreduce";
    snprintf(message, sizeof message, "MPI_Allreduce failed: %s", mpi_text(MPI_ERR_OTHER));
    CHECK_FAILS(world->sum(world, values, 4, AX_PRECISION_F64), AX_STATUS_IO_ERROR, message);
    CHECK(values[0] == 1 && values[3] == 4); /* nothing summed */

    failing = "MPI_Iallreduce";
    snprintf(message, sizeof message, "MPI_Iallreduce failed: %s", mpi_text(MPI_ERR_OTHER));
    CHECK_FAILS(world->sum_begin(world, values, 4, AX_PRECISION_F64), AX_STATUS_IO_ERROR, message);
    CHECK_OK(world->sum_wait(world));

    failing = "MPI_Testall";
    snprintf(message, sizeof message, "MPI_Testall failed: %s", mpi_text(MPI_ERR_OTHER));
    CHECK_FAILS(world->sum_begin(world, values, 4, AX_PRECISION_F64), AX_STATUS_IO_ERROR, message);
    CHECK_OK(world->sum_wait(world)); /* the sum begun still completes */
    CHECK(values[0] == world->size * 1.0 && values[3] == world->size * 4.0);

    failing = "MPI_Waitall";
    CHECK_OK(world->sum_begin(world, values, 4, AX_PRECISION_F64));
    snprintf(message, sizeof message, "MPI_Waitall failed: %s", mpi_text(MPI_ERR_OTHER));
    CHECK_FAILS(world->sum_wait(world), AX_STATUS_IO_ERROR, message);

    failing = "MPI_Comm_rank";
    ax_communicator again;
    snprintf(message, sizeof message, "MPI_Comm_rank/MPI_Comm_size failed: %s",
             mpi_text(MPI_ERR_COMM));
    CHECK_FAILS(ax_communicator_mpi_world(&again), AX_STATUS_IO_ERROR, message);
    failing = NULL;
}

static int run_ranks(int argc, char **argv)
{
    check_library_and_launch();
    CHECK(ax_mpi_launched() >= 1);
    CHECK_OK(ax_mpi_init(&argc, &argv));
    CHECK_OK(ax_mpi_init(&argc, &argv)); /* started already: nothing to do */
    ax_communicator world;
    CHECK_OK(ax_communicator_mpi_world(&world));
    int rank = -1, size = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(world.rank == rank && world.size == size && size == ax_mpi_launched());
    CHECK(world.sum && world.sum_begin && world.sum_wait && world.abort);
    check_sums(&world);
    check_failures(&world);
    ax_mpi_finalize();
    int finalized = 0;
    MPI_Finalized(&finalized);
    CHECK(finalized);
    ax_mpi_finalize(); /* finalised already: nothing to do */
    char name[32];
    snprintf(name, sizeof name, "test_mpi_world rank %d", rank);
    return test_finish(name);
}

static int run_failed_start(int argc, char **argv, bool unthreaded)
{
    init_mode = unthreaded ? INIT_UNTHREADED : INIT_FAILS;
    char message[200];
    snprintf(message, sizeof message, "MPI_Init_thread failed (error %d)", MPI_ERR_OTHER);
    CHECK_FAILS(ax_mpi_init(&argc, &argv), AX_STATUS_UNSUPPORTED,
                unthreaded ? "this MPI offers no thread support (MPI_THREAD_FUNNELED), which "
                             "OpenMP threads need"
                           : message);
    int finalized = 0, initialized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    CHECK(unthreaded ? finalized : !initialized); /* nothing left started */
    ax_communicator world;
    if (!unthreaded)
        CHECK_FAILS(ax_communicator_mpi_world(&world), AX_STATUS_BAD_ARGUMENT, "not initialised");
    ax_mpi_finalize(); /* not started here: nothing to do */
    return test_finish(unthreaded ? "test_mpi_world (no thread support)"
                                  : "test_mpi_world (MPI_Init_thread fails)");
}

/* ------------------------------------------------------- the launcher */

static void check_launch_variables(void)
{
    const char *names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (int i = 0; i < 3; i++)
        unsetenv(names[i]);
    CHECK(ax_mpi_launched() == 0);
    setenv("PMIX_SIZE", "6", 1);
    CHECK(ax_mpi_launched() == 6);
    setenv("PMI_SIZE", "4", 1); /* Hydra's, before PMIx's */
    CHECK(ax_mpi_launched() == 4);
    setenv("PMI_SIZE", "four", 1); /* the first set is the one read: no number, no guess */
    CHECK(ax_mpi_launched() == 0);
    setenv("OMPI_COMM_WORLD_SIZE", "2000000000", 1);
    CHECK(ax_mpi_launched() == 0);
    setenv("OMPI_COMM_WORLD_SIZE", "", 1); /* empty: as if unset */
    setenv("PMI_SIZE", "-3", 1);
    CHECK(ax_mpi_launched() == 0);
    for (int i = 0; i < 3; i++)
        unsetenv(names[i]);
}

/* mpirun -np ranks this program mode; its exit status. */
static int launch(const char *self, const char *ranks, const char *mode)
{
    pid_t child = fork();
    if (child == 0) {
        execlp("timeout", "timeout", "120", "mpirun", "-np", ranks, self, mode, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child)
        return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "ranks") == 0)
        return run_ranks(argc, argv);
    if (argc > 1 && strcmp(argv[1], "init-fails") == 0)
        return run_failed_start(argc, argv, false);
    if (argc > 1 && strcmp(argv[1], "unthreaded") == 0)
        return run_failed_start(argc, argv, true);
    if (system("command -v mpirun > /dev/null 2>&1") != 0)
        TEST_SKIP("no mpirun on PATH (apt-get install openmpi-bin)");
    check_launch_variables();
    /* Root in a container needs Open MPI's consent; 2 ranks may share a core. */
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
    setenv("OMPI_MCA_btl", "self,vader", 1);
    const char *runs[][2] = {{"2", "ranks"}, {"1", "init-fails"}, {"1", "unthreaded"}};
    for (int i = 0; i < 3; i++) {
        int status = launch(argv[0], runs[i][0], runs[i][1]);
        if (status != 0) {
            fprintf(stderr, "mpirun -np %s %s %s: exit status %d\n", runs[i][0], argv[0],
                    runs[i][1], status);
            test_failures++;
        }
    }
    return test_finish("test_mpi_world");
}

#endif
