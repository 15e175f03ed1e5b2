/* test_dataset_open.c: proves that ax_dataset_open reads every spec form
 * (a data set name under $AXON_DATASETS, an IDX folder's train and t10k
 * parts, FILE.csv, FILE.npy with a labels file, batches:DIR, synth:linear
 * with its test part) with the rows, features and classes the loaders give,
 * the scale applied (batches:DIR excepted); that ax_dataset_count agrees;
 * that a shard and a split's shards are the rows of the whole set the
 * trainer would cut; and that unknown, missing and bad specs fail with the
 * status the command line turns into its exit code (BAD_ARGUMENT: exit 2)
 * and the command line's words, the option named when options.name is set;
 * and that feature-only files (options.unlabeled) give every column as a
 * feature, the same values as the labeled file's features, with their columns
 * counted from the first line or header alone (ax_dataset_count_columns);
 * options that do not go with the spec (streaming a CSV, a mean image
 * unstreamed, a streamed shard, a split fraction outside (0, 1)) and a scale
 * that overflows float32 are refused naming what and where. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test_util.h"
#include "test_files.h"

/* part must be rows [first, first + count) of whole, classes included. */
static bool same_rows(ax_dataset *whole, ax_dataset *part, int64_t first, int64_t count)
{
    const int64_t features = ax_dataset_features(whole), targets = ax_dataset_targets(whole);
    if (!part || ax_dataset_rows(part) != count || ax_dataset_features(part) != features ||
        ax_dataset_classes(part) != ax_dataset_classes(whole) || ax_dataset_targets(part) != targets)
        return false;
    if (count == 0)
        return true;
    bool same = memcmp(ax_dataset_features_data(part), ax_dataset_features_data(whole) + first * features,
                       (size_t)(count * features) * sizeof(float)) == 0;
    if (ax_dataset_labels_data(whole))
        same = same && memcmp(ax_dataset_labels_data(part), ax_dataset_labels_data(whole) + first,
                              (size_t)count * sizeof(int32_t)) == 0;
    if (targets > 0)
        same = same && memcmp(ax_dataset_targets_data(part),
                              ax_dataset_targets_data(whole) + first * targets,
                              (size_t)(count * targets) * sizeof(float)) == 0;
    return same;
}

/* Opens spec and checks its shape and ax_dataset_count; returns it (or NULL). */
static ax_dataset *open_checked(const char *spec, const ax_data_options *options, int64_t rows,
                                int64_t features, int64_t classes)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_open(spec, options, &data));
    if (!data)
        return NULL;
    CHECK(ax_dataset_rows(data) == rows);
    CHECK(ax_dataset_features(data) == features);
    CHECK(ax_dataset_classes(data) == classes);
    int64_t counted = -1;
    CHECK_OK(ax_dataset_count(spec, options, &counted));
    CHECK(counted == rows);
    return data;
}

/* Every rank's shard (of 3) and, for a training part, every rank's split
 * shards (of 2) against the whole set cut as the trainer cuts it. */
static void check_shards(const char *spec, const ax_data_options *options, ax_dataset *whole)
{
    const bool split = options->part == AX_DATA_PART_TRAIN;
    const int64_t rows = ax_dataset_rows(whole);
    for (int rank = 0; rank < 3; rank++) {
        ax_dataset *shard = NULL;
        int64_t total = -1, first = rows * rank / 3, end = rows * (rank + 1) / 3;
        CHECK_OK(ax_dataset_open_shard(spec, options, rank, 3, &shard, &total));
        CHECK(total == rows);
        if (!same_rows(whole, shard, first, end - first)) {
            fprintf(stderr, "%s: shard %d of 3 is not rows [%lld, %lld)\n", spec, rank,
                    (long long)first, (long long)end);
            test_failures++;
        }
        ax_dataset_free(shard);
    }
    if (!split)
        return;
    ax_dataset *train = NULL, *holdout = NULL;
    CHECK_OK(ax_dataset_split(whole, 0.25, 9, &train, &holdout));
    for (int rank = 0; rank < 2 && train && holdout; rank++) {
        ax_dataset *shards[2] = {NULL, NULL};
        int64_t totals[2] = {-1, -1};
        CHECK_OK(ax_dataset_open_split_shards(spec, options, 0.25, 9, rank, 2, &shards[0],
                                              &shards[1], totals));
        CHECK(totals[0] == ax_dataset_rows(train) && totals[1] == ax_dataset_rows(holdout));
        ax_dataset *parts[2] = {train, holdout};
        for (int i = 0; i < 2; i++) {
            int64_t n = ax_dataset_rows(parts[i]), first = n * rank / 2, end = n * (rank + 1) / 2;
            if (!same_rows(parts[i], shards[i], first, end - first)) {
                fprintf(stderr, "%s: rank %d's shard of split part %d differs\n", spec, rank, i);
                test_failures++;
            }
            ax_dataset_free(shards[i]);
        }
    }
    ax_dataset_free(train);
    ax_dataset_free(holdout);
}

