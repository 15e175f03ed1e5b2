/* lr_schedule.h: the learning rate of each epoch (ax_lr_schedule, axon.h)
 * and the state its recursion needs, which the trainer keeps and
 * checkpoints record. */
#ifndef AX_CORE_LR_SCHEDULE_H
#define AX_CORE_LR_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "axon.h"

typedef struct ax_lr_state {
    double rate;    /* the rate of the next (or current) epoch, warmup aside */
    double best;    /* plateau: the best validation loss; adaptive: the best training
                       loss; INFINITY before one */
    int bad_epochs; /* plateau, adaptive: epochs without improvement so far */
} ax_lr_state;

/* The state before the first epoch: lr0, no best loss. */
ax_lr_state ax_lr_state_start(const ax_train_config *config);
/* The schedule's step after epochs_done epochs (1-based count) with the
 * epoch's training loss (adaptive) and validation loss (plateau): s->rate
 * becomes the next epoch's rate. rows: training rows per epoch
 * (invscaling). True when adaptive asks training to stop (no improvement
 * with the rate at 1e-6 or less, as scikit-learn's trigger_stopping). */
bool ax_lr_schedule_after_epoch(const ax_train_config *config, ax_lr_state *s, int epochs_done,
                                int64_t rows, double train_loss, double validation_loss);
/* The warmup's factor for the step after `step` steps of the run. */
double ax_lr_warmup_factor(const ax_train_config *config, uint64_t step);
/* The schedule of a name ax_lr_schedule_name gives (false for another text). */
bool ax_lr_schedule_from_name(const char *name, ax_lr_schedule *out);
/* What is wrong with config's schedule settings, or NULL. */
const char *ax_lr_schedule_check_text(const ax_train_config *config);

#endif
