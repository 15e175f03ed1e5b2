/* layer_dense.c: the dense (fully connected) layer, z = activation(x W^T + b)
 * with x (rows, in), W (out, in), b (out), its block of the arenas laid out
 * as [W (out, in) row-major, b (out)] (PyTorch's nn.Linear). Forward: one
 * GEMM, then one fused pass adding the bias and applying the activation;
 * backward: the activation derivative and the bias gradient (column sums)
 * in one pass, then two GEMMs. FLOPs by TMVA's FLOP count
 * (ax_net_train_flops). Its pre-activations are linear in W,
 * which the line searches use
 * (propagate_along.c). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/layer.h"
#include "core/net.h"

#define OPS (net->backend->ops)

enum { MAX_UNITS = 1 << 24 };

ax_layer_spec ax_layer_dense(int64_t units, ax_activation activation)
{
    ax_layer_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.kind = AX_LAYER_DENSE;
    spec.dense.units = units;
    spec.dense.activation = activation;
    return spec;
}

static bool dense_claims(const char *item) { return isdigit((unsigned char)item[0]) != 0; }

/* "units[:activation]"; a bare width is relu, or identity for the output. */
static ax_status dense_parse(const char *item, bool output, const char *where, ax_layer_spec *spec)
{
    char text[64];
    snprintf(text, sizeof text, "%s", item);
    char *colon = strchr(text, ':');
    if (colon)
        *colon = '\0';
    char *end;
    errno = 0;
    long long units = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno || units < 1 || units > MAX_UNITS)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s has width '%s'; expected a whole number from 1 to %d", where, text,
                       MAX_UNITS);
    *spec = ax_layer_dense(units, colon ? AX_ACT_RELU : output ? AX_ACT_IDENTITY : AX_ACT_RELU);
    if (colon) {
        ax_status status = ax_activation_parse(colon + 1, &spec->dense.activation);
        if (status != AX_STATUS_OK)
            return ax_fail_context(status, "%s", where);
    }
    return AX_STATUS_OK;
}

static int dense_format(const ax_layer_spec *spec, char *text, size_t capacity)
{
    return snprintf(text, capacity, "%lld:%s", (long long)spec->dense.units,
                    ax_activation_name(spec->dense.activation));
}

static ax_status dense_check(const ax_layer_spec *spec, int index, bool output)
{
    if (spec->dense.units < 1 || spec->dense.units > MAX_UNITS)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "layer %d: width %lld is out of range (1 to %d)",
                       index + 1, (long long)spec->dense.units, MAX_UNITS);
    if ((unsigned)spec->dense.activation > AX_ACT_SOFTMAX)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "layer %d: unknown activation %d", index + 1,
                       (int)spec->dense.activation);
    if (spec->dense.activation == AX_ACT_SOFTMAX && !output)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "layer %d: softmax is only allowed on the output layer", index + 1);
    return AX_STATUS_OK;
}

static ax_activation dense_activation(const ax_layer_spec *spec) { return spec->dense.activation; }

static ax_layer_shape dense_output_shape(const ax_layer_spec *spec, ax_layer_shape in)
{
    (void)in;
    return (ax_layer_shape){1, 1, spec->dense.units, false};
}

static double dense_parameters(const ax_layer_spec *spec, ax_layer_shape in)
{
    const double units = (double)spec->dense.units;
    const double values = (double)in.height * (double)in.width * (double)in.channels;
    return values * units + units;
}

/* After a convolution or pooling the input is the feature map flattened in
 * (row, column, channel) order. */
static void dense_lay_out(ax_layer *layer, ax_layer_shape in)
{
    layer->in_shape = in;
    layer->out_shape = dense_output_shape(&layer->spec, in);
    layer->in = ax_layer_shape_values(in);
    layer->out = layer->spec.dense.units;
    layer->activation = layer->spec.dense.activation;
    layer->weight_offset = layer->offset;
    layer->weight_count = layer->in * layer->out;
    layer->bias_offset = layer->offset + layer->weight_count;
    layer->parameter_count = layer->weight_count + layer->out;
}

static int dense_tensors(const ax_layer *layer, ax_layer_tensor *tensors)
{
    tensors[0] = (ax_layer_tensor){"weight", 2, {layer->out, layer->in, 1, 1}, layer->weight_offset};
    tensors[1] = (ax_layer_tensor){"bias", 1, {layer->out, 1, 1, 1}, layer->bias_offset};
    return 2;
}

static void dense_init(const ax_layer *layer, ax_init init, double init_range, ax_rng *rng,
                       double *values)
{
    ax_layer_init_weights(layer, init, init_range, (double)layer->in, (double)layer->out,
                          layer->out, rng, values);
}

static double dense_flops(const ax_layer *layer, int64_t rows, ax_layer_work work)
{
    const double nb = (double)rows, nl = (double)layer->out, nprev = (double)layer->in;
    switch (work) {
    case AX_LAYER_WORK_TRAIN:
        /* TMVA's count: 6 nb nl nl-1 + 4 nl nb - nl (nl-1 + 1) - nb nl-1. */
        return 6.0 * nb * nl * nprev + 4.0 * nl * nb - nl * (nprev + 1.0) - nb * nprev;
    case AX_LAYER_WORK_PRODUCTS:
        return 6.0 * nb * nl * nprev;
    case AX_LAYER_WORK_FORWARD_PRODUCT:
        return nb * nl * (2.0 * nprev - 1.0);
    case AX_LAYER_WORK_WEIGHT_GRADIENT:
        return nl * nprev * (2.0 * nb - 1.0);
    }
    return 0.0;
}