/* An IDX pair of `rows` 2 x 2 images in dir, of prefix "train" or "t10k". */
static void write_idx_part(const char *dir, const char *prefix, int rows)
{
    unsigned char images[16 + 4 * 32] = {0, 0, 8, 3, 0, 0, 0, (unsigned char)rows, 0, 0, 0, 2,
                                         0, 0, 0, 2};
    unsigned char labels[8 + 32] = {0, 0, 8, 1, 0, 0, 0, (unsigned char)rows};
    for (int i = 0; i < rows * 4; i++)
        images[16 + i] = (unsigned char)(i * 29 + 3);
    for (int i = 0; i < rows; i++)
        labels[8 + i] = (unsigned char)(i % 3);
    char path[512];
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte", dir, prefix);
    write_file(path, images, 16 + (size_t)rows * 4);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
    write_file(path, labels, 8 + (size_t)rows);
}

static void test_idx_and_names(void)
{
    CHECK(mkdir(in_work("sets"), 0700) == 0);
    CHECK(mkdir(in_work("sets/mini"), 0700) == 0);
    write_idx_part(in_work("sets/mini"), "train", 12);
    write_idx_part(in_work("sets/mini"), "t10k", 5);
    CHECK(mkdir(in_work("train_only"), 0700) == 0);
    write_idx_part(in_work("train_only"), "train", 7);

    ax_data_options options = ax_data_options_defaults();
    ax_dataset *whole = open_checked(in_work("sets/mini"), &options, 12, 4, 3);
    if (whole) {
        CHECK(ax_dataset_features_data(whole)[1] == (float)(32.0 / 255.0));
        check_shards(in_work("sets/mini"), &options, whole);
    }
    options.part = AX_DATA_PART_TEST;
    options.scale = 0.5;
    ax_dataset *test = open_checked(in_work("sets/mini"), &options, 5, 4, 3);
    if (test && whole)
        CHECK(ax_dataset_features_data(test)[1] == (float)(ax_dataset_features_data(whole)[1] * 0.5));
    CHECK(ax_dataset_spec_has_test_part(in_work("sets/mini")));
    CHECK(!ax_dataset_spec_has_test_part(in_work("train_only")));
    CHECK(!ax_dataset_spec_has_test_part("synth:linear"));

    /* A bare name is a folder under AXON_DATASETS. */
    setenv("AXON_DATASETS", in_work("sets"), 1);
    ax_dataset *named = open_checked("mini", NULL, 12, 4, 3);
    CHECK(whole && named && same_rows(whole, named, 0, 12));
    CHECK(ax_dataset_spec_has_test_part("mini"));
    ax_dataset_free(named);
    ax_dataset_free(whole);
    ax_dataset_free(test);

    /* What is missing, said as the command line says it. */
    ax_dataset *data = NULL;
    CHECK_FAILS(ax_dataset_open(in_work("train_only"), &options, &data), AX_STATUS_BAD_FILE,
                "train_only: the folder has no t10k-images-idx3-ubyte[.gz]; a folder must hold "
                "MNIST-format IDX files");
    CHECK(data == NULL);
    CHECK_FAILS(ax_dataset_open("fashion-mnist", NULL, &data), AX_STATUS_BAD_FILE,
                "fashion-mnist: the data set is not installed (no ");
    CHECK(strstr(ax_error_message(), "); install it with: apt-get install dataset-fashion-mnist"));
    options = ax_data_options_defaults();
    options.name = "--data";
    CHECK_FAILS(ax_dataset_open("mnist", &options, &data), AX_STATUS_BAD_FILE,
                "--data mnist: no such file or directory, and no data set of that name in ");
    const char *message = ax_error_message();
    const char *tail = "each optionally .gz): --data path/to/mnist";
    CHECK(strlen(message) > strlen(tail) &&
          strcmp(message + strlen(message) - strlen(tail), tail) == 0);
    CHECK_FAILS(ax_dataset_check_spec("mnist", NULL), AX_STATUS_BAD_FILE,
                "(train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, "
                "t10k-labels-idx1-ubyte, each optionally .gz): path/to/mnist");
    unsetenv("AXON_DATASETS");
}

