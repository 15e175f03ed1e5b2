/* cuda_convnet2.c: cuda-convnet2's batch folders to axon's batches and back
 * (ax_prep_run with from_cuda_convnet2, or format AX_PREP_FORMAT_CUDA_CONVNET2;
 * docs/prep.md, "cuda-convnet2's batch folders"), so that a user of seed 002
 * keeps the data they prepared.
 *
 * cuda-convnet2's folder: data_batch_N files, each a pickle of a dict with
 * 'data' and 'labels', and batches.meta, a pickle of a dict with
 * 'label_names', 'num_vis', 'data_mean' and more. 'data' is either a uint8
 * array of shape (num_vis, images) whose columns are images in (channel,
 * row, column) order (its CIFAR provider), or a list of JPEG byte strings
 * (its ILSVRC provider, where data_batch_N may also be a folder of
 * sub-batches data_batch_N.M). Labels are ints or one-element lists of ints.
 * The pickles are read by the restricted reader (io/pickle.c): nothing in a
 * file can run code.
 *
 * Batch N of one folder is batch N of the other, and the values axon keeps
 * but cuda-convnet2 has no place for (the seed, the images skipped, the
 * JPEG quality) travel as extra keys of batches.meta, so axon -> cuda-convnet2
 * -> axon gives the same files. The mean image is always recomputed from
 * the pixels (exact integer sums, as ax_prep_run does). The colour principal
 * components (batches.meta's color_pca = (stdevs, eigenvectors as columns),
 * which cuda-convnet2's ImageNet provider reads for its colour noise;
 * meta.json's "color_pca") are carried as they are when the input has them,
 * and computed from the pixels, as ax_prep_run does, when it has not.
 *
 * The output folder must be absent or empty; a conversion that fails removes
 * every file it wrote (each was written whole, through a temporary and a
 * rename), and the folder if it made it: nothing half-converted is left. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "data/dataset.h"
#include "data/jpeg_batch.h"
#include "data/stream.h"
#include "io/json.h"
#include "io/npy_header.h"
#include "io/pickle.h"
#include "prep/prep.h"

typedef struct convert {
    ax_prep_options options; /* image_size, batch_size, seed, format, quality of the output */
    const char *input, *output;
    int64_t side, channels, pixels; /* pixels = S * S * C, cuda-convnet2's num_vis */
    char **names;                   /* label names */
    int32_t label_count;
    int64_t *label_counts;
    uint64_t *sums; /* (S, S, C) */
    ax_color_moments moments; /* RGB images: the pixels' moments */
    ax_color_pca color_pca;   /* the input's, else computed from moments at the end */
    int64_t images, skipped;
    int64_t *batch_counts; /* indexed by batch number */
    int64_t batches;       /* largest batch number + 1 */
    char **written;        /* files written, removed again on failure */
    size_t written_count, written_capacity;
    bool made_folder;
    int asked_quality;  /* the options' jpeg_quality: pixels encoded at it */
    int folder_quality; /* batches.meta's jpeg_quality: JPEGs kept as they are */
} convert;

/* ------------------------------------------------------------ helpers */

static ax_status read_whole(const char *path, unsigned char **bytes, size_t *size)
{
    *bytes = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot open: %s", path, strerror(errno));
    struct stat info;
    if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        close(fd);
        return ax_fail(AX_STATUS_BAD_FILE, "%s: not a regular file", path);
    }
    const size_t length = (size_t)info.st_size;
    unsigned char *buffer = malloc(length ? length : 1);
    if (!buffer) {
        close(fd);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory for its %zu bytes", path, length);
    }
    size_t done = 0;
    while (done < length) {
        ssize_t got = read(fd, buffer + done, length - done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            close(fd);
            free(buffer);
            return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot read byte %zu of %zu%s", path, done,
                           length, got < 0 ? strerror(errno) : " (the file shrank)");
        }
        done += (size_t)got;
    }
    close(fd);
    *bytes = buffer;
    *size = length;
    return AX_STATUS_OK;
}

static ax_status remember(convert *c, const char *path)
{
    if (c->written_count == c->written_capacity) {
        size_t capacity = c->written_capacity ? 2 * c->written_capacity : 64;
        char **grown = realloc(c->written, capacity * sizeof *grown);
        if (!grown)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
        c->written = grown;
        c->written_capacity = capacity;
    }
    char *copy = malloc(strlen(path) + 1);
    if (!copy)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
    strcpy(copy, path);
    c->written[c->written_count++] = copy;
    return AX_STATUS_OK;
}

/* The output folder: made when absent; an existing one must be empty. */
static ax_status open_output(convert *c)
{
    if (mkdir(c->output, 0777) == 0) {
        c->made_folder = true;
        return AX_STATUS_OK;
    }
    if (errno != EEXIST)
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot create the folder: %s", c->output,
                       strerror(errno));
    DIR *dir = opendir(c->output);
    if (!dir)
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot open the folder: %s", c->output,
                       strerror(errno));
    const struct dirent *entry;
    bool empty = true;
    while ((entry = readdir(dir)))
        if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0)
            empty = false;
    closedir(dir);
    if (!empty)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: the output folder of a conversion must be "
                       "empty or absent (it holds files)", c->output);
    return AX_STATUS_OK;
}

static void undo(convert *c)
{
    for (size_t i = 0; i < c->written_count; i++)
        unlink(c->written[i]);
    if (c->made_folder)
        rmdir(c->output);
}

static ax_status set_labels(convert *c, int32_t count)
{
    c->label_count = count;
    c->names = calloc((size_t)count, sizeof *c->names);
    c->label_counts = calloc((size_t)count, sizeof *c->label_counts);
    c->sums = calloc((size_t)c->pixels, sizeof *c->sums);
    if (!c->names || !c->label_counts || !c->sums)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
    return AX_STATUS_OK;
}

