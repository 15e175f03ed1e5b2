/* test_pool_relu_fusion.c: the fused passes of image networks must change
 * nothing but the time. Max pooling over a ReLU layer's output runs its
 * input gradient and the ReLU derivative in one pass (backend.h:
 * max_pool_backward_relu, version 11; core/propagate.c asks the pooling
 * layer first); a convolution runs its forward pass, bias and activation
 * in one (conv_forward_bias_activation, version 12: the CPU's direct
 * kernels of single-channel layers, identity and ReLU, float32 and bf16).
 * - the loss and the whole gradient of small image networks, computed
 *   with the entry (its calls counted through a wrapped table) and without
 *   it (the table's entry NULL: pool_backward, then the derivative), are
 *   equal bit for bit, in float32, float64 and bf16, for 2x2 pooling of
 *   stride 2 (the unrolled path) and 3x3 of stride 2 (overlapping
 *   windows, the general loops);
 *   (after a first call, so that both run the same kernels on any CPU:
 *   the only difference left is the pooling pass, a select, exact);
 * - the entry is called once for each max pooling over a ReLU layer, and
 *   not for a pooling over a tanh layer, an average pooling, or where
 *   dropout comes between (its mask must act first);
 * - the same for the convolution's entry, on single-channel images: the
 *   gradient with it and without it (conv_forward, then bias_activation)
 *   equal bit for bit, the entry taken once per pass for a ReLU or identity
 *   first layer of 16 filters (where the CPU has AVX-512), never for tanh,
 *   float64, 8 filters or a second layer's 16 channels;
 * - the convolution's weight and bias gradients in one pass
 *   (conv_backward_weights_bias, version 13): taken for each convolution of
 *   16 or 32 filters below a max pooling over its ReLU output (float32, on
 *   AVX-512; bf16 for a single channel there, and for 16 channels on AMX's
 *   tiles or their emulation: ctest runs this test again with
 *   AXON_CONV_AMX=emulate), never below tanh, for 8 filters, with dropout
 *   between, or in float64; the gradient with and without it equal bit for bit but
 *   for those layers' bias gradients (another order of addition), which
 *   agree within 2^-16 of their largest. The other checks leave that
 *   entry out of both tables;
 * - a first layer's weight and bias gradients straight from the max
 *   pooling's delta above it (conv_backward_weights_bias_pooled, version
 *   14): the whole gradient with and without it equal bit for bit (the
 *   same kernels, the delta made a slice at a time), the entry taken once
 *   for a first convolution of 16 or 32 filters below a max pooling over
 *   its ReLU output, 2x2 or overlapping 3x3 windows (float32 on AVX-512,
 *   one channel or several; bf16 for one), never for tanh, an average
 *   pooling, dropout between, 8 filters or float64 (with an l2 term, which
 *   the layer adds after the entry). The other checks leave it out of
 *   both tables;
 * - a first layer's forward pass and the 2x2 max pooling over it in one,
 *   and its gradients from the window codes that pass keeps
 *   (conv_forward_relu_max_pool and conv_backward_weights_bias_coded,
 *   version 15): the whole gradient bit for bit the separate passes',
 *   each entry taken once (single channel, 16 filters or more, float32 and
 *   bf16 on AVX-512; padding, stride 2), never for an odd output side,
 *   overlapping windows, tanh, an average pooling, dropout between, 8
 *   filters, two channels or float64; and codes left from an earlier
 *   forward pass are not read once the separate passes have run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/conv_weight_amx.h"
#include "backend/cpu/cpu_features.h"
#include "core/net.h"
#include "test_util.h"

static uint64_t random_state = 3;
static double random_uniform(void)
{
    return test_random_uniform(&random_state, -1.0, 1.0);
}

/* The fused entry a check is about: counted in one table, NULL in the other. */
typedef enum fused_entry {
    POOL_RELU,
    CONV_BIAS_ACTIVATION,
    CONV_WEIGHTS_BIAS,
    CONV_POOLED,
    CONV_MAX_POOL
} fused_entry;

static int64_t fused_calls; /* calls the entry took */
static const ax_backend_ops *wrapped;
static void counted_pool_entry(ax_backend *backend, const ax_window_geometry *geometry,
                               const void *x, const void *dy, void *dx, int64_t images)
{
    fused_calls++;
    wrapped->max_pool_backward_relu(backend, geometry, x, dy, dx, images);
}

static bool counted_conv_entry(ax_backend *backend, const ax_window_geometry *geometry,
                               int64_t filters, const void *x, const void *weights,
                               const void *bias, ax_activation activation, void *z, int64_t images)
{
    const bool taken = wrapped->conv_forward_bias_activation(backend, geometry, filters, x, weights,
                                                             bias, activation, z, images);
    fused_calls += taken;
    return taken;
}

