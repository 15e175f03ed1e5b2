/* net_layers.c: what a program may ask about a network's layers (their kind,
 * activation and output shape) through axon.h, so that the command line and
 * the bindings never read ax_layer_spec's union themselves: reading
 * .dense.activation of a convolution or pooling layer gave "unknown" and
 * "tanh" (issue 25). */
#include "base/error.h"
#include "core/layer.h"
#include "core/net.h"

static ax_status find_layer(const ax_net *net, int layer, const ax_layer **out)
{
    if (layer < 0 || layer >= net->layer_count)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "layer %d does not exist: the network has %d layer%s, numbered 0 to %d",
                       layer, net->layer_count, net->layer_count == 1 ? "" : "s",
                       net->layer_count - 1);
    *out = &net->layers[layer];
    return AX_STATUS_OK;
}

ax_status ax_net_layer_kind(const ax_net *net, int layer, ax_layer_kind *kind)
{
    const ax_layer *found = NULL;
    AX_TRY(find_layer(net, layer, &found));
    *kind = found->spec.kind;
    return AX_STATUS_OK;
}

ax_status ax_net_layer_activation(const ax_net *net, int layer, ax_activation *activation)
{
    const ax_layer *found = NULL;
    AX_TRY(find_layer(net, layer, &found));
    *activation = found->activation; /* each kind's own answer (pooling: identity) */
    return AX_STATUS_OK;
}

ax_status ax_net_layer_output_shape(const ax_net *net, int layer, int64_t shape[3])
{
    const ax_layer *found = NULL;
    AX_TRY(find_layer(net, layer, &found));
    shape[0] = found->out_shape.height;
    shape[1] = found->out_shape.width;
    shape[2] = found->out_shape.channels;
    return AX_STATUS_OK;
}

const char *ax_layer_kind_name(ax_layer_kind kind)
{
    const ax_layer_ops *ops = ax_layer_ops_of(kind);
    return ops ? ops->name : "unknown";
}