static ax_status count_batch(convert *c, int64_t number, int64_t images)
{
    if (number >= c->batches) {
        int64_t *grown = realloc(c->batch_counts, (size_t)(number + 1) * sizeof *grown);
        if (!grown)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
        for (int64_t b = c->batches; b <= number; b++)
            grown[b] = 0;
        c->batch_counts = grown;
        c->batches = number + 1;
    }
    c->batch_counts[number] = images;
    c->images += images;
    return AX_STATUS_OK;
}

/* Adds images (count, S, S, C) to the pixel sums. */
static void add_sums(convert *c, const unsigned char *pixels, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        for (int64_t p = 0; p < c->pixels; p++)
            c->sums[p] += pixels[i * c->pixels + p];
    if (c->channels == 3)
        ax_color_moments_add(&c->moments, pixels, count * c->side * c->side);
}

/* The components to write: the input's, else the pixels'. */
static const ax_color_pca *color_pca(convert *c)
{
    if (!c->color_pca.present)
        ax_color_pca_compute(&c->moments, &c->color_pca);
    return &c->color_pca;
}

/* ------------------------------------------- cuda-convnet2 -> axon batches */

/* Parses path into *pickle; *bytes holds the file, which values may point
 * into: free it after the pickle. */
static ax_status parse_file(const char *path, unsigned char **bytes, ax_pickle **pickle,
                            const ax_pickle_value **root)
{
    size_t size = 0;
    *pickle = NULL;
    AX_TRY(read_whole(path, bytes, &size));
    AX_TRY(ax_pickle_parse(path, *bytes, size, pickle, root));
    if (ax_pickle_kind_of(*root) != AX_PICKLE_DICT)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: holds no dict (cuda-convnet2's files are dicts)",
                       path);
    return AX_STATUS_OK;
}

static bool small_int(const ax_pickle_value *value, int64_t low, int64_t high, int64_t *out)
{
    int64_t v;
    if (!value || ax_pickle_kind_of(value) != AX_PICKLE_INT || !ax_pickle_int(value, &v))
        return false;
    if (v < low || v > high)
        return false;
    *out = v;
    return true;
}

static ax_status meta_int(const char *path, const ax_pickle_value *meta, const char *key,
                          int64_t low, int64_t high, int64_t *out, bool required)
{
    const ax_pickle_value *value = ax_pickle_get(meta, key);
    if (!value && !required)
        return AX_STATUS_OK;
    if (!small_int(value, low, high, out))
        return ax_fail(AX_STATUS_BAD_FILE, "%s: '%s' is %s, not an integer in %lld .. %lld", path,
                       key, value ? "another type or out of range" : "missing", (long long)low,
                       (long long)high);
    return AX_STATUS_OK;
}

/* The float values of a float32 or float64 array, in C order, into out[count]. */
static bool float_array(const ax_pickle_value *value, int64_t count, double *out)
{
    ax_pickle_array a;
    if (!value || !ax_pickle_array_of(value, &a) || a.kind != 'f' || a.count != count)
        return false;
    for (int64_t i = 0; i < count; i++) {
        if (a.item_bytes == 4) {
            float f;
            memcpy(&f, a.data + 4 * i, 4);
            out[i] = f;
        } else {
            memcpy(&out[i], a.data + 8 * i, 8);
        }
        if (!isfinite(out[i]))
            return false;
    }
    if (a.fortran && a.dims == 2) { /* column-major: transpose into C order */
        double copy[9];
        for (int64_t i = 0; i < count; i++)
            copy[i] = out[i];
        const int64_t rows = a.shape[0], columns = a.shape[1];
        for (int64_t r = 0; r < rows; r++)
            for (int64_t k = 0; k < columns; k++)
                out[r * columns + k] = copy[k * rows + r];
    }
    return true;
}

/* batches.meta's color_pca: (stdevs (3,), eigenvectors (3, 3) as columns),
 * a list or tuple, float32 or float64 arrays. */
static ax_status read_color_pca(convert *c, const char *path, const ax_pickle_value *meta)
{
    const ax_pickle_value *value = ax_pickle_get(meta, "color_pca");
    if (!value || c->channels != 3)
        return AX_STATUS_OK; /* grey images have no colour noise: nothing to carry */
    const ax_pickle_kind kind = ax_pickle_kind_of(value);
    double stdevs[3], vectors[9];
    ax_pickle_array shape;
    const bool ok = (kind == AX_PICKLE_LIST || kind == AX_PICKLE_TUPLE) &&
                    ax_pickle_length(value) == 2 &&
                    float_array(ax_pickle_item(value, 0), 3, stdevs) &&
                    float_array(ax_pickle_item(value, 1), 9, vectors) &&
                    ax_pickle_array_of(ax_pickle_item(value, 1), &shape) && shape.dims == 2 &&
                    stdevs[0] >= 0 && stdevs[1] >= 0 && stdevs[2] >= 0;
    if (!ok)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: 'color_pca' is not (stdevs, eigenvectors): a "
                       "float array of 3 values >= 0 and a (3, 3) float array", path);
    for (int i = 0; i < 3; i++) {
        c->color_pca.stdevs[i] = stdevs[i];
        for (int k = 0; k < 3; k++)
            c->color_pca.eigenvectors[i][k] = vectors[k * 3 + i]; /* column i */
    }
    c->color_pca.present = true;
    return AX_STATUS_OK;
}

