/* layer_pool.c: max and average pooling over images in (row, column,
 * channel) order, channel by channel, without padding (torch.nn.MaxPool2d
 * and AvgPool2d with padding 0 and ceil_mode off): outputs (rows,
 * out_height, out_width, channels), out = (in - window) / stride + 1. No
 * parameters and no activation (identity): the backward pass is only the
 * input gradient, which for max pooling goes to each window's first largest
 * value (PyTorch's choice on ties), read again from the layer's input
 * rather than kept as indices from the forward pass. */
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "core/layer.h"
#include "core/layer_window.h"
#include "core/net.h"

#define OPS (net->backend->ops)

enum { MOST_WINDOW = 1024 }; /* window side and stride */

ax_layer_spec ax_layer_pool(ax_layer_kind kind, int64_t window, int64_t stride)
{
    ax_layer_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.kind = kind;
    spec.pool.window = window;
    spec.pool.stride = stride;
    return spec;
}

static const char *prefix_of(ax_layer_kind kind)
{
    return kind == AX_LAYER_MAX_POOL ? "maxpool" : "avgpool";
}

static bool max_pool_claims(const char *item) { return strncmp(item, "maxpool", 7) == 0; }
static bool average_pool_claims(const char *item) { return strncmp(item, "avgpool", 7) == 0; }

static ax_status pool_parse_kind(ax_layer_kind kind, const char *item, bool output,
                                 const char *where, ax_layer_spec *spec)
{
    char form[160];
    snprintf(form, sizeof form, "%s:WINDOW[/sSTRIDE], e.g. %s:2 or %s:3/s2", prefix_of(kind),
             prefix_of(kind), prefix_of(kind));
    const char *cursor = item + 7;
    int64_t window = 0, stride = 0;
    if (*cursor != ':')
        return ax_window_syntax_error(where, item, cursor, form);
    cursor++;
    if (!ax_window_read_number(&cursor, &window))
        return ax_window_syntax_error(where, item, cursor, form);
    stride = window;
    if (strncmp(cursor, "/s", 2) == 0) {
        cursor += 2;
        if (!ax_window_read_number(&cursor, &stride))
            return ax_window_syntax_error(where, item, cursor, form);
    }
    if (*cursor)
        return ax_window_syntax_error(where, item, cursor, form);
    if (window < 1 || window > MOST_WINDOW || stride < 1 || stride > MOST_WINDOW)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s ('%s'): window %lld or stride %lld is out of range (1 to %d)", where,
                       item, (long long)window, (long long)stride, MOST_WINDOW);
    if (output)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s ('%s'): pooling cannot be the output layer; "
                       "end with a dense layer (e.g. ...,10:softmax)", where, item);
    *spec = ax_layer_pool(kind, window, stride);
    return AX_STATUS_OK;
}

static ax_status max_pool_parse(const char *item, bool output, const char *where,
                                ax_layer_spec *spec)
{
    return pool_parse_kind(AX_LAYER_MAX_POOL, item, output, where, spec);
}

static ax_status average_pool_parse(const char *item, bool output, const char *where,
                                    ax_layer_spec *spec)
{
    return pool_parse_kind(AX_LAYER_AVERAGE_POOL, item, output, where, spec);
}

static int pool_format(const ax_layer_spec *spec, char *text, size_t capacity)
{
    if (spec->pool.stride == spec->pool.window)
        return snprintf(text, capacity, "%s:%lld", prefix_of(spec->kind),
                        (long long)spec->pool.window);
    return snprintf(text, capacity, "%s:%lld/s%lld", prefix_of(spec->kind),
                    (long long)spec->pool.window, (long long)spec->pool.stride);
}

static ax_status pool_check(const ax_layer_spec *spec, int index, bool output)
{
    if (spec->pool.window < 1 || spec->pool.window > MOST_WINDOW || spec->pool.stride < 1 ||
        spec->pool.stride > MOST_WINDOW)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "layer %d: pooling window %lld or stride %lld is out of range (1 to %d)",
                       index + 1, (long long)spec->pool.window, (long long)spec->pool.stride,
                       MOST_WINDOW);
    if (output)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "layer %d: pooling cannot be the output layer; end with a dense layer "
                       "(e.g. ...,10:softmax)",
                       index + 1);
    return AX_STATUS_OK;
}

static ax_activation pool_activation(const ax_layer_spec *spec)
{
    (void)spec;
    return AX_ACT_IDENTITY;
}

static int64_t positions(int64_t in, int64_t window, int64_t stride)
{
    return in < window ? 0 : (in - window) / stride + 1;
}

static ax_layer_shape pool_output_shape(const ax_layer_spec *spec, ax_layer_shape in)
{
    return (ax_layer_shape){positions(in.height, spec->pool.window, spec->pool.stride),
                            positions(in.width, spec->pool.window, spec->pool.stride),
                            in.channels, true};
}

static ax_status pool_check_input(const ax_layer_spec *spec, int index, ax_layer_shape in)
{
    char item[64];
    pool_format(spec, item, sizeof item);
    AX_TRY(ax_window_require_image(index, item, in));
    if (spec->pool.window > in.height || spec->pool.window > in.width)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "layer %d (%s): its %lldx%lld window leaves nothing of its input, "
                       "%lldx%lldx%lld (height x width x channels)",
                       index + 1, item, (long long)spec->pool.window,
                       (long long)spec->pool.window, (long long)in.height, (long long)in.width,
                       (long long)in.channels);
    return AX_STATUS_OK;
}

