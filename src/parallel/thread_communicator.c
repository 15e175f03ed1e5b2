/* thread_communicator.c: ax_communicators whose ranks are threads of this
 * process (axon train --replicas; docs/mpi.md "Replicas in one process").
 * One process of P single-threaded replicas runs as fast as mpirun -np P
 * with one thread each, and much faster than one replica of P threads on
 * small GEMMs, where every call forks and joins a thread team.
 *
 * A sum meets at a barrier, every rank adds its slice of all the ranks'
 * buffers in rank order (in double) and writes the total into every
 * buffer, and a second barrier keeps a rank from reusing its buffer before
 * all have written: no copy, no extra memory, and the same bits on every
 * rank and in every run. The barrier spins briefly (the ranks of a step
 * arrive within microseconds of each other) and then sleeps on a condition
 * variable, so that a rank waiting for a slow one does not burn its core.
 * A rank that gives up (ax_thread_ranks_leave) wakes every waiting rank
 * with a failure instead of leaving it in a sum forever. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"

/* Iterations of the spin before a waiting rank sleeps: about 0.1 to 0.5 ms. */
enum { SPINS = 4000, MOST_RANKS = 4096, SLICE_ALIGN = 16 };

struct ax_thread_ranks {
    int size;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int sleepers;                 /* ranks waiting on wake (under lock) */
    atomic_int arrived;           /* ranks at the barrier in this round */
    atomic_uint generation;       /* rounds of the barrier completed */
    atomic_int left;              /* 1 + the first rank that left; 0 = none */
    void **values;                /* (size) each rank's buffer of the current sum */
    int64_t *counts;              /* (size) its count */
    ax_precision *precisions;     /* (size) its precision */
    ax_communicator *communicators; /* (size) */
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static ax_status left_failure(const ax_thread_ranks *team, int rank)
{
    (void)rank;
    return ax_fail(AX_STATUS_IO_ERROR, "replica %d of %d left the run (it failed; see its message)",
                   atomic_load(&team->left) - 1, team->size);
}

/* The barrier: returns when every rank has arrived, or fails when a rank
 * has left the run. */
static ax_status meet(ax_thread_ranks *team, int rank)
{
    const unsigned round = atomic_load_explicit(&team->generation, memory_order_acquire);
    if (atomic_load(&team->left))
        return left_failure(team, rank);
    if (atomic_fetch_add_explicit(&team->arrived, 1, memory_order_acq_rel) == team->size - 1) {
        atomic_store_explicit(&team->arrived, 0, memory_order_relaxed);
        pthread_mutex_lock(&team->lock);
        atomic_fetch_add_explicit(&team->generation, 1, memory_order_release);
        if (team->sleepers > 0)
            pthread_cond_broadcast(&team->wake);
        pthread_mutex_unlock(&team->lock);
        return AX_STATUS_OK;
    }
    for (int i = 0; i < SPINS; i++) {
        if (atomic_load_explicit(&team->generation, memory_order_acquire) != round)
            return AX_STATUS_OK;
        if (atomic_load_explicit(&team->left, memory_order_relaxed))
            break;
        cpu_relax();
    }
    pthread_mutex_lock(&team->lock);
    team->sleepers++;
    while (atomic_load_explicit(&team->generation, memory_order_acquire) == round &&
           !atomic_load(&team->left))
        pthread_cond_wait(&team->wake, &team->lock);
    team->sleepers--;
    const bool passed = atomic_load_explicit(&team->generation, memory_order_acquire) != round;
    pthread_mutex_unlock(&team->lock);
    return passed ? AX_STATUS_OK : left_failure(team, rank);
}

static ax_status threads_sum(const ax_communicator *self, void *values, int64_t count,
                             ax_precision precision)
{
    ax_thread_ranks *team = self->context;
    const int rank = self->rank, size = team->size;
    team->values[rank] = values;
    team->counts[rank] = count;
    team->precisions[rank] = precision;
    AX_TRY(meet(team, rank));
    /* Every rank sees the same counts, so all refuse alike and none waits. */
    for (int r = 1; r < size; r++)
        if (team->counts[r] != team->counts[0] || team->precisions[r] != team->precisions[0])
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "replica %d of %d: a sum of %lld values met one of %lld on replica "
                           "%d (the replicas called different collectives)",
                           rank, size, (long long)team->counts[0], (long long)team->counts[r], r);
    /* This rank's slice, aligned so that no two ranks write one cache line. */
    int64_t slice = (count + size - 1) / size;
    slice = (slice + SLICE_ALIGN - 1) / SLICE_ALIGN * SLICE_ALIGN;
    const int64_t first = slice * rank < count ? slice * rank : count;
    const int64_t end = first + slice < count ? first + slice : count;
    if (precision == AX_PRECISION_F64) {
        double *const *buffers = (double *const *)team->values;
        for (int64_t i = first; i < end; i++) {
            double total = buffers[0][i];
            for (int r = 1; r < size; r++)
                total += buffers[r][i];
            for (int r = 0; r < size; r++)
                buffers[r][i] = total;
        }
    } else {
        float *const *buffers = (float *const *)team->values;
        for (int64_t i = first; i < end; i++) {
            double total = buffers[0][i];
            for (int r = 1; r < size; r++)
                total += buffers[r][i];
            for (int r = 0; r < size; r++)
                buffers[r][i] = (float)total;
        }
    }
    /* No rank goes on (and reuses its buffer) before every slice is written. */
    return meet(team, rank);
}

