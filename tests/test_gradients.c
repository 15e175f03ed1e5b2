/* test_gradients.c: proves ax_net_loss_gradient right, through the public
 * API only.
 *
 * - Every gradient is compared with central finite differences of the loss
 *   in float64, for each output/loss pair (softmax + cross-entropy, sigmoid +
 *   binary cross-entropy, identity/sigmoid/tanh/relu + MSE) times each hidden
 *   activation (identity, sigmoid, tanh, relu), on a 5 -> 4 -> 3 -> 3 net,
 *   with and without L2, with dropout (a fixed key makes the loss a fixed
 *   function of the parameters) and over several row ranges of a dataset.
 * - Every loss is compared with an independent float64 forward pass written
 *   here from the definitions in axon.h (the parameter layout, the losses,
 *   l2/2 ||W||^2), and ax_net_predict with the same pass; one cross-entropy
 *   is also computed by hand from ax_net_predict's probabilities.
 * - ReLU kinks would make finite differences meaningless, so the test checks
 *   that no ReLU pre-activation lies within KINK_MARGIN of zero, under every
 *   possible dropout mask, before trusting them (a failure there means: pick
 *   another seed, not that the library is wrong).
 * - float32 networks must give the float64 gradient to 1e-3 relative. */
#include <float.h>
#include <stdint.h>

#include "test_util.h"

enum { INPUTS = 5, HIDDEN1 = 4, HIDDEN2 = 3, OUTPUTS = 3, DATA_ROWS = 12, LAYERS = 3 };
static const int64_t widths[LAYERS + 1] = {INPUTS, HIDDEN1, HIDDEN2, OUTPUTS};
enum { PARAMETERS = (INPUTS + 1) * HIDDEN1 + (HIDDEN1 + 1) * HIDDEN2 + (HIDDEN2 + 1) * OUTPUTS };
enum { HIDDEN_UNITS = HIDDEN1 + HIDDEN2 };

#define FD_STEP 1e-6          /* relative step of the central differences */
#define FD_TOLERANCE 1e-6     /* max |g - fd| / max(1, |g|, |fd|) */
#define LOSS_TOLERANCE 1e-12  /* float64 loss vs the reference pass, relative */
#define F32_TOLERANCE 1e-3    /* float32 gradient vs float64, relative to max |g| */
#define KINK_MARGIN 1e-4      /* smallest |pre-activation| of a ReLU unit allowed */

typedef struct combination {
    ax_activation hidden;
    ax_activation output;
    ax_loss loss;
} combination;

typedef struct variant {
    const char *name;
    double l2;
    double dropout;
    int64_t first, rows;
} variant;

static const char *activation_names[] = {"identity", "sigmoid", "tanh", "relu", "softmax"};

/* splitmix64: the test's own random numbers, independent of the library's.
 * Seed 4 is the first for which no ReLU pre-activation comes within
 * KINK_MARGIN of zero under any dropout mask (checked below, every run). */
static uint64_t random_state = 4;

/* The largest errors seen, for the summary line. */
static double worst_loss_error, worst_float32_error;
static double random_uniform(double low, double high)
{
    return test_random_uniform(&random_state, low, high);
}

static double activate(ax_activation activation, double z)
{
    switch (activation) {
    case AX_ACT_SIGMOID: return 1.0 / (1.0 + exp(-z));
    case AX_ACT_TANH: return tanh(z);
    case AX_ACT_RELU: return z > 0 ? z : 0;
    default: return z;
    }
}

/* The reference forward pass of one row x (INPUTS) in float64. keep
 * (HIDDEN_UNITS, nullable) multiplies the hidden outputs (a dropout mask).
 * Writes the output pre-activations z (OUTPUTS) and activations y (OUTPUTS),
 * and lowers *min_relu by the |pre-activation| of every ReLU unit. */