static ax_status read_meta(convert *c)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/batches.meta", c->input);
    ax_pickle *pickle = NULL;
    const ax_pickle_value *meta = NULL;
    unsigned char *bytes = NULL;
    ax_status status = parse_file(path, &bytes, &pickle, &meta);
    if (status != AX_STATUS_OK) {
        ax_pickle_free(pickle);
        free(bytes);
        return status;
    }
    int64_t num_vis = 0, colors = 3, size = 0, batch_size = 0, seed = 0, skipped = 0, quality = 0;
    status = meta_int(path, meta, "num_vis", 1, (int64_t)1 << 40, &num_vis, true);
    if (status == AX_STATUS_OK)
        status = meta_int(path, meta, "num_colors", 1, 3, &colors, false);
    if (status == AX_STATUS_OK && colors == 2)
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: 'num_colors' is 2; axon reads 1 or 3", path);
    if (status == AX_STATUS_OK)
        status = meta_int(path, meta, "img_size", 1, 65536, &size, false);
    if (status == AX_STATUS_OK)
        status = meta_int(path, meta, "batch_size", 1, (int64_t)1 << 40, &batch_size, false);
    if (status == AX_STATUS_OK)
        status = meta_int(path, meta, "axon_seed", 0, INT64_MAX, &seed, false);
    if (status == AX_STATUS_OK)
        status = meta_int(path, meta, "axon_images_skipped", 0, INT64_MAX, &skipped, false);
    if (status == AX_STATUS_OK)
        status = meta_int(path, meta, "jpeg_quality", 0, 100, &quality, false);
    if (status == AX_STATUS_OK && size == 0) /* S from num_vis = S * S * C */
        for (int64_t s = 1; s * s * colors <= num_vis; s++)
            if (s * s * colors == num_vis)
                size = s;
    if (status == AX_STATUS_OK && (size == 0 || size * size * colors != num_vis))
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: 'num_vis' %lld is not S x S x %lld for any image "
                         "size S%s", path, (long long)num_vis, (long long)colors,
                         ax_pickle_get(meta, "img_size") ? " (nor for its 'img_size')" : "");
    const ax_pickle_value *names = ax_pickle_get(meta, "label_names");
    const ax_pickle_kind names_kind = names ? ax_pickle_kind_of(names) : AX_PICKLE_NONE;
    if (status == AX_STATUS_OK &&
        (!names || (names_kind != AX_PICKLE_LIST && names_kind != AX_PICKLE_TUPLE) ||
         ax_pickle_length(names) == 0 || ax_pickle_length(names) > INT32_MAX))
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: 'label_names' is %s, not a list of names", path,
                         names ? "empty or another type" : "missing");
    if (status == AX_STATUS_OK) {
        c->side = size;
        c->channels = colors;
        c->pixels = num_vis;
        status = set_labels(c, (int32_t)ax_pickle_length(names));
    }
    if (status == AX_STATUS_OK)
        status = read_color_pca(c, path, meta);
    for (int32_t i = 0; status == AX_STATUS_OK && i < c->label_count; i++) {
        const ax_pickle_value *name = ax_pickle_item(names, (size_t)i);
        const ax_pickle_kind kind = ax_pickle_kind_of(name);
        const size_t length = ax_pickle_length(name);
        if ((kind != AX_PICKLE_STRING && kind != AX_PICKLE_BYTES) ||
            memchr(ax_pickle_data(name), 0, length)) {
            status = ax_fail(AX_STATUS_BAD_FILE, "%s: 'label_names'[%d] is not a string", path, i);
            break;
        }
        if (!(c->names[i] = malloc(length + 1))) {
            status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
            break;
        }
        memcpy(c->names[i], ax_pickle_data(name), length);
        c->names[i][length] = 0;
    }
    ax_pickle_free(pickle);
    free(bytes);
    c->options.image_size = c->side;
    c->options.batch_size = batch_size;
    c->options.seed = (uint64_t)seed;
    c->options.grey = c->channels == 1;
    c->skipped = skipped;
    c->folder_quality = (int)quality;
    return status;
}

/* One data_batch_N (a file, or a folder of sub-batches data_batch_N.M). */
typedef struct source_batch {
    int64_t number;
    char *path;
    bool folder;
} source_batch;

static int by_number(const void *a, const void *b)
{
    const source_batch *x = a, *y = b;
    return x->number < y->number ? -1 : x->number > y->number;
}

/* Batch numbers: prep's names have five digits, and the counts are kept
 * in an array indexed by number. */
#define MAX_BATCH_NUMBER 99999

/* A name of prefix + digits: its number; -1 for another name, -2 for a
 * number above MAX_BATCH_NUMBER. */
static int64_t name_number(const char *name, const char *prefix)
{
    size_t length = strlen(prefix);
    if (strncmp(name, prefix, length) != 0)
        return -1;
    const char *p = name + length;
    if (*p < '0' || *p > '9')
        return -1;
    int64_t n = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        if (n <= MAX_BATCH_NUMBER)
            n = n * 10 + (*p - '0');
    if (*p)
        return -1;
    return n > MAX_BATCH_NUMBER ? -2 : n;
}

static ax_status list_numbered(const char *dir, const char *prefix, source_batch **out,
                               size_t *count)
{
    *out = NULL;
    *count = 0;
    DIR *folder = opendir(dir);
    if (!folder)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot open the folder: %s", dir, strerror(errno));
    source_batch *list = NULL;
    size_t used = 0, capacity = 0;
    ax_status status = AX_STATUS_OK;
    const struct dirent *entry;
    while (status == AX_STATUS_OK && (entry = readdir(folder))) {
        int64_t number = name_number(entry->d_name, prefix);
        if (number == -2) {
            status = ax_fail(AX_STATUS_BAD_FILE, "%s/%s: batch numbers go up to %d", dir,
                             entry->d_name, MAX_BATCH_NUMBER);
            break;
        }
        if (number < 0)
            continue;
        if (used == capacity) {
            capacity = capacity ? 2 * capacity : 16;
            source_batch *grown = realloc(list, capacity * sizeof *grown);
            if (!grown) {
                status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
                break;
            }
            list = grown;
        }
        source_batch *b = &list[used];
        b->number = number;
        b->path = malloc(strlen(dir) + strlen(entry->d_name) + 2);
        if (!b->path) {
            status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
            break;
        }
        sprintf(b->path, "%s/%s", dir, entry->d_name);
        struct stat info;
        b->folder = stat(b->path, &info) == 0 && S_ISDIR(info.st_mode);
        used++;
    }
    closedir(folder);
    if (status == AX_STATUS_OK && used > 1) {
        qsort(list, used, sizeof *list, by_number);
        for (size_t i = 1; i < used; i++)
            if (list[i].number == list[i - 1].number)
                status = ax_fail(AX_STATUS_BAD_FILE, "%s and %s: two files of the same number",
                                 list[i - 1].path, list[i].path);
    }
    *out = list;
    *count = used;
    return status;
}

