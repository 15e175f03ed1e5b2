/* replicas.c: the data-parallel part of training (replicas.h): which rows
 * of a global batch this rank holds, the weighted sum of gradients and
 * losses over the ranks (as in synchronous data-parallel SGD, e.g.
 * Goyal et al. 2017, "Accurate, Large Minibatch SGD"), sharded evaluation,
 * an agreed stop, and a check that the replicas are identical. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/random.h"
#include "data/dataset.h"
#include "data/fingerprint.h"
#include "parallel/replicas.h"

/* Every sum goes through here, to be timed. */
static ax_status sum(ax_replicas *replicas, void *values, int64_t count, ax_precision precision)
{
    const ax_communicator *communicator = replicas->communicator;
    double start = ax_seconds_now();
    ax_status status = communicator->sum(communicator, values, count, precision);
    replicas->seconds += ax_seconds_now() - start;
    if (status != AX_STATUS_OK)
        return ax_fail_context(status, "rank %d of %d: summing over the ranks", replicas->rank,
                               replicas->size);
    return AX_STATUS_OK;
}

static int64_t rows_or_absent(const ax_dataset *data)
{
    return data ? data->rows : -1;
}

/* The facts each rank reports at the start, one slot per rank. */
enum { FACT_TRAIN, FACT_VALIDATION, FACT_TEST, FACT_PARAMETERS, FACT_COUNT };

/* Which ranks disagree with rank 0 about a fact, for messages. */
static void list_disagreeing(const double *facts, int size, int fact, char *text, size_t capacity)
{
    size_t used = 0;
    text[0] = '\0';
    for (int r = 1; r < size && used + 16 < capacity; r++)
        if ((facts[r * FACT_COUNT + fact] < 0) != (facts[fact] < 0) ||
            (fact == FACT_PARAMETERS && facts[r * FACT_COUNT + fact] != facts[fact]))
            used += (size_t)snprintf(text + used, capacity - used, "%s%d", used ? ", " : "", r);
}

ax_status ax_replicas_create(const ax_communicator *communicator, const ax_net *net,
                             const ax_dataset *train, const ax_dataset *validation,
                             const ax_dataset *test, ax_replicas **out)
{
    *out = NULL;
    if (!communicator)
        return AX_STATUS_OK;
    const int size = communicator->size, rank = communicator->rank;
    if (size < 1 || rank < 0 || rank >= size || !communicator->sum)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "the communicator is not valid: rank %d of %d, sum %s", rank, size,
                       communicator->sum ? "set" : "missing");
    if (size == 1)
        return AX_STATUS_OK;
    ax_replicas *replicas = calloc(1, sizeof *replicas);
    double *facts = calloc((size_t)size * FACT_COUNT, sizeof(double));
    if (replicas) {
        /* A rank holds at most its shard's rows of any batch. */
        replicas->local_order = malloc((size_t)(train->rows > 0 ? train->rows : 1) * sizeof(int64_t));
        replicas->staging = malloc((size_t)net->parameter_count * sizeof(double));
    }
    if (!replicas || !facts || !replicas->local_order || !replicas->staging) {
        free(facts);
        ax_replicas_free(replicas);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for data-parallel training");
    }
    replicas->communicator = communicator;
    replicas->overlap = communicator->sum_begin && communicator->sum_wait &&
                        net->backend->host_memory;
    replicas->rank = rank;
    replicas->size = size;
    replicas->local_rows = train->rows;
    double *mine = facts + (size_t)rank * FACT_COUNT;
    mine[FACT_TRAIN] = (double)train->rows;
    mine[FACT_VALIDATION] = (double)rows_or_absent(validation);
    mine[FACT_TEST] = (double)rows_or_absent(test);
    mine[FACT_PARAMETERS] = (double)net->parameter_count;
    /* Every rank sees every rank's facts, so all take the same decision. */
    ax_status status = sum(replicas, facts, (int64_t)size * FACT_COUNT, AX_PRECISION_F64);
    static const char *const fact_names[] = {"", "a validation set", "a test set",
                                             "the same network size"};
    for (int fact = FACT_VALIDATION; status == AX_STATUS_OK && fact < FACT_COUNT; fact++) {
        char ranks[256];
        list_disagreeing(facts, size, fact, ranks, sizeof ranks);
        if (ranks[0])
            status = ax_fail(AX_STATUS_BAD_ARGUMENT,
                             "the ranks disagree on %s: rank%s %s differ%s from rank 0; every "
                             "rank must be given the same kind of data and network",
                             fact_names[fact], strchr(ranks, ',') ? "s" : "", ranks,
                             strchr(ranks, ',') ? "" : "s");
    }
    replicas->validation_rows = validation ? 0 : -1;
    for (int r = 0; status == AX_STATUS_OK && r < size; r++) {
        int64_t rows = (int64_t)facts[r * FACT_COUNT + FACT_TRAIN];
        int64_t validation_rows = (int64_t)facts[r * FACT_COUNT + FACT_VALIDATION];
        if (r < rank) {
            replicas->first_row += rows;
            replicas->validation_first_row += validation ? validation_rows : 0;
        }
        replicas->global_rows += rows;
        replicas->validation_rows += validation ? validation_rows : 0;
    }
    free(facts);
    if (status == AX_STATUS_OK && replicas->global_rows < 1)
        status = ax_fail(AX_STATUS_BAD_DATA, "no rank holds any training rows");
    if (status != AX_STATUS_OK) {
        ax_replicas_free(replicas);
        return status;
    }
    *out = replicas;
    return AX_STATUS_OK;
}

