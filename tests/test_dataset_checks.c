/* test_dataset_checks.c: the checks of a data set made in memory
 * (src/data/dataset.c), through the public API:
 * - ax_dataset_create refuses a negative size, labels and targets at once
 *   (BAD_ARGUMENT naming the shape) and a size that cannot fit
 *   (OUT_OF_MEMORY before allocating); a valid shape comes zero-filled;
 * - a NaN or infinite feature or target written into a set is found by
 *   ax_dataset_check_finite, naming the row and column (1-based) of the
 *   first one and what it is, and ax_train refuses the set with the same
 *   message before any step, the weights untouched;
 * - ax_dataset_set_image_shape accepts exactly the shapes whose product is
 *   the features per row and refuses the others, the shape kept;
 * - ax_dataset_split puts every row in exactly one part, the sizes
 *   fraction x rows rounded, and refuses fractions outside (0, 1) and ones
 *   that leave a part empty, naming the set;
 * - ax_dataset_wrap_csr refuses a shape without rows or features and a
 *   NULL columns or values array when the set holds values. */
#include "test_util.h"

enum { ROWS = 5, FEATURES = 6 };

static void test_create(void)
{
    ax_dataset *data = (ax_dataset *)1;
    CHECK_FAILS(ax_dataset_create(-1, FEATURES, 2, 0, &data), AX_STATUS_BAD_ARGUMENT,
                "invalid dataset shape: -1 rows, 6 features, 2 classes, 0 targets");
    CHECK(data == NULL);
    CHECK_FAILS(ax_dataset_create(ROWS, FEATURES, 2, 1, &data), AX_STATUS_BAD_ARGUMENT,
                "invalid dataset shape: 5 rows, 6 features, 2 classes, 1 targets");
    CHECK_FAILS(ax_dataset_create(ROWS, -6, 0, 1, &data), AX_STATUS_BAD_ARGUMENT,
                "-6 features");
    CHECK_FAILS(ax_dataset_create((int64_t)1 << 60, FEATURES, 2, 0, &data),
                AX_STATUS_OUT_OF_MEMORY, "1152921504606846976 rows x 6 features is too large");
    CHECK(data == NULL);
    CHECK_OK(ax_dataset_create(ROWS, FEATURES, 0, 2, &data));
    if (!data)
        return;
    CHECK(ax_dataset_rows(data) == ROWS && ax_dataset_features(data) == FEATURES);
    CHECK(ax_dataset_classes(data) == 0 && ax_dataset_targets(data) == 2);
    CHECK(ax_dataset_labels_data(data) == NULL);
    const float *x = ax_dataset_features_data(data), *t = ax_dataset_targets_data(data);
    int nonzero = 0;
    for (int i = 0; i < ROWS * FEATURES; i++)
        nonzero += x[i] != 0.0f;
    for (int i = 0; i < ROWS * 2; i++)
        nonzero += t[i] != 0.0f;
    CHECK(nonzero == 0);
    CHECK_OK(ax_dataset_check_finite(data));
    ax_dataset_free(data);
}

/* A regression set of small finite values. */
static ax_dataset *finite_set(void)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_create(ROWS, FEATURES, 0, 2, &data));
    if (!data)
        return NULL;
    float *x = ax_dataset_features_data(data), *t = ax_dataset_targets_data(data);
    for (int i = 0; i < ROWS * FEATURES; i++)
        x[i] = (float)((i % 7) - 3) * 0.25f;
    for (int i = 0; i < ROWS * 2; i++)
        t[i] = (float)(i % 3) - 1.0f;
    return data;
}

