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
    optimizer->counters.steps++;
    return AX_STATUS_OK;
}

/* The velocity v, only with momentum. */
static int sgd_state_arrays(const ax_train_config *config) { return config->momentum > 0.0 ? 1 : 0; }

static const ax_optimizer_carry sgd_carry = {
    .fewest_arrays = 0,
    .most_arrays = 1,
    .arrays_text = "0 or 1 (the velocity)",
    .nonnegative_array = -1,
    .why_none = "momentum 0: no velocity",
    .why_some = "momentum above 0: a velocity",
};

const ax_optimizer_descriptor ax_optimizer_sgd = {
    .name = "sgd",
    .settings = AX_OPTIMIZER_SETTING_LEARNING_RATE | AX_OPTIMIZER_SETTING_MOMENTUM,
    .default_learning_rate = 0.1,
    .state_arrays = sgd_state_arrays,
    .step = sgd_step,
    .carry = &sgd_carry,
};
