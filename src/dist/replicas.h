/* replicas.h: what ax_train does differently when it is one of P ranks of
 * a data-parallel run (the "distributed" section of axon.h; docs/mpi.md).
 * Only the communicator's function pointers are used here, so this part is
 * built with or without MPI and works with any communicator. */
#ifndef AX_DIST_REPLICAS_H
#define AX_DIST_REPLICAS_H

#include "axon.h"
#include "core/net.h"

typedef struct ax_replicas {
    const ax_communicator *communicator;
    int rank, size;
    int64_t global_rows;     /* N: training rows of all ranks */
    int64_t first_row;       /* this rank's shard is global rows [first_row, first_row + local_rows) */
    int64_t local_rows;
    int64_t *local_order;    /* (local_rows) the current batch's rows in this shard */
    int64_t batch_rows;      /* rows of the current global batch (all ranks) */
    double *staging;         /* (parameters) host doubles, for backends on a device */
    double stop_vote;        /* 1 when rank 0's progress callback asked to stop */
    bool stop_agreed;        /* a sum carried a stop vote: every rank stops */
    double seconds;          /* spent in the communicator's sums */
    bool ready_agreed;       /* ax_replicas_agree_ready was called */
} ax_replicas;

/* Exchanges the row counts of every rank's training, validation and test
 * shards (a collective call) and checks that the ranks agree on which sets
 * exist. *out stays NULL for a communicator of one rank. */
ax_status ax_replicas_create(const ax_communicator *communicator, const ax_net *net,
                             const ax_dataset *train, const ax_dataset *validation,
                             const ax_dataset *test, ax_replicas **out);
void ax_replicas_free(ax_replicas *replicas);

/* Every rank calls this once, with the status of its preparations (checks
 * of its data, allocations) before the first step, so that a rank that
 * failed on its own does not leave the others waiting in a sum: a rank that
 * failed gets its status back (its message kept), the others the first
 * failed rank's status and a message naming it. */
ax_status ax_replicas_agree_ready(ax_replicas *replicas, ax_status status);

/* Fills local_order with the rows of global batch order[first .. first +
 * count) that lie in this shard, as shard rows (order NULL: the whole
 * shard, the full batch); returns how many. */
int64_t ax_replicas_select(ax_replicas *replicas, const int64_t *order, int64_t first,
                           int64_t count);

/* After this rank's forward and backward pass over `rows` rows of the
 * current batch (0 rows: no pass, *loss 0): weights the gradient arena and
 * *loss by rows / batch_rows and sums both over the ranks, with rank 0's
 * stop vote. */
ax_status ax_replicas_reduce(ax_replicas *replicas, ax_net *net, int64_t rows, double *loss);

/* Sums a shard's evaluation: *loss (mean over rows) and *accuracy become
 * those of the whole set. rows may be 0 (the figures are ignored). */
ax_status ax_replicas_sum_evaluation(ax_replicas *replicas, int64_t rows, double *loss,
                                     double *accuracy);

/* At an epoch's end: *stop = whether any rank voted to stop (vote, or the
 * vote still pending from within the epoch). */
ax_status ax_replicas_agree_stop(ax_replicas *replicas, bool vote, bool *stop);

/* Compares a hash of the weights across the ranks; AX_STATUS_BAD_DATA
 * naming the ranks that differ from rank 0. */
ax_status ax_replicas_check(ax_replicas *replicas, const ax_net *net, int epoch);

/* The dropout key of this rank for a step's key: rank 0 keeps it, others
 * draw their own masks. */
uint64_t ax_replicas_dropout_key(const ax_replicas *replicas, uint64_t key);

#endif
