/* names.c: the text names of activations, losses, initialisations and
 * optimizers, and the layer layout syntax "128:relu,10:softmax". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static const char *const activation_names[] = {"identity", "sigmoid", "tanh", "relu", "softmax"};
static const char *const loss_names[] = {"auto", "cross-entropy", "binary-cross-entropy", "mse"};
static const char *const init_names[] = {"auto", "he", "xavier", "uniform"};
static const char *const optimizer_names[] = {"sgd", "adam", "cg", "lbfgs"};

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
const char *ax_optimizer_name(ax_optimizer_kind kind)
{
    return name_of(optimizer_names, COUNT(optimizer_names), (int)kind);
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

ax_status ax_optimizer_parse(const char *name, ax_optimizer_kind *out)
{
    int value = 0;
    AX_TRY(parse_name(optimizer_names, COUNT(optimizer_names), "optimizer", name, &value));
    *out = (ax_optimizer_kind)value;
    return AX_STATUS_OK;
}

/* Parses the layout into layers (room for AX_MAX_LAYERS); *count layers. */
static ax_status parse_layers(const char *text, ax_layer_spec *layers, int *count_out)
{
    if (!text || !*text)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "the layer layout is empty (e.g. 128:relu,10:softmax)");
    int count = 0;
    const char *cursor = text;
    while (*cursor) {
        if (count == AX_MAX_LAYERS)
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "layout '%s' has more than %d layers", text,
                           AX_MAX_LAYERS);
        char item[64];
        size_t length = strcspn(cursor, ",");
        if (length == 0 || length >= sizeof item)
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "layout '%s': layer %d is %s", text, count + 1,
                           length == 0 ? "empty" : "too long");
        memcpy(item, cursor, length);
        item[length] = '\0';
        char *colon = strchr(item, ':');
        if (colon)
            *colon = '\0';
        char *end;
        errno = 0;
        long long width = strtoll(item, &end, 10);
        if (end == item || *end != '\0' || errno || width < 1 || width > (1 << 24))
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "layout '%s': layer %d has width '%s'; expected a whole number from 1 to %d",
                           text, count + 1, item, 1 << 24);
        layers[count] = ax_layer_dense(width, AX_ACT_RELU);
        if (colon) {
            ax_status status = ax_activation_parse(colon + 1, &layers[count].dense.activation);
            if (status != AX_STATUS_OK)
                return ax_fail_context(status, "layout '%s': layer %d", text, count + 1);
        }
        count++;
        cursor += length;
        if (*cursor == ',') {
            cursor++;
            if (!*cursor)
                return ax_fail(AX_STATUS_BAD_ARGUMENT, "layout '%s' ends with a comma", text);
        }
        if (!colon && !*cursor)
            layers[count - 1].dense.activation = AX_ACT_IDENTITY; /* a bare output width */
    }
    *count_out = count;
    return AX_STATUS_OK;
}

ax_status ax_layers_parse(const char *text, ax_net_config *config)
{
    ax_layer_spec *layers = malloc(AX_MAX_LAYERS * sizeof *layers);
    if (!layers)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory parsing a layer layout");
    int count = 0;
    ax_status status = parse_layers(text, layers, &count);
    if (status != AX_STATUS_OK) {
        free(layers);
        return status;
    }
    ax_layer_spec *fitted = realloc(layers, (size_t)count * sizeof *layers);
    if (fitted)
        layers = fitted;
    free(config->parsed_layers);
    config->parsed_layers = layers;
    config->layers = layers;
    config->layer_count = count;
    return AX_STATUS_OK;
}

void ax_layers_format(const ax_net_config *config, char *text, size_t capacity)
{
    if (capacity == 0)
        return;
    int used = snprintf(text, capacity, "%lld", (long long)config->input_width);
    for (int l = 0; l < config->layer_count && used >= 0 && (size_t)used < capacity; l++)
        used += snprintf(text + used, capacity - (size_t)used, "-%lld:%s",
                         (long long)config->layers[l].dense.units,
                         ax_activation_name(config->layers[l].dense.activation));
}
