/* test_data_shards.c: proves the row-range loaders (ax_dataset_load_*_rows,
 * the MPI ranks' shards; docs/mpi.md) return exactly the rows the whole-file
 * loaders return, for IDX (plain and gzipped), .npy (label column, labels
 * file, targets file), CSV (header, byte-order mark, CRLF, trailing blank
 * lines, a file larger than the streaming block) and axon prep batches, over
 * first, middle, last, single-row and empty ranges; that the classes are the
 * whole file's whatever the range; that the ax_dataset_count_* functions
 * agree with the whole-file row count; and that bad ranges, truncated files
 * and bad lines outside the range fail with messages naming the file. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "test_util.h"
#include "test_files.h"

/* part must be rows [first, first + count) of whole, classes included. */
static void check_same_rows(const ax_dataset *whole_in, const ax_dataset *part_in, int64_t first,
                            int64_t count, const char *what)
{
    ax_dataset *whole = (ax_dataset *)whole_in, *part = (ax_dataset *)part_in;
    const int64_t features = ax_dataset_features(whole), targets = ax_dataset_targets(whole);
    bool same = ax_dataset_rows(part) == count && ax_dataset_features(part) == features &&
                ax_dataset_classes(part) == ax_dataset_classes(whole) &&
                ax_dataset_targets(part) == targets;
    if (same && count > 0) {
        same = memcmp(ax_dataset_features_data(part),
                      ax_dataset_features_data(whole) + first * features,
                      (size_t)(count * features) * sizeof(float)) == 0;
        if (ax_dataset_labels_data(whole))
            same = same && memcmp(ax_dataset_labels_data(part), ax_dataset_labels_data(whole) + first,
                                  (size_t)count * sizeof(int32_t)) == 0;
        if (targets > 0)
            same = same && memcmp(ax_dataset_targets_data(part),
                                  ax_dataset_targets_data(whole) + first * targets,
                                  (size_t)(count * targets) * sizeof(float)) == 0;
    }
    if (!same) {
        fprintf(stderr, "%s: rows [%lld, %lld) differ from the whole file's\n", what,
                (long long)first, (long long)(first + count));
        test_failures++;
    }
}

/* The ranges every format is tried with, for a file of rows rows (>= 5). */
static void range_list(int64_t rows, int64_t ranges[][2], int *n)
{
    int64_t list[][2] = {{0, 1}, {0, 3}, {2, 3}, {rows / 2, rows - rows / 2}, {rows - 1, 1},
                         {rows - 2, 2}, {0, rows}, {3, 0}, {rows, 0}, {1, rows - 2}};
    *n = (int)(sizeof list / sizeof list[0]);
    memcpy(ranges, list, sizeof list);
}

/* ------------------------------------------------------------------ IDX */

enum { IDX_ROWS = 9, IDX_SIDE = 3 };

static void write_idx(const char *images, const char *labels, int rows, int cut_bytes)
{
    size_t pixels = (size_t)rows * IDX_SIDE * IDX_SIDE;
    unsigned char *data = malloc(16 + pixels);
    unsigned char header[16] = {0, 0, 8, 3, 0, 0, 0, (unsigned char)rows, 0, 0, 0, IDX_SIDE,
                                0, 0, 0, IDX_SIDE};
    memcpy(data, header, 16);
    for (size_t i = 0; i < pixels; i++)
        data[16 + i] = (unsigned char)(i * 37 + 11);
    write_file(images, data, 16 + pixels - (size_t)cut_bytes);
    unsigned char label_data[8 + 256] = {0, 0, 8, 1, 0, 0, 0, (unsigned char)rows};
    for (int i = 0; i < rows; i++)
        label_data[8 + i] = (unsigned char)(i % 4); /* ... */
    label_data[8 + rows - 1] = 7; /* the largest label only in the last row */
    write_file(labels, label_data, 8 + (size_t)rows);
    free(data);
}