static void reference_row(const combination *c, const double *params, const double *x,
                          const double *keep, double *z, double *y, double *min_relu)
{
    double a[INPUTS > HIDDEN1 ? INPUTS : HIDDEN1], next[HIDDEN1];
    int64_t offset = 0, keep_offset = 0;
    for (int64_t i = 0; i < INPUTS; i++) a[i] = x[i];
    for (int layer = 0; layer < LAYERS; layer++) {
        int64_t in = widths[layer], out = widths[layer + 1];
        bool last = layer == LAYERS - 1;
        ax_activation activation = last ? c->output : c->hidden;
        const double *w = params + offset, *b = params + offset + out * in;
        for (int64_t o = 0; o < out; o++) {
            double sum = b[o];
            for (int64_t i = 0; i < in; i++) sum += w[o * in + i] * a[i];
            if (activation == AX_ACT_RELU && fabs(sum) < *min_relu) *min_relu = fabs(sum);
            if (last) z[o] = sum;
            next[o] = activate(activation, sum);
        }
        offset += out * in + out;
        if (last) {
            if (activation == AX_ACT_SOFTMAX) {
                double top = z[0], total = 0;
                for (int64_t o = 1; o < out; o++) top = fmax(top, z[o]);
                for (int64_t o = 0; o < out; o++) total += exp(z[o] - top);
                for (int64_t o = 0; o < out; o++) y[o] = exp(z[o] - top) / total;
            } else {
                for (int64_t o = 0; o < out; o++) y[o] = next[o];
            }
        } else {
            for (int64_t o = 0; o < out; o++)
                a[o] = next[o] * (keep ? keep[keep_offset + o] : 1.0);
            keep_offset += out;
        }
    }
}

/* The loss of one row from its output pre-activations and activations, by
 * the definitions in axon.h (before averaging over rows). */
static double reference_row_loss(const combination *c, const double *z, const double *y,
                                 int32_t label, const float *target)
{
    double loss = 0;
    if (c->loss == AX_LOSS_CROSS_ENTROPY) {
        double top = z[0], total = 0;
        for (int o = 1; o < OUTPUTS; o++) top = fmax(top, z[o]);
        for (int o = 0; o < OUTPUTS; o++) total += exp(z[o] - top);
        loss = -(z[label] - top - log(total));
    } else if (c->loss == AX_LOSS_BINARY_CROSS_ENTROPY) {
        /* log(sigmoid(z)) = -log1p(exp(-z)), log(1 - sigmoid(z)) = -log1p(exp(z)) */
        for (int o = 0; o < OUTPUTS; o++)
            loss += target[o] * log1p(exp(-z[o])) + (1 - target[o]) * log1p(exp(z[o]));
    } else {
        for (int o = 0; o < OUTPUTS; o++) loss += (y[o] - target[o]) * (y[o] - target[o]) / OUTPUTS;
    }
    return loss;
}

static double l2_term(const double *params, double l2)
{
    double sum = 0;
    int64_t offset = 0;
    for (int layer = 0; layer < LAYERS; layer++) {
        int64_t count = widths[layer] * widths[layer + 1];
        for (int64_t i = 0; i < count; i++) sum += params[offset + i] * params[offset + i];
        offset += count + widths[layer + 1];
    }
    return 0.5 * l2 * sum;
}

/* The reference loss over rows [first, first + rows) without dropout. */
static double reference_loss(const combination *c, const double *params, ax_dataset *data,
                             int64_t first, int64_t rows, double l2, double *min_relu)
{
    const float *features = ax_dataset_features_data(data);
    const int32_t *labels = ax_dataset_labels_data(data);
    const float *targets = ax_dataset_targets_data(data);
    double total = 0;
    for (int64_t r = first; r < first + rows; r++) {
        double x[INPUTS], z[OUTPUTS], y[OUTPUTS];
        for (int i = 0; i < INPUTS; i++) x[i] = features[r * INPUTS + i];
        reference_row(c, params, x, NULL, z, y, min_relu);
        total += reference_row_loss(c, z, y, labels ? labels[r] : 0,
                                    targets ? targets + r * OUTPUTS : NULL);
    }
    return total / (double)rows + l2_term(params, l2);
}

/* The smallest |ReLU pre-activation| over the rows under every dropout mask
 * (all 2^HIDDEN_UNITS of them, kept units scaled by 1/(1 - rate) or by 1), so
 * that whatever mask the key selects, no kink lies near the parameters. */
