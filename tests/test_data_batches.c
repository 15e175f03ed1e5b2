/* test_data_batches.c: proves ax_dataset_load_batches (batches.c) and the
 * streamed reader of the same folders (stream.c) read a hand-written
 * `axon prep` folder exactly and refuse every way its meta.json or batch
 * files can disagree, naming the file and the place.
 * - A folder of two batches, colour images, labels stored as int64 in one
 *   and uint8 in the other: features are pixel / 255 (float64 reference),
 *   labels and image shape as written; a row range spanning both batches
 *   equals those rows of the whole; the count is meta.json's.
 * - A row range inside the second batch opens only that batch: it loads
 *   even with the first batch's pixels replaced by garbage.
 * - meta.json refusals (missing, not JSON, not axon-prep, an unknown or
 *   non-string batch_format, image_size/channels absent or out of range,
 *   labels/batches not arrays, a batch without plain file names or a count,
 *   no images at all), each BAD_FILE or BAD_DATA with meta.json's path.
 * - batch file refusals (pixels of the wrong dtype or count, float or
 *   miscounted labels, a label outside the classes, a missing or truncated
 *   file), each naming the batch file; the output stays NULL.
 * - Streamed: an unshuffled evaluation pass gives the loaded rows; refused
 *   at opening: a view count other than 1 or 10, a crop that does not fit,
 *   float labels (naming the batch's place in meta.json), a mean image of
 *   another shape or with a value outside 0 .. 255 (NaN included); refused
 *   while reading: a label outside the classes (the pass stops, naming the
 *   file), a read outside a pass, a pass asked for more rows than it has. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "data/dataset.h"
#include "data/stream.h"
#include "test_util.h"
#include "test_files.h"

enum { SIDE = 2, CHANNELS = 3, PIXELS = SIDE * SIDE * CHANNELS, ROWS0 = 3, ROWS1 = 2 };

static char dir[128];
static unsigned char pixels[ROWS0 + ROWS1][PIXELS];
static const int32_t labels[ROWS0 + ROWS1] = {1, 0, 1, 1, 0};

static const char *in_dir(const char *name)
{
    static char paths[4][256];
    static int next;
    char *path = paths[next++ % 4];
    snprintf(path, 256, "%s/%s", dir, name);
    return path;
}

static const char *batch_list =
    "[{\"data\": \"b0.npy\", \"labels\": \"b0_labels.npy\", \"images\": 3}, "
    "{\"data\": \"b1.npy\", \"labels\": \"b1_labels.npy\", \"images\": 2}]";

/* meta.json with the given fields after "format" (the good ones by default). */
static void write_meta(const char *text)
{
    write_file(in_dir("meta.json"), text, strlen(text));
}

static void write_good_meta(void)
{
    char meta[1024];
    snprintf(meta, sizeof meta,
             "{\"format\": \"axon-prep\", \"version\": 1, \"batch_format\": \"raw\", "
             "\"image_size\": %d, \"channels\": %d, \"labels\": [\"cat\", \"dog\"], "
             "\"batches\": %s}",
             SIDE, CHANNELS, batch_list);
    write_meta(meta);
}

/* The two batches as prep writes them, batch 0's labels as int64 and batch 1's as uint8. */
static void write_good_batches(void)
{
    write_npy_array(in_dir("b0.npy"), "|u1", "(3, 2, 2, 3)", pixels[0], ROWS0 * PIXELS);
    write_npy_array(in_dir("b1.npy"), "|u1", "(2, 2, 2, 3)", pixels[ROWS0], ROWS1 * PIXELS);
    int64_t wide[ROWS0];
    for (int i = 0; i < ROWS0; i++)
        wide[i] = labels[i];
    write_npy_array(in_dir("b0_labels.npy"), "<i8", "(3,)", wide, sizeof wide);
    unsigned char narrow[ROWS1] = {(unsigned char)labels[3], (unsigned char)labels[4]};
    write_npy_array(in_dir("b1_labels.npy"), "|u1", "(2,)", narrow, sizeof narrow);
}

