/* test_data_csv.c: proves the CSV loader reads exact values (integers,
 * decimals, exponents, negative numbers) with the label in any column, a
 * header, scaling, another delimiter, CRLF, no final newline and blank
 * trailing lines; makes regression sets; and refuses ragged rows,
 * non-numbers, empty fields, blank lines, NaN/Inf, bad labels and an
 * out-of-range label column with messages naming the file, line and column.
 * Then loads the Galaxy Zoo test set the project ships (data/) and
 * compares it with the file's own text. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"
#include "test_files.h"

static char expected[1024];
#define EXPECT(...) (snprintf(expected, sizeof expected, __VA_ARGS__), expected)

/* Writes text to a file in the temporary folder; the last 8 paths stay valid. */
static const char *write_csv(const char *name, const char *text)
{
    const char *path = in_work(name);
    write_file(path, text, strlen(text));
    return path;
}

static ax_csv_options options_with(int64_t label_column, bool header, bool regression)
{
    ax_csv_options options = ax_csv_defaults();
    options.label_column = label_column;
    options.header = header;
    options.regression = regression;
    return options;
}

static void test_defaults(void)
{
    ax_csv_options options = ax_csv_defaults();
    CHECK(options.label_column == 0);
    CHECK(!options.header);
    CHECK(!options.regression);
    CHECK(options.scale == 1.0);
    CHECK(options.delimiter == ',');
}

/* The same 3 x 3 table, label first, written in every accepted layout. */
static void check_small(const char *path, const ax_csv_options *options)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_load_csv(path, options, &data));
    if (!data)
        return;
    CHECK(ax_dataset_rows(data) == 3);
    CHECK(ax_dataset_features(data) == 2);
    CHECK(ax_dataset_classes(data) == 3);
    CHECK(ax_dataset_targets(data) == 0);
    CHECK(strcmp(ax_dataset_source(data), path) == 0);
    const int32_t *labels = ax_dataset_labels_data(data);
    CHECK(labels[0] == 1 && labels[1] == 0 && labels[2] == 2);
    const float *x = ax_dataset_features_data(data);
    CHECK(x[0] == 10.0f && x[1] == 0.5f);
    CHECK(x[2] == -3.0f && x[3] == 1.5e-3f);
    CHECK(x[4] == 255.0f && x[5] == 0.1f);
    ax_dataset_free(data);
}

