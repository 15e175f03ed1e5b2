/* optimizer_saved.c: a kind's own state as named arrays and scalars
 * (ax_optimizer_saved, optimizer.h), the form in which checkpoints write and
 * read CG's and L-BFGS's state without knowing its meaning; and the checks
 * that a state read from a file is one the run's optimizer could have
 * saved, so that an edited or mismatched checkpoint is refused with the
 * field named rather than resumed into nonsense. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "optim/optimizer.h"

void ax_optimizer_saved_free(ax_optimizer_saved *saved)
{
    if (!saved)
        return;
    for (int i = 0; i < saved->array_count; i++)
        free(saved->arrays[i].values);
    memset(saved, 0, sizeof *saved);
}

static bool name_fits(const char *name)
{
    return name && *name && strlen(name) < AX_OPTIMIZER_SAVED_NAME;
}

double *ax_optimizer_saved_add_array(ax_optimizer_saved *saved, const char *name, int64_t length)
{
    if (saved->array_count >= AX_OPTIMIZER_SAVED_MAX || !name_fits(name) || length < 0) {
        ax_fail(AX_STATUS_BAD_FILE, "optimizer state array \"%s\": more than %d arrays, or a bad name or length",
                name ? name : "", AX_OPTIMIZER_SAVED_MAX);
        return NULL;
    }
    double *values = malloc((size_t)(length > 0 ? length : 1) * sizeof *values);
    if (!values) {
        ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for optimizer state \"%s\" (%lld values)", name,
                (long long)length);
        return NULL;
    }
    int i = saved->array_count++;
    snprintf(saved->arrays[i].name, sizeof saved->arrays[i].name, "%s", name);
    saved->arrays[i].length = length;
    saved->arrays[i].values = values;
    return values;
}

ax_status ax_optimizer_saved_add_scalar(ax_optimizer_saved *saved, const char *name, double value)
{
    if (saved->scalar_count >= AX_OPTIMIZER_SAVED_MAX || !name_fits(name))
        return ax_fail(AX_STATUS_BAD_FILE, "optimizer state scalar \"%s\": more than %d scalars, or a bad name",
                       name ? name : "", AX_OPTIMIZER_SAVED_MAX);
    int i = saved->scalar_count++;
    snprintf(saved->scalars[i].name, sizeof saved->scalars[i].name, "%s", name);
    saved->scalars[i].value = value;
    return AX_STATUS_OK;
}

const double *ax_optimizer_saved_array(const ax_optimizer_saved *saved, const char *name,
                                       int64_t *length)
{
    for (int i = 0; i < saved->array_count; i++)
        if (strcmp(saved->arrays[i].name, name) == 0) {
            if (length)
                *length = saved->arrays[i].length;
            return saved->arrays[i].values;
        }
    return NULL;
}

bool ax_optimizer_saved_scalar(const ax_optimizer_saved *saved, const char *name, double *value)
{
    for (int i = 0; i < saved->scalar_count; i++)
        if (strcmp(saved->scalars[i].name, name) == 0) {
            *value = saved->scalars[i].value;
            return true;
        }
    return false;
}

static bool listed(const char *const *names, const char *name)
{
    for (int i = 0; names && names[i]; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

ax_status ax_optimizer_saved_started(const ax_optimizer_saved *saved, const char *kind,
                                     bool *started)
{
    double value = 0.0;
    if (!ax_optimizer_saved_scalar(saved, "started", &value))
        return ax_fail(AX_STATUS_BAD_FILE, "%s's optimizer state lacks the scalar \"started\"", kind);
    if (value != 0.0 && value != 1.0)
        return ax_fail(AX_STATUS_BAD_FILE, "%s's optimizer state scalar \"started\" is %g, not 0 or 1",
                       kind, value);
    *started = value == 1.0;
    return AX_STATUS_OK;
}

ax_status ax_optimizer_saved_expect(const ax_optimizer_saved *saved, const char *kind,
                                    const char *const *arrays, const int64_t *lengths,
                                    const char *const *scalars)
{
    for (int i = 0; i < saved->array_count; i++)
        if (!listed(arrays, saved->arrays[i].name))
            return ax_fail(AX_STATUS_BAD_FILE,
                           "optimizer state \"%s\" is not part of %s's state (written by another optimizer?)",
                           saved->arrays[i].name, kind);
    for (int i = 0; i < saved->scalar_count; i++)
        if (!listed(scalars, saved->scalars[i].name))
            return ax_fail(AX_STATUS_BAD_FILE,
                           "optimizer state scalar \"%s\" is not part of %s's state (written by another optimizer?)",
                           saved->scalars[i].name, kind);
    for (int i = 0; arrays && arrays[i]; i++) {
        int64_t length = 0;
        if (!ax_optimizer_saved_array(saved, arrays[i], &length))
            return ax_fail(AX_STATUS_BAD_FILE, "%s's optimizer state lacks the array \"%s\"", kind, arrays[i]);
        if (length != lengths[i])
            return ax_fail(AX_STATUS_BAD_FILE,
                           "%s's optimizer state \"%s\" has %lld values; this state needs %lld", kind,
                           arrays[i], (long long)length, (long long)lengths[i]);
    }
    for (int i = 0; scalars && scalars[i]; i++) {
        double value;
        if (!ax_optimizer_saved_scalar(saved, scalars[i], &value))
            return ax_fail(AX_STATUS_BAD_FILE, "%s's optimizer state lacks the scalar \"%s\"", kind, scalars[i]);
        if (!isfinite(value))
            return ax_fail(AX_STATUS_BAD_FILE, "%s's optimizer state scalar \"%s\" is %g, not a finite number",
                           kind, scalars[i], value);
    }
    for (int i = 0; i < saved->array_count; i++)
        for (int64_t j = 0; j < saved->arrays[i].length; j++)
            if (!isfinite(saved->arrays[i].values[j]))
                return ax_fail(AX_STATUS_BAD_FILE,
                               "%s's optimizer state \"%s\" holds a NaN or infinite value at index %lld",
                               kind, saved->arrays[i].name, (long long)j);
    return AX_STATUS_OK;
}

ax_status ax_optimizer_saved_check(const ax_train_config *config, int64_t count,
                                   const ax_optimizer_saved *saved)
{
    const ax_optimizer_descriptor *kind = ax_optimizer_descriptor_of(config->optimizer);
    if (kind && kind->check_saved)
        return kind->check_saved(config, count, saved);
    /* SGD and Adam keep nothing beyond their arenas */
    return ax_optimizer_saved_expect(saved, ax_optimizer_name(config->optimizer), NULL, NULL, NULL);
}

ax_status ax_optimizer_save(const ax_optimizer *optimizer, ax_optimizer_saved *saved)
{
    memset(saved, 0, sizeof *saved);
    if (!optimizer->kind->save)
        return AX_STATUS_OK;
    ax_status status = optimizer->kind->save(optimizer, saved);
    if (status != AX_STATUS_OK)
        ax_optimizer_saved_free(saved);
    return status;
}

ax_status ax_optimizer_restore(ax_optimizer *optimizer, const ax_optimizer_saved *saved)
{
    AX_TRY(ax_optimizer_saved_check(&optimizer->config, optimizer->count, saved));
    if (optimizer->kind->restore)
        optimizer->kind->restore(optimizer, saved);
    return AX_STATUS_OK;
}