static void free_numbered(source_batch *list, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(list[i].path);
    free(list);
}

/* One pickle of a batch: its images, in one of the two forms. */
typedef struct batch_part {
    ax_pickle *pickle;
    unsigned char *bytes; /* the file, which values point into */
    const char *path;
    const ax_pickle_value *jpegs; /* list of byte strings, or NULL */
    ax_pickle_array array;        /* else: uint8 (num_vis, n) */
    const ax_pickle_value *labels;
    int64_t count;
} batch_part;

/* Label i of a part: an int, or a list of one int. */
static ax_status part_label(const convert *c, const batch_part *part, int64_t i, int32_t *out)
{
    int64_t label = -1;
    bool ok;
    if (ax_pickle_kind_of(part->labels) == AX_PICKLE_ARRAY) {
        ax_pickle_array a;
        ok = ax_pickle_array_of(part->labels, &a);
        const unsigned char *p = a.data + (size_t)i * (size_t)a.item_bytes;
        uint64_t bits = 0;
        for (int b = a.item_bytes - 1; b >= 0; b--)
            bits = bits << 8 | p[b];
        if (a.kind == 'i' && a.item_bytes < 8 && (bits >> (8 * a.item_bytes - 1) & 1))
            label = -1;
        else
            label = (int64_t)bits;
    } else {
        const ax_pickle_value *item = ax_pickle_item(part->labels, (size_t)i);
        const ax_pickle_kind kind = ax_pickle_kind_of(item);
        if ((kind == AX_PICKLE_LIST || kind == AX_PICKLE_TUPLE) && ax_pickle_length(item) == 1)
            item = ax_pickle_item(item, 0);
        ok = ax_pickle_kind_of(item) == AX_PICKLE_INT && ax_pickle_int(item, &label);
    }
    if (!ok || label < 0 || label >= c->label_count)
        return ax_fail(AX_STATUS_BAD_DATA, "%s: 'labels'[%lld] is not a label number in 0 .. %d "
                       "(batches.meta names %d labels; a list of several labels per image is "
                       "not read)", part->path, (long long)i, c->label_count - 1, c->label_count);
    *out = (int32_t)label;
    return AX_STATUS_OK;
}

static ax_status read_part(const convert *c, const char *path, batch_part *part)
{
    memset(part, 0, sizeof *part);
    part->path = path;
    const ax_pickle_value *root = NULL;
    AX_TRY(parse_file(path, &part->bytes, &part->pickle, &root));
    const ax_pickle_value *data = ax_pickle_get(root, "data");
    part->labels = ax_pickle_get(root, "labels");
    if (!data || !part->labels)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: lacks '%s'", path, data ? "labels" : "data");
    const ax_pickle_kind kind = ax_pickle_kind_of(data);
    if (kind == AX_PICKLE_LIST || kind == AX_PICKLE_TUPLE) {
        part->jpegs = data;
        part->count = (int64_t)ax_pickle_length(data);
        for (int64_t i = 0; i < part->count; i++) {
            const ax_pickle_kind k = ax_pickle_kind_of(ax_pickle_item(data, (size_t)i));
            if (k != AX_PICKLE_BYTES && k != AX_PICKLE_STRING)
                return ax_fail(AX_STATUS_BAD_FILE, "%s: 'data'[%lld] is not a byte string (a "
                               "list of JPEGs)", path, (long long)i);
        }
    } else if (kind == AX_PICKLE_ARRAY && ax_pickle_array_of(data, &part->array)) {
        const ax_pickle_array *a = &part->array;
        if (!(a->kind == 'u' && a->item_bytes == 1 && a->dims == 2 && a->shape[0] == c->pixels))
            return ax_fail(AX_STATUS_BAD_DATA, "%s: 'data' is a %c%d array of %d dimensions "
                           "(%lld, ...); expected uint8 (num_vis = %lld, images) as "
                           "batches.meta says", path, a->kind, a->item_bytes, a->dims,
                           (long long)(a->dims > 0 ? a->shape[0] : 0), (long long)c->pixels);
        part->count = a->shape[1];
    } else {
        return ax_fail(AX_STATUS_BAD_FILE, "%s: 'data' is neither a uint8 array nor a list of "
                       "JPEGs", path);
    }
    const ax_pickle_kind label_kind = ax_pickle_kind_of(part->labels);
    int64_t labels = -1;
    ax_pickle_array la;
    if (label_kind == AX_PICKLE_LIST || label_kind == AX_PICKLE_TUPLE)
        labels = (int64_t)ax_pickle_length(part->labels);
    else if (label_kind == AX_PICKLE_ARRAY && ax_pickle_array_of(part->labels, &la) &&
             (la.kind == 'i' || la.kind == 'u') &&
             (la.dims == 1 || (la.dims == 2 && (la.shape[0] == 1 || la.shape[1] == 1))))
        labels = la.count;
    if (labels != part->count)
        return ax_fail(AX_STATUS_BAD_DATA, "%s: 'labels' %s%lld%s where 'data' holds %lld images",
                       path, labels < 0 ? "is not a list of labels" : "holds ",
                       (long long)(labels < 0 ? 0 : labels), labels < 0 ? "" : " labels",
                       (long long)part->count);
    return AX_STATUS_OK;
}

/* Image i of a part into out (S, S, C), and, for a JPEG part whose output
 * is JPEG too, its bytes kept as they are. */
