/* npy.c: loads NumPy .npy arrays (format versions 1.0, 2.0 and 3.0, as
 * described in numpy/lib/format.py): a features array (float32, float64 or
 * uint8; (rows, features), or (rows, d1, d2, ...) flattened per row) and an
 * optional labels array (integers >= 0, (rows) or (rows, 1)) or targets array
 * (floats, (rows) or (rows, targets)). Without a labels file, column 0 of
 * the features holds the label.
 *
 * The header is a Python dict literal; it is parsed here by a small scanner
 * that accepts what numpy writes (and any key order), and every number in it
 * is checked against the file size before the data is read.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "data/dataset.h"

enum { NPY_MAX_DIMS = 8 };

typedef enum npy_kind {
    NPY_KIND_FLOAT,
    NPY_KIND_SIGNED,
    NPY_KIND_UNSIGNED,
} npy_kind;

typedef struct npy_array {
    const char *path;
    FILE *file;
    char descr[32];
    npy_kind kind;
    int item_bytes;          /* 1, 2, 4 or 8 */
    int dims;
    int64_t shape[NPY_MAX_DIMS];
    int64_t count;           /* elements: the product of shape */
    size_t data_offset;      /* bytes before the data */
} npy_array;

/* ---------------------------------------------------------- header parsing */

typedef struct dict_scanner {
    const char *p, *end;
} dict_scanner;

