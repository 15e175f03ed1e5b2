/* test_dataset_wrap.c: proves ax_dataset_wrap makes a dataset over the
 * caller's arrays without a copy (the pointers handed back are the caller's,
 * ax_dataset_free leaves them alone, the arrays are never written), that
 * training and evaluation on a wrapped set give bit for bit what the same
 * rows copied into ax_dataset_create's set give, and that every bad input is
 * refused naming what is wrong: empty shapes, both or neither of labels and
 * targets, NULL arrays, NaN/Inf naming row and column, labels out of range. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { ROWS = 64, FEATURES = 3, CLASSES = 2 };

static void make_data(float *x, int32_t *y)
{
    uint64_t state = 12345;
    for (int r = 0; r < ROWS; r++) {
        double sum = 0;
        for (int c = 0; c < FEATURES; c++) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            x[r * FEATURES + c] = (float)((double)(state >> 11) / 9007199254740992.0 * 2 - 1);
            sum += x[r * FEATURES + c];
        }
        y[r] = sum > 0;
    }
}

static void test_no_copy(void)
{
    float x[ROWS * FEATURES], targets[ROWS];
    int32_t y[ROWS];
    make_data(x, y);
    for (int r = 0; r < ROWS; r++)
        targets[r] = x[r * FEATURES] * 2;
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_wrap(ROWS, FEATURES, CLASSES, 0, x, y, NULL, "numpy", &data));
    if (data) {
        CHECK(ax_dataset_features_data(data) == x);
        CHECK(ax_dataset_labels_data(data) == y);
        CHECK(ax_dataset_targets_data(data) == NULL);
        CHECK(ax_dataset_rows(data) == ROWS && ax_dataset_features(data) == FEATURES);
        CHECK(ax_dataset_classes(data) == CLASSES && ax_dataset_targets(data) == 0);
        CHECK(strcmp(ax_dataset_source(data), "numpy") == 0);
    }
    ax_dataset_free(data); /* frees the dataset, not x or y (ASan/valgrind would say) */
    CHECK_OK(ax_dataset_wrap(ROWS, FEATURES, 0, 1, x, NULL, targets, NULL, &data));
    if (data) {
        CHECK(ax_dataset_targets_data(data) == targets && ax_dataset_labels_data(data) == NULL);
        CHECK(strcmp(ax_dataset_source(data), "(in memory)") == 0);
    }
    ax_dataset_free(data);
}

/* Training on the caller's arrays and on a copy: the same weights and the same evaluation. */
static void test_trains_like_a_copy(void)
{
    float x[ROWS * FEATURES], x_before[ROWS * FEATURES];
    int32_t y[ROWS];
    make_data(x, y);
    memcpy(x_before, x, sizeof x);
    ax_dataset *wrapped = NULL, *copied = NULL;
    CHECK_OK(ax_dataset_wrap(ROWS, FEATURES, CLASSES, 0, x, y, NULL, NULL, &wrapped));
    CHECK_OK(ax_dataset_create(ROWS, FEATURES, CLASSES, 0, &copied));
    if (!wrapped || !copied) {
        ax_dataset_free(wrapped);
        ax_dataset_free(copied);
        return;
    }
    memcpy(ax_dataset_features_data(copied), x, sizeof x);
    memcpy(ax_dataset_labels_data(copied), y, sizeof y);

    double weights[2][64];
    double accuracy[2];
    int64_t count = 0;
    for (int run = 0; run < 2; run++) {
        ax_net_config net_config = ax_net_defaults();
        net_config.input_width = FEATURES;
        CHECK_OK(ax_layers_parse("8:tanh,2:softmax", &net_config));
        ax_net *net = NULL;
        CHECK_OK(ax_net_create(&net_config, &net));
        ax_net_config_release(&net_config);
        if (!net)
            return;
        ax_train_config config = ax_train_defaults();
        config.batch_size = 16;
        config.epochs = 3;
        ax_train_summary summary = ax_train_summary_empty();
        const ax_dataset *data = run == 0 ? wrapped : copied;
        CHECK_OK(ax_train(net, data, NULL, NULL, &config, &summary));
        count = ax_net_parameter_count(net);
        CHECK(count <= 64);
        ax_net_parameters_get(net, weights[run]);
        ax_evaluation evaluation = ax_evaluation_empty();
        CHECK_OK(ax_net_evaluate(net, data, &evaluation));
        accuracy[run] = evaluation.accuracy;
        ax_evaluation_free(&evaluation);
        ax_net_free(net);
    }
    CHECK(memcmp(weights[0], weights[1], (size_t)count * sizeof(double)) == 0);
    CHECK(accuracy[0] == accuracy[1]);
    CHECK(memcmp(x, x_before, sizeof x) == 0); /* never written */
    ax_dataset_free(wrapped);
    ax_dataset_free(copied);
}