void ax_replicas_free(ax_replicas *replicas)
{
    if (!replicas)
        return;
    free(replicas->local_order);
    free(replicas->staging);
    free(replicas);
}

/* A 64-bit sum over the ranks, exactly: each rank's value in four 16-bit
 * pieces, whose sums stay far below 2^53, recombined with carries. */
static ax_status sum_u64(ax_replicas *replicas, uint64_t *values, int count)
{
    enum { MOST = 4 };
    double pieces[MOST * 4];
    if (count > MOST)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "sum_u64: %d values, at most %d", count, MOST);
    for (int i = 0; i < count; i++)
        for (int part = 0; part < 4; part++)
            pieces[i * 4 + part] = (double)((values[i] >> (16 * part)) & 0xffff);
    AX_TRY(sum(replicas, pieces, count * 4, AX_PRECISION_F64));
    for (int i = 0; i < count; i++) {
        values[i] = 0;
        for (int part = 0; part < 4; part++)
            values[i] += (uint64_t)pieces[i * 4 + part] << (16 * part);
    }
    return AX_STATUS_OK;
}

ax_status ax_replicas_fingerprints(ax_replicas *replicas, const ax_dataset *train,
                                   const ax_dataset *validation, uint64_t *train_hash,
                                   uint64_t *validation_hash)
{
    uint64_t sums[2] = {ax_dataset_fingerprint_part(train, replicas->first_row),
                        validation ? ax_dataset_fingerprint_part(validation,
                                                                 replicas->validation_first_row)
                                   : 0};
    AX_TRY(sum_u64(replicas, sums, 2));
    *train_hash = ax_dataset_fingerprint_finish(sums[0], replicas->global_rows, train->features);
    *validation_hash = validation ? ax_dataset_fingerprint_finish(sums[1], replicas->validation_rows,
                                                                  validation->features)
                                  : 0;
    return AX_STATUS_OK;
}

ax_status ax_replicas_share_outcome(ax_replicas *replicas, ax_status status, const char *what)
{
    double shared = replicas->rank == 0 ? (double)status : 0.0;
    AX_TRY(sum(replicas, &shared, 1, AX_PRECISION_F64));
    if (replicas->rank == 0 || shared == 0.0)
        return status;
    return ax_fail((ax_status)shared, "rank 0 of %d could not %s (%s; its own message says why)",
                   replicas->size, what, ax_status_name((ax_status)shared));
}

ax_status ax_replicas_agree_ready(ax_replicas *replicas, ax_status status)
{
    replicas->ready_agreed = true;
    double *statuses = calloc((size_t)replicas->size, sizeof(double));
    if (!statuses) /* the others then wait: the program must end the job (axon.h) */
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory to agree with the other ranks");
    statuses[replicas->rank] = (double)status;
    ax_status summed = sum(replicas, statuses, replicas->size, AX_PRECISION_F64);
    int failed = -1;
    for (int r = 0; r < replicas->size && failed < 0; r++)
        if (statuses[r] != 0.0)
            failed = r;
    ax_status first = failed >= 0 ? (ax_status)statuses[failed] : AX_STATUS_OK;
    free(statuses);
    if (status != AX_STATUS_OK)
        return status;
    AX_TRY(summed);
    if (failed >= 0)
        return ax_fail(first, "rank %d of %d could not start training (%s; its own message says "
                              "why)", failed, replicas->size, ax_status_name(first));
    return AX_STATUS_OK;
}

