/* test_train_config_refusals.c: ax_train refuses an optimizer setting out of
 * its range (learning rate 0, NaN or infinite; momentum outside [0, 1);
 * Nesterov without momentum; Adam's betas outside [0, 1); epsilon 0; an
 * optimizer number that names none; CG's and L-BFGS's gtol negative, NaN or
 * infinite, line-search evaluations outside 2 to 1000, an L-BFGS memory of
 * 0) with AX_STATUS_BAD_ARGUMENT and a message
 * naming the setting and the value given, before any step: the weights are
 * those it was given, bit for bit. A valid config on the same net then trains
 * (the weights move), so the refusals are not of the net or the data. */
#include "test_util.h"

static ax_net *net;
static ax_dataset *data;
static double *before, *after;
static int64_t count;

static void refused(const char *what, ax_train_config config, const char *words)
{
    config.epochs = 1;
    config.progress_interval = 1e9;
    ax_train_summary summary = ax_train_summary_empty();
    ax_status status = ax_train(net, data, NULL, NULL, &config, &summary);
    if (status != AX_STATUS_BAD_ARGUMENT || !strstr(ax_error_message(), words)) {
        fprintf(stderr, "%s: expected BAD_ARGUMENT saying '%s', got %s: %s\n", what, words,
                ax_status_name(status), status == AX_STATUS_OK ? "trained" : ax_error_message());
        test_failures++;
    }
    ax_net_parameters_get(net, after);
    if (memcmp(before, after, (size_t)count * sizeof *before) != 0) {
        fprintf(stderr, "%s: the refused run changed the weights\n", what);
        test_failures++;
        memcpy(before, after, (size_t)count * sizeof *before);
    }
}

int main(void)
{
    CHECK_OK(ax_dataset_synth_linear(64, 4, 7, &data));
    ax_net_config config = ax_net_defaults();
    config.input_width = 4;
    CHECK_OK(ax_layers_parse("5:tanh,1:identity", &config));
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    if (test_failures)
        return test_finish("test_train_config_refusals");
    count = ax_net_parameter_count(net);
    before = malloc((size_t)count * sizeof *before);
    after = malloc((size_t)count * sizeof *after);
    ax_net_parameters_get(net, before);

    const ax_train_config sgd = ax_train_defaults();
    ax_train_config c = sgd;
    c.learning_rate = 0.0;
    refused("lr 0", c, "the learning rate must be positive, not 0");
    c.learning_rate = NAN;
    refused("lr NaN", c, "the learning rate must be positive, not nan");
    c.learning_rate = INFINITY;
    refused("lr inf", c, "the learning rate must be positive, not inf");
    c = sgd;
    c.momentum = 1.0;
    refused("momentum 1", c, "momentum must be in [0, 1), not 1");
    c.momentum = -0.25;
    refused("momentum -0.25", c, "momentum must be in [0, 1), not -0.25");
    c = sgd;
    c.momentum = 0.0;
    c.nesterov = true;
    refused("nesterov without momentum", c, "Nesterov momentum needs a momentum above 0");
    ax_train_config adam = sgd;
    adam.optimizer = AX_OPTIMIZER_ADAM;
    adam.momentum = 0.0;
    c = adam;
    c.beta1 = 1.0;
    refused("beta1 1", c, "Adam's betas must be in [0, 1), not 1 and");
    c = adam;
    c.beta2 = -0.5;
    refused("beta2 -0.5", c, "Adam's betas must be in [0, 1), not 0.9 and -0.5");
    c = adam;
    c.epsilon = 0.0;
    refused("epsilon 0", c, "Adam's epsilon must be positive, not 0");
    c = sgd;
    c.optimizer = (ax_optimizer_kind)999;
    refused("optimizer 999", c, "999");
    /* The full-batch optimizers' own settings (line_search.c, lbfgs.c). */
    const ax_optimizer_kind full_batch[] = {AX_OPTIMIZER_CG, AX_OPTIMIZER_LBFGS};
    for (int k = 0; k < 2; k++) {
        c = sgd;
        c.optimizer = full_batch[k];
        c.gtol = -1e-3;
        refused("gtol -1e-3", c, "gtol must be a finite number >= 0, not -0.001");
        c.gtol = NAN;
        refused("gtol NaN", c, "gtol must be a finite number >= 0, not nan");
        c.gtol = INFINITY;
        refused("gtol inf", c, "gtol must be a finite number >= 0, not inf");
        c.gtol = 0.0;
        c.line_search_max_evaluations = 1;
        refused("1 line-search evaluation", c,
                "line-search evaluations must be from 2 to 1000, not 1");
        c.line_search_max_evaluations = 1001;
        refused("1001 line-search evaluations", c, "from 2 to 1000, not 1001");
    }
    c = sgd;
    c.optimizer = AX_OPTIMIZER_LBFGS;
    c.lbfgs_memory = 0;
    refused("L-BFGS memory 0", c, "the L-BFGS memory must be from 1 to 1000, not 0");

    /* the same net and data train with a valid config */
    c = sgd;
    c.epochs = 1;
    c.progress_interval = 1e9;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, data, NULL, NULL, &c, &summary));
    ax_net_parameters_get(net, after);
    CHECK(memcmp(before, after, (size_t)count * sizeof *before) != 0);

    free(before);
    free(after);
    ax_net_free(net);
    ax_dataset_free(data);
    return test_finish("test_train_config_refusals");
}
