/* test_conv_gradients.c: proves the gradients of the convolution and
 * pooling layers right, through the public API only, against central finite
 * differences of the loss in float64 (as test_gradients.c does for dense
 * layers).
 *
 * Each case is a small network over odd-sized images (7x6x2, 5x5x3, 9x4x1),
 * with strides 1 to 3, paddings 0 to 2, rectangular kernels, overlapping
 * and non-overlapping pooling windows (some tiling their input exactly), every kind first and not first (so
 * that each kind's input gradient is used), and each activation, under
 * softmax + cross-entropy and identity + MSE, plain, with L2, and with
 * dropout (a fixed key makes the loss a fixed function of the parameters).
 * Finite differences are meaningless at ReLU kinks and at ties of a max
 * pooling window; with these seeds no pre-activation or window is within
 * reach of the step (a failure naming a max-pool or ReLU case whose error is
 * near 1 means: pick another seed).
 *
 * Also: float32 networks give the float64 gradient to 1e-3 relative, and
 * the loss and gradient do not depend on how the rows are grouped
 * (ax_net_loss_gradient over all rows equals the row-weighted mean of two
 * halves), nor on whether a batch's convolution columns fit one group of
 * images (check_groups). */
#include <stdint.h>

#include "test_util.h"

#define FD_STEP 1e-6
#define FD_TOLERANCE 1e-6
#define F32_TOLERANCE 1e-3

enum { ROWS = 5, CLASSES = 4 };

typedef struct conv_case {
    const char *layers;
    int64_t shape[3]; /* height, width, channels */
    bool regression;  /* identity outputs + MSE, else softmax + cross-entropy */
} conv_case;

static const conv_case cases[] = {
    {"conv:3x3x3/p1:tanh,maxpool:2,4:softmax", {7, 6, 2}, false},
    {"conv:2x3x2/s2:sigmoid,avgpool:2/s1,4:softmax", {7, 6, 2}, false},
    {"conv:4x5x5/s2/p2:tanh,conv:3x2x2/p1:sigmoid,avgpool:3/s2,3:identity", {9, 4, 1}, true},
    {"maxpool:3/s2,conv:2x1x1:identity,4:softmax", {7, 6, 2}, false},
    {"avgpool:2/s1,conv:3x3x2/s3/p1:tanh,maxpool:2/s1,3:identity", {5, 5, 3}, true},
    {"conv:3x3x3/s1/p2:relu,maxpool:3/s2,5:tanh,4:softmax", {5, 5, 3}, false},
    {"conv:2x4x1/s1/p0:identity,maxpool:2/s1,avgpool:2,4:softmax", {9, 4, 1}, false},
    /* windows that tile their input exactly (the kernels' no-zeroing path) */
    {"conv:3x3x3/p1:tanh,maxpool:2,conv:2x3x3/p1:sigmoid,avgpool:2,4:softmax", {8, 8, 2}, false},
};

typedef struct variant {
    const char *name;
    double l2, dropout;
} variant;

static const variant variants[] = {{"plain", 0, 0}, {"l2", 0.05, 0}, {"dropout", 0, 0.25}};

static uint64_t random_state = 11;
static double random_uniform(double low, double high)
{
    return test_random_uniform(&random_state, low, high);
}

static ax_net *make_net(const conv_case *c, ax_precision precision)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = c->shape[0] * c->shape[1] * c->shape[2];
    memcpy(config.input_shape, c->shape, sizeof config.input_shape);
    config.precision = precision;
    config.seed = 3;
    ax_net *net = NULL;
    CHECK_OK(ax_layers_parse(c->layers, &config));
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    return net;
}

static ax_dataset *make_data(const conv_case *c, int64_t outputs)
{
    const int64_t features = c->shape[0] * c->shape[1] * c->shape[2];
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_create(ROWS, features, c->regression ? 0 : CLASSES,
                               c->regression ? outputs : 0, &data));
    if (!data)
        return NULL;
    CHECK_OK(ax_dataset_set_image_shape(data, c->shape));
    float *x = ax_dataset_features_data(data);
    for (int64_t i = 0; i < ROWS * features; i++)
        x[i] = (float)random_uniform(-1, 1);
    if (c->regression) {
        float *t = ax_dataset_targets_data(data);
        for (int64_t i = 0; i < ROWS * outputs; i++)
            t[i] = (float)random_uniform(-1, 1);
    } else {
        int32_t *labels = ax_dataset_labels_data(data);
        for (int64_t r = 0; r < ROWS; r++)
            labels[r] = (int32_t)(r % CLASSES);
    }
    return data;
}

