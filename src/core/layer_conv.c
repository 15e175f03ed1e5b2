/* layer_conv.c: the 2-D convolution layer over images in (row, column,
 * channel) order: outputs (rows, out_height, out_width, filters) =
 * activation(x * W + b), W (filters, channels, kernel_height, kernel_width)
 * as torch.nn.Conv2d stores it, b (filters); the block of the arenas is
 * [W, b]. Each pass is im2col followed by the backend's GEMM (Chellapilla,
 * Puri and Simard 2006; Caffe's and darknet's CPU convolution): the columns
 * (positions, kh * kw * channels) hold each window's values in the image's
 * own order (runs of channels: 4x faster to gather than torch's (channel,
 * kh, kw) order at LeNet's second layer, dev/conv_bench.c), so the weights
 * are transposed to (filters, kh kw, channels) in the scratch for each pass
 * (a few thousand values) and the forward pass is columns W'^T, the weight
 * gradient delta^T columns (transposed back into place) and the input
 * gradient col2im(delta W'). The columns of a group of images live in the
 * layer's part of net->workspace.scratch, bounded in size whatever the batch; when
 * the batch is one group the weight gradient reuses the forward pass's.
 * A backend may run each pass whole (backend.h: conv_forward,
 * conv_backward_input, conv_backward_weights), the layer falling back on
 * im2col + GEMM here where it has not or declines: the CPU runs the
 * forward pass and the input gradient through oneDNN in float32 where it
 * is built, and the weight gradient, in float32 and float64, as im2col +
 * GEMM over slices of the batch on all threads, summed in a fixed order
 * (cpu/conv_weight_gradient.c: OpenBLAS does not split the long sum over
 * positions, and oneDNN's weight gradient sums in an order that follows
 * the thread count; docs/notes/conv.md). The bias and activation are the
 * dense layer's backend passes over (rows * positions, filters). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "core/layer.h"
#include "core/layer_window.h"
#include "core/net.h"

#define OPS (net->backend->ops)

enum {
    MOST_FILTERS = 1 << 24,
    MOST_KERNEL = 1024, /* kernel side, stride and padding */
    /* The columns of a group of images at most (unless one image needs
     * more): 32 MB in float32, 64 in float64. LeNet's second layer
     * (51,200 values an image) fits a batch of 128 in one group, so the
     * weight gradient reuses the forward pass's columns instead of
     * gathering them again (at 4M values it took two groups and two
     * im2cols a step). */
    GROUP_REALS = 1 << 23,
};

static const char FORM[] =
    "conv:FILTERSxHEIGHTxWIDTH[/sSTRIDE][/pPADDING][:ACTIVATION], e.g. conv:32x5x5:relu or "
    "conv:64x3x3/s2/p1:relu";

ax_layer_spec ax_layer_conv(int64_t filters, int64_t kernel_height, int64_t kernel_width,
                            int64_t stride, int64_t padding, ax_activation activation)
{
    ax_layer_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.kind = AX_LAYER_CONV;
    spec.conv.filters = filters;
    spec.conv.kernel_height = kernel_height;
    spec.conv.kernel_width = kernel_width;
    spec.conv.stride = stride;
    spec.conv.padding = padding;
    spec.conv.activation = activation;
    return spec;
}

static ax_status check_ranges(const ax_layer_spec *spec, const char *who);

static bool conv_claims(const char *item) { return strncmp(item, "conv", 4) == 0; }

