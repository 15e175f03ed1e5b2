/* test_conv_backend.c: the image operations of the backend table
 * (backend.h: im2col, col2im, pool_forward, pool_backward) and their use by
 * the network:
 * - col2im is im2col's adjoint, <im2col(x), c> = <x, col2im(c)>, and average
 *   pooling's backward pass is its forward pass's adjoint, over odd sizes,
 *   strides and paddings, in float64 (what a gradient needs of them, whatever
 *   their loops);
 * - im2col against its definition, element by element (columns in (kh, kw,
 *   channel) order), and the batched transpose;
 * - on a backend without the optional operations (the test plugin's
 *   fake_plain: the CPU with them removed), a network with a convolution or
 *   a pooling layer is refused naming the layer, the device and what its
 *   backend lacks, while a dense network runs;
 * - through the plugin loader (fake: the CPU's code behind it) a conv
 *   network gives the CPU's loss and gradient bit for bit;
 * - the library's refusals of bad image settings (a shape that does not hold
 *   the row, malformed items, shapes that do not fit), naming what is wrong,
 *   and a layout written back as parsed with the widths it implies. */
#include <stdint.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "test_util.h"

static uint64_t random_state = 21;
static double random_uniform(double low, double high)
{
    return test_random_uniform(&random_state, low, high);
}

static double dot(const double *a, const double *b, int64_t n)
{
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += a[i] * b[i];
    return sum;
}

static void check_adjoints(ax_backend *cpu, ax_window_geometry g, int64_t images)
{
    g.out_height = (g.height + 2 * g.padding - g.kernel_height) / g.stride + 1;
    g.out_width = (g.width + 2 * g.padding - g.kernel_width) / g.stride + 1;
    const int64_t patch = g.channels * g.kernel_height * g.kernel_width;
    const int64_t inputs = images * g.height * g.width * g.channels;
    const int64_t columns = images * g.out_height * g.out_width * patch;
    double *x = malloc((size_t)inputs * sizeof *x), *back = malloc((size_t)inputs * sizeof *back);
    double *c = malloc((size_t)columns * sizeof *c), *cols = malloc((size_t)columns * sizeof *c);
    CHECK(x && back && c && cols);
    if (!x || !back || !c || !cols)
        goto done;
    for (int64_t i = 0; i < inputs; i++)
        x[i] = random_uniform(-1, 1);
    for (int64_t i = 0; i < columns; i++)
        c[i] = random_uniform(-1, 1);
    cpu->ops->im2col(cpu, &g, x, cols, images);
    cpu->ops->col2im(cpu, &g, c, back, images);
    const double left = dot(cols, c, columns), right = dot(x, back, inputs);
    CHECK(fabs(left - right) <= 1e-12 * fmax(1, fabs(left)));
    /* im2col by its definition */
    int64_t wrong = 0;
    for (int64_t n = 0; n < images; n++)
        for (int64_t oy = 0; oy < g.out_height; oy++)
            for (int64_t ox = 0; ox < g.out_width; ox++)
                for (int64_t ch = 0; ch < g.channels; ch++)
                    for (int64_t i = 0; i < g.kernel_height; i++)
                        for (int64_t j = 0; j < g.kernel_width; j++) {
                            const int64_t y = oy * g.stride - g.padding + i;
                            const int64_t xx = ox * g.stride - g.padding + j;
                            const bool inside = y >= 0 && y < g.height && xx >= 0 && xx < g.width;
                            const double expected =
                                inside ? x[((n * g.height + y) * g.width + xx) * g.channels + ch]
                                       : 0.0;
                            const int64_t at =
                                ((n * g.out_height + oy) * g.out_width + ox) * patch +
                                (i * g.kernel_width + j) * g.channels + ch;
                            wrong += cols[at] != expected;
                        }
    CHECK(wrong == 0);
    /* average pooling (padding 0, square windows) */
    if (g.padding == 0 && g.kernel_height == g.kernel_width) {
        const int64_t outputs = images * g.out_height * g.out_width * g.channels;
        cpu->ops->pool_forward(cpu, false, &g, x, cols, images);
        for (int64_t i = 0; i < outputs; i++)
            c[i] = random_uniform(-1, 1);
        cpu->ops->pool_backward(cpu, false, &g, x, c, back, images);
        const double pooled = dot(cols, c, outputs), spread = dot(x, back, inputs);
        CHECK(fabs(pooled - spread) <= 1e-12 * fmax(1, fabs(pooled)));
    }
    /* transpose: (3, rows, cols) and back */
    const int64_t rows = g.kernel_height, cols_ = g.channels * g.kernel_width;
    cpu->ops->transpose(cpu, x, cols, 3, rows, cols_);
    int64_t misplaced = 0;
    for (int64_t b = 0; b < 3; b++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t col = 0; col < cols_; col++)
                misplaced += cols[(b * cols_ + col) * rows + r] != x[(b * rows + r) * cols_ + col];
    CHECK(misplaced == 0);
done:
    free(x);
    free(back);
    free(c);
    free(cols);
}