static double pool_parameters(const ax_layer_spec *spec, ax_layer_shape in)
{
    (void)spec;
    (void)in;
    return 0.0;
}

static void pool_lay_out(ax_layer *layer, ax_layer_shape in)
{
    layer->in_shape = in;
    layer->out_shape = pool_output_shape(&layer->spec, in);
    layer->in = ax_layer_shape_values(in);
    layer->out = ax_layer_shape_values(layer->out_shape);
    layer->activation = AX_ACT_IDENTITY;
    layer->weight_offset = layer->bias_offset = layer->offset;
    layer->weight_count = layer->parameter_count = 0;
}

static const char *pool_missing_operations(const struct ax_backend_ops *ops)
{
    return ops->pool_forward && ops->pool_backward ? NULL : "pool_forward and pool_backward";
}

static int pool_tensors(const ax_layer *layer, ax_layer_tensor *tensors)
{
    (void)layer;
    (void)tensors;
    return 0;
}

static void pool_init(const ax_layer *layer, ax_init init, double init_range, ax_rng *rng,
                      double *values)
{
    (void)layer, (void)init, (void)init_range, (void)rng, (void)values;
}

/* A comparison or addition per window value, forward and backward. */
static double pool_flops(const ax_layer *layer, int64_t rows, ax_layer_work work)
{
    const double window = (double)(layer->spec.pool.window * layer->spec.pool.window);
    return work == AX_LAYER_WORK_TRAIN ? 2.0 * (double)rows * (double)layer->out * window : 0.0;
}

ax_window_geometry ax_pool_layer_geometry(const ax_layer *layer)
{
    return (ax_window_geometry){
        .height = layer->in_shape.height,
        .width = layer->in_shape.width,
        .channels = layer->in_shape.channels,
        .kernel_height = layer->spec.pool.window,
        .kernel_width = layer->spec.pool.window,
        .stride = layer->spec.pool.stride,
        .padding = 0,
        .out_height = layer->out_shape.height,
        .out_width = layer->out_shape.width,
    };
}

static void pool_forward(ax_net *net, int index, const void *x, void *z, int64_t rows)
{
    const ax_layer *layer = &net->layers[index];
    const ax_window_geometry geometry = ax_pool_layer_geometry(layer);
    AX_PROFILED(net, AX_PROFILE_POOL_FORWARD, index, 0.0,
                OPS->pool_forward(net->backend, layer->spec.kind == AX_LAYER_MAX_POOL, &geometry,
                                  x, z, rows));
}

/* Identity, no bias: delta is d loss / d pre-activations already (dropout's
 * mask was applied to it by the caller). */
static void pool_backward_activation(ax_net *net, int index, void *delta, double kept_scale,
                                     bool pre_activation, int64_t rows)
{
    (void)net, (void)index, (void)delta, (void)kept_scale, (void)pre_activation, (void)rows;
}

static void pool_backward_weights(ax_net *net, int index, const void *delta, const void *x,
                                  double l2, int64_t rows)
{
    (void)net, (void)index, (void)delta, (void)x, (void)l2, (void)rows;
}

static void pool_backward_input(ax_net *net, int index, const void *delta, void *previous,
                                int64_t rows)
{
    const ax_layer *layer = &net->layers[index];
    const ax_window_geometry geometry = ax_pool_layer_geometry(layer);
    AX_PROFILED(net, AX_PROFILE_POOL_BACKWARD, index, 0.0,
                OPS->pool_backward(net->backend, layer->spec.kind == AX_LAYER_MAX_POOL,
                                   &geometry, ax_window_layer_input(net, index), delta, previous,
                                   rows));
}

/* Max pooling over the output of a ReLU layer: the backend's one pass of
 * both, where it has it (backend.h, version 11). */
static bool max_pool_backward_input_relu(ax_net *net, int index, const void *delta,
                                         void *previous, int64_t rows)
{
    if (!OPS->max_pool_backward_relu)
        return false;
    const ax_window_geometry geometry = ax_pool_layer_geometry(&net->layers[index]);
    AX_PROFILED(net, AX_PROFILE_POOL_BACKWARD, index, 0.0,
                OPS->max_pool_backward_relu(net->backend, &geometry,
                                            ax_window_layer_input(net, index), delta, previous,
                                            rows));
    return true;
}

#define POOL_OPS(kind_value, kind_name, prefix, input_relu) \
    {                                                       \
        .kind = kind_value,                                 \
        .name = kind_name,                                  \
        .claims = prefix##_claims,                          \
        .parse = prefix##_parse,                            \
        .format = pool_format,                              \
        .check = pool_check,                                \
        .activation = pool_activation,                      \
        .check_input = pool_check_input,                    \
        .output_shape = pool_output_shape,                  \
        .parameters = pool_parameters,                      \
        .lay_out = pool_lay_out,                            \
        .missing_operations = pool_missing_operations,      \
        .tensors = pool_tensors,                            \
        .init = pool_init,                                  \
        .flops = pool_flops,                                \
        .forward = pool_forward,                            \
        .backward_activation = pool_backward_activation,    \
        .backward_weights = pool_backward_weights,          \
        .backward_input = pool_backward_input,              \
        .backward_input_relu = input_relu,                  \
    }

const ax_layer_ops ax_layer_max_pool_ops =
    POOL_OPS(AX_LAYER_MAX_POOL, "maxpool", max_pool, max_pool_backward_input_relu);
const ax_layer_ops ax_layer_average_pool_ops =
    POOL_OPS(AX_LAYER_AVERAGE_POOL, "avgpool", average_pool, NULL);