/* Rows [first, first + count) of data equal the written rows from `from` on. */
static void check_rows(ax_dataset *data, int first, int count)
{
    CHECK(ax_dataset_rows(data) == count);
    CHECK(ax_dataset_features(data) == PIXELS);
    CHECK(ax_dataset_classes(data) == 2);
    int64_t shape[3] = {0, 0, 0};
    CHECK(ax_dataset_image_shape(data, shape));
    CHECK(shape[0] == SIDE && shape[1] == SIDE && shape[2] == CHANNELS);
    const float *x = ax_dataset_features_data(data);
    const int32_t *y = ax_dataset_labels_data(data);
    int wrong = 0;
    for (int i = 0; i < count; i++) {
        wrong += y[i] != labels[first + i];
        for (int j = 0; j < PIXELS; j++) {
            double want = pixels[first + i][j] / 255.0;
            wrong += fabs(x[(size_t)i * PIXELS + j] - want) > 1e-7;
        }
    }
    CHECK(wrong == 0);
}

static void test_good_folder(void)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_load_batches(dir, &data));
    if (data)
        check_rows(data, 0, ROWS0 + ROWS1);
    ax_dataset_free(data);
    int64_t rows = 0;
    CHECK_OK(ax_dataset_count_batches(dir, &rows));
    CHECK(rows == ROWS0 + ROWS1);
    data = NULL;
    CHECK_OK(ax_dataset_load_batches_rows(dir, 2, 2, &data)); /* the last of b0, the first of b1 */
    if (data)
        check_rows(data, 2, 2);
    ax_dataset_free(data);
}

/* Rows of batch 1 alone never open batch 0: garbage there is not read. */
static void test_range_opens_only_its_batches(void)
{
    write_file(in_dir("b0.npy"), "not a .npy file", 15);
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_load_batches_rows(dir, ROWS0, ROWS1, &data));
    if (data)
        check_rows(data, ROWS0, ROWS1);
    ax_dataset_free(data);
    data = (ax_dataset *)1;
    CHECK_FAILS(ax_dataset_load_batches(dir, &data), AX_STATUS_BAD_FILE,
                "b0.npy: not a .npy file");
    CHECK(data == NULL);
    write_good_batches();
}

/* meta.json text that must be refused with status and a message holding text. */
static void check_meta_refused(const char *meta, ax_status status, const char *text)
{
    write_meta(meta);
    ax_dataset *data = (ax_dataset *)1;
    ax_status got = ax_dataset_load_batches(dir, &data);
    if (got != status || !strstr(ax_error_message(), text) ||
        !strstr(ax_error_message(), in_dir("meta.json"))) {
        fprintf(stderr, "meta.json %s\n  expected %s with \"%s\", got %s: %s\n", meta,
                ax_status_name(status), text, ax_status_name(got), ax_error_message());
        test_failures++;
    }
    CHECK(data == NULL);
    int64_t rows = -1;
    CHECK(ax_dataset_count_batches(dir, &rows) == status);
    CHECK(rows == 0);
}