static ax_status conv_net(const char *layers, ax_device device, ax_precision precision,
                          ax_net **net)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = 7 * 6 * 2;
    config.input_shape[0] = 7, config.input_shape[1] = 6, config.input_shape[2] = 2;
    config.precision = precision;
    config.device = device;
    ax_status status = ax_layers_parse(layers, &config);
    if (status == AX_STATUS_OK)
        status = ax_net_create(&config, net);
    ax_net_config_release(&config);
    return status;
}

static void check_devices(void)
{
    const ax_device plain = {.backend = "fake_plain", .index = 0};
    const ax_device fake = {.backend = "fake", .index = 1};
    ax_net *net = NULL;
    CHECK_FAILS(conv_net("conv:3x3x3/p1:tanh,4:softmax", plain, AX_PRECISION_F64, &net),
                AX_STATUS_UNSUPPORTED,
                "layer 1 (conv:3x3x3/p1:tanh) is not supported on device fake_plain:0: its "
                "backend has no im2col, col2im and transpose yet");
    CHECK(net == NULL);
    CHECK_OK(conv_net("16:relu,4:softmax", plain, AX_PRECISION_F32, &net)); /* dense runs */
    ax_net_free(net);
    net = NULL;
    CHECK_FAILS(conv_net("avgpool:2,4:softmax", plain, AX_PRECISION_F32, &net),
                AX_STATUS_UNSUPPORTED,
                "layer 1 (avgpool:2) is not supported on device fake_plain:0: its backend has no "
                "pool_forward and pool_backward yet");

    /* the CPU's code behind the loader: the same bits */
    const char *layers = "conv:3x3x3/s2/p1:relu,maxpool:2/s1,avgpool:2/s1,4:softmax";
    ax_net *cpu = NULL, *plugin = NULL;
    ax_dataset *data = NULL;
    CHECK_OK(conv_net(layers, ax_device_cpu(), AX_PRECISION_F32, &cpu));
    CHECK_OK(conv_net(layers, fake, AX_PRECISION_F32, &plugin));
    CHECK_OK(ax_dataset_create(6, 84, 4, 0, &data));
    if (cpu && plugin && data) {
        float *x = ax_dataset_features_data(data);
        for (int64_t i = 0; i < 6 * 84; i++)
            x[i] = (float)random_uniform(-1, 1);
        for (int64_t r = 0; r < 6; r++)
            ax_dataset_labels_data(data)[r] = (int32_t)(r % 4);
        const int64_t count = ax_net_parameter_count(cpu);
        double *a = malloc((size_t)count * sizeof *a), *b = malloc((size_t)count * sizeof *b);
        double loss_a = NAN, loss_b = NAN;
        CHECK(a && b);
        if (a && b) {
            CHECK_OK(ax_net_loss_gradient(cpu, data, 0, 6, NULL, &loss_a, a));
            CHECK_OK(ax_net_loss_gradient(plugin, data, 0, 6, NULL, &loss_b, b));
            CHECK(loss_a == loss_b && memcmp(a, b, (size_t)count * sizeof *a) == 0);
        }
        free(a);
        free(b);
    }
    ax_dataset_free(data);
    ax_net_free(cpu);
    ax_net_free(plugin);
}

/* The library refuses bad image settings itself, naming what is wrong, and
 * writes a layout back as it was parsed. */