static ax_status conv_parse(const char *item, bool output, const char *where, ax_layer_spec *spec)
{
    int64_t filters = 0, height = 0, width = 0, stride = 1, padding = 0;
    const char *cursor = item;
    if (strncmp(cursor, "conv:", 5) != 0)
        return ax_window_syntax_error(where, item, cursor + 4, FORM);
    cursor += 5;
    if (!ax_window_read_number(&cursor, &filters) || *cursor != 'x')
        return ax_window_syntax_error(where, item, cursor, FORM);
    cursor++;
    if (!ax_window_read_number(&cursor, &height) || *cursor != 'x')
        return ax_window_syntax_error(where, item, cursor, FORM);
    cursor++;
    if (!ax_window_read_number(&cursor, &width))
        return ax_window_syntax_error(where, item, cursor, FORM);
    if (strncmp(cursor, "/s", 2) == 0) {
        cursor += 2;
        if (!ax_window_read_number(&cursor, &stride))
            return ax_window_syntax_error(where, item, cursor, FORM);
    }
    if (strncmp(cursor, "/p", 2) == 0) {
        cursor += 2;
        if (!ax_window_read_number(&cursor, &padding))
            return ax_window_syntax_error(where, item, cursor, FORM);
    }
    ax_activation activation = AX_ACT_RELU;
    if (*cursor == ':') {
        ax_status status = ax_activation_parse(cursor + 1, &activation);
        if (status != AX_STATUS_OK)
            return ax_fail_context(status, "%s ('%s')", where, item);
    } else if (*cursor) {
        return ax_window_syntax_error(where, item, cursor, FORM);
    }
    *spec = ax_layer_conv(filters, height, width, stride, padding, activation);
    /* ranges now, so that no later product of a parsed layout can overflow */
    char who[700];
    snprintf(who, sizeof who, "%s ('%s')", where, item);
    AX_TRY(check_ranges(spec, who));
    if (output)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: a convolution cannot be the output layer; "
                       "end with a dense layer (e.g. ...,10:softmax)", who);
    return AX_STATUS_OK;
}

static int conv_format(const ax_layer_spec *spec, char *text, size_t capacity)
{
    char stride[32] = "", padding[32] = "";
    if (spec->conv.stride != 1)
        snprintf(stride, sizeof stride, "/s%lld", (long long)spec->conv.stride);
    if (spec->conv.padding != 0)
        snprintf(padding, sizeof padding, "/p%lld", (long long)spec->conv.padding);
    return snprintf(text, capacity, "conv:%lldx%lldx%lld%s%s:%s", (long long)spec->conv.filters,
                    (long long)spec->conv.kernel_height, (long long)spec->conv.kernel_width,
                    stride, padding, ax_activation_name(spec->conv.activation));
}

static ax_status check_ranges(const ax_layer_spec *spec, const char *who)
{
    if (spec->conv.filters < 1 || spec->conv.filters > MOST_FILTERS)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: %lld filters is out of range (1 to %d)", who,
                       (long long)spec->conv.filters, MOST_FILTERS);
    if (spec->conv.kernel_height < 1 || spec->conv.kernel_height > MOST_KERNEL ||
        spec->conv.kernel_width < 1 || spec->conv.kernel_width > MOST_KERNEL)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s: kernel %lldx%lld is out of range (sides 1 to %d)", who,
                       (long long)spec->conv.kernel_height, (long long)spec->conv.kernel_width,
                       MOST_KERNEL);
    if (spec->conv.stride < 1 || spec->conv.stride > MOST_KERNEL)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: stride %lld is out of range (1 to %d)", who,
                       (long long)spec->conv.stride, MOST_KERNEL);
    const int64_t smaller = spec->conv.kernel_height < spec->conv.kernel_width
                                ? spec->conv.kernel_height
                                : spec->conv.kernel_width;
    if (spec->conv.padding < 0 || spec->conv.padding >= smaller)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s: padding %lld is out of range (0 to %lld, less than the kernel's "
                       "side: more would only add windows of zeros)",
                       who, (long long)spec->conv.padding, (long long)smaller - 1);
    if ((unsigned)spec->conv.activation > AX_ACT_SOFTMAX)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: unknown activation %d", who,
                       (int)spec->conv.activation);
    if (spec->conv.activation == AX_ACT_SOFTMAX)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s: softmax is only allowed on a dense output layer", who);
    return AX_STATUS_OK;
}

