/* test_sparse.c: proves that a set over compressed sparse rows
 * (ax_dataset_wrap_csr) trains, evaluates and predicts bit for bit as the
 * dense matrix of the same values does: shuffled mini-batches (SGD with
 * momentum, Adam) with a sparse validation set, a full batch (L-BFGS, whose
 * line search reuses its batch), ax_net_loss_gradient and
 * ax_net_predict_dataset; that a column given twice adds up (scipy's
 * toarray); that the caller's arrays are never written; and that bad CSR
 * (row starts, columns out of range, NaN) and what a sparse set cannot do (a
 * float64 network, checkpoints, splitting, activations) are refused with
 * words that say why. The reference is the dense set, which the library
 * trains through its own, independently tested path. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { ROWS = 150, FEATURES = 12, CLASSES = 3, MAX_STORED = ROWS * FEATURES + 1 };

typedef struct sparse_set {
    float dense[ROWS * FEATURES];
    int64_t row_starts[ROWS + 1];
    int32_t columns[MAX_STORED];
    float values[MAX_STORED];
    int32_t labels[ROWS];
    float targets[ROWS];
} sparse_set;

static uint64_t state = 99;
static double uniform(void)
{
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(state >> 11) / 9007199254740992.0;
}

/* About 70% zeros; row 7's value in column 3 stored as two parts that add up
 * to it exactly (0.5 + 1.0 = 1.5); columns of row 9 given out of order. */
static void make_set(sparse_set *set)
{
    int64_t stored = 0;
    for (int r = 0; r < ROWS; r++) {
        double sum = 0;
        set->row_starts[r] = stored;
        for (int c = 0; c < FEATURES; c++) {
            float value = uniform() < 0.7 ? 0.0f : (float)(uniform() * 4 - 2);
            if (r == 7 && c == 3)
                value = 1.5f;
            set->dense[r * FEATURES + c] = value;
            sum += value * (c % 3 + 1);
            if (value == 0.0f)
                continue;
            if (r == 7 && c == 3) {
                set->columns[stored] = c;
                set->values[stored++] = 0.5f;
                value = 1.0f;
            }
            set->columns[stored] = c;
            set->values[stored++] = value;
        }
        set->labels[r] = sum < -0.5 ? 0 : sum < 0.5 ? 1 : 2;
        set->targets[r] = (float)sum;
    }
    set->row_starts[ROWS] = stored;
    const int64_t first = set->row_starts[9], last = set->row_starts[10] - 1;
    if (last > first) { /* row 9 backwards: order within a row does not matter */
        int32_t column = set->columns[first];
        float value = set->values[first];
        set->columns[first] = set->columns[last];
        set->values[first] = set->values[last];
        set->columns[last] = column;
        set->values[last] = value;
    }
}

static ax_net *new_net(const char *layers, ax_precision precision)
{
    ax_net_config net_config = ax_net_defaults();
    net_config.input_width = FEATURES;
    net_config.precision = precision;
    CHECK_OK(ax_layers_parse(layers, &net_config));
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&net_config, &net));
    ax_net_config_release(&net_config);
    return net;
}

typedef struct run_result {
    double weights[256];
    int64_t count;
    ax_evaluation evaluation;
    float predicted[ROWS * CLASSES];
    double loss, gradient[256];
} run_result;

static bool keep_rows(int64_t first, int64_t count, const float *outputs, void *user)
{
    memcpy((float *)user + first * CLASSES, outputs, (size_t)(count * CLASSES) * sizeof *outputs);
    return true;
}

/* Trains on train (validation beside it), then evaluates, predicts and takes the gradient. */
static void run(ax_dataset *train, ax_dataset *validation, ax_optimizer_kind optimizer,
                int64_t batch, run_result *out)
{
    memset(out, 0, sizeof *out);
    out->evaluation = ax_evaluation_empty();
    ax_net *net = new_net("10:tanh,3:softmax", AX_PRECISION_F32);
    if (!net)
        return;
    ax_train_config config = ax_train_defaults();
    config.optimizer = optimizer;
    config.learning_rate = optimizer == AX_OPTIMIZER_ADAM ? 1e-2 : 0.1;
    config.batch_size = batch;
    config.epochs = 4;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, train, validation, NULL, &config, &summary));
    CHECK(isfinite(summary.final_train_loss));
    out->count = ax_net_parameter_count(net);
    CHECK(out->count <= 256);
    ax_net_parameters_get(net, out->weights);
    CHECK_OK(ax_net_evaluate(net, validation, &out->evaluation));
    CHECK_OK(ax_net_predict_dataset(net, train, keep_rows, out->predicted));
    CHECK_OK(ax_net_loss_gradient(net, train, 5, 40, NULL, &out->loss, out->gradient));
    ax_net_free(net);
}

