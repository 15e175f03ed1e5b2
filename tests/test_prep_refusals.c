/* test_prep_refusals.c: what ax_prep_run says about bad input, each time
 * with the exact message, naming the file and the place, and nothing
 * half-written:
 * - labels files: missing, a label listed twice (its line), no label at
 *   all, a label of the input not in it;
 * - the output: a file where the folder should be, a folder under a file;
 * - an input with no images, and one whose images all fail;
 * - images: a JPEG and a PNG claiming 20000 x 20000 pixels (over the limit,
 *   refused before any pixel is decoded), a PNG that is no PNG past its
 *   signature, a PNG with a damaged ancillary chunk; a file cut short, one
 *   removed and one of over 1 GiB between listing and reading (the progress
 *   callback, called before the first batch, does it);
 * - a CMYK JPEG without Adobe's marker (ink not inverted) decodes to the RGB
 *   of the print formula, and to grey as the luma of that RGB;
 * - JPEG batches with bad images among good ones: each kept image's JPEG is
 *   the one of its own pixels (the raw batches' pixels encoded and decoded
 *   again give the JPEG batches' pixels byte for byte);
 * - a cuda-convnet2 folder with two batches of one number is refused, naming
 *   both, and one whose batches.meta is missing or a folder, naming it;
 * - the MPI launch variables and the CPUs this process may run on.
 * The images are made here with libjpeg and libpng. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_SET */
#endif

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jpeglib.h>
#include <png.h>

#include "io/jpeg_codec.h"
#include "prep/prep.h"
#include "test_util.h"

static char root[512];

typedef struct blob {
    unsigned char *data;
    size_t size;
} blob;

static void write_bytes(const char *path, const void *data, size_t size)
{
    FILE *file = fopen(path, "wb");
    CHECK(file && fwrite(data, 1, size, file) == size);
    if (file)
        fclose(file);
}

static unsigned char *picture(int side, int channels, int seed)
{
    unsigned char *pixels = malloc((size_t)side * side * channels);
    for (int i = 0; i < side * side * channels; i++)
        pixels[i] = (unsigned char)((i * 13 + seed * 71) % 251);
    return pixels;
}

static blob jpeg_of(int side, int seed)
{
    unsigned char *pixels = picture(side, 3, seed);
    blob out = {0};
    size_t capacity = 0;
    char why[200];
    CHECK(ax_jpeg_encode(pixels, side, 3, 90, &out.data, &capacity, &out.size, why, sizeof why));
    free(pixels);
    return out;
}

static blob png_of(int side, int seed)
{
    unsigned char *pixels = picture(side, 3, seed);
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = image.height = (png_uint_32)side;
    image.format = PNG_FORMAT_RGB;
    png_alloc_size_t size = 0;
    CHECK(png_image_write_to_memory(&image, NULL, &size, 0, pixels, 0, NULL));
    blob out = {malloc(size), size};
    CHECK(png_image_write_to_memory(&image, out.data, &size, 0, pixels, 0, NULL));
    free(pixels);
    return out;
}

static void path_of(char *path, size_t capacity, const char *relative)
{
    snprintf(path, capacity, "%s/%s", root, relative);
}

static void write_blob(const char *relative, blob b)
{
    char path[800];
    path_of(path, sizeof path, relative);
    write_bytes(path, b.data, b.size);
    free(b.data);
}

static void make_folder(const char *relative)
{
    char path[800];
    path_of(path, sizeof path, relative);
    CHECK(mkdir(path, 0755) == 0);
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

/* A JPEG whose frame header (SOF0) claims width x height. */
static blob jpeg_claiming(int width, int height)
{
    blob b = jpeg_of(16, 1);
    for (size_t i = 0; i + 9 < b.size; i++)
        if (b.data[i] == 0xFF && b.data[i + 1] == 0xC0) { /* length, precision, height, width */
            b.data[i + 5] = (unsigned char)(height >> 8), b.data[i + 6] = (unsigned char)height;
            b.data[i + 7] = (unsigned char)(width >> 8), b.data[i + 8] = (unsigned char)width;
            return b;
        }
    CHECK(!"no SOF0 marker");
    return b;
}

/* PNG's chunk CRC (ISO 3309, as zlib's crc32), bit by bit. */
static uint32_t png_crc(const unsigned char *bytes, size_t size)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < size; i++) {
        crc ^= bytes[i];
        for (int k = 0; k < 8; k++)
            crc = crc & 1 ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
    }
    return crc ^ 0xFFFFFFFFu;
}

