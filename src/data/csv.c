/* csv.c: loads a CSV file of numbers, one row per line, one column of which
 * is the label (a class) or the target (a float), the rest features; the
 * Galaxy Zoo set of seed 000 is the model (label in column 0, 1024 pixels).
 *
 * The whole file is read into one buffer, rows are counted with memchr, the
 * dataset is allocated once, and each field is parsed in place: plain
 * integers (nearly all of image data) by a digit loop, the rest by strtod.
 * Every error names the file, the 1-based line and the 1-based column.
 */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "data/dataset.h"

ax_csv_options ax_csv_defaults(void)
{
    ax_csv_options options = {
        .label_column = 0,
        .header = false,
        .regression = false,
        .scale = 1.0,
        .delimiter = ',',
    };
    return options;
}

typedef struct csv_reader {
    const char *path;
    const char *end;   /* one past the last byte of data (trailing blank lines cut off) */
    char delimiter;
} csv_reader;

static ax_status read_whole_file(const char *path, char **out, size_t *size)
{
    *out = NULL;
    FILE *file = fopen(path, "rb");
    if (!file)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot open: %s", path, strerror(errno));
    struct stat info;
    if (fstat(fileno(file), &info) != 0 || !S_ISREG(info.st_mode)) {
        fclose(file);
        return ax_fail(AX_STATUS_BAD_FILE, "%s: not a regular file", path);
    }
    size_t bytes = (size_t)info.st_size;
    ax_status status = ax_memory_check(bytes, path);
    if (status != AX_STATUS_OK) {
        fclose(file);
        return status;
    }
    /* One spare byte for a terminating NUL: strtod then never runs off the end. */
    char *text = malloc(bytes + 1);
    if (!text) {
        fclose(file);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory for %zu bytes", path, bytes);
    }
    size_t got = fread(text, 1, bytes, file);
    int failed = ferror(file);
    fclose(file);
    if (got != bytes || failed) {
        free(text);
        return ax_fail(AX_STATUS_IO_ERROR, "%s: read %zu of %zu bytes: %s", path, got, bytes,
                       failed ? strerror(errno) : "the file shrank while being read");
    }
    text[bytes] = '\0';
    *out = text;
    *size = bytes;
    return AX_STATUS_OK;
}

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

/* Number of fields on the line starting at p (up to '\n' or end). */
static int64_t count_fields(const char *p, const char *end, char delimiter)
{
    int64_t fields = 1;
    for (; p < end && *p != '\n'; p++)
        fields += *p == delimiter;
    return fields;
}

static const char *line_end(const char *p, const char *end)
{
    const char *newline = memchr(p, '\n', (size_t)(end - p));
    return newline ? newline : end;
}

/* True at the end of a field: delimiter, line end or end of data. */
static inline bool field_ends(const csv_reader *reader, const char *p)
{
    return p >= reader->end || *p == reader->delimiter || *p == '\n' ||
           (*p == '\r' && (p + 1 >= reader->end || p[1] == '\n'));
}

static ax_status bad_field(const csv_reader *reader, int64_t line, int64_t column,
                           const char *start)
{
    const char *stop = start;
    while (stop < reader->end && *stop != reader->delimiter && *stop != '\n' && *stop != '\r')
        stop++;
    int length = (int)(stop - start);
    if (length == 0)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: line %lld, column %lld: empty field",
                       reader->path, (long long)line, (long long)column);
    return ax_fail(AX_STATUS_BAD_FILE, "%s: line %lld, column %lld: \"%.*s%s\" is not a number",
                   reader->path, (long long)line, (long long)column, length > 32 ? 32 : length,
                   start, length > 32 ? "..." : "");
}

