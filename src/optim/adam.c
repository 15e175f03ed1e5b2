/* adam.c: Adam (Kingma and Ba, 2015) with torch.optim.Adam's bias correction. */
#include "base/error.h"
#include "optim/optimizer.h"

static ax_status adam_step(ax_optimizer *optimizer, const ax_objective *objective, double *loss)
{
    AX_TRY(objective->evaluate(objective->context, loss));
    const ax_train_config *config = &optimizer->config;
    optimizer->counters.steps++;
    optimizer->backend->ops->adam_update(optimizer->backend, optimizer->count,
                                         optimizer->parameters, optimizer->gradients,
                                         optimizer->state[0], optimizer->state[1],
                                         config->learning_rate, config->beta1, config->beta2,
                                         config->epsilon, optimizer->counters.steps);
    return AX_STATUS_OK;
}

/* The first and second moment estimates m and v. */
static int adam_state_arrays(const ax_train_config *config)
{
    (void)config;
    return 2;
}

const ax_optimizer_descriptor ax_optimizer_adam = {
    .name = "adam",
    .settings = AX_OPTIMIZER_SETTING_LEARNING_RATE | AX_OPTIMIZER_SETTING_BETAS,
    .default_learning_rate = 0.001,
    .state_arrays = adam_state_arrays,
    .step = adam_step,
};
