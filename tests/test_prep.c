/* test_prep.c: the image-to-batch pipeline (ax_prep_run) on a
 * corpus the test builds from a real photograph shipped by Debian
 * (python-matplotlib-data's grace_hopper.jpg, 512 x 600): crops re-encoded
 * as JPEG at several sizes and qualities and as PNG, plus a truncated JPEG,
 * a corrupt JPEG, a text file named .jpg, a truncated PNG and a README,
 * packed as a folder tree and as a tar of tars (libarchive's writer: pax
 * outside, ustar and GNU inside). It proves:
 * - exact counts: images found, written, skipped (the 4 bad files, each
 *   named in a warning), files ignored, labels, images per label, shapes;
 * - pixels: a 256 x 320 PNG shrunk 4x equals the 4 x 4 block means of its
 *   source (within 1 level: float rounding of .5 ties); a 512 x 600 JPEG,
 *   decoded by DCT scaling at 1/8, agrees with the 8 x 8 block means of a
 *   full-size decode within a mean of 1 and a maximum of 4 levels (measured
 *   0.41 and 2.08: IDCT scaling is no exact block mean in integers); grey is the
 *   luma of the same reference, within 1 level; an Adobe CMYK JPEG decodes
 *   to the RGB it was made from;
 * - the partial JPEG decode the pipeline uses (only the window the crop
 *   reads) makes crops byte for byte equal to the whole decode's, over
 *   sizes, qualities, samplings, progressive files, grey and every DCT
 *   scale, and refuses damaged files exactly as the whole decode does; a
 *   run with AXON_PREP_FULL_DECODE=1 writes the same batches; the RGB
 *   resize gives each channel the bytes of the one-channel resize;
 * - the same batches (byte for byte) from 1 and 2 threads and from the
 *   folder and the tar of tars; another seed gives other batches;
 * - resume: a deleted batch is remade identical, the others reused;
 *   a stop from the progress callback leaves only complete batches;
 *   a rerun with other settings into the same folder is refused;
 * - a write that fails (file size limit: the disk-full path) is reported
 *   naming the file, leaving no partial batch;
 * - ax_dataset_load_batches reads the output as pixels / 255.
 * - a validation set with an ILSVRC ground-truth file (folder and tar stored
 *   out of name order) gets each image's label by name order;
 * - options out of range or that cannot go together (no input or output,
 *   image size, format, JPEG quality, batch size, a batch over 64 GiB, the
 *   conversions' own) are refused naming the value, no output folder made. */
#define _POSIX_C_SOURCE 200809L

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jpeglib.h>
#include <png.h>

#include "prep/prep.h"
#include "test_util.h"

#define PHOTO "/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg"
enum { SIDE = 64 };

typedef struct image {
    unsigned char *rgb;
    int width, height;
} image;

typedef struct blob {
    unsigned char *data;
    size_t size;
} blob;

static char root[512];

/* ------------------------------------------------------- corpus building */

static image decode_full(const char *path)
{
    image result = {0};
    FILE *file = fopen(path, "rb");
    if (!file)
        return result;
    struct jpeg_decompress_struct info;
    struct jpeg_error_mgr error;
    info.err = jpeg_std_error(&error);
    jpeg_create_decompress(&info);
    jpeg_stdio_src(&info, file);
    jpeg_read_header(&info, TRUE);
    info.out_color_space = JCS_RGB;
    info.dct_method = JDCT_ISLOW;
    jpeg_start_decompress(&info);
    result.width = (int)info.output_width;
    result.height = (int)info.output_height;
    result.rgb = malloc((size_t)result.width * (size_t)result.height * 3);
    while (info.output_scanline < info.output_height) {
        JSAMPROW row = result.rgb + (size_t)info.output_scanline * (size_t)result.width * 3;
        jpeg_read_scanlines(&info, &row, 1);
    }
    jpeg_finish_decompress(&info);
    jpeg_destroy_decompress(&info);
    fclose(file);
    return result;
}

/* The crop [x, x + w) x [y, y + h) of source, every step-th pixel. */
static image crop(const image *source, int x, int y, int w, int h, int step)
{
    image result = {malloc((size_t)w * (size_t)h * 3), w, h};
    for (int r = 0; r < h; r++)
        for (int c = 0; c < w; c++)
            memcpy(result.rgb + ((size_t)r * (size_t)w + (size_t)c) * 3,
                   source->rgb + ((size_t)(y + r * step) * (size_t)source->width +
                                  (size_t)(x + c * step)) * 3,
                   3);
    return result;
}

static blob encode_jpeg(const image *picture, int quality, bool full_chroma)
{
    struct jpeg_compress_struct info;
    struct jpeg_error_mgr error;
    info.err = jpeg_std_error(&error);
    jpeg_create_compress(&info);
    unsigned char *data = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&info, &data, &size);
    info.image_width = (JDIMENSION)picture->width;
    info.image_height = (JDIMENSION)picture->height;
    info.input_components = 3;
    info.in_color_space = JCS_RGB;
    jpeg_set_defaults(&info);
    jpeg_set_quality(&info, quality, TRUE);
    if (full_chroma)
        for (int c = 0; c < 3; c++)
            info.comp_info[c].h_samp_factor = info.comp_info[c].v_samp_factor = 1;
    jpeg_start_compress(&info, TRUE);
    while (info.next_scanline < info.image_height) {
        JSAMPROW row = picture->rgb + (size_t)info.next_scanline * (size_t)picture->width * 3;
        jpeg_write_scanlines(&info, &row, 1);
    }
    jpeg_finish_compress(&info);
    jpeg_destroy_compress(&info);
    return (blob){data, size};
}

/* CMYK as Photoshop stores it (Adobe marker, inverted: 255 = no ink), with
 * no black ink, so that the stored C, M, Y are R, G, B. */