/* A PNG whose IHDR claims width x height (its CRC made right again). */
static blob png_claiming(uint32_t width, uint32_t height)
{
    blob b = png_of(16, 2);
    /* signature (8), IHDR length (4), "IHDR" (4), width, height, ... CRC at 29 */
    put_be32(b.data + 16, width);
    put_be32(b.data + 20, height);
    put_be32(b.data + 29, png_crc(b.data + 12, 17));
    CHECK(b.size > 33);
    return b;
}

/* A PNG with a tEXt chunk whose CRC is wrong after its IHDR: an ancillary
 * chunk, so libpng goes on, with a warning. */
static blob png_damaged_text(void)
{
    blob b = png_of(16, 3);
    const unsigned char chunk[] = {0, 0, 0, 4, 't', 'E', 'X', 't', 'a', 0, 'b', 'c', 1, 2, 3, 4};
    blob out = {malloc(b.size + sizeof chunk), b.size + sizeof chunk};
    memcpy(out.data, b.data, 33); /* signature and IHDR */
    memcpy(out.data + 33, chunk, sizeof chunk);
    memcpy(out.data + 33 + sizeof chunk, b.data + 33, b.size - 33);
    free(b.data);
    return out;
}

/* A flat CMYK JPEG of one colour, without Adobe's APP14 marker: plain
 * CMYK, 0 = no ink. */
static blob cmyk_plain(const unsigned char cmyk[4], int side)
{
    struct jpeg_compress_struct info;
    struct jpeg_error_mgr errors;
    info.err = jpeg_std_error(&errors);
    jpeg_create_compress(&info);
    unsigned char *memory = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&info, &memory, &size);
    info.image_width = info.image_height = (JDIMENSION)side;
    info.input_components = 4;
    info.in_color_space = JCS_CMYK;
    jpeg_set_defaults(&info);
    jpeg_set_colorspace(&info, JCS_CMYK);
    info.write_Adobe_marker = FALSE;
    jpeg_set_quality(&info, 100, TRUE);
    jpeg_start_compress(&info, TRUE);
    unsigned char *row = malloc((size_t)side * 4);
    for (int x = 0; x < side; x++)
        memcpy(row + 4 * x, cmyk, 4);
    while (info.next_scanline < info.image_height) {
        JSAMPROW rows[1] = {row};
        jpeg_write_scanlines(&info, rows, 1);
    }
    jpeg_finish_compress(&info);
    jpeg_destroy_compress(&info);
    free(row);
    blob out = {malloc(size), size};
    memcpy(out.data, memory, size);
    free(memory);
    return out;
}

static ax_prep_options options_for(const char *input, const char *output)
{
    ax_prep_options o = ax_prep_defaults();
    static char in[800], out[800];
    path_of(in, sizeof in, input);
    path_of(out, sizeof out, output);
    o.input = in;
    o.output = out;
    o.image_size = 8;
    o.batch_size = 2;
    o.threads = 1;
    o.progress_interval = 0;
    return o;
}

static bool has_warning(const ax_prep_summary *summary, const char *text)
{
    for (int64_t i = 0; i < summary->warnings_kept; i++)
        if (strcmp(summary->warnings[i], text) == 0)
            return true;
    fprintf(stderr, "no warning \"%s\" among:\n", text);
    for (int64_t i = 0; i < summary->warnings_kept; i++)
        fprintf(stderr, "  %s\n", summary->warnings[i]);
    return false;
}

/* The run fails with status and exactly message; no output folder is made
 * unless made says so. */
