/* test_strategies.c: the training strategies of issue 30 against
 * tests/data/strategy_reference.txt (scripts/make_strategy_reference.py,
 * NumPy float64 written from torch 1.13's algorithms):
 * - the L1 penalty's loss and subgradient at the initial weights
 *   (ax_net_loss_gradient), to 1e-12;
 * - 10 full-batch steps of AdamW (torch.optim.AdamW, weight decay on the
 *   weights only) and of SGD with momentum, L1, clip_value and clip_norm,
 *   every step's parameters to 1e-10 (float64);
 * - the refusals: clipping with a line-search optimizer;
 * - dropout per layer: {0, p} gives the bits of the one number p (today's
 *   meaning), inputs dropped change the run, and the gradient with input
 *   and hidden dropout (a fixed mask) equals central differences. */
#include <errno.h>
#include <stdint.h>

#include "test_util.h"

#include "strategy_reference.h"

enum { IN = 3, HID = 4, OUT = 2, ROWS = 6, PARAMS = HID * IN + HID + OUT * HID + OUT, STEPS = 10 };

static float features[ROWS * IN], targets[ROWS * OUT];

static ax_net *make_net(void)
{
    ax_layer_spec layers[2] = {ax_layer_dense(HID, AX_ACT_TANH), ax_layer_dense(OUT, AX_ACT_IDENTITY)};
    ax_net_config config = ax_net_defaults();
    config.input_width = IN;
    config.layer_count = 2;
    config.layers = layers;
    config.loss = AX_LOSS_MSE;
    config.precision = AX_PRECISION_F64;
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    if (net)
        ax_net_parameters_set(net, reference_find("params0", PARAMS));
    return net;
}

static double max_relative(const double *a, const double *b, int64_t n)
{
    double worst = 0.0, scale = 0.0;
    for (int64_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs(a[i] - b[i]));
        scale = fmax(scale, fabs(b[i]));
    }
    return worst / scale;
}

/* Steps 1 .. STEPS of config (one full-batch step per epoch) from params0
 * against the reference's parameters after each. */
static void check_steps(const char *name, ax_dataset *data, ax_train_config config)
{
    const double *expected = reference_find(name, (int64_t)STEPS * PARAMS);
    if (!expected) {
        test_failures++;
        return;
    }
    for (int k = 1; k <= STEPS; k++) {
        ax_net *net = make_net();
        config.epochs = k;
        ax_train_summary summary = ax_train_summary_empty();
        CHECK_OK(ax_train(net, data, NULL, NULL, &config, &summary));
        double got[PARAMS];
        ax_net_parameters_get(net, got);
        const double error = max_relative(got, expected + (int64_t)(k - 1) * PARAMS, PARAMS);
        if (!(error <= 1e-10)) {
            fprintf(stderr, "%s: after step %d the parameters differ by %.3g relative\n", name, k,
                    error);
            test_failures++;
        }
        ax_net_free(net);
    }
}

