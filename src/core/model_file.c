/* model_file.c: saving and loading networks as safetensors. Tensors are
 * named as PyTorch's nn.Sequential of nn.Linear would name them
 * ("layers.0.weight" (out, in), "layers.0.bias" (out)); the architecture
 * travels in the metadata, so a model file is self-describing, with the
 * version of that description ("format_version"; files written before it
 * existed are version 1, the dense layouts every version reads). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/net.h"
#include "io/safetensors.h"

enum { MOST_TENSORS = AX_LAYER_MAX_TENSORS * AX_MAX_LAYERS };

ax_status ax_net_save(const ax_net *net, const char *path)
{
    ax_safetensors_tensor tensors[MOST_TENSORS];
    char names[MOST_TENSORS][32];
    int count = 0;
    double *values = malloc((size_t)net->parameter_count * sizeof(double));
    float *values32 = NULL;
    if (!values)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory saving %s", path);
    ax_net_parameters_get(net, values);
    /* A failed device's weights are void: nothing is written. */
    ax_status device = net->backend->ops->status(net->backend);
    if (device != AX_STATUS_OK) {
        free(values);
        return device;
    }
    bool single = net->config.precision != AX_PRECISION_F64; /* bf16 keeps float32 weights */
    if (single) {
        values32 = malloc((size_t)net->parameter_count * sizeof(float));
        if (!values32) {
            free(values);
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory saving %s", path);
        }
        for (int64_t i = 0; i < net->parameter_count; i++)
            values32[i] = (float)values[i];
    }
    for (int l = 0; l < net->layer_count; l++) {
        const ax_layer *layer = &net->layers[l];
        ax_layer_tensor parts[AX_LAYER_MAX_TENSORS];
        const int part_count = layer->ops->tensors(layer, parts);
        for (int part = 0; part < part_count; part++, count++) {
            ax_safetensors_tensor *tensor = &tensors[count];
            const int64_t offset = parts[part].offset;
            snprintf(names[count], sizeof names[0], "layers.%d.%s", l, parts[part].name);
            tensor->name = names[count];
            tensor->dtype = single ? AX_SAFETENSORS_F32 : AX_SAFETENSORS_F64;
            tensor->rank = parts[part].rank;
            for (int d = 0; d < parts[part].rank; d++)
                tensor->shape[d] = parts[part].shape[d];
            tensor->data = single ? (const void *)(values32 + offset) : (const void *)(values + offset);
        }
    }
    char input_width[32], layout[AX_MAX_LAYERS * 32];
    snprintf(input_width, sizeof input_width, "%lld", (long long)net->config.input_width);
    ax_layout_text(&net->config, false, layout, sizeof layout);
    /* Version 2 brought images (input_shape, convolution and pooling); a
     * network without them is written as version 1, which older axons read. */
    char version[16], input_shape[80];
    const bool image = ax_layout_input_shape_text(&net->config, input_shape, sizeof input_shape);
    snprintf(version, sizeof version, "%d", image ? AX_MODEL_FORMAT_VERSION : 1);
    const char *keys[] = {"format", "format_version", "producer", "input_width",
                          "layers", "loss",           "input_shape"};
    const char *texts[] = {"pt",   version, "axon " AX_VERSION, input_width, layout,
                           ax_loss_name(net->config.loss), input_shape};
    ax_status status = ax_safetensors_write(path, tensors, count, keys, texts, image ? 7 : 6);
    free(values);
    free(values32);
    return status;
}

/* The file's format version: 1 when it has none (written before the field
 * existed); one this axon does not know is refused before anything else. */
static ax_status check_version(const ax_safetensors_file *file)
{
    const char *path = ax_safetensors_path(file);
    const char *text = ax_safetensors_metadata(file, "format_version");
    if (!text)
        return AX_STATUS_OK;
    char *end;
    errno = 0;
    long long version = strtoll(text, &end, 10);
    if (end == text || *end || errno || version < 1)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: metadata format_version '%s' is not a positive integer", path, text);
    if (version > AX_MODEL_FORMAT_VERSION)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: model format version %lld is newer than this axon reads (up to %d); "
                       "load it with a newer axon",
                       path, version, AX_MODEL_FORMAT_VERSION);
    return AX_STATUS_OK;
}

static ax_status read_architecture(const ax_safetensors_file *file, ax_net_config *config)
{
    const char *path = ax_safetensors_path(file);
    AX_TRY(check_version(file));
    const char *width = ax_safetensors_metadata(file, "input_width");
    const char *layout = ax_safetensors_metadata(file, "layers");
    const char *loss = ax_safetensors_metadata(file, "loss");
    if (!width || !layout)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: the metadata lacks \"input_width\" or \"layers\"; is this an axon model?", path);
    char *end;
    errno = 0;
    long long input_width = strtoll(width, &end, 10);
    if (end == width || *end || errno || input_width < 1)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: metadata input_width '%s' is not a positive integer",
                       path, width);
    config->input_width = input_width;
    const char *input_shape = ax_safetensors_metadata(file, "input_shape");
    ax_status status =
        input_shape ? ax_layout_input_shape_parse(input_shape, config) : AX_STATUS_OK;
    if (status == AX_STATUS_OK)
        status = ax_layers_parse(layout, config);
    if (status == AX_STATUS_OK && loss)
        status = ax_loss_parse(loss, &config->loss);
    if (status != AX_STATUS_OK)
        return ax_fail_context(AX_STATUS_BAD_FILE, "%s: metadata", path);
    return AX_STATUS_OK;
}