static void check_refused(const ax_prep_options *o, ax_status status, const char *message)
{
    ax_prep_summary summary = ax_prep_summary_empty();
    ax_status got = ax_prep_run(o, NULL, NULL, &summary);
    CHECK(got == status);
    if (strcmp(ax_error_message(), message) != 0) {
        fprintf(stderr, "message \"%s\", expected \"%s\"\n", ax_error_message(), message);
        test_failures++;
    }
    CHECK(summary.images_written == 0 && summary.batches_written == 0);
    ax_prep_summary_free(&summary);
}

static void check_labels_files(void)
{
    make_folder("two");
    make_folder("two/alpha");
    make_folder("two/beta");
    write_blob("two/alpha/a.jpg", jpeg_of(16, 1));
    write_blob("two/beta/b.jpg", jpeg_of(16, 2));
    char labels[800], message[2000];
    ax_prep_options o = options_for("two", "labels_out");
    o.labels_file = labels;

    path_of(labels, sizeof labels, "missing_labels.txt");
    snprintf(message, sizeof message, "%s: cannot open the labels file: %s", labels,
             strerror(ENOENT));
    check_refused(&o, AX_STATUS_BAD_FILE, message);

    path_of(labels, sizeof labels, "twice.txt");
    write_bytes(labels, "alpha\nbeta\n\nalpha\r\n", 19);
    snprintf(message, sizeof message, "%s:4: label 'alpha' is listed twice", labels);
    check_refused(&o, AX_STATUS_BAD_FILE, message);

    path_of(labels, sizeof labels, "blank.txt");
    write_bytes(labels, "\n \t\n\r\n", 6);
    snprintf(message, sizeof message, "%s: the labels file names no label", labels);
    check_refused(&o, AX_STATUS_BAD_FILE, message);

    path_of(labels, sizeof labels, "alpha_only.txt");
    write_bytes(labels, "alpha\n", 6);
    snprintf(message, sizeof message,
             "%s: label 'beta' (a folder or tar of the input) is not in the labels file", labels);
    check_refused(&o, AX_STATUS_BAD_DATA, message);
    struct stat info;
    CHECK(stat(o.output, &info) != 0); /* refused before the output is made */
}

static void check_outputs(void)
{
    char file[800], message[2000];
    path_of(file, sizeof file, "a_file");
    write_bytes(file, "x", 1);
    ax_prep_options o = options_for("two", "a_file");
    snprintf(message, sizeof message, "%s: exists and is not a folder", o.output);
    check_refused(&o, AX_STATUS_IO_ERROR, message);
    o = options_for("two", "a_file/out");
    snprintf(message, sizeof message, "%s: cannot create the output folder: %s", o.output,
             strerror(ENOTDIR));
    check_refused(&o, AX_STATUS_IO_ERROR, message);
}

static void check_inputs(void)
{
    char message[2000];
    make_folder("empty");
    make_folder("empty/alpha");
    write_bytes(strcat(strcpy(message, root), "/empty/alpha/README"), "text", 4);
    ax_prep_options o = options_for("empty", "empty_out");
    snprintf(message, sizeof message, "%s: no images (.jpg, .jpeg, .png) found", o.input);
    check_refused(&o, AX_STATUS_BAD_DATA, message);

    /* Every image bad: each warned of, and the run fails. */
    make_folder("bad");
    make_folder("bad/alpha");
    write_blob("bad/alpha/huge.jpg", jpeg_claiming(20000, 20000));
    write_blob("bad/alpha/huge.png", png_claiming(20000, 20000));
    blob not_png = {malloc(64), 64};
    memcpy(not_png.data, "\x89PNG\r\n\x1a\n", 8);
    memset(not_png.data + 8, 'x', 56);
    write_blob("bad/alpha/garbage.png", not_png);
    write_blob("bad/alpha/text.png", png_damaged_text());
    o = options_for("bad", "bad_out");
    ax_prep_summary summary = ax_prep_summary_empty();
    CHECK_FAILS(ax_prep_run(&o, NULL, NULL, &summary), AX_STATUS_BAD_DATA,
                "none of the 4 image files could be decoded");
    snprintf(message, sizeof message, "%s: none of the 4 image files could be decoded", o.input);
    CHECK(strcmp(ax_error_message(), message) == 0);
    CHECK(summary.images_skipped == 4 && summary.images_written == 0);
    CHECK(has_warning(&summary, "alpha/huge.jpg: image of 20000 x 20000 pixels is over the "
                                "limit of 268435456 pixels; skipped"));
    CHECK(has_warning(&summary, "alpha/huge.png: image of 20000 x 20000 pixels is over the "
                                "limit of 268435456 pixels; skipped"));
    /* libpng's own words follow the prefix */
    bool garbage = false, damaged = false;
    for (int64_t i = 0; i < summary.warnings_kept; i++) {
        garbage |= strncmp(summary.warnings[i], "alpha/garbage.png: corrupt PNG: ", 32) == 0;
        damaged |= strncmp(summary.warnings[i], "alpha/text.png: damaged PNG: ", 29) == 0;
    }
    CHECK(garbage && damaged);
    ax_prep_summary_free(&summary);
}

