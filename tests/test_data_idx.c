/* test_data_idx.c: proves the IDX loader reads MNIST-format files, plain and
 * gzipped, with exact pixel values (byte / 255) and labels, finds the
 * standard pair in a folder, and refuses every malformed file with a message
 * naming the file and what is wrong: missing, empty, wrong magic, truncated
 * (plain: before allocating; gzipped: at the image where data ran out),
 * damaged gzip, absurd or overflowing dimensions, count mismatch, trailing
 * data. Then loads the real Fashion-MNIST when it is installed. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "test_util.h"
#include "test_files.h"

static unsigned char *read_file(const char *path, size_t *bytes)
{
    FILE *file = fopen(path, "rb");
    CHECK(file != NULL);
    if (!file)
        return NULL;
    fseek(file, 0, SEEK_END);
    *bytes = (size_t)ftell(file);
    fseek(file, 0, SEEK_SET);
    unsigned char *data = malloc(*bytes + 1);
    CHECK(fread(data, 1, *bytes, file) == *bytes);
    fclose(file);
    return data;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Writes an IDX file: magic, dims from shape, then `bytes` of body. */
static void write_idx(const char *path, uint32_t magic, int dims, const uint32_t *shape,
                      const unsigned char *body, size_t bytes)
{
    size_t header = 4 + 4 * (size_t)dims;
    unsigned char *data = malloc(header + bytes + 1);
    put_u32(data, magic);
    for (int i = 0; i < dims; i++)
        put_u32(data + 4 + 4 * i, shape[i]);
    if (bytes)
        memcpy(data + header, body, bytes);
    write_file(path, data, header + bytes);
    free(data);
}

static void write_images(const char *path, uint32_t n, uint32_t rows, uint32_t cols,
                         const unsigned char *pixels, size_t bytes)
{
    uint32_t shape[3] = {n, rows, cols};
    write_idx(path, 0x803, 3, shape, pixels, bytes);
}

static void write_labels(const char *path, uint32_t n, const unsigned char *labels, size_t bytes)
{
    write_idx(path, 0x801, 1, &n, labels, bytes);
}

static char expected[1024];
#define EXPECT(...) (snprintf(expected, sizeof expected, __VA_ARGS__), expected)

/* The good set: 3 images of 2 x 3, first pixel 0, last pixel 255. */
static unsigned char good_pixels[18];
static const unsigned char good_labels[3] = {2, 0, 4};

static void check_good(ax_dataset *data, const char *source)
{
    CHECK(data != NULL);
    if (!data)
        return;
    CHECK(ax_dataset_rows(data) == 3);
    CHECK(ax_dataset_features(data) == 6);
    CHECK(ax_dataset_classes(data) == 5);
    CHECK(ax_dataset_targets(data) == 0);
    CHECK(ax_dataset_targets_data(data) == NULL);
    CHECK(strcmp(ax_dataset_source(data), source) == 0);
    const int32_t *labels = ax_dataset_labels_data(data);
    CHECK(labels[0] == 2 && labels[1] == 0 && labels[2] == 4);
    const float *x = ax_dataset_features_data(data);
    CHECK(x[0] == 0.0f);
    CHECK(x[1] == 15.0f / 255.0f);
    CHECK(x[17] == 1.0f);
    int exact = 0;
    for (int i = 0; i < 18; i++)
        exact += x[i] == (float)good_pixels[i] / 255.0f;
    CHECK(exact == 18);
}

