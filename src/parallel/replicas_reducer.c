/* replicas_reducer.c: the reducer (core/reducer.h) of one of several
 * replicas, ranks under mpirun or threads of --replicas, each operation a
 * call of replicas.c; and ax_reducer_create, which learns from the
 * communicator whether there are several, and gives ax_train (core/train.c)
 * this reducer or the one of a process alone. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "base/error.h"
#include "base/memory.h"
#include "core/reducer.h"
#include "parallel/replicas.h"

static ax_replicas *replicas_of(const ax_reducer *self) { return self->context; }

static void replicated_select(ax_reducer *self, const ax_batch *batch, ax_batch *local)
{
    ax_replicas *replicas = replicas_of(self);
    *local = *batch;
    local->count = ax_replicas_select(replicas, batch->order, batch->first, batch->count);
    local->order = batch->order ? replicas->local_order : NULL;
    local->first = 0;
}

static void replicated_arm(ax_reducer *self, ax_net *net, int64_t rows)
{
    ax_replicas_arm(replicas_of(self), net, rows);
}

static ax_status replicated_reduce(ax_reducer *self, ax_net *net, int64_t rows, double *loss)
{
    return ax_replicas_reduce(replicas_of(self), net, rows, loss);
}

static ax_status replicated_sum_evaluation(ax_reducer *self, int64_t rows, double *loss,
                                           double *accuracy)
{
    return ax_replicas_sum_evaluation(replicas_of(self), rows, loss, accuracy);
}

static uint64_t replicated_dropout_key(const ax_reducer *self, uint64_t key)
{
    return ax_replicas_dropout_key(replicas_of(self), key);
}

/* The other ranks learn of the vote with the next sum. */
static bool replicated_vote_stop(ax_reducer *self)
{
    replicas_of(self)->stop_vote = 1.0;
    return false;
}

static bool replicated_stop_agreed(const ax_reducer *self) { return replicas_of(self)->stop_agreed; }

static ax_status replicated_agree_stop(ax_reducer *self, bool vote, bool *stop)
{
    return ax_replicas_agree_stop(replicas_of(self), vote, stop);
}

static ax_status replicated_agree_ready(ax_reducer *self, ax_status status)
{
    return ax_replicas_agree_ready(replicas_of(self), status);
}

static ax_status replicated_share_outcome(ax_reducer *self, ax_status status, const char *what)
{
    return ax_replicas_share_outcome(replicas_of(self), status, what);
}

static ax_status replicated_check(ax_reducer *self, const ax_net *net, int epoch)
{
    return ax_replicas_check(replicas_of(self), net, epoch);
}

static ax_status replicated_fingerprints(ax_reducer *self, const ax_dataset *train,
                                         const ax_dataset *validation, uint64_t *train_hash,
                                         uint64_t *validation_hash)
{
    return ax_replicas_fingerprints(replicas_of(self), train, validation, train_hash, validation_hash);
}

static const ax_reducer_ops replicated_ops = {
    .select = replicated_select,
    .arm = replicated_arm,
    .reduce = replicated_reduce,
    .sum_evaluation = replicated_sum_evaluation,
    .dropout_key = replicated_dropout_key,
    .vote_stop = replicated_vote_stop,
    .stop_agreed = replicated_stop_agreed,
    .agree_stop = replicated_agree_stop,
    .agree_ready = replicated_agree_ready,
    .share_outcome = replicated_share_outcome,
    .check = replicated_check,
    .fingerprints = replicated_fingerprints,
};

static ax_reducer replicated_reducer(ax_replicas *replicas)
{
    return (ax_reducer){.ops = &replicated_ops,
                        .context = replicas,
                        .rank = replicas->rank,
                        .ranks = replicas->size,
                        .train_rows = replicas->global_rows,
                        .validation_rows = replicas->validation_rows};
}

ax_status ax_reducer_create(const ax_communicator *communicator, const ax_net *net,
                            const ax_dataset *train, const ax_dataset *validation,
                            const ax_dataset *test, ax_reducer *out)
{
    /* With several ranks, every one learns the others' row counts first. */
    ax_replicas *replicas = NULL;
    AX_TRY(ax_replicas_create(communicator, net, train, validation, test, &replicas));
    *out = replicas ? replicated_reducer(replicas) : ax_reducer_single(train, validation);
    return AX_STATUS_OK;
}

ax_status ax_reducer_finish(ax_reducer *reducer, ax_status status, double *communication_seconds)
{
    if (reducer->ops != &replicated_ops)
        return status;
    ax_replicas *replicas = replicas_of(reducer);
    /* A rank that failed before training tells the others, which wait for it. */
    if (!replicas->ready_agreed)
        status = ax_replicas_agree_ready(replicas, status);
    *communication_seconds = replicas->seconds;
    ax_replicas_free(replicas);
    reducer->context = NULL;
    return status;
}