static double min_relu_any_mask(const combination *c, const double *params, ax_dataset *data,
                                int64_t first, int64_t rows, double rate)
{
    const float *features = ax_dataset_features_data(data);
    double smallest = INFINITY;
    for (int scaled = 0; scaled < 2; scaled++) {
        for (unsigned mask = 0; mask < (1u << HIDDEN_UNITS); mask++) {
            double keep[HIDDEN_UNITS];
            for (int u = 0; u < HIDDEN_UNITS; u++)
                keep[u] = (mask >> u & 1u) ? (scaled ? 1.0 / (1.0 - rate) : 1.0) : 0.0;
            for (int64_t r = first; r < first + rows; r++) {
                double x[INPUTS], z[OUTPUTS], y[OUTPUTS];
                for (int i = 0; i < INPUTS; i++) x[i] = features[r * INPUTS + i];
                reference_row(c, params, x, keep, z, y, &smallest);
            }
        }
    }
    return smallest;
}

static ax_net *make_net(const combination *c, ax_precision precision)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = INPUTS;
    ax_layer_spec layers[LAYERS];
    config.layer_count = LAYERS;
    config.layers = layers;
    for (int layer = 0; layer < LAYERS; layer++)
        layers[layer] = ax_layer_dense(widths[layer + 1], layer == LAYERS - 1 ? c->output : c->hidden);
    config.loss = c->loss;
    config.precision = precision;
    config.seed = 7;
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    if (net) CHECK(ax_net_parameter_count(net) == PARAMETERS);
    return net;
}

static double loss_at(ax_net *net, ax_dataset *data, const variant *v,
                      const ax_regularization *regularization, const double *params)
{
    double loss = NAN;
    ax_net_parameters_set(net, params);
    CHECK_OK(ax_net_loss_gradient(net, data, v->first, v->rows, regularization, &loss, NULL));
    return loss;
}

/* Compares the analytic gradient with central differences; returns the
 * worst relative error and reports it when above tolerance. */
static double check_gradient(const combination *c, const variant *v, ax_net *net,
                             ax_dataset *data, const double *params)
{
    ax_regularization regularization = {.size = sizeof(ax_regularization), .l2 = v->l2,
                                        .dropout = v->dropout, .dropout_key = 0x5eedULL};
    double gradient[PARAMETERS], probe[PARAMETERS], loss = NAN, loss_again = NAN;
    ax_net_parameters_set(net, params);
    CHECK_OK(ax_net_loss_gradient(net, data, v->first, v->rows, &regularization, &loss, gradient));
    /* The loss is the same without a gradient asked for, and with the same key. */
    CHECK_OK(ax_net_loss_gradient(net, data, v->first, v->rows, &regularization, &loss_again, NULL));
    CHECK(loss == loss_again);
    memcpy(probe, params, sizeof probe);
    double worst = 0;
    int64_t worst_index = 0;
    double worst_g = 0, worst_fd = 0;
    for (int64_t i = 0; i < PARAMETERS; i++) {
        double h = FD_STEP * fmax(1.0, fabs(params[i]));
        probe[i] = params[i] + h;
        double up = loss_at(net, data, v, &regularization, probe);
        probe[i] = params[i] - h;
        double down = loss_at(net, data, v, &regularization, probe);
        probe[i] = params[i];
        double fd = (up - down) / ((params[i] + h) - (params[i] - h));
        double error = fabs(gradient[i] - fd) / fmax(1.0, fmax(fabs(gradient[i]), fabs(fd)));
        if (!(error <= worst)) {
            worst = error;
            worst_index = i;
            worst_g = gradient[i];
            worst_fd = fd;
        }
    }
    ax_net_parameters_set(net, params);
    if (!(worst <= FD_TOLERANCE)) {
        fprintf(stderr,
                "gradient %s hidden, %s output, %s: parameter %lld: analytic %.17g, finite "
                "difference %.17g, relative error %.3g > %g\n",
                activation_names[c->hidden], activation_names[c->output], v->name,
                (long long)worst_index, worst_g, worst_fd, worst, FD_TOLERANCE);
        test_failures++;
    }
    return worst;
}