static void test_idx(const char *suffix)
{
    char images[64], labels[64];
    snprintf(images, sizeof images, "images%s", suffix);
    snprintf(labels, sizeof labels, "labels%s", suffix);
    const char *images_path = in_work(images), *labels_path = in_work(labels);
    write_idx(images_path, labels_path, IDX_ROWS, 0);
    ax_dataset *whole = NULL, *part = NULL;
    CHECK_OK(ax_dataset_load_idx(images_path, labels_path, &whole));
    if (!whole)
        return;
    CHECK(ax_dataset_classes(whole) == 8);
    int64_t rows = 0;
    CHECK_OK(ax_dataset_count_idx(images_path, &rows));
    CHECK(rows == IDX_ROWS);
    int64_t ranges[16][2];
    int n = 0;
    range_list(IDX_ROWS, ranges, &n);
    for (int i = 0; i < n; i++) {
        CHECK_OK(ax_dataset_load_idx_rows(images_path, labels_path, ranges[i][0], ranges[i][1],
                                          &part));
        if (part)
            check_same_rows(whole, part, ranges[i][0], ranges[i][1], images_path);
        ax_dataset_free(part);
        part = NULL;
    }
    CHECK_FAILS(ax_dataset_load_idx_rows(images_path, labels_path, -1, 2, &part),
                AX_STATUS_BAD_ARGUMENT, "bad row range: first -1");
    CHECK_FAILS(ax_dataset_load_idx_rows(images_path, labels_path, 0, -3, &part),
                AX_STATUS_BAD_ARGUMENT, "count -3");
    CHECK_FAILS(ax_dataset_load_idx_rows(images_path, labels_path, 7, 3, &part),
                AX_STATUS_BAD_ARGUMENT, "3 images from row 7 on were asked for, but the file holds 9");
    CHECK_FAILS(ax_dataset_load_idx_rows(images_path, labels_path, 10, 0, &part),
                AX_STATUS_BAD_ARGUMENT, images_path);
    CHECK(part == NULL);
    ax_dataset_free(whole);
}

static void test_idx_damage(void)
{
    /* Plain: the header's size is checked against the file whatever the range. */
    write_idx(in_work("cut-images"), in_work("cut-labels"), IDX_ROWS, 5);
    ax_dataset *part = NULL;
    CHECK_FAILS(ax_dataset_load_idx_rows(in_work("cut-images"), in_work("cut-labels"), 0, 1,
                                         &part),
                AX_STATUS_BAD_FILE, "cut-images: truncated: header promises 9 images");
    /* Gzipped: cut inside image 6 (its stream is not complete either). */
    write_idx(in_work("cut-images.gz"), in_work("cut-labels.gz"), IDX_ROWS,
              3 * IDX_SIDE * IDX_SIDE - 2);
    CHECK_FAILS(ax_dataset_load_idx_rows(in_work("cut-images.gz"), in_work("cut-labels.gz"), 4,
                                         3, &part),
                AX_STATUS_BAD_FILE, "runs out at image 6 (0-based)");
    CHECK_FAILS(ax_dataset_load_idx_rows(in_work("cut-images.gz"), in_work("cut-labels.gz"), 8,
                                         1, &part),
                AX_STATUS_BAD_FILE, "runs out at image 6 (0-based)"); /* while skipping */
    /* Damage after the range is not seen by that range (documented). */
    CHECK_OK(ax_dataset_load_idx_rows(in_work("cut-images.gz"), in_work("cut-labels.gz"), 0, 2,
                                      &part));
    CHECK(part && ax_dataset_rows(part) == 2 && ax_dataset_classes(part) == 8);
    ax_dataset_free(part);
}

/* ------------------------------------------------------------------ npy */

enum { NPY_ROWS = 11, NPY_WIDTH = 4 };

static void check_npy_ranges(const char *features, const char *labels, double scale)
{
    ax_dataset *whole = NULL, *part = NULL;
    CHECK_OK(ax_dataset_load_npy(features, labels, scale, &whole));
    if (!whole)
        return;
    int64_t rows = 0;
    CHECK_OK(ax_dataset_count_npy(features, &rows));
    CHECK(rows == NPY_ROWS);
    int64_t ranges[16][2];
    int n = 0;
    range_list(NPY_ROWS, ranges, &n);
    for (int i = 0; i < n; i++) {
        CHECK_OK(ax_dataset_load_npy_rows(features, labels, scale, ranges[i][0], ranges[i][1],
                                          &part));
        if (part)
            check_same_rows(whole, part, ranges[i][0], ranges[i][1], features);
        ax_dataset_free(part);
        part = NULL;
    }
    CHECK_FAILS(ax_dataset_load_npy_rows(features, labels, scale, 5, 7, &part),
                AX_STATUS_BAD_ARGUMENT, "7 rows from row 5 on were asked for, but the file holds 11");
    ax_dataset_free(whole);
}

