/* layer.c: the kinds of layer and the layout of a network as a whole: the
 * table of each kind, the layout syntax "128:relu,10:softmax" (each item in
 * its kind's syntax), its text, its checks, widths and parameter counts. */
#include "core/layer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

/* Every kind, indexed by ax_layer_kind. */
static const ax_layer_ops *const kinds[] = {
    [AX_LAYER_DENSE] = &ax_layer_dense_ops,
};

enum { KIND_COUNT = (int)(sizeof kinds / sizeof kinds[0]) };

const ax_layer_ops *ax_layer_ops_of(ax_layer_kind kind)
{
    return (unsigned)kind < (unsigned)KIND_COUNT ? kinds[kind] : NULL;
}

/* The kind whose syntax item is in; dense, the first kind, when none
 * claims it, so that its parse names what a layer should look like. */
static const ax_layer_ops *ops_for_item(const char *item)
{
    for (int k = 0; k < KIND_COUNT; k++)
        if (kinds[k] && kinds[k]->claims(item))
            return kinds[k];
    return &ax_layer_dense_ops;
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
        cursor += length;
        const bool output = !*cursor;
        char where[600];
        snprintf(where, sizeof where, "layout '%s': layer %d", text, count + 1);
        AX_TRY(ops_for_item(item)->parse(item, output, where, &layers[count]));
        count++;
        if (*cursor == ',') {
            cursor++;
            if (!*cursor)
                return ax_fail(AX_STATUS_BAD_ARGUMENT, "layout '%s' ends with a comma", text);
        }
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

void ax_layout_text(const ax_net_config *config, bool with_input, char *text, size_t capacity)
{
    if (capacity == 0)
        return;
    text[0] = '\0';
    int used = with_input ? snprintf(text, capacity, "%lld", (long long)config->input_width) : 0;
    for (int l = 0; l < config->layer_count && used >= 0 && (size_t)used < capacity; l++) {
        const ax_layer_ops *ops = ax_layer_ops_of(config->layers[l].kind);
        const char *separator = with_input ? "-" : l ? "," : "";
        used += snprintf(text + used, capacity - (size_t)used, "%s", separator);
        if (used < 0 || (size_t)used >= capacity)
            break;
        used += ops ? ops->format(&config->layers[l], text + used, capacity - (size_t)used)
                    : snprintf(text + used, capacity - (size_t)used, "kind-%d",
                               (int)config->layers[l].kind);
    }
}

void ax_layers_format(const ax_net_config *config, char *text, size_t capacity)
{
    ax_layout_text(config, true, text, capacity);
}

ax_status ax_layout_check(const ax_net_config *config)
{
    if (config->layer_count < 1 || config->layer_count > AX_MAX_LAYERS)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "a network needs 1 to %d layers, not %d",
                       AX_MAX_LAYERS, config->layer_count);
    if (!config->layers)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "the configuration has %d layers but no layer specs",
                       config->layer_count);
    for (int l = 0; l < config->layer_count; l++) {
        const ax_layer_ops *ops = ax_layer_ops_of(config->layers[l].kind);
        if (!ops)
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "layer %d: unknown kind %d", l + 1,
                           (int)config->layers[l].kind);
        AX_TRY(ops->check(&config->layers[l], l, l == config->layer_count - 1));
    }
    return AX_STATUS_OK;
}

int64_t ax_layout_width(const ax_net_config *config, int layer)
{
    int64_t width = config->input_width;
    for (int l = 0; l <= layer; l++)
        width = ax_layer_ops_of(config->layers[l].kind)->output_width(&config->layers[l], width);
    return width;
}

double ax_layout_parameters(const ax_net_config *config)
{
    double count = 0.0;
    int64_t in = config->input_width;
    for (int l = 0; l < config->layer_count; l++) {
        const ax_layer_ops *ops = ax_layer_ops_of(config->layers[l].kind);
        if (!ops)
            return 0.0;
        count += ops->parameters(&config->layers[l], (double)in);
        in = ops->output_width(&config->layers[l], in);
    }
    return count;
}

int64_t ax_net_config_output_width(const ax_net_config *config)
{
    if (!config->layers || config->layer_count < 1 || config->layer_count > AX_MAX_LAYERS)
        return 0;
    for (int l = 0; l < config->layer_count; l++)
        if (!ax_layer_ops_of(config->layers[l].kind))
            return 0;
    return ax_layout_width(config, config->layer_count - 1);
}
