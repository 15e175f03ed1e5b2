/* sgd.c: stochastic gradient descent with momentum and Nesterov momentum,
 * with PyTorch's semantics (v = mu v + g; p -= lr v, or p -= lr (g + mu v)). */
#include "optim/optimizer.h"

static ax_status sgd_step(ax_optimizer *optimizer, const ax_objective *objective, double *loss)
{
    ax_status status = objective->evaluate(objective->context, loss);
    if (status != AX_STATUS_OK)
        return status;
    const ax_train_config *config = &optimizer->config;
    optimizer->backend->ops->sgd_update(optimizer->backend, optimizer->count, optimizer->parameters,
                                        optimizer->gradients, optimizer->state[0],
                                        config->learning_rate, config->momentum, config->nesterov);
    optimizer->steps++;
    return AX_STATUS_OK;
}

static const ax_optimizer_ops sgd_ops = {.name = "sgd", .step = sgd_step, .destroy = NULL};

ax_status ax_optimizer_sgd_init(ax_optimizer *optimizer)
{
    optimizer->ops = &sgd_ops;
    if (optimizer->config.momentum > 0.0)
        return ax_optimizer_allocate_state(optimizer, 0);
    return AX_STATUS_OK;
}