static blob encode_cmyk(const image *picture)
{
    struct jpeg_compress_struct info;
    struct jpeg_error_mgr error;
    info.err = jpeg_std_error(&error);
    jpeg_create_compress(&info);
    unsigned char *data = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&info, &data, &size);
    info.image_width = (JDIMENSION)picture->width;
    info.image_height = (JDIMENSION)picture->height;
    info.input_components = 4;
    info.in_color_space = JCS_CMYK;
    jpeg_set_defaults(&info);
    jpeg_set_quality(&info, 95, TRUE);
    unsigned char *row = malloc((size_t)picture->width * 4);
    jpeg_start_compress(&info, TRUE);
    while (info.next_scanline < info.image_height) {
        const unsigned char *rgb = picture->rgb + (size_t)info.next_scanline * (size_t)picture->width * 3;
        for (int x = 0; x < picture->width; x++) {
            memcpy(row + 4 * x, rgb + 3 * x, 3);
            row[4 * x + 3] = 255;
        }
        JSAMPROW rows = row;
        jpeg_write_scanlines(&info, &rows, 1);
    }
    jpeg_finish_compress(&info);
    jpeg_destroy_compress(&info);
    free(row);
    return (blob){data, size};
}

static blob encode_png(const image *picture)
{
    png_image info;
    memset(&info, 0, sizeof info);
    info.version = PNG_IMAGE_VERSION;
    info.width = (png_uint_32)picture->width;
    info.height = (png_uint_32)picture->height;
    info.format = PNG_FORMAT_RGB;
    png_alloc_size_t size = 0;
    png_image_write_to_memory(&info, NULL, &size, 0, picture->rgb, 0, NULL);
    blob result = {malloc(size), size};
    png_image_write_to_memory(&info, result.data, &size, 0, picture->rgb, 0, NULL);
    result.size = size;
    return result;
}

/* A corpus member: label folder, file name, bytes. */
typedef struct member {
    const char *label;
    char name[64];
    blob bytes;
} member;

enum { MAX_MEMBERS = 32 };
static member members[MAX_MEMBERS];
static int member_count;

static void add(const char *label, const char *name, blob bytes)
{
    member *m = &members[member_count++];
    m->label = label;
    snprintf(m->name, sizeof m->name, "%s", name);
    m->bytes = bytes;
}

static blob copy_prefix(blob source, size_t size)
{
    blob result = {malloc(size), size};
    memcpy(result.data, source.data, size);
    return result;
}

static void write_file(const char *path, blob bytes)
{
    FILE *file = fopen(path, "wb");
    CHECK(file != NULL);
    if (file) {
        CHECK(fwrite(bytes.data, 1, bytes.size, file) == bytes.size);
        CHECK(fclose(file) == 0);
    }
}

static const char *const labels[] = {"alpha", "beta", "delta", "epsilon", "gamma"};
enum { LABELS = 5 };

/* 20 files that are named as images (16 good, 4 bad) and a README. */
static void build_corpus(const image *photo, image *reference_png)
{
    static const int qualities[] = {40, 75, 95};
    char name[64];
    for (int i = 0; i < 5; i++) {
        /* alpha, beta, gamma: crops of varied size and quality. */
        const int w = 150 + 60 * i, h = 400 - 50 * i;
        image part = crop(photo, 10 * i, 20 * i, w, h, 1);
        snprintf(name, sizeof name, "crop%d.jpg", i);
        add("alpha", name, encode_jpeg(&part, qualities[i % 3], false));
        image half = crop(photo, 5 * i, 3 * i, 240 - 20 * i, 280, 2);
        snprintf(name, sizeof name, "half%d.JPEG", i);
        add("beta", name, encode_jpeg(&half, qualities[(i + 1) % 3], i % 2 == 0));
        snprintf(name, sizeof name, "p%d.png", i);
        if (i < 4) {
            image small = crop(photo, 100, 50 + 10 * i, 90 + 20 * i, 120, 1); /* enlarged to 64 */
            add("gamma", name, i % 2 ? encode_png(&small) : encode_jpeg(&small, 90, false));
            free(small.rgb);
        }
        free(part.rgb);
        free(half.rgb);
    }
    /* delta: one PNG, 256 x 320, shrunk exactly 4x; epsilon: the photo. */
    *reference_png = crop(photo, 128, 140, 256, 320, 1);
    add("delta", "ref.png", encode_png(reference_png));
    add("epsilon", "photo.jpg", encode_jpeg(photo, 95, true));
    /* Bad files. */
    blob good = encode_jpeg(photo, 80, false);
    add("alpha", "truncated.jpg", copy_prefix(good, good.size / 2));
    blob corrupt = copy_prefix(good, good.size);
    memset(corrupt.data + 4, 0x5a, 400); /* the first marker's length and body become junk */
    add("beta", "corrupt.jpg", corrupt);
    free(good.data);
    const char *text = "this is not a photograph\n";
    add("gamma", "notes.jpg", copy_prefix((blob){(unsigned char *)text, strlen(text)}, strlen(text)));
    blob png = encode_png(reference_png);
    add("gamma", "cut.png", copy_prefix(png, png.size * 2 / 3));
    free(png.data);
    add("alpha", "README.txt", copy_prefix((blob){(unsigned char *)text, strlen(text)}, strlen(text)));
}

static int compare_members(const void *a, const void *b)
{
    const member *x = a, *y = b;
    int c = strcmp(x->label, y->label);
    return c ? c : strcmp(x->name, y->name);
}

static void write_folder(const char *dir)
{
    char path[1024];
    mkdir(dir, 0755);
    for (int l = 0; l < LABELS; l++) {
        snprintf(path, sizeof path, "%s/%s", dir, labels[l]);
        mkdir(path, 0755);
    }
    for (int i = 0; i < member_count; i++) {
        snprintf(path, sizeof path, "%s/%s/%s", dir, members[i].label, members[i].name);
        write_file(path, members[i].bytes);
    }
}

static void archive_add(struct archive *archive, const char *name, const void *data, size_t size)
{
    struct archive_entry *entry = archive_entry_new();
    archive_entry_set_pathname(entry, name);
    archive_entry_set_size(entry, (la_int64_t)size);
    archive_entry_set_filetype(entry, AE_IFREG);
    archive_entry_set_perm(entry, 0644);
    CHECK(archive_write_header(archive, entry) == ARCHIVE_OK);
    CHECK(archive_write_data(archive, data, size) == (la_ssize_t)size);
    archive_entry_free(entry);
}

