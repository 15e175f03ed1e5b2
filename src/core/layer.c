/* layer.c: the kinds of layer and the layout of a network as a whole: the
 * table of each kind, the layout syntax "128:relu,10:softmax" (each item in
 * its kind's syntax), its text, its checks, widths and parameter counts. */
#include "core/layer.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

/* Every kind, indexed by ax_layer_kind. */
static const ax_layer_ops *const kinds[] = {
    [AX_LAYER_DENSE] = &ax_layer_dense_ops,
    [AX_LAYER_CONV] = &ax_layer_conv_ops,
    [AX_LAYER_MAX_POOL] = &ax_layer_max_pool_ops,
    [AX_LAYER_AVERAGE_POOL] = &ax_layer_average_pool_ops,
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

/* A layout as messages show it: whole when short, else its start and its
 * length, so that a 2,000-character layout neither floods the terminal nor
 * pushes the reason out of the message (issue 25). */
enum { EXCERPT_CAPACITY = 96, EXCERPT_SHOWN = 40 };
static void excerpt(const char *text, char shown[EXCERPT_CAPACITY])
{
    size_t length = text ? strlen(text) : 0;
    if (length <= EXCERPT_SHOWN + 20)
        snprintf(shown, EXCERPT_CAPACITY, "%s", text ? text : "");
    else
        snprintf(shown, EXCERPT_CAPACITY, "%.*s... (%zu characters)", EXCERPT_SHOWN, text, length);
}

/* Layers in a layout: its items, commas + 1. */
static int64_t count_items(const char *text)
{
    int64_t count = 1;
    for (const char *c = text; *c; c++)
        count += *c == ',';
    return count;
}

/* Parses the layout into layers (room for AX_MAX_LAYERS); *count layers. */
static ax_status parse_layers(const char *text, ax_layer_spec *layers, int *count_out)
{
    char shown[EXCERPT_CAPACITY];
    excerpt(text, shown);
    if (!text || !*text)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "the layer layout is empty (e.g. 128:relu,10:softmax)");
    int count = 0;
    const char *cursor = text;
    while (*cursor) {
        if (count == AX_MAX_LAYERS)
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "too many layers: %lld, more than the %d a network may have "
                           "(layout '%s')",
                           (long long)count_items(text), AX_MAX_LAYERS, shown);
        char item[64];
        size_t length = strcspn(cursor, ",");
        if (length == 0 || length >= sizeof item)
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "layout '%s': layer %d is %s", shown, count + 1,
                           length == 0 ? "empty" : "too long");
        memcpy(item, cursor, length);
        item[length] = '\0';
        cursor += length;
        const bool output = !*cursor;
        char where[600];
        snprintf(where, sizeof where, "layout '%s': layer %d", shown, count + 1);
        AX_TRY(ops_for_item(item)->parse(item, output, where, &layers[count]));
        count++;
        if (*cursor == ',') {
            cursor++;
            if (!*cursor)
                return ax_fail(AX_STATUS_BAD_ARGUMENT, "layout '%s' ends with a comma", shown);
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
    const int64_t *image = config->input_shape;
    int used = !with_input ? 0
               : image[0] ? snprintf(text, capacity, "%lldx%lldx%lld", (long long)image[0],
                                     (long long)image[1], (long long)image[2])
                          : snprintf(text, capacity, "%lld", (long long)config->input_width);
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

ax_layer_shape ax_layout_input_shape(const ax_net_config *config)
{
    const int64_t *image = config->input_shape;
    if (image[0] || image[1] || image[2])
        return (ax_layer_shape){image[0], image[1], image[2], true};
    return (ax_layer_shape){1, 1, config->input_width, false};
}

bool ax_layout_input_shape_text(const ax_net_config *config, char *text, size_t capacity)
{
    const int64_t *image = config->input_shape;
    const bool is_image = image[0] || image[1] || image[2];
    if (!is_image) {
        if (capacity > 0)
            text[0] = '\0';
        return false;
    }
    snprintf(text, capacity, "%lldx%lldx%lld", (long long)image[0], (long long)image[1],
             (long long)image[2]);
    return true;
}

ax_status ax_layout_input_shape_parse(const char *text, ax_net_config *config)
{
    int64_t shape[3];
    const char *cursor = text;
    for (int i = 0; i < 3; i++) {
        char *end;
        errno = 0;
        long long value = strtoll(cursor, &end, 10);
        if (end == cursor || errno || value < 1 || value > (1 << 24) ||
            *end != (i < 2 ? 'x' : '\0') || !isdigit((unsigned char)*cursor))
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "input shape '%s' is not HEIGHTxWIDTHxCHANNELS (e.g. 28x28x1)", text);
        shape[i] = value;
        cursor = end + 1;
    }
    for (int i = 0; i < 3; i++)
        config->input_shape[i] = shape[i];
    return AX_STATUS_OK;
}