/* data is refused by ax_dataset_check_finite and by ax_train, with text. */
static void check_not_finite(ax_dataset *data, const char *text)
{
    CHECK_FAILS(ax_dataset_check_finite(data), AX_STATUS_BAD_DATA, text);
    ax_net_config config = ax_net_defaults();
    config.input_width = FEATURES;
    CHECK_OK(ax_layers_parse("3:tanh,2:identity", &config));
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    if (!net)
        return;
    const int64_t count = ax_net_parameter_count(net);
    double *before = malloc((size_t)count * sizeof *before);
    double *after = malloc((size_t)count * sizeof *after);
    ax_net_parameters_get(net, before);
    ax_train_config train = ax_train_defaults();
    train.epochs = 1;
    train.batch_size = 2;
    train.progress_interval = 1e9;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &train, &summary), AX_STATUS_BAD_DATA, text);
    ax_net_parameters_get(net, after);
    CHECK(memcmp(before, after, (size_t)count * sizeof *before) == 0);
    free(before);
    free(after);
    ax_net_free(net);
}

static void test_not_finite(void)
{
    ax_dataset *data = finite_set();
    if (!data)
        return;
    CHECK_OK(ax_dataset_check_finite(data));
    float *x = ax_dataset_features_data(data), *t = ax_dataset_targets_data(data);
    x[1 * FEATURES + 2] = NAN;       /* row 2, feature 3 */
    x[3 * FEATURES + 0] = INFINITY;  /* later: the first one is named */
    check_not_finite(data, "(in memory): row 2, feature 3 is NaN");
    x[1 * FEATURES + 2] = 0.5f;
    check_not_finite(data, "row 4, feature 1 is infinite");
    x[3 * FEATURES + 0] = -INFINITY;
    check_not_finite(data, "row 4, feature 1 is infinite");
    x[3 * FEATURES + 0] = 1.0f;
    t[4 * 2 + 1] = NAN; /* row 5, target 2 */
    check_not_finite(data, "row 5, target 2 is not finite");
    t[4 * 2 + 1] = 0.0f;
    CHECK_OK(ax_dataset_check_finite(data));
    ax_dataset_free(data);
}

static void test_image_shape(void)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_create(ROWS, 12, 3, 0, &data));
    if (!data)
        return;
    int64_t shape[3] = {9, 9, 9};
    CHECK(!ax_dataset_image_shape(data, shape));
    CHECK(shape[0] == 0 && shape[1] == 0 && shape[2] == 0);
    static const int64_t refused[][3] = {{0, 4, 3}, {2, 0, 6}, {2, 6, 0}, {2, 2, 2}, {3, 4, 3},
                                         {13, 1, 1}, {1, 13, 1}, {-2, -2, 3}, {1, 1, 13}};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        char text[128];
        snprintf(text, sizeof text, "an image shape of %lldx%lldx%lld does not hold its 12 "
                 "features per row", (long long)refused[i][0], (long long)refused[i][1],
                 (long long)refused[i][2]);
        CHECK_FAILS(ax_dataset_set_image_shape(data, refused[i]), AX_STATUS_BAD_ARGUMENT, text);
        CHECK(!ax_dataset_image_shape(data, shape));
    }
    CHECK_OK(ax_dataset_set_image_shape(data, (const int64_t[3]){2, 2, 3}));
    CHECK(ax_dataset_image_shape(data, shape) && shape[0] == 2 && shape[1] == 2 && shape[2] == 3);
    CHECK_FAILS(ax_dataset_set_image_shape(data, (const int64_t[3]){4, 4, 1}),
                AX_STATUS_BAD_ARGUMENT, "4x4x1");
    CHECK(ax_dataset_image_shape(data, shape) && shape[0] == 2 && shape[1] == 2 && shape[2] == 3);
    CHECK_OK(ax_dataset_set_image_shape(data, (const int64_t[3]){1, 12, 1}));
    CHECK(ax_dataset_image_shape(data, shape) && shape[1] == 12);
    ax_dataset_free(data);
}