/* outer.tar (pax) holding LABEL.tar for each label (ustar or GNU), members
 * in the folder's order (sorted), so both inputs list the same sequence. */
static void write_tar_of_tars(const char *path)
{
    struct archive *outer = archive_write_new();
    archive_write_set_format_pax_restricted(outer);
    CHECK(archive_write_open_filename(outer, path) == ARCHIVE_OK);
    for (int l = 0; l < LABELS; l++) {
        size_t capacity = 16 << 20, used = 0;
        unsigned char *buffer = malloc(capacity);
        struct archive *inner = archive_write_new();
        if (l % 2)
            archive_write_set_format_gnutar(inner);
        else
            archive_write_set_format_ustar(inner);
        CHECK(archive_write_open_memory(inner, buffer, capacity, &used) == ARCHIVE_OK);
        for (int i = 0; i < member_count; i++)
            if (strcmp(members[i].label, labels[l]) == 0)
                archive_add(inner, members[i].name, members[i].bytes.data, members[i].bytes.size);
        CHECK(archive_write_close(inner) == ARCHIVE_OK);
        archive_write_free(inner);
        char name[64];
        snprintf(name, sizeof name, "%s.tar", labels[l]);
        archive_add(outer, name, buffer, used);
        free(buffer);
    }
    CHECK(archive_write_close(outer) == ARCHIVE_OK);
    archive_write_free(outer);
}

/* ----------------------------------------------------------------- checks */

static blob read_file(const char *path)
{
    blob result = {0};
    FILE *file = fopen(path, "rb");
    if (!file)
        return result;
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    result.data = malloc((size_t)size + 1);
    result.size = fread(result.data, 1, (size_t)size, file);
    fclose(file);
    return result;
}

static bool same_file(const char *a, const char *b)
{
    blob x = read_file(a), y = read_file(b);
    bool same = x.data && y.data && x.size == y.size && memcmp(x.data, y.data, x.size) == 0;
    free(x.data);
    free(y.data);
    return same;
}

/* The batch files and meta.json of two outputs are byte-identical. */
static bool same_output(const char *a, const char *b, int64_t batches)
{
    char x[1024], y[1024];
    bool same = true;
    for (int64_t i = 0; i < batches; i++) {
        char xl[1024], yl[1024];
        prep_batch_names(a, i, x, xl, sizeof x);
        prep_batch_names(b, i, y, yl, sizeof y);
        same = same && same_file(x, y) && same_file(xl, yl);
    }
    snprintf(x, sizeof x, "%s/meta.json", a);
    snprintf(y, sizeof y, "%s/meta.json", b);
    same = same && same_file(x, y);
    snprintf(x, sizeof x, "%s/mean.npy", a);
    snprintf(y, sizeof y, "%s/mean.npy", b);
    return same && same_file(x, y);
}

/* No "*.tmp.*" file is left in dir. */
static int temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    int count = 0;
    struct dirent *entry;
    while (d && (entry = readdir(d)))
        count += strstr(entry->d_name, ".tmp.") != NULL;
    if (d)
        closedir(d);
    return count;
}

static ax_status run_prep(const char *input, const char *out, int threads, uint64_t seed,
                          bool grey, ax_prep_progress_fn progress, void *user,
                          ax_prep_summary *summary)
{
    ax_prep_options options = ax_prep_defaults();
    options.input = input;
    options.output = out;
    options.image_size = SIDE;
    options.batch_size = 4;
    options.seed = seed;
    options.threads = threads;
    options.grey = grey;
    options.progress_interval = 0;
    return ax_prep_run(&options, progress, user, summary);
}

static bool has_warning(const ax_prep_summary *summary, const char *text)
{
    for (int64_t i = 0; i < summary->warnings_kept; i++)
        if (strstr(summary->warnings[i], text))
            return true;
    return false;
}

/* Row of the first image with label in data, or -1. */
static int64_t row_of_label(ax_dataset *data, int32_t label)
{
    for (int64_t r = 0; r < ax_dataset_rows(data); r++)
        if (ax_dataset_labels_data(data)[r] == label)
            return r;
    return -1;
}

/* Mean of the block x block square at (x0, y0) of channel c. */
static double block_mean(const image *picture, int x0, int y0, int block, int c)
{
    double sum = 0;
    for (int y = y0; y < y0 + block; y++)
        for (int x = x0; x < x0 + block; x++)
            sum += picture->rgb[((size_t)y * (size_t)picture->width + (size_t)x) * 3 + (size_t)c];
    return sum / (block * block);
}

static void check_pixels(ax_dataset *data, const image *reference_png, const image *photo)
{
    /* delta (label 2): ref.png 256 x 320 -> 64 x 80, centre rows 8 .. 71. */
    int64_t row = row_of_label(data, 2);
    CHECK(row >= 0);
    double worst = 0;
    const float *f = ax_dataset_features_data(data) + row * SIDE * SIDE * 3;
    for (int y = 0; row >= 0 && y < SIDE; y++)
        for (int x = 0; x < SIDE; x++)
            for (int c = 0; c < 3; c++) {
                double expected = block_mean(reference_png, 4 * x, 4 * (y + 8), 4, c);
                double got = f[(y * SIDE + x) * 3 + c] * 255.0;
                worst = fmax(worst, fabs(got - expected));
            }
    printf("PNG 4x area shrink vs 4x4 block means: max difference %.3f levels\n", worst);
    CHECK(worst <= 1.0 + 1e-3);
    /* epsilon (label 3): the 512 x 600 photo at 1/8 (64 x 75, rows 5 .. 68). */
    row = row_of_label(data, 3);
    CHECK(row >= 0);
    double total = 0;
    worst = 0;
    f = ax_dataset_features_data(data) + row * SIDE * SIDE * 3;
    for (int y = 0; row >= 0 && y < SIDE; y++)
        for (int x = 0; x < SIDE; x++)
            for (int c = 0; c < 3; c++) {
                double expected = block_mean(photo, 8 * x, 8 * (y + 5), 8, c);
                double d = fabs(f[(y * SIDE + x) * 3 + c] * 255.0 - expected);
                total += d;
                worst = fmax(worst, d);
            }
    double mean = total / (SIDE * SIDE * 3);
    printf("JPEG DCT 1/8 decode vs 8x8 block means of a full decode: mean %.3f, max %.3f levels\n",
           mean, worst);
    CHECK(mean <= 1.0);
    CHECK(worst <= 4.0);
}

