/* net.c: creating a network from its configuration: checking the layout,
 * resolving the loss and initialisation, laying out the parameter arena and
 * drawing the initial weights from the seeded generator. */
#include "core/net.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/memory.h"
#include "base/random.h"
#include "data/dataset.h"

enum { MAX_LAYER_WIDTH = 1 << 24 };

void ax_net_config_init(ax_net_config *config, size_t size)
{
    ax_net_config defaults;
    memset(&defaults, 0, sizeof defaults);
    defaults.loss = AX_LOSS_AUTO;
    defaults.init = AX_INIT_AUTO;
    defaults.init_range = 0.2;
    defaults.precision = AX_PRECISION_F32;
    defaults.seed = 1;
    defaults.device = ax_device_cpu();
    ax_sized_fill(config, size, &defaults, sizeof defaults);
}

void ax_net_config_release(ax_net_config *config)
{
    if (!config || !config->parsed_layers)
        return;
    free(config->parsed_layers);
    config->parsed_layers = NULL;
    config->layers = NULL;
    config->layer_count = 0;
}

/* Fills in AX_LOSS_AUTO and refuses combinations whose gradient we do not
 * define: softmax goes with cross-entropy only, binary cross-entropy needs
 * sigmoid outputs. */
static ax_status resolve_config(ax_net_config *config)
{
    if (config->input_width < 1 || config->input_width > MAX_LAYER_WIDTH)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "input width %lld is out of range (1 to %d)",
                       (long long)config->input_width, MAX_LAYER_WIDTH);
    if (config->layer_count < 1 || config->layer_count > AX_MAX_LAYERS)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "a network needs 1 to %d layers, not %d",
                       AX_MAX_LAYERS, config->layer_count);
    if (config->precision != AX_PRECISION_F32 && config->precision != AX_PRECISION_F64 &&
        config->precision != AX_PRECISION_BF16)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "unknown precision %d", (int)config->precision);
    AX_TRY(ax_layout_check(config));
    const ax_layer_spec *last = &config->layers[config->layer_count - 1];
    ax_activation output = ax_layer_ops_of(last->kind)->activation(last);
    if (config->loss == AX_LOSS_AUTO)
        config->loss = output == AX_ACT_SOFTMAX   ? AX_LOSS_CROSS_ENTROPY
                       : output == AX_ACT_SIGMOID ? AX_LOSS_BINARY_CROSS_ENTROPY
                                                  : AX_LOSS_MSE;
    switch (config->loss) {
    case AX_LOSS_CROSS_ENTROPY:
        if (output != AX_ACT_SOFTMAX)
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "cross-entropy needs a softmax output layer, not %s",
                           ax_activation_name(output));
        break;
    case AX_LOSS_BINARY_CROSS_ENTROPY:
        if (output != AX_ACT_SIGMOID)
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "binary cross-entropy needs a sigmoid output layer, not %s",
                           ax_activation_name(output));
        break;
    case AX_LOSS_MSE:
        if (output == AX_ACT_SOFTMAX)
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "a softmax output goes with cross-entropy, not mean-squared error");
        break;
    default:
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "unknown loss %d", (int)config->loss);
    }
    if ((unsigned)config->init > AX_INIT_UNIFORM)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "unknown initialisation %d", (int)config->init);
    if (config->init == AX_INIT_UNIFORM && !(config->init_range > 0 && isfinite(config->init_range)))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "the uniform initialisation range must be positive, not %g",
                       config->init_range);
    return AX_STATUS_OK;
}

/* Initial weights in the arena layout, drawn in layer order from one
 * generator so a seed fixes them whatever the precision or thread count. */
static void draw_initial_parameters(const ax_net *net, double *values)
{
    ax_rng rng;
    ax_rng_seed(&rng, net->config.seed);
    for (int l = 0; l < net->layer_count; l++)
        net->layers[l].ops->init(&net->layers[l], net->config.init, net->config.init_range, &rng,
                                 values);
}

/* The arenas of a network are checked against the memory available before
 * any is allocated: the float64 initial values drawn on the host, and the
 * weights and gradients (on the host for the CPU backend; a GPU backend
 * keeps those on the device, where its allocator refuses what does not
 * fit). A layout of
 * absurd widths is then refused with its sizes rather than failing inside
 * malloc, or succeeding lazily and being killed by the kernel later. */
static ax_status check_network_memory(const ax_net_config *config, int64_t parameters, size_t real)
{
    const double arenas = ax_device_is_cpu(config->device) ? 2.0 : 0.0;
    const double bytes = (double)parameters * ((double)sizeof(double) + arenas * (double)real);
    char layout[512], what[768];
    ax_layers_format(config, layout, sizeof layout);
    snprintf(what, sizeof what,
             "the network %s: %lld parameters (weights and gradients in %s, %.1f GiB each, and "
             "their initial values in float64, %.1f GiB)",
             layout, (long long)parameters,
             config->precision == AX_PRECISION_F64 ? "float64" : "float32",
             (double)parameters * (double)real / 1073741824.0,
             (double)parameters * (double)sizeof(double) / 1073741824.0);
    /* At most 64 layers of 2^24 x 2^24 weights: under 2^59 bytes, so size_t holds it. */
    return ax_memory_check((size_t)bytes, what);
}

