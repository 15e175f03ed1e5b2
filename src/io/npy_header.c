/* npy_header.c: opens .npy files and parses their header, a Python dict
 * literal, with a small scanner that accepts what numpy writes (and any key
 * order); every number in it is checked against the file size before the
 * data is read. Shared by data/npy.c and io/npy_array.c. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/memory.h"
#include "io/npy_header.h"

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

/* Skips a quoted string of any length, with Python's backslash escapes (a
 * key axon does not use may hold 'it\'s', or a long text). */
static bool skip_string(dict_scanner *s)
{
    const char quote = *s->p++;
    while (s->p < s->end && *s->p != quote)
        s->p += *s->p == '\\' && s->p + 1 < s->end ? 2 : 1;
    if (s->p >= s->end)
        return false;
    s->p++;
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
            if (!skip_string(s))
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

ax_status ax_npy_open(const char *path, npy_array *array)
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

void ax_npy_close(npy_array *array)
{
    if (array->file)
        fclose(array->file);
    array->file = NULL;
}

ax_status ax_npy_read_data(npy_array *array, unsigned char **out)
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