static void test_npy(void)
{
    float values[NPY_ROWS * NPY_WIDTH];
    int64_t labels[NPY_ROWS];
    double targets[NPY_ROWS * 2];
    for (int r = 0; r < NPY_ROWS; r++) {
        labels[r] = r == 0 ? 6 : r % 3; /* the largest label only in row 0 */
        values[r * NPY_WIDTH] = (float)labels[r];
        for (int c = 1; c < NPY_WIDTH; c++)
            values[r * NPY_WIDTH + c] = (float)(r * 10 + c) * 0.25f;
        targets[2 * r] = r * 0.5;
        targets[2 * r + 1] = -r;
    }
    char shape[32];
    snprintf(shape, sizeof shape, "(%d, %d)", NPY_ROWS, NPY_WIDTH);
    write_npy_array(in_work("x.npy"), "<f4", shape, values, sizeof values);
    snprintf(shape, sizeof shape, "(%d,)", NPY_ROWS);
    write_npy_array(in_work("y.npy"), "<i8", shape, labels, sizeof labels);
    snprintf(shape, sizeof shape, "(%d, 2)", NPY_ROWS);
    write_npy_array(in_work("t.npy"), "<f8", shape, targets, sizeof targets);
    check_npy_ranges(in_work("x.npy"), NULL, 1.0);   /* label in column 0 */
    check_npy_ranges(in_work("x.npy"), in_work("y.npy"), 0.5);
    check_npy_ranges(in_work("x.npy"), in_work("t.npy"), 1.0);
    ax_dataset *part = NULL;
    CHECK_OK(ax_dataset_load_npy_rows(in_work("x.npy"), NULL, 1.0, 5, 2, &part));
    CHECK(part && ax_dataset_classes(part) == 7); /* row 0's label counts */
    ax_dataset_free(part);
    part = NULL;
    /* A bad label outside the range is still found: labels are read whole. */
    labels[9] = -2;
    snprintf(shape, sizeof shape, "(%d,)", NPY_ROWS);
    write_npy_array(in_work("bad-y.npy"), "<i8", shape, labels, sizeof labels);
    CHECK_FAILS(ax_dataset_load_npy_rows(in_work("x.npy"), in_work("bad-y.npy"), 1.0, 0, 2, &part),
                AX_STATUS_BAD_DATA, "bad-y.npy: label [9] is -2");
    /* Truncated: the header's size is checked whatever the range. */
    snprintf(shape, sizeof shape, "(%d, %d)", NPY_ROWS, NPY_WIDTH);
    write_npy_array(in_work("cut.npy"), "<f4", shape, values, sizeof values - 4);
    CHECK_FAILS(ax_dataset_load_npy_rows(in_work("cut.npy"), NULL, 1.0, 0, 1, &part),
                AX_STATUS_BAD_FILE, "cut.npy: truncated");
    CHECK_FAILS(ax_dataset_load_npy_rows(in_work("x.npy"), NULL, 1.0, -1, 1, &part),
                AX_STATUS_BAD_ARGUMENT, "x.npy: bad row range");
    CHECK(part == NULL);
}

/* ------------------------------------------------------------------ CSV */

static void check_csv_ranges(const char *path, const ax_csv_options *options, int64_t expected)
{
    ax_dataset *whole = NULL, *part = NULL;
    CHECK_OK(ax_dataset_load_csv(path, options, &whole));
    if (!whole)
        return;
    int64_t rows = 0;
    CHECK_OK(ax_dataset_count_csv(path, options, &rows));
    CHECK(rows == expected && ax_dataset_rows(whole) == expected);
    int64_t ranges[16][2];
    int n = 0;
    range_list(rows, ranges, &n);
    for (int i = 0; i < n; i++) {
        CHECK_OK(ax_dataset_load_csv_rows(path, options, ranges[i][0], ranges[i][1], &part));
        if (part)
            check_same_rows(whole, part, ranges[i][0], ranges[i][1], path);
        ax_dataset_free(part);
        part = NULL;
    }
    CHECK_FAILS(ax_dataset_load_csv_rows(path, options, rows - 1, 2, &part),
                AX_STATUS_BAD_ARGUMENT, "were asked for, but the file holds");
    CHECK(part == NULL);
    ax_dataset_free(whole);
}

