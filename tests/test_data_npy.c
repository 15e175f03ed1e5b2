/* test_data_npy.c: proves the .npy loader reads files written by NumPy
 * itself (tests/data/tiny_*.npy, made with numpy 1.24 by
 *   np.save('tiny_features_f4.npy', np.arange(12, dtype=np.float32).reshape(3, 4))
 *   np.save('tiny_labels_i8.npy', np.array([2, 0, 1], dtype=np.int64))
 * ) and, from bytes written here, every supported dtype, format versions 1,
 * 2 and 3, labels in column 0, float targets, flattened images; and that it
 * refuses Fortran order, big-endian and unknown dtypes, shape mismatches,
 * truncated or overlong files, NaN/Inf and bad labels, naming the file and
 * the element; and that keys it does not use are skipped, whatever they
 * hold (tests/data/extra_keys_f4.npy, its header written by NumPy's
 * np.lib.format._write_array_header with three extra keys). Runs without
 * Python. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "test_files.h"

static char expected[1024];
#define EXPECT(...) (snprintf(expected, sizeof expected, __VA_ARGS__), expected)

/* .npy files in the temporary folder (test_files.h); return the path, of
 * which the last 8 stay valid. */
static const char *write_npy_version(const char *name, int major, const char *dict,
                                     const void *data, size_t bytes)
{
    const char *path = in_work(name);
    write_npy_file(path, major, dict, data, bytes);
    return path;
}

static const char *write_npy(const char *name, const char *descr, const char *shape,
                             const void *data, size_t bytes)
{
    const char *path = in_work(name);
    write_npy_array(path, descr, shape, data, bytes);
    return path;
}

static void test_numpy_files(void)
{
    const char *features = AXON_TEST_DATA "/tiny_features_f4.npy";
    const char *labels = AXON_TEST_DATA "/tiny_labels_i8.npy";
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_load_npy(features, labels, 1.0, &data));
    if (data) {
        CHECK(ax_dataset_rows(data) == 3 && ax_dataset_features(data) == 4);
        CHECK(ax_dataset_classes(data) == 3 && ax_dataset_targets(data) == 0);
        CHECK(strcmp(ax_dataset_source(data), features) == 0);
        const int32_t *y = ax_dataset_labels_data(data);
        CHECK(y[0] == 2 && y[1] == 0 && y[2] == 1);
        int exact = 0;
        for (int i = 0; i < 12; i++)
            exact += ax_dataset_features_data(data)[i] == (float)i;
        CHECK(exact == 12);
    }
    ax_dataset_free(data);
    CHECK_OK(ax_dataset_load_npy(features, labels, 0.5, &data));
    CHECK(data && ax_dataset_features_data(data)[11] == 5.5f);
    ax_dataset_free(data);
    /* Without a labels file, column 0 (0, 4, 8) is the label. */
    CHECK_OK(ax_dataset_load_npy(features, NULL, 1.0, &data));
    if (data) {
        CHECK(ax_dataset_features(data) == 3 && ax_dataset_classes(data) == 9);
        CHECK(ax_dataset_labels_data(data)[2] == 8);
        CHECK(ax_dataset_features_data(data)[0] == 1.0f);
        CHECK(ax_dataset_features_data(data)[8] == 11.0f);
    }
    ax_dataset_free(data);
}