static void test_meta_refusals(void)
{
    char meta[1024];
    ax_dataset *data = (ax_dataset *)1;
    CHECK_FAILS(ax_dataset_load_batches(in_dir("absent"), &data), AX_STATUS_BAD_FILE,
                "absent/meta.json: cannot open: No such file or directory (is this a folder "
                "made by axon prep?)");
    CHECK(data == NULL);
    CHECK_FAILS(ax_dataset_load_batches(NULL, &data), AX_STATUS_BAD_ARGUMENT,
                "batches: no folder or no output given");
    CHECK_FAILS(ax_dataset_load_batches(dir, NULL), AX_STATUS_BAD_ARGUMENT,
                "batches: no folder or no output given");

    check_meta_refused("{\"format\": \"axon-prep\", \"image_size\": ", AX_STATUS_BAD_FILE, "");
    check_meta_refused("{\"image_size\": 2}", AX_STATUS_BAD_FILE,
                       "not an axon prep metadata file (no \"format\": \"axon-prep\")");
    check_meta_refused("{\"format\": \"axon-pre\"}", AX_STATUS_BAD_FILE,
                       "not an axon prep metadata file");
    check_meta_refused("{\"format\": \"axon-prep\", \"batch_format\": \"png\"}", AX_STATUS_BAD_FILE,
                       "\"batch_format\" is \"png\"; this axon reads \"raw\" and \"jpeg\"");
    check_meta_refused("{\"format\": \"axon-prep\", \"batch_format\": 7}", AX_STATUS_BAD_FILE,
                       "\"batch_format\" is not a string; this axon reads");
    check_meta_refused("{\"format\": \"axon-prep\", \"channels\": 3}", AX_STATUS_BAD_FILE,
                       "\"image_size\" is missing or not a count");
    check_meta_refused("{\"format\": \"axon-prep\", \"image_size\": -2, \"channels\": 3}",
                       AX_STATUS_BAD_FILE, "\"image_size\" is missing or not a count");
    check_meta_refused("{\"format\": \"axon-prep\", \"image_size\": 2, \"channels\": \"3\"}",
                       AX_STATUS_BAD_FILE, "\"channels\" is missing or not a count");
    check_meta_refused("{\"format\": \"axon-prep\", \"image_size\": 2, \"channels\": 2}",
                       AX_STATUS_BAD_FILE, "image_size 2 or channels 2 out of range");
    check_meta_refused("{\"format\": \"axon-prep\", \"image_size\": 0, \"channels\": 1}",
                       AX_STATUS_BAD_FILE, "image_size 0 or channels 1 out of range");

    const char *head = "{\"format\": \"axon-prep\", \"image_size\": 2, \"channels\": 3";
    snprintf(meta, sizeof meta, "%s, \"labels\": [], \"batches\": %s}", head, batch_list);
    check_meta_refused(meta, AX_STATUS_BAD_FILE, "\"labels\" and \"batches\" must be arrays");
    snprintf(meta, sizeof meta, "%s, \"labels\": {\"a\": 1}, \"batches\": %s}", head, batch_list);
    check_meta_refused(meta, AX_STATUS_BAD_FILE, "\"labels\" and \"batches\" must be arrays");
    snprintf(meta, sizeof meta, "%s, \"labels\": [\"a\"], \"batches\": {}}", head);
    check_meta_refused(meta, AX_STATUS_BAD_FILE, "\"labels\" and \"batches\" must be arrays");
    snprintf(meta, sizeof meta, "%s, \"labels\": [\"a\"], \"batches\": []}", head);
    check_meta_refused(meta, AX_STATUS_BAD_DATA, "lists no images");
    snprintf(meta, sizeof meta, "%s, \"labels\": [\"a\"], \"batches\": [{\"data\": \"b0.npy\", "
             "\"labels\": \"b0_labels.npy\", \"images\": 0}]}", head);
    check_meta_refused(meta, AX_STATUS_BAD_DATA, "lists no images");
    /* The place: the second batch (1) is the broken one. */
    snprintf(meta, sizeof meta, "%s, \"labels\": [\"a\"], \"batches\": [{\"data\": \"b0.npy\", "
             "\"labels\": \"b0_labels.npy\", \"images\": 3}, {\"data\": \"../b1.npy\", "
             "\"labels\": \"b1_labels.npy\", \"images\": 2}]}", head);
    check_meta_refused(meta, AX_STATUS_BAD_FILE,
                       "batch 1 lacks plain \"data\" and \"labels\" file names");
    snprintf(meta, sizeof meta, "%s, \"labels\": [\"a\"], \"batches\": [{\"data\": \"b0.npy\", "
             "\"labels\": \"sub/b0_labels.npy\", \"images\": 3}]}", head);
    check_meta_refused(meta, AX_STATUS_BAD_FILE, "batch 0 lacks plain");
    snprintf(meta, sizeof meta, "%s, \"labels\": [\"a\"], \"batches\": [{\"data\": \"b0.npy\", "
             "\"images\": 3}]}", head);
    check_meta_refused(meta, AX_STATUS_BAD_FILE, "batch 0 lacks plain");
    snprintf(meta, sizeof meta, "%s, \"labels\": [\"a\"], \"batches\": [{\"data\": \"b0.npy\", "
             "\"labels\": \"b0_labels.npy\"}]}", head);
    check_meta_refused(meta, AX_STATUS_BAD_FILE, "\"images\" is missing or not a count");
    write_good_meta();
}

