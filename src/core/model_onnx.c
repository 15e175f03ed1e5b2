/* model_onnx.c: ax_net_export_onnx, a network as an ONNX model. The
 * network's layers are described to the writer in io/onnx.h (kind,
 * settings, input shape, float32 weights), which builds the graph and the
 * file; this file only reads the network. */
#include <stdlib.h>

#include "base/error.h"
#include "core/net.h"
#include "io/onnx.h"

ax_status ax_net_export_onnx(const ax_net *net, const char *path)
{
    if (!net || !path)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "ax_net_export_onnx: %s is NULL",
                       !net ? "the network" : "the path");
    double *values = malloc((size_t)(net->parameter_count > 0 ? net->parameter_count : 1) *
                            sizeof *values);
    float *weights = malloc((size_t)(net->parameter_count > 0 ? net->parameter_count : 1) *
                            sizeof *weights);
    ax_onnx_layer *layers = calloc((size_t)net->layer_count, sizeof *layers);
    if (!values || !weights || !layers) {
        free(values);
        free(weights);
        free(layers);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory exporting %s", path);
    }
    ax_net_parameters_get(net, values);
    /* A failed device's weights are void: nothing is written (as ax_net_save). */
    ax_status status = net->backend->ops->status(net->backend);
    if (status != AX_STATUS_OK)
        goto done;
    /* ONNX float tensors: a float64 network's weights are rounded to float32. */
    for (int64_t i = 0; i < net->parameter_count; i++)
        weights[i] = (float)values[i];
    for (int l = 0; l < net->layer_count; l++) {
        const ax_layer *layer = &net->layers[l];
        ax_onnx_layer *described = &layers[l];
        described->spec = layer->spec;
        described->activation = layer->activation;
        described->in_shape[0] = layer->in_shape.height;
        described->in_shape[1] = layer->in_shape.width;
        described->in_shape[2] = layer->in_shape.channels;
        described->in_image = layer->in_shape.image;
        if (layer->parameter_count > 0) { /* offsets: into the whole arena */
            described->weight = weights + layer->weight_offset;
            described->bias = weights + layer->bias_offset;
        }
    }
    const ax_layer_shape input = ax_layout_input_shape(&net->config);
    char layout[AX_MAX_LAYERS * 32];
    ax_layout_text(&net->config, true, layout, sizeof layout);
    const ax_onnx_model model = {
        .input_shape = {input.height, input.width, input.channels},
        .image = input.image,
        .output_width = net->layers[net->layer_count - 1].out,
        .layers = layers,
        .layer_count = net->layer_count,
        .description = layout,
    };
    status = ax_onnx_write(path, &model);
done:
    free(values);
    free(weights);
    free(layers);
    return status;
}