static void test_csv(void)
{
    char text[1024];
    int used = 0;
    for (int row = 0; row < 10; row++)
        used += snprintf(text + used, sizeof text - (size_t)used, "%d,%d.5,%d,%d\n", row % 4, row,
                         -row, row * row);
    write_file(in_work("rows.csv"), text, (size_t)used);
    ax_data_options options = ax_data_options_defaults();
    options.csv.label_column = 0;
    options.scale = 2.0; /* replaces csv.scale */
    ax_dataset *whole = open_checked(in_work("rows.csv"), &options, 10, 3, 4);
    if (!whole)
        return;
    CHECK(ax_dataset_features_data(whole)[3] == 3.0f); /* row 1: 1.5 x 2 */
    CHECK(ax_dataset_labels_data(whole)[3] == 3);
    check_shards(in_work("rows.csv"), &options, whole);
    ax_dataset_free(whole);

    /* A loader's failure names the file, with the loader's words and status. */
    write_file(in_work("nan.csv"), "0,1.5\n1,nan\n", 12);
    ax_dataset *data = NULL;
    CHECK_FAILS(ax_dataset_open(in_work("nan.csv"), NULL, &data), AX_STATUS_BAD_DATA,
                "nan.csv: line 2, column 2: NaN");
    options.csv.label_column = 9;
    CHECK_FAILS(ax_dataset_open(in_work("rows.csv"), &options, &data), AX_STATUS_BAD_ARGUMENT,
                "rows.csv: label column 9 is out of range");
    CHECK_OK(ax_dataset_check_spec(in_work("rows.csv"), &options)); /* the spec itself is fine */
}

static void test_npy(void)
{
    float x[6][2] = {{1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}, {11, 12}};
    int64_t y[6] = {0, 1, 2, 0, 1, 4};
    write_npy_array(in_work("x.npy"), "<f4", "(6, 2)", x, sizeof x);
    write_npy_array(in_work("y.npy"), "<i8", "(6,)", y, sizeof y);
    ax_data_options options = ax_data_options_defaults();
    options.labels = in_work("y.npy");
    options.scale = 0.5;
    ax_dataset *whole = open_checked(in_work("x.npy"), &options, 6, 2, 5);
    if (!whole)
        return;
    CHECK(ax_dataset_features_data(whole)[11] == 6.0f);
    CHECK(ax_dataset_labels_data(whole)[5] == 4);
    check_shards(in_work("x.npy"), &options, whole);
    ax_dataset_free(whole);

    /* NaN in the features: the loader names the element. */
    x[4][1] = NAN;
    write_npy_array(in_work("xnan.npy"), "<f4", "(6, 2)", x, sizeof x);
    ax_dataset *data = NULL;
    CHECK_FAILS(ax_dataset_open(in_work("xnan.npy"), &options, &data), AX_STATUS_BAD_DATA,
                "xnan.npy: element [4, 1] is NaN");
    CHECK(data == NULL);

    options.labels = in_work("missing.npy");
    options.labels_name = "--test-labels";
    CHECK_FAILS(ax_dataset_open(in_work("x.npy"), &options, &data), AX_STATUS_BAD_FILE,
                "--test-labels ");
    CHECK(strcmp(strstr(ax_error_message(), "missing.npy"), "missing.npy: no such file or directory") == 0);
}