static void test_dtypes(void)
{
    ax_dataset *data = NULL;
    /* float64 features, int32 labels, format 2.0, keys in another order. */
    const double f8[6] = {0.25, -1.5, 3.0, 1e-3, 2.0, -0.0};
    const int32_t i4[2] = {4, 1};
    const char *features = write_npy_version(
        "f8.npy", 2, "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f8'}", f8, sizeof f8);
    const char *labels = write_npy_version(
        "i4.npy", 3, "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2,)}", i4,
        sizeof i4);
    CHECK_OK(ax_dataset_load_npy(features, labels, 2.0, &data));
    if (data) {
        const float *x = ax_dataset_features_data(data);
        CHECK(x[0] == 0.5f && x[1] == -3.0f && x[3] == 2e-3f && x[5] == 0.0f);
        CHECK(ax_dataset_classes(data) == 5 && ax_dataset_labels_data(data)[0] == 4);
    }
    ax_dataset_free(data);

    /* uint8 images (2, 2, 2) flattened to 4 features, scaled by 1/255; uint8 labels. */
    const uint8_t u1[8] = {0, 1, 128, 255, 7, 8, 9, 10};
    const uint8_t label_bytes[2] = {0, 9};
    features = write_npy("u1.npy", "|u1", "(2, 2, 2)", u1, sizeof u1);
    labels = write_npy("u1-labels.npy", "|u1", "(2,)", label_bytes, 2);
    CHECK_OK(ax_dataset_load_npy(features, labels, 1.0 / 255.0, &data));
    if (data) {
        CHECK(ax_dataset_rows(data) == 2 && ax_dataset_features(data) == 4);
        const float *x = ax_dataset_features_data(data);
        CHECK(x[0] == 0.0f && x[3] == 1.0f && x[2] == (float)(128.0 / 255.0));
        CHECK(ax_dataset_classes(data) == 10);
    }
    ax_dataset_free(data);
    CHECK_OK(ax_dataset_load_npy(features, labels, 0.5, &data));
    CHECK(data && ax_dataset_features_data(data)[3] == 127.5f);
    ax_dataset_free(data);

    /* Every integer label type, including (rows, 1). */
    const float two_rows[4] = {1, 2, 3, 4};
    features = write_npy("two-rows.npy", "<f4", "(2, 2)", two_rows, sizeof two_rows);
    const int16_t i2[2] = {3, 0};
    const uint16_t u2[2] = {3, 0};
    const int8_t i1[2] = {3, 0};
    const uint64_t u8[2] = {3, 0};
    const uint32_t u4[2] = {3, 0};
    const int64_t i8[2] = {3, 0};
    const char *label_files[6] = {
        write_npy("i2.npy", "<i2", "(2,)", i2, sizeof i2),
        write_npy("u2.npy", "<u2", "(2,)", u2, sizeof u2),
        write_npy("i1.npy", "|i1", "(2,)", i1, sizeof i1),
        write_npy("u8.npy", "<u8", "(2,)", u8, sizeof u8),
        write_npy("u4.npy", "<u4", "(2, 1)", u4, sizeof u4),
        write_npy("i8.npy", "<i8", "(2,1)", i8, sizeof i8),
    };
    for (int i = 0; i < 6; i++) {
        CHECK_OK(ax_dataset_load_npy(features, label_files[i], 1.0, &data));
        CHECK(data && ax_dataset_classes(data) == 4 && ax_dataset_labels_data(data)[0] == 3 &&
              ax_dataset_labels_data(data)[1] == 0);
        ax_dataset_free(data);
    }

    /* Float labels make a regression set: (rows) or (rows, targets). */
    const float y1[2] = {0.5f, -2.0f};
    labels = write_npy("targets-f4.npy", "<f4", "(2,)", y1, sizeof y1);
    CHECK_OK(ax_dataset_load_npy(features, labels, 1.0, &data));
    if (data) {
        CHECK(ax_dataset_classes(data) == 0 && ax_dataset_targets(data) == 1);
        CHECK(ax_dataset_labels_data(data) == NULL);
        CHECK(ax_dataset_targets_data(data)[1] == -2.0f);
    }
    ax_dataset_free(data);
    const double y2[6] = {1, 2, 3, 4, 5, 6.5};
    labels = write_npy("targets-f8.npy", "<f8", "(2, 3)", y2, sizeof y2);
    CHECK_OK(ax_dataset_load_npy(features, labels, 1.0, &data));
    if (data) {
        CHECK(ax_dataset_targets(data) == 3);
        CHECK(ax_dataset_targets_data(data)[5] == 6.5f);
    }
    ax_dataset_free(data);
}

