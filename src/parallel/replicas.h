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
    int64_t validation_rows;  /* of all ranks; -1 without a validation set */
    int64_t validation_first_row; /* this rank's validation shard starts there */
    int64_t *local_order;    /* (local_rows) the current batch's rows in this shard */
    int64_t batch_rows;      /* rows of the current global batch (all ranks) */
    double *staging;         /* (parameters) host doubles, for backends on a device */
    double stop_vote;        /* 1 when rank 0's progress callback asked to stop */
    bool stop_agreed;        /* a sum carried a stop vote: every rank stops */
    double seconds;          /* spent in the communicator's sums */
    bool ready_agreed;       /* ax_replicas_agree_ready was called */
    /* Overlapped sums (the communicator's sum_begin/sum_wait): */
    bool overlap;            /* available: the communicator has them, the arena is in host memory */
    ax_net *armed;           /* the net whose backward pass begins the sums; NULL = none */
    double share;            /* of the armed step: rows / batch_rows */
    int next_layer;          /* the next layer whose sum begins (layers go last to first) */
    ax_status begun;         /* the first failure of a sum_begin */
} ax_replicas;

/* Exchanges the row counts of every rank's training, validation and test
 * shards (a collective call) and checks that the ranks agree on which sets
 * exist. *out stays NULL for a communicator of one rank. */
ax_status ax_replicas_create(const ax_communicator *communicator, const ax_net *net,
                             const ax_dataset *train, const ax_dataset *validation,
                             const ax_dataset *test, ax_replicas **out);
void ax_replicas_free(ax_replicas *replicas);

/* The fingerprints (data/fingerprint.h) of the whole training and validation
 * sets, from every rank's shard: the same on every rank, and the same as
 * one process holding all the rows computes (validation NULL: *validation_hash 0). */
ax_status ax_replicas_fingerprints(ax_replicas *replicas, const ax_dataset *train,
                                   const ax_dataset *validation, uint64_t *train_hash,
                                   uint64_t *validation_hash);

/* Every rank calls this with the status of something rank 0 alone did
 * (writing a checkpoint): every rank returns rank 0's status, the others
 * with a message naming rank 0 and `what`. */
ax_status ax_replicas_share_outcome(ax_replicas *replicas, ax_status status, const char *what);

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
 * *loss by rows / batch_rows and sums both over the ranks, with the stop
 * votes (rank 0's progress callback, any rank's stop_requested). */
ax_status ax_replicas_reduce(ax_replicas *replicas, ax_net *net, int64_t rows, double *loss);

/* With overlap available: makes net's next backward pass over `rows` rows
 * (ax_net_backward) begin each layer's weighted sum as soon as the layer's
 * gradient is complete; ax_replicas_reduce then waits for them. Does
 * nothing without overlap. Only for a plain pass (not chunked, not along a
 * line): those call ax_replicas_reduce without arming. */
void ax_replicas_arm(ax_replicas *replicas, ax_net *net, int64_t rows);

/* Sums a shard's evaluation: *loss (mean over rows) and *accuracy become
 * those of the whole set. rows may be 0 (the figures are ignored). */
ax_status ax_replicas_sum_evaluation(ax_replicas *replicas, int64_t rows, double *loss,
                                     double *accuracy);

/* At an epoch's end: *stop = whether any rank voted to stop (vote, a vote
 * still pending from within the epoch, or the communicator's
 * stop_requested on any rank). */
ax_status ax_replicas_agree_stop(ax_replicas *replicas, bool vote, bool *stop);

/* Compares a hash of the weights across the ranks; AX_STATUS_BAD_DATA
 * naming the ranks that differ from rank 0. */
ax_status ax_replicas_check(ax_replicas *replicas, const ax_net *net, int epoch);

/* The dropout key of this rank for a step's key: rank 0 keeps it, others
 * draw their own masks. */
uint64_t ax_replicas_dropout_key(const ax_replicas *replicas, uint64_t key);

#endif
