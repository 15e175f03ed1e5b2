/* batches.c: loads the output of `axon prep` (ax_prep_run; docs/prep.md) as
 * a dataset, closing the loop that axon prep opens: photographs in, a
 * trained model out.
 * meta.json names the batches; each batch_NNNNN.npy (k, S, S, C) uint8
 * becomes k rows of S*S*C features scaled to [0, 1], and its
 * batch_NNNNN_labels.npy (k) int32 the labels. Every file is checked against
 * meta.json (shape, count, label range) before its data is used. A row
 * range (ax_dataset_load_batches_rows) opens only the batches holding its
 * rows and reads only those rows. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/random.h"
#include "data/dataset.h"
#include "data/jpeg_batch.h"
#include "data/stream.h"
#include "io/json.h"
#include "io/npy_header.h"

static ax_status read_text(const char *path, char **text, size_t *length)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot open: %s (is this a folder made by axon "
                       "prep?)", path, strerror(errno));
    size_t capacity = 1 << 16, used = 0;
    char *buffer = malloc(capacity);
    while (buffer) {
        used += fread(buffer + used, 1, capacity - used, file);
        if (used < capacity)
            break;
        capacity *= 2;
        char *grown = realloc(buffer, capacity);
        if (!grown) {
            free(buffer);
            buffer = NULL;
        } else {
            buffer = grown;
        }
    }
    bool failed = ferror(file);
    fclose(file);
    if (!buffer)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    if (failed) {
        free(buffer);
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot read", path);
    }
    *text = buffer;
    *length = used;
    return AX_STATUS_OK;
}

static ax_status meta_int(const ax_json *root, const char *key, const char *path, int64_t *out)
{
    const ax_json *node = ax_json_object_get(root, key);
    if (!node || !ax_json_int(node, out) || *out < 0)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: \"%s\" is missing or not a count", path, key);
    return AX_STATUS_OK;
}

/* Rows [from, to) of batch file (count images) into data from row `into` on:
 * both files are checked against meta.json, then only those rows are read. */
static ax_status load_batch(const ax_batches_meta *meta, const ax_batches_file *file,
                            int64_t from, int64_t to, int64_t into, ax_dataset *data)
{
    const char *data_path = file->data_path, *labels_path = file->labels_path;
    const int64_t count = file->images, side = meta->side, channels = meta->channels;
    npy_array pixels, labels;
    memset(&pixels, 0, sizeof pixels);
    unsigned char *pixel_bytes = NULL, *label_bytes = NULL;
    ax_jpeg_batch jpeg;
    memset(&jpeg, 0, sizeof jpeg);
    ax_status status = meta->jpeg ? ax_jpeg_batch_read(data_path, &jpeg)
                                  : ax_npy_open(data_path, &pixels);
    if (status == AX_STATUS_OK && meta->jpeg &&
        !(jpeg.count == count && jpeg.side == side && jpeg.channels == channels))
        status = ax_fail(AX_STATUS_BAD_FILE,
                         "%s: holds %lld JPEGs of %lld x %lld x %lld where meta.json says %lld of "
                         "%lld x %lld x %lld",
                         data_path, (long long)jpeg.count, (long long)jpeg.side,
                         (long long)jpeg.side, (long long)jpeg.channels, (long long)count,
                         (long long)side, (long long)side, (long long)channels);
    if (status == AX_STATUS_OK && !meta->jpeg &&
        !(pixels.kind == NPY_KIND_UNSIGNED && pixels.item_bytes == 1 && pixels.dims == 4 &&
          pixels.shape[0] == count && pixels.shape[1] == side && pixels.shape[2] == side &&
          pixels.shape[3] == channels))
        status = ax_fail(AX_STATUS_BAD_FILE,
                         "%s: expected uint8 (%lld, %lld, %lld, %lld) as meta.json says, found "
                         "dtype %s with %d dimensions",
                         data_path, (long long)count, (long long)side, (long long)side,
                         (long long)channels, pixels.descr, pixels.dims);
    if (status == AX_STATUS_OK)
        status = ax_npy_open(labels_path, &labels);
    else
        memset(&labels, 0, sizeof labels);
    if (status == AX_STATUS_OK &&
        !(labels.kind != NPY_KIND_FLOAT && labels.dims == 1 && labels.shape[0] == count))
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: expected %lld integer labels", labels_path,
                         (long long)count);
    const int64_t rows = to - from;
    const size_t values = (size_t)rows * (size_t)data->features;
    if (status == AX_STATUS_OK &&
        (!(label_bytes = malloc((size_t)rows * (size_t)labels.item_bytes + 1)) ||
         !(pixel_bytes = malloc(values + 1))))
        status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", data_path);
    if (status == AX_STATUS_OK)
        status = ax_npy_read_items(&labels, from, rows, label_bytes);
    if (status == AX_STATUS_OK && !meta->jpeg)
        status = ax_npy_read_items(&pixels, from * data->features, (int64_t)values, pixel_bytes);
    for (int64_t i = from; status == AX_STATUS_OK && meta->jpeg && i < to; i++)
        status = ax_jpeg_batch_decode(data_path, &jpeg, i,
                                      pixel_bytes + (size_t)(i - from) * (size_t)data->features);
    ax_jpeg_batch_release(&jpeg);
    if (status == AX_STATUS_OK) {
        for (int64_t i = from; i < to && status == AX_STATUS_OK; i++) {
            double label = ax_npy_element(&labels, label_bytes, (size_t)(i - from));
            if (!(label >= 0 && label < (double)data->classes))
                status = ax_fail(AX_STATUS_BAD_DATA,
                                 "%s: label [%lld] is %g, outside 0 .. %lld (meta.json lists "
                                 "%lld labels)",
                                 labels_path, (long long)i, label, (long long)data->classes - 1,
                                 (long long)data->classes);
            else
                data->labels[into + i - from] = (int32_t)label;
        }
        /* stream.c makes the same float of a pixel: streamed rows equal these. */
        float *out = data->feature_values + (size_t)into * (size_t)data->features;
        for (size_t i = 0; i < values; i++)
            out[i] = (float)pixel_bytes[i] * (1.0f / 255.0f);
    }
    free(pixel_bytes);
    free(label_bytes);
    ax_npy_close(&pixels);
    ax_npy_close(&labels);
    return status;
}