static bool counted_weights_bias_entry(ax_backend *backend, const ax_window_geometry *geometry,
                                       int64_t filters, const void *delta, const void *x,
                                       const void *columns, void *weight_gradient,
                                       void *bias_gradient, int64_t images)
{
    const bool taken = wrapped->conv_backward_weights_bias(
        backend, geometry, filters, delta, x, columns, weight_gradient, bias_gradient, images);
    fused_calls += taken;
    return taken;
}

static bool counted_pooled_entry(ax_backend *backend, const ax_window_geometry *geometry,
                                 int64_t filters, const ax_window_geometry *pool, const void *y,
                                 const void *dy, const void *x, void *weight_gradient,
                                 void *bias_gradient, int64_t images)
{
    const bool taken = wrapped->conv_backward_weights_bias_pooled(
        backend, geometry, filters, pool, y, dy, x, weight_gradient, bias_gradient, images);
    fused_calls += taken;
    return taken;
}

static int64_t coded_calls; /* conv_backward_weights_bias_coded's taken calls */
static bool counted_max_pool_entry(ax_backend *backend, const ax_window_geometry *geometry,
                                   int64_t filters, const ax_window_geometry *pool,
                                   const void *x, const void *weights, const void *bias, void *y,
                                   void *pooled, uint8_t *codes, int64_t images)
{
    const bool taken = wrapped->conv_forward_relu_max_pool(backend, geometry, filters, pool, x,
                                                           weights, bias, y, pooled, codes, images);
    fused_calls += taken;
    return taken;
}

static bool counted_coded_entry(ax_backend *backend, const ax_window_geometry *geometry,
                                int64_t filters, const ax_window_geometry *pool,
                                const uint8_t *codes, const void *dy, const void *x,
                                void *weight_gradient, void *bias_gradient, int64_t images)
{
    const bool taken = wrapped->conv_backward_weights_bias_coded(
        backend, geometry, filters, pool, codes, dy, x, weight_gradient, bias_gradient, images);
    coded_calls += taken;
    return taken;
}

/* Whether with and without (count values) agree: bit for bit, except a
 * convolution's bias gradient where conv_backward_weights_bias made one
 * side's (its sums in another order): there within 2^-16 of the layer's
 * largest. */
static bool gradients_agree(const ax_net *net, const double *with, const double *without,
                            int64_t count, fused_entry entry)
{
    if (entry != CONV_WEIGHTS_BIAS)
        return memcmp(with, without, (size_t)count * sizeof *with) == 0;
    bool *bias = calloc((size_t)count, sizeof *bias);
    for (int l = 0; bias && l < net->layer_count; l++) {
        const ax_layer *layer = &net->layers[l];
        if (layer->ops->kind != AX_LAYER_CONV)
            continue;
        const int64_t first = layer->bias_offset; /* in the arena, as the gradient's order */
        double largest = 0.0;
        for (int64_t f = 0; f < layer->spec.conv.filters; f++) {
            bias[first + f] = true;
            largest = fmax(largest, fabs(without[first + f]));
        }
        for (int64_t f = 0; f < layer->spec.conv.filters; f++)
            if (!(fabs(with[first + f] - without[first + f]) <= 0x1p-16 * largest))
                bias[first + f] = false; /* counted as differing below */
    }
    bool agree = bias != NULL;
    for (int64_t i = 0; agree && i < count; i++)
        agree = (bias[i] && !isnan(with[i])) || memcmp(&with[i], &without[i], sizeof *with) == 0;
    free(bias);
    return agree;
}

static ax_dataset *images(int64_t rows, int64_t channels)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_create(rows, 14 * 14 * channels, 10, 0, &data));
    if (data) {
        float *x = ax_dataset_features_data(data);
        for (int64_t i = 0; i < rows * 14 * 14 * channels; i++)
            x[i] = (float)random_uniform();
        for (int64_t r = 0; r < rows; r++)
            ax_dataset_labels_data(data)[r] = (int32_t)(r * 3 % 10);
        CHECK_OK(ax_dataset_set_image_shape(data, (int64_t[3]){14, 14, channels}));
    }
    return data;
}

/* One network: the gradient with and without the entry, the same bits,
 * and the entry taken `expected` times. */