static void check_grey(ax_dataset *data, const image *reference_png)
{
    int64_t row = row_of_label(data, 2);
    CHECK(row >= 0);
    double worst = 0;
    const float *f = ax_dataset_features_data(data) + row * SIDE * SIDE;
    for (int y = 0; row >= 0 && y < SIDE; y++)
        for (int x = 0; x < SIDE; x++) {
            double sum = 0;
            for (int yy = 0; yy < 4; yy++)
                for (int xx = 0; xx < 4; xx++) {
                    const unsigned char *p =
                        reference_png->rgb + ((size_t)(4 * (y + 8) + yy) * 256 + (size_t)(4 * x + xx)) * 3;
                    sum += floor((19595.0 * p[0] + 38470.0 * p[1] + 7471.0 * p[2] + 32768.0) / 65536.0);
                }
            worst = fmax(worst, fabs(f[y * SIDE + x] * 255.0 - sum / 16));
        }
    printf("grey: max difference from the luma block means %.3f levels\n", worst);
    CHECK(worst <= 1.0 + 1e-3);
}

typedef struct stopper {
    int64_t calls, stop_after_batches, last_done, last_total;
    bool monotonic;
} stopper;

static bool on_progress(const ax_prep_progress *progress, void *user)
{
    stopper *s = user;
    s->calls++;
    if (progress->images_done < s->last_done)
        s->monotonic = false;
    s->last_done = progress->images_done;
    s->last_total = progress->images_total;
    return !(s->stop_after_batches > 0 && progress->batches_done >= s->stop_after_batches);
}

/* The RGB resize (vector code where available) computes each channel with
 * the same floats as the one-channel code: an RGB crop's channel equals the
 * crop of that channel's plane, shrinking and enlarging, from whole images
 * and from windows of them. */
static void check_resize_channels(void)
{
    enum { W = 97, H = 61 };
    prep_pixels rgb = {0}, plane = {0};
    rgb.width = W, rgb.height = H, rgb.channels = 3;
    plane.width = W, plane.height = H, plane.channels = 1;
    rgb.data = malloc(W * H * 3);
    plane.data = malloc(W * H);
    uint32_t state = 12345;
    for (int i = 0; i < W * H * 3; i++) {
        state = state * 1664525u + 1013904223u;
        rgb.data[i] = (unsigned char)(state >> 24);
    }
    static const int sides[] = {17, 24, 40, 45, 61, 150};
    float *work = NULL;
    size_t capacity = 0;
    unsigned char *out_rgb = malloc(150 * 150 * 3), *out_plane = malloc(150 * 150);
    int64_t differ = 0;
    for (int k = 0; k < (int)(sizeof sides / sizeof sides[0]); k++)
        for (int c = 0; c < 3; c++) {
            for (int i = 0; i < W * H; i++)
                plane.data[i] = rgb.data[3 * i + c];
            const int64_t side = sides[k];
            CHECK(prep_resize_crop(&rgb, side, out_rgb, &work, &capacity));
            CHECK(prep_resize_crop(&plane, side, out_plane, &work, &capacity));
            for (int64_t i = 0; i < side * side; i++)
                differ += out_rgb[3 * i + c] != out_plane[i];
        }
    CHECK(differ == 0);
    free(work);
    free(out_rgb);
    free(out_plane);
    free(rgb.data);
    free(plane.data);
}

static void check_resize_unit(void)
{
    /* A constant picture stays constant when enlarged (bilinear) or shrunk. */
    prep_pixels pixels = {0};
    pixels.width = 10, pixels.height = 7, pixels.channels = 3;
    pixels.data = malloc(10 * 7 * 3);
    memset(pixels.data, 77, 10 * 7 * 3);
    unsigned char out[32 * 32 * 3];
    float *work = NULL;
    size_t capacity = 0;
    CHECK(prep_resize_crop(&pixels, 32, out, &work, &capacity));
    bool constant = true;
    for (size_t i = 0; i < sizeof out; i++)
        constant = constant && out[i] == 77;
    CHECK(constant);
    /* A left-to-right ramp enlarged stays a non-decreasing ramp. */
    for (int y = 0; y < 7; y++)
        for (int x = 0; x < 10; x++)
            for (int c = 0; c < 3; c++)
                pixels.data[(y * 10 + x) * 3 + c] = (unsigned char)(20 * x);
    CHECK(prep_resize_crop(&pixels, 32, out, &work, &capacity));
    bool ramp = true;
    for (int x = 1; x < 32; x++)
        ramp = ramp && out[3 * x] >= out[3 * (x - 1)];
    CHECK(ramp && out[3 * 31] > out[0]);
    free(work);
    free(pixels.data);
    check_resize_channels();
}

/* A CMYK JPEG (a few are in ImageNet) decodes to the RGB it holds. */
static void check_cmyk(const image *photo)
{
    image part = crop(photo, 100, 100, 128, 96, 1);
    blob cmyk = encode_cmyk(&part);
    prep_pixels pixels = {0};
    char why[200] = "";
    CHECK(prep_decode(cmyk.data, cmyk.size, 1000, 3, &pixels, why, sizeof why));
    CHECK(pixels.width == 128 && pixels.height == 96 && pixels.channels == 3);
    double total = 0;
    for (size_t i = 0; pixels.data && pixels.width == 128 && i < 128 * 96 * 3; i++)
        total += fabs((double)pixels.data[i] - part.rgb[i]);
    printf("CMYK JPEG: mean difference from its RGB source %.3f levels\n", total / (128 * 96 * 3));
    CHECK(total / (128 * 96 * 3) < 3.0);
    free(pixels.data);
    free(cmyk.data);
    free(part.rgb);
}