/* Parses the number at *cursor, leaving *cursor at the byte after it. */
static ax_status parse_field(const csv_reader *reader, const char **cursor, int64_t line,
                             int64_t column, double *value)
{
    const char *p = *cursor;
    while (p < reader->end && is_blank(*p) && *p != reader->delimiter)
        p++;
    const char *start = p;
    /* Fast path: up to 15 digits are exact in a double. */
    const char *q = p;
    bool negative = *q == '-';
    q += *q == '-' || *q == '+';
    const char *digits = q;
    uint64_t whole = 0;
    while (q < reader->end && (unsigned)(*q - '0') < 10 && q - digits < 15)
        whole = whole * 10 + (uint64_t)(*q++ - '0');
    if (q > digits && field_ends(reader, q)) {
        *value = negative ? -(double)whole : (double)whole;
    } else {
        /* strtod skips leading white space, newlines included: never let it start on
         * any (a form feed before a newline let a field run into the next line and
         * the row loop past the end of the buffer; found by tests/fuzz/fuzz_csv). */
        if (p >= reader->end || isspace((unsigned char)*p) || *p == reader->delimiter)
            return bad_field(reader, line, column, start);
        char *after;
        *value = strtod(p, &after);
        q = after;
        if (q == p || q > reader->end)
            return bad_field(reader, line, column, start);
        while (q < reader->end && is_blank(*q) && *q != reader->delimiter)
            q++;
        if (!field_ends(reader, q))
            return bad_field(reader, line, column, start);
        if (isnan(*value))
            return ax_fail(AX_STATUS_BAD_DATA, "%s: line %lld, column %lld: NaN", reader->path,
                           (long long)line, (long long)column);
        if (isinf(*value))
            return ax_fail(AX_STATUS_BAD_DATA, "%s: line %lld, column %lld: %s%s", reader->path,
                           (long long)line, (long long)column, *value < 0 ? "-Inf" : "Inf",
                           memchr(start, 'n', (size_t)(q - start)) ||
                                   memchr(start, 'N', (size_t)(q - start))
                               ? ""
                               : " (a number too large for a double)");
    }
    *cursor = q;
    return AX_STATUS_OK;
}

static ax_status ragged(const csv_reader *reader, const char *line_start, int64_t line,
                        int64_t first_line, int64_t fields)
{
    const char *stop = line_end(line_start, reader->end);
    if (stop == line_start || (stop == line_start + 1 && *line_start == '\r'))
        return ax_fail(AX_STATUS_BAD_FILE, "%s: line %lld is blank, line %lld had %lld fields",
                       reader->path, (long long)line, (long long)first_line, (long long)fields);
    return ax_fail(AX_STATUS_BAD_FILE, "%s: line %lld has %lld fields, line %lld had %lld",
                   reader->path, (long long)line,
                   (long long)count_fields(line_start, reader->end, reader->delimiter),
                   (long long)first_line, (long long)fields);
}

static ax_status check_options(const char *path, const ax_csv_options *options)
{
    char d = options->delimiter;
    if (d == '\0' || d == '\n' || d == '\r')
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s: the CSV delimiter cannot be a line break or NUL (character %d)",
                       path, d);
    if (d == '.' || d == '-' || d == '+' || (d >= '0' && d <= '9') || d == 'e' || d == 'E')
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s: the CSV delimiter cannot be '%c': it occurs inside numbers", path, d);
    if (!isfinite(options->scale))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: the feature scale must be finite, not %g",
                       path, options->scale);
    if (options->label_column < -1)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s: label column %lld is out of range (-1 means the last)", path,
                       (long long)options->label_column);
    return AX_STATUS_OK;
}