static void check_network(ax_precision precision, const char *layers, double dropout,
                          int64_t expected, const ax_dataset *data, fused_entry entry)
{
    const int64_t channels = ax_dataset_features(data) / (14 * 14);
    ax_net_config config = ax_net_defaults();
    config.input_width = 14 * 14 * channels;
    config.input_shape[0] = 14, config.input_shape[1] = 14, config.input_shape[2] = channels;
    config.precision = precision;
    config.seed = 9;
    ax_net *net = NULL;
    ax_status status = ax_layers_parse(layers, &config);
    if (status == AX_STATUS_OK)
        status = ax_net_create(&config, &net);
    ax_net_config_release(&config);
    CHECK_OK(status);
    if (!net)
        return;
    const int64_t count = ax_net_parameter_count(net);
    double *with = malloc((size_t)count * sizeof *with);
    double *without = malloc((size_t)count * sizeof *without);
    CHECK(with && without);
    ax_regularization regularization = ax_regularization_defaults();
    regularization.dropout = dropout;
    /* the pooled entry's layer adds the l2 term itself: both sides have one */
    if (entry == CONV_POOLED)
        regularization.l2 = 0.01;
    if (with && without) {
        ax_backend *b = net->backend;
        const ax_backend_ops *own = b->ops;
        ax_backend_ops counting = *own, plain = *own;
        wrapped = own;
        /* each check about its own entry: the bias gradient's pass as it was */
        /* (the pooled entry's check keeps the bias entry in both: it
         * replaces the pooling pass and that entry's call) */
        if (entry != CONV_WEIGHTS_BIAS && entry != CONV_POOLED)
            counting.conv_backward_weights_bias = plain.conv_backward_weights_bias = NULL;
        if (entry != CONV_POOLED && entry != CONV_MAX_POOL)
            counting.conv_backward_weights_bias_pooled = plain.conv_backward_weights_bias_pooled =
                NULL;
        /* the forward pass with the pooling (and the codes' backward pass)
         * in the table of its own check only */
        plain.conv_forward_relu_max_pool = NULL;
        plain.conv_backward_weights_bias_coded = NULL;
        counting.conv_forward_relu_max_pool = NULL;
        counting.conv_backward_weights_bias_coded = NULL;
        if (entry == CONV_MAX_POOL && own->conv_forward_relu_max_pool) {
            counting.conv_forward_relu_max_pool = counted_max_pool_entry;
            if (own->conv_backward_weights_bias_coded)
                counting.conv_backward_weights_bias_coded = counted_coded_entry;
        } else if (entry == CONV_POOLED) {
            if (own->conv_backward_weights_bias_pooled)
                counting.conv_backward_weights_bias_pooled = counted_pooled_entry;
            plain.conv_backward_weights_bias_pooled = NULL;
        } else if (entry == CONV_WEIGHTS_BIAS) {
            if (own->conv_backward_weights_bias)
                counting.conv_backward_weights_bias = counted_weights_bias_entry;
            plain.conv_backward_weights_bias = NULL;
        } else if (entry == POOL_RELU) {
            counting.max_pool_backward_relu = counted_pool_entry;
            plain.max_pool_backward_relu = NULL;
        } else if (own->conv_forward_bias_activation) {
            counting.conv_forward_bias_activation = counted_conv_entry;
            plain.conv_forward_bias_activation = NULL;
        }
        double loss_with = 0.0, loss_without = 1.0;
        /* Both sides must run the same kernels: a first call settles the
         * backend's choices (a bf16 backend whose native oneDNN primitive
         * is refused turns to rounded ones for good, e.g. on a CPU where
         * oneDNN lacks one of its bf16 kernels), so the pair below differs
         * only in the pooling pass. */
        CHECK_OK(ax_net_loss_gradient(net, data, 0, ax_dataset_rows(data), &regularization,
                                      &loss_with, with));
        b->ops = &counting;
        fused_calls = coded_calls = 0;
        CHECK_OK(ax_net_loss_gradient(net, data, 0, ax_dataset_rows(data), &regularization,
                                      &loss_with, with));
        b->ops = &plain;
        CHECK_OK(ax_net_loss_gradient(net, data, 0, ax_dataset_rows(data), &regularization,
                                      &loss_without, without));
        if (entry == CONV_MAX_POOL && own->conv_backward_weights_bias_coded) {
            /* the codes of an earlier forward pass are stale once the two
             * passes have run: the backward pass reads y again */
            double *after = malloc((size_t)count * sizeof *after), loss_after = 0.0;
            b->ops = &counting;
            CHECK_OK(ax_net_loss_gradient(net, data, 0, ax_dataset_rows(data), &regularization,
                                          &loss_after, after));
            /* `plain` runs both sides (the coded entry is never called): the
             * same kernels, so the same bits on any CPU */
            ax_backend_ops stale = plain;
            stale.conv_backward_weights_bias_coded = counted_coded_entry;
            b->ops = &stale;
            const int64_t coded_before = coded_calls;
            CHECK_OK(ax_net_loss_gradient(net, data, 0, ax_dataset_rows(data), &regularization,
                                          &loss_after, after));
            CHECK(coded_calls == coded_before && loss_after == loss_without && after &&
                  memcmp(after, without, (size_t)count * sizeof *after) == 0);
            free(after);
            fused_calls /= 2, coded_calls /= 2; /* the counts of one call */
        }
        b->ops = own;
        const bool agree = gradients_agree(net, with, without, count, entry);
        /* the codes' backward pass once for each forward pass that made them */
        const int64_t coded_expected = entry == CONV_MAX_POOL ? fused_calls : 0;
        if (fused_calls != expected || coded_calls != coded_expected ||
            loss_with != loss_without || !agree) {
            fprintf(stderr, "%s, %s, dropout %g: %lld fused calls (expected %lld), %lld coded, "
                    "loss %.17g against %.17g, gradients %s\n", layers,
                    precision == AX_PRECISION_F64 ? "float64"
                    : precision == AX_PRECISION_BF16 ? "bf16" : "float32", dropout,
                    (long long)fused_calls, (long long)expected, (long long)coded_calls, loss_with,
                    loss_without,
                    agree ? "agree" : "differ");
            CHECK(false);
        }
    }
    free(with), free(without);
    ax_net_free(net);
}