/* A batch file that must be refused, naming file; the output stays NULL. */
static void check_batch_refused(ax_status status, const char *file, const char *text)
{
    ax_dataset *data = (ax_dataset *)1;
    ax_status got = ax_dataset_load_batches(dir, &data);
    if (got != status || !strstr(ax_error_message(), text) ||
        !strstr(ax_error_message(), in_dir(file))) {
        fprintf(stderr, "%s: expected %s with \"%s\", got %s: %s\n", file,
                ax_status_name(status), text, ax_status_name(got), ax_error_message());
        test_failures++;
    }
    CHECK(data == NULL);
    write_good_batches();
}

static void test_batch_refusals(void)
{
    float floats[ROWS1 * PIXELS] = {0};
    write_npy_array(in_dir("b1.npy"), "<f4", "(2, 2, 2, 3)", floats, sizeof floats);
    check_batch_refused(AX_STATUS_BAD_FILE, "b1.npy",
                        "expected uint8 (2, 2, 2, 3) as meta.json says, found dtype <f4 with 4 "
                        "dimensions");
    write_npy_array(in_dir("b1.npy"), "|u1", "(3, 2, 2, 3)", pixels[0], ROWS0 * PIXELS);
    check_batch_refused(AX_STATUS_BAD_FILE, "b1.npy", "expected uint8 (2, 2, 2, 3)");
    write_npy_array(in_dir("b1.npy"), "|u1", "(2, 12)", pixels[ROWS0], ROWS1 * PIXELS);
    check_batch_refused(AX_STATUS_BAD_FILE, "b1.npy", "with 2 dimensions");
    /* The header promises 2 images; the file holds one and a half. */
    write_npy_array(in_dir("b1.npy"), "|u1", "(2, 2, 2, 3)", pixels[ROWS0], PIXELS + 6);
    check_batch_refused(AX_STATUS_BAD_FILE, "b1.npy", "");
    CHECK(remove(in_dir("b1.npy")) == 0);
    check_batch_refused(AX_STATUS_BAD_FILE, "b1.npy", "cannot open");

    float float_labels[ROWS1] = {1, 0};
    write_npy_array(in_dir("b1_labels.npy"), "<f4", "(2,)", float_labels, sizeof float_labels);
    check_batch_refused(AX_STATUS_BAD_FILE, "b1_labels.npy", "expected 2 integer labels");
    int32_t three[3] = {0, 1, 0};
    write_npy_array(in_dir("b1_labels.npy"), "<i4", "(3,)", three, sizeof three);
    check_batch_refused(AX_STATUS_BAD_FILE, "b1_labels.npy", "expected 2 integer labels");
    write_npy_array(in_dir("b1_labels.npy"), "<i4", "(2, 1)", three, 2 * sizeof three[0]);
    check_batch_refused(AX_STATUS_BAD_FILE, "b1_labels.npy", "expected 2 integer labels");
    int64_t beyond[ROWS0] = {0, 2, 1}; /* 2 classes: label 2 is one past the last */
    write_npy_array(in_dir("b0_labels.npy"), "<i8", "(3,)", beyond, sizeof beyond);
    check_batch_refused(AX_STATUS_BAD_DATA, "b0_labels.npy",
                        "label [1] is 2, outside 0 .. 1 (meta.json lists 2 labels)");
    int8_t negative[ROWS1] = {1, -1};
    write_npy_array(in_dir("b1_labels.npy"), "|i1", "(2,)", negative, sizeof negative);
    check_batch_refused(AX_STATUS_BAD_DATA, "b1_labels.npy", "label [1] is -1, outside 0 .. 1");
}