static void test_bad_files(void)
{
    ax_dataset *data = NULL;
    const float f4[6] = {0, 1, 2, 3, 4, 5};
    char good[256], labels[256];
    snprintf(good, sizeof good, "%s", write_npy("good.npy", "<f4", "(3, 2)", f4, sizeof f4));
    const int64_t i8[3] = {0, 1, 2};
    snprintf(labels, sizeof labels, "%s", write_npy("labels.npy", "<i8", "(3,)", i8, sizeof i8));
    CHECK_OK(ax_dataset_load_npy(good, labels, 1.0, &data));
    ax_dataset_free(data);
    data = NULL;

    char missing[256];
    snprintf(missing, sizeof missing, "%s/missing.npy", work_dir);
    CHECK_FAILS(ax_dataset_load_npy(missing, labels, 1.0, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: cannot open: No such file or directory", missing));
    CHECK_FAILS(ax_dataset_load_npy(good, missing, 1.0, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: cannot open: No such file or directory", missing));
    CHECK_FAILS(ax_dataset_load_npy(good, labels, INFINITY, &data), AX_STATUS_BAD_ARGUMENT,
                EXPECT("%s: the feature scale must be finite", good));
    CHECK(data == NULL);

    const char *path = write_npy_version("not-npy.npy", 1, "hello", NULL, 0);
    FILE *file = fopen(path, "r+b");
    fputc('X', file);
    fclose(file);
    CHECK_FAILS(ax_dataset_load_npy(path, NULL, 1.0, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: not a .npy file (no \\x93NUMPY magic)", path));
    path = write_npy_version("version4.npy", 4, "{}", NULL, 0);
    CHECK_FAILS(ax_dataset_load_npy(path, NULL, 1.0, &data), AX_STATUS_UNSUPPORTED,
                EXPECT("%s: .npy format version 4.0 is not supported", path));

    /* The header's promises checked against the file size. */
    path = write_npy("truncated.npy", "<f4", "(3, 2)", f4, 20);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: truncated: the header promises 24 bytes of data (<f4, 6 elements) "
                       "but the file holds 20",
                       path));
    path = write_npy("huge.npy", "<f4", "(2147483648, 1024)", f4, 24);
    CHECK_FAILS(ax_dataset_load_npy(path, NULL, 1.0, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: truncated: the header promises 8796093022208 bytes of data (<f4, "
                       "2199023255552 elements) but the file holds 24",
                       path));
    path = write_npy("overflow.npy", "<f8", "(4294967296, 4294967296, 4294967296)", f4, 24);
    CHECK_FAILS(ax_dataset_load_npy(path, NULL, 1.0, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: malformed .npy header: 'shape' has more elements than can exist",
                       path));
    float longer[7] = {0, 1, 2, 3, 4, 5, 6};
    path = write_npy("trailing.npy", "<f4", "(3, 2)", longer, sizeof longer);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: trailing data after the array: the header promises 24 bytes of "
                       "data (<f4, 6 elements) but the file holds 28",
                       path));
    path = write_npy("short-header.npy", "<f4", "(3, 2)", NULL, 0);
    file = fopen(path, "r+b");
    fseek(file, 8, SEEK_SET);
    fputc(0xff, file); /* header length 0x76 -> 0xff */
    fclose(file);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: truncated: the header needs 265 bytes but the file holds only 128",
                       path));

    /* What numpy can write but we do not read. */
    char dict[256];
    snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }");
    path = write_npy_version("fortran.npy", 1, dict, f4, sizeof f4);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_UNSUPPORTED,
                EXPECT("%s: fortran_order is True (column-major data) and is not supported", path));
    path = write_npy("big-endian.npy", ">f4", "(3, 2)", f4, sizeof f4);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_UNSUPPORTED,
                EXPECT("%s: big-endian dtype '>f4' is not supported", path));
    path = write_npy("complex.npy", "<c8", "(3, 1)", f4, sizeof f4);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_UNSUPPORTED,
                EXPECT("%s: dtype '<c8' is not supported", path));
    path = write_npy("half.npy", "<f2", "(3, 2)", f4, 12);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_UNSUPPORTED,
                EXPECT("%s: dtype '<f2' is not supported", path));
    path = write_npy("bool-labels.npy", "|b1", "(3,)", f4, 3);
    CHECK_FAILS(ax_dataset_load_npy(good, path, 1.0, &data), AX_STATUS_UNSUPPORTED,
                EXPECT("%s: dtype '|b1' is not supported", path));
    path = write_npy("int-features.npy", "<i4", "(3, 2)", f4, sizeof f4);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_UNSUPPORTED,
                EXPECT("%s: dtype '<i4' is not supported for features (float32, float64 or "
                       "uint8 are)",
                       path));
    path = write_npy_version("record.npy", 1,
                             "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }",
                             f4, 12);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_UNSUPPORTED,
                EXPECT("%s: structured dtypes (records) are not supported", path));
    path = write_npy_version("no-shape.npy", 1, "{'descr': '<f4', 'fortran_order': False}", f4,
                             sizeof f4);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: malformed .npy header: no 'shape' key", path));
    path = write_npy_version("not-dict.npy", 1, "descr", f4, sizeof f4);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: malformed .npy header: it is not a dict", path));
    path = write_npy("bad-shape.npy", "<f4", "(3, x)", f4, sizeof f4);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: malformed .npy header: 'shape' holds something other than integers",
                       path));

    /* Shapes. */
    path = write_npy("two-labels.npy", "<i8", "(2,)", i8, 16);
    CHECK_FAILS(ax_dataset_load_npy(good, path, 1.0, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s has 3 rows but %s has 2", good, path));
    path = write_npy("wide-labels.npy", "<i8", "(1, 3)", i8, sizeof i8);
    CHECK_FAILS(ax_dataset_load_npy(good, path, 1.0, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: labels must be 1-D (rows) or (rows, 1), but the shape has 2 "
                       "dimensions with more than one column",
                       path));
    path = write_npy("vector.npy", "<f4", "(6,)", f4, sizeof f4);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: features must be 2-D (rows, features), but the shape has 1 "
                       "dimension",
                       path));
    path = write_npy("no-rows.npy", "<f4", "(0, 2)", NULL, 0);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: the array is empty (0 rows of 2 values)", path));
    path = write_npy("one-column.npy", "<f4", "(6, 1)", f4, sizeof f4);
    CHECK_FAILS(ax_dataset_load_npy(path, NULL, 1.0, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: with no labels file, column 0 is the label, but there is only one "
                       "column",
                       path));

    /* Values. */
    float with_nan[6] = {0, 1, 2, 3, NAN, 5};
    path = write_npy("nan.npy", "<f4", "(3, 2)", with_nan, sizeof with_nan);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: element [2, 0] is NaN", path));
    double with_inf[6] = {0, 1, 2, -INFINITY, 4, 5};
    path = write_npy("inf.npy", "<f8", "(3, 2)", with_inf, sizeof with_inf);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: element [1, 1] is Inf", path));
    double too_big[6] = {0, 1, 2, 3, 4, 1e300};
    path = write_npy("too-big.npy", "<f8", "(3, 2)", too_big, sizeof too_big);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: element [2, 1] is too large for float32 after scaling", path));
    const int64_t negative[3] = {0, -1, 2};
    path = write_npy("negative.npy", "<i8", "(3,)", negative, sizeof negative);
    CHECK_FAILS(ax_dataset_load_npy(good, path, 1.0, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: label [1] is -1: labels must be integers from 0 to 2147483646", path));
    const uint32_t huge_label[3] = {0, 1, 4000000000u};
    path = write_npy("huge-label.npy", "<u4", "(3,)", huge_label, sizeof huge_label);
    CHECK_FAILS(ax_dataset_load_npy(good, path, 1.0, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: label [2] is 4e+09", path));
    float fraction_first[6] = {0, 1, 1.5, 3, 2, 5};
    path = write_npy("fraction.npy", "<f4", "(3, 2)", fraction_first, sizeof fraction_first);
    CHECK_FAILS(ax_dataset_load_npy(path, NULL, 1.0, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: label (column 0) of row [1] is 1.5", path));
    const float nan_target[3] = {0, NAN, 1};
    path = write_npy("nan-target.npy", "<f4", "(3,)", nan_target, sizeof nan_target);
    CHECK_FAILS(ax_dataset_load_npy(good, path, 1.0, &data), AX_STATUS_BAD_DATA,
                EXPECT("%s: target [1, 0] is NaN", path));
    CHECK(data == NULL);
}

/* Keys axon does not use are skipped, whatever their values hold: the
 * fixture's header, written by NumPy's own writer
 * (np.lib.format._write_array_header with keys 'author', 'meta' and
 * 'version' beside the three; tests/data/extra_keys_f4.npy, float32 (3, 2)
 * 0.5 -1.25 2 3.5 -0.75 8), and headers written here: a nested dict with
 * its own 'shape' and 'descr' (not the array's), strings holding brackets,
 * commas, colons and escaped quotes, a string longer than any key, keys in
 * any order. A header missing a key axon needs is still refused. */
static void test_extra_keys(void)
{
    const float values[6] = {0.5f, -1.25f, 2.0f, 3.5f, -0.75f, 8.0f};
    const int64_t labels3[3] = {1, 0, 2};
    const char *labels = write_npy("extra-labels.npy", "<i8", "(3,)", labels3, sizeof labels3);
    char long_text[700];
    memset(long_text, 'x', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    char dicts[4][1000];
    snprintf(dicts[0], sizeof dicts[0], "%s", "");
    snprintf(dicts[1], sizeof dicts[1],
             "{'extra': {'shape': (99,), 'descr': '>f8', 'fortran_order': True}, 'descr': '<f4', "
             "'note': 'a, b: (c] }', 'fortran_order': False, 'shape': (3, 2), 'z': None, }");
    snprintf(dicts[2], sizeof dicts[2],
             "{'quoted': 'it\\'s \"x\" }', \"other\": \"don't ) stop\", 'descr': '<f4', "
             "'fortran_order': False, 'shape': (3, 2)}");
    snprintf(dicts[3], sizeof dicts[3],
             "{'descr': '<f4', 'long': '%s', 'fortran_order': False, 'shape': (3, 2)}", long_text);
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "extra-%d.npy", i);
        const char *features = i == 0 ? AXON_TEST_DATA "/extra_keys_f4.npy"
                                      : write_npy_version(name, 1, dicts[i], values, sizeof values);
        ax_dataset *data = NULL;
        CHECK_OK(ax_dataset_load_npy(features, labels, 1.0, &data));
        if (data) {
            CHECK(ax_dataset_rows(data) == 3 && ax_dataset_features(data) == 2);
            CHECK(memcmp(ax_dataset_features_data(data), values, sizeof values) == 0);
            CHECK(ax_dataset_labels_data(data)[2] == 2);
        } else {
            fprintf(stderr, "header %d refused: %s\n", i, i ? dicts[i] : features);
        }
        ax_dataset_free(data);
    }
    /* the nested 'shape' does not stand in for the array's */
    const char *path = write_npy_version(
        "nested-only.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'extra': {'shape': (3, 2)}}",
        values, sizeof values);
    ax_dataset *data = NULL;
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: malformed .npy header: no 'shape' key", path));
}

int main(void)
{
    if (!test_work_dir_make("axon-test-npy"))
        return 1;
    test_numpy_files();
    test_dtypes();
    test_bad_files();
    test_extra_keys();
    test_work_dir_remove();
    return test_finish("test_data_npy");
}