/* range: {first, count}, or NULL for every row; count_only: just *rows. */
static ax_status load(const char *dir, const int64_t *range, bool count_only, int64_t *total,
                      ax_dataset **out)
{
    *total = 0;
    if (!dir || (!count_only && !out))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "batches: no folder or no output given");
    if (out)
        *out = NULL;
    ax_batches_meta meta;
    AX_TRY(ax_batches_meta_read(dir, &meta));
    ax_status status = range ? ax_row_range_check(dir, meta.rows, "images", range[0], range[1])
                             : AX_STATUS_OK;
    *total = status == AX_STATUS_OK ? meta.rows : 0;
    if (count_only) {
        ax_batches_meta_release(&meta);
        return status;
    }
    /* Rows [keep, keep_end) of the set; batch b holds rows [first, first + count). */
    const int64_t keep = range ? range[0] : 0, keep_end = range ? range[0] + range[1] : meta.rows;
    if (status == AX_STATUS_OK)
        status = ax_dataset_allocate(keep_end - keep, meta.side * meta.side * meta.channels,
                                     meta.classes, 0, dir, out);
    if (status == AX_STATUS_OK) /* (S, S, C) images, as prep writes them */
        memcpy((*out)->image_shape, (int64_t[3]){meta.side, meta.side, meta.channels},
               sizeof (*out)->image_shape);
    int64_t first = 0;
    for (size_t b = 0; status == AX_STATUS_OK && b < meta.files_count; b++) {
        const int64_t count = meta.files[b].images;
        const int64_t from = keep > first ? keep : first;
        const int64_t to = keep_end < first + count ? keep_end : first + count;
        if (from < to) /* batches outside the range stay closed */
            status = load_batch(&meta, &meta.files[b], from - first, to - first, from - keep,
                                *out);
        first += count;
    }
    ax_batches_meta_release(&meta);
    if (status != AX_STATUS_OK) {
        ax_dataset_free(*out);
        *out = NULL;
    }
    return status;
}

ax_status ax_dataset_load_batches(const char *dir, ax_dataset **out)
{
    int64_t rows = 0;
    return load(dir, NULL, false, &rows, out);
}

ax_status ax_dataset_load_batches_rows(const char *dir, int64_t first, int64_t count,
                                       ax_dataset **out)
{
    const int64_t range[2] = {first, count};
    int64_t rows = 0;
    return load(dir, range, false, &rows, out);
}

ax_status ax_dataset_count_batches(const char *dir, int64_t *rows)
{
    return load(dir, NULL, true, rows, NULL);
}

/* The batch list of meta.json for the streamed source (stream.c): the same
 * checks as load() above, the files named with their folder. */