/* Features only: the same rows as a labeled file's features, no labels. */
static void test_unlabeled(void)
{
    char labeled[1024], bare[1024];
    int used = snprintf(labeled, sizeof labeled, "y,a,b,c\n"), bare_used = snprintf(bare, sizeof bare, "a,b,c\n");
    for (int row = 0; row < 9; row++) {
        used += snprintf(labeled + used, sizeof labeled - (size_t)used, "%d,%d.25,%d,-%d\n",
                         row % 3, row, row * 7, row);
        bare_used += snprintf(bare + bare_used, sizeof bare - (size_t)bare_used, "%d.25,%d,-%d\n",
                              row, row * 7, row);
    }
    write_file(in_work("labeled.csv"), labeled, (size_t)used);
    write_file(in_work("bare.csv"), bare, (size_t)bare_used);
    ax_data_options options = ax_data_options_defaults();
    options.csv.header = true;
    options.part = AX_DATA_PART_TEST; /* no split: that draws training rows */
    int64_t columns = -1;
    CHECK_OK(ax_dataset_count_columns(in_work("labeled.csv"), &options, &columns));
    CHECK(columns == 4);
    CHECK_OK(ax_dataset_count_columns(in_work("bare.csv"), &options, &columns));
    CHECK(columns == 3);
    ax_dataset *reference = open_checked(in_work("labeled.csv"), &options, 9, 3, 3);
    options.unlabeled = true;
    options.csv.label_column = 0; /* ignored: unlabeled has no label column */
    ax_dataset *bare_set = open_checked(in_work("bare.csv"), &options, 9, 3, 0);
    if (reference && bare_set) {
        CHECK(ax_dataset_labels_data(bare_set) == NULL && ax_dataset_targets(bare_set) == 0);
        CHECK(memcmp(ax_dataset_features_data(bare_set), ax_dataset_features_data(reference),
                     9 * 3 * sizeof(float)) == 0);
        check_shards(in_work("bare.csv"), &options, bare_set);
    }
    ax_dataset_free(reference);
    ax_dataset_free(bare_set);

    /* .npy: every column, the image shape of an (N, H, W, C) array kept. */
    float x[6][4];
    for (int i = 0; i < 24; i++)
        x[i / 4][i % 4] = (float)i - 5.5f;
    write_npy_array(in_work("bare.npy"), "<f4", "(6, 4)", x, sizeof x);
    write_npy_array(in_work("images.npy"), "<f4", "(6, 2, 2, 1)", x, sizeof x);
    options = ax_data_options_defaults();
    options.part = AX_DATA_PART_TEST;
    options.unlabeled = true;
    CHECK_OK(ax_dataset_count_columns(in_work("images.npy"), &options, &columns));
    CHECK(columns == 4);
    ax_dataset *npy = open_checked(in_work("bare.npy"), &options, 6, 4, 0);
    if (npy) {
        CHECK(memcmp(ax_dataset_features_data(npy), x, sizeof x) == 0);
        check_shards(in_work("bare.npy"), &options, npy);
    }
    ax_dataset_free(npy);
    ax_dataset *images = open_checked(in_work("images.npy"), &options, 6, 4, 0);
    int64_t shape[3] = {0, 0, 0};
    CHECK(images && ax_dataset_image_shape(images, shape) && shape[0] == 2 && shape[1] == 2 &&
          shape[2] == 1);
    ax_dataset_free(images);

    /* Only files hold features alone, and not beside a labels file. */
    ax_dataset *data = NULL;
    options.name = "--data";
    CHECK_FAILS(ax_dataset_open("synth:linear", &options, &data), AX_STATUS_BAD_ARGUMENT,
                "--data synth:linear: only a .csv or .npy file can be read as features without "
                "labels");
    options.labels = in_work("bare.npy");
    CHECK_FAILS(ax_dataset_check_spec(in_work("bare.npy"), &options), AX_STATUS_BAD_ARGUMENT,
                "features without labels, but a labels file");
    CHECK(data == NULL);
    CHECK_FAILS(ax_dataset_count_columns("synth:linear", NULL, &columns), AX_STATUS_UNSUPPORTED,
                "synth:linear: columns are counted in .csv and .npy files only");
    CHECK(columns == 0);
    write_file(in_work("header_only.csv"), "a,b\n", 4);
    options = ax_data_options_defaults();
    options.csv.header = true;
    CHECK_FAILS(ax_dataset_count_columns(in_work("header_only.csv"), &options, &columns),
                AX_STATUS_BAD_FILE, "header_only.csv: no data rows after the header line");
}