/* out (rows, out) = x (rows, in) M^T for the block M (out, in) of an arena. */
static void dense_linear_product(ax_net *net, int index, const void *x, const void *arena,
                                 void *out, int64_t rows)
{
    const ax_layer *layer = &net->layers[index];
    AX_PROFILED(net, AX_PROFILE_FORWARD_GEMM, index,
                dense_flops(layer, rows, AX_LAYER_WORK_FORWARD_PRODUCT),
                OPS->gemm(net->backend, false, true, rows, layer->out, layer->in, 1.0, x,
                          layer->in, ax_layer_weights(net, (void *)arena, index), layer->in, 0.0,
                          out, layer->out));
}

static void dense_bias_activation(ax_net *net, int index, void *z, int64_t rows)
{
    const ax_layer *layer = &net->layers[index];
    OPS->bias_activation(net->backend, layer->activation, z,
                         ax_layer_bias(net, net->parameters, index), rows, layer->out);
}

static void dense_forward(ax_net *net, int index, const void *x, void *z, int64_t rows)
{
    /* z (rows, out) = x (rows, in) W^T, W (out, in) */
    dense_linear_product(net, index, x, net->parameters, z, rows);
    const double nb = (double)rows, nl = (double)net->layers[index].out;
    AX_PROFILED(net, AX_PROFILE_BIAS_ACTIVATION, index, 2.0 * nb * nl,
                dense_bias_activation(net, index, z, rows));
}

static void dense_backward_activation(ax_net *net, int index, void *delta, double kept_scale,
                                      bool pre_activation, int64_t rows)
{
    const ax_layer *layer = &net->layers[index];
    const double nb = (double)rows, nl = (double)layer->out;
    void *bias_gradient = ax_layer_bias(net, net->gradients, index);
    if (pre_activation)
        AX_PROFILED(net, AX_PROFILE_BIAS_GRADIENT, index, nl * (nb - 1.0),
                    OPS->column_sums(net->backend, delta, bias_gradient, rows, layer->out));
    else /* derivative, Hadamard product and column sums in one pass */
        AX_PROFILED(net, AX_PROFILE_DERIVATIVE, index, 2.0 * nb * nl + nl * (nb - 1.0),
                    OPS->activation_backward(net->backend, layer->activation, delta,
                                             net->workspace.outputs[index], kept_scale,
                                             bias_gradient, rows, layer->out));
}

static void dense_backward_weights(ax_net *net, int index, const void *delta, const void *x,
                                   double l2, int64_t rows)
{
    const ax_layer *layer = &net->layers[index];
    const double nl = (double)layer->out, nprev = (double)layer->in;
    void *weight_gradient = ax_layer_weights(net, net->gradients, index);
    /* dW (out, in) = delta^T (out, rows) x (rows, in) */
    AX_PROFILED(net, AX_PROFILE_WEIGHT_GRADIENT_GEMM, index,
                dense_flops(layer, rows, AX_LAYER_WORK_WEIGHT_GRADIENT),
                OPS->gemm(net->backend, true, false, layer->out, layer->in, rows, 1.0, delta,
                          layer->out, x, layer->in, 0.0, weight_gradient, layer->in));
    if (l2 > 0.0)
        AX_PROFILED(net, AX_PROFILE_L2, index, 2.0 * nl * nprev,
                    OPS->axpy(net->backend, layer->weight_count, l2,
                              ax_layer_weights(net, net->parameters, index), weight_gradient));
}

static void dense_backward_input(ax_net *net, int index, const void *delta, void *previous,
                                 int64_t rows)
{
    const ax_layer *layer = &net->layers[index];
    const double nb = (double)rows, nl = (double)layer->out, nprev = (double)layer->in;
    /* previous (rows, in) = delta (rows, out) W (out, in) */
    AX_PROFILED(net, AX_PROFILE_INPUT_GRADIENT_GEMM, index, nb * nprev * (2.0 * nl - 1.0),
                OPS->gemm(net->backend, false, false, rows, layer->in, layer->out, 1.0, delta,
                          layer->out, ax_layer_weights(net, net->parameters, index), layer->in,
                          0.0, previous, layer->in));
}

const ax_layer_ops ax_layer_dense_ops = {
    .kind = AX_LAYER_DENSE,
    .name = "dense",
    .claims = dense_claims,
    .parse = dense_parse,
    .format = dense_format,
    .check = dense_check,
    .activation = dense_activation,
    .output_shape = dense_output_shape,
    .parameters = dense_parameters,
    .lay_out = dense_lay_out,
    .tensors = dense_tensors,
    .init = dense_init,
    .flops = dense_flops,
    .forward = dense_forward,
    .backward_activation = dense_backward_activation,
    .backward_weights = dense_backward_weights,
    .backward_input = dense_backward_input,
    .linear_product = dense_linear_product,
    .bias_activation = dense_bias_activation,
};