/* The image shape, when given, must be whole and hold input_width values. */
static ax_status check_input_shape(const ax_net_config *config)
{
    const int64_t *image = config->input_shape;
    if (!image[0] && !image[1] && !image[2])
        return AX_STATUS_OK;
    const int64_t most = 1 << 24;
    if (image[0] < 1 || image[1] < 1 || image[2] < 1 || image[0] > most || image[1] > most ||
        image[2] > most || image[0] * image[1] > most || image[0] * image[1] * image[2] > most ||
        image[0] * image[1] * image[2] != config->input_width)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "the input image shape %lldx%lldx%lld (height x width x channels) does not "
                       "hold the input width of %lld values",
                       (long long)image[0], (long long)image[1], (long long)image[2],
                       (long long)config->input_width);
    return AX_STATUS_OK;
}

/* Widths beyond this cannot be a layer's (dense's limit is 2^24); a walk
 * through an unchecked layout stops there before a product can overflow. */
static const int64_t WIDEST_SHAPE = (int64_t)1 << 40;

static bool shape_fits(ax_layer_shape shape)
{
    return shape.height >= 0 && shape.width >= 0 && shape.channels >= 0 &&
           shape.height <= WIDEST_SHAPE && shape.width <= WIDEST_SHAPE &&
           shape.channels <= WIDEST_SHAPE &&
           (double)shape.height * (double)shape.width * (double)shape.channels <=
               (double)WIDEST_SHAPE;
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
    AX_TRY(check_input_shape(config));
    ax_layer_shape shape = ax_layout_input_shape(config);
    for (int l = 0; l < config->layer_count; l++) {
        const ax_layer_ops *ops = ax_layer_ops_of(config->layers[l].kind);
        if (ops->check_input)
            AX_TRY(ops->check_input(&config->layers[l], l, shape));
        shape = ops->output_shape(&config->layers[l], shape);
        if (ax_layer_shape_values(shape) > (1 << 24))
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "layer %d gives %lldx%lldx%lld = %lld values per row, more than %d",
                           l + 1, (long long)shape.height, (long long)shape.width,
                           (long long)shape.channels, (long long)ax_layer_shape_values(shape),
                           1 << 24);
    }
    return AX_STATUS_OK;
}

int64_t ax_layout_width(const ax_net_config *config, int layer)
{
    ax_layer_shape shape = ax_layout_input_shape(config);
    if (!shape_fits(shape))
        return 0;
    for (int l = 0; l <= layer; l++) {
        shape = ax_layer_ops_of(config->layers[l].kind)->output_shape(&config->layers[l], shape);
        if (!shape_fits(shape))
            return 0; /* an unchecked layout no network can have */
    }
    return ax_layer_shape_values(shape);
}

double ax_layout_parameters(const ax_net_config *config)
{
    double count = 0.0;
    ax_layer_shape shape = ax_layout_input_shape(config);
    for (int l = 0; l < config->layer_count; l++) {
        const ax_layer_ops *ops = ax_layer_ops_of(config->layers[l].kind);
        if (!ops)
            return 0.0;
        if (!shape_fits(shape))
            return HUGE_VAL; /* no network can be this wide: more than any file holds */
        count += ops->parameters(&config->layers[l], shape);
        shape = ops->output_shape(&config->layers[l], shape);
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

void ax_layer_init_weights(const ax_layer *layer, ax_init init, double init_range, double fan_in,
                           double fan_out, int64_t biases, ax_rng *rng, double *values)
{
    if (init == AX_INIT_AUTO)
        init = layer->activation == AX_ACT_RELU ? AX_INIT_HE : AX_INIT_XAVIER;
    double *weights = values + layer->weight_offset;
    double *bias = values + layer->bias_offset;
    switch (init) {
    case AX_INIT_HE: {
        const double deviation = sqrt(2.0 / fan_in);
        for (int64_t i = 0; i < layer->weight_count; i++)
            weights[i] = deviation * ax_rng_normal(rng);
        break;
    }
    case AX_INIT_UNIFORM:
        /* The galaxy classifier's Python original keeps the bias as a weight
         * column, drawn the same way. */
        for (int64_t i = 0; i < layer->weight_count; i++)
            weights[i] = init_range * (2.0 * ax_rng_uniform(rng) - 1.0);
        for (int64_t i = 0; i < biases; i++)
            bias[i] = init_range * (2.0 * ax_rng_uniform(rng) - 1.0);
        return;
    case AX_INIT_XAVIER:
    default: {
        const double a = sqrt(6.0 / (fan_in + fan_out));
        for (int64_t i = 0; i < layer->weight_count; i++)
            weights[i] = a * (2.0 * ax_rng_uniform(rng) - 1.0);
        break;
    }
    }
    for (int64_t i = 0; i < biases; i++)
        bias[i] = 0.0;
}
