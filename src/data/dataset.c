/* dataset.c: allocation, accessors and checks of ax_dataset (splitting is
 * in split.c). */
#include "data/dataset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/memory.h"
#include "data/stream.h"

ax_status ax_row_range_check(const char *source, int64_t rows, const char *what, int64_t first,
                             int64_t count)
{
    if (first < 0 || count < 0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s: bad row range: first %lld, count %lld (both must be >= 0)", source,
                       (long long)first, (long long)count);
    if (first > rows || count > rows - first)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s: %lld %s from row %lld on were asked for, but the file holds %lld",
                       source, (long long)count, what, (long long)first, (long long)rows);
    return AX_STATUS_OK;
}

/* A dataset of this shape and source without its arrays; NULL when out of memory. */
static ax_dataset *dataset_shell(int64_t rows, int64_t features, int64_t classes,
                                 int64_t targets, const char *source)
{
    ax_dataset *dataset = calloc(1, sizeof *dataset);
    if (!dataset)
        return NULL;
    dataset->rows = rows;
    dataset->features = features;
    dataset->classes = classes;
    dataset->targets = targets;
    snprintf(dataset->source, sizeof dataset->source, "%s", source);
    return dataset;
}

ax_status ax_dataset_allocate(int64_t rows, int64_t features, int64_t classes, int64_t targets,
                              const char *source, ax_dataset **out)
{
    *out = NULL;
    if (rows < 0 || features < 0 || classes < 0 || targets < 0 || (classes > 0 && targets > 0))
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s: invalid dataset shape: %lld rows, %lld features, %lld classes, %lld targets",
                       source, (long long)rows, (long long)features, (long long)classes,
                       (long long)targets);
    /* Sizes from files are checked here before any allocation: 2^40 rows is refused, not tried. */
    const double limit = 9.0e18;
    double cells = (double)rows * (double)(features + targets + 1);
    if (cells * 4.0 > limit)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: %lld rows x %lld features is too large",
                       source, (long long)rows, (long long)features);
    size_t feature_bytes = (size_t)rows * (size_t)features * sizeof(float);
    size_t label_bytes = classes > 0 ? (size_t)rows * sizeof(int32_t) : 0;
    size_t target_bytes = (size_t)rows * (size_t)targets * sizeof(float);
    char what[600];
    snprintf(what, sizeof what, "the data set %s", source);
    AX_TRY(ax_memory_check(feature_bytes + label_bytes + target_bytes, what));

    ax_dataset *dataset = dataset_shell(rows, features, classes, targets, source);
    if (!dataset)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", source);
    dataset->feature_values = ax_allocate_zeroed(feature_bytes);
    if (classes > 0)
        dataset->labels = ax_allocate_zeroed(label_bytes);
    if (targets > 0)
        dataset->target_values = ax_allocate_zeroed(target_bytes);
    if (!dataset->feature_values || (classes > 0 && !dataset->labels) ||
        (targets > 0 && !dataset->target_values)) {
        ax_dataset_free(dataset);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory for %lld rows", source,
                       (long long)rows);
    }
    *out = dataset;
    return AX_STATUS_OK;
}

ax_status ax_dataset_create(int64_t rows, int64_t features, int64_t classes, int64_t targets,
                            ax_dataset **out)
{
    return ax_dataset_allocate(rows, features, classes, targets, "(in memory)", out);
}

ax_status ax_dataset_wrap(int64_t rows, int64_t features, int64_t classes, int64_t targets,
                          const float *feature_values, const int32_t *labels,
                          const float *target_values, const char *source, ax_dataset **out)
{
    *out = NULL;
    if (!source)
        source = "(in memory)";
    if (!feature_values)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: the features array is NULL", source);
    return ax_dataset_wrap_borrowed(rows, features, classes, targets, feature_values, NULL, labels,
                                    target_values, source, out);
}

ax_status ax_dataset_wrap_borrowed(int64_t rows, int64_t features, int64_t classes,
                                   int64_t targets, const float *feature_values,
                                   const void *const csr[3], const int32_t *labels,
                                   const float *target_values, const char *source,
                                   ax_dataset **out)
{
    *out = NULL;
    if (rows < 1 || features < 1 || classes < 0 || targets < 0 || (classes > 0) == (targets > 0))
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s: invalid dataset shape: %lld rows, %lld features, %lld classes, "
                       "%lld targets (rows and features must be at least 1, and exactly one of "
                       "classes and targets positive)",
                       source, (long long)rows, (long long)features, (long long)classes,
                       (long long)targets);
    if ((classes > 0 && !labels) || (targets > 0 && !target_values))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: the %s array is NULL", source,
                       classes > 0 ? "labels" : "targets");
    ax_dataset *dataset = dataset_shell(rows, features, classes, targets, source);
    if (!dataset)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", source);
    /* The library reads these only (ax_dataset_features_data hands the
     * caller's own pointer back). */
    dataset->feature_values = (float *)feature_values;
    if (csr) {
        dataset->csr_row_starts = csr[0];
        dataset->csr_columns = csr[1];
        dataset->csr_values = csr[2];
    }
    dataset->labels = classes > 0 ? (int32_t *)labels : NULL;
    dataset->target_values = targets > 0 ? (float *)target_values : NULL;
    dataset->borrowed = true;
    ax_status status = ax_dataset_check_finite(dataset);
    for (int64_t row = 0; status == AX_STATUS_OK && row < rows && classes > 0; row++)
        if (labels[row] < 0 || labels[row] >= classes)
            status = ax_fail(AX_STATUS_BAD_DATA, "%s: row %lld has label %d (labels 0 to %lld)",
                             source, (long long)row + 1, labels[row], (long long)classes - 1);
    if (status != AX_STATUS_OK) {
        ax_dataset_free(dataset);
        return status;
    }
    *out = dataset;
    return AX_STATUS_OK;
}