static void check_library_refusals(void)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_create(2, 84, 3, 0, &data));
    if (data) {
        int64_t shape[3] = {1, 1, 1};
        CHECK(!ax_dataset_image_shape(data, shape) && shape[0] == 0);
        CHECK_FAILS(ax_dataset_set_image_shape(data, (int64_t[3]){7, 6, 3}), AX_STATUS_BAD_ARGUMENT,
                    "an image shape of 7x6x3 does not hold its 84 features per row");
        CHECK_FAILS(ax_dataset_set_image_shape(data, (int64_t[3]){-7, -6, 2}), AX_STATUS_BAD_ARGUMENT,
                    "does not hold its 84 features per row");
        CHECK_OK(ax_dataset_set_image_shape(data, (int64_t[3]){7, 6, 2}));
        CHECK(ax_dataset_image_shape(data, shape) && shape[0] == 7 && shape[1] == 6 && shape[2] == 2);
        ax_dataset_free(data);
    }
    ax_net_config config = ax_net_defaults();
    ax_net *net = NULL;
    config.input_width = 84;
    config.input_shape[0] = 7, config.input_shape[1] = 6, config.input_shape[2] = 3;
    CHECK_OK(ax_layers_parse("conv:2x3x3,4:softmax", &config));
    CHECK_FAILS(ax_net_create(&config, &net), AX_STATUS_BAD_ARGUMENT,
                "the input image shape 7x6x3 (height x width x channels) does not hold the input "
                "width of 84 values");
    config.input_shape[2] = 2;
    CHECK_OK(ax_layers_parse("conv:2x8x3,4:softmax", &config));
    CHECK_FAILS(ax_net_create(&config, &net), AX_STATUS_BAD_ARGUMENT,
                "layer 1 (conv:2x8x3:relu): its 8x3 kernel is larger than its input, 7x6x2");
    CHECK_OK(ax_layers_parse("avgpool:2/s3,maxpool:3,4:softmax", &config));
    CHECK_FAILS(ax_net_create(&config, &net), AX_STATUS_BAD_ARGUMENT,
                "layer 2 (maxpool:3): its 3x3 window leaves nothing of its input, 2x2x2");
    static const struct {
        const char *layers, *message;
    } bad[] = {
        {"conv:,4", "'conv:' ends too early; expected conv:FILTERSxHEIGHTxWIDTH"},
        {"convolution:3x3x3,4", "'convolution:3x3x3' stops fitting at character 5 ('olution:3x3x3')"},
        {"conv:0x3x3,4", "('conv:0x3x3'): 0 filters is out of range (1 to 16777216)"},
        {"conv:3x3x3/s0,4", "stride 0 is out of range (1 to 1024)"},
        {"conv:3x3x3/p1/s2,4", "stops fitting at character 14 ('/s2')"},
        {"conv:3x2000x3,4", "kernel 2000x3 is out of range (sides 1 to 1024)"},
        {"conv:3x3x3:swish,4", "layer 1 ('conv:3x3x3:swish')"},
        {"maxpool:0,4", "window 0 or stride 0 is out of range (1 to 1024)"},
        {"avgpool:2/s,4", "'avgpool:2/s' ends too early; expected avgpool:WINDOW[/sSTRIDE]"},
        {"avgpool:2x2,4", "stops fitting at character 10 ('x2')"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_FAILS(ax_layers_parse(bad[i].layers, &config), AX_STATUS_BAD_ARGUMENT,
                    bad[i].message);
    const char *layout = "conv:32x5x5:relu,maxpool:2,avgpool:3/s2,conv:8x3x3/s2/p1:tanh,10:softmax";
    config.input_width = 784;
    config.input_shape[0] = 28, config.input_shape[1] = 28, config.input_shape[2] = 1;
    CHECK_OK(ax_layers_parse(layout, &config));
    char text[256];
    ax_layers_format(&config, text, sizeof text);
    CHECK(strcmp(text, "28x28x1-conv:32x5x5:relu-maxpool:2-avgpool:3/s2-conv:8x3x3/s2/p1:tanh-"
                       "10:softmax") == 0);
    CHECK_OK(ax_net_create(&config, &net));
    if (net) { /* 28 -> 24 -> 12 -> 5 -> 3: 3x3x8 into the dense layer */
        CHECK(ax_net_layer_width(net, 3) == 72);
        CHECK(ax_net_parameter_count(net) == 32 * 25 + 32 + 8 * 32 * 9 + 8 + 72 * 10 + 10);
    }
    ax_net_free(net);
    ax_net_config_release(&config);
}

int main(void)
{
    setenv("AXON_FAKE_PLUGIN", AXON_TEST_PLUGIN, 1);
    setenv("AXON_FAKE_PLAIN_PLUGIN", AXON_TEST_PLUGIN, 1);
    ax_backend *cpu = ax_backend_cpu_create(AX_PRECISION_F64);
    CHECK(cpu != NULL);
    if (cpu) {
        /* height, width, channels, kernel h, w, stride, padding */
        const ax_window_geometry shapes[] = {
            {7, 6, 2, 3, 3, 1, 1, 0, 0}, {9, 4, 1, 5, 5, 2, 2, 0, 0}, {5, 5, 3, 3, 2, 3, 1, 0, 0},
            {8, 7, 4, 2, 2, 2, 0, 0, 0}, {6, 9, 2, 3, 3, 2, 0, 0, 0}, {4, 4, 5, 4, 1, 1, 0, 0, 0},
            {8, 6, 3, 2, 2, 2, 0, 0, 0}, /* windows tiling the image */
        };
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            check_adjoints(cpu, shapes[s], 3);
        cpu->ops->destroy(cpu);
    }
    check_devices();
    check_library_refusals();
    return test_finish("test_conv_backend");
}