/* Copies one stored tensor into values after checking its name and shape. */
static ax_status read_tensor(const ax_safetensors_file *file, const char *name,
                             const ax_layer_tensor *part, double *values)
{
    const char *path = ax_safetensors_path(file);
    const ax_safetensors_tensor *tensor = ax_safetensors_find(file, name);
    if (!tensor)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: tensor \"%s\" is missing", path, name);
    bool shape_ok = tensor->rank == part->rank;
    int64_t count = 1;
    char shape[128] = "";
    for (int d = 0; d < part->rank; d++) {
        shape_ok = shape_ok && tensor->shape[d] == part->shape[d];
        count *= part->shape[d];
        size_t used = strlen(shape);
        snprintf(shape + used, sizeof shape - used, "%s%lld", d ? ", " : "",
                 (long long)part->shape[d]);
    }
    if (!shape_ok)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: tensor \"%s\" should have shape (%s) for the layout in the metadata",
                       path, name, shape);
    for (int64_t i = 0; i < count; i++) {
        double value = tensor->dtype == AX_SAFETENSORS_F64 ? ((const double *)tensor->data)[i]
                                                           : (double)((const float *)tensor->data)[i];
        if (value != value || value - value != 0)
            return ax_fail(AX_STATUS_BAD_FILE, "%s: tensor \"%s\" holds a NaN or infinite value at index %lld",
                           path, name, (long long)i);
        values[i] = value;
    }
    return AX_STATUS_OK;
}

/* A layout in the metadata can claim any size in a few bytes (16777216 wide
 * layers: 2^48 weights); the file must hold every value, so a layout needing
 * more values than the file's tensors have is refused before the network is
 * allocated (found by tests/fuzz/fuzz_safetensors). Counted in double: the
 * claimed sizes may overflow int64_t. */
static ax_status check_size(const ax_safetensors_file *file, const ax_net_config *config)
{
    const double needed = ax_layout_parameters(config);
    double held = 0.0;
    for (int i = 0; i < ax_safetensors_count(file); i++)
        held += (double)ax_safetensors_tensor_elements(ax_safetensors_tensor_at(file, i));
    if (needed > held)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: the layout in the metadata needs %.0f parameters but the file holds "
                       "%.0f values",
                       ax_safetensors_path(file), needed, held);
    return AX_STATUS_OK;
}

/* Tensors a parsed layout stores: how many a kind has does not depend on
 * the widths, so each layer is laid out for an input width of 0 (a claimed
 * width cannot overflow here; check_size judges the widths). */
static int layout_tensors(const ax_net_config *config)
{
    int count = 0;
    for (int l = 0; l < config->layer_count; l++) {
        ax_layer dry = {.ops = ax_layer_ops_of(config->layers[l].kind), .spec = config->layers[l]};
        if (!dry.ops)
            continue;
        dry.ops->lay_out(&dry, (ax_layer_shape){0, 0, 0, false});
        ax_layer_tensor parts[AX_LAYER_MAX_TENSORS];
        count += dry.ops->tensors(&dry, parts);
    }
    return count;
}

ax_status ax_net_load(const char *path, ax_precision precision, ax_net **out)
{
    *out = NULL;
    ax_safetensors_file *file = NULL;
    AX_TRY(ax_safetensors_read(path, &file));
    ax_net_config config = ax_net_defaults();
    config.precision = precision;
    ax_net *net = NULL;
    double *values = NULL;
    ax_status status = read_architecture(file, &config);
    if (status == AX_STATUS_OK && ax_safetensors_count(file) != layout_tensors(&config))
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: holds %d tensors but its layout needs %d", path,
                         ax_safetensors_count(file), layout_tensors(&config));
    if (status == AX_STATUS_OK)
        status = check_size(file, &config);
    if (status == AX_STATUS_OK) {
        status = ax_net_create(&config, &net);
        if (status != AX_STATUS_OK)
            status = ax_fail_context(AX_STATUS_BAD_FILE, "%s: metadata", path);
    }
    if (status == AX_STATUS_OK) {
        values = malloc((size_t)net->parameter_count * sizeof(double));
        if (!values)
            status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory loading %s", path);
    }
    for (int l = 0; status == AX_STATUS_OK && l < net->layer_count; l++) {
        const ax_layer *layer = &net->layers[l];
        ax_layer_tensor parts[AX_LAYER_MAX_TENSORS];
        const int part_count = layer->ops->tensors(layer, parts);
        for (int part = 0; status == AX_STATUS_OK && part < part_count; part++) {
            char name[32];
            snprintf(name, sizeof name, "layers.%d.%s", l, parts[part].name);
            status = read_tensor(file, name, &parts[part], values + parts[part].offset);
        }
    }
    if (status == AX_STATUS_OK)
        ax_net_parameters_set(net, values);
    free(values);
    ax_net_config_release(&config);
    ax_safetensors_free(file);
    if (status != AX_STATUS_OK) {
        ax_net_free(net);
        return status;
    }
    *out = net;
    return AX_STATUS_OK;
}