/* A kind that needs an optional backend operation is refused on a backend
 * without it, naming the layer, the backend and what it lacks. */
static ax_status check_backend_runs_layers(const ax_net *net)
{
    for (int l = 0; l < net->layer_count; l++) {
        const ax_layer *layer = &net->layers[l];
        const char *missing = layer->ops->missing_operations
                                  ? layer->ops->missing_operations(net->backend->ops)
                                  : NULL;
        if (missing) {
            char item[64], device[AX_DEVICE_NAME_CAPACITY + 16];
            layer->ops->format(&layer->spec, item, sizeof item);
            ax_device_format(net->config.device, device, sizeof device);
            return ax_fail(AX_STATUS_UNSUPPORTED,
                           "layer %d (%s) is not supported on device %s: its backend has no %s "
                           "yet",
                           l + 1, item, device, missing);
        }
    }
    return AX_STATUS_OK;
}

ax_status ax_net_create(const ax_net_config *config, ax_net **out)
{
    *out = NULL;
    /* A program built against an older header passes a shorter config:
     * the fields it lacks keep their defaults. */
    ax_net_config resolved = ax_net_defaults();
    AX_TRY(ax_sized_read(config, &resolved,
                         offsetof(ax_net_config, device) + sizeof config->device,
                         sizeof resolved, "a network config", "ax_net_defaults"));
    AX_TRY(resolve_config(&resolved));

    ax_net *net = calloc(1, sizeof *net);
    if (!net)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory creating a network");
    net->specs = malloc((size_t)resolved.layer_count * sizeof *net->specs);
    net->layers = calloc((size_t)resolved.layer_count, sizeof *net->layers);
    if (!net->specs || !net->layers) {
        free(net->specs);
        free(net->layers);
        free(net);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory creating a network");
    }
    memcpy(net->specs, resolved.layers, (size_t)resolved.layer_count * sizeof *net->specs);
    resolved.layers = net->specs; /* the net's own copy: the caller's may go */
    resolved.parsed_layers = NULL;
    net->config = resolved;
    net->layer_count = resolved.layer_count;
    int64_t offset = 0;
    ax_layer_shape in = ax_layout_input_shape(&resolved);
    net->max_width = 1;
    for (int l = 0; l < net->layer_count; l++) {
        ax_layer *layer = &net->layers[l];
        layer->spec = resolved.layers[l];
        layer->ops = ax_layer_ops_of(layer->spec.kind);
        layer->offset = offset;
        layer->ops->lay_out(layer, in);
        offset += layer->parameter_count;
        in = layer->out_shape;
        if (layer->out > net->max_width)
            net->max_width = layer->out;
    }
    net->parameter_count = offset;

    size_t real = resolved.precision == AX_PRECISION_F64 ? sizeof(double) : sizeof(float);
    ax_status status = check_network_memory(&resolved, offset, real);
    if (status != AX_STATUS_OK) {
        free(net->specs);
        free(net->layers);
        free(net);
        return status;
    }
    double *initial = malloc((size_t)offset * sizeof(double));
    status = ax_backend_create(resolved.precision, resolved.device, &net->backend);
    if (status != AX_STATUS_OK)
        goto done;
    status = check_backend_runs_layers(net);
    if (status != AX_STATUS_OK)
        goto done;
    if (!initial) {
        status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory creating a network");
        goto done;
    }
    char what[128];
    snprintf(what, sizeof what, "%lld parameters (the weights and the gradients, %zu bytes each)",
             (long long)offset, (size_t)offset * real);
    status = ax_backend_alloc(net->backend, (size_t)offset * real, what, &net->parameters);
    if (status == AX_STATUS_OK)
        status = ax_backend_alloc(net->backend, (size_t)offset * real, what, &net->gradients);
    if (status != AX_STATUS_OK)
        goto done;
    draw_initial_parameters(net, initial);
    net->backend->ops->upload_f64(net->backend, net->parameters, initial, offset);
done:
    free(initial);
    if (status != AX_STATUS_OK) {
        ax_net_free(net);
        return status;
    }
    *out = net;
    return AX_STATUS_OK;
}

void ax_net_free(ax_net *net)
{
    if (!net)
        return;
    free(net->run.profile);
    if (net->backend) {
        ax_net_workspace_release(net);
        net->backend->ops->free(net->backend, net->parameters);
        net->backend->ops->free(net->backend, net->gradients);
        net->backend->ops->destroy(net->backend);
    }
    free(net->specs);
    free(net->layers);
    free(net);
}

void *ax_layer_block(const ax_net *net, void *arena, int layer)
{
    return (char *)arena + (size_t)net->layers[layer].offset * net->backend->real_size;
}

void *ax_layer_weights(const ax_net *net, void *arena, int layer)
{
    return (char *)arena + (size_t)net->layers[layer].weight_offset * net->backend->real_size;
}