ax_status ax_batches_meta_read(const char *dir, ax_batches_meta *meta)
{
    memset(meta, 0, sizeof *meta);
    char meta_path[4096];
    snprintf(meta_path, sizeof meta_path, "%s/meta.json", dir);
    char *text = NULL;
    size_t length = 0;
    AX_TRY(read_text(meta_path, &text, &length));
    /* The fingerprint of a streamed set (checkpoints): its list, not its pixels. */
    uint64_t hash = ax_hash64(length);
    for (size_t i = 0; i < length; i++)
        hash = ax_hash64(hash ^ (unsigned char)text[i]);
    meta->hash = hash;
    ax_json *root = NULL;
    ax_status status = ax_json_parse(text, length, 0, &root);
    free(text);
    if (status != AX_STATUS_OK)
        return ax_fail_context(status, "%s", meta_path);
    const ax_json *labels = ax_json_object_get(root, "labels");
    const ax_json *batches = ax_json_object_get(root, "batches");
    const char *format = ax_json_string(ax_json_object_get(root, "format"));
    const ax_json *batch_format = ax_json_object_get(root, "batch_format");
    if (!format || strcmp(format, "axon-prep") != 0)
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: not an axon prep metadata file (no \"format\": "
                         "\"axon-prep\")", meta_path);
    if (status == AX_STATUS_OK && batch_format) { /* absent: raw, as before the key */
        const char *name = ax_json_string(batch_format);
        if (name && strcmp(name, "jpeg") == 0)
            meta->jpeg = true;
        else if (!name || strcmp(name, "raw") != 0)
            status = ax_fail(AX_STATUS_BAD_FILE, "%s: \"batch_format\" is %s%s%s; this axon reads "
                             "\"raw\" and \"jpeg\"", meta_path, name ? "\"" : "not a string",
                             name ? name : "", name ? "\"" : "");
    }
    if (status == AX_STATUS_OK)
        status = ax_color_pca_read_json(ax_json_object_get(root, "color_pca"), meta_path,
                                        &meta->color_pca);
    if (status == AX_STATUS_OK)
        status = meta_int(root, "image_size", meta_path, &meta->side);
    if (status == AX_STATUS_OK)
        status = meta_int(root, "channels", meta_path, &meta->channels);
    if (status == AX_STATUS_OK && (meta->side < 1 || (meta->channels != 1 && meta->channels != 3)))
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: image_size %lld or channels %lld out of range",
                         meta_path, (long long)meta->side, (long long)meta->channels);
    if (status == AX_STATUS_OK &&
        (ax_json_type_of(labels) != AX_JSON_ARRAY || ax_json_length(labels) == 0 ||
         ax_json_type_of(batches) != AX_JSON_ARRAY))
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: \"labels\" and \"batches\" must be arrays",
                         meta_path);
    const size_t count = status == AX_STATUS_OK ? ax_json_length(batches) : 0;
    if (count > 0 && !(meta->files = calloc(count, sizeof *meta->files)))
        status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", meta_path);
    for (size_t b = 0; status == AX_STATUS_OK && b < count; b++) {
        const ax_json *entry = ax_json_array_get(batches, b);
        ax_batches_file *file = &meta->files[b];
        meta->files_count = b + 1;
        status = meta_int(entry, "images", meta_path, &file->images);
        const char *data_name = ax_json_string(ax_json_object_get(entry, "data"));
        const char *labels_name = ax_json_string(ax_json_object_get(entry, "labels"));
        if (status == AX_STATUS_OK &&
            (!data_name || !labels_name || strchr(data_name, '/') || strchr(labels_name, '/')))
            status = ax_fail(AX_STATUS_BAD_FILE, "%s: batch %zu lacks plain \"data\" and "
                             "\"labels\" file names", meta_path, b);
        if (status == AX_STATUS_OK) {
            size_t dir_length = strlen(dir);
            file->data_path = malloc(dir_length + strlen(data_name) + 2);
            file->labels_path = malloc(dir_length + strlen(labels_name) + 2);
            if (!file->data_path || !file->labels_path)
                status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", meta_path);
            else {
                sprintf(file->data_path, "%s/%s", dir, data_name);
                sprintf(file->labels_path, "%s/%s", dir, labels_name);
            }
        }
        meta->rows += file->images;
    }
    meta->classes = status == AX_STATUS_OK ? (int64_t)ax_json_length(labels) : 0;
    if (status == AX_STATUS_OK && meta->rows == 0)
        status = ax_fail(AX_STATUS_BAD_DATA, "%s: lists no images", meta_path);
    ax_json_free(root);
    if (status != AX_STATUS_OK)
        ax_batches_meta_release(meta);
    return status;
}

void ax_batches_meta_release(ax_batches_meta *meta)
{
    for (size_t b = 0; b < meta->files_count; b++) {
        free(meta->files[b].data_path);
        free(meta->files[b].labels_path);
    }
    free(meta->files);
    memset(meta, 0, sizeof *meta);
}