/* Parses every data line into the dataset allocated for them. */
static ax_status parse_rows(const csv_reader *reader, const char *p, int64_t first_line,
                            int64_t fields, int64_t label_column, const ax_csv_options *options,
                            ax_dataset *dataset)
{
    const int64_t features = fields - 1;
    const bool scaled = options->scale != 1.0;
    int64_t largest = 0;
    for (int64_t row = 0; row < dataset->rows; row++) {
        const int64_t line = first_line + row;
        const char *line_start = p;
        float *out = dataset->feature_values + row * features;
        if (*p == '\n' || (*p == '\r' && p + 1 < reader->end && p[1] == '\n'))
            return ragged(reader, line_start, line, first_line, fields);
        for (int64_t column = 0; column < fields; column++) {
            if (column > 0) {
                if (p >= reader->end || *p != reader->delimiter)
                    return ragged(reader, line_start, line, first_line, fields);
                p++;
            }
            double value = 0.0;
            AX_TRY(parse_field(reader, &p, line, column + 1, &value));
            if (column == label_column) {
                if (options->regression) {
                    dataset->target_values[row] = (float)value;
                    if (!isfinite(dataset->target_values[row]))
                        return ax_fail(AX_STATUS_BAD_DATA,
                                       "%s: line %lld, column %lld: target %g overflows float",
                                       reader->path, (long long)line, (long long)column + 1,
                                       value);
                } else {
                    if (!(value >= 0 && value == floor(value) && value < 2147483647.0))
                        return ax_fail(AX_STATUS_BAD_DATA,
                                       "%s: line %lld, column %lld: label %g is not a "
                                       "non-negative integer class",
                                       reader->path, (long long)line, (long long)column + 1,
                                       value);
                    dataset->labels[row] = (int32_t)value;
                    largest = value > largest ? (int64_t)value : largest;
                }
            } else {
                float feature = scaled ? (float)(value * options->scale) : (float)value;
                if (!isfinite(feature))
                    return ax_fail(AX_STATUS_BAD_DATA,
                                   "%s: line %lld, column %lld: %g overflows float after scaling",
                                   reader->path, (long long)line, (long long)column + 1, value);
                *out++ = feature;
            }
        }
        if (p < reader->end && *p == '\r')
            p++;
        if (p < reader->end && *p != '\n')
            return ragged(reader, line_start, line, first_line, fields);
        p++; /* past '\n' (or past the end on the last line) */
    }
    if (!options->regression)
        dataset->classes = largest + 1;
    return AX_STATUS_OK;
}

ax_status ax_dataset_load_csv(const char *path, const ax_csv_options *options_in,
                              ax_dataset **out)
{
    *out = NULL;
    if (!path)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "no CSV file given");
    ax_csv_options options = options_in ? *options_in : ax_csv_defaults();
    AX_TRY(check_options(path, &options));
    char *text;
    size_t size = 0;
    AX_TRY(read_whole_file(path, &text, &size));

    csv_reader reader = {.path = path, .delimiter = options.delimiter};
    const char *p = text;
    const char *end = text + size;
    if (size >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3; /* a UTF-8 byte-order mark, as spreadsheet programs write */
    while (end > p && (end[-1] == '\n' || end[-1] == '\r' || is_blank(end[-1])))
        end--; /* blank trailing lines and the final newline */
    reader.end = end;
    int64_t first_line = 1;
    if (options.header && p < end) {
        p = line_end(p, end);
        p += p < end;
        first_line = 2;
    }
    ax_status status = AX_STATUS_OK;
    if (p >= end) {
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: %s", path,
                         options.header ? "no data rows after the header line"
                                        : "the file is empty");
        free(text);
        return status;
    }
    int64_t rows = 1;
    for (const char *q = p; (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++)
        rows++;
    const int64_t fields = count_fields(p, end, options.delimiter);
    int64_t label_column = options.label_column == -1 ? fields - 1 : options.label_column;
    if (label_column >= fields)
        status = ax_fail(AX_STATUS_BAD_ARGUMENT,
                         "%s: label column %lld is out of range: line %lld has %lld fields "
                         "(columns 0 to %lld)",
                         path, (long long)label_column, (long long)first_line, (long long)fields,
                         (long long)fields - 1);
    else if (fields < 2)
        status = ax_fail(AX_STATUS_BAD_FILE,
                         "%s: line %lld has a single field: it needs a label and at least one "
                         "feature (is the delimiter '%c' right?)",
                         path, (long long)first_line, options.delimiter);
    if (status == AX_STATUS_OK)
        status = ax_dataset_allocate(rows, fields - 1, options.regression ? 0 : 1,
                                     options.regression ? 1 : 0, path, out);
    if (status == AX_STATUS_OK) {
        status = parse_rows(&reader, p, first_line, fields, label_column, &options, *out);
        if (status != AX_STATUS_OK) {
            ax_dataset_free(*out);
            *out = NULL;
        }
    }
    free(text);
    return status;
}
