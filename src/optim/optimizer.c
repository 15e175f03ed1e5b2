/* optimizer.c: creating and freeing optimizers; the kinds live in their own files. */
#include "optim/optimizer.h"

#include <math.h>
#include <stdlib.h>

#include "base/error.h"

static ax_status check_config(const ax_train_config *config)
{
    if (!(config->learning_rate > 0.0 && isfinite(config->learning_rate)))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "the learning rate must be positive, not %g",
                       config->learning_rate);
    if (!(config->momentum >= 0.0 && config->momentum < 1.0))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "momentum must be in [0, 1), not %g", config->momentum);
    if (config->nesterov && config->momentum == 0.0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "Nesterov momentum needs a momentum above 0");
    if (!(config->beta1 >= 0.0 && config->beta1 < 1.0) || !(config->beta2 >= 0.0 && config->beta2 < 1.0))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "Adam's betas must be in [0, 1), not %g and %g",
                       config->beta1, config->beta2);
    if (!(config->epsilon > 0.0))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "Adam's epsilon must be positive, not %g", config->epsilon);
    if (config->optimizer == AX_OPTIMIZER_CG || config->optimizer == AX_OPTIMIZER_LBFGS) {
        if (!(config->gtol >= 0.0 && isfinite(config->gtol)))
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "gtol must be a finite number >= 0, not %g", config->gtol);
        if (config->line_search_max_evaluations < 2 || config->line_search_max_evaluations > 1000)
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "line-search evaluations must be from 2 to 1000, not %d",
                           config->line_search_max_evaluations);
    }
    if (config->optimizer == AX_OPTIMIZER_LBFGS &&
        (config->lbfgs_memory < 1 || config->lbfgs_memory > 1000))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "the L-BFGS memory must be from 1 to 1000, not %d",
                       config->lbfgs_memory);
    return AX_STATUS_OK;
}

ax_status ax_optimizer_create(const ax_train_config *config, ax_backend *backend, void *parameters,
                              void *gradients, int64_t count, ax_optimizer **out)
{
    *out = NULL;
    AX_TRY(check_config(config));
    ax_optimizer *optimizer = calloc(1, sizeof *optimizer);
    if (!optimizer)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory creating the optimizer");
    optimizer->backend = backend;
    optimizer->count = count;
    optimizer->parameters = parameters;
    optimizer->gradients = gradients;
    optimizer->config = *config;
    ax_status status;
    switch (config->optimizer) {
    case AX_OPTIMIZER_SGD: status = ax_optimizer_sgd_init(optimizer); break;
    case AX_OPTIMIZER_ADAM: status = ax_optimizer_adam_init(optimizer); break;
    case AX_OPTIMIZER_CG: status = ax_optimizer_cg_init(optimizer); break;
    case AX_OPTIMIZER_LBFGS: status = ax_optimizer_lbfgs_init(optimizer); break;
    default:
        status = ax_fail(AX_STATUS_BAD_ARGUMENT, "unknown optimizer %d", (int)config->optimizer);
    }
    if (status != AX_STATUS_OK) {
        ax_optimizer_free(optimizer);
        return status;
    }
    *out = optimizer;
    return AX_STATUS_OK;
}

ax_status ax_optimizer_allocate_state(ax_optimizer *optimizer, int index)
{
    optimizer->state[index] = optimizer->backend->ops->alloc(
        optimizer->backend, (size_t)optimizer->count * optimizer->backend->real_size);
    if (!optimizer->state[index])
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for the optimizer's state");
    return AX_STATUS_OK;
}

bool ax_optimizer_state_get(const ax_optimizer *optimizer, int index, double *values)
{
    if (index < 0 || index > 1 || !optimizer->state[index])
        return false;
    optimizer->backend->ops->download_f64(optimizer->backend, values, optimizer->state[index],
                                          optimizer->count);
    return true;
}

ax_status ax_optimizer_state_set(ax_optimizer *optimizer, int index, const double *values)
{
    if (index < 0 || index > 1 || !optimizer->state[index])
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "the %s optimizer has no state array %d to restore",
                       optimizer->ops->name, index);
    optimizer->backend->ops->upload_f64(optimizer->backend, optimizer->state[index], values,
                                        optimizer->count);
    return AX_STATUS_OK;
}

void ax_optimizer_free(ax_optimizer *optimizer)
{
    if (!optimizer)
        return;
    if (optimizer->ops && optimizer->ops->destroy)
        optimizer->ops->destroy(optimizer);
    for (int i = 0; i < 2; i++)
        optimizer->backend->ops->free(optimizer->backend, optimizer->state[i]);
    free(optimizer);
}
