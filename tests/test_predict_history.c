/* test_predict_history.c: a trained network and its weights copied into a
 * new one predict and evaluate the same bits (issue 25: scikit-learn's
 * pickled MLPClassifier, rebuilt from coefs_, differed from the fitted one
 * in the last bit on a Zen 5, every run).
 *
 * The cause: ax_net_predict and ax_net_evaluate went through the rows in
 * chunks of the workspace's capacity, which is the training batch (200)
 * for a trained net and none (then 4096) for a new one; the GEMMs then had
 * other shapes (200 rows against 1797), and a BLAS may pick its kernels,
 * and so the order of a row's sums, by the shape (OpenBLAS's AVX-512
 * kernels do; its Haswell ones gave equal bits here by chance). Now the
 * chunk depends on the layout and the row count alone (ax_net_inference_rows), so both
 * nets make the same calls, in the same order, on the same values (float32
 * weights copied exactly through float64), with the same data layout
 * (every buffer 64-byte aligned, the weights at the same arena offsets) and
 * the same BLAS thread count (process-wide; nothing changes it between the
 * two calls): the same kernels, so bit equality is the right check.
 *
 * What this CPU's kernels do with the old chunking is printed, not checked:
 * predicting 200 rows at a time against one call of 1797 may differ in the
 * last bits, as rows in a batch of other rows may (scikit-learn's
 * check_methods_subset_invariance, python/axon/sklearn.py). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "axon.h"
#include "test_util.h"

enum { ROWS = 1797, FEATURES = 64, CLASSES = 10, BATCH = 200 };

static ax_dataset *digits_like(void)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_create(ROWS, FEATURES, CLASSES, 0, &data));
    if (!data)
        return NULL;
    float *x = ax_dataset_features_data(data);
    int32_t *labels = ax_dataset_labels_data(data);
    uint64_t state = 20261127;
    for (int64_t i = 0; i < (int64_t)ROWS * FEATURES; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((state >> 33) % 17); /* 0 to 16, as scikit-learn's digits */
    }
    for (int64_t r = 0; r < ROWS; r++)
        labels[r] = (int32_t)(((int64_t)x[r * FEATURES + 20] + (int64_t)x[r * FEATURES + 43]) % CLASSES);
    return data;
}

static ax_net *new_net(ax_precision precision)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = FEATURES;
    config.precision = precision;
    config.seed = 3;
    CHECK_OK(ax_layers_parse("16:relu,10:softmax", &config));
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    return net;
}

static size_t differing(const float *a, const float *b, size_t count)
{
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        n += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return n;
}

static void check_precision(ax_dataset *data, ax_precision precision, const char *name)
{
    ax_net *trained = new_net(precision), *copy = new_net(precision);
    if (!trained || !copy)
        return;
    ax_train_config settings = ax_train_defaults();
    settings.optimizer = AX_OPTIMIZER_ADAM;
    settings.batch_size = BATCH;
    settings.epochs = 3;
    settings.learning_rate = 1e-3;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(trained, data, NULL, NULL, &settings, &summary));
    const int64_t count = ax_net_parameter_count(trained);
    double *weights = malloc((size_t)count * sizeof(double));
    float *x = ax_dataset_features_data(data);
    const size_t outputs = (size_t)ROWS * CLASSES;
    float *a = malloc(outputs * sizeof(float)), *b = malloc(outputs * sizeof(float));
    float *chunked = malloc(outputs * sizeof(float));
    CHECK(weights && a && b && chunked);
    if (weights && a && b && chunked) {
        ax_net_parameters_get(trained, weights);
        ax_net_parameters_set(copy, weights);
        CHECK_OK(ax_net_predict(trained, x, ROWS, a));
        CHECK_OK(ax_net_predict(copy, x, ROWS, b));
        size_t n = differing(a, b, outputs);
        if (n)
            fprintf(stderr, "%s: %zu of %zu outputs of the trained net and its copy differ\n", name,
                    n, outputs);
        CHECK(n == 0);
        ax_evaluation e1 = ax_evaluation_empty(), e2 = ax_evaluation_empty();
        CHECK_OK(ax_net_evaluate(trained, data, &e1));
        CHECK_OK(ax_net_evaluate(copy, data, &e2));
        CHECK(memcmp(&e1.loss, &e2.loss, sizeof(double)) == 0 && e1.accuracy == e2.accuracy);
        ax_evaluation_free(&e1);
        ax_evaluation_free(&e2);
        /* The old chunking, by hand: informative only. */
        for (int64_t first = 0; first < ROWS; first += BATCH) {
            const int64_t rows = ROWS - first < BATCH ? ROWS - first : BATCH;
            CHECK_OK(ax_net_predict(copy, x + first * FEATURES, rows, chunked + first * CLASSES));
        }
        printf("%s: the trained net and its copy agree bit for bit; predicting %d rows at a time "
               "instead of all %d in one call changes %zu of %zu outputs on this CPU's kernels\n",
               name, BATCH, ROWS, differing(a, chunked, outputs), outputs);
    }
    free(weights);
    free(a);
    free(b);
    free(chunked);
    ax_net_free(trained);
    ax_net_free(copy);
}

int main(void)
{
    ax_dataset *data = digits_like();
    if (data) {
        check_precision(data, AX_PRECISION_F32, "float32");
        check_precision(data, AX_PRECISION_F64, "float64");
    }
    ax_dataset_free(data);
    return test_finish("test_predict_history");
}