static void test_csv(void)
{
    ax_csv_options options = ax_csv_defaults();
    const char *small = "\xEF\xBB\xBF" "9,1,2\r\n0,3,4\r\n1,5.5,6\r\n2,7,8e1\r\n1,-9,10\r\n"
                        "0,11,12\r\n  \r\n\n \n";
    write_file(in_work("small.csv"), small, strlen(small));
    check_csv_ranges(in_work("small.csv"), &options, 6);
    options.header = true;
    const char *headed = "label,a,b\n4,1,2\n0,3,4\n1,5,6\n2,7,8\n3,9,10";
    write_file(in_work("headed.csv"), headed, strlen(headed));
    check_csv_ranges(in_work("headed.csv"), &options, 5);
    options.regression = true;
    options.label_column = -1;
    check_csv_ranges(in_work("headed.csv"), &options, 5);

    /* Larger than the 1 MiB streaming block: rows cross block boundaries. */
    enum { BIG_ROWS = 3001, BIG_COLUMNS = 120 };
    char *big = malloc((size_t)BIG_ROWS * BIG_COLUMNS * 8 + 16), *p = big;
    for (int r = 0; r < BIG_ROWS; r++) {
        p += sprintf(p, "%d", r == 1234 ? 12 : r % 10);
        for (int c = 1; c < BIG_COLUMNS; c++)
            p += sprintf(p, ",%d.%d", (r * 7 + c) % 1000, c % 10);
        *p++ = '\n';
    }
    write_file(in_work("big.csv"), big, (size_t)(p - big));
    CHECK(p - big > (1 << 20) + 1000);
    options = ax_csv_defaults();
    check_csv_ranges(in_work("big.csv"), &options, BIG_ROWS);
    ax_dataset *part = NULL;
    CHECK_OK(ax_dataset_load_csv_rows(in_work("big.csv"), &options, 2000, 5, &part));
    CHECK(part && ax_dataset_classes(part) == 13); /* row 1234's label counts */
    ax_dataset_free(part);
    part = NULL;
    /* A bad line after the range is still found: every line is parsed. */
    char *bad = strstr(big + 2000 * 100, "\n") + 1;
    bad[0] = 'x';
    int64_t bad_line = 1;
    for (char *q = big; q < bad; q++)
        bad_line += *q == '\n';
    write_file(in_work("bad.csv"), big, (size_t)(p - big));
    char expected[128];
    snprintf(expected, sizeof expected, "bad.csv: line %lld, column 1", (long long)bad_line);
    CHECK_FAILS(ax_dataset_load_csv_rows(in_work("bad.csv"), &options, 0, 10, &part),
                AX_STATUS_BAD_FILE, expected);
    CHECK_FAILS(ax_dataset_load_csv(in_work("bad.csv"), &options, &part), AX_STATUS_BAD_FILE,
                expected);
    free(big);
    /* A blank line inside the data, as the whole-file loader says it. */
    const char *blank = "1,2\n\n3,4\n";
    write_file(in_work("blank.csv"), blank, strlen(blank));
    CHECK_FAILS(ax_dataset_load_csv_rows(in_work("blank.csv"), &options, 0, 1, &part),
                AX_STATUS_BAD_FILE, "blank.csv: line 2 is blank, line 1 had 2 fields");
    write_file(in_work("empty.csv"), " \n\n", 3);
    CHECK_FAILS(ax_dataset_count_csv(in_work("empty.csv"), &options, &(int64_t){0}),
                AX_STATUS_BAD_FILE, "empty.csv: the file is empty");
    CHECK_FAILS(ax_dataset_load_csv_rows(in_work("empty.csv"), &options, 0, 0, &part),
                AX_STATUS_BAD_FILE, "empty.csv: the file is empty");
    CHECK(part == NULL);
}

/* -------------------------------------------------------------- batches */