static ax_status conv_check(const ax_layer_spec *spec, int index, bool output)
{
    char who[32];
    snprintf(who, sizeof who, "layer %d", index + 1);
    AX_TRY(check_ranges(spec, who));
    if (output)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s: a convolution cannot be the output layer; end with a dense layer "
                       "(e.g. ...,10:softmax)",
                       who);
    return AX_STATUS_OK;
}

static ax_activation conv_activation(const ax_layer_spec *spec) { return spec->conv.activation; }

/* Positions along a side of `in` values: floor((in + 2 p - k) / s) + 1,
 * or 0 when the kernel does not fit. */
static int64_t positions(int64_t in, int64_t kernel, int64_t stride, int64_t padding)
{
    const int64_t room = in + 2 * padding - kernel;
    return room < 0 ? 0 : room / stride + 1;
}

static ax_layer_shape conv_output_shape(const ax_layer_spec *spec, ax_layer_shape in)
{
    return (ax_layer_shape){
        positions(in.height, spec->conv.kernel_height, spec->conv.stride, spec->conv.padding),
        positions(in.width, spec->conv.kernel_width, spec->conv.stride, spec->conv.padding),
        spec->conv.filters, true};
}

static ax_status conv_check_input(const ax_layer_spec *spec, int index, ax_layer_shape in)
{
    char item[64];
    conv_format(spec, item, sizeof item);
    AX_TRY(ax_window_require_image(index, item, in));
    const int64_t padding = spec->conv.padding;
    if (spec->conv.kernel_height > in.height + 2 * padding ||
        spec->conv.kernel_width > in.width + 2 * padding)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "layer %d (%s): its %lldx%lld kernel is larger than its input, "
                       "%lldx%lldx%lld (height x width x channels) padded by %lld",
                       index + 1, item, (long long)spec->conv.kernel_height,
                       (long long)spec->conv.kernel_width, (long long)in.height,
                       (long long)in.width, (long long)in.channels, (long long)padding);
    return AX_STATUS_OK;
}

static double conv_parameters(const ax_layer_spec *spec, ax_layer_shape in)
{
    const double filters = (double)spec->conv.filters;
    return filters * (double)in.channels * (double)spec->conv.kernel_height *
               (double)spec->conv.kernel_width + filters;
}

static void conv_lay_out(ax_layer *layer, ax_layer_shape in)
{
    const ax_layer_spec *spec = &layer->spec;
    layer->in_shape = in;
    layer->out_shape = conv_output_shape(spec, in);
    layer->in = ax_layer_shape_values(in);
    layer->out = ax_layer_shape_values(layer->out_shape);
    layer->activation = spec->conv.activation;
    layer->weight_offset = layer->offset;
    layer->weight_count =
        spec->conv.filters * in.channels * spec->conv.kernel_height * spec->conv.kernel_width;
    layer->bias_offset = layer->offset + layer->weight_count;
    layer->parameter_count = layer->weight_count + spec->conv.filters;
}

static ax_window_geometry geometry_of(const ax_layer *layer)
{
    return (ax_window_geometry){
        .height = layer->in_shape.height,
        .width = layer->in_shape.width,
        .channels = layer->in_shape.channels,
        .kernel_height = layer->spec.conv.kernel_height,
        .kernel_width = layer->spec.conv.kernel_width,
        .stride = layer->spec.conv.stride,
        .padding = layer->spec.conv.padding,
        .out_height = layer->out_shape.height,
        .out_width = layer->out_shape.width,
    };
}

/* Values of a window: a row of the columns and of W. */
static int64_t patch(const ax_layer *layer)
{
    return layer->in_shape.channels * layer->spec.conv.kernel_height *
           layer->spec.conv.kernel_width;
}

static int64_t places(const ax_layer *layer)
{
    return layer->out_shape.height * layer->out_shape.width;
}

/* Images whose columns go through the GEMMs together. */
static int64_t group_images(const ax_layer *layer)
{
    const int64_t per_image = places(layer) * patch(layer);
    return per_image >= GROUP_REALS ? 1 : GROUP_REALS / per_image;
}

