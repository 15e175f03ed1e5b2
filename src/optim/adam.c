/* adam.c: Adam (Kingma and Ba, 2015) with torch.optim.Adam's bias correction,
 * or, with epsilon_before_correction, the paper's "more efficient" order
 * (section 2) that scikit-learn uses: lr_t = lr sqrt(1 - b2^t) / (1 - b1^t),
 * p -= lr_t m / (sqrt(v) + eps). That is torch's update with epsilon
 * eps / sqrt(1 - b2^t), so both go through one kernel. */
#include <math.h>

#include "base/error.h"
#include "optim/optimizer.h"

void ax_adam_update_all(ax_optimizer *optimizer)
{
    const ax_train_config *config = &optimizer->config;
    double epsilon = config->epsilon;
    if (config->epsilon_before_correction)
        epsilon /= sqrt(1.0 - pow(config->beta2, (double)optimizer->counters.steps));
    optimizer->backend->ops->adam_update(optimizer->backend, optimizer->count,
                                         optimizer->parameters, optimizer->gradients,
                                         optimizer->state[0], optimizer->state[1],
                                         config->learning_rate, config->beta1, config->beta2,
                                         epsilon, optimizer->counters.steps);
}

static ax_status adam_step(ax_optimizer *optimizer, const ax_objective *objective, double *loss)
{
    AX_TRY(objective->evaluate(objective->context, loss));
    optimizer->counters.steps++;
    ax_adam_update_all(optimizer);
    return AX_STATUS_OK;
}

/* The first and second moment estimates m and v. */
static int adam_state_arrays(const ax_train_config *config)
{
    (void)config;
    return 2;
}

const ax_optimizer_carry ax_adam_carry = {
    .fewest_arrays = 2,
    .most_arrays = 2,
    .arrays_text = "2 (m and v)",
    .nonnegative_array = 1,
    .nonnegative_text = "second moments",
    .why_none = "its two moments",
    .why_some = "its two moments",
};

const ax_optimizer_descriptor ax_optimizer_adam = {
    .name = "adam",
    .settings = AX_OPTIMIZER_SETTING_LEARNING_RATE | AX_OPTIMIZER_SETTING_BETAS,
    .default_learning_rate = 0.001,
    .state_arrays = adam_state_arrays,
    .step = adam_step,
    .carry = &ax_adam_carry,
};
