/* reducer.h: what the training loop asks of the other replicas of a
 * data-parallel run, as one table of operations: which rows of a global
 * batch this process computes, the sum of the gradient and loss over the
 * replicas, the sums of evaluation figures, agreeing on a stop and on being
 * ready, sharing the outcome of what one process did alone (a checkpoint),
 * the dropout key, a check that the replicas agree, and the fingerprints of
 * the whole data sets. train.c calls it unconditionally. Alone,
 * ax_reducer_single's operations do nothing or hand their input back; the
 * replicated reducer (src/parallel/replicas_reducer.c, over ranks or threads)
 * wraps parallel/replicas.c, and gives ax_train (train.c) the one to use.
 * The interface is here, in core, so that core includes nothing of parallel. */
#ifndef AX_CORE_REDUCER_H
#define AX_CORE_REDUCER_H

#include "axon.h"
#include "core/net.h"

typedef struct ax_reducer ax_reducer;

typedef struct ax_reducer_ops {
    /* *local = this process's rows of global `batch`, as a batch of its
     * shard (batch->order NULL: the whole shard, a full batch). */
    void (*select)(ax_reducer *self, const ax_batch *batch, ax_batch *local);
    /* Before a plain mini-batch pass over `rows` rows (0: none): lets the
     * backward pass begin the sums layer by layer, where that is possible. */
    void (*arm)(ax_reducer *self, ax_net *net, int64_t rows);
    /* After this process's pass over `rows` rows of the batch (0 rows: *loss
     * 0): the gradient arena and *loss become those of the whole batch. */
    ax_status (*reduce)(ax_reducer *self, ax_net *net, int64_t rows, double *loss);
    /* A shard's evaluation over `rows` rows (0: its figures are ignored):
     * *loss and *accuracy become those of the whole set. */
    ax_status (*sum_evaluation)(ax_reducer *self, int64_t rows, double *loss, double *accuracy);
    /* This process's dropout key for a step's key. */
    uint64_t (*dropout_key)(const ax_reducer *self, uint64_t key);
    /* The progress callback asked to stop inside an epoch: true when the
     * stop is to happen now; false when the others learn it with the next
     * sum (stop_agreed then says so). */
    bool (*vote_stop)(ax_reducer *self);
    /* A stop voted by some process arrived with the last sum. */
    bool (*stop_agreed)(const ax_reducer *self);
    /* At an epoch's end: *stop = whether any process votes to stop (vote,
     * one still on its way, or a signal to any of them). */
    ax_status (*agree_stop)(ax_reducer *self, bool vote, bool *stop);
    /* Once, before the first step, with the status of this process's
     * preparations: the first failure of any process, for every one. */
    ax_status (*agree_ready)(ax_reducer *self, ax_status status);
    /* The status of something process 0 alone did (`what`), for every one. */
    ax_status (*share_outcome)(ax_reducer *self, ax_status status, const char *what);
    /* After epoch `epoch`: fails when the replicas' weights differ. */
    ax_status (*check)(ax_reducer *self, const ax_net *net, int epoch);
    /* The fingerprints (data/fingerprint.h) of the whole training and validation
     * sets (validation NULL: *validation_hash 0). */
    ax_status (*fingerprints)(ax_reducer *self, const ax_dataset *train, const ax_dataset *validation,
                              uint64_t *train_hash, uint64_t *validation_hash);
} ax_reducer_ops;

struct ax_reducer {
    const ax_reducer_ops *ops;
    void *context;            /* the implementation's own (ax_replicas); NULL alone */
    int rank, ranks;          /* this process is rank of ranks: 0 of 1 alone */
    int64_t train_rows;       /* training rows of all processes */
    int64_t validation_rows;  /* validation rows of all processes; -1 without the set */
};

/* The reducer of a process training alone: every operation does nothing or
 * returns its input (vote_stop: stop now). */
ax_reducer ax_reducer_single(const ax_dataset *train, const ax_dataset *validation);

/* The reducer ax_train trains with: of one of several replicas when the
 * communicator has several ranks (after every rank learnt the others' row
 * counts), else ax_reducer_single. ax_reducer_finish ends it: a rank that
 * failed before training tells the others (the status it returns is the
 * agreed one), and *communication_seconds gets the replicas' time (left
 * as it is alone). Both are defined in src/parallel/replicas_reducer.c: the
 * one call that runs up the layers, from train.c's ax_train. */
ax_status ax_reducer_create(const ax_communicator *communicator, const ax_net *net,
                            const ax_dataset *train, const ax_dataset *validation,
                            const ax_dataset *test, ax_reducer *out);
ax_status ax_reducer_finish(ax_reducer *reducer, ax_status status, double *communication_seconds);

/* ax_train's loop (train.c) with the given reducer; summary as ax_train's,
 * zeroed (final_test_accuracy NAN) by the caller. */
ax_status ax_train_reduced(ax_net *net, const ax_dataset *train, const ax_dataset *validation,
                           const ax_dataset *test, const ax_train_config *config,
                           ax_train_summary *summary, ax_reducer *reducer);

/* The operations, by name. */
static inline void ax_reducer_select(ax_reducer *r, const ax_batch *batch, ax_batch *local)
{
    r->ops->select(r, batch, local);
}
static inline void ax_reducer_arm(ax_reducer *r, ax_net *net, int64_t rows) { r->ops->arm(r, net, rows); }
static inline ax_status ax_reducer_reduce(ax_reducer *r, ax_net *net, int64_t rows, double *loss)
{
    return r->ops->reduce(r, net, rows, loss);
}
static inline ax_status ax_reducer_sum_evaluation(ax_reducer *r, int64_t rows, double *loss,
                                                  double *accuracy)
{
    return r->ops->sum_evaluation(r, rows, loss, accuracy);
}
static inline uint64_t ax_reducer_dropout_key(const ax_reducer *r, uint64_t key)
{
    return r->ops->dropout_key(r, key);
}
static inline bool ax_reducer_vote_stop(ax_reducer *r) { return r->ops->vote_stop(r); }
static inline bool ax_reducer_stop_agreed(const ax_reducer *r) { return r->ops->stop_agreed(r); }
static inline ax_status ax_reducer_agree_stop(ax_reducer *r, bool vote, bool *stop)
{
    return r->ops->agree_stop(r, vote, stop);
}
static inline ax_status ax_reducer_agree_ready(ax_reducer *r, ax_status status)
{
    return r->ops->agree_ready(r, status);
}
static inline ax_status ax_reducer_share_outcome(ax_reducer *r, ax_status status, const char *what)
{
    return r->ops->share_outcome(r, status, what);
}
static inline ax_status ax_reducer_check(ax_reducer *r, const ax_net *net, int epoch)
{
    return r->ops->check(r, net, epoch);
}
static inline ax_status ax_reducer_fingerprints(ax_reducer *r, const ax_dataset *train,
                                                const ax_dataset *validation, uint64_t *train_hash,
                                                uint64_t *validation_hash)
{
    return r->ops->fingerprints(r, train, validation, train_hash, validation_hash);
}

#endif