static void test_good_files(void)
{
    ax_csv_options defaults = ax_csv_defaults();
    check_small(write_csv("lf.csv", "1,10,0.5\n0,-3,1.5e-3\n2,255,.1\n"), &defaults);
    check_small(write_csv("crlf.csv", "1,10,0.5\r\n0,-3,1.5e-3\r\n2,255,.1\r\n"), &defaults);
    check_small(write_csv("no-final-newline.csv", "1,10,0.5\n0,-3,1.5e-3\n2,255,.1"),
                &defaults);
    check_small(write_csv("blank-tail.csv", "1,10,0.5\n0,-3,1.5e-3\n2,255,.1\n\n\r\n\n"),
                &defaults);
    check_small(write_csv("spaces.csv", "1, 10 ,0.5\n0 ,-3, 1.5e-3\n2,+255,0.1\n"), &defaults);
    check_small(write_csv("bom.csv", "\xEF\xBB\xBF" "1,10,0.5\n0,-3,1.5e-3\n2,255,.1\n"),
                &defaults);
    check_small(write_csv("float-labels.csv", "1.0,10,0.5\n0,-3,1.5e-3\n2e0,255,.1\n"),
                &defaults);
    ax_csv_options header = options_with(0, true, false);
    check_small(write_csv("header.csv", "label,a,b\n1,10,0.5\n0,-3,1.5e-3\n2,255,.1\n"),
                &header);
    ax_csv_options last = options_with(-1, false, false);
    check_small(write_csv("label-last.csv", "10,0.5,1\n-3,1.5e-3,0\n255,.1,2\n"), &last);
    ax_csv_options middle = options_with(1, false, false);
    check_small(write_csv("label-middle.csv", "10,1,0.5\n-3,0,1.5e-3\n255,2,.1\n"), &middle);
    ax_csv_options semicolon = ax_csv_defaults();
    semicolon.delimiter = ';';
    check_small(write_csv("semicolon.csv", "1;10;0.5\n0;-3;1.5e-3\n2;255;.1\n"), &semicolon);
    ax_csv_options tab = ax_csv_defaults();
    tab.delimiter = '\t';
    check_small(write_csv("tab.tsv", "1\t10\t0.5\n0\t-3\t1.5e-3\n2\t255\t.1\n"), &tab);
    check_small(write_csv("null-options.csv", "1,10,0.5\n0,-3,1.5e-3\n2,255,.1\n"), NULL);

    /* Scaling multiplies features, never labels; long integers take strtod's path. */
    ax_dataset *data = NULL;
    ax_csv_options scaled = ax_csv_defaults();
    scaled.scale = 1.0 / 255.0;
    CHECK_OK(ax_dataset_load_csv(write_csv("scaled.csv", "3,255,0,51\n1,1234567890123456789,1,2"),
                                 &scaled, &data));
    if (data) {
        const float *x = ax_dataset_features_data(data);
        CHECK(x[0] == 1.0f && x[1] == 0.0f && x[2] == (float)(51.0 / 255.0));
        CHECK(x[3] == (float)(1234567890123456789.0 / 255.0));
        CHECK(ax_dataset_labels_data(data)[0] == 3 && ax_dataset_classes(data) == 4);
    }
    ax_dataset_free(data);

    /* Regression: the label column is a float target. */
    ax_csv_options regression = options_with(-1, true, true);
    CHECK_OK(ax_dataset_load_csv(write_csv("regression.csv", "x1,x2,y\n1,2,-0.25\n3,4,1e3\n"),
                                 &regression, &data));
    if (data) {
        CHECK(ax_dataset_rows(data) == 2 && ax_dataset_features(data) == 2);
        CHECK(ax_dataset_classes(data) == 0 && ax_dataset_targets(data) == 1);
        CHECK(ax_dataset_labels_data(data) == NULL);
        const float *y = ax_dataset_targets_data(data);
        CHECK(y[0] == -0.25f && y[1] == 1000.0f);
        const float *x = ax_dataset_features_data(data);
        CHECK(x[0] == 1.0f && x[3] == 4.0f);
    }
    ax_dataset_free(data);
}

