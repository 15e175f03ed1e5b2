/* test_loaded_batch.c: a full batch in row order is loaded into the workspace
 * once per training run, not once per step (src/core/propagate.c,
 * ax_net_keep_loaded_batch). Where that copy is needed (float64) nothing may
 * read stale rows, so these runs must match bit for bit:
 *   - CG and full-batch SGD trained without and with a test and a validation
 *     set, whose evaluations after each step load other rows in between;
 *   - the same for a full batch larger than the chunk ax_train computes it in
 *     (4096 rows), whose chunks take turns in the workspace;
 *   - a network trained on a data set, then on new values written into the
 *     same set (the same address, as a freed set's successor may have),
 *     against a fresh network trained on the new values from the same
 *     weights. */
#include <stdlib.h>
#include <string.h>

#include "axon.h"
#include "test_datasets.h"
#include "test_util.h"

static ax_net *make_net(int64_t features, ax_precision precision)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = features;
    config.precision = precision;
    config.seed = 5;
    CHECK_OK(ax_layers_parse("6:tanh,3:softmax", &config));
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    return net;
}

/* Trains a fresh network; returns its weights (malloc) and the final loss. */
static double *train_weights(const ax_dataset *train, const ax_dataset *validation,
                             const ax_dataset *test, ax_optimizer_kind optimizer, int epochs,
                             double *loss)
{
    ax_net *net = make_net(ax_dataset_features(train), AX_PRECISION_F64);
    if (!net)
        return NULL;
    ax_train_config config = ax_train_defaults();
    config.optimizer = optimizer;
    config.batch_size = 0;
    config.epochs = epochs;
    config.learning_rate = 0.5;
    config.momentum = 0.0;
    config.l2 = 1e-3;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, train, validation, test, &config, &summary));
    *loss = summary.final_train_loss;
    double *weights = malloc(sizeof(double) * (size_t)ax_net_parameter_count(net));
    if (weights)
        ax_net_parameters_get(net, weights);
    ax_net_free(net);
    return weights;
}

static void check_same_with_evaluations(int64_t rows, ax_optimizer_kind optimizer, int epochs,
                                        const char *what)
{
    ax_dataset *train = test_uniform_dataset(rows, 40, 11, false);
    ax_dataset *validation = test_uniform_dataset(rows / 3 + 1, 40, 12, false);
    ax_dataset *test = test_uniform_dataset(rows / 2 + 7, 40, 13, false);
    if (!train || !validation || !test)
        goto done;
    double loss_alone = 0, loss_evaluated = 0;
    double *alone = train_weights(train, NULL, NULL, optimizer, epochs, &loss_alone);
    double *evaluated = train_weights(train, validation, test, optimizer, epochs, &loss_evaluated);
    CHECK(alone && evaluated);
    if (alone && evaluated) {
        const int64_t count = 40 * 6 + 6 + 6 * 3 + 3;
        if (memcmp(alone, evaluated, sizeof(double) * (size_t)count) != 0 ||
            memcmp(&loss_alone, &loss_evaluated, sizeof loss_alone) != 0) {
            fprintf(stderr, "%s: training with evaluations between steps differs (loss %.17g vs %.17g)\n",
                    what, loss_alone, loss_evaluated);
            test_failures++;
        }
    }
    free(alone);
    free(evaluated);
done:
    ax_dataset_free(train);
    ax_dataset_free(validation);
    ax_dataset_free(test);
}

/* One network trained on a data set, whose values are then replaced in
 * place (the same address, as a freed set's successor may have), and trained
 * again; against a fresh network trained on the new values. */
static void check_new_values_same_net(void)
{
    ax_net *net = make_net(30, AX_PRECISION_F64);
    ax_net *fresh = make_net(30, AX_PRECISION_F64);
    ax_dataset *a = test_uniform_dataset(500, 30, 21, false);
    ax_dataset *b = test_uniform_dataset(500, 30, 22, true); /* other values, same shape */
    const int64_t count = net ? ax_net_parameter_count(net) : 0;
    double *start = malloc(sizeof(double) * (size_t)(count + 1));
    double *got = malloc(sizeof(double) * (size_t)(count + 1));
    double *want = malloc(sizeof(double) * (size_t)(count + 1));
    CHECK(start && got && want);
    if (!net || !fresh || !a || !b || !start || !got || !want)
        goto done;
    ax_train_config config = ax_train_defaults();
    config.optimizer = AX_OPTIMIZER_CG;
    config.batch_size = 0;
    config.epochs = 4;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, a, NULL, NULL, &config, &summary));
    memcpy(ax_dataset_features_data(a), ax_dataset_features_data(b), sizeof(float) * 500 * 30);
    memcpy(ax_dataset_labels_data(a), ax_dataset_labels_data(b), sizeof(int32_t) * 500);
    ax_net_parameters_get(net, start);
    ax_net_parameters_set(fresh, start);
    CHECK_OK(ax_train(net, a, NULL, NULL, &config, &summary));
    CHECK_OK(ax_train(fresh, b, NULL, NULL, &config, &summary));
    ax_net_parameters_get(net, got);
    ax_net_parameters_get(fresh, want);
    if (memcmp(got, want, sizeof(double) * (size_t)count) != 0) {
        fprintf(stderr, "a data set with new values in place trained on stale rows\n");
        test_failures++;
    }
done:
    free(start);
    free(got);
    free(want);
    ax_dataset_free(a);
    ax_dataset_free(b);
    ax_net_free(net);
    ax_net_free(fresh);
}

int main(void)
{
    CHECK_OK(ax_set_threads(2));
    check_same_with_evaluations(700, AX_OPTIMIZER_CG, 12, "CG, 700 rows");
    check_same_with_evaluations(700, AX_OPTIMIZER_SGD, 12, "full-batch SGD, 700 rows");
    check_same_with_evaluations(9000, AX_OPTIMIZER_SGD, 3, "full-batch SGD, 9000 rows in chunks");
    check_same_with_evaluations(9000, AX_OPTIMIZER_LBFGS, 3, "L-BFGS, 9000 rows in chunks");
    check_new_values_same_net();
    return test_finish("test_loaded_batch");
}