static void test_batches(void)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/prep", work_dir);
    CHECK(mkdir(dir, 0700) == 0);
    const int sizes[3] = {4, 3, 5}; /* 12 rows in three batches, 2 x 2 x 1 images */
    char meta[1024];
    int used = snprintf(meta, sizeof meta, "{\"format\": \"axon-prep\", \"image_size\": 2, "
                                           "\"channels\": 1, \"labels\": [\"a\", \"b\", \"c\", "
                                           "\"d\"], \"batches\": [");
    for (int b = 0, row = 0; b < 3; b++) {
        unsigned char pixels[5 * 4];
        int32_t labels[5];
        for (int i = 0; i < sizes[b]; i++, row++) {
            labels[i] = row % 4;
            for (int j = 0; j < 4; j++)
                pixels[i * 4 + j] = (unsigned char)(row * 16 + j * 3);
        }
        char name[64], path[256], shape[32];
        snprintf(shape, sizeof shape, "(%d, 2, 2, 1)", sizes[b]);
        snprintf(name, sizeof name, "batch_%05d.npy", b);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        write_npy_array(path, "|u1", shape, pixels, (size_t)sizes[b] * 4);
        snprintf(shape, sizeof shape, "(%d,)", sizes[b]);
        snprintf(name, sizeof name, "batch_%05d_labels.npy", b);
        snprintf(path, sizeof path, "%s/%s", dir, name);
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
    ax_dataset *whole = NULL, *part = NULL;
    CHECK_OK(ax_dataset_load_batches(dir, &whole));
    if (!whole)
        return;
    int64_t rows = 0;
    CHECK_OK(ax_dataset_count_batches(dir, &rows));
    CHECK(rows == 12);
    int64_t ranges[16][2];
    int n = 0;
    range_list(12, ranges, &n);
    for (int i = 0; i < n; i++) {
        CHECK_OK(ax_dataset_load_batches_rows(dir, ranges[i][0], ranges[i][1], &part));
        if (part)
            check_same_rows(whole, part, ranges[i][0], ranges[i][1], dir);
        ax_dataset_free(part);
        part = NULL;
    }
    /* Only the batches holding rows of the range are opened: a missing last batch is not
     * seen by the first rows, and is by the last. */
    snprintf(path, sizeof path, "%s/batch_00002.npy", dir);
    CHECK(unlink(path) == 0);
    CHECK_OK(ax_dataset_load_batches_rows(dir, 0, 7, &part));
    ax_dataset_free(part);
    part = NULL;
    CHECK_FAILS(ax_dataset_load_batches_rows(dir, 6, 2, &part), AX_STATUS_BAD_FILE,
                "batch_00002.npy: cannot open");
    CHECK_FAILS(ax_dataset_load_batches_rows(dir, 11, 2, &part), AX_STATUS_BAD_ARGUMENT,
                "2 images from row 11 on were asked for, but the file holds 12");
    CHECK(part == NULL);
    ax_dataset_free(whole);
}

/* The real Fashion-MNIST, when installed: two halves are the whole. */
static void test_fashion_mnist(void)
{
    const char *dir = "/usr/share/datasets/fashion-mnist";
    struct stat info;
    if (stat(dir, &info) != 0)
        return;
    ax_dataset *whole = NULL, *part = NULL;
    CHECK_OK(ax_dataset_load_idx_dir(dir, true, &whole));
    if (!whole)
        return;
    int64_t rows = 0;
    CHECK_OK(ax_dataset_count_idx_dir(dir, true, &rows));
    CHECK(rows == 10000);
    const int64_t ranges[3][2] = {{0, 5000}, {5000, 5000}, {3333, 1}};
    for (int i = 0; i < 3; i++) {
        CHECK_OK(ax_dataset_load_idx_dir_rows(dir, true, ranges[i][0], ranges[i][1], &part));
        if (part)
            check_same_rows(whole, part, ranges[i][0], ranges[i][1], dir);
        ax_dataset_free(part);
        part = NULL;
    }
    ax_dataset_free(whole);
}

int main(void)
{
    if (!test_work_dir_make("axon-test-shards"))
        return 1;
    test_idx("");
    test_idx(".gz");
    test_idx_damage();
    test_npy();
    test_csv();
    test_batches();
    test_fashion_mnist();
    test_work_dir_remove();
    return test_finish("test_data_shards");
}
