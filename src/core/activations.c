/* activations.c: the activated outputs of one layer of a trained network
 * over a whole data set (ax_net_activations), for looking inside a network
 * (axon's activation statistics run on them). Inference mode: no dropout;
 * the rows
 * go through the forward pass in chunks of the workspace size and the
 * chosen layer's outputs are downloaded chunk by chunk. */
#include "base/error.h"
#include "core/net.h"
#include "data/dataset.h"

ax_status ax_net_activations(ax_net *net, const ax_dataset *data, int layer, float *out)
{
    if (!net || !data || !out)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "activations: the %s is missing",
                       !net ? "network" : !data ? "data set" : "output array");
    if (ax_dataset_is_streamed(data) || ax_dataset_is_sparse(data))
        return ax_fail(AX_STATUS_UNSUPPORTED, "activations: %s is %s: its rows are not in "
                       "memory as dense rows (%s)", ax_dataset_source(data),
                       ax_dataset_is_sparse(data) ? "sparse" : "streamed",
                       ax_dataset_is_sparse(data) ? "give them dense" : "open it whole");
    if (layer < 0 || layer >= net->layer_count)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "layer %d does not exist: this network has %d layer%s, numbered 0 to %d "
                       "(0 = the first hidden layer, %d = the output layer)",
                       layer, net->layer_count, net->layer_count == 1 ? "" : "s",
                       net->layer_count - 1, net->layer_count - 1);
    /* Only the features go through the net, so labels need not fit the output. */
    if (data->features != net->config.input_width)
        return ax_fail(AX_STATUS_BAD_DATA, "%s has %lld features but the network takes %lld inputs",
                       data->source, (long long)data->features,
                       (long long)net->config.input_width);
    const int64_t rows = data->rows;
    if (rows < 1)
        return ax_fail(AX_STATUS_BAD_DATA, "%s has no rows", data->source);
    const int64_t width = net->layers[layer].out;
    const int64_t chunk = ax_net_inference_rows(net, rows);
    AX_TRY(ax_net_reserve(net, chunk));
    for (int64_t first = 0; first < rows; first += chunk) {
        int64_t count = rows - first < chunk ? rows - first : chunk;
        ax_batch batch = {.data = data, .order = NULL, .first = first, .count = count};
        ax_net_load_batch(net, &batch, false);
        (void)ax_net_forward(net, count, NULL); /* no dropout: cannot fail */
        net->backend->ops->download_f32(net->backend, out + first * width,
                                        net->workspace.outputs[layer], count * width);
    }
    return net->backend->ops->status(net->backend);
}