int main(void)
{
    if (!read_reference()) {
        fprintf(stderr, "the reference could not be read\n");
        return 1;
    }
    const double *x = reference_find("inputs", ROWS * IN), *y = reference_find("targets", ROWS * OUT);
    if (!x || !y || !reference_find("params0", PARAMS))
        return 1;
    for (int i = 0; i < ROWS * IN; i++)
        features[i] = (float)x[i];
    for (int i = 0; i < ROWS * OUT; i++)
        targets[i] = (float)y[i];
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_wrap(ROWS, IN, 0, OUT, features, NULL, targets, "reference rows", &data));
    if (!data)
        return test_finish("test_strategies");

    /* L1: loss + l1 sum |W| and its subgradient, biases untouched. */
    ax_net *net = make_net();
    ax_regularization l1 = {.size = sizeof(ax_regularization), .l1 = 0.01};
    double loss = 0.0, gradient[PARAMS];
    CHECK_OK(ax_net_loss_gradient(net, data, 0, ROWS, &l1, &loss, gradient));
    CHECK_NEAR(loss, reference_find("l1_loss0", 1)[0], 1e-12);
    CHECK(max_relative(gradient, reference_find("l1_gradient0", PARAMS), PARAMS) <= 1e-12);
    l1.l1 = -1.0;
    CHECK_FAILS(ax_net_loss_gradient(net, data, 0, ROWS, &l1, &loss, gradient),
                AX_STATUS_BAD_ARGUMENT, "l1 must be a finite number >= 0");
    ax_net_free(net);

    ax_train_config config = ax_train_defaults();
    config.batch_size = 0;
    config.shuffle = false;
    config.adapt_threads = false;
    config.optimizer = AX_OPTIMIZER_ADAMW;
    config.learning_rate = 0.01;
    config.weight_decay = 0.1;
    check_steps("adamw_steps", data, config);

    config = ax_train_defaults();
    config.batch_size = 0;
    config.shuffle = false;
    config.adapt_threads = false;
    config.optimizer = AX_OPTIMIZER_SGD;
    config.learning_rate = 0.1;
    config.momentum = 0.9;
    config.l1 = 0.01;
    config.clip_value = 0.05;
    config.clip_norm = 0.06;
    check_steps("sgd_l1_clip_steps", data, config);

    /* Refusals: clipping with a line search; a negative l1. */
    net = make_net();
    ax_train_summary summary = ax_train_summary_empty();
    config = ax_train_defaults();
    config.batch_size = 0;
    config.optimizer = AX_OPTIMIZER_LBFGS;
    config.clip_norm = 1.0;
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "gradient clipping");
    config.clip_norm = 0.0;
    config.l1 = -1.0;
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "l1 must be a finite number >= 0, not -1");
    /* L-BFGS minimises the cost with L1 (its searches evaluate plainly). */
    config.l1 = 0.01;
    config.epochs = 20;
    double before = 0.0, after = 0.0;
    ax_regularization penalty = {.size = sizeof(ax_regularization), .l1 = 0.01};
    CHECK_OK(ax_net_loss_gradient(net, data, 0, ROWS, &penalty, &before, NULL));
    CHECK_OK(ax_train(net, data, NULL, NULL, &config, &summary));
    CHECK_OK(ax_net_loss_gradient(net, data, 0, ROWS, &penalty, &after, NULL));
    CHECK(after < before);
    CHECK_NEAR(summary.final_train_loss, after, 1e-9);
    ax_net_free(net);

    /* Dropout per layer. */
    double one_number[PARAMS], per_layer[PARAMS], with_inputs[PARAMS];
    for (int variant = 0; variant < 3; variant++) {
        net = make_net();
        config = ax_train_defaults();
        config.batch_size = 2;
        config.epochs = 3;
        config.adapt_threads = false;
        if (variant == 0)
            config.dropout = 0.3;
        else
            config.dropout_layers[1] = 0.3;
        if (variant == 2)
            config.dropout_layers[0] = 0.2;
        CHECK_OK(ax_train(net, data, NULL, NULL, &config, &summary));
        ax_net_parameters_get(net, variant == 0 ? one_number : variant == 1 ? per_layer : with_inputs);
        ax_net_free(net);
    }
    CHECK(memcmp(one_number, per_layer, sizeof per_layer) == 0);
    CHECK(max_relative(with_inputs, per_layer, PARAMS) > 1e-3);
    config.dropout = 0.3;
    net = make_net();
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "not both");
    config.dropout = 0.0;
    config.dropout_layers[2] = 0.5;
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "the network has 2 layers");

    const double rates[2] = {0.4, 0.3};
    ax_regularization dropped = {.size = sizeof(ax_regularization), .dropout_layers = rates,
                                 .dropout_key = 0x5eedULL};
    double analytic[PARAMS], params[PARAMS];
    ax_net_parameters_get(net, params);
    CHECK_OK(ax_net_loss_gradient(net, data, 0, ROWS, &dropped, &loss, analytic));
    double worst = 0.0, scale = 0.0;
    for (int i = 0; i < PARAMS; i++) {
        const double h = 1e-6, saved = params[i];
        double up, down;
        params[i] = saved + h;
        ax_net_parameters_set(net, params);
        CHECK_OK(ax_net_loss_gradient(net, data, 0, ROWS, &dropped, &up, NULL));
        params[i] = saved - h;
        ax_net_parameters_set(net, params);
        CHECK_OK(ax_net_loss_gradient(net, data, 0, ROWS, &dropped, &down, NULL));
        params[i] = saved;
        worst = fmax(worst, fabs((up - down) / (2 * h) - analytic[i]));
        scale = fmax(scale, fabs(analytic[i]));
    }
    ax_net_parameters_set(net, params);
    CHECK(worst <= 1e-7 * scale);
    double undropped;
    CHECK_OK(ax_net_loss_gradient(net, data, 0, ROWS, NULL, &undropped, NULL));
    CHECK(fabs(undropped - loss) > 1e-6); /* the masks did act */
    ax_net_free(net);

    ax_dataset_free(data);
    for (int i = 0; i < series_count; i++)
        free(all[i].values);
    return test_finish("test_strategies");
}