int64_t ax_replicas_select(ax_replicas *replicas, const int64_t *order, int64_t first,
                           int64_t count)
{
    replicas->batch_rows = count;
    if (!order)
        return replicas->local_rows;
    const int64_t low = replicas->first_row, high = low + replicas->local_rows;
    int64_t selected = 0;
    for (int64_t i = first; i < first + count; i++)
        if (order[i] >= low && order[i] < high)
            replicas->local_order[selected++] = order[i] - low;
    return selected;
}

/* 1 when this rank's communicator asks to stop (a signal to this rank). */
static double stop_requested(const ax_replicas *replicas)
{
    const ax_communicator *communicator = replicas->communicator;
    return communicator->stop_requested && communicator->stop_requested(communicator) ? 1.0 : 0.0;
}

/* The share of the batch of `rows` rows: the net's gradient and loss are
 * means over its rows (the L2 term added once); weighted by each rank's
 * share of the batch they sum to the mean over the batch, and the L2 term
 * to once, as the shares sum to 1. A rank without rows adds zeros. */
static double share_of(const ax_replicas *replicas, int64_t rows)
{
    return replicas->batch_rows > 0 ? (double)rows / (double)replicas->batch_rows : 0.0;
}

/* Weights layer l's gradient (its block of the arena) and begins its sum. */
static void begin_layer(ax_replicas *replicas, ax_net *net, int l)
{
    if (replicas->begun != AX_STATUS_OK)
        return;
    const ax_layer *layer = &net->layers[l];
    const int64_t count = layer->parameter_count;
    void *values = ax_layer_block(net, net->gradients, l);
    net->backend->ops->scale(net->backend, count, replicas->share, values);
    const ax_communicator *communicator = replicas->communicator;
    double start = ax_seconds_now();
    replicas->begun = communicator->sum_begin(communicator, values, count, net->config.precision);
    replicas->seconds += ax_seconds_now() - start;
}

/* The backward pass's hook: layers arrive last to first. */
static void gradient_ready(void *user, int layer)
{
    ax_replicas *replicas = user;
    ax_net *net = replicas->armed;
    /* Layers arrive in order; any skipped one begins first, to keep the
     * ranks' sums in the same order. */
    while (replicas->next_layer >= layer)
        begin_layer(replicas, net, replicas->next_layer--);
}

void ax_replicas_arm(ax_replicas *replicas, ax_net *net, int64_t rows)
{
    if (!replicas->overlap)
        return;
    replicas->armed = net;
    replicas->share = share_of(replicas, rows);
    replicas->next_layer = net->layer_count - 1;
    replicas->begun = AX_STATUS_OK;
    net->run.gradient_ready = gradient_ready;
    net->run.gradient_ready_user = replicas;
}

/* Begins the sums the backward pass did not (all of them for a rank
 * without rows in the batch) and waits for all. */
static ax_status finish_overlapped(ax_replicas *replicas, ax_net *net)
{
    net->run.gradient_ready = NULL;
    net->run.gradient_ready_user = NULL;
    replicas->armed = NULL;
    while (replicas->next_layer >= 0)
        begin_layer(replicas, net, replicas->next_layer--);
    const ax_communicator *communicator = replicas->communicator;
    double start = ax_seconds_now();
    ax_status waited = communicator->sum_wait(communicator);
    replicas->seconds += ax_seconds_now() - start;
    ax_status status = replicas->begun != AX_STATUS_OK ? replicas->begun : waited;
    if (status != AX_STATUS_OK)
        return ax_fail_context(status, "rank %d of %d: summing the gradient over the ranks",
                               replicas->rank, replicas->size);
    return AX_STATUS_OK;
}