static double loss_at(ax_net *net, ax_dataset *data, const ax_regularization *regularization,
                      const double *params)
{
    double loss = NAN;
    ax_net_parameters_set(net, params);
    CHECK_OK(ax_net_loss_gradient(net, data, 0, ROWS, regularization, &loss, NULL));
    return loss;
}

static double check_case(const conv_case *c, const variant *v)
{
    ax_net *net = make_net(c, AX_PRECISION_F64);
    ax_net *net32 = make_net(c, AX_PRECISION_F32);
    if (!net || !net32) {
        ax_net_free(net);
        ax_net_free(net32);
        return INFINITY;
    }
    const int64_t count = ax_net_parameter_count(net);
    const int64_t outputs = ax_net_layer_width(net, ax_net_config_get(net)->layer_count - 1);
    ax_dataset *data = make_data(c, outputs);
    double *params = malloc((size_t)count * sizeof *params);
    double *probe = malloc((size_t)count * sizeof *probe);
    double *gradient = malloc((size_t)count * sizeof *gradient);
    double *gradient32 = malloc((size_t)count * sizeof *gradient32);
    double *half = malloc((size_t)count * sizeof *half);
    CHECK(data && params && probe && gradient && gradient32 && half);
    double worst = INFINITY;
    if (!data || !params || !probe || !gradient || !gradient32 || !half)
        goto done;
    /* biases away from zero too, so that ReLUs are not at their kink */
    for (int64_t i = 0; i < count; i++)
        params[i] = random_uniform(-0.6, 0.6);
    ax_regularization regularization = {.size = sizeof(ax_regularization), .l2 = v->l2,
                                        .dropout = v->dropout,
                                        .dropout_key = 0xc0ffeeULL};
    double loss = NAN;
    ax_net_parameters_set(net, params);
    CHECK_OK(ax_net_loss_gradient(net, data, 0, ROWS, &regularization, &loss, gradient));
    CHECK(isfinite(loss));
    memcpy(probe, params, (size_t)count * sizeof *probe);
    worst = 0;
    int64_t worst_index = -1;
    double worst_g = 0, worst_fd = 0;
    for (int64_t i = 0; i < count; i++) {
        const double h = FD_STEP * fmax(1.0, fabs(params[i]));
        probe[i] = params[i] + h;
        const double up = loss_at(net, data, &regularization, probe);
        probe[i] = params[i] - h;
        const double down = loss_at(net, data, &regularization, probe);
        probe[i] = params[i];
        const double fd = (up - down) / ((params[i] + h) - (params[i] - h));
        const double error = fabs(gradient[i] - fd) / fmax(1.0, fmax(fabs(gradient[i]), fabs(fd)));
        if (!(error <= worst)) {
            worst = error;
            worst_index = i;
            worst_g = gradient[i];
            worst_fd = fd;
        }
    }
    if (!(worst <= FD_TOLERANCE)) {
        fprintf(stderr,
                "%s on %lldx%lldx%lld, %s: parameter %lld: analytic %.17g, finite difference "
                "%.17g, relative error %.3g > %g\n",
                c->layers, (long long)c->shape[0], (long long)c->shape[1], (long long)c->shape[2],
                v->name, (long long)worst_index, worst_g, worst_fd, worst, FD_TOLERANCE);
        test_failures++;
    }

    /* float32 against float64 */
    double loss32 = NAN, largest = 0, error32 = 0;
    ax_net_parameters_set(net32, params);
    CHECK_OK(ax_net_loss_gradient(net32, data, 0, ROWS, &regularization, &loss32, gradient32));
    for (int64_t i = 0; i < count; i++)
        largest = fmax(largest, fabs(gradient[i]));
    for (int64_t i = 0; i < count; i++)
        error32 = fmax(error32, fabs(gradient32[i] - gradient[i]) / fmax(largest, 1e-30));
    if (!(error32 <= F32_TOLERANCE) || !(fabs(loss32 - loss) <= F32_TOLERANCE * fmax(1, fabs(loss)))) {
        fprintf(stderr, "%s, %s: float32 gradient off by %.3g (loss %.9g vs %.9g)\n", c->layers,
                v->name, error32, loss32, loss);
        test_failures++;
    }

    /* two halves of the rows, weighted, give the whole (no dropout: its
     * mask is keyed by the row's place in the pass) */
    if (v->dropout == 0) {
        double loss_a = NAN, loss_b = NAN, error_halves = 0;
        ax_net_parameters_set(net, params);
        CHECK_OK(ax_net_loss_gradient(net, data, 0, 2, &regularization, &loss_a, half));
        for (int64_t i = 0; i < count; i++)
            probe[i] = 2.0 / ROWS * half[i];
        CHECK_OK(ax_net_loss_gradient(net, data, 2, ROWS - 2, &regularization, &loss_b, half));
        for (int64_t i = 0; i < count; i++)
            error_halves = fmax(error_halves,
                                fabs(probe[i] + (ROWS - 2.0) / ROWS * half[i] - gradient[i]));
        CHECK(error_halves <= 1e-12);
        CHECK(fabs(2.0 / ROWS * loss_a + (ROWS - 2.0) / ROWS * loss_b - loss) <= 1e-12);
    }
done:
    free(params);
    free(probe);
    free(gradient);
    free(gradient32);
    free(half);
    ax_dataset_free(data);
    ax_net_free(net);
    ax_net_free(net32);
    return worst;
}