static void threads_abort(const ax_communicator *self, int code)
{
    (void)self;
    fflush(stdout);
    fflush(stderr);
    _exit(code); /* every rank is a thread of this process: end it */
}

ax_status ax_thread_ranks_create(int size, ax_thread_ranks **out)
{
    *out = NULL;
    if (size < 1 || size > MOST_RANKS)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%d replicas: give 1 to %d", size, MOST_RANKS);
    ax_thread_ranks *team = calloc(1, sizeof *team);
    bool made = team != NULL;
    if (made) {
        team->values = calloc((size_t)size, sizeof *team->values);
        team->counts = calloc((size_t)size, sizeof *team->counts);
        team->precisions = calloc((size_t)size, sizeof *team->precisions);
        team->communicators = calloc((size_t)size, sizeof *team->communicators);
        made = team->values && team->counts && team->precisions && team->communicators;
    }
    bool locked = made && pthread_mutex_init(&team->lock, NULL) == 0;
    if (locked && pthread_cond_init(&team->wake, NULL) == 0) {
        team->size = size;
        atomic_init(&team->arrived, 0);
        atomic_init(&team->generation, 0u);
        atomic_init(&team->left, 0);
        for (int r = 0; r < size; r++)
            team->communicators[r] = (ax_communicator){.rank = r, .size = size, .context = team,
                                                       .sum = threads_sum, .abort = threads_abort};
        *out = team;
        return AX_STATUS_OK;
    }
    if (locked)
        pthread_mutex_destroy(&team->lock);
    if (team) {
        free(team->values);
        free(team->counts);
        free(team->precisions);
        free(team->communicators);
        free(team);
    }
    return ax_fail(AX_STATUS_OUT_OF_MEMORY, "cannot set up a team of %d replicas", size);
}

ax_communicator *ax_thread_ranks_communicator(ax_thread_ranks *team, int rank)
{
    return team && rank >= 0 && rank < team->size ? &team->communicators[rank] : NULL;
}

void ax_thread_ranks_leave(ax_thread_ranks *team, int rank)
{
    if (!team)
        return;
    pthread_mutex_lock(&team->lock);
    int none = 0;
    atomic_compare_exchange_strong(&team->left, &none, rank + 1);
    pthread_cond_broadcast(&team->wake);
    pthread_mutex_unlock(&team->lock);
}

bool ax_thread_ranks_left(const ax_thread_ranks *team, int *rank)
{
    const int left = team ? atomic_load(&((ax_thread_ranks *)team)->left) : 0;
    if (rank)
        *rank = left - 1;
    return left > 0;
}

void ax_thread_ranks_free(ax_thread_ranks *team)
{
    if (!team)
        return;
    pthread_cond_destroy(&team->wake);
    pthread_mutex_destroy(&team->lock);
    free(team->values);
    free(team->counts);
    free(team->precisions);
    free(team->communicators);
    free(team);
}