static void test_bad_files(void)
{
    ax_dataset *data = NULL;
    ax_csv_options defaults = ax_csv_defaults();
    const char *path = write_csv("missing.csv", "");
    unlink(path);
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: cannot open: No such file or directory", path));
    CHECK(data == NULL);
    CHECK_FAILS(ax_dataset_load_csv(work_dir, &defaults, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: not a regular file", work_dir));

    path = write_csv("empty.csv", "");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: the file is empty", path));
    path = write_csv("blank.csv", "\n\r\n  \n");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: the file is empty", path));
    ax_csv_options header = options_with(0, true, false);
    path = write_csv("header-only.csv", "label,a,b\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &header, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: no data rows after the header line", path));

    /* Ragged rows: line numbers are 1-based lines of the file, header included. */
    path = write_csv("short-row.csv", "0,1,2,3\n1,1,2,3\n0,1,2\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: line 3 has 3 fields, line 1 had 4", path));
    path = write_csv("long-row.csv", "a,b,c\n0,1,2\n1,1,2,3,4\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &header, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: line 3 has 5 fields, line 2 had 3", path));
    path = write_csv("blank-line.csv", "0,1,2\n\n1,1,2\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: line 2 is blank, line 1 had 3 fields", path));
    path = write_csv("single-column.csv", "1\n2\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: line 1 has a single field", path));
    ax_csv_options semicolon = ax_csv_defaults();
    semicolon.delimiter = ';';
    path = write_csv("wrong-delimiter.csv", "1,2,3\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &semicolon, &data), AX_STATUS_BAD_FILE,
                "is the delimiter ';' right?");

    /* Fields that are not numbers are quoted, cut to 32 characters. */
    path = write_csv("word.csv", "0,1,2\n1,1,2\n0,1,2\n1,3,abc\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: line 4, column 3: \"abc\" is not a number", path));
    path = write_csv("suffix.csv", "0,12kg,2\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: line 1, column 2: \"12kg\" is not a number", path));
    path = write_csv("long-word.csv",
                     "0,1,2\n1,1,this field is far longer than thirty-two characters\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: line 2, column 3: \"this field is far longer than th...\" is not a "
                       "number",
                       path));
    path = write_csv("empty-field.csv", "0,1,2\n1,,2\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: line 2, column 2: empty field", path));
    path = write_csv("empty-last-field.csv", "0,1,2\n1,2,\n0,1,2\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: line 2, column 3: empty field", path));
    path = write_csv("quoted.csv", "0,\"1\",2\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: line 1, column 2: \"\"1\"\" is not a number", path));
    path = write_csv("lone-cr.csv", "0,1,2\r1,1,2\r");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: line 1, column 3:", path));

    /* NaN and Inf are refused where they stand. */
    path = write_csv("nan.csv", "0,1,2\n1,1,2\n0,1,2\n1,1,2\n0,1,nan\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: line 5, column 3: NaN", path));
    path = write_csv("inf.csv", "0,-inf,2\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: line 1, column 2: -Inf", path));
    path = write_csv("overflow.csv", "0,1,2\n1,1e999,2\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: line 2, column 2: Inf (a number too large for a double)", path));
    path = write_csv("float-overflow.csv", "0,1e300,2\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: line 1, column 2: 1e+300 overflows float after scaling", path));
    path = write_csv("nan-label.csv", "NaN,1,2\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: line 1, column 1: NaN", path));

    /* Class labels must be non-negative integers. */
    path = write_csv("negative-label.csv", "0,1,2\n-1,1,2\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: line 2, column 1: label -1 is not a non-negative integer", path));
    ax_csv_options last = options_with(-1, false, false);
    path = write_csv("fraction-label.csv", "1,2,0\n1,2,1.5\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &last, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: line 2, column 3: label 1.5 is not a non-negative integer", path));
    path = write_csv("huge-label.csv", "3e9,1,2\n");
    CHECK_FAILS(ax_dataset_load_csv(path, &defaults, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: line 1, column 1: label 3e+09 is not", path));

    /* Options out of range. */
    path = write_csv("three.csv", "0,1,2\n");
    ax_csv_options far = options_with(3, false, false);
    CHECK_FAILS(ax_dataset_load_csv(path, &far, &data), AX_STATUS_BAD_ARGUMENT,
                EXPECT("%s: label column 3 is out of range: line 1 has 3 fields (columns 0 to 2)",
                       path));
    ax_csv_options negative = options_with(-3, false, false);
    CHECK_FAILS(ax_dataset_load_csv(path, &negative, &data), AX_STATUS_BAD_ARGUMENT,
                EXPECT("%s: label column -3 is out of range", path));
    /* AX_CSV_NO_LABEL (-2): the three fields are features, no labels. */
    ax_csv_options none = options_with(AX_CSV_NO_LABEL, false, false);
    CHECK_OK(ax_dataset_load_csv(path, &none, &data));
    CHECK(data && ax_dataset_features(data) == 3 && ax_dataset_classes(data) == 0 &&
          ax_dataset_labels_data(data) == NULL && ax_dataset_features_data(data)[2] == 2.0f);
    ax_dataset_free(data);
    data = NULL;
    ax_csv_options dot = ax_csv_defaults();
    dot.delimiter = '.';
    CHECK_FAILS(ax_dataset_load_csv(path, &dot, &data), AX_STATUS_BAD_ARGUMENT,
                EXPECT("%s: the CSV delimiter cannot be '.'", path));
    ax_csv_options newline = ax_csv_defaults();
    newline.delimiter = '\n';
    CHECK_FAILS(ax_dataset_load_csv(path, &newline, &data), AX_STATUS_BAD_ARGUMENT,
                "cannot be a line break");
    ax_csv_options infinite = ax_csv_defaults();
    infinite.scale = INFINITY;
    CHECK_FAILS(ax_dataset_load_csv(path, &infinite, &data), AX_STATUS_BAD_ARGUMENT,
                EXPECT("%s: the feature scale must be finite", path));
    CHECK(data == NULL);
}

static double cpu_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* The n-th (0-based) comma-separated field of a line, by a plain scan. */
static long field_of(const char *line, int n)
{
    for (int i = 0; i < n; i++) {
        line = strchr(line, ',');
        if (!line)
            return -1;
        line++;
    }
    return strtol(line, NULL, 10);
}

/* Every value of line `row` (0-based) of the file against the dataset. */
static void check_row_against_text(const char *path, int64_t row, ax_dataset *data)
{
    FILE *file = fopen(path, "r");
    CHECK(file != NULL);
    if (!file)
        return;
    static char line[16384];
    for (int64_t i = 0; i <= row; i++)
        CHECK(fgets(line, sizeof line, file) != NULL);
    fclose(file);
    const float *x = ax_dataset_features_data(data) + row * 1024;
    CHECK(ax_dataset_labels_data(data)[row] == field_of(line, 0));
    int mismatches = 0;
    for (int column = 1; column <= 1024; column++)
        mismatches += x[column - 1] != (float)field_of(line, column) / 255.0f;
    CHECK(mismatches == 0);
}

static void test_galaxy(void)
{
    char test_path[512], train_path[512];
    snprintf(test_path, sizeof test_path, "%s/test.csv", AXON_GALAXY_DIR);
    snprintf(train_path, sizeof train_path, "%s/train.csv", AXON_GALAXY_DIR);
    /* The build unpacks the data the project ships: missing is a failure. */
    CHECK(access(test_path, R_OK) == 0);
    if (access(test_path, R_OK) != 0)
        return;
    ax_csv_options options = ax_csv_defaults();
    options.scale = 1.0 / 255.0;
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_load_csv(test_path, &options, &data));
    if (data) {
        CHECK(ax_dataset_rows(data) == 675);
        CHECK(ax_dataset_features(data) == 1024);
        CHECK(ax_dataset_classes(data) == 3);
        int64_t per_class[3] = {0};
        for (int64_t i = 0; i < 675; i++)
            if (ax_dataset_labels_data(data)[i] >= 0 && ax_dataset_labels_data(data)[i] < 3)
                per_class[ax_dataset_labels_data(data)[i]]++;
        CHECK(per_class[0] == 225 && per_class[1] == 225 && per_class[2] == 225);
        /* The file begins "0,248,244,": label 0, first pixel 248. */
        CHECK(ax_dataset_features_data(data)[0] == (float)(248.0 / 255.0));
        check_row_against_text(test_path, 0, data);
        check_row_against_text(test_path, 400, data);
        check_row_against_text(test_path, 674, data);
    }
    ax_dataset_free(data);

    if (access(train_path, R_OK) != 0)
        return;
    double start = cpu_seconds();
    CHECK_OK(ax_dataset_load_csv(train_path, &options, &data));
    double seconds = cpu_seconds() - start;
    printf("galaxy/train.csv (11 MB) loaded in %.3f s of CPU\n", seconds);
    CHECK(data && ax_dataset_rows(data) == 2700 && ax_dataset_features(data) == 1024);
    if (data)
        check_row_against_text(train_path, 2699, data);
    ax_dataset_free(data);
}

int main(void)
{
    if (!test_work_dir_make("axon-test-csv"))
        return 1;
    test_defaults();
    test_good_files();
    test_bad_files();
    test_galaxy();
    test_work_dir_remove();
    return test_finish("test_data_csv");
}
