/* sparse.c: a data set over the caller's compressed sparse rows (CSR, as
 * scipy.sparse.csr_matrix holds them), made dense one batch at a time: the
 * trainer, evaluation and prediction gather a batch's rows into the
 * network's input buffer (core/propagate.c), which for a sparse set means
 * zeros with the stored values scattered in. The dense rows are the very
 * float32 values of the dense matrix, so every later operation, and the
 * result, is the dense set's, bit for bit; only a batch is ever dense. */
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "data/dataset.h"

/* The row starts and columns, checked before a byte is trusted: a column out
 * of range would be written out of the batch. */
static ax_status check_structure(int64_t rows, int64_t features, const int64_t *row_starts,
                                 const int32_t *columns, const char *source)
{
    if (row_starts[0] != 0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: the sparse row starts begin at %lld, not 0",
                       source, (long long)row_starts[0]);
    for (int64_t row = 0; row < rows; row++) {
        if (row_starts[row + 1] < row_starts[row])
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "%s: sparse row %lld ends (%lld) before it starts (%lld)", source,
                           (long long)row + 1, (long long)row_starts[row + 1],
                           (long long)row_starts[row]);
        for (int64_t k = row_starts[row]; k < row_starts[row + 1]; k++)
            if (columns[k] < 0 || columns[k] >= features)
                return ax_fail(AX_STATUS_BAD_ARGUMENT,
                               "%s: sparse row %lld has a value in column %d; columns are 0 to "
                               "%lld",
                               source, (long long)row + 1, columns[k], (long long)features - 1);
    }
    return AX_STATUS_OK;
}

ax_status ax_dataset_wrap_csr(int64_t rows, int64_t features, int64_t classes, int64_t targets,
                              const int64_t *row_starts, const int32_t *columns,
                              const float *values, const int32_t *labels,
                              const float *target_values, const char *source, ax_dataset **out)
{
    *out = NULL;
    if (!source)
        source = "(in memory)";
    if (rows < 1 || features < 1)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s: invalid dataset shape: %lld rows, %lld features (at least 1 each)",
                       source, (long long)rows, (long long)features);
    if (!row_starts || ((!columns || !values) && row_starts[rows] > 0))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: the sparse %s array is NULL", source,
                       !row_starts ? "row starts" : !columns ? "columns" : "values");
    AX_TRY(check_structure(rows, features, row_starts, columns, source));
    static const float no_values[1] = {0.0f}; /* an all-zero set: a non-NULL mark of sparseness */
    static const int32_t no_columns[1] = {0};
    const void *const csr[3] = {row_starts, columns ? (const void *)columns : no_columns,
                                values ? (const void *)values : no_values};
    return ax_dataset_wrap_borrowed(rows, features, classes, targets, NULL, csr, labels,
                                    target_values, source, out);
}

void ax_dataset_densify_rows(const ax_dataset *data, float *out, const int64_t *order,
                             int64_t first, int64_t count)
{
    /* out is (count, features) */
    const int64_t width = data->features;
    memset(out, 0, (size_t)count * (size_t)width * sizeof *out);
    for (int64_t i = 0; i < count; i++) {
        const int64_t row = order ? order[first + i] : first + i;
        float *dense = out + i * width;
        for (int64_t k = data->csr_row_starts[row]; k < data->csr_row_starts[row + 1]; k++)
            dense[data->csr_columns[k]] += data->csr_values[k];
    }
}