static void test_good_files(void)
{
    for (int i = 0; i < 17; i++)
        good_pixels[i] = (unsigned char)(15 * i);
    good_pixels[17] = 255;
    write_images(in_work("images"), 3, 2, 3, good_pixels, 18);
    write_labels(in_work("labels"), 3, good_labels, 3);
    write_images(in_work("images.gz"), 3, 2, 3, good_pixels, 18);
    write_labels(in_work("labels.gz"), 3, good_labels, 3);

    const char *pairs[4][2] = {{"images", "labels"},
                               {"images.gz", "labels.gz"},
                               {"images.gz", "labels"},
                               {"images", "labels.gz"}};
    for (int i = 0; i < 4; i++) {
        ax_dataset *data = NULL;
        char images[256];
        snprintf(images, sizeof images, "%s", in_work(pairs[i][0]));
        CHECK_OK(ax_dataset_load_idx(images, in_work(pairs[i][1]), &data));
        check_good(data, images);
        ax_dataset_free(data);
    }

    /* A .gz name on a plain file still loads (zlib reads it transparently). */
    write_images(in_work("plain-named.gz"), 3, 2, 3, good_pixels, 18);
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_load_idx(in_work("plain-named.gz"), in_work("labels"), &data));
    check_good(data, in_work("plain-named.gz"));
    ax_dataset_free(data);

    /* Two gzip members back to back (as `cat a.gz b.gz` makes): the trailer's
     * size covers only the last one, so the loader cannot trust it and
     * reads the bytes first, with the same result. */
    write_images(in_work("part1.gz"), 3, 2, 3, good_pixels, 7);
    write_file(in_work("part2.gz"), good_pixels + 7, 11);
    size_t first_bytes = 0, second_bytes = 0;
    unsigned char *first = read_file(in_work("part1.gz"), &first_bytes);
    unsigned char *second = read_file(in_work("part2.gz"), &second_bytes);
    unsigned char *both = malloc(first_bytes + second_bytes);
    memcpy(both, first, first_bytes);
    memcpy(both + first_bytes, second, second_bytes);
    write_file(in_work("two-members"), both, first_bytes + second_bytes);
    free(first);
    free(second);
    free(both);
    CHECK_OK(ax_dataset_load_idx(in_work("two-members"), in_work("labels"), &data));
    check_good(data, in_work("two-members"));
    ax_dataset_free(data);

    /* All labels 0 still make one class. */
    const unsigned char zeros[3] = {0, 0, 0};
    write_labels(in_work("zeros"), 3, zeros, 3);
    CHECK_OK(ax_dataset_load_idx(in_work("images"), in_work("zeros"), &data));
    CHECK(data && ax_dataset_classes(data) == 1);
    ax_dataset_free(data);
}

