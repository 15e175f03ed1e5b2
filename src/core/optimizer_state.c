/* optimizer_state.c: ax_optimizer_state, SGD's velocity or Adam's moments
 * and step count carried from one ax_train call into the next (axon.h,
 * "optimizer state"), as scikit-learn's partial_fit keeps its optimizer
 * between calls (sklearn/neural_network/_multilayer_perceptron.py,
 * _fit_stochastic). The arrays live on the host as doubles, which hold
 * float32 and float64 arenas exactly, so a run continued from a state takes
 * the steps an uninterrupted one would, bit for bit. */
#include "core/optimizer_state.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

enum { MAX_ARRAYS = 2 };

struct ax_optimizer_state {
    bool held;
    ax_optimizer_kind kind;
    ax_precision precision;
    int64_t parameters;
    int arrays;
    int64_t steps;
    double *values[MAX_ARRAYS]; /* (allocated) each, `arrays` of them in use; malloc */
    int64_t allocated;          /* doubles in each array allocated */
};

/* How kind's state is carried (the registry's answer), or NULL for the kinds
 * whose state belongs to one full batch and for a value no kind has. */
static const ax_optimizer_carry *carry_of(ax_optimizer_kind kind)
{
    const ax_optimizer_descriptor *descriptor = ax_optimizer_descriptor_of(kind);
    return descriptor ? descriptor->carry : NULL;
}

/* The names of the kinds that carry a state, each followed by `suffix`,
 * as a list ending in `last_joint` ("sgd, adam and adamw"), for messages. */
static void carrying_kinds(const char *suffix, const char *last_joint, char *text, size_t capacity)
{
    int total = 0;
    for (int k = 0; k < ax_optimizer_count(); k++)
        total += carry_of((ax_optimizer_kind)k) != NULL;
    text[0] = '\0';
    for (int k = 0, listed = 0; k < ax_optimizer_count(); k++) {
        if (!carry_of((ax_optimizer_kind)k))
            continue;
        const size_t used = strlen(text);
        snprintf(text + used, capacity - used, "%s%s%s",
                 listed == 0 ? "" : listed == total - 1 ? last_joint : ", ",
                 ax_optimizer_name((ax_optimizer_kind)k), suffix);
        listed++;
    }
}

ax_status ax_optimizer_state_create(ax_optimizer_state **state)
{
    *state = calloc(1, sizeof **state);
    if (!*state)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for an optimizer state");
    return AX_STATUS_OK;
}

static void release_arrays(ax_optimizer_state *state)
{
    for (int i = 0; i < MAX_ARRAYS; i++) {
        free(state->values[i]);
        state->values[i] = NULL;
    }
}

void ax_optimizer_state_free(ax_optimizer_state *state)
{
    if (!state)
        return;
    release_arrays(state);
    free(state);
}

bool ax_optimizer_state_describe(const ax_optimizer_state *state, ax_optimizer_kind *kind,
                                 ax_precision *precision, int64_t *parameters, int *arrays,
                                 int64_t *steps)
{
    if (!state || !state->held)
        return false;
    if (kind)
        *kind = state->kind;
    if (precision)
        *precision = state->precision;
    if (parameters)
        *parameters = state->parameters;
    if (arrays)
        *arrays = state->arrays;
    if (steps)
        *steps = state->steps;
    return true;
}

ax_status ax_optimizer_state_copy_array(const ax_optimizer_state *state, int index, double *values)
{
    if (!state || !state->held)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "the optimizer state is empty: no array to copy");
    if (index < 0 || index >= state->arrays)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "the %s optimizer state holds %d array%s; there is no array %d",
                       ax_optimizer_name(state->kind), state->arrays, state->arrays == 1 ? "" : "s",
                       index);
    memcpy(values, state->values[index], (size_t)state->parameters * sizeof(double));
    return AX_STATUS_OK;
}

/* Makes room for `arrays` arrays of `parameters` doubles, reusing what is
 * there when the size is the same; the state is emptied. */
static ax_status reserve(ax_optimizer_state *state, int64_t parameters, int arrays)
{
    state->held = false;
    if (state->allocated != parameters) {
        release_arrays(state);
        state->allocated = parameters;
    }
    for (int i = 0; i < MAX_ARRAYS; i++) {
        if (i >= arrays) {
            free(state->values[i]);
            state->values[i] = NULL;
        } else if (!state->values[i]) {
            state->values[i] = malloc((size_t)parameters * sizeof(double));
            if (!state->values[i])
                return ax_fail(AX_STATUS_OUT_OF_MEMORY,
                               "out of memory for an optimizer state of %lld parameters",
                               (long long)parameters);
        }
    }
    return AX_STATUS_OK;
}

