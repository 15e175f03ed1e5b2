/* test_chunked.c: a full batch computed a chunk at a time
 * (ax_net_chunked_loss_gradient, used by training for full batches larger
 * than a chunk) gives the loss and gradient of one pass over all rows.
 *
 * For each loss (softmax + cross-entropy, sigmoid + binary cross-entropy,
 * tanh + MSE), with L2 and with dropout, float64: chunk sizes that divide the
 * rows, that leave a short last chunk, of one row, and of all rows, against
 * ax_net_loss_gradient over all rows, to 1e-12 relative. Dropout masks are
 * keyed by the row's index in the full batch, so chunking does not change
 * them. float32 to 1e-5. Then ax_train with a full batch larger than the
 * training loop's chunk against the same training in one pass, by hand. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/net.h"
#include "test_util.h"

enum { ROWS = 103, INPUTS = 6, OUTPUTS = 3 };

static uint64_t random_state = 11;
static double random_uniform(double low, double high)
{
    return test_random_uniform(&random_state, low, high);
}

static ax_dataset *make_data(int64_t rows, ax_loss loss)
{
    ax_dataset *data = NULL;
    bool labels = loss == AX_LOSS_CROSS_ENTROPY;
    CHECK_OK(ax_dataset_create(rows, INPUTS, labels ? OUTPUTS : 0, labels ? 0 : OUTPUTS, &data));
    float *x = ax_dataset_features_data(data);
    for (int64_t i = 0; i < rows * INPUTS; i++)
        x[i] = (float)random_uniform(-1.0, 1.0);
    if (labels) {
        int32_t *y = ax_dataset_labels_data(data);
        for (int64_t r = 0; r < rows; r++)
            y[r] = (int32_t)(r % OUTPUTS);
    } else {
        float *t = ax_dataset_targets_data(data);
        for (int64_t i = 0; i < rows * OUTPUTS; i++)
            t[i] = (float)(loss == AX_LOSS_BINARY_CROSS_ENTROPY ? (random_uniform(0, 1) > 0.5)
                                                               : random_uniform(-1, 1));
    }
    return data;
}

static ax_net *make_net(ax_loss loss, ax_precision precision)
{
    static const char *layouts[] = {[AX_LOSS_CROSS_ENTROPY] = "5:tanh,4:relu,3:softmax",
                                    [AX_LOSS_BINARY_CROSS_ENTROPY] = "5:sigmoid,4:tanh,3:sigmoid",
                                    [AX_LOSS_MSE] = "5:relu,4:tanh,3:tanh"};
    ax_net_config config = ax_net_defaults();
    config.input_width = INPUTS;
    config.loss = loss;
    config.precision = precision;
    config.seed = 7;
    CHECK_OK(ax_layers_parse(layouts[loss], &config));
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    return net;
}

static double max_relative(const double *a, const double *b, int64_t n)
{
    double scale = 0.0, worst = 0.0;
    for (int64_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(b[i]));
    for (int64_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(a[i] - b[i]) / fmax(scale, 1e-300));
    return worst;
}

static void check_chunks(ax_loss loss, ax_precision precision, double tolerance)
{
    ax_dataset *data = make_data(ROWS, loss);
    ax_net *net = make_net(loss, precision);
    const int64_t n = ax_net_parameter_count(net);
    double *whole = malloc((size_t)n * sizeof *whole), *parts = malloc((size_t)n * sizeof *parts);
    void *accumulator = net->backend->ops->alloc(net->backend, (size_t)n * net->backend->real_size);
    CHECK(whole && parts && accumulator);
    const ax_regularization settings[] = {{.size = sizeof(ax_regularization), .l2 = 0.0},
                                          {.size = sizeof(ax_regularization), .l2 = 0.03},
                                          {.size = sizeof(ax_regularization), .l2 = 0.01, .dropout = 0.3, .dropout_key = 0x5eed}};
    const int64_t chunks[] = {1, 10, 50, 64, 102, ROWS};
    for (size_t s = 0; s < sizeof settings / sizeof *settings; s++) {
        double loss_whole = 0.0;
        CHECK_OK(ax_net_loss_gradient(net, data, 0, ROWS, &settings[s], &loss_whole, whole));
        for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
            CHECK_OK(ax_net_reserve(net, chunks[c]));
            double loss_parts =
                ax_net_chunked_loss_gradient(net, data, chunks[c], &settings[s], accumulator);
            net->backend->ops->download_f64(net->backend, parts, net->gradients, n);
            double loss_error = fabs(loss_parts - loss_whole) / fabs(loss_whole);
            double gradient_error = max_relative(parts, whole, n);
            if (loss_error > tolerance || gradient_error > tolerance)
                printf("FAIL loss %d %s l2 %g dropout %g chunk %lld: loss error %.2e, gradient "
                       "error %.2e\n",
                       (int)loss, precision == AX_PRECISION_F64 ? "f64" : "f32", settings[s].l2,
                       settings[s].dropout, (long long)chunks[c], loss_error, gradient_error);
            CHECK(loss_error <= tolerance);
            CHECK(gradient_error <= tolerance);
        }
    }
    net->backend->ops->free(net->backend, accumulator);
    free(whole);
    free(parts);
    ax_net_free(net);
    ax_dataset_free(data);
}

/* Full-batch gradient descent through ax_train on more rows than one chunk
 * (the training loop's chunk is 4096 rows) against the same steps taken by
 * hand with one-pass gradients. */