/* The layer's scratch: [the weights in the columns' order (filters, kh kw,
 * channels), or their gradient; the columns of a group of images]. */
static int64_t conv_scratch_reals(const ax_layer *layer, int64_t rows)
{
    const int64_t images = rows < group_images(layer) ? rows : group_images(layer);
    return layer->spec.conv.filters * patch(layer) + images * places(layer) * patch(layer);
}

static const char *conv_missing_operations(const struct ax_backend_ops *ops)
{
    return ops->im2col && ops->col2im && ops->transpose ? NULL
                                                        : "im2col, col2im and transpose";
}

static int conv_tensors(const ax_layer *layer, ax_layer_tensor *tensors)
{
    const ax_layer_spec *spec = &layer->spec;
    tensors[0] = (ax_layer_tensor){"weight",
                                   4,
                                   {spec->conv.filters, layer->in_shape.channels,
                                    spec->conv.kernel_height, spec->conv.kernel_width},
                                   layer->weight_offset};
    tensors[1] = (ax_layer_tensor){"bias", 1, {spec->conv.filters, 1, 1, 1}, layer->bias_offset};
    return 2;
}

/* He and Xavier with torch's fans: in = channels kh kw, out = filters kh kw. */
static void conv_init(const ax_layer *layer, ax_init init, double init_range, ax_rng *rng,
                      double *values)
{
    const int64_t filters = layer->spec.conv.filters;
    const double area = (double)(layer->spec.conv.kernel_height * layer->spec.conv.kernel_width);
    ax_layer_init_weights(layer, init, init_range, (double)layer->in_shape.channels * area,
                          (double)filters * area, filters, rng, values);
}

/* TMVA's count of a dense layer with rows * positions rows, `patch` inputs
 * and `filters` outputs (im2col and col2im move data: no FLOPs). */
static double conv_flops(const ax_layer *layer, int64_t rows, ax_layer_work work)
{
    const double p = (double)rows * (double)places(layer), k = (double)patch(layer),
                 f = (double)layer->spec.conv.filters;
    switch (work) {
    case AX_LAYER_WORK_TRAIN:
        return 6.0 * p * f * k + 4.0 * f * p - f * (k + 1.0) - p * k;
    case AX_LAYER_WORK_PRODUCTS:
        return 6.0 * p * f * k;
    case AX_LAYER_WORK_FORWARD_PRODUCT:
        return p * f * (2.0 * k - 1.0);
    case AX_LAYER_WORK_WEIGHT_GRADIENT:
        return f * k * (2.0 * p - 1.0);
    }
    return 0.0;
}

static void *at(const ax_net *net, const void *base, int64_t reals)
{
    return (char *)base + (size_t)reals * net->backend->real_size;
}

/* The layer's two parts of net->workspace.scratch. */
static void *scratch_weights(const ax_net *net, const ax_layer *layer)
{
    return at(net, net->workspace.scratch, layer->scratch_offset);
}

static void *scratch_columns(const ax_net *net, const ax_layer *layer)
{
    return at(net, net->workspace.scratch,
              layer->scratch_offset + layer->spec.conv.filters * patch(layer));
}

/* The weights (filters, channels, kh kw) of the parameters in the columns'
 * order (filters, kh kw, channels), into the scratch. */
static void order_weights(ax_net *net, int index)
{
    const ax_layer *layer = &net->layers[index];
    const int64_t area = layer->spec.conv.kernel_height * layer->spec.conv.kernel_width;
    OPS->transpose(net->backend, ax_layer_weights(net, net->parameters, index),
                   scratch_weights(net, layer), layer->spec.conv.filters,
                   layer->in_shape.channels, area);
}

/* z (rows, places, filters) = columns(x) W^T, a group of images at a time;
 * the columns of a batch that fits one group stay for the weight gradient. */