static ax_status part_image(const convert *c, const batch_part *part, int64_t i,
                            unsigned char *out, prep_batch_buffer *buffer, size_t slot)
{
    const int64_t S = c->side, C = c->channels, n = part->count;
    if (part->jpegs) {
        const ax_pickle_value *jpeg = ax_pickle_item(part->jpegs, (size_t)i);
        const unsigned char *bytes = ax_pickle_data(jpeg);
        const size_t size = ax_pickle_length(jpeg);
        char why[256];
        if (!ax_jpeg_decode_exact(bytes, size, S, C, out, why, sizeof why))
            return ax_fail(AX_STATUS_BAD_DATA, "%s: image %lld ('data'[%lld], %zu bytes): %s "
                           "(each JPEG must be %lld x %lld with %lld components, as num_vis says)",
                           part->path, (long long)i, (long long)i, size, why, (long long)S,
                           (long long)S, (long long)C);
        if (buffer->format == AX_PREP_FORMAT_JPEG) {
            if (buffer->jpeg_capacity[slot] < size) {
                unsigned char *grown = realloc(buffer->jpeg[slot], size);
                if (!grown)
                    return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
                buffer->jpeg[slot] = grown;
                buffer->jpeg_capacity[slot] = size;
            }
            memcpy(buffer->jpeg[slot], bytes, size);
            buffer->jpeg_size[slot] = size;
        }
        return AX_STATUS_OK;
    }
    /* Column i of (C * S * S, n), channel-major, to (S, S, C). */
    const ax_pickle_array *a = &part->array;
    for (int64_t ch = 0; ch < C; ch++)
        for (int64_t p = 0; p < S * S; p++) {
            const int64_t row = ch * S * S + p;
            out[p * C + ch] = a->fortran ? a->data[i * c->pixels + row] : a->data[row * n + i];
        }
    if (buffer->format == AX_PREP_FORMAT_JPEG) {
        char why[256];
        if (!ax_jpeg_encode(out, S, C, buffer->quality, &buffer->jpeg[slot],
                            &buffer->jpeg_capacity[slot], &buffer->jpeg_size[slot], why, sizeof why) ||
            /* the pixels a trainer will see, for the mean */
            !ax_jpeg_decode_exact(buffer->jpeg[slot], buffer->jpeg_size[slot], S, C, out, why,
                                  sizeof why))
            return ax_fail(AX_STATUS_BAD_DATA, "%s: image %lld: %s", part->path, (long long)i, why);
    }
    return AX_STATUS_OK;
}

static ax_status convert_batch(convert *c, const source_batch *source, bool *jpeg_form,
                               bool *form_known)
{
    source_batch *subs = NULL;
    size_t sub_count = 0;
    if (source->folder) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "data_batch_%lld.", (long long)source->number);
        AX_TRY(list_numbered(source->path, prefix, &subs, &sub_count));
        if (sub_count == 0) {
            free_numbered(subs, sub_count);
            return ax_fail(AX_STATUS_BAD_FILE, "%s: a folder without sub-batches %s0, %s1, ...",
                           source->path, prefix, prefix);
        }
    }
    const size_t parts_count = source->folder ? sub_count : 1;
    batch_part *parts = calloc(parts_count, sizeof *parts);
    ax_status status = parts ? AX_STATUS_OK : ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
    int64_t count = 0;
    for (size_t p = 0; status == AX_STATUS_OK && p < parts_count; p++) {
        status = read_part(c, source->folder ? subs[p].path : source->path, &parts[p]);
        if (status != AX_STATUS_OK)
            break;
        const bool jpeg = parts[p].jpegs != NULL;
        if (*form_known && jpeg != *jpeg_form)
            status = ax_fail(AX_STATUS_BAD_DATA, "%s: 'data' is %s, where the batches before held "
                             "%s; a folder holds one form", parts[p].path,
                             jpeg ? "a list of JPEGs" : "a pixel array",
                             jpeg ? "pixel arrays" : "lists of JPEGs");
        *jpeg_form = jpeg;
        *form_known = true;
        count += parts[p].count;
    }
    int32_t *labels = NULL;
    prep_batch_buffer buffer;
    memset(&buffer, 0, sizeof buffer);
    if (status == AX_STATUS_OK && count > 0) {
        /* JPEGs kept as they are carry the quality they were made at
         * (batches.meta's jpeg_quality, 0 when unknown); pixels are encoded at
         * the quality asked. */
        c->options.jpeg_quality = *jpeg_form ? c->folder_quality : c->asked_quality;
        const int quality = c->options.jpeg_quality;
        status = prep_batch_buffer_create(&buffer, count, c->side, (int)c->channels,
                                          c->options.format, quality);
        if (status == AX_STATUS_OK && !(labels = malloc((size_t)count * sizeof *labels)))
            status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
    }
    int64_t slot = 0;
    for (size_t p = 0; status == AX_STATUS_OK && count > 0 && p < parts_count; p++)
        for (int64_t i = 0; status == AX_STATUS_OK && i < parts[p].count; i++, slot++) {
            status = part_label(c, &parts[p], i, &labels[slot]);
            if (status == AX_STATUS_OK)
                status = part_image(c, &parts[p], i, buffer.pixels + slot * c->pixels, &buffer,
                                    (size_t)slot);
        }
    if (status == AX_STATUS_OK && count > 0) {
        char data_path[4096], labels_path[4096];
        prep_batch_names_format(c->output, source->number, c->options.format, data_path,
                                labels_path, sizeof data_path);
        status = remember(c, labels_path);
        if (status == AX_STATUS_OK)
            status = remember(c, data_path);
        if (status == AX_STATUS_OK)
            status = prep_batch_write(c->output, source->number, &buffer, labels, count, c->side,
                                      (int)c->channels, NULL, NULL);
        if (status == AX_STATUS_OK) {
            add_sums(c, buffer.pixels, count);
            for (int64_t i = 0; i < count; i++)
                c->label_counts[labels[i]]++;
            status = count_batch(c, source->number, count);
        }
    }
    prep_batch_buffer_free(&buffer);
    free(labels);
    for (size_t p = 0; parts && p < parts_count; p++)
        ax_pickle_free(parts[p].pickle), free(parts[p].bytes);
    free(parts);
    free_numbered(subs, sub_count);
    return status;
}

