/* checkpoint.h: the training state that a checkpoint file holds, shared by
 * the trainer (train.c), which fills and restores it, and checkpoint.c,
 * which writes, reads and validates the file and keeps the last K.
 *
 * The trainer's own state (train_state.h) is one member, `trainer`.
 *
 * A checkpoint is a safetensors file (so any safetensors reader can open
 * it): the parameter arena, the optimizer's state arenas (SGD, Adam) or
 * its own named arrays (CG, L-BFGS: "optimizer.NAME"), the line-search
 * cache's base ("line_cache.base") and, when the run keeps the best
 * weights, those as tensors; the options, counters, random state and the
 * optimizer's named scalars as JSON in the metadata. Doubles that must come back bit for bit
 * (losses, timings) are written as C99 hexadecimal floats. */
#ifndef AX_CORE_CHECKPOINT_H
#define AX_CORE_CHECKPOINT_H

#include "axon.h"
#include "core/train_state.h"
#include "optim/optimizer.h"

/* Where training stands, detached from the objects it came from. The
 * arrays are host doubles (exact for float32 and float64 arenas). */
struct ax_train_state {
    ax_net_config net_config;
    ax_train_config config;          /* progress fields NULL; strings owned below */
    char *prefix;                    /* config.checkpoint_prefix, owned */
    char *note;                      /* config.checkpoint_note, owned */
    ax_trainer_state trainer;        /* epoch, batch, step, random state, counters, figures */
    int64_t rows;                    /* training rows; order has this many when trainer.batch > 0 */
    int64_t *order;                  /* the shuffled order of the interrupted epoch, or NULL */
    int64_t parameter_count;
    double *parameters;              /* (parameter_count) */
    double *optimizer_state[2];      /* (parameter_count) each, or NULL */
    double *best_parameters;         /* (parameter_count) when trainer.best_epoch > 0 and the run keeps
                                        the best weights (early stopping or keep_best) */
    /* CG and L-BFGS: the kind's own state (empty for SGD and Adam, and in
     * checkpoints of axon before it), and the line-search cache's X W^T
     * (line_base_count values, rows x the first layer's width) with its
     * count of searches since a refresh; NULL when the run had no cache
     * (several ranks, a chunked batch) or it held no base yet. */
    ax_optimizer_saved optimizer_saved;
    double *line_base;
    int64_t line_base_count;
    int line_searches;
    /* The data the run trained on, to refuse a resume on other data. */
    int64_t features, classes, targets;
    uint64_t train_hash;
    int64_t validation_rows;         /* -1 without a validation set */
    uint64_t validation_hash;
    int fingerprint;                 /* how the hashes were made: AX_FINGERPRINT_VERSION
                                        (data/fingerprint.h), or 1 for checkpoints of axon
                                        before it (one chained hash of the set, which shards
                                        cannot compute) */
};

/* Writes state to path (atomically: temporary file, fsync, rename). */
ax_status ax_checkpoint_write(const ax_train_state *state, const char *path);
/* PREFIX.epoch-NNNNNN.safetensors for state->epoch, then deletes all but
 * the newest `keep` such files of the prefix (keep 0: none deleted). */
ax_status ax_checkpoint_write_epoch(const ax_train_state *state, const char *prefix, int keep);
/* PREFIX.interrupted.safetensors. */
ax_status ax_checkpoint_write_interrupted(const ax_train_state *state, const char *prefix);

#endif