int main(void)
{
    ax_dataset *data = images(37, 2), *gray = images(37, 1);
    if (!data || !gray)
        return test_finish("test_pool_relu_fusion");
    const ax_precision precisions[3] = {AX_PRECISION_F32, AX_PRECISION_F64, AX_PRECISION_BF16};
    for (int p = 0; p < 3; p++) {
        /* two max poolings over ReLU layers, 2x2 of stride 2 */
        check_network(precisions[p], "conv:8x3x3:relu,maxpool:2,conv:16x3x3:relu,maxpool:2,10:softmax",
                      0.0, 2, data, POOL_RELU);
        /* overlapping 3x3 windows of stride 2: the general loops */
        check_network(precisions[p], "conv:6x3x3:relu,maxpool:3/s2,12:relu,10:softmax", 0.0, 1,
                      data, POOL_RELU);
        /* not over ReLU, not max, or dropout between: the two passes */
        check_network(precisions[p], "conv:6x3x3:tanh,maxpool:2,10:softmax", 0.0, 0, data,
                      POOL_RELU);
        check_network(precisions[p], "conv:6x3x3:relu,avgpool:2,10:softmax", 0.0, 0, data,
                      POOL_RELU);
        check_network(precisions[p], "conv:6x3x3:relu,maxpool:2,10:softmax", 0.25, 0, data,
                      POOL_RELU);
        /* the convolution's forward pass with its bias and activation: single-channel
         * first layers of 16 filters, ReLU or identity, in float32 and bf16 on AVX-512 */
        const int64_t taken = precisions[p] != AX_PRECISION_F64 && ax_cpu_kernels_avx512f();
        check_network(precisions[p], "conv:16x3x3:relu,maxpool:2,conv:16x3x3:relu,10:softmax", 0.0,
                      taken, gray, CONV_BIAS_ACTIVATION);
        check_network(precisions[p], "conv:16x5x5/p2:identity,maxpool:2,10:softmax", 0.0, taken,
                      gray, CONV_BIAS_ACTIVATION);
        check_network(precisions[p], "conv:16x3x3:tanh,maxpool:2,10:softmax", 0.0, 0, gray,
                      CONV_BIAS_ACTIVATION);
        check_network(precisions[p], "conv:8x3x3:relu,maxpool:2,10:softmax", 0.0, 0, gray,
                      CONV_BIAS_ACTIVATION);
        /* a convolution's weight and bias gradients in one pass, below a max
         * pooling (delta already pre-activation): float32 on AVX-512, the
         * direct kernels of one channel and of several, filters in 16s */
        const int64_t both = precisions[p] == AX_PRECISION_F32 && ax_cpu_kernels_avx512f();
        /* and bf16 on AMX's tiles (or their emulation, AXON_CONV_AMX=emulate):
         * layers of 16 channels, not the first of 2 */
        const int64_t tiles =
            precisions[p] == AX_PRECISION_BF16 && ax_conv_amx_mode_chosen() != AX_CONV_AMX_OFF;
        check_network(precisions[p],
                      "conv:16x3x3:relu,maxpool:2,conv:16x3x3:relu,maxpool:2,10:softmax", 0.0,
                      2 * both + tiles, data, CONV_WEIGHTS_BIAS);
        /* a single-channel first layer: float32's and bf16's direct kernels */
        const int64_t one = precisions[p] != AX_PRECISION_F64 && ax_cpu_kernels_avx512f();
        check_network(precisions[p], "conv:16x3x3:relu,maxpool:2,conv:32x3x3:relu,10:softmax", 0.0,
                      one, gray, CONV_WEIGHTS_BIAS);
        /* not below a max pooling over ReLU, or 8 filters: the two passes */
        check_network(precisions[p], "conv:16x3x3:tanh,maxpool:2,10:softmax", 0.0, 0, data,
                      CONV_WEIGHTS_BIAS);
        check_network(precisions[p], "conv:8x3x3:relu,maxpool:2,10:softmax", 0.0, 0, data,
                      CONV_WEIGHTS_BIAS);
        check_network(precisions[p], "conv:16x3x3:relu,maxpool:2,10:softmax", 0.25, 0, data,
                      CONV_WEIGHTS_BIAS);
        /* a first layer's weight and bias gradients straight from the max
         * pooling's delta above it (the same kernels, the delta made a slice
         * at a time): all bits equal, the bias's too; float32's direct
         * kernels of one channel and of several, bf16's of one */
        check_network(precisions[p],
                      "conv:16x3x3:relu,maxpool:2,conv:16x3x3:relu,maxpool:2,10:softmax", 0.0,
                      both, data, CONV_POOLED);
        check_network(precisions[p], "conv:16x3x3:relu,maxpool:2,10:softmax", 0.0, one, gray,
                      CONV_POOLED);
        check_network(precisions[p], "conv:32x5x5/p2:relu,maxpool:3/s2,10:softmax", 0.0, one,
                      gray, CONV_POOLED);
        /* not over ReLU, not max, dropout between, or 8 filters: the two passes */
        check_network(precisions[p], "conv:16x3x3:tanh,maxpool:2,10:softmax", 0.0, 0, gray,
                      CONV_POOLED);
        check_network(precisions[p], "conv:16x3x3:relu,avgpool:2,10:softmax", 0.0, 0, gray,
                      CONV_POOLED);
        check_network(precisions[p], "conv:16x3x3:relu,maxpool:2,10:softmax", 0.25, 0, gray,
                      CONV_POOLED);
        check_network(precisions[p], "conv:8x3x3:relu,maxpool:2,10:softmax", 0.0, 0, gray,
                      CONV_POOLED);
        /* a first layer's forward pass and the 2x2 max pooling over it in
         * one, the backward pass from the window codes: single channel, 16
         * filters or more in 16s, with or without padding, stride 1 or 2
         * (one, as the direct kernels); the gradient bit for bit the two
         * passes' */
        check_network(precisions[p], "conv:16x3x3:relu,maxpool:2,conv:16x3x3:relu,10:softmax", 0.0,
                      one, gray, CONV_MAX_POOL);
        check_network(precisions[p], "conv:32x5x5/p2:relu,maxpool:2,10:softmax", 0.0, one, gray,
                      CONV_MAX_POOL);
        check_network(precisions[p], "conv:48x3x3/s2:relu,maxpool:2,10:softmax", 0.0, one, gray,
                      CONV_MAX_POOL);
        /* an odd side (windows that do not tile the output), overlapping
         * windows, tanh, an average pooling, dropout between, 8 filters,
         * two channels: the two passes */
        check_network(precisions[p], "conv:16x4x4:relu,maxpool:2,10:softmax", 0.0, 0, gray,
                      CONV_MAX_POOL);
        check_network(precisions[p], "conv:16x3x3:relu,maxpool:3/s2,10:softmax", 0.0, 0, gray,
                      CONV_MAX_POOL);
        check_network(precisions[p], "conv:16x3x3:tanh,maxpool:2,10:softmax", 0.0, 0, gray,
                      CONV_MAX_POOL);
        check_network(precisions[p], "conv:16x3x3:relu,avgpool:2,10:softmax", 0.0, 0, gray,
                      CONV_MAX_POOL);
        check_network(precisions[p], "conv:16x3x3:relu,maxpool:2,10:softmax", 0.25, 0, gray,
                      CONV_MAX_POOL);
        check_network(precisions[p], "conv:8x3x3:relu,maxpool:2,10:softmax", 0.0, 0, gray,
                      CONV_MAX_POOL);
        check_network(precisions[p], "conv:16x3x3:relu,maxpool:2,10:softmax", 0.0, 0, data,
                      CONV_MAX_POOL);
    }
    ax_dataset_free(data);
    ax_dataset_free(gray);
    return test_finish("test_pool_relu_fusion");
}
