/* test_layer_accessors.c: ax_net_layer_kind, ax_net_layer_activation and
 * ax_net_layer_output_shape on the network of issue 25,
 * conv:8x5x5/p2:relu,maxpool:2,conv:8x3x3/s2,avgpool:2,10:softmax over
 * 28x28x1 images, whose activation names the CLI and Python once read from
 * the dense member of every kind ("unknown", "tanh", "relu", "tanh",
 * "softmax"). The shapes are worked out by hand from PyTorch's formula,
 * out = floor((in + 2 padding - kernel) / stride) + 1:
 *   conv 5x5 pad 2:    28 -> 28, 8 channels   (6272 values)
 *   maxpool 2:         28 -> 14               (1568)
 *   conv 3x3 stride 2: 14 -> 6                (288)
 *   avgpool 2:          6 -> 3                (72)
 *   dense 10                                  (10)
 * and a model saved and loaded answers the same. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>

#include "test_util.h"
#include "test_files.h"

static const struct {
    ax_layer_kind kind;
    const char *kind_name;
    ax_activation activation;
    int64_t shape[3];
} expected[] = {
    {AX_LAYER_CONV, "conv", AX_ACT_RELU, {28, 28, 8}},
    {AX_LAYER_MAX_POOL, "maxpool", AX_ACT_IDENTITY, {14, 14, 8}},
    {AX_LAYER_CONV, "conv", AX_ACT_RELU, {6, 6, 8}},
    {AX_LAYER_AVERAGE_POOL, "avgpool", AX_ACT_IDENTITY, {3, 3, 8}},
    {AX_LAYER_DENSE, "dense", AX_ACT_SOFTMAX, {1, 1, 10}},
};
enum { LAYERS = (int)(sizeof expected / sizeof expected[0]) };

static void check_layers(const ax_net *net)
{
    for (int l = 0; l < LAYERS; l++) {
        ax_layer_kind kind = (ax_layer_kind)-1;
        ax_activation activation = (ax_activation)-1;
        int64_t shape[3] = {-1, -1, -1};
        CHECK_OK(ax_net_layer_kind(net, l, &kind));
        CHECK_OK(ax_net_layer_activation(net, l, &activation));
        CHECK_OK(ax_net_layer_output_shape(net, l, shape));
        CHECK(kind == expected[l].kind);
        CHECK(strcmp(ax_layer_kind_name(kind), expected[l].kind_name) == 0);
        CHECK(activation == expected[l].activation);
        CHECK(shape[0] == expected[l].shape[0] && shape[1] == expected[l].shape[1] &&
              shape[2] == expected[l].shape[2]);
        CHECK(shape[0] * shape[1] * shape[2] == ax_net_layer_width(net, l));
    }
    /* A layer the network lacks is refused, naming the range, and out is untouched. */
    ax_layer_kind kind = AX_LAYER_CONV;
    CHECK_FAILS(ax_net_layer_kind(net, LAYERS, &kind), AX_STATUS_BAD_ARGUMENT, "numbered 0 to 4");
    CHECK(kind == AX_LAYER_CONV);
    ax_activation activation = AX_ACT_TANH;
    CHECK_FAILS(ax_net_layer_activation(net, -1, &activation), AX_STATUS_BAD_ARGUMENT,
                "layer -1 does not exist");
    CHECK(activation == AX_ACT_TANH);
    int64_t shape[3] = {7, 7, 7};
    CHECK_FAILS(ax_net_layer_output_shape(net, LAYERS, shape), AX_STATUS_BAD_ARGUMENT,
                "5 layers");
    CHECK(shape[0] == 7 && shape[1] == 7 && shape[2] == 7);
}

int main(void)
{
    ax_net_config config = ax_net_defaults();
    CHECK_OK(ax_layers_parse("conv:8x5x5/p2:relu,maxpool:2,conv:8x3x3/s2,avgpool:2,10:softmax",
                             &config));
    config.input_width = 28 * 28;
    config.input_shape[0] = 28;
    config.input_shape[1] = 28;
    config.input_shape[2] = 1;
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    if (net) {
        check_layers(net);
        /* What a saved model answers: the CLI and Python ask loaded ones. */
        if (test_work_dir_make("axon-layer-accessors")) {
            const char *path = in_work("conv.safetensors");
            CHECK_OK(ax_net_save(net, path));
            ax_net *loaded = NULL;
            CHECK_OK(ax_net_load(path, AX_PRECISION_F32, &loaded));
            if (loaded)
                check_layers(loaded);
            ax_net_free(loaded);
            test_work_dir_remove();
        }
    }
    CHECK(strcmp(ax_layer_kind_name((ax_layer_kind)42), "unknown") == 0);
    ax_net_free(net);
    ax_net_config_release(&config);
    return test_finish("test_layer_accessors");
}