static void forward_products(ax_net *net, int index, const void *x, void *z, int64_t rows)
{
    ax_layer *layer = &net->layers[index];
    const ax_window_geometry geometry = geometry_of(layer);
    const int64_t group = group_images(layer), k = patch(layer), f = layer->spec.conv.filters;
    void *columns = scratch_columns(net, layer), *weights = scratch_weights(net, layer);
    if (OPS->conv_forward &&
        OPS->conv_forward(net->backend, &geometry, f, x,
                          ax_layer_weights(net, net->parameters, index), z, rows)) {
        layer->columns_input = NULL; /* no columns made: the weight gradient gathers its own */
        return;
    }
    order_weights(net, index);
    for (int64_t first = 0; first < rows; first += group) {
        const int64_t images = rows - first < group ? rows - first : group;
        OPS->im2col(net->backend, &geometry, at(net, x, first * layer->in), columns, images);
        OPS->gemm(net->backend, false, true, images * places(layer), f, k, 1.0, columns, k,
                  weights, k, 0.0, at(net, z, first * layer->out), f);
    }
    layer->columns_input = rows <= group ? x : NULL;
    layer->columns_rows = rows;
}

/* The forward product's FLOPs and the bias and activation's, for a pass
 * that runs them together. */
static double forward_bias_activation_flops(const ax_layer *layer, int64_t rows)
{
    return conv_flops(layer, rows, AX_LAYER_WORK_FORWARD_PRODUCT) +
           2.0 * (double)(rows * places(layer)) * (double)layer->spec.conv.filters;
}

/* The forward pass, bias and activation in the backend's one pass where it
 * takes the layer (backend.h: conv_forward_bias_activation); profiled as
 * the forward product with the bias and activation's FLOPs, and only when
 * taken (a declined call would count as a forward pass of no time). */
static bool fused_forward(ax_net *net, int index, const void *x, void *z, int64_t rows)
{
    ax_layer *layer = &net->layers[index];
    if (!OPS->conv_forward_bias_activation)
        return false;
    const ax_window_geometry geometry = geometry_of(layer);
    const double flops = forward_bias_activation_flops(layer, rows);
    bool taken = false;
    AX_PROFILED_WHEN(net, AX_PROFILE_CONV_FORWARD, index, flops, taken,
                     taken = OPS->conv_forward_bias_activation(
                         net->backend, &geometry, layer->spec.conv.filters, x,
                         ax_layer_weights(net, net->parameters, index),
                         ax_layer_bias(net, net->parameters, index), layer->activation, z, rows));
    if (taken)
        layer->columns_input = NULL; /* no columns made: the weight gradient gathers its own */
    return taken;
}

static void conv_forward(ax_net *net, int index, const void *x, void *z, int64_t rows)
{
    const ax_layer *layer = &net->layers[index];
    if (index == 0 && z == net->workspace.outputs[0])
        net->workspace.pool_codes_valid = false; /* made for another output */
    if (fused_forward(net, index, x, z, rows))
        return;
    AX_PROFILED(net, AX_PROFILE_CONV_FORWARD, index,
                conv_flops(layer, rows, AX_LAYER_WORK_FORWARD_PRODUCT),
                forward_products(net, index, x, z, rows));
    const int64_t positions_all = rows * places(layer), f = layer->spec.conv.filters;
    AX_PROFILED(net, AX_PROFILE_BIAS_ACTIVATION, index, 2.0 * (double)positions_all * (double)f,
                OPS->bias_activation(net->backend, layer->activation, z,
                                     ax_layer_bias(net, net->parameters, index), positions_all, f));
}