/* Loss and predictions against the reference pass (no dropout). */
static void check_loss(const combination *c, const variant *v, ax_net *net, ax_dataset *data,
                       const double *params)
{
    ax_regularization regularization = {.size = sizeof(ax_regularization), .l2 = v->l2};
    double loss = NAN, min_relu = INFINITY;
    ax_net_parameters_set(net, params);
    CHECK_OK(ax_net_loss_gradient(net, data, v->first, v->rows, &regularization, &loss, NULL));
    double expected = reference_loss(c, params, data, v->first, v->rows, v->l2, &min_relu);
    double loss_error = fabs(loss - expected) / fmax(1.0, fabs(expected));
    worst_loss_error = fmax(worst_loss_error, loss_error);
    if (!(loss_error <= LOSS_TOLERANCE)) {
        fprintf(stderr, "loss %s hidden, %s output, %s: axon %.17g, reference %.17g\n",
                activation_names[c->hidden], activation_names[c->output], v->name, loss, expected);
        test_failures++;
    }
    if (!(min_relu >= KINK_MARGIN)) {
        fprintf(stderr, "%s hidden, %s output, %s: a ReLU pre-activation is %.3g from its kink: "
                "choose another seed for the test data\n", activation_names[c->hidden],
                activation_names[c->output], v->name, min_relu);
        test_failures++;
    }

    /* ax_net_predict returns float outputs of the same pass. */
    const float *features = ax_dataset_features_data(data);
    float outputs[DATA_ROWS * OUTPUTS];
    CHECK_OK(ax_net_predict(net, features, DATA_ROWS, outputs));
    double worst = 0;
    for (int64_t r = 0; r < DATA_ROWS; r++) {
        double x[INPUTS], z[OUTPUTS], y[OUTPUTS], ignored = INFINITY;
        for (int i = 0; i < INPUTS; i++) x[i] = features[r * INPUTS + i];
        reference_row(c, params, x, NULL, z, y, &ignored);
        for (int o = 0; o < OUTPUTS; o++)
            worst = fmax(worst, fabs(outputs[r * OUTPUTS + o] - y[o]) / fmax(1.0, fabs(y[o])));
    }
    if (!(worst <= 2 * FLT_EPSILON)) {
        fprintf(stderr, "predict %s hidden, %s output: off the reference by %.3g\n",
                activation_names[c->hidden], activation_names[c->output], worst);
        test_failures++;
    }
}

/* float32 gives the float64 loss and gradient at the same (float) parameters. */
static void check_float32(const combination *c, const variant *v, ax_net *net64,
                          ax_dataset *data, const double *params)
{
    ax_net *net32 = make_net(c, AX_PRECISION_F32);
    if (!net32) return;
    ax_regularization regularization = {.size = sizeof(ax_regularization), .l2 = v->l2};
    double g64[PARAMETERS], g32[PARAMETERS], back[PARAMETERS], loss64 = NAN, loss32 = NAN;
    ax_net_parameters_set(net32, params);
    ax_net_parameters_get(net32, back);
    CHECK(memcmp(back, params, sizeof back) == 0); /* params are floats: exact round trip */
    ax_net_parameters_set(net64, params);
    CHECK_OK(ax_net_loss_gradient(net64, data, v->first, v->rows, &regularization, &loss64, g64));
    CHECK_OK(ax_net_loss_gradient(net32, data, v->first, v->rows, &regularization, &loss32, g32));
    double largest = 0, worst = 0;
    for (int64_t i = 0; i < PARAMETERS; i++) largest = fmax(largest, fabs(g64[i]));
    for (int64_t i = 0; i < PARAMETERS; i++) worst = fmax(worst, fabs(g32[i] - g64[i]));
    worst_float32_error = fmax(worst_float32_error, worst / fmax(largest, DBL_MIN));
    if (!(worst <= F32_TOLERANCE * largest) || !(fabs(loss32 - loss64) <= 1e-5 * fmax(1.0, fabs(loss64)))) {
        fprintf(stderr, "float32 %s hidden, %s output, %s: gradient off by %.3g (max |g| %.3g), "
                "loss %.17g vs float64 %.17g\n", activation_names[c->hidden],
                activation_names[c->output], v->name, worst, largest, loss32, loss64);
        test_failures++;
    }
    ax_net_free(net32);
}

/* Dropout must really act: another key gives another loss, and the loss
 * differs from the one without dropout. */
