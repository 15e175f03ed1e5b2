/* adamw.c: Adam with decoupled weight decay (Loshchilov and Hutter, 2019),
 * as torch.optim.AdamW computes it: each step first multiplies the weights
 * by 1 - lr * weight_decay, then takes Adam's step (adam.c, with its
 * torch or scikit-learn placement of epsilon) on the gradient of the loss
 * alone. Only weights decay, not biases (the trainer names their spans),
 * as torch's AdamW with the biases in a parameter group of weight decay 0. */
#include <math.h>

#include "base/error.h"
#include "optim/optimizer.h"

static ax_status adamw_step(ax_optimizer *optimizer, const ax_objective *objective, double *loss)
{
    AX_TRY(objective->evaluate(objective->context, loss));
    const ax_train_config *config = &optimizer->config;
    optimizer->counters.steps++;
    const double keep = 1.0 - config->learning_rate * config->weight_decay;
    if (keep != 1.0)
        for (int i = 0; i < optimizer->weight_spans; i++)
            optimizer->backend->ops->scale(
                optimizer->backend, optimizer->weight_length[i], keep,
                (char *)optimizer->parameters +
                    (size_t)optimizer->weight_offset[i] * optimizer->backend->real_size);
    ax_adam_update_all(optimizer);
    return AX_STATUS_OK;
}

/* Adam's first and second moment estimates m and v. */
static int adamw_state_arrays(const ax_train_config *config)
{
    (void)config;
    return 2;
}

const ax_optimizer_descriptor ax_optimizer_adamw = {
    .name = "adamw",
    .settings = AX_OPTIMIZER_SETTING_LEARNING_RATE | AX_OPTIMIZER_SETTING_BETAS |
                AX_OPTIMIZER_SETTING_WEIGHT_DECAY,
    .default_learning_rate = 0.001,
    .state_arrays = adamw_state_arrays,
    .step = adamw_step,
    .carry = &ax_adam_carry,
};