static void conv_backward_activation(ax_net *net, int index, void *delta, double kept_scale,
                                     bool pre_activation, int64_t rows)
{
    const ax_layer *layer = &net->layers[index];
    const int64_t positions_all = rows * places(layer), f = layer->spec.conv.filters;
    const double nb = (double)positions_all, nl = (double)f;
    void *bias_gradient = ax_layer_bias(net, net->gradients, index);
    if (pre_activation)
        AX_PROFILED(net, AX_PROFILE_BIAS_GRADIENT, index, nl * (nb - 1.0),
                    OPS->column_sums(net->backend, delta, bias_gradient, positions_all, f));
    else
        AX_PROFILED(net, AX_PROFILE_DERIVATIVE, index, 2.0 * nb * nl + nl * (nb - 1.0),
                    OPS->activation_backward(net->backend, layer->activation, delta,
                                             net->workspace.outputs[index], kept_scale,
                                             bias_gradient, positions_all, f));
}

/* dW (filters, channels, kh kw) = the sum over groups of delta^T columns(x),
 * made in the columns' order in the scratch and transposed into place;
 * or the backend's whole weight gradient where it has one and takes it. */
static void weight_products(ax_net *net, int index, const void *delta, const void *x,
                            int64_t rows)
{
    const ax_layer *layer = &net->layers[index];
    const ax_window_geometry geometry = geometry_of(layer);
    const int64_t group = group_images(layer), k = patch(layer), f = layer->spec.conv.filters;
    void *columns = scratch_columns(net, layer), *ordered = scratch_weights(net, layer);
    const bool kept = layer->columns_input == x && layer->columns_rows == rows && rows <= group;
    if (OPS->conv_backward_weights &&
        OPS->conv_backward_weights(net->backend, &geometry, f, delta, x, kept ? columns : NULL,
                                   ax_layer_weights(net, net->gradients, index), rows))
        return;
    for (int64_t first = 0; first < rows; first += group) {
        const int64_t images = rows - first < group ? rows - first : group;
        if (!kept)
            OPS->im2col(net->backend, &geometry, at(net, x, first * layer->in), columns, images);
        OPS->gemm(net->backend, true, false, f, k, images * places(layer), 1.0,
                  at(net, delta, first * layer->out), f, columns, k, first ? 1.0 : 0.0, ordered,
                  k);
    }
    const int64_t area = layer->spec.conv.kernel_height * layer->spec.conv.kernel_width;
    OPS->transpose(net->backend, ordered, ax_layer_weights(net, net->gradients, index), f, area,
                   layer->in_shape.channels);
}

/* The weight gradient += l2 W, where l2 > 0. */
static void add_l2(ax_net *net, int index, double l2)
{
    const ax_layer *layer = &net->layers[index];
    if (l2 > 0.0)
        AX_PROFILED(net, AX_PROFILE_L2, index, 2.0 * (double)layer->weight_count,
                    OPS->axpy(net->backend, layer->weight_count, l2,
                              ax_layer_weights(net, net->parameters, index),
                              ax_layer_weights(net, net->gradients, index)));
}

static void conv_backward_weights(ax_net *net, int index, const void *delta, const void *x,
                                  double l2, int64_t rows)
{
    const ax_layer *layer = &net->layers[index];
    AX_PROFILED(net, AX_PROFILE_CONV_WEIGHT_GRADIENT, index,
                conv_flops(layer, rows, AX_LAYER_WORK_WEIGHT_GRADIENT),
                weight_products(net, index, delta, x, rows));
    add_l2(net, index, l2);
}

/* previous (rows, in) = col2im(delta W), a group of images at a time (the
 * columns kept from the forward pass are overwritten). */
static void input_products(ax_net *net, int index, const void *delta, void *previous,
                           int64_t rows)
{
    ax_layer *layer = &net->layers[index];
    const ax_window_geometry geometry = geometry_of(layer);
    const int64_t group = group_images(layer), k = patch(layer), f = layer->spec.conv.filters;
    void *columns = scratch_columns(net, layer), *weights = scratch_weights(net, layer);
    layer->columns_input = NULL;
    if (OPS->conv_backward_input &&
        OPS->conv_backward_input(net->backend, &geometry, f, delta,
                                 ax_layer_weights(net, net->parameters, index), previous, rows))
        return;
    order_weights(net, index);
    for (int64_t first = 0; first < rows; first += group) {
        const int64_t images = rows - first < group ? rows - first : group;
        OPS->gemm(net->backend, false, false, images * places(layer), k, f, 1.0,
                  at(net, delta, first * layer->out), f, weights, k, 0.0, columns, k);
        OPS->col2im(net->backend, &geometry, columns, at(net, previous, first * layer->in),
                    images);
    }
}

