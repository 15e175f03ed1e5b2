/* names.c: the text names of activations, losses, initialisations,
 * precisions and optimizers (those from the registry in optim/optimizer.c, which also
 * answers ax_optimizer_name; the layer layout syntax is layer.c's). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

static const char *const activation_names[] = {"identity", "sigmoid", "tanh", "relu", "softmax"};
static const char *const loss_names[] = {"auto", "cross-entropy", "binary-cross-entropy", "mse"};
static const char *const init_names[] = {"auto", "he", "xavier", "uniform"};
/* In the order of ax_precision's values; the spelling of checkpoints,
 * optimizer states, bench lines and --precision. */
static const char *const precision_names[] = {"f32", "f64", "bf16"};

#define COUNT(array) ((int)(sizeof(array) / sizeof((array)[0])))

static const char *name_of(const char *const *names, int count, int value)
{
    return value >= 0 && value < count ? names[value] : "unknown";
}

static int find_name(const char *const *names, int count, const char *name)
{
    for (int i = 0; i < count; i++)
        if (name && strcmp(names[i], name) == 0)
            return i;
    return -1;
}

static void list_names(const char *const *names, int count, char *text, size_t capacity)
{
    text[0] = '\0';
    for (int i = 0; i < count; i++) {
        size_t used = strlen(text);
        snprintf(text + used, capacity - used, "%s%s", i ? ", " : "", names[i]);
    }
}

static ax_status parse_name(const char *const *names, int count, const char *what, const char *name,
                            int *out)
{
    int found = find_name(names, count, name);
    if (found < 0) {
        char choices[256];
        list_names(names, count, choices, sizeof choices);
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "unknown %s '%s' (choose from %s)", what,
                       name ? name : "", choices);
    }
    *out = found;
    return AX_STATUS_OK;
}

const char *ax_activation_name(ax_activation activation)
{
    return name_of(activation_names, COUNT(activation_names), (int)activation);
}
const char *ax_loss_name(ax_loss loss) { return name_of(loss_names, COUNT(loss_names), (int)loss); }
const char *ax_init_name(ax_init init) { return name_of(init_names, COUNT(init_names), (int)init); }
const char *ax_precision_name(ax_precision precision)
{
    return name_of(precision_names, COUNT(precision_names), (int)precision);
}

ax_status ax_activation_parse(const char *name, ax_activation *out)
{
    int value = 0;
    /* "linear" is what Keras and TMVA users type for identity. */
    if (name && strcmp(name, "linear") == 0)
        name = "identity";
    AX_TRY(parse_name(activation_names, COUNT(activation_names), "activation", name, &value));
    *out = (ax_activation)value;
    return AX_STATUS_OK;
}

ax_status ax_loss_parse(const char *name, ax_loss *out)
{
    int value = 0;
    AX_TRY(parse_name(loss_names, COUNT(loss_names), "loss", name, &value));
    *out = (ax_loss)value;
    return AX_STATUS_OK;
}

ax_status ax_init_parse(const char *name, ax_init *out)
{
    int value = 0;
    AX_TRY(parse_name(init_names, COUNT(init_names), "initialisation", name, &value));
    *out = (ax_init)value;
    return AX_STATUS_OK;
}

ax_status ax_precision_parse(const char *name, ax_precision *out)
{
    int value = 0;
    AX_TRY(parse_name(precision_names, COUNT(precision_names), "precision", name, &value));
    *out = (ax_precision)value;
    return AX_STATUS_OK;
}

ax_status ax_optimizer_parse(const char *name, ax_optimizer_kind *out)
{
    const char *optimizer_names[32];
    int count = 0;
    for (; count < ax_optimizer_count() && count < COUNT(optimizer_names); count++)
        optimizer_names[count] = ax_optimizer_name((ax_optimizer_kind)count);
    int value = 0;
    AX_TRY(parse_name(optimizer_names, count, "optimizer", name, &value));
    *out = (ax_optimizer_kind)value;
    return AX_STATUS_OK;
}
