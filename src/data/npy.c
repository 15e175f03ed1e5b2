/* npy.c: loads NumPy .npy arrays (format versions 1.0, 2.0 and 3.0, as
 * described in numpy/lib/format.py): a features array (float32, float64 or
 * uint8; (rows, features), or (rows, d1, d2, ...) flattened per row) and an
 * optional labels array (integers >= 0, (rows) or (rows, 1)) or targets array
 * (floats, (rows) or (rows, targets)). Without a labels file, column 0 of
 * the features holds the label.
 *
 * The container (header parsing, size checks) is io/npy_header.c, shared
 * with the plain array reader io/npy_array.c. Data is read in 1 MiB chunks;
 * a row range (ax_dataset_load_npy_rows) seeks to its first row and reads
 * only its rows, except integer labels (a labels file or column 0), read
 * whole so that the classes are the file's.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "data/dataset.h"
#include "io/npy_header.h"

/* ------------------------------------------------------------- conversion */

static ax_status check_label(const npy_array *array, double value, const char *where,
                             int64_t index, int64_t *largest)
{
    if (!(value >= 0 && value == floor(value) && value < 2147483647.0))
        return ax_fail(AX_STATUS_BAD_DATA,
                       "%s: %s [%lld] is %g: labels must be integers from 0 to 2147483646",
                       array->path, where, (long long)index, value);
    if ((int64_t)value > *largest)
        *largest = (int64_t)value;
    return AX_STATUS_OK;
}

/* out[j] = element first + j, times scale, for j < n: tight loops for the
 * common dtypes on little-endian hosts, ax_npy_element() otherwise. */
static void convert_values(const npy_array *array, const unsigned char *data, size_t first,
                           int64_t n, double scale, float *restrict out)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const unsigned char *p = data + first * (size_t)array->item_bytes;
    if (array->kind == NPY_KIND_FLOAT && array->item_bytes == 4) {
        if (scale == 1.0) {
            memcpy(out, p, (size_t)n * 4);
            return;
        }
        for (int64_t j = 0; j < n; j++) {
            float value;
            memcpy(&value, p + 4 * j, 4);
            out[j] = (float)(value * scale);
        }
        return;
    }
    if (array->kind == NPY_KIND_FLOAT && array->item_bytes == 8) {
        for (int64_t j = 0; j < n; j++) {
            double value;
            memcpy(&value, p + 8 * j, 8);
            out[j] = (float)(value * scale);
        }
        return;
    }
    if (array->kind == NPY_KIND_UNSIGNED && array->item_bytes == 1) {
        const float factor = (float)scale;
        if ((double)factor == scale) { /* exact in float: a vectorisable float loop */
            for (int64_t j = 0; j < n; j++)
                out[j] = (float)p[j] * factor;
        } else {
            for (int64_t j = 0; j < n; j++)
                out[j] = (float)(p[j] * scale);
        }
        return;
    }
#endif
    for (int64_t j = 0; j < n; j++)
        out[j] = (float)(ax_npy_element(array, data, first + (size_t)j) * scale);
}

/* The bytes read at a time: a bounded buffer whatever the file's size
 * (at least one row). */
static const size_t npy_chunk_bytes = (size_t)1 << 20;

ax_status ax_npy_read_items(npy_array *array, int64_t first, int64_t n, unsigned char *buffer)
{
    const size_t bytes = (size_t)n * (size_t)array->item_bytes;
    const off_t offset = (off_t)array->data_offset + (off_t)first * array->item_bytes;
    if (n == 0)
        return AX_STATUS_OK;
    /* The file's size was checked against its header on opening: a short read means it
     * changed since. */
    if (fseeko(array->file, offset, SEEK_SET) != 0 || fread(buffer, 1, bytes, array->file) != bytes)
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot read elements %lld to %lld (byte %lld on)",
                       array->path, (long long)first, (long long)(first + n - 1),
                       (long long)offset);
    return AX_STATUS_OK;
}