void *ax_layer_bias(const ax_net *net, void *arena, int layer)
{
    return (char *)arena + (size_t)net->layers[layer].bias_offset * net->backend->real_size;
}

const ax_net_config *ax_net_config_get(const ax_net *net) { return &net->config; }

int64_t ax_net_layer_width(const ax_net *net, int layer)
{
    return layer >= 0 && layer < net->layer_count ? net->layers[layer].out : 0;
}

int64_t ax_net_parameter_count(const ax_net *net) { return net->parameter_count; }

void ax_net_parameters_get(const ax_net *net, double *values)
{
    net->backend->ops->download_f64(net->backend, values, net->parameters, net->parameter_count);
}

void ax_net_parameters_set(ax_net *net, const double *values)
{
    net->backend->ops->upload_f64(net->backend, net->parameters, values, net->parameter_count);
}

ax_status ax_net_check_sparse(const ax_net *net, const ax_dataset *data, const char *role)
{
    /* Its rows are made dense as float32 straight into the input buffer. */
    if (ax_dataset_is_sparse(data) &&
        (!net->backend->host_memory || net->config.precision != AX_PRECISION_F32))
        return ax_fail(AX_STATUS_UNSUPPORTED,
                       "%s data %s is sparse, whose rows are made dense in float32 in host "
                       "memory: use the CPU in float32 (this network is not), or dense data",
                       role, ax_dataset_source(data));
    return AX_STATUS_OK;
}

ax_status ax_net_check_data(const ax_net *net, const ax_dataset *data, const char *role)
{
    const char *source = ax_dataset_source(data);
    int64_t outputs = net->layers[net->layer_count - 1].out;
    AX_TRY(ax_net_check_sparse(net, data, role));
    if (ax_dataset_rows(data) < 1)
        return ax_fail(AX_STATUS_BAD_DATA, "%s data %s has no rows", role, source);
    if (ax_dataset_features(data) != net->config.input_width)
        return ax_fail(AX_STATUS_BAD_DATA,
                       "%s data %s has %lld features per row but the network's input width is %lld",
                       role, source, (long long)ax_dataset_features(data),
                       (long long)net->config.input_width);
    int64_t shape[3];
    const int64_t *expected = net->config.input_shape;
    if (ax_dataset_image_shape(data, shape) && expected[0] &&
        (shape[0] != expected[0] || shape[1] != expected[1] || shape[2] != expected[2]))
        return ax_fail(AX_STATUS_BAD_DATA,
                       "%s data %s holds %lldx%lldx%lld images but the network takes %lldx%lldx%lld "
                       "(height x width x channels)",
                       role, source, (long long)shape[0], (long long)shape[1], (long long)shape[2],
                       (long long)expected[0], (long long)expected[1], (long long)expected[2]);
    if (ax_dataset_classes(data) > 0 && ax_dataset_is_streamed(data)) {
        /* Its labels are checked against its classes as each file is read. */
        if (ax_dataset_classes(data) > outputs)
            return ax_fail(AX_STATUS_BAD_DATA,
                           "%s data %s has %lld classes but the output layer has %lld units",
                           role, source, (long long)ax_dataset_classes(data), (long long)outputs);
    } else if (ax_dataset_classes(data) > 0) {
        const int32_t *labels = ax_dataset_labels_data((ax_dataset *)data);
        int64_t classes_allowed = outputs;
        for (int64_t r = 0; r < ax_dataset_rows(data); r++)
            if (labels[r] < 0 || labels[r] >= classes_allowed)
                return ax_fail(AX_STATUS_BAD_DATA,
                               "%s data %s: row %lld has label %d but the output layer has %lld units "
                               "(labels 0 to %lld)",
                               role, source, (long long)r + 1, labels[r], (long long)outputs,
                               (long long)outputs - 1);
    } else if (ax_dataset_targets(data) != outputs) {
        return ax_fail(AX_STATUS_BAD_DATA,
                       "%s data %s has %lld target values per row but the output layer has %lld units",
                       role, source, (long long)ax_dataset_targets(data), (long long)outputs);
    } else if (net->config.loss == AX_LOSS_CROSS_ENTROPY) {
        return ax_fail(AX_STATUS_BAD_DATA,
                       "%s data %s has float targets; cross-entropy needs class labels", role, source);
    }
    return AX_STATUS_OK;
}

void ax_net_profile_enable(ax_net *net, bool enabled)
{
    if (enabled && !net->run.profile)
        net->run.profile = calloc(1, sizeof *net->run.profile); /* on failure profiling stays off */
    else if (!enabled) {
        free(net->run.profile);
        net->run.profile = NULL;
    }
}

void ax_net_profile_reset(ax_net *net)
{
    if (net->run.profile)
        ax_profile_clear(net->run.profile);
}

int ax_net_profile_get(const ax_net *net, ax_profile_entry *entries, int capacity)
{
    return net->run.profile ? ax_profile_entries(net->run.profile, entries, capacity) : 0;
}