/* What happens to the files once listed: the progress callback's first
 * call comes after the listing, before any image is read. */
typedef struct vandal {
    int calls;
} vandal;

static bool spoil_files(const ax_prep_progress *progress, void *user)
{
    (void)progress;
    vandal *v = user;
    if (v->calls++ == 0) {
        char path[800];
        path_of(path, sizeof path, "spoiled/alpha/cut.jpg");
        CHECK(truncate(path, 10) == 0);
        path_of(path, sizeof path, "spoiled/alpha/gone.jpg");
        CHECK(unlink(path) == 0);
    }
    return true;
}

static void check_spoiled(void)
{
    make_folder("spoiled");
    make_folder("spoiled/alpha");
    write_blob("spoiled/alpha/cut.jpg", jpeg_of(16, 3));
    write_blob("spoiled/alpha/gone.jpg", jpeg_of(16, 4));
    write_blob("spoiled/alpha/good.jpg", jpeg_of(16, 5));
    char path[800];
    path_of(path, sizeof path, "spoiled/alpha/huge.jpg"); /* sparse: no disk used */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && ftruncate(fd, ((off_t)1 << 30) + 1) == 0);
    if (fd >= 0)
        close(fd);
    ax_prep_options o = options_for("spoiled", "spoiled_out");
    ax_prep_summary summary = ax_prep_summary_empty();
    vandal v = {0};
    CHECK_OK(ax_prep_run(&o, spoil_files, &v, &summary));
    CHECK(v.calls > 0);
    CHECK(summary.images_found == 4 && summary.images_written == 1 &&
          summary.images_skipped == 3);
    CHECK(has_warning(&summary, "alpha/cut.jpg: file shorter than listed; skipped"));
    char text[300];
    snprintf(text, sizeof text, "alpha/gone.jpg: cannot open: %s; skipped", strerror(ENOENT));
    CHECK(has_warning(&summary, text));
    CHECK(has_warning(&summary,
                      "alpha/huge.jpg: larger than 1 GiB (1073741825 bytes), not read; skipped"));
    ax_prep_summary_free(&summary);
    CHECK(unlink(path) == 0);
}

/* Plain CMYK (no Adobe marker): RGB = 255 (1 - C/255)(1 - K/255), ... */
static void check_plain_cmyk(void)
{
    const unsigned char cmyk[4] = {0, 128, 255, 64};
    blob file = cmyk_plain(cmyk, 16);
    double expected[3];
    for (int c = 0; c < 3; c++)
        expected[c] = 255.0 * (1 - cmyk[c] / 255.0) * (1 - cmyk[3] / 255.0);
    prep_pixels pixels;
    memset(&pixels, 0, sizeof pixels);
    char why[200] = "";
    CHECK(prep_decode(file.data, file.size, 16, 3, &pixels, why, sizeof why));
    double worst = 0;
    for (int64_t i = 0; pixels.data && i < pixels.width * pixels.height; i++)
        for (int c = 0; c < 3; c++) {
            double d = fabs(pixels.data[3 * i + c] - expected[c]);
            worst = d > worst ? d : worst;
        }
    CHECK(pixels.width == 16 && pixels.height == 16 && worst <= 2.0);
    /* Grey: the luma (ITU-R BT.601) of that RGB. */
    const double luma = 0.299 * expected[0] + 0.587 * expected[1] + 0.114 * expected[2];
    CHECK(prep_decode(file.data, file.size, 16, 1, &pixels, why, sizeof why));
    worst = 0;
    for (int64_t i = 0; pixels.data && i < pixels.width * pixels.height; i++) {
        double d = fabs(pixels.data[i] - luma);
        worst = d > worst ? d : worst;
    }
    CHECK(pixels.channels == 1 && worst <= 2.0);
    free(pixels.data);
    free(file.data);
}