static void check_same(const run_result *dense, const run_result *sparse, const char *what)
{
    if (memcmp(dense->weights, sparse->weights, (size_t)dense->count * sizeof(double)) != 0 ||
        dense->evaluation.loss != sparse->evaluation.loss ||
        dense->evaluation.accuracy != sparse->evaluation.accuracy ||
        memcmp(dense->predicted, sparse->predicted, sizeof dense->predicted) != 0 ||
        dense->loss != sparse->loss ||
        memcmp(dense->gradient, sparse->gradient, (size_t)dense->count * sizeof(double)) != 0) {
        fprintf(stderr, "%s: the sparse set's run differs from the dense set's\n", what);
        test_failures++;
    }
}

static void test_same_as_dense(sparse_set *set)
{
    sparse_set before;
    memcpy(&before, set, sizeof before);
    ax_dataset *dense = NULL, *sparse = NULL, *dense_val = NULL, *sparse_val = NULL;
    const int64_t val_first = 110, val_rows = ROWS - val_first, train_rows = val_first;
    CHECK_OK(ax_dataset_wrap(train_rows, FEATURES, CLASSES, 0, set->dense, set->labels, NULL,
                             "dense", &dense));
    CHECK_OK(ax_dataset_wrap_csr(train_rows, FEATURES, CLASSES, 0, set->row_starts, set->columns,
                                 set->values, set->labels, NULL, "sparse", &sparse));
    CHECK_OK(ax_dataset_wrap(val_rows, FEATURES, CLASSES, 0, set->dense + val_first * FEATURES,
                             set->labels + val_first, NULL, "dense validation", &dense_val));
    /* The validation rows' own starts: the tail of row_starts, shifted to 0. */
    int64_t val_starts[ROWS + 1];
    for (int64_t r = 0; r <= val_rows; r++)
        val_starts[r] = set->row_starts[val_first + r] - set->row_starts[val_first];
    CHECK_OK(ax_dataset_wrap_csr(val_rows, FEATURES, CLASSES, 0, val_starts,
                                 set->columns + set->row_starts[val_first],
                                 set->values + set->row_starts[val_first],
                                 set->labels + val_first, NULL, "sparse validation", &sparse_val));
    if (!dense || !sparse || !dense_val || !sparse_val)
        goto done;
    CHECK(ax_dataset_is_sparse(sparse) && !ax_dataset_is_sparse(dense));
    CHECK(ax_dataset_features_data(sparse) == NULL);
    static run_result a, b;
    const struct {
        ax_optimizer_kind optimizer;
        int64_t batch;
        const char *what;
    } runs[] = {{AX_OPTIMIZER_SGD, 16, "SGD, shuffled batches of 16"},
                {AX_OPTIMIZER_ADAM, 32, "Adam, shuffled batches of 32"},
                {AX_OPTIMIZER_LBFGS, 0, "L-BFGS, the full batch"}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        run(dense, dense_val, runs[i].optimizer, runs[i].batch, &a);
        run(sparse, sparse_val, runs[i].optimizer, runs[i].batch, &b);
        check_same(&a, &b, runs[i].what);
        CHECK(a.count > 0 && a.evaluation.rows == val_rows);
        ax_evaluation_free(&a.evaluation);
        ax_evaluation_free(&b.evaluation);
    }
    CHECK(memcmp(set, &before, sizeof before) == 0); /* the caller's arrays are never written */
done:
    ax_dataset_free(dense);
    ax_dataset_free(sparse);
    ax_dataset_free(dense_val);
    ax_dataset_free(sparse_val);
}