static void test_refusals(void)
{
    float x[ROWS * FEATURES], targets[ROWS] = {0};
    int32_t y[ROWS];
    make_data(x, y);
    ax_dataset *data = (ax_dataset *)&data; /* must come back NULL */
    CHECK_FAILS(ax_dataset_wrap(0, FEATURES, CLASSES, 0, x, y, NULL, "X", &data),
                AX_STATUS_BAD_ARGUMENT, "X: invalid dataset shape: 0 rows");
    CHECK(data == NULL);
    CHECK_FAILS(ax_dataset_wrap(ROWS, 0, CLASSES, 0, x, y, NULL, "X", &data),
                AX_STATUS_BAD_ARGUMENT, "0 features");
    CHECK_FAILS(ax_dataset_wrap(ROWS, FEATURES, CLASSES, 1, x, y, targets, "X", &data),
                AX_STATUS_BAD_ARGUMENT, "exactly one of classes and targets");
    CHECK_FAILS(ax_dataset_wrap(ROWS, FEATURES, 0, 0, x, NULL, NULL, "X", &data),
                AX_STATUS_BAD_ARGUMENT, "exactly one of classes and targets");
    CHECK_FAILS(ax_dataset_wrap(ROWS, FEATURES, CLASSES, 0, NULL, y, NULL, "X", &data),
                AX_STATUS_BAD_ARGUMENT, "X: the features array is NULL");
    CHECK_FAILS(ax_dataset_wrap(ROWS, FEATURES, CLASSES, 0, x, NULL, NULL, "X", &data),
                AX_STATUS_BAD_ARGUMENT, "the labels array is NULL");
    CHECK_FAILS(ax_dataset_wrap(ROWS, FEATURES, 0, 1, x, NULL, NULL, "X", &data),
                AX_STATUS_BAD_ARGUMENT, "the targets array is NULL");

    x[5 * FEATURES + 1] = NAN;
    CHECK_FAILS(ax_dataset_wrap(ROWS, FEATURES, CLASSES, 0, x, y, NULL, "X", &data),
                AX_STATUS_BAD_DATA, "X: row 6, feature 2 is NaN");
    x[5 * FEATURES + 1] = INFINITY;
    CHECK_FAILS(ax_dataset_wrap(ROWS, FEATURES, CLASSES, 0, x, y, NULL, "X", &data),
                AX_STATUS_BAD_DATA, "row 6, feature 2 is infinite");
    x[5 * FEATURES + 1] = 0;
    targets[9] = NAN;
    CHECK_FAILS(ax_dataset_wrap(ROWS, FEATURES, 0, 1, x, NULL, targets, "X", &data),
                AX_STATUS_BAD_DATA, "row 10, target 1 is not finite");
    y[3] = 2;
    CHECK_FAILS(ax_dataset_wrap(ROWS, FEATURES, CLASSES, 0, x, y, NULL, "X", &data),
                AX_STATUS_BAD_DATA, "X: row 4 has label 2 (labels 0 to 1)");
    y[3] = -1;
    CHECK_FAILS(ax_dataset_wrap(ROWS, FEATURES, CLASSES, 0, x, y, NULL, "X", &data),
                AX_STATUS_BAD_DATA, "row 4 has label -1");
    CHECK(data == NULL);
}

int main(void)
{
    test_no_copy();
    test_trains_like_a_copy();
    test_refusals();
    return test_finish("test_dataset_wrap");
}