/* JPEG batches with bad images between the good: the slot of each kept
 * image holds its own JPEG (the compaction moves JPEGs with the pixels). */
static void check_jpeg_compaction(void)
{
    make_folder("mixed");
    make_folder("mixed/alpha");
    make_folder("mixed/beta");
    char name[100];
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "mixed/%s/good%d.jpg", i % 2 ? "beta" : "alpha", i);
        write_blob(name, jpeg_of(24 + 4 * i, 10 + i));
        snprintf(name, sizeof name, "mixed/%s/bad%d.png", i % 2 ? "alpha" : "beta", i);
        write_blob(name, png_claiming(30000, 30000));
    }
    ax_prep_options raw = options_for("mixed", "mixed_raw");
    char raw_output[800];
    snprintf(raw_output, sizeof raw_output, "%s", raw.output);
    raw.output = raw_output;
    raw.batch_size = 4;
    ax_prep_options jpeg = options_for("mixed", "mixed_jpeg");
    jpeg.batch_size = 4;
    jpeg.format = AX_PREP_FORMAT_JPEG;
    jpeg.jpeg_quality = 75;
    ax_prep_summary summary = ax_prep_summary_empty();
    CHECK_OK(ax_prep_run(&raw, NULL, NULL, &summary));
    CHECK(summary.images_written == 6 && summary.images_skipped == 6);
    ax_prep_summary_free(&summary);
    CHECK_OK(ax_prep_run(&jpeg, NULL, NULL, &summary));
    CHECK(summary.images_written == 6 && summary.images_skipped == 6);
    ax_prep_summary_free(&summary);
    ax_dataset *a = NULL, *b = NULL;
    CHECK_OK(ax_dataset_load_batches(raw.output, &a));
    CHECK_OK(ax_dataset_load_batches(jpeg.output, &b));
    if (!a || !b)
        return;
    CHECK(ax_dataset_rows(a) == 6 && ax_dataset_rows(b) == 6);
    const int64_t features = ax_dataset_features(a);
    unsigned char *pixels = malloc((size_t)features), *again = malloc((size_t)features);
    unsigned char *encoded = NULL;
    size_t capacity = 0, size = 0;
    char why[200];
    int mismatches = 0;
    for (int64_t r = 0; r < 6 && r < ax_dataset_rows(b); r++) {
        CHECK(ax_dataset_labels_data(a)[r] == ax_dataset_labels_data(b)[r]);
        for (int64_t i = 0; i < features; i++)
            pixels[i] = (unsigned char)lround(ax_dataset_features_data(a)[r * features + i] * 255.0);
        CHECK(ax_jpeg_encode(pixels, 8, 3, 75, &encoded, &capacity, &size, why, sizeof why));
        CHECK(ax_jpeg_decode_exact(encoded, size, 8, 3, again, why, sizeof why));
        for (int64_t i = 0; i < features; i++)
            mismatches += again[i] !=
                          (unsigned char)lround(ax_dataset_features_data(b)[r * features + i] * 255.0);
    }
    CHECK(mismatches == 0);
    free(pixels);
    free(again);
    free(encoded);
    ax_dataset_free(a);
    ax_dataset_free(b);
}