/* Where a chunk of rows goes: rows [range_first, range_first + dataset->rows)
 * of the file are kept, the others only have their label checked. */
typedef struct row_target {
    ax_dataset *dataset;
    int64_t range_first;
    double scale;
    bool label_in_column_0;
    int64_t largest;
} row_target;

/* Converts rows [chunk_first, chunk_first + chunk_rows) of the file, held in
 * data, into target (features and, when label_in_column_0, labels). */
static ax_status fill_features(const npy_array *array, const unsigned char *data,
                               int64_t chunk_first, int64_t chunk_rows, row_target *target)
{
    ax_dataset *dataset = target->dataset;
    const int64_t width = array->count / array->shape[0];
    const int64_t skip = target->label_in_column_0 ? 1 : 0;
    for (int64_t i = 0; i < chunk_rows; i++) {
        const int64_t row = chunk_first + i, kept = row - target->range_first;
        const bool keep = kept >= 0 && kept < dataset->rows;
        size_t base = (size_t)(i * width);
        if (target->label_in_column_0) {
            double label = ax_npy_element(array, data, base);
            AX_TRY(check_label(array, label, "label (column 0) of row", row, &target->largest));
            if (keep)
                dataset->labels[kept] = (int32_t)label;
        }
        if (!keep)
            continue;
        float *out = dataset->feature_values + kept * dataset->features;
        convert_values(array, data, base + (size_t)skip, dataset->features, target->scale, out);
        for (int64_t column = 0; column < dataset->features; column++) {
            if (isfinite(out[column]))
                continue;
            double source = ax_npy_element(array, data, base + (size_t)(column + skip));
            return ax_fail(AX_STATUS_BAD_DATA, "%s: element [%lld, %lld] is %s", array->path,
                           (long long)row, (long long)(column + skip),
                           isnan(source)    ? "NaN"
                           : isinf(source) ? "Inf"
                                           : "too large for float32 after scaling");
        }
    }
    return AX_STATUS_OK;
}

/* Reads rows [from, to) of the features file chunk by chunk into target. */
static ax_status read_feature_rows(npy_array *array, int64_t from, int64_t to,
                                   row_target *target)
{
    const int64_t width = array->count / array->shape[0];
    const size_t row_bytes = (size_t)width * (size_t)array->item_bytes;
    const int64_t chunk_rows = row_bytes >= npy_chunk_bytes ? 1
                                                            : (int64_t)(npy_chunk_bytes / row_bytes);
    const int64_t wanted = to - from < chunk_rows ? to - from : chunk_rows;
    unsigned char *chunk = malloc(wanted > 0 ? (size_t)wanted * row_bytes : 1);
    if (!chunk)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory for %lld rows",
                       array->path, (long long)wanted);
    ax_status status = AX_STATUS_OK;
    for (int64_t row = from; row < to && status == AX_STATUS_OK; row += chunk_rows) {
        const int64_t rows = to - row < chunk_rows ? to - row : chunk_rows;
        status = ax_npy_read_items(array, row * width, rows * width, chunk);
        if (status == AX_STATUS_OK)
            status = fill_features(array, chunk, row, rows, target);
    }
    free(chunk);
    return status;
}

/* Labels or targets: integer labels are read whole, chunk by chunk, so that
 * classes is the file's largest label + 1 whatever the range; float targets
 * only for the range's rows. */