static void skip_space(dict_scanner *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static bool take(dict_scanner *s, char c)
{
    skip_space(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* A quoted Python string (no escapes: numpy's keys and descrs have none). */
static bool scan_string(dict_scanner *s, char *text, size_t capacity)
{
    skip_space(s);
    if (s->p >= s->end || (*s->p != '\'' && *s->p != '"'))
        return false;
    char quote = *s->p++;
    const char *start = s->p;
    while (s->p < s->end && *s->p != quote)
        s->p++;
    if (s->p >= s->end)
        return false;
    size_t length = (size_t)(s->p - start);
    s->p++;
    if (length >= capacity)
        return false;
    memcpy(text, start, length);
    text[length] = '\0';
    return true;
}

/* Skips any value: a string, a word, or a bracketed group with nesting. */
static bool skip_value(dict_scanner *s)
{
    skip_space(s);
    int depth = 0;
    while (s->p < s->end) {
        char c = *s->p;
        if (c == '\'' || c == '"') {
            char text[256];
            if (!scan_string(s, text, sizeof text))
                return false;
            continue;
        }
        if (c == '(' || c == '[' || c == '{')
            depth++;
        else if (c == ')' || c == ']' || c == '}') {
            if (depth == 0)
                return true;
            depth--;
        } else if (c == ',' && depth == 0)
            return true;
        s->p++;
    }
    return false;
}

static ax_status header_error(const npy_array *array, const char *what)
{
    return ax_fail(AX_STATUS_BAD_FILE, "%s: malformed .npy header: %s", array->path, what);
}

static ax_status parse_shape(dict_scanner *s, npy_array *array)
{
    if (!take(s, '('))
        return header_error(array, "'shape' is not a tuple");
    array->dims = 0;
    array->count = 1;
    while (!take(s, ')')) {
        skip_space(s);
        if (array->dims == NPY_MAX_DIMS)
            return ax_fail(AX_STATUS_UNSUPPORTED, "%s: arrays of more than %d dimensions are not "
                           "supported", array->path, NPY_MAX_DIMS);
        int64_t size = 0;
        const char *digits = s->p;
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
            if (size > (INT64_MAX - 9) / 10)
                return header_error(array, "a dimension in 'shape' is too large");
            size = size * 10 + (*s->p++ - '0');
        }
        if (s->p == digits)
            return header_error(array, "'shape' holds something other than integers");
        if (s->p < s->end && *s->p == 'L')
            s->p++; /* Python 2 longs */
        if (size != 0 && array->count > INT64_MAX / size)
            return header_error(array, "'shape' has more elements than can exist");
        array->shape[array->dims++] = size;
        array->count *= size;
        if (!take(s, ',') && !(skip_space(s), s->p < s->end && *s->p == ')'))
            return header_error(array, "'shape' is not a tuple of integers");
    }
    return AX_STATUS_OK;
}

static ax_status parse_descr(npy_array *array)
{
    const char *d = array->descr;
    char order = d[0];
    if (order == '>')
        return ax_fail(AX_STATUS_UNSUPPORTED,
                       "%s: big-endian dtype '%s' is not supported; save it little-endian "
                       "(array.astype(array.dtype.newbyteorder('<')))",
                       array->path, d);
    char kind = d[1];
    int bytes = atoi(d + 2);
    bool known_order = order == '<' || order == '|' || order == '=';
    bool sized = bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8;
    if (!known_order || !sized || !strchr("fiu", kind) || (kind == 'f' && bytes < 4) ||
        strspn(d + 2, "0123456789") != strlen(d + 2))
        return ax_fail(AX_STATUS_UNSUPPORTED, "%s: dtype '%s' is not supported", array->path, d);
    array->kind = kind == 'f' ? NPY_KIND_FLOAT : kind == 'i' ? NPY_KIND_SIGNED : NPY_KIND_UNSIGNED;
    array->item_bytes = bytes;
    return AX_STATUS_OK;
}

static ax_status parse_header(const char *text, size_t length, npy_array *array)
{
    dict_scanner s = {text, text + length};
    bool have_descr = false, have_order = false, have_shape = false;
    if (!take(&s, '{'))
        return header_error(array, "it is not a dict");
    while (!take(&s, '}')) {
        char key[64];
        if (!scan_string(&s, key, sizeof key) || !take(&s, ':'))
            return header_error(array, "expected a quoted key and ':'");
        if (strcmp(key, "descr") == 0) {
            skip_space(&s);
            if (s.p < s.end && *s.p == '[')
                return ax_fail(AX_STATUS_UNSUPPORTED,
                               "%s: structured dtypes (records) are not supported", array->path);
            if (!scan_string(&s, array->descr, sizeof array->descr))
                return header_error(array, "'descr' is not a dtype string");
            have_descr = true;
        } else if (strcmp(key, "fortran_order") == 0) {
            skip_space(&s);
            if ((size_t)(s.end - s.p) >= 4 && memcmp(s.p, "True", 4) == 0)
                return ax_fail(AX_STATUS_UNSUPPORTED,
                               "%s: fortran_order is True (column-major data) and is not "
                               "supported; save np.ascontiguousarray(array) instead",
                               array->path);
            if ((size_t)(s.end - s.p) < 5 || memcmp(s.p, "False", 5) != 0)
                return header_error(array, "'fortran_order' is neither True nor False");
            s.p += 5;
            have_order = true;
        } else if (strcmp(key, "shape") == 0) {
            AX_TRY(parse_shape(&s, array));
            have_shape = true;
        } else if (!skip_value(&s)) {
            return header_error(array, "unreadable value");
        }
        if (!take(&s, ',') && !(skip_space(&s), s.p < s.end && *s.p == '}'))
            return header_error(array, "expected ',' or '}' after a value");
    }
    if (!have_descr || !have_order || !have_shape)
        return header_error(array, !have_descr   ? "no 'descr' key"
                                   : !have_order ? "no 'fortran_order' key"
                                                 : "no 'shape' key");
    return parse_descr(array);
}

/* Opens path and reads its header; checks the file holds exactly the data
 * the header promises. */
static ax_status npy_open(const char *path, npy_array *array)
{
    memset(array, 0, sizeof *array);
    array->path = path;
    array->file = fopen(path, "rb");
    if (!array->file)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot open: %s", path, strerror(errno));
    struct stat info;
    if (fstat(fileno(array->file), &info) != 0 || !S_ISREG(info.st_mode))
        return ax_fail(AX_STATUS_BAD_FILE, "%s: not a regular file", path);
    unsigned char prefix[12];
    size_t got = fread(prefix, 1, sizeof prefix, array->file);
    if (got < 10 || memcmp(prefix, "\x93NUMPY", 6) != 0)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: not a .npy file (no \\x93NUMPY magic)", path);
    int major = prefix[6], minor = prefix[7];
    size_t header_length, prefix_length;
    if (major == 1) {
        header_length = (size_t)prefix[8] | (size_t)prefix[9] << 8;
        prefix_length = 10;
    } else if (major == 2 || major == 3) {
        if (got < 12)
            return ax_fail(AX_STATUS_BAD_FILE, "%s: truncated .npy header", path);
        header_length = (size_t)prefix[8] | (size_t)prefix[9] << 8 | (size_t)prefix[10] << 16 |
                        (size_t)prefix[11] << 24;
        prefix_length = 12;
    } else {
        return ax_fail(AX_STATUS_UNSUPPORTED, "%s: .npy format version %d.%d is not supported "
                       "(1.0, 2.0 and 3.0 are)", path, major, minor);
    }
    const uint64_t file_bytes = (uint64_t)info.st_size;
    if (prefix_length + header_length > file_bytes)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: truncated: the header needs %zu bytes but the file holds only %llu",
                       path, prefix_length + header_length, (unsigned long long)file_bytes);
    char *header = malloc(header_length + 1);
    if (!header)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    if (fseek(array->file, (long)prefix_length, SEEK_SET) != 0 ||
        fread(header, 1, header_length, array->file) != header_length) {
        free(header);
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot read the header", path);
    }
    header[header_length] = '\0';
    ax_status status = parse_header(header, header_length, array);
    free(header);
    AX_TRY(status);
    array->data_offset = prefix_length + header_length;
    const uint64_t data_bytes = (uint64_t)array->count * (uint64_t)array->item_bytes;
    if (array->count > INT64_MAX / 8 || array->data_offset + data_bytes != file_bytes) {
        uint64_t held = file_bytes - array->data_offset;
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: %s: the header promises %llu bytes of data (%s, %lld elements) but "
                       "the file holds %llu",
                       path, held < data_bytes ? "truncated" : "trailing data after the array",
                       (unsigned long long)data_bytes, array->descr, (long long)array->count,
                       (unsigned long long)held);
    }
    return AX_STATUS_OK;
}

static void npy_close(npy_array *array)
{
    if (array->file)
        fclose(array->file);
    array->file = NULL;
}

/* ------------------------------------------------------------- conversion */

/* Element i of a little-endian buffer as a double (exact for every integer
 * type up to 2^53 and for both float types). */
static inline double element(const npy_array *array, const unsigned char *data, size_t i)
{
    const unsigned char *p = data + i * (size_t)array->item_bytes;
    uint64_t bits = 0;
    for (int b = array->item_bytes - 1; b >= 0; b--)
        bits = bits << 8 | p[b];
    switch (array->kind) {
    case NPY_KIND_FLOAT:
        if (array->item_bytes == 4) {
            uint32_t narrow = (uint32_t)bits;
            float value;
            memcpy(&value, &narrow, sizeof value);
            return value;
        } else {
            double value;
            memcpy(&value, &bits, sizeof value);
            return value;
        }
    case NPY_KIND_SIGNED: {
        int shift = 64 - 8 * array->item_bytes; /* sign-extend */
        return (double)((int64_t)(bits << shift) >> shift);
    }
    case NPY_KIND_UNSIGNED: return (double)bits;
    }
    return 0.0;
}

/* Reads the whole data of an array (checked against the file size already). */
static ax_status read_data(npy_array *array, unsigned char **out)
{
    size_t bytes = (size_t)array->count * (size_t)array->item_bytes;
    *out = NULL;
    AX_TRY(ax_memory_check(bytes, array->path));
    unsigned char *data = malloc(bytes ? bytes : 1);
    if (!data)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory for %zu bytes", array->path,
                       bytes);
    if (fseek(array->file, (long)array->data_offset, SEEK_SET) != 0 ||
        fread(data, 1, bytes, array->file) != bytes) {
        free(data);
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot read %zu bytes of data", array->path,
                       bytes);
    }
    *out = data;
    return AX_STATUS_OK;
}

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
 * common dtypes on little-endian hosts, element() otherwise. */
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
        out[j] = (float)(element(array, data, first + (size_t)j) * scale);
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
            double label = element(array, data, base);
            AX_TRY(check_label(array, label, "label (column 0) of row", row, largest));
            dataset->labels[row] = (int32_t)label;
        }
        convert_values(array, data, base + (size_t)skip, dataset->features, scale, out);
        for (int64_t column = 0; column < dataset->features; column++) {
            if (isfinite(out[column]))
                continue;
            double source = element(array, data, base + (size_t)(column + skip));
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
    AX_TRY(npy_open(features->path, features));
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
        AX_TRY(npy_open(labels->path, labels));
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
    ax_status status = read_data(features, &data);
    if (status == AX_STATUS_OK)
        status = fill_features(features, data, scale, !labels->path, dataset, &largest);
    free(data);
    data = NULL;
    if (status == AX_STATUS_OK && labels->path) {
        status = read_data(labels, &data);
        for (int64_t i = 0; status == AX_STATUS_OK && i < labels->count; i++) {
            double value = element(labels, data, (size_t)i);
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
    npy_close(&features);
    npy_close(&labels);
    return status;
}
