/* optimizer.c: the registry of optimizer kinds and what the library and the
 * command line ask of it; creating and freeing optimizers. The kinds live in
 * their own files: adding one is its file, its enum value (axon.h), its
 * declaration (optimizer.h) and its line here. */
#include "optim/optimizer.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

/* Every kind at its enum value. */
static const ax_optimizer_descriptor *const registry[] = {
    [AX_OPTIMIZER_SGD] = &ax_optimizer_sgd,
    [AX_OPTIMIZER_ADAM] = &ax_optimizer_adam,
    [AX_OPTIMIZER_CG] = &ax_optimizer_cg,
    [AX_OPTIMIZER_LBFGS] = &ax_optimizer_lbfgs,
    [AX_OPTIMIZER_ADAMW] = &ax_optimizer_adamw,
};

#define KIND_COUNT ((int)(sizeof registry / sizeof registry[0]))

const ax_optimizer_descriptor *ax_optimizer_descriptor_of(ax_optimizer_kind kind)
{
    return (int)kind >= 0 && (int)kind < KIND_COUNT ? registry[kind] : NULL;
}

int ax_optimizer_count(void) { return KIND_COUNT; }

const char *ax_optimizer_name(ax_optimizer_kind kind)
{
    const ax_optimizer_descriptor *descriptor = ax_optimizer_descriptor_of(kind);
    return descriptor ? descriptor->name : "unknown";
}

bool ax_optimizer_is_full_batch(ax_optimizer_kind kind)
{
    const ax_optimizer_descriptor *descriptor = ax_optimizer_descriptor_of(kind);
    return descriptor && descriptor->full_batch;
}

bool ax_optimizer_uses(ax_optimizer_kind kind, ax_optimizer_setting setting)
{
    const ax_optimizer_descriptor *descriptor = ax_optimizer_descriptor_of(kind);
    return descriptor && (descriptor->settings & (unsigned)setting) != 0;
}

double ax_optimizer_default_learning_rate(ax_optimizer_kind kind)
{
    const ax_optimizer_descriptor *descriptor = ax_optimizer_descriptor_of(kind);
    return descriptor && descriptor->default_learning_rate > 0.0 ? descriptor->default_learning_rate
                                                                 : 0.1;
}

void ax_optimizer_names_using(ax_optimizer_setting setting, char *text, size_t capacity)
{
    if (capacity == 0)
        return;
    text[0] = '\0';
    int total = 0, written = 0;
    for (int i = 0; i < KIND_COUNT; i++)
        total += ax_optimizer_uses((ax_optimizer_kind)i, setting);
    for (int i = 0; i < KIND_COUNT; i++) {
        if (!ax_optimizer_uses((ax_optimizer_kind)i, setting))
            continue;
        const char *separator = written == 0 ? "" : written == total - 1 ? " and " : ", ";
        size_t used = strlen(text);
        snprintf(text + used, capacity - used, "%s%s", separator, registry[i]->name);
        written++;
    }
}

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
    const ax_optimizer_descriptor *kind = ax_optimizer_descriptor_of(config->optimizer);
    if (!kind)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "unknown optimizer %d", (int)config->optimizer);
    if (kind->check_config)
        AX_TRY(kind->check_config(config));
    return AX_STATUS_OK;
}

/* Allocates state arena i (zeroed). */
static ax_status allocate_state(ax_optimizer *optimizer, int index)
{
    return ax_backend_alloc(optimizer->backend,
                            (size_t)optimizer->count * optimizer->backend->real_size,
                            "the optimizer's state", &optimizer->state[index]);
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
    optimizer->kind = ax_optimizer_descriptor_of(config->optimizer);
    const int arrays = optimizer->kind->state_arrays ? optimizer->kind->state_arrays(config) : 0;
    assert(arrays >= 0 && arrays <= 2);
    ax_status status = AX_STATUS_OK;
    for (int i = 0; i < arrays && status == AX_STATUS_OK; i++)
        status = allocate_state(optimizer, i);
    if (status == AX_STATUS_OK && optimizer->kind->init)
        status = optimizer->kind->init(optimizer);
    if (status != AX_STATUS_OK) {
        ax_optimizer_free(optimizer);
        return status;
    }
    *out = optimizer;
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
                       optimizer->kind->name, index);
    optimizer->backend->ops->upload_f64(optimizer->backend, optimizer->state[index], values,
                                        optimizer->count);
    return AX_STATUS_OK;
}

void ax_optimizer_free(ax_optimizer *optimizer)
{
    if (!optimizer)
        return;
    if (optimizer->kind && optimizer->kind->destroy)
        optimizer->kind->destroy(optimizer);
    for (int i = 0; i < 2; i++)
        optimizer->backend->ops->free(optimizer->backend, optimizer->state[i]);
    free(optimizer);
}