static ax_status read_labels(npy_array *labels, int64_t targets, row_target *target)
{
    ax_dataset *dataset = target->dataset;
    const int64_t per_row = targets ? targets : 1;
    const int64_t from = targets ? target->range_first * per_row : 0;
    const int64_t to = targets ? from + dataset->rows * per_row : labels->count;
    const int64_t chunk_items = (int64_t)(npy_chunk_bytes / (size_t)labels->item_bytes);
    unsigned char *chunk = malloc(npy_chunk_bytes);
    if (!chunk)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", labels->path);
    ax_status status = AX_STATUS_OK;
    for (int64_t item = from; item < to && status == AX_STATUS_OK; item += chunk_items) {
        const int64_t n = to - item < chunk_items ? to - item : chunk_items;
        status = ax_npy_read_items(labels, item, n, chunk);
        for (int64_t j = 0; status == AX_STATUS_OK && j < n; j++) {
            const int64_t i = item + j; /* the element's index in the file */
            double value = ax_npy_element(labels, chunk, (size_t)j);
            if (targets) {
                float *out = &dataset->target_values[i - from];
                *out = (float)value;
                if (!isfinite(*out))
                    status = ax_fail(AX_STATUS_BAD_DATA, "%s: target [%lld, %lld] is %s",
                                     labels->path, (long long)(i / targets),
                                     (long long)(i % targets),
                                     isnan(value) ? "NaN" : "infinite in float32");
            } else {
                status = check_label(labels, value, "label", i, &target->largest);
                const int64_t kept = i - target->range_first;
                if (status == AX_STATUS_OK && kept >= 0 && kept < dataset->rows)
                    dataset->labels[kept] = (int32_t)value;
            }
        }
    }
    free(chunk);
    return status;
}

/* range: {first, count}, or NULL for the whole file; unlabeled: no labels
 * file and no label in column 0, every column a feature. */
static ax_status load(npy_array *features, npy_array *labels, double scale, const int64_t *range,
                      bool unlabeled, ax_dataset **out)
{
    AX_TRY(ax_npy_open(features->path, features));
    const char *path = features->path;
    if (features->kind == NPY_KIND_SIGNED ||
        (features->kind == NPY_KIND_UNSIGNED && features->item_bytes != 1))
        return ax_fail(AX_STATUS_UNSUPPORTED,
                       "%s: dtype '%s' is not supported for features (float32, float64 or "
                       "uint8 are)",
                       path, features->descr);
    if (features->dims < 2)
        return ax_fail(AX_STATUS_BAD_DATA,
                       "%s: features must be 2-D (rows, features), but the shape has %d "
                       "dimension%s",
                       path, features->dims, features->dims == 1 ? "" : "s");
    const int64_t rows = features->shape[0];
    const int64_t width = rows ? features->count / rows : 0;
    if (rows == 0 || width == 0)
        return ax_fail(AX_STATUS_BAD_DATA, "%s: the array is empty (%lld rows of %lld values)",
                       path, (long long)rows, (long long)(rows ? width : features->shape[1]));
    if (!labels->path && !unlabeled && width < 2)
        return ax_fail(AX_STATUS_BAD_DATA,
                       "%s: with no labels file, column 0 is the label, but there is only one "
                       "column",
                       path);

    int64_t targets = 0;
    if (labels->path) {
        AX_TRY(ax_npy_open(labels->path, labels));
        const bool is_float = labels->kind == NPY_KIND_FLOAT;
        if (labels->dims < 1 || labels->dims > 2 || (!is_float && labels->dims == 2 &&
                                                     labels->shape[1] != 1))
            return ax_fail(AX_STATUS_BAD_DATA,
                           "%s: %s must be 1-D (rows)%s, but the shape has %d dimensions%s",
                           labels->path, is_float ? "targets" : "labels",
                           is_float ? " or 2-D (rows, targets)" : " or (rows, 1)", labels->dims,
                           labels->dims == 2 ? " with more than one column" : "");
        if (labels->shape[0] != rows)
            return ax_fail(AX_STATUS_BAD_DATA, "%s has %lld rows but %s has %lld",
                           path, (long long)rows, labels->path, (long long)labels->shape[0]);
        if (is_float) {
            targets = labels->dims == 2 ? labels->shape[1] : 1;
            if (targets == 0)
                return ax_fail(AX_STATUS_BAD_DATA, "%s: the targets have no columns",
                               labels->path);
        }
    }
    if (range)
        AX_TRY(ax_row_range_check(path, rows, "rows", range[0], range[1]));
    const int64_t first = range ? range[0] : 0, kept = range ? range[1] : rows;
    const bool whole_rows = labels->path || unlabeled; /* no label in column 0 */
    const int64_t feature_count = whole_rows ? width : width - 1;
    AX_TRY(ax_dataset_allocate(kept, feature_count, targets || unlabeled ? 0 : 1, targets, path,
                               out));
    ax_dataset *dataset = *out;
    if (features->dims == 4 && whole_rows) /* (N, H, W, C): images */
        for (int i = 0; i < 3; i++)
            dataset->image_shape[i] = features->shape[i + 1];
    row_target target = {.dataset = dataset, .range_first = first, .scale = scale,
                         .label_in_column_0 = !whole_rows};
    /* Labels in column 0 need every row's column 0 for the classes. */
    ax_status status = target.label_in_column_0
                           ? read_feature_rows(features, 0, rows, &target)
                           : read_feature_rows(features, first, first + kept, &target);
    if (status == AX_STATUS_OK && labels->path)
        status = read_labels(labels, targets, &target);

    if (status != AX_STATUS_OK) {
        ax_dataset_free(dataset);
        *out = NULL;
        return status;
    }
    if (!targets && !unlabeled)
        dataset->classes = target.largest + 1;
    return AX_STATUS_OK;
}