static void test_folder(void)
{
    char set[256], empty[256];
    snprintf(set, sizeof set, "%s", in_work("set"));
    snprintf(empty, sizeof empty, "%s", in_work("empty-set"));
    CHECK(mkdir(set, 0700) == 0);
    CHECK(mkdir(empty, 0700) == 0);
    char path[512];
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", set);
    write_images(path, 3, 2, 3, good_pixels, 18);
    snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte", set);
    write_labels(path, 3, good_labels, 3);
    /* The test pair: 2 images, plain images, gzipped labels. */
    snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte", set);
    write_images(path, 2, 2, 3, good_pixels, 12);
    snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte.gz", set);
    write_labels(path, 2, good_labels, 2);

    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_load_idx_dir(set, false, &data));
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", set);
    check_good(data, path);
    ax_dataset_free(data);
    CHECK_OK(ax_dataset_load_idx_dir(set, true, &data));
    CHECK(data && ax_dataset_rows(data) == 2 && ax_dataset_classes(data) == 3);
    CHECK(data && ax_dataset_features_data(data)[11] == 165.0f / 255.0f);
    ax_dataset_free(data);

    CHECK_FAILS(ax_dataset_load_idx_dir(empty, false, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: no MNIST-format training set: looked for train-images-idx3-ubyte, "
                       "train-images-idx3-ubyte.gz, train-labels-idx1-ubyte, "
                       "train-labels-idx1-ubyte.gz",
                       empty));
    CHECK(data == NULL);
    CHECK_FAILS(ax_dataset_load_idx_dir(empty, true, &data), AX_STATUS_BAD_FILE,
                "looked for t10k-images-idx3-ubyte, t10k-images-idx3-ubyte.gz");
    CHECK_FAILS(ax_dataset_load_idx_dir(in_work("no-such-folder"), false, &data),
                AX_STATUS_BAD_FILE,
                EXPECT("%s: cannot open folder: No such file or directory",
                       in_work("no-such-folder")));
    CHECK_FAILS(ax_dataset_load_idx_dir(in_work("images"), false, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: is not a folder", in_work("images")));
}

static void test_bad_files(void)
{
    ax_dataset *data = NULL;
    char images[256], labels[256];
    snprintf(images, sizeof images, "%s", in_work("images"));
    snprintf(labels, sizeof labels, "%s", in_work("labels"));

    CHECK_FAILS(ax_dataset_load_idx(in_work("missing"), labels, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: cannot open: No such file or directory", in_work("missing")));
    CHECK(data == NULL);
    CHECK_FAILS(ax_dataset_load_idx(images, in_work("missing"), &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: cannot open: No such file or directory", in_work("missing")));
    CHECK_FAILS(ax_dataset_load_idx(work_dir, labels, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: is a folder", work_dir));

    write_file(in_work("empty"), "", 0);
    CHECK_FAILS(ax_dataset_load_idx(in_work("empty"), labels, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: the file is empty", in_work("empty")));

    /* The pair swapped: each file's magic names what it really is. */
    CHECK_FAILS(ax_dataset_load_idx(labels, images, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: not an IDX images file: magic number 0x00000801 (this is a labels "
                       "file), expected 0x00000803",
                       labels));
    CHECK_FAILS(ax_dataset_load_idx(images, images, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: not an IDX labels file: magic number 0x00000803 (this is an "
                       "images file), expected 0x00000801",
                       images));
    write_file(in_work("text"), "hello, world\n", 13);
    CHECK_FAILS(ax_dataset_load_idx(in_work("text"), labels, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: not an IDX images file: magic number 0x68656c6c, expected "
                       "0x00000803",
                       in_work("text")));
    const unsigned char short_header[8] = {0, 0, 8, 3, 0, 0, 0, 3};
    write_file(in_work("short-header"), short_header, 8);
    CHECK_FAILS(ax_dataset_load_idx(in_work("short-header"), labels, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: truncated header: it needs 16 bytes but the file holds only 8",
                       in_work("short-header")));

    /* A plain file whose header claims 2^31 images is refused from its size alone. */
    write_images(in_work("huge"), 1u << 31, 28, 28, good_pixels, 10);
    write_labels(in_work("huge-labels"), 1u << 31, good_labels, 3);
    CHECK_FAILS(ax_dataset_load_idx(in_work("huge"), in_work("huge-labels"), &data),
                AX_STATUS_BAD_FILE,
                EXPECT("%s: truncated: header promises 2147483648 images (1683627180032 bytes) "
                       "but the file holds only 10",
                       in_work("huge")));
    write_labels(in_work("short-labels"), 3, good_labels, 2);
    CHECK_FAILS(ax_dataset_load_idx(images, in_work("short-labels"), &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: truncated: header promises 3 labels (3 bytes) but the file holds "
                       "only 2",
                       in_work("short-labels")));

    /* Gzipped: truncation is found while reading, at the image where data ran out. */
    write_images(in_work("short.gz"), 5, 2, 3, good_pixels, 16);
    write_labels(in_work("five-labels"), 5, good_pixels, 5);
    CHECK_FAILS(ax_dataset_load_idx(in_work("short.gz"), in_work("five-labels"), &data),
                AX_STATUS_BAD_FILE,
                EXPECT("%s: truncated: header promises 5 images (30 bytes) but the data runs "
                       "out at image 2 (0-based) after 16 bytes",
                       in_work("short.gz")));
    write_labels(in_work("short-labels.gz"), 3, good_labels, 1);
    CHECK_FAILS(ax_dataset_load_idx(images, in_work("short-labels.gz"), &data),
                AX_STATUS_BAD_FILE,
                EXPECT("%s: truncated: header promises 3 labels (3 bytes) but the data runs "
                       "out at label 1 (0-based)",
                       in_work("short-labels.gz")));
    /* Absurd gzipped headers: refused before any allocation. */
    write_images(in_work("overflow.gz"), 0xffffffffu, 0xffffffffu, 0xffffffffu, NULL, 0);
    write_labels(in_work("max-labels"), 0xffffffffu, NULL, 0);
    CHECK_FAILS(ax_dataset_load_idx(in_work("overflow.gz"), in_work("max-labels"), &data),
                AX_STATUS_BAD_FILE,
                EXPECT("%s: header promises 4294967295 images of 4294967295 x 4294967295 "
                       "pixels: too large to exist",
                       in_work("overflow.gz")));
    write_images(in_work("huge.gz"), 1u << 31, 28, 28, good_pixels, 10);
    write_labels(in_work("huge-labels.gz"), 1u << 31, good_labels, 3);
    CHECK_FAILS(ax_dataset_load_idx(in_work("huge.gz"), in_work("huge-labels.gz"), &data),
                AX_STATUS_OUT_OF_MEMORY,
                EXPECT("%s (2147483648 images of 28 x 28) needs", in_work("huge.gz")));
    write_images(in_work("zero-width"), 3, 28, 0, NULL, 0);
    CHECK_FAILS(ax_dataset_load_idx(in_work("zero-width"), labels, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: absurd image size 28 x 0", in_work("zero-width")));
    write_images(in_work("no-images"), 0, 28, 28, NULL, 0);
    write_labels(in_work("no-labels"), 0, NULL, 0);
    CHECK_FAILS(ax_dataset_load_idx(in_work("no-images"), in_work("no-labels"), &data),
                AX_STATUS_BAD_DATA, EXPECT("%s: the header says it holds no images",
                                           in_work("no-images")));

    /* Damaged gzip streams: cut short, or missing only the CRC trailer. */
    size_t bytes = 0;
    unsigned char *packed = read_file(in_work("images.gz"), &bytes);
    write_file(in_work("cut-trailer"), packed, bytes - 4);
    CHECK_FAILS(ax_dataset_load_idx(in_work("cut-trailer"), labels, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: damaged gzip stream after all 3 images (zlib: unexpected end of "
                       "file)",
                       in_work("cut-trailer")));
    unsigned char big[30000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (unsigned char)((i * 2654435761u) >> 13);
    write_images(in_work("big.gz"), 1000, 5, 6, big, sizeof big);
    unsigned char thousand_labels[1000] = {0};
    write_labels(in_work("thousand"), 1000, thousand_labels, 1000);
    CHECK_OK(ax_dataset_load_idx(in_work("big.gz"), in_work("thousand"), &data));
    CHECK(data && ax_dataset_features_data(data)[29999] == big[29999] / 255.0f);
    ax_dataset_free(data);
    data = NULL;
    free(packed);
    packed = read_file(in_work("big.gz"), &bytes);
    write_file(in_work("cut-half"), packed, bytes / 2);
    CHECK_FAILS(ax_dataset_load_idx(in_work("cut-half"), in_work("thousand"), &data),
                AX_STATUS_BAD_FILE,
                EXPECT("%s: truncated: header promises 1000 images (30000 bytes) but the data "
                       "runs out at image",
                       in_work("cut-half")));
    CHECK(strstr(ax_error_message(), "(zlib: unexpected end of file)") != NULL);
    packed[bytes / 2] ^= 0xff;
    packed[bytes / 2 + 1] ^= 0x55;
    write_file(in_work("corrupt"), packed, bytes);
    CHECK_FAILS(ax_dataset_load_idx(in_work("corrupt"), in_work("thousand"), &data),
                AX_STATUS_BAD_FILE, EXPECT("%s: ", in_work("corrupt")));
    CHECK(strstr(ax_error_message(), "zlib: ") != NULL);
    printf("a damaged gzip file gives: %s\n", ax_error_message());
    free(packed);

    CHECK_FAILS(ax_dataset_load_idx(images, in_work("short-labels.gz"), &data),
                AX_STATUS_BAD_FILE, in_work("short-labels.gz"));
    write_labels(in_work("two-labels"), 2, good_labels, 2);
    CHECK_FAILS(ax_dataset_load_idx(images, in_work("two-labels"), &data), AX_STATUS_BAD_DATA,
                EXPECT("%s holds 3 images but %s holds 2 labels", images,
                       in_work("two-labels")));

    /* Trailing data is an error too, plain or gzipped. */
    unsigned char longer[19];
    memcpy(longer, good_pixels, 18);
    longer[18] = 7;
    write_images(in_work("trailing"), 3, 2, 3, longer, 19);
    CHECK_FAILS(ax_dataset_load_idx(in_work("trailing"), labels, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: trailing data: 1 bytes more than the 3 images its header promises "
                       "(18 bytes)",
                       in_work("trailing")));
    write_images(in_work("trailing.gz"), 3, 2, 3, longer, 19);
    CHECK_FAILS(ax_dataset_load_idx(in_work("trailing.gz"), labels, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: trailing data after the 3 images its header promises (18 bytes)",
                       in_work("trailing.gz")));
    CHECK(data == NULL);
}

static double seconds_now(clockid_t clock)
{
    struct timespec now;
    clock_gettime(clock, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* Compares every pixel with an independent plain zlib read of the file. */
static void check_pixels_against_file(ax_dataset *data, const char *path)
{
    gzFile file = gzopen(path, "rb");
    CHECK(file != NULL);
    if (!file)
        return;
    size_t count = (size_t)(ax_dataset_rows(data) * ax_dataset_features(data));
    unsigned char *raw = malloc(count + 16);
    CHECK(gzread(file, raw, (unsigned)(count + 16)) == (int)(count + 16));
    gzclose(file);
    const float *x = ax_dataset_features_data(data);
    size_t mismatches = 0;
    for (size_t i = 0; i < count; i++)
        mismatches += x[i] != (float)raw[16 + i] / 255.0f;
    CHECK(mismatches == 0);
    free(raw);
}

static void test_fashion_mnist(void)
{
    const char *dir = "/usr/share/datasets/fashion-mnist";
    char path[512];
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
    if (access(path, R_OK) != 0) {
        printf("note: %s is absent (apt-get install dataset-fashion-mnist); the Fashion-MNIST "
               "part is skipped\n",
               path);
        return;
    }
    for (int test = 0; test <= 1; test++) {
        ax_dataset *data = NULL;
        double start = seconds_now(CLOCK_MONOTONIC);
        double start_cpu = seconds_now(CLOCK_PROCESS_CPUTIME_ID);
        CHECK_OK(ax_dataset_load_idx_dir(dir, test, &data));
        double seconds = seconds_now(CLOCK_MONOTONIC) - start;
        double cpu_seconds = seconds_now(CLOCK_PROCESS_CPUTIME_ID) - start_cpu;
        if (!data)
            continue;
        const int64_t rows = test ? 10000 : 60000;
        printf("Fashion-MNIST %s: %lld rows loaded in %.3f s (%.3f s of CPU)\n",
               test ? "test" : "train", (long long)ax_dataset_rows(data), seconds, cpu_seconds);
        CHECK(ax_dataset_rows(data) == rows);
        CHECK(ax_dataset_features(data) == 784);
        CHECK(ax_dataset_classes(data) == 10);
        const int32_t *labels = ax_dataset_labels_data(data);
        int64_t per_class[10] = {0};
        for (int64_t i = 0; i < rows; i++)
            if (labels[i] >= 0 && labels[i] < 10)
                per_class[labels[i]]++;
        for (int c = 0; c < 10; c++)
            CHECK(per_class[c] == rows / 10);
        /* The first labels, as numpy reads them from the same files. */
        static const int32_t first_train[10] = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
        static const int32_t first_test[10] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
        CHECK(memcmp(labels, test ? first_test : first_train, sizeof first_train) == 0);
        /* Image 0's brightest pixel (numpy: argmax 417 in train, 577 in test, both 255). */
        CHECK(ax_dataset_features_data(data)[test ? 577 : 417] == 1.0f);
        snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte.gz", dir, test ? "t10k" : "train");
        check_pixels_against_file(data, path);
        ax_dataset_free(data);
    }
}

int main(void)
{
    if (!test_work_dir_make("axon-test-idx"))
        return 1;
    test_good_files();
    test_folder();
    test_bad_files();
    test_fashion_mnist();
    test_work_dir_remove();
    return test_finish("test_data_idx");
}