/* One evaluation pass of a streamed set, in meta.json's order, into rows. */
static ax_status stream_pass(ax_dataset *streamed, int64_t count, float *rows)
{
    const ax_stream_pass pass = {.training = false, .shuffle = false, .seed = 1, .epoch = 0};
    ax_status status = ax_batch_stream_begin(streamed->stream, &pass);
    ax_dataset *window = NULL;
    if (status == AX_STATUS_OK)
        status = ax_batch_stream_next(streamed->stream, count, &window);
    if (status == AX_STATUS_OK && rows)
        memcpy(rows, window->feature_values, (size_t)(count * PIXELS) * sizeof *rows);
    ax_batch_stream_end(streamed->stream);
    return status;
}

static void test_stream(void)
{
    ax_dataset *whole = NULL, *streamed = NULL;
    CHECK_OK(ax_dataset_load_batches(dir, &whole));
    CHECK_OK(ax_batch_stream_open(dir, 0, false, NULL, 1, 1, 0.0, &streamed));
    if (!whole || !streamed) {
        ax_dataset_free(whole);
        ax_dataset_free(streamed);
        return;
    }
    CHECK(ax_dataset_rows(streamed) == ROWS0 + ROWS1);
    float rows[(ROWS0 + ROWS1) * PIXELS];
    CHECK_OK(stream_pass(streamed, ROWS0 + ROWS1, rows));
    CHECK(memcmp(rows, ax_dataset_features_data(whole), sizeof rows) == 0);
    ax_dataset *window = (ax_dataset *)1;
    CHECK_FAILS(ax_batch_stream_next(streamed->stream, 1, &window), AX_STATUS_BAD_ARGUMENT,
                "a streamed set read outside a pass");
    CHECK(window == NULL);
    CHECK_FAILS(stream_pass(streamed, ROWS0 + ROWS1 + 1, NULL), AX_STATUS_BAD_ARGUMENT,
                "a pass asked for more than its 5 rows");
    ax_dataset_free(streamed);
    ax_dataset_free(whole);

    /* A label outside the classes is found as the file is read. */
    int64_t beyond[ROWS0] = {0, 2, 1};
    write_npy_array(in_dir("b0_labels.npy"), "<i8", "(3,)", beyond, sizeof beyond);
    streamed = NULL;
    CHECK_OK(ax_batch_stream_open(dir, 0, false, NULL, 1, 1, 0.0, &streamed));
    if (streamed) {
        CHECK_FAILS(stream_pass(streamed, 2, NULL), AX_STATUS_BAD_DATA,
                    "b0_labels.npy: label [1] is 2, outside 0 .. 1 (meta.json lists 2 labels)");
        ax_dataset_free(streamed);
    }
    write_good_batches();

    streamed = (ax_dataset *)1;
    CHECK_FAILS(ax_batch_stream_open(dir, 0, false, NULL, 1, 3, 0.0, &streamed),
                AX_STATUS_BAD_ARGUMENT, "3 views: 1 (the centre crop) or 10");
    CHECK(streamed == NULL);
    CHECK_FAILS(ax_batch_stream_open(dir, 3, false, NULL, 1, 1, 0.0, &streamed),
                AX_STATUS_BAD_ARGUMENT, "a crop of 3 x 3 does not fit its 2 x 2 images");
    CHECK_FAILS(ax_batch_stream_open(dir, -1, false, NULL, 1, 1, 0.0, &streamed),
                AX_STATUS_BAD_ARGUMENT, "does not fit");
    float float_labels[ROWS1] = {1, 0};
    write_npy_array(in_dir("b1_labels.npy"), "<f4", "(2,)", float_labels, sizeof float_labels);
    CHECK_FAILS(ax_batch_stream_open(dir, 0, false, NULL, 1, 1, 0.0, &streamed),
                AX_STATUS_BAD_FILE, "b1_labels.npy: expected 2 integer labels");
    CHECK(strstr(ax_error_message(), "batch 2 of 2 in ") && strstr(ax_error_message(), dir));
    CHECK(streamed == NULL);
    write_good_batches();

    float mean[PIXELS];
    for (int i = 0; i < PIXELS; i++)
        mean[i] = 100.0f;
    write_npy_array(in_dir("mean_grey.npy"), "<f4", "(2, 2, 1)", mean, 4 * sizeof *mean);
    CHECK_FAILS(ax_batch_stream_open(dir, 0, false, in_dir("mean_grey.npy"), 1, 1, 0.0, &streamed),
                AX_STATUS_BAD_FILE, "mean_grey.npy: expected a float32 (2, 2, 3) mean image");
    write_npy_array(in_dir("mean_f8.npy"), "<f8", "(2, 2, 3)", (double[PIXELS]){0}, PIXELS * 8);
    CHECK_FAILS(ax_batch_stream_open(dir, 0, false, in_dir("mean_f8.npy"), 1, 1, 0.0, &streamed),
                AX_STATUS_BAD_FILE, "found dtype <f8 with 3 dimensions");
    mean[5] = 255.5f;
    write_npy_array(in_dir("mean_big.npy"), "<f4", "(2, 2, 3)", mean, sizeof mean);
    CHECK_FAILS(ax_batch_stream_open(dir, 0, false, in_dir("mean_big.npy"), 1, 1, 0.0, &streamed),
                AX_STATUS_BAD_DATA, "mean_big.npy: value [5] is 255.5, not a mean of pixels");
    mean[5] = 100.0f;
    mean[7] = NAN;
    write_npy_array(in_dir("mean_nan.npy"), "<f4", "(2, 2, 3)", mean, sizeof mean);
    CHECK_FAILS(ax_batch_stream_open(dir, 0, false, in_dir("mean_nan.npy"), 1, 1, 0.0, &streamed),
                AX_STATUS_BAD_DATA, "mean_nan.npy: value [7] is nan, not a mean of pixels");
    CHECK(streamed == NULL);
    /* A good mean is subtracted before the 1/255. */
    mean[7] = 100.0f;
    write_npy_array(in_dir("mean.npy"), "<f4", "(2, 2, 3)", mean, sizeof mean);
    CHECK_OK(ax_batch_stream_open(dir, 0, false, in_dir("mean.npy"), 1, 1, 0.0, &streamed));
    if (streamed) {
        float rows_less_mean[ROWS0 * PIXELS];
        CHECK_OK(stream_pass(streamed, ROWS0, rows_less_mean));
        int wrong = 0;
        for (int i = 0; i < ROWS0; i++)
            for (int j = 0; j < PIXELS; j++)
                wrong += fabs(rows_less_mean[i * PIXELS + j] - (pixels[i][j] - 100.0) / 255.0) > 1e-7;
        CHECK(wrong == 0);
        ax_dataset_free(streamed);
    }
}

int main(void)
{
    if (!test_work_dir_make("axon-batches"))
        return 1;
    snprintf(dir, sizeof dir, "%s/prep", work_dir);
    CHECK(mkdir(dir, 0700) == 0);
    for (int i = 0; i < ROWS0 + ROWS1; i++)
        for (int j = 0; j < PIXELS; j++) /* 0 and 255, the ends of the scale, among others */
            pixels[i][j] = (unsigned char)(i == 0 ? (j == 0 ? 0 : 255) : (i * 53 + j * 17) % 256);
    write_good_batches();
    write_good_meta();
    test_good_folder();
    test_range_opens_only_its_batches();
    test_meta_refusals();
    test_batch_refusals();
    test_stream();
    test_good_folder(); /* the refusals left nothing behind that changes a good load */
    test_work_dir_remove();
    return test_finish("test_data_batches");
}