static ax_status load_files(const char *features_path, const char *labels_path, double scale,
                            const int64_t *range, bool unlabeled, ax_dataset **out)
{
    *out = NULL;
    if (!features_path)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "no .npy features file given");
    if (!isfinite(scale))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: the feature scale must be finite, not %g",
                       features_path, scale);
    npy_array features = {.path = features_path}, labels = {.path = labels_path};
    ax_status status = load(&features, &labels, scale, range, unlabeled, out);
    if (status == AX_STATUS_OK && labels_path) /* a bad label names its own file */
        snprintf((*out)->labels_source, sizeof (*out)->labels_source, "%s", labels_path);
    ax_npy_close(&features);
    ax_npy_close(&labels);
    return status;
}

ax_status ax_dataset_load_npy(const char *features_path, const char *labels_path, double scale,
                              ax_dataset **out)
{
    return load_files(features_path, labels_path, scale, NULL, false, out);
}

ax_status ax_dataset_load_npy_rows(const char *features_path, const char *labels_path,
                                   double scale, int64_t first, int64_t count, ax_dataset **out)
{
    const int64_t range[2] = {first, count};
    return load_files(features_path, labels_path, scale, range, false, out);
}

ax_status ax_dataset_count_npy(const char *features_path, int64_t *rows)
{
    *rows = 0;
    if (!features_path)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "no .npy features file given");
    npy_array features;
    ax_status status = ax_npy_open(features_path, &features);
    if (status == AX_STATUS_OK && features.dims < 1)
        status = ax_fail(AX_STATUS_BAD_DATA, "%s: a 0-dimensional array has no rows",
                         features_path);
    if (status == AX_STATUS_OK)
        *rows = features.shape[0];
    ax_npy_close(&features);
    return status;
}

ax_status ax_npy_load_unlabeled(const char *features_path, double scale, const int64_t *range,
                                ax_dataset **out)
{
    return load_files(features_path, NULL, scale, range, true, out);
}

ax_status ax_npy_count_columns(const char *path, int64_t *columns)
{
    *columns = 0;
    npy_array array;
    ax_status status = ax_npy_open(path, &array);
    if (status == AX_STATUS_OK && (array.dims < 2 || array.shape[0] == 0))
        status = ax_fail(AX_STATUS_BAD_DATA, "%s: features must be 2-D or more (rows, ...) with "
                         "at least one row, but the shape has %d dimension%s%s",
                         path, array.dims, array.dims == 1 ? "" : "s",
                         array.dims >= 2 ? " and no rows" : "");
    if (status == AX_STATUS_OK)
        *columns = array.count / array.shape[0];
    ax_npy_close(&array);
    return status;
}