void ax_dataset_free(ax_dataset *dataset)
{
    if (!dataset)
        return;
    if (dataset->borrowed) {
        free(dataset);
        return;
    }
    free(dataset->feature_values);
    free(dataset->labels);
    free(dataset->target_values);
    if (dataset->stream)
        dataset->stream_free(dataset->stream);
    free(dataset);
}

int64_t ax_dataset_rows(const ax_dataset *dataset) { return dataset->rows; }
int64_t ax_dataset_features(const ax_dataset *dataset) { return dataset->features; }
int64_t ax_dataset_classes(const ax_dataset *dataset) { return dataset->classes; }
int64_t ax_dataset_targets(const ax_dataset *dataset) { return dataset->targets; }
const char *ax_dataset_source(const ax_dataset *dataset) { return dataset->source; }

const char *ax_dataset_labels_source(const ax_dataset *dataset)
{
    return dataset->labels_source[0] ? dataset->labels_source : dataset->source;
}
float *ax_dataset_features_data(ax_dataset *dataset) { return dataset->feature_values; }
int32_t *ax_dataset_labels_data(ax_dataset *dataset) { return dataset->labels; }
float *ax_dataset_targets_data(ax_dataset *dataset) { return dataset->target_values; }

bool ax_dataset_is_streamed(const ax_dataset *dataset) { return dataset->stream != NULL; }
bool ax_dataset_is_sparse(const ax_dataset *dataset) { return dataset->csr_values != NULL; }

bool ax_dataset_image_shape(const ax_dataset *dataset, int64_t shape[3])
{
    for (int i = 0; i < 3; i++)
        shape[i] = dataset->image_shape[i];
    return dataset->image_shape[0] > 0;
}

ax_status ax_dataset_set_image_shape(ax_dataset *dataset, const int64_t shape[3])
{
    if (shape[0] < 1 || shape[1] < 1 || shape[2] < 1 || shape[0] > dataset->features ||
        shape[1] > dataset->features || shape[2] > dataset->features ||
        shape[0] * shape[1] > dataset->features ||
        shape[0] * shape[1] * shape[2] != dataset->features)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s: an image shape of %lldx%lldx%lld does not hold its %lld features per "
                       "row",
                       dataset->source, (long long)shape[0], (long long)shape[1],
                       (long long)shape[2], (long long)dataset->features);
    for (int i = 0; i < 3; i++)
        dataset->image_shape[i] = shape[i];
    return AX_STATUS_OK;
}

ax_status ax_dataset_check_finite(const ax_dataset *dataset)
{
    if (dataset->stream) /* pixels are bytes, the mean image was checked as it was read */
        return AX_STATUS_OK;
    const int64_t width = dataset->features;
    for (int64_t row = 0; dataset->csr_values && row < dataset->rows; row++)
        for (int64_t k = dataset->csr_row_starts[row]; k < dataset->csr_row_starts[row + 1]; k++)
            if (!isfinite(dataset->csr_values[k]))
                return ax_fail(AX_STATUS_BAD_DATA, "%s: row %lld, feature %lld is %s",
                               dataset->source, (long long)row + 1,
                               (long long)dataset->csr_columns[k] + 1,
                               isnan(dataset->csr_values[k]) ? "NaN" : "infinite");
    for (int64_t row = 0; dataset->feature_values && row < dataset->rows; row++) {
        const float *values = dataset->feature_values + row * width;
        for (int64_t column = 0; column < width; column++)
            if (!isfinite(values[column]))
                return ax_fail(AX_STATUS_BAD_DATA, "%s: row %lld, feature %lld is %s",
                               dataset->source, (long long)row + 1, (long long)column + 1,
                               isnan(values[column]) ? "NaN" : "infinite");
    }
    for (int64_t i = 0; i < dataset->rows * dataset->targets; i++)
        if (!isfinite(dataset->target_values[i]))
            return ax_fail(AX_STATUS_BAD_DATA, "%s: row %lld, target %lld is not finite",
                           dataset->source, (long long)(i / dataset->targets) + 1,
                           (long long)(i % dataset->targets) + 1);
    return AX_STATUS_OK;
}
