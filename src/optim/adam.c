/* adam.c: Adam (Kingma and Ba, 2015) with torch.optim.Adam's bias correction. */
#include "base/error.h"
#include "optim/optimizer.h"

static ax_status adam_step(ax_optimizer *optimizer, const ax_objective *objective, double *loss)
{
    AX_TRY(objective->evaluate(objective->context, loss));
    const ax_train_config *config = &optimizer->config;
    optimizer->steps++;
    optimizer->backend->ops->adam_update(optimizer->backend, optimizer->count,
                                         optimizer->parameters, optimizer->gradients,
                                         optimizer->state[0], optimizer->state[1],
                                         config->learning_rate, config->beta1, config->beta2,
                                         config->epsilon, optimizer->steps);
    return AX_STATUS_OK;
}

static const ax_optimizer_ops adam_ops = {.name = "adam", .step = adam_step, .destroy = NULL};

ax_status ax_optimizer_adam_init(ax_optimizer *optimizer)
{
    optimizer->ops = &adam_ops;
    AX_TRY(ax_optimizer_allocate_state(optimizer, 0));
    return ax_optimizer_allocate_state(optimizer, 1);
}