static void test_batches(void)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/prep", work_dir);
    CHECK(mkdir(dir, 0700) == 0);
    const int sizes[2] = {4, 3}; /* 7 rows of 2 x 2 x 1 images */
    char meta[1024], spec[160];
    int used = snprintf(meta, sizeof meta, "{\"format\": \"axon-prep\", \"image_size\": 2, "
                                           "\"channels\": 1, \"labels\": [\"a\", \"b\"], "
                                           "\"batches\": [");
    for (int b = 0, row = 0; b < 2; b++) {
        unsigned char pixels[4 * 4];
        int32_t labels[4];
        for (int i = 0; i < sizes[b]; i++, row++) {
            labels[i] = row % 2;
            for (int j = 0; j < 4; j++)
                pixels[i * 4 + j] = (unsigned char)(row * 16 + j * 3);
        }
        char path[256], shape[32];
        snprintf(shape, sizeof shape, "(%d, 2, 2, 1)", sizes[b]);
        snprintf(path, sizeof path, "%s/batch_%05d.npy", dir, b);
        write_npy_array(path, "|u1", shape, pixels, (size_t)sizes[b] * 4);
        snprintf(shape, sizeof shape, "(%d,)", sizes[b]);
        snprintf(path, sizeof path, "%s/batch_%05d_labels.npy", dir, b);
        write_npy_array(path, "<i4", shape, labels, (size_t)sizes[b] * 4);
        used += snprintf(meta + used, sizeof meta - (size_t)used,
                         "%s{\"data\": \"batch_%05d.npy\", \"labels\": \"batch_%05d_labels.npy\", "
                         "\"images\": %d}",
                         b ? ", " : "", b, b, sizes[b]);
    }
    snprintf(meta + used, sizeof meta - (size_t)used, "]}");
    char path[256];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    write_file(path, meta, strlen(meta));
    snprintf(spec, sizeof spec, "batches:%s", dir);
    ax_data_options options = ax_data_options_defaults();
    options.scale = 3.0; /* not applied: the batches are scaled to [0, 1] already */
    ax_dataset *whole = open_checked(spec, &options, 7, 4, 2);
    if (!whole)
        return;
    CHECK(ax_dataset_features_data(whole)[5] == (float)(19.0 / 255.0));
    check_shards(spec, &options, whole);
    ax_dataset_free(whole);
}

static void test_synth(void)
{
    ax_data_options options = ax_data_options_defaults();
    options.synth_rows = 40;
    options.synth_features = 3;
    options.seed = 5;
    ax_dataset *whole = open_checked("synth:linear", &options, 40, 3, 0);
    ax_dataset *longer = NULL;
    CHECK_OK(ax_dataset_synth_linear(48, 3, 5, &longer));
    if (!whole || !longer) {
        ax_dataset_free(whole);
        ax_dataset_free(longer);
        return;
    }
    CHECK(ax_dataset_targets(whole) == 1);
    CHECK(same_rows(longer, whole, 0, 40));
    check_shards("synth:linear", &options, whole);
    /* The test part: the 40/5 rows that follow in the same stream. */
    options.part = AX_DATA_PART_TEST;
    ax_dataset *test = open_checked("synth:linear", &options, 8, 3, 0);
    CHECK(test && same_rows(longer, test, 40, 8));
    if (test)
        check_shards("synth:linear", &options, test);
    ax_dataset_free(test);
    ax_dataset_free(longer);
    ax_dataset_free(whole);
}

/* Specs that name no kind of data are BAD_ARGUMENT (the command line's usage
 * errors); missing files BAD_FILE; both before anything is read. */
static void test_refusals(void)
{
    write_file(in_work("notes.txt"), "feature data\n", 13);
    write_file(in_work("a.csv"), "0,1\n1,2\n", 8);
    ax_data_options options = ax_data_options_defaults();
    options.name = "--data";
    ax_dataset *data = NULL;
    CHECK_FAILS(ax_dataset_open("synth:quadratic", &options, &data), AX_STATUS_BAD_ARGUMENT,
                "--data synth:quadratic: unknown synthetic data set (known: synth:linear)");
    CHECK(data == NULL);
    CHECK_FAILS(ax_dataset_check_spec(in_work("notes.txt"), &options), AX_STATUS_BAD_ARGUMENT,
                "notes.txt: unknown kind of data; expected a folder of IDX files, a .csv or .npy "
                "file, a data set name such as fashion-mnist, batches:DIR (axon prep's output), "
                "or synth:linear");
    CHECK(strncmp(ax_error_message(), "--data /tmp/", 12) == 0);
    options.labels = "y.npy";
    CHECK_FAILS(ax_dataset_count(in_work("a.csv"), &options, &(int64_t){0}),
                AX_STATUS_BAD_ARGUMENT, "a.csv: a separate labels file (y.npy) goes only with .npy data");
    CHECK_FAILS(ax_dataset_open("missing.csv", NULL, &data), AX_STATUS_BAD_FILE, "");
    CHECK(strcmp(ax_error_message(), "missing.csv: no such file or directory") == 0);
    CHECK_FAILS(ax_dataset_open("batches:/nonexistent", NULL, &data), AX_STATUS_BAD_FILE,
                "/nonexistent/meta.json");
    CHECK_FAILS(ax_dataset_open("", NULL, &data), AX_STATUS_BAD_ARGUMENT, "no data spec");
    int64_t total = -1;
    CHECK_FAILS(ax_dataset_open_shard(in_work("a.csv"), NULL, 2, 2, &data, &total),
                AX_STATUS_BAD_ARGUMENT, "rank 2 of 2 is not a rank");
    CHECK(data == NULL && total == 0);
    options = ax_data_options_defaults();
    options.size = 0; /* not filled by ax_data_options_defaults */
    CHECK_FAILS(ax_dataset_open(in_work("a.csv"), &options, &data), AX_STATUS_BAD_ARGUMENT,
                "ax_data_options_defaults");
}