/* A JPEG with luma sampling h x v (chroma 1 x 1), optionally progressive. */
static blob encode_jpeg_sampled(const image *picture, int quality, int h, int v, bool progressive)
{
    struct jpeg_compress_struct info;
    struct jpeg_error_mgr error;
    info.err = jpeg_std_error(&error);
    jpeg_create_compress(&info);
    unsigned char *data = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&info, &data, &size);
    info.image_width = (JDIMENSION)picture->width;
    info.image_height = (JDIMENSION)picture->height;
    info.input_components = 3;
    info.in_color_space = JCS_RGB;
    jpeg_set_defaults(&info);
    jpeg_set_quality(&info, quality, TRUE);
    info.comp_info[0].h_samp_factor = h, info.comp_info[0].v_samp_factor = v;
    for (int c = 1; c < 3; c++)
        info.comp_info[c].h_samp_factor = info.comp_info[c].v_samp_factor = 1;
    if (progressive)
        jpeg_simple_progression(&info);
    jpeg_start_compress(&info, TRUE);
    while (info.next_scanline < info.image_height) {
        JSAMPROW row = picture->rgb + (size_t)info.next_scanline * (size_t)picture->width * 3;
        jpeg_write_scanlines(&info, &row, 1);
    }
    jpeg_finish_compress(&info);
    jpeg_destroy_compress(&info);
    return (blob){data, size};
}

/* The partial decode (prep_decode_for_crop: jpeg_crop_scanline and
 * jpeg_skip_scanlines on the window the resize reads) gives crops byte for
 * byte equal to those of the whole decode (prep_decode), for landscape,
 * portrait and square images (a square's crop starts at 0), sizes that are
 * no multiple of the iMCU, qualities, chroma samplings 4:2:0, 4:2:2, 4:4:0,
 * 4:4:4, baseline and progressive, RGB and grey, and sides S that select
 * every DCT scale from 1/8 to 8/8 and enlargement. Damage below the window
 * still fails the image. */
static void check_partial_decode(const image *photo)
{
    static const int sizes[][2] = {{512, 384}, {384, 512}, {300, 300}, {301, 217}, {217, 301},
                                   {500, 333}, {333, 500}, {257, 255}, {97, 131},  {512, 600},
                                   {450, 449}, {129, 511}, {511, 129}};
    static const int sides[] = {32, 57, 64, 100, 128, 160, 224, 256};
    static const int sampling[][2] = {{2, 2}, {2, 1}, {1, 2}, {1, 1}};
    const int size_count = (int)(sizeof sizes / sizeof sizes[0]);
    unsigned char *whole_out = malloc(256 * 256 * 3), *part_out = malloc(256 * 256 * 3);
    prep_pixels whole = {0}, part = {0};
    float *work = NULL;
    size_t work_capacity = 0;
    int64_t compared = 0, narrower = 0, shorter = 0, different = 0, failed = 0, spoilt_refused = 0;
    for (int i = 0; i < size_count; i++) {
        const int w = sizes[i][0], h = sizes[i][1];
        image picture = crop(photo, (512 - w) / 3, (600 - h) / 2, w, h, 1);
        for (int m = 0; m < 4; m++) {
            const int quality = 70 + 9 * ((i + m) % 4);
            blob jpeg = encode_jpeg_sampled(&picture, quality, sampling[m][0], sampling[m][1],
                                            (i + m) % 3 == 0);
            for (size_t k = 0; k < sizeof sides / sizeof sides[0]; k++) {
                const int64_t side = sides[k];
                for (int channels = 1; channels <= 3; channels += 2) {
                    char why[200] = "";
                    const size_t bytes = (size_t)(side * side * channels);
                    if (!prep_decode(jpeg.data, jpeg.size, side, channels, &whole, why, sizeof why) ||
                        !prep_decode_for_crop(jpeg.data, jpeg.size, side, channels, &part, why,
                                              sizeof why) ||
                        !prep_resize_crop(&whole, side, whole_out, &work, &work_capacity) ||
                        !prep_resize_crop(&part, side, part_out, &work, &work_capacity)) {
                        printf("partial decode: %d x %d, S = %lld: failed (%s)\n", w, h,
                               (long long)side, why);
                        failed++;
                        continue;
                    }
                    compared++;
                    narrower += part.width < whole.width;
                    shorter += part.height < whole.height;
                    CHECK(part.full_width == whole.width && part.full_height == whole.height);
                    if (memcmp(whole_out, part_out, bytes) != 0) {
                        different++;
                        printf("partial decode: %d x %d q%d %dx%d, S = %lld, %d channels: crops "
                               "differ\n", w, h, quality, sampling[m][0], sampling[m][1],
                               (long long)side, channels);
                    }
                }
            }
            /* Cut to 90% of its bytes, below any S's window for a portrait
             * image: refused as by the whole decode (a progressive file
             * may also lose only refinement scans; then both warn too). */
            if (h > w) {
                char why_whole[200] = "", why_part[200] = "";
                const size_t cut = jpeg.size * 9 / 10;
                const bool whole_ok =
                    prep_decode(jpeg.data, cut, 64, 3, &whole, why_whole, sizeof why_whole);
                const bool part_ok =
                    prep_decode_for_crop(jpeg.data, cut, 64, 3, &part, why_part, sizeof why_part);
                CHECK(!whole_ok && !part_ok && strcmp(why_whole, why_part) == 0);
                /* Bytes spoilt near the end (before EOI): the same verdict. */
                blob spoilt = copy_prefix(jpeg, jpeg.size);
                for (size_t b = spoilt.size - 40; b < spoilt.size - 30; b++)
                    spoilt.data[b] ^= 0x5A;
                why_whole[0] = why_part[0] = '\0';
                CHECK(prep_decode(spoilt.data, spoilt.size, 64, 3, &whole, why_whole,
                                  sizeof why_whole) ==
                      prep_decode_for_crop(spoilt.data, spoilt.size, 64, 3, &part, why_part,
                                           sizeof why_part));
                CHECK(strcmp(why_whole, why_part) == 0);
                spoilt_refused += why_whole[0] != '\0';
                free(spoilt.data);
            }
            free(jpeg.data);
        }
        free(picture.rgb);
    }
    printf("partial decode: %lld crops compared with the whole decode's (%lld narrower, %lld "
           "shorter windows): %lld differ, %lld failed; spoilt ends refused by both: %lld\n",
           (long long)compared, (long long)narrower, (long long)shorter, (long long)different,
           (long long)failed, (long long)spoilt_refused);
    CHECK(compared == (int64_t)size_count * 4 * 8 * 2 && failed == 0 && different == 0);
    /* The window really is smaller in both directions for many of them. */
    CHECK(narrower > compared / 4 && shorter > compared / 8);
    CHECK(spoilt_refused > 0);
    free(work);
    free(whole.data);
    free(part.data);
    free(whole_out);
    free(part_out);
}