/* A batch whose columns do not fit one group of images (64x64x3 images: 13
 * a group, so 30 rows are three groups, the weight gradient summed over
 * them and the columns made again) against the same rows in parts of 10,
 * each one group (the forward pass's columns reused), which the finite
 * differences above vouch for. */
static void check_groups(void)
{
    const conv_case c = {"conv:4x5x5/p2:tanh,avgpool:4,maxpool:2/s3,3:softmax", {64, 64, 3}, false};
    enum { BATCH = 30, PART = 10 };
    ax_net *net = make_net(&c, AX_PRECISION_F64);
    ax_dataset *data = NULL;
    const int64_t features = 64 * 64 * 3;
    CHECK_OK(ax_dataset_create(BATCH, features, 3, 0, &data));
    if (!net || !data) {
        ax_net_free(net);
        ax_dataset_free(data);
        return;
    }
    CHECK_OK(ax_dataset_set_image_shape(data, c.shape));
    float *x = ax_dataset_features_data(data);
    for (int64_t i = 0; i < BATCH * features; i++)
        x[i] = (float)random_uniform(-1, 1);
    for (int64_t r = 0; r < BATCH; r++)
        ax_dataset_labels_data(data)[r] = (int32_t)(r % 3);
    const int64_t count = ax_net_parameter_count(net);
    double *whole = calloc((size_t)count, sizeof *whole), *parts = calloc((size_t)count, sizeof *parts);
    double *part = calloc((size_t)count, sizeof *part);
    CHECK(whole && parts && part);
    if (whole && parts && part) {
        double loss = NAN, loss_parts = 0, largest = 0, error = 0;
        const ax_regularization l2 = {.size = sizeof(ax_regularization), .l2 = 0.01};
        CHECK_OK(ax_net_loss_gradient(net, data, 0, BATCH, &l2, &loss, whole));
        for (int64_t first = 0; first < BATCH; first += PART) {
            double loss_part = NAN;
            CHECK_OK(ax_net_loss_gradient(net, data, first, PART, &l2, &loss_part, part));
            loss_parts += loss_part * PART / BATCH;
            for (int64_t i = 0; i < count; i++)
                parts[i] += part[i] * PART / BATCH;
        }
        for (int64_t i = 0; i < count; i++) {
            largest = fmax(largest, fabs(whole[i]));
            error = fmax(error, fabs(whole[i] - parts[i]));
        }
        printf("30 rows in 3 groups of columns against 3 parts of one group: gradient %.3g, "
               "loss %.3g\n", error / largest, fabs(loss - loss_parts));
        CHECK(error <= 1e-12 * largest && fabs(loss - loss_parts) <= 1e-12);
    }
    free(whole);
    free(parts);
    free(part);
    ax_dataset_free(data);
    ax_net_free(net);
}

int main(void)
{
    double worst = 0;
    int checked = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
            worst = fmax(worst, check_case(&cases[c], &variants[v]));
            checked++;
        }
    check_groups();
    printf("%d conv/pool networks x variants: worst finite-difference error %.3g (tolerance %g)\n",
           checked, worst, FD_TOLERANCE);
    return test_finish("test_conv_gradients");
}
