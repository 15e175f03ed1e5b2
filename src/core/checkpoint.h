/* checkpoint.h: the training state that a checkpoint file holds, shared by
 * the trainer (train.c), which fills and restores it, and checkpoint.c,
 * which writes, reads and validates the file and keeps the last K.
 *
 * A checkpoint is a safetensors file (so any safetensors reader can open
 * it): the parameter arena, the optimizer's state arenas and, with early
 * stopping, the best weights as tensors; the options, counters and random
 * state as JSON in the metadata. Doubles that must come back bit for bit
 * (losses, timings) are written as C99 hexadecimal floats. */
#ifndef AX_CORE_CHECKPOINT_H
#define AX_CORE_CHECKPOINT_H

#include "axon.h"
#include "core/random.h"

/* Where training stands, detached from the objects it came from. The
 * arrays are host doubles (exact for float32 and float64 arenas). */
struct ax_train_state {
    ax_net_config net_config;
    ax_train_config config;          /* progress fields NULL; strings owned below */
    char *prefix;                    /* config.checkpoint_prefix, owned */
    char *note;                      /* config.checkpoint_note, owned */
    int epoch;                       /* epochs complete */
    int64_t batch;                   /* batches done in epoch + 1 (0 at an epoch boundary) */
    uint64_t step;                   /* steps taken: dropout keys derive from it */
    int64_t optimizer_steps, evaluations, gradient_evaluations;
    ax_rng rng;
    int64_t rows;                    /* training rows; order has this many when batch > 0 */
    int64_t *order;                  /* the shuffled order of the interrupted epoch, or NULL */
    double loss_sum;                 /* of the interrupted epoch so far */
    double best_loss;
    int best_epoch, since_best;
    double seconds, gflop, final_train_loss, final_test_accuracy;
    int64_t parameter_count;
    double *parameters;              /* (parameter_count) */
    double *optimizer_state[2];      /* (parameter_count) each, or NULL */
    double *best_parameters;         /* (parameter_count) when best_epoch > 0 and early stopping */
    /* The data the run trained on, to refuse a resume on other data. */
    int64_t features, classes, targets;
    uint64_t train_hash;
    int64_t validation_rows;         /* -1 without a validation set */
    uint64_t validation_hash;
};

/* A fingerprint of a dataset's features and answers (not its name). */
uint64_t ax_dataset_fingerprint(const ax_dataset *data);

/* Writes state to path (atomically: temporary file, fsync, rename). */
ax_status ax_checkpoint_write(const ax_train_state *state, const char *path);
/* PREFIX.epoch-NNNNNN.safetensors for state->epoch, then deletes all but
 * the newest `keep` such files of the prefix (keep 0: none deleted). */
ax_status ax_checkpoint_write_epoch(const ax_train_state *state, const char *prefix, int keep);
/* PREFIX.interrupted.safetensors. */
ax_status ax_checkpoint_write_interrupted(const ax_train_state *state, const char *prefix);

#endif