static ax_status from_cuda_convnet2(convert *c, ax_prep_summary *summary)
{
    AX_TRY(read_meta(c));
    source_batch *sources = NULL;
    size_t source_count = 0;
    ax_status status = list_numbered(c->input, "data_batch_", &sources, &source_count);
    if (status == AX_STATUS_OK && source_count == 0)
        status = ax_fail(AX_STATUS_BAD_DATA, "%s: no data_batch_N files (not a cuda-convnet2 "
                         "batch folder?)", c->input);
    if (status == AX_STATUS_OK)
        status = open_output(c);
    bool jpeg_form = false, form_known = false;
    int64_t largest = 0;
    for (size_t b = 0; status == AX_STATUS_OK && b < source_count; b++) {
        status = convert_batch(c, &sources[b], &jpeg_form, &form_known);
        /* A batch of no images writes and counts nothing: batch_counts may
         * not reach its number (nor exist, when it comes first). */
        const int64_t number = sources[b].number;
        const int64_t images = number < c->batches ? c->batch_counts[number] : 0;
        if (status == AX_STATUS_OK && images > largest)
            largest = images;
        if (status == AX_STATUS_OK && images > 0)
            summary->batches_written++;
    }
    free_numbered(sources, source_count);
    if (status == AX_STATUS_OK && c->images == 0)
        status = ax_fail(AX_STATUS_BAD_DATA, "%s: its batches hold no images", c->input);
    if (status == AX_STATUS_OK) {
        if (c->options.batch_size <= 0)
            c->options.batch_size = largest;
        prep_list list;
        memset(&list, 0, sizeof list);
        list.labels = c->names;
        list.label_count = c->label_count;
        char path[4096];
        snprintf(path, sizeof path, "%s/mean.npy", c->output);
        status = remember(c, path);
        snprintf(path, sizeof path, "%s/meta.json", c->output);
        if (status == AX_STATUS_OK)
            status = remember(c, path);
        if (status == AX_STATUS_OK)
            status = prep_metadata_write(c->output, &list, &c->options, (int)c->channels,
                                         c->label_counts, c->batch_counts, c->batches, c->sums,
                                         color_pca(c), c->images, c->skipped);
    }
    return status;
}

/* ------------------------------------------- axon batches -> cuda-convnet2 */

static ax_status read_axon_meta(convert *c, ax_batches_meta *meta)
{
    AX_TRY(ax_batches_meta_read(c->input, meta));
    char path[4096];
    snprintf(path, sizeof path, "%s/meta.json", c->input);
    unsigned char *text = NULL;
    size_t length = 0;
    AX_TRY(read_whole(path, &text, &length));
    ax_json *root = NULL;
    ax_status status = ax_json_parse((const char *)text, length, 0, &root);
    free(text);
    if (status != AX_STATUS_OK)
        return ax_fail_context(status, "%s", path);
    c->side = meta->side;
    c->channels = meta->channels;
    c->pixels = meta->side * meta->side * meta->channels;
    const ax_json *names = ax_json_object_get(root, "labels");
    status = set_labels(c, (int32_t)meta->classes);
    for (int32_t i = 0; status == AX_STATUS_OK && i < c->label_count; i++) {
        const char *name = ax_json_string(ax_json_array_get(names, (size_t)i));
        if (!name)
            status = ax_fail(AX_STATUS_BAD_FILE, "%s: \"labels\"[%d] is not a string", path, i);
        else if (!(c->names[i] = malloc(strlen(name) + 1)))
            status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
        else
            strcpy(c->names[i], name);
    }
    int64_t value = 0;
    if (ax_json_int(ax_json_object_get(root, "batch_size"), &value) && value > 0)
        c->options.batch_size = value;
    if (ax_json_int(ax_json_object_get(root, "seed"), &value) && value >= 0)
        c->options.seed = (uint64_t)value;
    if (ax_json_int(ax_json_object_get(root, "images_skipped"), &value) && value >= 0)
        c->skipped = value;
    c->options.jpeg_quality = 0;
    if (meta->jpeg && ax_json_int(ax_json_object_get(root, "jpeg_quality"), &value) &&
        value >= 0 && value <= 100)
        c->options.jpeg_quality = (int)value;
    if (status == AX_STATUS_OK && c->channels == 3)
        status = ax_color_pca_read_json(ax_json_object_get(root, "color_pca"), path,
                                        &c->color_pca);
    ax_json_free(root);
    return status;
}

/* One axon batch: its labels (checked), and its images as cuda-convnet2's
 * 'data' (a channel-major (num_vis, k) array, or the JPEG byte strings). */