static void test_split(void)
{
    enum { SPLIT_ROWS = 10 };
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_create(SPLIT_ROWS, 2, 10, 0, &data));
    if (!data)
        return;
    float *x = ax_dataset_features_data(data);
    int32_t *y = ax_dataset_labels_data(data);
    for (int r = 0; r < SPLIT_ROWS; r++) {
        x[2 * r] = (float)r;
        x[2 * r + 1] = (float)(100 + r);
        y[r] = r;
    }
    ax_dataset *train = (ax_dataset *)1, *holdout = (ax_dataset *)1;
    const double refused[] = {0.0, 1.0, 2.0, NAN};
    for (int i = 0; i < 4; i++) {
        CHECK_FAILS(ax_dataset_split(data, refused[i], 3, &train, &holdout),
                    AX_STATUS_BAD_ARGUMENT, "the split fraction must be between 0 and 1, not ");
        CHECK(train == NULL && holdout == NULL);
    }
    CHECK_FAILS(ax_dataset_split(data, 0.01, 3, &train, &holdout), AX_STATUS_BAD_ARGUMENT,
                "(in memory): a fraction 0.01 of 10 rows leaves an empty part");
    CHECK_FAILS(ax_dataset_split(data, 0.97, 3, &train, &holdout), AX_STATUS_BAD_ARGUMENT,
                "a fraction 0.97 of 10 rows leaves an empty part");
    CHECK_OK(ax_dataset_split(data, 0.3, 3, &train, &holdout));
    if (train && holdout) {
        CHECK(ax_dataset_rows(train) == 7 && ax_dataset_rows(holdout) == 3);
        int seen[SPLIT_ROWS] = {0};
        ax_dataset *parts[2] = {train, holdout};
        for (int p = 0; p < 2; p++) {
            const float *px = ax_dataset_features_data(parts[p]);
            const int32_t *py = ax_dataset_labels_data(parts[p]);
            for (int64_t r = 0; r < ax_dataset_rows(parts[p]); r++) {
                const int row = (int)px[2 * r];
                CHECK(row >= 0 && row < SPLIT_ROWS && px[2 * r + 1] == 100.0f + (float)row &&
                      py[r] == row);
                if (row >= 0 && row < SPLIT_ROWS)
                    seen[row]++;
            }
        }
        for (int r = 0; r < SPLIT_ROWS; r++)
            CHECK(seen[r] == 1);
    }
    ax_dataset_free(train);
    ax_dataset_free(holdout);
    ax_dataset_free(data);
}

static void test_wrap_csr(void)
{
    const int64_t starts[3] = {0, 1, 2};
    const int32_t columns[2] = {0, 2}, labels[2] = {0, 1};
    const float values[2] = {1.0f, 2.0f};
    ax_dataset *data = (ax_dataset *)1;
    CHECK_FAILS(ax_dataset_wrap_csr(0, 3, 2, 0, starts, columns, values, labels, NULL, "X", &data),
                AX_STATUS_BAD_ARGUMENT, "X: invalid dataset shape: 0 rows, 3 features (at least 1 each)");
    CHECK(data == NULL);
    CHECK_FAILS(ax_dataset_wrap_csr(2, 0, 2, 0, starts, columns, values, labels, NULL, "X", &data),
                AX_STATUS_BAD_ARGUMENT, "X: invalid dataset shape: 2 rows, 0 features");
    CHECK_FAILS(ax_dataset_wrap_csr(2, 3, 2, 0, starts, NULL, values, labels, NULL, "X", &data),
                AX_STATUS_BAD_ARGUMENT, "X: the sparse columns array is NULL");
    CHECK_FAILS(ax_dataset_wrap_csr(2, 3, 2, 0, starts, columns, NULL, labels, NULL, NULL, &data),
                AX_STATUS_BAD_ARGUMENT, "(in memory): the sparse values array is NULL");
    CHECK(data == NULL);
    CHECK_OK(ax_dataset_wrap_csr(2, 3, 2, 0, starts, columns, values, labels, NULL, "X", &data));
    CHECK(data && ax_dataset_is_sparse(data) && ax_dataset_rows(data) == 2);
    ax_dataset_free(data);
}

int main(void)
{
    test_create();
    test_not_finite();
    test_image_shape();
    test_split();
    test_wrap_csr();
    return test_finish("test_dataset_checks");
}
