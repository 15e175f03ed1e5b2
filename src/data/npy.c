/* npy.c: loads NumPy .npy arrays (format versions 1.0, 2.0 and 3.0, as
 * described in numpy/lib/format.py): a features array (float32, float64 or
 * uint8; (rows, features), or (rows, d1, d2, ...) flattened per row) and an
 * optional labels array (integers >= 0, (rows) or (rows, 1)) or targets array
 * (floats, (rows) or (rows, targets)). Without a labels file, column 0 of
 * the features holds the label.
 *
 * The container (header parsing, size checks) is io/npy_header.c, shared
 * with the plain array reader io/npy_array.c.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
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

/* Converts features (and, when label_in_column_0, the labels) into dataset. */
static ax_status fill_features(const npy_array *array, const unsigned char *data, double scale,
                               bool label_in_column_0, ax_dataset *dataset, int64_t *largest)
{
    const int64_t width = array->count / array->shape[0];
    const int64_t skip = label_in_column_0 ? 1 : 0;
    for (int64_t row = 0; row < dataset->rows; row++) {
        float *out = dataset->feature_values + row * dataset->features;
        size_t base = (size_t)(row * width);
        if (label_in_column_0) {
            double label = ax_npy_element(array, data, base);
            AX_TRY(check_label(array, label, "label (column 0) of row", row, largest));
            dataset->labels[row] = (int32_t)label;
        }
        convert_values(array, data, base + (size_t)skip, dataset->features, scale, out);
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

static ax_status load(npy_array *features, npy_array *labels, double scale, ax_dataset **out)
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
    if (!labels->path && width < 2)
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
    const int64_t feature_count = labels->path ? width : width - 1;
    AX_TRY(ax_dataset_allocate(rows, feature_count, targets ? 0 : 1, targets, path, out));
    ax_dataset *dataset = *out;

    int64_t largest = 0;
    unsigned char *data = NULL;
    ax_status status = ax_npy_read_data(features, &data);
    if (status == AX_STATUS_OK)
        status = fill_features(features, data, scale, !labels->path, dataset, &largest);
    free(data);
    data = NULL;
    if (status == AX_STATUS_OK && labels->path) {
        status = ax_npy_read_data(labels, &data);
        for (int64_t i = 0; status == AX_STATUS_OK && i < labels->count; i++) {
            double value = ax_npy_element(labels, data, (size_t)i);
            if (targets) {
                dataset->target_values[i] = (float)value;
                if (!isfinite(dataset->target_values[i]))
                    status = ax_fail(AX_STATUS_BAD_DATA, "%s: target [%lld, %lld] is %s",
                                     labels->path, (long long)(i / targets),
                                     (long long)(i % targets),
                                     isnan(value) ? "NaN" : "infinite in float32");
            } else {
                status = check_label(labels, value, "label", i, &largest);
                if (status == AX_STATUS_OK)
                    dataset->labels[i] = (int32_t)value;
            }
        }
        free(data);
    }
    if (status != AX_STATUS_OK) {
        ax_dataset_free(dataset);
        *out = NULL;
        return status;
    }
    if (!targets)
        dataset->classes = largest + 1;
    return AX_STATUS_OK;
}

ax_status ax_dataset_load_npy(const char *features_path, const char *labels_path, double scale,
                              ax_dataset **out)
{
    *out = NULL;
    if (!features_path)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "no .npy features file given");
    if (!isfinite(scale))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: the feature scale must be finite, not %g",
                       features_path, scale);
    npy_array features = {.path = features_path}, labels = {.path = labels_path};
    ax_status status = load(&features, &labels, scale, out);
    ax_npy_close(&features);
    ax_npy_close(&labels);
    return status;
}