static ax_status write_cc2_batch(convert *c, const ax_batches_meta *meta,
                                 const ax_batches_file *file, unsigned char *pixels,
                                 unsigned char *columns)
{
    const char *name = strrchr(file->data_path, '/');
    char stem[64];
    snprintf(stem, sizeof stem, "%s", name ? name + 1 : file->data_path);
    char *dot = strchr(stem, '.');
    if (dot)
        *dot = 0;
    const int64_t number = name_number(stem, "batch_"), k = file->images;
    if (number < 0)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: not named batch_NNNNN as axon prep names them "
                       "(N up to %d)", file->data_path, MAX_BATCH_NUMBER);
    npy_array labels_file;
    memset(&labels_file, 0, sizeof labels_file);
    ax_status status = ax_npy_open(file->labels_path, &labels_file);
    if (status != AX_STATUS_OK) {
        ax_npy_close(&labels_file);
        return status;
    }
    unsigned char *label_bytes = NULL;
    if (!(labels_file.kind != NPY_KIND_FLOAT && labels_file.dims == 1 && labels_file.shape[0] == k))
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: expected %lld integer labels as meta.json says",
                         file->labels_path, (long long)k);
    if (status == AX_STATUS_OK)
        status = ax_npy_read_data(&labels_file, &label_bytes);
    ax_jpeg_batch jpeg;
    memset(&jpeg, 0, sizeof jpeg);
    if (status == AX_STATUS_OK && meta->jpeg) {
        status = ax_jpeg_batch_read(file->data_path, &jpeg);
        if (status == AX_STATUS_OK &&
            !(jpeg.count == k && jpeg.side == c->side && jpeg.channels == c->channels))
            status = ax_fail(AX_STATUS_BAD_FILE, "%s: holds %lld JPEGs of side %lld, %lld "
                             "channels, where meta.json says %lld of %lld, %lld",
                             file->data_path, (long long)jpeg.count, (long long)jpeg.side,
                             (long long)jpeg.channels, (long long)k, (long long)c->side,
                             (long long)c->channels);
        for (int64_t i = 0; status == AX_STATUS_OK && i < k; i++)
            status = ax_jpeg_batch_decode(file->data_path, &jpeg, i, pixels + i * c->pixels);
    } else if (status == AX_STATUS_OK) {
        npy_array data;
        memset(&data, 0, sizeof data);
        status = ax_npy_open(file->data_path, &data);
        if (status == AX_STATUS_OK &&
            !(data.kind == NPY_KIND_UNSIGNED && data.item_bytes == 1 && data.dims == 4 &&
              data.shape[0] == k && data.shape[1] == c->side && data.shape[2] == c->side &&
              data.shape[3] == c->channels))
            status = ax_fail(AX_STATUS_BAD_FILE, "%s: expected uint8 (%lld, %lld, %lld, %lld) as "
                             "meta.json says", file->data_path, (long long)k, (long long)c->side,
                             (long long)c->side, (long long)c->channels);
        if (status == AX_STATUS_OK)
            status = ax_npy_read_items(&data, 0, k * c->pixels, pixels);
        ax_npy_close(&data);
    }
    ax_pickle_writer w;
    ax_pickle_write_start(&w);
    ax_pickle_write_dict_begin(&w);
    ax_pickle_write_string(&w, "labels");
    ax_pickle_write_list_begin(&w);
    for (int64_t i = 0; status == AX_STATUS_OK && i < k; i++) {
        const double label = ax_npy_element(&labels_file, label_bytes, (size_t)i);
        if (!(label >= 0 && label < (double)c->label_count)) {
            status = ax_fail(AX_STATUS_BAD_DATA, "%s: label [%lld] is %g, outside 0 .. %d",
                             file->labels_path, (long long)i, label, c->label_count - 1);
            break;
        }
        c->label_counts[(int32_t)label]++;
        /* cuda-convnet2's JPEG provider takes a list of labels per image */
        if (meta->jpeg)
            ax_pickle_write_list_begin(&w);
        ax_pickle_write_int(&w, (int64_t)label);
        if (meta->jpeg)
            ax_pickle_write_list_end(&w);
    }
    ax_pickle_write_list_end(&w);
    ax_pickle_write_string(&w, "data");
    if (status == AX_STATUS_OK && meta->jpeg) {
        ax_pickle_write_list_begin(&w);
        for (int64_t i = 0; i < k; i++) {
            const unsigned char *bytes;
            size_t size;
            ax_jpeg_batch_image(&jpeg, i, &bytes, &size);
            ax_pickle_write_bytes(&w, bytes, size);
        }
        ax_pickle_write_list_end(&w);
    } else if (status == AX_STATUS_OK) {
        const int64_t area = c->side * c->side;
        for (int64_t i = 0; i < k; i++)
            for (int64_t p = 0; p < area; p++)
                for (int64_t ch = 0; ch < c->channels; ch++)
                    columns[(ch * area + p) * k + i] = pixels[i * c->pixels + p * c->channels + ch];
        const int64_t shape[2] = {c->pixels, k};
        ax_pickle_write_array(&w, 'u', 1, 2, shape, columns);
    }
    ax_pickle_write_dict_end(&w);
    ax_pickle_write_end(&w);
    if (status == AX_STATUS_OK && w.out_of_memory)
        status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory for data_batch_%lld",
                         (long long)number);
    char path[4096];
    snprintf(path, sizeof path, "%s/data_batch_%lld", c->output, (long long)number);
    if (status == AX_STATUS_OK)
        status = remember(c, path);
    if (status == AX_STATUS_OK)
        status = prep_write_file_atomic(path, w.data, w.length);
    if (status == AX_STATUS_OK) {
        add_sums(c, pixels, k);
        status = count_batch(c, number, k);
    }
    ax_pickle_write_free(&w);
    ax_jpeg_batch_release(&jpeg);
    free(label_bytes);
    ax_npy_close(&labels_file);
    return status;
}