/* A validation set as ILSVRC gives it (--ground-truth): nine images of one
 * colour each (class k: channel k-1 bright), flat, written in an order that
 * is not their names', with one 1-based label number a line in name order.
 * Prepared from the folder and from a tar whose members are stored in
 * reverse name order, every row's label must be its colour's; then the
 * refusals: a short file, a number out of the --labels range. */
static void check_ground_truth(void)
{
    char dir[700], tar[700], truth[700], names[700], out[700], short_truth[700];
    snprintf(dir, sizeof dir, "%s/val", root);
    snprintf(tar, sizeof tar, "%s/val.tar", root);
    snprintf(truth, sizeof truth, "%s/val_truth.txt", root);
    snprintf(short_truth, sizeof short_truth, "%s/val_short.txt", root);
    snprintf(names, sizeof names, "%s/val_names.txt", root);
    mkdir(dir, 0755);
    enum { IMAGES = 9 };
    /* file i is named val_<9 - i>: the names sort in the reverse of i. */
    int classes[IMAGES];
    blob bytes[IMAGES];
    char stored[IMAGES][32];
    for (int i = 0; i < IMAGES; i++) {
        classes[i] = (i * 5 + 1) % 3 + 1;
        image picture = {malloc(32 * 32 * 3), 32, 32};
        for (int p = 0; p < 32 * 32; p++)
            for (int c = 0; c < 3; c++)
                picture.rgb[p * 3 + c] = c == classes[i] - 1 ? 230 : 20;
        bytes[i] = encode_jpeg(&picture, 90, true);
        free(picture.rgb);
        snprintf(stored[i], sizeof stored[i], "val_%d.JPEG", IMAGES - i);
        char path[800];
        snprintf(path, sizeof path, "%s/%.32s", dir, stored[i]);
        write_file(path, bytes[i]);
    }
    FILE *file = fopen(truth, "w"), *cut = fopen(short_truth, "w"), *list = fopen(names, "w");
    CHECK(file && cut && list);
    if (!file || !cut || !list)
        return;
    for (int n = 1; n <= IMAGES; n++) { /* name val_n is file IMAGES - n */
        fprintf(file, "%d\n", classes[IMAGES - n]);
        if (n < IMAGES)
            fprintf(cut, "%d\n", classes[IMAGES - n]);
    }
    fprintf(list, "red\ngreen\n\nblue\n"); /* a blank line is skipped */
    fclose(file);
    fclose(cut);
    fclose(list);
    struct archive *archive = archive_write_new();
    archive_write_set_format_ustar(archive);
    CHECK(archive_write_open_filename(archive, tar) == ARCHIVE_OK);
    for (int i = 0; i < IMAGES; i++) /* val_9 first: stored out of name order */
        archive_add(archive, stored[i], bytes[i].data, bytes[i].size);
    CHECK(archive_write_close(archive) == ARCHIVE_OK);
    archive_write_free(archive);
    for (int i = 0; i < IMAGES; i++)
        free(bytes[i].data);

    const char *inputs[2] = {dir, tar};
    for (int in = 0; in < 2; in++) {
        snprintf(out, sizeof out, "%s/val_out%d", root, in);
        ax_prep_options options = ax_prep_defaults();
        options.input = inputs[in];
        options.output = out;
        options.image_size = 8;
        options.batch_size = 4;
        options.labels_file = names;
        options.ground_truth = truth;
        options.progress_interval = 0;
        ax_prep_summary summary = ax_prep_summary_empty();
        CHECK_OK(ax_prep_run(&options, NULL, NULL, &summary));
        CHECK(summary.images_written == IMAGES && summary.labels == 3);
        ax_prep_summary_free(&summary);
        ax_dataset *data = NULL;
        CHECK_OK(ax_dataset_load_batches(out, &data));
        if (!data)
            continue;
        CHECK(ax_dataset_rows(data) == IMAGES && ax_dataset_classes(data) == 3);
        for (int64_t r = 0; r < ax_dataset_rows(data); r++) {
            const float *pixel = ax_dataset_features_data(data) + r * 8 * 8 * 3 + (4 * 8 + 4) * 3;
            int brightest = 0;
            for (int c = 1; c < 3; c++)
                brightest = pixel[c] > pixel[brightest] ? c : brightest;
            CHECK(ax_dataset_labels_data(data)[r] == brightest);
        }
        ax_dataset_free(data);

        options.ground_truth = short_truth; /* 8 lines for 9 images */
        snprintf(out, sizeof out, "%s/val_bad%d", root, in);
        CHECK_FAILS(ax_prep_run(&options, NULL, NULL, &summary), AX_STATUS_BAD_DATA,
                    "val_short.txt: 8 labels for 9 images");
        ax_prep_summary_free(&summary);
    }
    /* Without the labels file, 3 is a label; with two names it is not. */
    FILE *two = fopen(names, "w");
    CHECK(two != NULL);
    if (two) {
        fprintf(two, "red\ngreen\n");
        fclose(two);
    }
    ax_prep_options options = ax_prep_defaults();
    options.input = dir;
    options.output = out;
    options.image_size = 8;
    options.labels_file = names;
    options.ground_truth = truth;
    ax_prep_summary summary = ax_prep_summary_empty();
    CHECK_FAILS(ax_prep_run(&options, NULL, NULL, &summary), AX_STATUS_BAD_FILE,
                "is not a label number 1 .. 2");
    ax_prep_summary_free(&summary);
}