/* Options that do not go with the spec, and values they make unusable. */
static void test_option_refusals(void)
{
    write_file(in_work("b.csv"), "0,1,2\n1,30,4\n", 14);
    char spec[160];
    snprintf(spec, sizeof spec, "batches:%s/prep", work_dir); /* test_batches's folder */
    ax_data_options options = ax_data_options_defaults();
    ax_dataset *data = (ax_dataset *)1, *holdout = (ax_dataset *)1;
    options.stream = true;
    CHECK_FAILS(ax_dataset_open(in_work("b.csv"), &options, &data), AX_STATUS_BAD_ARGUMENT,
                "b.csv: streaming, crops, mirroring and a mean image are for batches:DIR");
    CHECK(data == NULL);
    options = ax_data_options_defaults();
    options.mean = in_work("mean.npy");
    CHECK_FAILS(ax_dataset_open(spec, &options, &data), AX_STATUS_BAD_ARGUMENT,
                "crops, mirroring and a mean image are made as batches are streamed; they need "
                "the set streamed");
    options = ax_data_options_defaults();
    options.stream = true;
    int64_t total = -1;
    CHECK_FAILS(ax_dataset_open_shard(spec, &options, 0, 2, &data, &total), AX_STATUS_UNSUPPORTED,
                "streamed batches are read by one process, whole: not as an MPI rank's shard");
    CHECK(data == NULL);
    int64_t totals[2] = {-1, -1};
    const double fractions[] = {0.0, 1.0, -0.5, NAN};
    for (int i = 0; i < 4; i++) {
        CHECK_FAILS(ax_dataset_open_split_shards(in_work("b.csv"), NULL, fractions[i], 1, 0, 1,
                                                 &data, &holdout, totals),
                    AX_STATUS_BAD_ARGUMENT, "the split fraction must be between 0 and 1, not ");
        CHECK(data == NULL && holdout == NULL && totals[0] == 0 && totals[1] == 0);
    }
    /* A scale that overflows float32: refused naming the place. */
    options = ax_data_options_defaults();
    options.scale = 1e38;
    CHECK_FAILS(ax_dataset_open(in_work("b.csv"), &options, &data), AX_STATUS_BAD_DATA,
                "b.csv: line 2, column 2: 30 overflows float after scaling");
    CHECK(data == NULL);
    const float values[4] = {1, 2, 30, 4};
    const int32_t labels[2] = {0, 1};
    write_npy_array(in_work("big.npy"), "<f4", "(2, 2)", values, sizeof values);
    write_npy_array(in_work("big_labels.npy"), "<i4", "(2,)", labels, sizeof labels);
    options.labels = in_work("big_labels.npy");
    CHECK_FAILS(ax_dataset_open(in_work("big.npy"), &options, &data), AX_STATUS_BAD_DATA,
                "big.npy: element [1, 0] is too large for float32 after scaling");
    CHECK(data == NULL);
}

int main(void)
{
    if (!test_work_dir_make("axon-open"))
        return 1;
    test_idx_and_names();
    test_csv();
    test_npy();
    test_unlabeled();
    test_batches();
    test_synth();
    test_refusals();
    test_option_refusals();
    test_work_dir_remove();
    return test_finish("test_dataset_open");
}