static void test_refusals(sparse_set *set)
{
    ax_dataset *data = (ax_dataset *)&data; /* must come back NULL */
    int64_t starts[ROWS + 1];
    memcpy(starts, set->row_starts, sizeof starts);
    starts[0] = 1;
    CHECK_FAILS(ax_dataset_wrap_csr(ROWS, FEATURES, CLASSES, 0, starts, set->columns, set->values,
                                    set->labels, NULL, "X", &data),
                AX_STATUS_BAD_ARGUMENT, "X: the sparse row starts begin at 1, not 0");
    CHECK(data == NULL);
    memcpy(starts, set->row_starts, sizeof starts);
    starts[4] = starts[5] + 1;
    CHECK_FAILS(ax_dataset_wrap_csr(ROWS, FEATURES, CLASSES, 0, starts, set->columns, set->values,
                                    set->labels, NULL, "X", &data),
                AX_STATUS_BAD_ARGUMENT, "X: sparse row 5 ends");
    int32_t column = set->columns[3];
    set->columns[3] = FEATURES;
    CHECK_FAILS(ax_dataset_wrap_csr(ROWS, FEATURES, CLASSES, 0, set->row_starts, set->columns,
                                    set->values, set->labels, NULL, "X", &data),
                AX_STATUS_BAD_ARGUMENT, "has a value in column 12; columns are 0 to 11");
    set->columns[3] = column;
    float value = set->values[set->row_starts[20]];
    set->values[set->row_starts[20]] = NAN;
    CHECK_FAILS(ax_dataset_wrap_csr(ROWS, FEATURES, CLASSES, 0, set->row_starts, set->columns,
                                    set->values, set->labels, NULL, "X", &data),
                AX_STATUS_BAD_DATA, "X: row 21, feature");
    set->values[set->row_starts[20]] = value;
    CHECK_FAILS(ax_dataset_wrap_csr(ROWS, FEATURES, CLASSES, 0, NULL, set->columns, set->values,
                                    set->labels, NULL, "X", &data),
                AX_STATUS_BAD_ARGUMENT, "the sparse row starts array is NULL");

    ax_dataset *sparse = NULL;
    CHECK_OK(ax_dataset_wrap_csr(ROWS, FEATURES, 0, 1, set->row_starts, set->columns, set->values,
                                 NULL, set->targets, "X", &sparse));
    if (!sparse)
        return;
    ax_net *wide = new_net("4:tanh,1", AX_PRECISION_F64);
    ax_train_config config = ax_train_defaults();
    config.batch_size = 10;
    config.epochs = 1;
    ax_train_summary summary = ax_train_summary_empty();
    if (wide)
        CHECK_FAILS(ax_train(wide, sparse, NULL, NULL, &config, &summary), AX_STATUS_UNSUPPORTED,
                    "training data X is sparse, whose rows are made dense in float32");
    ax_net_free(wide);
    ax_net *net = new_net("4:tanh,1", AX_PRECISION_F32);
    config.checkpoint_prefix = "/nonexistent/never";
    config.checkpoint_every = 1;
    if (net) {
        CHECK_FAILS(ax_train(net, sparse, NULL, NULL, &config, &summary), AX_STATUS_UNSUPPORTED,
                    "checkpoints fingerprint their data row by row");
        float out[ROWS * 4];
        CHECK_FAILS(ax_net_activations(net, sparse, 0, out), AX_STATUS_UNSUPPORTED,
                    "activations: X is sparse");
        /* Regression on sparse rows trains (the targets path) as the dense rows do. */
        config.checkpoint_prefix = NULL;
        config.checkpoint_every = 0;
        CHECK_OK(ax_train(net, sparse, NULL, NULL, &config, &summary));
    }
    ax_net_free(net);
    ax_dataset *train = NULL, *holdout = NULL;
    CHECK_FAILS(ax_dataset_split(sparse, 0.2, 1, &train, &holdout), AX_STATUS_UNSUPPORTED,
                "X: a sparse set cannot be split");
    ax_dataset_free(sparse);
}

int main(void)
{
    static sparse_set set;
    make_set(&set);
    test_same_as_dense(&set);
    test_refusals(&set);
    return test_finish("test_sparse");
}