ax_status ax_replicas_reduce(ax_replicas *replicas, ax_net *net, int64_t rows, double *loss)
{
    const ax_backend_ops *ops = net->backend->ops;
    const int64_t count = net->parameter_count;
    const double share = share_of(replicas, rows);
    if (replicas->armed) {
        AX_TRY(finish_overlapped(replicas, net));
    } else if (net->backend->host_memory) {
        ops->scale(net->backend, count, share, net->gradients);
        AX_TRY(sum(replicas, net->gradients, count, net->config.precision));
    } else {
        /* A device arena goes through host memory: no CUDA-aware MPI is
         * assumed (docs/mpi.md). */
        ops->download_f64(net->backend, replicas->staging, net->gradients, count);
        for (int64_t i = 0; i < count; i++)
            replicas->staging[i] *= share;
        AX_TRY(sum(replicas, replicas->staging, count, AX_PRECISION_F64));
        ops->upload_f64(net->backend, net->gradients, replicas->staging, count);
    }
    /* The loss travels in double whatever the precision: line searches
     * compare losses that differ in their last digits. */
    double totals[2] = {rows > 0 ? *loss * share : 0.0, replicas->stop_vote + stop_requested(replicas)};
    AX_TRY(sum(replicas, totals, 2, AX_PRECISION_F64));
    *loss = totals[0];
    if (totals[1] > 0.0)
        replicas->stop_agreed = true;
    return AX_STATUS_OK;
}

ax_status ax_replicas_sum_evaluation(ax_replicas *replicas, int64_t rows, double *loss,
                                     double *accuracy)
{
    const bool have = rows > 0;
    /* Correct answers are counted exactly: accuracy * rows is an integer. */
    double totals[4] = {have ? *loss * (double)rows : 0.0,
                        have && isfinite(*accuracy) ? nearbyint(*accuracy * (double)rows) : 0.0,
                        (double)rows, have && !isfinite(*accuracy) ? 1.0 : 0.0};
    AX_TRY(sum(replicas, totals, 4, AX_PRECISION_F64));
    *loss = totals[2] > 0 ? totals[0] / totals[2] : NAN;
    *accuracy = totals[2] > 0 && totals[3] == 0.0 ? totals[1] / totals[2] : NAN;
    return AX_STATUS_OK;
}

ax_status ax_replicas_agree_stop(ax_replicas *replicas, bool vote, bool *stop)
{
    double total = vote || replicas->stop_vote > 0.0 || replicas->stop_agreed ||
                           stop_requested(replicas) > 0.0
                       ? 1.0 : 0.0;
    replicas->stop_vote = 0.0;
    AX_TRY(sum(replicas, &total, 1, AX_PRECISION_F64));
    *stop = total > 0.0;
    return AX_STATUS_OK;
}

ax_status ax_replicas_check(ax_replicas *replicas, const ax_net *net, int epoch)
{
    const int size = replicas->size;
    ax_net_parameters_get(net, replicas->staging);
    uint64_t hash = 0x243f6a8885a308d3ULL;
    for (int64_t i = 0; i < net->parameter_count; i++) {
        uint64_t bits;
        memcpy(&bits, &replicas->staging[i], sizeof bits);
        hash = ax_hash64(hash ^ bits);
    }
    /* Each rank's hash in its own slots, 16 bits per double so that the
     * sum is exact: every rank then sees every rank's hash. */
    double *hashes = calloc((size_t)size * 4, sizeof(double));
    if (!hashes)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for the replica check");
    for (int part = 0; part < 4; part++)
        hashes[replicas->rank * 4 + part] = (double)((hash >> (16 * part)) & 0xffff);
    ax_status status = sum(replicas, hashes, (int64_t)size * 4, AX_PRECISION_F64);
    char ranks[256] = "";
    size_t used = 0;
    for (int r = 1; status == AX_STATUS_OK && r < size && used + 16 < sizeof ranks; r++)
        if (memcmp(&hashes[r * 4], &hashes[0], 4 * sizeof(double)) != 0)
            used += (size_t)snprintf(ranks + used, sizeof ranks - used, "%s%d", used ? ", " : "", r);
    free(hashes);
    AX_TRY(status);
    if (ranks[0])
        return ax_fail(AX_STATUS_BAD_DATA,
                       "replica check after epoch %d: the weights of rank%s %s differ from rank "
                       "0's; the ranks no longer train the same network",
                       epoch, strchr(ranks, ',') ? "s" : "", ranks);
    return AX_STATUS_OK;
}

uint64_t ax_replicas_dropout_key(const ax_replicas *replicas, uint64_t key)
{
    return replicas->rank == 0 ? key : ax_hash64(key ^ ((uint64_t)replicas->rank << 40));
}