ax_status ax_optimizer_state_assign(ax_optimizer_state *state, ax_optimizer_kind kind,
                                    ax_precision precision, int64_t parameters, int arrays,
                                    int64_t steps, const double *const *values)
{
    if (!state)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "no optimizer state to assign to");
    const ax_optimizer_carry *carry = carry_of(kind);
    if (!carry) {
        char kinds[256];
        carrying_kinds("'s", " or ", kinds, sizeof kinds);
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "an optimizer state is %s, not %s (kind %d)", kinds,
                       ax_optimizer_name(kind), (int)kind);
    }
    if (strcmp(ax_precision_name(precision), "unknown") == 0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "unknown precision %d for an optimizer state",
                       (int)precision);
    if (parameters <= 0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "an optimizer state needs a parameter count above 0, not %lld",
                       (long long)parameters);
    if (steps < 0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "an optimizer state's step count must be >= 0, not %lld",
                       (long long)steps);
    if (arrays < carry->fewest_arrays || arrays > carry->most_arrays)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "a %s optimizer state holds %s arrays, not %d", ax_optimizer_name(kind),
                       carry->arrays_text, arrays);
    for (int a = 0; a < arrays; a++) {
        if (!values || !values[a])
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "array %d of the optimizer state is missing", a);
        const bool nonnegative = a == carry->nonnegative_array;
        for (int64_t i = 0; i < parameters; i++) {
            const double x = values[a][i];
            if (!isfinite(x) || (nonnegative && x < 0.0))
                return ax_fail(AX_STATUS_BAD_ARGUMENT,
                               "array %d of the %s optimizer state holds %g at %lld; its values must "
                               "be finite%s%s%s",
                               a, ax_optimizer_name(kind), x, (long long)i,
                               nonnegative ? " and >= 0 (" : "",
                               nonnegative ? carry->nonnegative_text : "", nonnegative ? ")" : "");
        }
    }
    AX_TRY(reserve(state, parameters, arrays));
    for (int a = 0; a < arrays; a++)
        memcpy(state->values[a], values[a], (size_t)parameters * sizeof(double));
    state->kind = kind;
    state->precision = precision;
    state->parameters = parameters;
    state->arrays = arrays;
    state->steps = steps;
    state->held = true;
    return AX_STATUS_OK;
}

ax_status ax_optimizer_state_check_kind(const ax_optimizer_state *carried, ax_optimizer_kind kind)
{
    if (carried && !carry_of(kind)) {
        char kinds[256];
        carrying_kinds("", " and ", kinds, sizeof kinds);
        return ax_fail(AX_STATUS_UNSUPPORTED,
                       "%s cannot carry an optimizer state from one training call into the next: "
                       "its search directions and correction pairs belong to one full batch; "
                       "only %s take optimizer_state (set it to NULL)",
                       ax_optimizer_name(kind), kinds);
    }
    return AX_STATUS_OK;
}

/* How many state arrays the optimizer keeps (0 to 2). */
static int arrays_of(const ax_optimizer *optimizer)
{
    int arrays = 0;
    while (arrays < MAX_ARRAYS && optimizer->state[arrays])
        arrays++;
    return arrays;
}

ax_status ax_optimizer_state_start(const ax_optimizer_state *carried, ax_optimizer *optimizer,
                                   ax_precision precision)
{
    if (!carried || !carried->held)
        return AX_STATUS_OK;
    const ax_optimizer_kind kind = optimizer->config.optimizer;
    if (carried->kind != kind)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "the optimizer state was left by %s; this run trains with %s (start a new "
                       "state to change optimizers)",
                       ax_optimizer_name(carried->kind), ax_optimizer_name(kind));
    if (carried->parameters != optimizer->count)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "the optimizer state is for %lld parameters; this network has %lld",
                       (long long)carried->parameters, (long long)optimizer->count);
    if (carried->precision != precision)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "the optimizer state is in precision %s; this network is %s",
                       ax_precision_name(carried->precision), ax_precision_name(precision));
    const int arrays = arrays_of(optimizer);
    /* A held state is of a kind that carries one (assign and check_kind see to it). */
    assert(optimizer->kind->carry != NULL);
    if (carried->arrays != arrays)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "the %s optimizer state holds %d array%s; this run keeps %d (%s)",
                       ax_optimizer_name(kind), carried->arrays, carried->arrays == 1 ? "" : "s",
                       arrays, arrays ? optimizer->kind->carry->why_some
                                      : optimizer->kind->carry->why_none);
    for (int i = 0; i < arrays; i++)
        AX_TRY(ax_optimizer_state_set(optimizer, i, carried->values[i]));
    optimizer->counters.steps = carried->steps;
    return AX_STATUS_OK;
}

ax_status ax_optimizer_state_keep(ax_optimizer_state *carried, const ax_optimizer *optimizer,
                                  ax_precision precision)
{
    if (!carried)
        return AX_STATUS_OK;
    const int arrays = arrays_of(optimizer);
    AX_TRY(reserve(carried, optimizer->count, arrays));
    for (int i = 0; i < arrays; i++)
        ax_optimizer_state_get(optimizer, i, carried->values[i]);
    carried->kind = optimizer->config.optimizer;
    carried->precision = precision;
    carried->parameters = optimizer->count;
    carried->arrays = arrays;
    carried->steps = optimizer->counters.steps;
    carried->held = true;
    return AX_STATUS_OK;
}