static void check_dropout_acts(ax_net *net, ax_dataset *data, const variant *v, const double *params)
{
    ax_regularization none = ax_regularization_defaults();
    none.l2 = v->l2;
    ax_regularization key1 = none, key2 = none;
    key1.dropout = key2.dropout = v->dropout;
    key1.dropout_key = 0x5eedULL;
    key2.dropout_key = 0xfeedULL;
    double loss_none = NAN, loss1 = NAN, loss2 = NAN;
    ax_net_parameters_set(net, params);
    CHECK_OK(ax_net_loss_gradient(net, data, v->first, v->rows, &none, &loss_none, NULL));
    CHECK_OK(ax_net_loss_gradient(net, data, v->first, v->rows, &key1, &loss1, NULL));
    CHECK_OK(ax_net_loss_gradient(net, data, v->first, v->rows, &key2, &loss2, NULL));
    CHECK(loss1 != loss_none);
    CHECK(loss1 != loss2);
}

/* Cross-entropy by hand from ax_net_predict's probabilities. */
static void check_cross_entropy_by_hand(ax_dataset *data)
{
    combination c = {AX_ACT_TANH, AX_ACT_SOFTMAX, AX_LOSS_CROSS_ENTROPY};
    ax_net *net = make_net(&c, AX_PRECISION_F64);
    if (!net) return;
    float outputs[DATA_ROWS * OUTPUTS];
    const int32_t *labels = ax_dataset_labels_data(data);
    CHECK_OK(ax_net_predict(net, ax_dataset_features_data(data), DATA_ROWS, outputs));
    double by_hand = 0, loss = NAN;
    for (int r = 0; r < DATA_ROWS; r++) {
        double sum = 0;
        for (int o = 0; o < OUTPUTS; o++) sum += outputs[r * OUTPUTS + o];
        CHECK_NEAR(sum, 1.0, 1e-6); /* probabilities */
        by_hand -= log(outputs[r * OUTPUTS + labels[r]]);
    }
    by_hand /= DATA_ROWS;
    ax_regularization none = ax_regularization_defaults();
    CHECK_OK(ax_net_loss_gradient(net, data, 0, DATA_ROWS, &none, &loss, NULL));
    CHECK_NEAR(loss, by_hand, 1e-6); /* the probabilities passed through float */
    ax_net_free(net);
}

static void fill_data(ax_dataset *classes, ax_dataset *values)
{
    float *x1 = ax_dataset_features_data(classes), *x2 = ax_dataset_features_data(values);
    int32_t *labels = ax_dataset_labels_data(classes);
    for (int64_t i = 0; i < DATA_ROWS * INPUTS; i++) x1[i] = x2[i] = (float)random_uniform(-1.5, 1.5);
    for (int64_t r = 0; r < DATA_ROWS; r++) labels[r] = (int32_t)(r % OUTPUTS);
}

/* Targets suited to each output: 0/1 multi-labels for binary cross-entropy,
 * values in the output's range for MSE. */
static void fill_targets(ax_dataset *values, ax_activation output, ax_loss loss)
{
    float *t = ax_dataset_targets_data(values);
    for (int64_t i = 0; i < DATA_ROWS * OUTPUTS; i++) {
        double u = random_uniform(0, 1);
        if (loss == AX_LOSS_BINARY_CROSS_ENTROPY) t[i] = u < 0.5f ? 0.0f : 1.0f;
        else if (output == AX_ACT_SIGMOID) t[i] = (float)(0.1 + 0.8 * u);
        else if (output == AX_ACT_TANH) t[i] = (float)(1.6 * u - 0.8);
        else if (output == AX_ACT_RELU) t[i] = (float)(2 * u);
        else t[i] = (float)(4 * u - 2);
    }
}

/* Parameters of moderate size, float-representable so that the float32 net
 * holds exactly the same ones. */
static void fill_params(double *params)
{
    int64_t offset = 0;
    for (int layer = 0; layer < LAYERS; layer++) {
        int64_t in = widths[layer], out = widths[layer + 1];
        for (int64_t i = 0; i < out * in; i++) params[offset + i] = (float)random_uniform(-1, 1);
        for (int64_t i = 0; i < out; i++) params[offset + out * in + i] = (float)random_uniform(-0.5, 0.5);
        offset += out * in + out;
    }
}

