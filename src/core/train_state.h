/* train_state.h: the trainer's own state as one value, ax_trainer_state:
 * where training stands (epochs complete, batches of the next one and
 * their loss, steps, the random state), the best weights' bookkeeping, the
 * optimizer's counters and the summary's figures. The trainer (train.c)
 * keeps it up to date in place; a checkpoint records it whole
 * (ax_train_state's `trainer`, checkpoint.h), so taking a snapshot and
 * restoring one copy it in one assignment each way, plus the arrays
 * (train_state.c). Only the checkpoint's JSON (checkpoint.c,
 * checkpoint_load.c) names its fields one by one. */
#ifndef AX_CORE_TRAIN_STATE_H
#define AX_CORE_TRAIN_STATE_H

#include "axon.h"
#include "base/random.h"
#include "core/lr_schedule.h"
#include "core/net.h"
#include "optim/optimizer.h"

typedef struct ax_trainer_state {
    int epoch;                        /* epochs complete */
    int64_t batch;                    /* batches done in epoch + 1 (0 at an epoch boundary) */
    double loss_sum;                  /* of those batches: each batch's loss times its rows */
    uint64_t step;                    /* steps taken: dropout keys derive from it */
    ax_rng rng;                       /* shuffles the row order */
    ax_optimizer_counters optimizer;  /* as of the last snapshot or restore: the optimizer
                                         counts the live ones (optimizer->counters) */
    double best_loss;                 /* the watched loss at best_epoch; INFINITY before one */
    int best_epoch;                   /* 0 before one */
    int since_best;                   /* epochs since best_epoch */
    ax_lr_state lr;                   /* the learning-rate schedule's (lr_schedule.h) */
    /* The figures of ax_train_summary so far. */
    double seconds, gflop, final_train_loss, final_test_accuracy;
} ax_trainer_state;

/* The state of a run at its start: nothing done, the random state seeded,
 * no best loss yet, no test accuracy (NAN). */
ax_trainer_state ax_trainer_state_start(uint64_t seed);

/* The trainer's objects that a snapshot copies from and a restore into
 * (borrowed). */
typedef struct ax_trainer_parts {
    ax_net *net;
    const ax_train_config *config;
    ax_optimizer *optimizer;
    ax_line_cache *line;        /* the line-search cache, or NULL */
    int64_t *order;             /* (rows) the row order, or NULL (a full batch) */
    int64_t rows;               /* training rows of all ranks */
    int64_t batches;            /* batches an epoch has */
    double *best_parameters;    /* (parameter_count) when the run keeps the best weights, or NULL */
} ax_trainer_parts;

/* Fills *snapshot with where training stands: trainer, the settings, and
 * the parts' arrays. The arrays of the weights and optimizer state are
 * allocated on the first call and reused; the order, the best weights and
 * *line_base (the line-search cache's base, allocated on first need) are
 * borrowed. The data description (rows, features, hashes) is the
 * caller's, left as it is. Free with ax_train_state_release_taken. */
ax_status ax_train_state_take(ax_train_state *snapshot, double **line_base,
                              const ax_trainer_state *trainer, const ax_trainer_parts *parts);
/* Frees what ax_train_state_take allocated (not the borrowed arrays). */
void ax_train_state_release_taken(ax_train_state *snapshot, double *line_base);

/* Puts the weights, the optimizer (arrays, own state, counters), the line
 * cache's base, the best weights and the order where `saved` left them,
 * and *trainer = saved's trainer state. Fails with AX_STATUS_BAD_FILE when
 * saved lacks an array the parts need; *trainer is then unchanged. */
ax_status ax_train_state_restore(const ax_train_state *saved, const ax_trainer_parts *parts,
                                 ax_trainer_state *trainer);

#endif