static void conv_backward_input(ax_net *net, int index, const void *delta, void *previous,
                                int64_t rows)
{
    const ax_layer *layer = &net->layers[index];
    const double p = (double)rows * (double)places(layer), k = (double)patch(layer),
                 f = (double)layer->spec.conv.filters;
    AX_PROFILED(net, AX_PROFILE_CONV_INPUT_GRADIENT, index, p * k * (2.0 * f - 1.0),
                input_products(net, index, delta, previous, rows));
}

/* The weight and bias gradients of a pre-activation delta: in the
 * backend's one pass where it takes the layer (profiled as the weight
 * gradient with the bias gradient's FLOPs, only when taken), else the bias
 * gradient's pass and the weight gradient's. */
static void conv_backward_weights_bias(ax_net *net, int index, const void *delta, const void *x,
                                       double l2, int64_t rows)
{
    ax_layer *layer = &net->layers[index];
    const ax_window_geometry geometry = geometry_of(layer);
    const int64_t f = layer->spec.conv.filters, positions_all = rows * places(layer);
    const double flops = conv_flops(layer, rows, AX_LAYER_WORK_WEIGHT_GRADIENT) +
                         (double)f * (double)(positions_all - 1);
    const bool kept = layer->columns_input == x && layer->columns_rows == rows &&
                      rows <= group_images(layer);
    bool taken = false;
    if (OPS->conv_backward_weights_bias)
        AX_PROFILED_WHEN(net, AX_PROFILE_CONV_WEIGHT_GRADIENT, index, flops, taken,
                         taken = OPS->conv_backward_weights_bias(
                             net->backend, &geometry, f, delta, x,
                             kept ? scratch_columns(net, layer) : NULL,
                             ax_layer_weights(net, net->gradients, index),
                             ax_layer_bias(net, net->gradients, index), rows));
    if (!taken) {
        conv_backward_activation(net, index, (void *)delta, 1.0, true, rows);
        conv_backward_weights(net, index, delta, x, l2, rows);
        return;
    }
    add_l2(net, index, l2);
}

/* A first layer's weight and bias gradients straight from the delta of the
 * max pooling over its ReLU output (layer pool_index) in the backend's one
 * pass, where it takes them: the pooling's input gradient is made there a
 * slice at a time, never whole (profiled as this layer's weight gradient,
 * which then includes that pooling pass). False, with nothing done, where
 * the backend does not take them. */
static bool conv_backward_weights_bias_pooled(ax_net *net, int index, int pool_index,
                                              const void *pool_delta, const void *x, double l2,
                                              int64_t rows)
{
    if (!OPS->conv_backward_weights_bias_pooled && !OPS->conv_backward_weights_bias_coded)
        return false;
    ax_layer *layer = &net->layers[index];
    const ax_window_geometry geometry = geometry_of(layer);
    const ax_window_geometry pool = ax_pool_layer_geometry(&net->layers[pool_index]);
    const int64_t f = layer->spec.conv.filters, positions_all = rows * places(layer);
    const double flops = conv_flops(layer, rows, AX_LAYER_WORK_WEIGHT_GRADIENT) +
                         (double)f * (double)(positions_all - 1);
    bool taken = false;
    /* the codes of this batch's forward pass where it made them */
    const bool coded = index == 0 && net->workspace.pool_codes_valid &&
                       OPS->conv_backward_weights_bias_coded;
    if (coded)
        AX_PROFILED_WHEN(net, AX_PROFILE_CONV_WEIGHT_GRADIENT, index, flops, taken,
                         taken = OPS->conv_backward_weights_bias_coded(
                             net->backend, &geometry, f, &pool, net->workspace.pool_codes,
                             pool_delta, x, ax_layer_weights(net, net->gradients, index),
                             ax_layer_bias(net, net->gradients, index), rows));
    if (!taken && OPS->conv_backward_weights_bias_pooled)
        AX_PROFILED_WHEN(net, AX_PROFILE_CONV_WEIGHT_GRADIENT, index, flops, taken,
                         taken = OPS->conv_backward_weights_bias_pooled(
                             net->backend, &geometry, f, &pool,
                             ax_window_layer_input(net, pool_index), pool_delta, x,
                             ax_layer_weights(net, net->gradients, index),
                             ax_layer_bias(net, net->gradients, index), rows));
    if (taken)
        add_l2(net, index, l2);
    return taken;
}