int main(void)
{
    static const combination outputs[] = {
        {AX_ACT_IDENTITY, AX_ACT_SOFTMAX, AX_LOSS_CROSS_ENTROPY},
        {AX_ACT_IDENTITY, AX_ACT_SIGMOID, AX_LOSS_BINARY_CROSS_ENTROPY},
        {AX_ACT_IDENTITY, AX_ACT_IDENTITY, AX_LOSS_MSE},
        {AX_ACT_IDENTITY, AX_ACT_SIGMOID, AX_LOSS_MSE},
        {AX_ACT_IDENTITY, AX_ACT_TANH, AX_LOSS_MSE},
        {AX_ACT_IDENTITY, AX_ACT_RELU, AX_LOSS_MSE},
    };
    static const ax_activation hidden[] = {AX_ACT_IDENTITY, AX_ACT_SIGMOID, AX_ACT_TANH, AX_ACT_RELU};
    static const variant variants[] = {
        {"rows 3..9", 0, 0, 3, 7},
        {"l2 0.1", 0.1, 0, 3, 7},
        {"dropout 0.3", 0, 0.3, 3, 7},
        {"l2 0.1 and dropout 0.3", 0.1, 0.3, 0, 7},
        {"all 12 rows", 0, 0, 0, DATA_ROWS},
        {"last row alone", 0, 0, DATA_ROWS - 1, 1},
    };
    const int variant_count = (int)(sizeof variants / sizeof variants[0]);

    ax_dataset *classes = NULL, *values = NULL;
    CHECK_OK(ax_dataset_create(DATA_ROWS, INPUTS, OUTPUTS, 0, &classes));
    CHECK_OK(ax_dataset_create(DATA_ROWS, INPUTS, 0, OUTPUTS, &values));
    if (!classes || !values) return test_finish("test_gradients");
    fill_data(classes, values);

    int checked = 0;
    double worst_overall = 0;
    for (size_t o = 0; o < sizeof outputs / sizeof outputs[0]; o++) {
        for (size_t h = 0; h < sizeof hidden / sizeof hidden[0]; h++) {
            combination c = outputs[o];
            c.hidden = hidden[h];
            ax_dataset *data = c.loss == AX_LOSS_CROSS_ENTROPY ? classes : values;
            if (data == values) fill_targets(values, c.output, c.loss);
            double params[PARAMETERS], back[PARAMETERS];
            fill_params(params);
            ax_net *net = make_net(&c, AX_PRECISION_F64);
            if (!net) continue;
            ax_net_parameters_set(net, params);
            ax_net_parameters_get(net, back);
            CHECK(memcmp(back, params, sizeof back) == 0);
            for (int v = 0; v < variant_count; v++) {
                const variant *vt = &variants[v];
                if (vt->dropout > 0) {
                    double margin = min_relu_any_mask(&c, params, data, vt->first, vt->rows, vt->dropout);
                    if (!(margin >= KINK_MARGIN)) {
                        fprintf(stderr, "%s hidden, %s output, %s: under some dropout mask a ReLU "
                                "pre-activation is %.3g from its kink: choose another seed\n",
                                activation_names[c.hidden], activation_names[c.output], vt->name, margin);
                        test_failures++;
                    }
                    check_dropout_acts(net, data, vt, params);
                } else {
                    check_loss(&c, vt, net, data, params);
                    check_float32(&c, vt, net, data, params);
                }
                worst_overall = fmax(worst_overall, check_gradient(&c, vt, net, data, params));
                checked++;
            }
            ax_net_free(net);
        }
    }
    check_cross_entropy_by_hand(classes);
    printf("%d gradients checked against finite differences: worst relative error %.3g "
           "(tolerance %g); losses vs the reference pass: %.3g (tolerance %g); float32 vs "
           "float64 gradients: %.3g (tolerance %g)\n", checked, worst_overall, FD_TOLERANCE,
           worst_loss_error, LOSS_TOLERANCE, worst_float32_error, F32_TOLERANCE);
    ax_dataset_free(classes);
    ax_dataset_free(values);
    return test_finish("test_gradients");
}