static void check_convnet_numbers(void)
{
    /* A cuda-convnet2 folder made from two's batches, then a second file of number 1. */
    ax_prep_options o = options_for("two", "two_out");
    ax_prep_summary summary = ax_prep_summary_empty();
    o.batch_size = 1;
    CHECK_OK(ax_prep_run(&o, NULL, NULL, &summary));
    ax_prep_summary_free(&summary);
    char from[800];
    snprintf(from, sizeof from, "%s", o.output);
    ax_prep_options to = options_for("two_out", "two_cc2");
    to.batch_size = 1;
    to.format = AX_PREP_FORMAT_CUDA_CONVNET2;
    CHECK_OK(ax_prep_run(&to, NULL, NULL, &summary));
    ax_prep_summary_free(&summary);
    char one[800], again[800], message[2000];
    path_of(one, sizeof one, "two_cc2/data_batch_1");
    path_of(again, sizeof again, "two_cc2/data_batch_01");
    CHECK(link(one, again) == 0);
    ax_prep_options back = options_for("two_cc2", "two_back");
    back.from_cuda_convnet2 = true;
    snprintf(message, sizeof message, "%s and %s: two files of the same number", again, one);
    char other[2000];
    snprintf(other, sizeof other, "%s and %s: two files of the same number", one, again);
    ax_status status = ax_prep_run(&back, NULL, NULL, &summary);
    CHECK(status == AX_STATUS_BAD_FILE);
    if (strcmp(ax_error_message(), message) != 0 && strcmp(ax_error_message(), other) != 0) {
        fprintf(stderr, "message \"%s\", expected \"%s\"\n", ax_error_message(), message);
        test_failures++;
    }
    ax_prep_summary_free(&summary);
    CHECK(unlink(again) == 0);

    /* batches.meta missing, then a folder in its place. */
    char meta[800];
    path_of(meta, sizeof meta, "two_cc2/batches.meta");
    char saved[800];
    path_of(saved, sizeof saved, "batches.meta.saved");
    CHECK(rename(meta, saved) == 0);
    snprintf(message, sizeof message, "%s: cannot open: %s", meta, strerror(ENOENT));
    check_refused(&back, AX_STATUS_BAD_FILE, message);
    CHECK(mkdir(meta, 0755) == 0);
    snprintf(message, sizeof message, "%s: not a regular file", meta);
    check_refused(&back, AX_STATUS_BAD_FILE, message);
    CHECK(rmdir(meta) == 0 && rename(saved, meta) == 0);
    CHECK_OK(ax_prep_run(&back, NULL, NULL, &summary)); /* whole again: converted */
    ax_prep_summary_free(&summary);
}

static void check_ranks_environment(void)
{
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMI_SIZE");
    unsetenv("PMIX_SIZE");
    CHECK(prep_launched_size() == 0);
    setenv("PMI_SIZE", "3", 1); /* MPICH's and Intel's launchers */
    CHECK(prep_launched_size() == 3);
    setenv("OMPI_COMM_WORLD_SIZE", "0", 1); /* not a size: the next variable counts */
    CHECK(prep_launched_size() == 3);
    unsetenv("PMI_SIZE");
    setenv("PMIX_SIZE", "5", 1);
    CHECK(prep_launched_size() == 5);
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMIX_SIZE");

    /* Bound to one CPU, prep sees one; given its CPUs back, all of them. */
    cpu_set_t saved, one;
    CHECK(sched_getaffinity(0, sizeof saved, &saved) == 0);
    const int all = CPU_COUNT(&saved);
    CHECK(prep_cpus_available() == all);
    int first = 0;
    while (!CPU_ISSET(first, &saved))
        first++;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
    CHECK(prep_cpus_available() == 1);
    CHECK(sched_setaffinity(0, sizeof saved, &saved) == 0);
    CHECK(prep_cpus_available() == all);
}

int main(void)
{
    /* a new folder of its own: a pid's name can be left from an earlier run */
    snprintf(root, sizeof root, "/tmp/axon_test_prep_refusals_XXXXXX");
    CHECK(mkdtemp(root) != NULL && chmod(root, 0755) == 0);
    check_labels_files();
    check_outputs();
    check_inputs();
    check_spoiled();
    check_plain_cmyk();
    check_jpeg_compaction();
    check_convnet_numbers();
    check_ranks_environment();
    if (test_failures == 0) {
        char command[700];
        snprintf(command, sizeof command, "rm -rf '%s'", root);
        CHECK(system(command) == 0);
    }
    return test_finish("test_prep_refusals");
}
