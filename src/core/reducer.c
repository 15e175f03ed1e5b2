/* reducer.c: the reducer of a process training alone (reducer.h): there is
 * nothing to sum, agree on or share, so each operation does nothing or
 * hands back its input, and the training loop needs no test for replicas. */
#include "core/reducer.h"

#include "data/dataset.h"
#include "data/fingerprint.h"

static void single_select(ax_reducer *self, const ax_batch *batch, ax_batch *local) { *local = *batch; }

static void single_arm(ax_reducer *self, ax_net *net, int64_t rows) {}

static ax_status single_reduce(ax_reducer *self, ax_net *net, int64_t rows, double *loss)
{
    return AX_STATUS_OK;
}

static ax_status single_sum_evaluation(ax_reducer *self, int64_t rows, double *loss, double *accuracy)
{
    return AX_STATUS_OK;
}

static uint64_t single_dropout_key(const ax_reducer *self, uint64_t key) { return key; }

static bool single_vote_stop(ax_reducer *self) { return true; }

static bool single_stop_agreed(const ax_reducer *self) { return false; }

static ax_status single_agree_stop(ax_reducer *self, bool vote, bool *stop)
{
    *stop = vote;
    return AX_STATUS_OK;
}

static ax_status single_pass_status(ax_reducer *self, ax_status status) { return status; }

static ax_status single_share_outcome(ax_reducer *self, ax_status status, const char *what)
{
    return status;
}

static ax_status single_check(ax_reducer *self, const ax_net *net, int epoch) { return AX_STATUS_OK; }

static ax_status single_fingerprints(ax_reducer *self, const ax_dataset *train,
                                     const ax_dataset *validation, uint64_t *train_hash,
                                     uint64_t *validation_hash)
{
    *train_hash = ax_dataset_fingerprint(train);
    *validation_hash = validation ? ax_dataset_fingerprint(validation) : 0;
    return AX_STATUS_OK;
}

static const ax_reducer_ops single_ops = {
    .select = single_select,
    .arm = single_arm,
    .reduce = single_reduce,
    .sum_evaluation = single_sum_evaluation,
    .dropout_key = single_dropout_key,
    .vote_stop = single_vote_stop,
    .stop_agreed = single_stop_agreed,
    .agree_stop = single_agree_stop,
    .agree_ready = single_pass_status,
    .share_outcome = single_share_outcome,
    .check = single_check,
    .fingerprints = single_fingerprints,
};

ax_reducer ax_reducer_single(const ax_dataset *train, const ax_dataset *validation)
{
    return (ax_reducer){.ops = &single_ops,
                        .rank = 0,
                        .ranks = 1,
                        .train_rows = train->rows,
                        .validation_rows = validation ? validation->rows : -1};
}
