/* npy_array.c: plain float32 arrays in .npy files, for the statistics
 * commands: ax_npy_read_f32 (any numeric dtype the container reader accepts,
 * converted to float32, shape (n) or (rows, cols)) and ax_npy_write_f32
 * (format 1.0, '<f4', C order), written through a temporary file, fsync and
 * rename (base/atomic_file.h) so a failed write leaves nothing behind. The
 * container itself is npy_header.c. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "base/error.h"
#include "io/npy_header.h"

static ax_status convert(const npy_array *array, const unsigned char *data, float *out)
{
    const bool f32 = array->kind == NPY_KIND_FLOAT && array->item_bytes == 4;
    for (int64_t i = 0; i < array->count; i++) {
        double value = ax_npy_element(array, data, (size_t)i);
        out[i] = (float)value;
        if (!f32 && isfinite(value) && !isfinite(out[i]))
            return ax_fail(AX_STATUS_BAD_DATA, "%s: element %lld (%g) is too large for float32",
                           array->path, (long long)i, value);
    }
    return AX_STATUS_OK;
}

static ax_status read_array(npy_array *array, const char *path, float **data, int64_t *rows,
                            int64_t *cols)
{
    AX_TRY(ax_npy_open(path, array));
    if (array->dims < 1 || array->dims > 2)
        return ax_fail(AX_STATUS_BAD_DATA,
                       "%s: expected a 1-D (n) or 2-D (rows, columns) array, but the shape has "
                       "%d dimensions",
                       path, array->dims);
    *rows = array->shape[0];
    *cols = array->dims == 2 ? array->shape[1] : 1;
    unsigned char *raw = NULL;
    AX_TRY(ax_npy_read_data(array, &raw));
    float *values = malloc(array->count > 0 ? (size_t)array->count * sizeof(float) : 1);
    if (!values) {
        free(raw);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory for %lld floats", path,
                       (long long)array->count);
    }
    ax_status status = convert(array, raw, values);
    free(raw);
    if (status != AX_STATUS_OK) {
        free(values);
        return status;
    }
    *data = values;
    return AX_STATUS_OK;
}

ax_status ax_npy_read_f32(const char *path, float **data, int64_t *rows, int64_t *cols)
{
    if (!path || !data || !rows || !cols)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "npy: no file or no output given");
    *data = NULL;
    *rows = *cols = 0;
    npy_array array;
    ax_status status = read_array(&array, path, data, rows, cols);
    ax_npy_close(&array);
    if (status != AX_STATUS_OK) {
        *rows = *cols = 0;
    }
    return status;
}

/* The header: magic, version 1.0, length, then the dict padded with spaces
 * and a newline to a multiple of 64 bytes, as numpy writes it. */
static size_t format_header(char *header, size_t capacity, int rank, const int64_t *shape)
{
    char dict[512];
    int used = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    for (int i = 0; i < rank; i++)
        used += snprintf(dict + used, sizeof dict - (size_t)used, "%lld,%s", (long long)shape[i],
                         i + 1 < rank ? " " : "");
    if (rank > 1)
        used--; /* numpy writes (3, 4) but (3,) */
    used += snprintf(dict + used, sizeof dict - (size_t)used, "), }");
    size_t total = 10 + (size_t)used + 1;
    total = (total + 63) / 64 * 64;
    if (total > capacity)
        return 0;
    size_t dict_length = total - 10;
    memcpy(header, "\x93NUMPY\x01\x00", 8);
    header[8] = (char)(dict_length & 0xff);
    header[9] = (char)(dict_length >> 8);
    memset(header + 10, ' ', dict_length);
    memcpy(header + 10, dict, (size_t)used);
    header[total - 1] = '\n';
    return total;
}

ax_status ax_npy_write_f32(const char *path, const float *data, int rank, const int64_t *shape)
{
    if (!path || !shape || rank < 1 || rank > NPY_MAX_DIMS)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "npy: a path and a shape of rank 1 to %d are needed",
                       NPY_MAX_DIMS);
    int64_t count = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0 || (shape[i] > 0 && count > INT64_MAX / 4 / shape[i]))
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: dimension %d of the shape (%lld) is "
                           "negative or too large", path, i, (long long)shape[i]);
        count *= shape[i];
    }
    if (count > 0 && !data)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: no data to write", path);
    char header[1024];
    size_t header_length = format_header(header, sizeof header, rank, shape);
    if (header_length == 0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: the shape is too long for a header", path);

    const float *values = data;
#if !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
    /* Little-endian on disk whatever the host. */
    uint32_t *swapped = malloc(count > 0 ? (size_t)count * 4 : 1);
    if (!swapped)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    for (int64_t i = 0; i < count; i++) {
        uint32_t bits;
        memcpy(&bits, data + i, 4);
        swapped[i] = __builtin_bswap32(bits);
    }
    values = (const float *)swapped;
#endif
    const void *parts[2] = {header, values};
    const size_t sizes[2] = {header_length, (size_t)count * sizeof(float)};
    ax_atomic_file file;
    ax_status status = ax_file_write_atomic(path, parts, sizes, 2, &file);
#if !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
    free(swapped);
#endif
    /* This writer's own words for the failures (tests/test_stats.c). */
    if (file.failed == AX_ATOMIC_STEP_CREATE)
        return ax_fail(status, "%s: cannot create %s: %s", path, file.temporary,
                       strerror(file.error));
    if (file.failed == AX_ATOMIC_STEP_WRITE || file.failed == AX_ATOMIC_STEP_RENAME)
        return ax_fail(status, "%s: cannot write: %s", path, strerror(file.error));
    return status;
}