static ax_status write_cc2_meta(convert *c, bool jpeg)
{
    const int64_t area = c->side * c->side;
    /* data_mean: float64 (num_vis, 1), channel-major, little-endian */
    unsigned char *mean = malloc((size_t)c->pixels * 8);
    if (!mean)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
    for (int64_t ch = 0; ch < c->channels; ch++)
        for (int64_t p = 0; p < area; p++) {
            double value = (double)c->sums[p * c->channels + ch] / (double)c->images;
            uint64_t bits;
            memcpy(&bits, &value, 8);
            for (int b = 0; b < 8; b++)
                mean[(ch * area + p) * 8 + b] = (unsigned char)(bits >> (8 * b));
        }
    ax_pickle_writer w;
    ax_pickle_write_start(&w);
    ax_pickle_write_dict_begin(&w);
    ax_pickle_write_string(&w, "label_names");
    ax_pickle_write_list_begin(&w);
    for (int32_t i = 0; i < c->label_count; i++)
        ax_pickle_write_string(&w, c->names[i]);
    ax_pickle_write_list_end(&w);
    ax_pickle_write_string(&w, "num_vis");
    ax_pickle_write_int(&w, c->pixels);
    ax_pickle_write_string(&w, "img_size");
    ax_pickle_write_int(&w, c->side);
    ax_pickle_write_string(&w, "num_colors");
    ax_pickle_write_int(&w, c->channels);
    ax_pickle_write_string(&w, "batch_size");
    ax_pickle_write_int(&w, c->options.batch_size);
    ax_pickle_write_string(&w, "data_mean");
    const int64_t shape[2] = {c->pixels, 1};
    ax_pickle_write_array(&w, 'f', 8, 2, shape, mean);
    const ax_color_pca *pca = color_pca(c);
    if (pca->present) {
        /* float64, so that axon -> cuda-convnet2 -> axon keeps every bit */
        double stdevs[3], columns[9];
        for (int i = 0; i < 3; i++) {
            stdevs[i] = pca->stdevs[i];
            for (int k = 0; k < 3; k++)
                columns[k * 3 + i] = pca->eigenvectors[i][k];
        }
        ax_pickle_write_string(&w, "color_pca");
        ax_pickle_write_list_begin(&w);
        ax_pickle_write_array(&w, 'f', 8, 1, (const int64_t[]){3}, stdevs);
        ax_pickle_write_array(&w, 'f', 8, 2, (const int64_t[]){3, 3}, columns);
        ax_pickle_write_list_end(&w);
    }
    /* axon's values that cuda-convnet2 has no key for: the way back */
    ax_pickle_write_string(&w, "axon_seed");
    ax_pickle_write_int(&w, (int64_t)c->options.seed);
    ax_pickle_write_string(&w, "axon_images_skipped");
    ax_pickle_write_int(&w, c->skipped);
    if (jpeg) {
        ax_pickle_write_string(&w, "jpeg_quality");
        ax_pickle_write_int(&w, c->options.jpeg_quality);
    }
    ax_pickle_write_dict_end(&w);
    ax_pickle_write_end(&w);
    free(mean);
    char path[4096];
    snprintf(path, sizeof path, "%s/batches.meta", c->output);
    ax_status status = w.out_of_memory ? ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory")
                                       : remember(c, path);
    if (status == AX_STATUS_OK)
        status = prep_write_file_atomic(path, w.data, w.length);
    ax_pickle_write_free(&w);
    return status;
}

static ax_status to_cuda_convnet2(convert *c, ax_prep_summary *summary)
{
    ax_batches_meta meta;
    AX_TRY(read_axon_meta(c, &meta));
    int64_t largest = 0;
    for (size_t b = 0; b < meta.files_count; b++)
        if (meta.files[b].images > largest)
            largest = meta.files[b].images;
    unsigned char *pixels = malloc((size_t)(largest * c->pixels) + 1);
    unsigned char *columns = malloc((size_t)(largest * c->pixels) + 1);
    ax_status status = pixels && columns ? AX_STATUS_OK
                                         : ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
    if (status == AX_STATUS_OK)
        status = open_output(c);
    for (size_t b = 0; status == AX_STATUS_OK && b < meta.files_count; b++) {
        status = write_cc2_batch(c, &meta, &meta.files[b], pixels, columns);
        if (status == AX_STATUS_OK)
            summary->batches_written++;
    }
    if (status == AX_STATUS_OK && c->options.batch_size <= 0)
        c->options.batch_size = largest;
    if (status == AX_STATUS_OK)
        status = write_cc2_meta(c, meta.jpeg);
    free(pixels);
    free(columns);
    ax_batches_meta_release(&meta);
    return status;
}

ax_status prep_convert(const ax_prep_options *options, ax_prep_summary *summary)
{
    const double start = ax_seconds_now();
    if (!options->input || !options->output)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "prep: the input and output folders are required");
    if (options->from_cuda_convnet2 && options->format == AX_PREP_FORMAT_CUDA_CONVNET2)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "prep: from cuda-convnet2 to cuda-convnet2 is no "
                       "conversion; give the raw or jpeg format");
    if (options->from_cuda_convnet2 && options->format != AX_PREP_FORMAT_RAW &&
        options->format != AX_PREP_FORMAT_JPEG)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "prep: unknown batch format %d (raw %d or jpeg %d)",
                       (int)options->format, AX_PREP_FORMAT_RAW, AX_PREP_FORMAT_JPEG);
    if (options->from_cuda_convnet2 && options->format == AX_PREP_FORMAT_JPEG &&
        (options->jpeg_quality < 1 || options->jpeg_quality > 100))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "prep: JPEG quality %d is outside 1 .. 100",
                       options->jpeg_quality);
    if (prep_launched_size() > 1)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "prep: a conversion of cuda-convnet2 batches runs "
                       "in one process, not under mpirun with several");
    convert c;
    memset(&c, 0, sizeof c);
    c.options = *options;
    c.input = options->input;
    c.output = options->output;
    ax_status status;
    if (options->from_cuda_convnet2) {
        c.asked_quality = options->jpeg_quality;
        status = from_cuda_convnet2(&c, summary);
    } else {
        status = to_cuda_convnet2(&c, summary);
    }
    if (status != AX_STATUS_OK)
        undo(&c);
    summary->images_found = c.images;
    summary->images_written = status == AX_STATUS_OK ? c.images : 0;
    summary->labels = c.label_count;
    summary->seconds = ax_seconds_now() - start;
    if (status != AX_STATUS_OK)
        summary->batches_written = 0;
    for (size_t i = 0; i < c.written_count; i++)
        free(c.written[i]);
    free(c.written);
    for (int32_t i = 0; c.names && i < c.label_count; i++)
        free(c.names[i]);
    free(c.names);
    free(c.label_counts);
    free(c.sums);
    free(c.batch_counts);
    return status;
}
