/* mpi_communicator.c: the ax_communicator of MPI_COMM_WORLD (sums by
 * MPI_Allreduce, or begun by MPI_Iallreduce and waited for, abort by
 * MPI_Abort), and starting and ending MPI for a
 * program. With AXON_MPI undefined (a build without MPI) the same calls
 * exist and say that MPI is not built in, so programs need no #ifdef. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

int ax_mpi_launched(void)
{
    /* Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE; MPICH's and Intel's
     * Hydra launchers set PMI_SIZE. A singleton MPI_Init (no launcher)
     * would work too, but it is slow and prints warnings: not worth it for
     * one process. (src/prep/ranks.c reads the same variables.) */
    static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (int i = 0; i < 3; i++) {
        const char *text = getenv(names[i]);
        if (text && *text) {
            long size = strtol(text, NULL, 10);
            return size > 0 && size < 1000000000L ? (int)size : 0;
        }
    }
    return 0;
}

#ifdef AXON_MPI

#include <limits.h>
#include <mpi.h>

static bool initialised_here;

ax_status ax_mpi_init(int *argc, char ***argv)
{
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (initialised)
        return AX_STATUS_OK;
    int provided = 0;
    /* Only the thread that calls ax_train talks to MPI; OpenMP threads
     * compute between the sums. */
    int code = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    if (code != MPI_SUCCESS)
        return ax_fail(AX_STATUS_UNSUPPORTED, "MPI_Init_thread failed (error %d)", code);
    if (provided < MPI_THREAD_FUNNELED) {
        MPI_Finalize();
        return ax_fail(AX_STATUS_UNSUPPORTED,
                       "this MPI offers no thread support (MPI_THREAD_FUNNELED), which OpenMP "
                       "threads need");
    }
    initialised_here = true;
    return AX_STATUS_OK;
}

void ax_mpi_finalize(void)
{
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (initialised_here && !finalized)
        MPI_Finalize();
    initialised_here = false;
}

static ax_status mpi_failure(int code, const char *what)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int length = 0;
    MPI_Error_string(code, text, &length);
    return ax_fail(AX_STATUS_IO_ERROR, "%s failed: %s", what, text);
}

static ax_status world_sum(const ax_communicator *self, void *values, int64_t count,
                           ax_precision precision)
{
    (void)self;
    MPI_Datatype type = precision == AX_PRECISION_F64 ? MPI_DOUBLE : MPI_FLOAT;
    size_t size = precision == AX_PRECISION_F64 ? sizeof(double) : sizeof(float);
    /* MPI counts are ints: a larger buffer goes in pieces. */
    for (int64_t done = 0; done < count;) {
        int64_t part = count - done < INT_MAX / 2 ? count - done : INT_MAX / 2;
        int code = MPI_Allreduce(MPI_IN_PLACE, (char *)values + (size_t)done * size, (int)part,
                                 type, MPI_SUM, MPI_COMM_WORLD);
        if (code != MPI_SUCCESS)
            return mpi_failure(code, "MPI_Allreduce");
        done += part;
    }
    return AX_STATUS_OK;
}

/* Non-blocking sums begun and not yet waited for: at most one per layer
 * of a step (each in pieces of at most INT_MAX / 2 values). */
enum { MOST_PENDING = 4 * AX_MAX_LAYERS };
static MPI_Request pending[MOST_PENDING];
static int pending_count;

static ax_status world_sum_wait(const ax_communicator *self)
{
    (void)self;
    int code = MPI_Waitall(pending_count, pending, MPI_STATUSES_IGNORE);
    pending_count = 0;
    return code == MPI_SUCCESS ? AX_STATUS_OK : mpi_failure(code, "MPI_Waitall");
}

static ax_status world_sum_begin(const ax_communicator *self, void *values, int64_t count,
                                 ax_precision precision)
{
    MPI_Datatype type = precision == AX_PRECISION_F64 ? MPI_DOUBLE : MPI_FLOAT;
    size_t size = precision == AX_PRECISION_F64 ? sizeof(double) : sizeof(float);
    for (int64_t done = 0; done < count;) {
        if (pending_count == MOST_PENDING)
            AX_TRY(world_sum_wait(self));
        int64_t part = count - done < INT_MAX / 2 ? count - done : INT_MAX / 2;
        int code = MPI_Iallreduce(MPI_IN_PLACE, (char *)values + (size_t)done * size, (int)part,
                                  type, MPI_SUM, MPI_COMM_WORLD, &pending[pending_count++]);
        if (code != MPI_SUCCESS)
            return mpi_failure(code, "MPI_Iallreduce");
        done += part;
    }
    /* Open MPI moves non-blocking collectives on only inside MPI calls:
     * each layer's begin is the chance for the earlier layers' sums. */
    int flag = 0;
    int code = MPI_Testall(pending_count, pending, &flag, MPI_STATUSES_IGNORE);
    return code == MPI_SUCCESS ? AX_STATUS_OK : mpi_failure(code, "MPI_Testall");
}

static void world_abort(const ax_communicator *self, int code)
{
    (void)self;
    MPI_Abort(MPI_COMM_WORLD, code);
    exit(code); /* MPI_Abort returns only if the MPI is broken */
}

ax_status ax_communicator_mpi_world(ax_communicator *out)
{
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "MPI is not initialised: call ax_mpi_init first");
    int rank = 0, size = 1;
    int code = MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (code == MPI_SUCCESS)
        code = MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (code != MPI_SUCCESS)
        return mpi_failure(code, "MPI_Comm_rank/MPI_Comm_size");
    *out = (ax_communicator){.rank = rank, .size = size, .context = NULL, .sum = world_sum,
                             .abort = world_abort, .sum_begin = world_sum_begin,
                             .sum_wait = world_sum_wait};
    return AX_STATUS_OK;
}

/* The first line of MPI_Get_library_version (callable before MPI_Init). */
const char *ax_mpi_library(void)
{
    static char version[MPI_MAX_LIBRARY_VERSION_STRING];
    if (!version[0]) {
        int length = 0;
        if (MPI_Get_library_version(version, &length) != MPI_SUCCESS)
            return "MPI (version unknown)";
        version[strcspn(version, ",\n")] = '\0';
    }
    return version;
}

#else /* built without MPI */

const char *ax_mpi_library(void) { return NULL; }

static ax_status no_mpi(void)
{
    return ax_fail(AX_STATUS_UNSUPPORTED,
                   "this build of axon has no MPI; rebuild with MPI (apt-get install "
                   "libopenmpi-dev openmpi-bin; cmake -DAXON_MPI=ON)");
}

ax_status ax_mpi_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return no_mpi();
}

void ax_mpi_finalize(void) {}

ax_status ax_communicator_mpi_world(ax_communicator *out)
{
    (void)out;
    return no_mpi();
}

#endif