/* One refused set of options: BAD_ARGUMENT with text, and no output folder made. */
static void check_refused_options(const ax_prep_options *options, const char *text)
{
    ax_prep_summary summary = ax_prep_summary_empty();
    CHECK_FAILS(ax_prep_run(options, NULL, NULL, &summary), AX_STATUS_BAD_ARGUMENT, text);
    CHECK(summary.images_written == 0 && summary.batches_written == 0);
    ax_prep_summary_free(&summary);
    struct stat info;
    if (options && options->output && stat(options->output, &info) == 0) {
        fprintf(stderr, "%s: made %s\n", text, options->output);
        test_failures++;
    }
}

/* Settings that cannot go together or lie outside their ranges are refused
 * before the input is read or the output made, naming the setting and value. */
static void check_option_refusals(const char *folder)
{
    char out[600];
    snprintf(out, sizeof out, "%s/refused_out", root);
    ax_prep_options good = ax_prep_defaults();
    good.input = folder;
    good.output = out;
    good.image_size = 8;
    ax_prep_options o = good;
    o.input = "";
    check_refused_options(&o, "prep: no input folder or tar given");
    check_refused_options(NULL, "prep: no input folder or tar given");
    o = good;
    o.output = NULL;
    check_refused_options(&o, "prep: no output folder given");
    o = good;
    o.image_size = 0;
    check_refused_options(&o, "prep: image size 0 is outside 1 .. 16384");
    o.image_size = 16385;
    check_refused_options(&o, "prep: image size 16385 is outside 1 .. 16384");
    o = good;
    o.format = (ax_prep_format)7;
    check_refused_options(&o, "prep: unknown batch format 7 (raw 0 or jpeg 1)");
    o = good;
    o.format = AX_PREP_FORMAT_JPEG;
    o.jpeg_quality = 0;
    check_refused_options(&o, "prep: JPEG quality 0 is outside 1 .. 100");
    o.jpeg_quality = 101;
    check_refused_options(&o, "prep: JPEG quality 101 is outside 1 .. 100");
    o = good;
    o.batch_size = 0;
    check_refused_options(&o, "prep: batch size 0 is outside 1 .. 1000000");
    o.batch_size = 1000001;
    check_refused_options(&o, "prep: batch size 1000001 is outside 1 .. 1000000");
    o.batch_size = 1000000; /* 1e6 images of 16384^2 x 3 bytes */
    o.image_size = 16384;
    check_refused_options(&o, "prep: a batch of 1000000 images of 16384 x 16384 pixels exceeds "
                              "64 GiB; use a smaller --batch");
    /* The conversions of cuda-convnet2's folders check their own. */
    o = good;
    o.from_cuda_convnet2 = true;
    o.format = AX_PREP_FORMAT_CUDA_CONVNET2;
    check_refused_options(&o, "prep: from cuda-convnet2 to cuda-convnet2 is no conversion");
    o.format = (ax_prep_format)9;
    check_refused_options(&o, "prep: unknown batch format 9 (raw 0 or jpeg 1)");
    o.format = AX_PREP_FORMAT_JPEG;
    o.jpeg_quality = -5;
    check_refused_options(&o, "prep: JPEG quality -5 is outside 1 .. 100");
    o = good;
    o.from_cuda_convnet2 = true;
    o.output = NULL;
    check_refused_options(&o, "prep: the input and output folders are required");
}