/* The forward passes of a first layer with ReLU and the 2x2 max pooling
 * above it (layer pool_index) in the backend's one pass, where it takes
 * them: the pooling's output and its window codes from the sums in
 * registers, sparing the pooling a pass over this layer's output and the
 * backward pass a read of it (profiled as this layer's forward pass, which
 * then includes the pooling's). False, with nothing done, where the
 * backend does not take them or the codes find no memory. */
static bool conv_forward_max_pool(ax_net *net, int index, int pool_index, const void *x,
                                  int64_t rows)
{
    ax_layer *layer = &net->layers[index];
    const ax_layer *pool_layer = &net->layers[pool_index];
    if (!OPS->conv_forward_relu_max_pool || layer->activation != AX_ACT_RELU ||
        pool_layer->spec.kind != AX_LAYER_MAX_POOL)
        return false;
    ax_net_workspace *work = &net->workspace;
    if (rows > work->pool_codes_rows) {
        void *grown = NULL;
        if (ax_backend_alloc(net->backend, (size_t)rows * (size_t)pool_layer->out,
                             "the max pooling's window codes", &grown) != AX_STATUS_OK) {
            ax_error_clear(); /* the two passes run instead */
            return false;
        }
        OPS->free(net->backend, work->pool_codes);
        work->pool_codes = grown;
        work->pool_codes_rows = rows;
    }
    const ax_window_geometry geometry = geometry_of(layer);
    const ax_window_geometry pool = ax_pool_layer_geometry(pool_layer);
    const double flops = forward_bias_activation_flops(layer, rows);
    bool taken = false;
    AX_PROFILED_WHEN(net, AX_PROFILE_CONV_FORWARD, index, flops, taken,
                     taken = OPS->conv_forward_relu_max_pool(
                         net->backend, &geometry, layer->spec.conv.filters, &pool, x,
                         ax_layer_weights(net, net->parameters, index),
                         ax_layer_bias(net, net->parameters, index), work->outputs[index],
                         work->outputs[pool_index], work->pool_codes, rows));
    if (taken) {
        layer->columns_input = NULL; /* no columns made: the weight gradient gathers its own */
        work->pool_codes_valid = index == 0;
    }
    return taken;
}

const ax_layer_ops ax_layer_conv_ops = {
    .kind = AX_LAYER_CONV,
    .name = "conv",
    .claims = conv_claims,
    .parse = conv_parse,
    .format = conv_format,
    .check = conv_check,
    .activation = conv_activation,
    .check_input = conv_check_input,
    .output_shape = conv_output_shape,
    .parameters = conv_parameters,
    .lay_out = conv_lay_out,
    .scratch_reals = conv_scratch_reals,
    .missing_operations = conv_missing_operations,
    .tensors = conv_tensors,
    .init = conv_init,
    .flops = conv_flops,
    .forward = conv_forward,
    .backward_activation = conv_backward_activation,
    .backward_weights = conv_backward_weights,
    .backward_input = conv_backward_input,
    .backward_weights_bias = conv_backward_weights_bias,
    .backward_weights_bias_pooled = conv_backward_weights_bias_pooled,
    .forward_max_pool = conv_forward_max_pool,
};
