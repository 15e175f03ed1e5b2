/* replicas.c: the threads of `axon train --replicas P` (replicas.h). Each
 * thread is one rank with the library's thread communicator
 * (ax_thread_ranks): the same code path as a rank under mpirun, so every
 * guarantee of the MPI path (shards, global shuffling, checkpoints from
 * rank 0, agreed stops) holds here too, with no MPI. A thread of one
 * OpenMP thread calls single-threaded BLAS kernels, which is the point: the
 * replicas never fork and join a thread team per small GEMM. */
#define _POSIX_C_SOURCE 200809L
#include "replicas.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "job.h"
#include "progress.h"

typedef struct replica {
    ax_thread_ranks *team;
    int rank;
    int threads;
    replica_body body;
    void *user;
    int result;
} replica;

/* ax_set_threads also tells OpenBLAS, whose thread count is global: one
 * replica at a time sets it (all to the same value). */
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;

/* Ctrl-C or SIGTERM: every replica sees the same flag, as every rank of an
 * MPI job sees its own signal; all stop after the same step. */
static bool replica_stop_requested(const ax_communicator *self)
{
    (void)self;
    return progress_interrupted();
}

static void *replica_main(void *argument)
{
    replica *self = argument;
    cli_job_enter_replica(ax_thread_ranks_communicator(self->team, self->rank));
    pthread_mutex_lock(&threads_lock);
    ax_status status = ax_set_threads(self->threads); /* this thread's OpenMP count */
    pthread_mutex_unlock(&threads_lock);
    if (status != AX_STATUS_OK)
        self->result = report_failure(status, "--threads");
    else
        self->result = self->body(self->user, self->rank);
    if (self->result != CLI_EXIT_OK)
        ax_thread_ranks_leave(self->team, self->rank); /* nobody waits for this one */
    cli_job_enter_replica(NULL);
    return NULL;
}

int replicas_run(int count, int threads_each, replica_body body, void *user)
{
    ax_thread_ranks *team = NULL;
    ax_status status = ax_thread_ranks_create(count, &team);
    if (status != AX_STATUS_OK)
        return report_failure(status, "--replicas");
    for (int r = 0; r < count; r++)
        ax_thread_ranks_communicator(team, r)->stop_requested = replica_stop_requested;
    replica *replicas = calloc((size_t)count, sizeof *replicas);
    pthread_t *threads = calloc((size_t)count, sizeof *threads);
    if (!replicas || !threads) {
        free(replicas);
        free(threads);
        ax_thread_ranks_free(team);
        fprintf(stderr, "axon: --replicas %d: out of memory\n", count);
        return CLI_EXIT_RUNTIME;
    }
    cli_job_tag_replicas();
    int started = 0;
    for (; started < count; started++) {
        replicas[started] = (replica){.team = team, .rank = started, .threads = threads_each,
                                      .body = body, .user = user};
        if (pthread_create(&threads[started], NULL, replica_main, &replicas[started]) != 0)
            break;
    }
    if (started < count) {
        fprintf(stderr, "axon: --replicas %d: could not start thread %d\n", count, started);
        ax_thread_ranks_leave(team, started); /* the started ones stop at their first sum */
    }
    for (int r = 0; r < started; r++)
        pthread_join(threads[r], NULL);
    int result = started < count ? CLI_EXIT_RUNTIME : replicas[0].result;
    int first_left = -1;
    if (started == count && ax_thread_ranks_left(team, &first_left) && first_left >= 0)
        result = replicas[first_left].result;
    free(replicas);
    free(threads);
    ax_thread_ranks_free(team);
    return result;
}