int main(void)
{
    check_resize_unit();
    image photo = decode_full(PHOTO);
    if (!photo.rgb) {
        printf("skipped: %s is missing; apt-get install python-matplotlib-data (scripts/setup.sh "
               "does)\n", PHOTO);
        return 77;
    }
    CHECK(photo.width == 512 && photo.height == 600);
    check_cmyk(&photo);
    check_partial_decode(&photo);
    snprintf(root, sizeof root, "/tmp/axon_test_prep_%ld", (long)getpid());
    mkdir(root, 0755);
    image reference_png;
    build_corpus(&photo, &reference_png);
    qsort(members, (size_t)member_count, sizeof *members, compare_members);
    char folder[600], tar[600], out1[600], out2[600], out3[600], out4[600], out5[600], out6[600];
    snprintf(folder, sizeof folder, "%s/photos", root);
    snprintf(tar, sizeof tar, "%s/photos.tar", root);
    snprintf(out1, sizeof out1, "%s/out1", root);
    snprintf(out2, sizeof out2, "%s/out2", root);
    snprintf(out3, sizeof out3, "%s/out3", root);
    snprintf(out4, sizeof out4, "%s/out4", root);
    snprintf(out5, sizeof out5, "%s/out5", root);
    snprintf(out6, sizeof out6, "%s/out6", root);
    write_folder(folder);
    write_tar_of_tars(tar);

    /* Counts, warnings and shapes from the folder, 1 thread. */
    ax_prep_summary summary = ax_prep_summary_empty();
    stopper progress = {.monotonic = true};
    CHECK_OK(run_prep(folder, out1, 1, 7, false, on_progress, &progress, &summary));
    CHECK(summary.images_found == 20);
    CHECK(summary.images_written == 16);
    CHECK(summary.images_skipped == 4);
    CHECK(summary.files_ignored == 1);
    CHECK(summary.labels == LABELS);
    CHECK(summary.batches_written + 0 >= 4 && summary.batches_reused == 0);
    CHECK(summary.warning_count == 4);
    CHECK(has_warning(&summary, "alpha/truncated.jpg"));
    CHECK(has_warning(&summary, "beta/corrupt.jpg"));
    CHECK(has_warning(&summary, "gamma/notes.jpg: not a JPEG or PNG"));
    CHECK(has_warning(&summary, "gamma/cut.png"));
    CHECK(progress.calls >= 5 && progress.monotonic && progress.last_done == 20 &&
          progress.last_total == 20);
    const int64_t written_batches = summary.batches_written;
    ax_prep_summary_free(&summary);

    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_load_batches(out1, &data));
    if (data) {
        CHECK(ax_dataset_rows(data) == 16);
        CHECK(ax_dataset_features(data) == SIDE * SIDE * 3);
        CHECK(ax_dataset_classes(data) == LABELS);
        int64_t counts[LABELS] = {0};
        for (int64_t r = 0; r < 16; r++)
            counts[ax_dataset_labels_data(data)[r]]++;
        /* alpha 5, beta 5, delta 1, epsilon 1, gamma 4 (the labels in name order). */
        CHECK(counts[0] == 5 && counts[1] == 5 && counts[2] == 1 && counts[3] == 1 &&
              counts[4] == 4);
        check_pixels(data, &reference_png, &photo);
        ax_dataset_free(data);
    }

    /* 2 threads, and the tar of tars: the same bytes. */
    CHECK_OK(run_prep(folder, out2, 2, 7, false, NULL, NULL, &summary));
    ax_prep_summary_free(&summary);
    CHECK(same_output(out1, out2, 5));
    CHECK_OK(run_prep(tar, out3, 2, 7, false, NULL, NULL, &summary));
    CHECK(summary.images_found == 20 && summary.images_written == 16 &&
          summary.images_skipped == 4 && summary.files_ignored == 1);
    CHECK(has_warning(&summary, "photos.tar:alpha.tar:truncated.jpg"));
    ax_prep_summary_free(&summary);
    CHECK(same_output(out1, out3, 5));
    /* Whole JPEG decodes (AXON_PREP_FULL_DECODE=1): the same batches. */
    char whole_out[700];
    snprintf(whole_out, sizeof whole_out, "%s/whole", root);
    setenv("AXON_PREP_FULL_DECODE", "1", 1);
    CHECK_OK(run_prep(folder, whole_out, 2, 7, false, NULL, NULL, &summary));
    unsetenv("AXON_PREP_FULL_DECODE");
    ax_prep_summary_free(&summary);
    CHECK(same_output(out1, whole_out, 5));
    /* Batches written through the page cache instead of O_DIRECT (the
     * fallback for file systems without it): the same files. */
    char buffered_out[700];
    snprintf(buffered_out, sizeof buffered_out, "%s/buffered", root);
    setenv("AXON_PREP_BUFFERED_WRITE", "1", 1);
    CHECK_OK(run_prep(folder, buffered_out, 1, 7, false, NULL, NULL, &summary));
    unsetenv("AXON_PREP_BUFFERED_WRITE");
    ax_prep_summary_free(&summary);
    CHECK(same_output(out1, buffered_out, 5));
    /* Another seed: other batches. */
    CHECK_OK(run_prep(folder, out4, 2, 8, false, NULL, NULL, &summary));
    ax_prep_summary_free(&summary);
    CHECK(!same_output(out1, out4, 5));

    /* Resume: a deleted batch is remade, the others kept. */
    char batch_path[1024], labels_path[1024], saved[1100];
    prep_batch_names(out3, 1, batch_path, labels_path, sizeof batch_path);
    snprintf(saved, sizeof saved, "%s/saved.npy", root);
    CHECK(rename(batch_path, saved) == 0);
    CHECK_OK(run_prep(tar, out3, 1, 7, false, NULL, NULL, &summary));
    CHECK(summary.batches_written == 1 && summary.batches_reused == written_batches - 1);
    CHECK(summary.images_written == 16 && summary.images_skipped == 4);
    ax_prep_summary_free(&summary);
    CHECK(same_file(batch_path, saved));
    CHECK(same_output(out1, out3, 5));

    /* Other settings into the same folder are refused. */
    CHECK_FAILS(run_prep(tar, out3, 1, 9, false, NULL, NULL, &summary), AX_STATUS_BAD_ARGUMENT,
                "another input or other settings");
    ax_prep_summary_free(&summary);

    /* A stop after 2 batches leaves 2 complete batches, then a rerun finishes. */
    stopper stop = {.stop_after_batches = 2, .monotonic = true};
    CHECK_FAILS(run_prep(folder, out5, 2, 7, false, on_progress, &stop, &summary),
                AX_STATUS_INTERRUPTED, "rerun");
    ax_prep_summary_free(&summary);
    prep_batch_names(out5, 2, batch_path, labels_path, sizeof batch_path);
    CHECK(access(batch_path, F_OK) != 0 && access(labels_path, F_OK) != 0);
    CHECK(temporaries(out5) == 0);
    CHECK_OK(run_prep(folder, out5, 2, 7, false, NULL, NULL, &summary));
    CHECK(summary.batches_reused == 2);
    ax_prep_summary_free(&summary);
    CHECK(same_output(out1, out5, 5));

    /* A failing write (the file size limit stands in for a full disk). */
    struct rlimit old_limit, limit;
    getrlimit(RLIMIT_FSIZE, &old_limit);
    limit = old_limit;
    limit.rlim_cur = 20000;
    signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &limit) == 0);
    CHECK_FAILS(run_prep(folder, out6, 2, 7, false, NULL, NULL, &summary), AX_STATUS_IO_ERROR,
                "cannot write");
    setrlimit(RLIMIT_FSIZE, &old_limit);
    ax_prep_summary_free(&summary);
    CHECK(temporaries(out6) == 0);
    prep_batch_names(out6, 0, batch_path, labels_path, sizeof batch_path);
    CHECK(access(batch_path, F_OK) != 0);

    /* Grey. */
    char grey_out[700];
    snprintf(grey_out, sizeof grey_out, "%s/grey", root);
    CHECK_OK(run_prep(folder, grey_out, 2, 7, true, NULL, NULL, &summary));
    ax_prep_summary_free(&summary);
    CHECK_OK(ax_dataset_load_batches(grey_out, &data));
    if (data) {
        CHECK(ax_dataset_features(data) == SIDE * SIDE);
        check_grey(data, &reference_png);
        ax_dataset_free(data);
    }

    /* Nothing to read. */
    CHECK_FAILS(run_prep(labels_path, out6, 1, 7, false, NULL, NULL, &summary), AX_STATUS_BAD_FILE,
                "");
    ax_prep_summary_free(&summary);

    check_ground_truth();
    check_option_refusals(folder);

    for (int i = 0; i < member_count; i++)
        free(members[i].bytes.data);
    free(photo.rgb);
    free(reference_png.rgb);
    if (test_failures == 0) {
        char command[700];
        snprintf(command, sizeof command, "rm -rf '%s'", root);
        if (system(command) != 0)
            fprintf(stderr, "could not remove %s\n", root);
    }
    return test_finish("test_prep");
}