static void check_training(void)
{
    enum { BIG = 9000, EPOCHS = 3 };
    ax_dataset *data = make_data(BIG, AX_LOSS_CROSS_ENTROPY);
    ax_net *trained = make_net(AX_LOSS_CROSS_ENTROPY, AX_PRECISION_F64);
    ax_net *by_hand = make_net(AX_LOSS_CROSS_ENTROPY, AX_PRECISION_F64);
    ax_train_config config = ax_train_defaults();
    config.batch_size = 0;
    config.epochs = EPOCHS;
    config.learning_rate = 0.5;
    config.momentum = 0.0;
    config.l2 = 0.001;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(trained, data, NULL, NULL, &config, &summary));

    const int64_t n = ax_net_parameter_count(by_hand);
    double *w = malloc((size_t)n * sizeof *w), *g = malloc((size_t)n * sizeof *g),
           *result = malloc((size_t)n * sizeof *result);
    CHECK(w && g && result);
    ax_regularization regularization = {.size = sizeof(ax_regularization), .l2 = config.l2};
    for (int e = 0; e < EPOCHS; e++) {
        double loss;
        CHECK_OK(ax_net_loss_gradient(by_hand, data, 0, BIG, &regularization, &loss, g));
        ax_net_parameters_get(by_hand, w);
        for (int64_t i = 0; i < n; i++)
            w[i] -= config.learning_rate * g[i];
        ax_net_parameters_set(by_hand, w);
    }
    ax_net_parameters_get(trained, result);
    double error = max_relative(result, w, n);
    printf("ax_train full batch of %d rows in chunks vs one pass: %.2e relative\n", BIG, error);
    CHECK(error < 1e-12);
    free(w);
    free(g);
    free(result);
    ax_net_free(trained);
    ax_net_free(by_hand);
    ax_dataset_free(data);
}

int main(void)
{
    const ax_loss losses[] = {AX_LOSS_CROSS_ENTROPY, AX_LOSS_BINARY_CROSS_ENTROPY, AX_LOSS_MSE};
    for (size_t i = 0; i < 3; i++) {
        check_chunks(losses[i], AX_PRECISION_F64, 1e-12);
        check_chunks(losses[i], AX_PRECISION_F32, 1e-5);
    }
    check_training();
    return test_finish("test_chunked");
}
