/* csv.c: loads a CSV file of numbers, one row per line, one column of which
 * is the label (a class) or the target (a float), the rest features; the
 * Galaxy Zoo set in data/galaxy is the model (label in column 0, 1024 pixels).
 * With AX_CSV_NO_LABEL every column is a feature (data to predict on).
 *
 * The whole file is read into one buffer, rows are counted with memchr, the
 * dataset is allocated once, and each field is parsed in place: plain
 * integers (nearly all of image data) by a digit loop, the rest by strtod.
 * Every error names the file, the 1-based line and the 1-based column.
 *
 * The row-range loader (ax_dataset_load_csv_rows) and the row counter
 * stream the file in 1 MiB blocks instead (see "streaming" below), the
 * loader parsing every line with the same code but keeping only the range.
 */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/memory.h"
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
    if (options->label_column < -1 && options->label_column != AX_CSV_NO_LABEL)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s: label column %lld is out of range (-1 means the last, -2 none)", path,
                       (long long)options->label_column);
    return AX_STATUS_OK;
}

/* Where parsed rows go: data rows [keep_first, keep_first + dataset->rows)
 * into the dataset, the others into scratch (one row), checked and dropped. */
typedef struct row_sink {
    ax_dataset *dataset;
    int64_t keep_first;
    float *scratch;
    int64_t largest; /* the largest label seen, kept or not */
} row_sink;

/* Parses `rows` data lines from p, the first being data row row0 (file line
 * first_line + row0); returns the position after the last. */
static ax_status parse_rows(const csv_reader *reader, const char **cursor, int64_t rows,
                            int64_t row0, int64_t first_line, int64_t fields,
                            int64_t label_column, const ax_csv_options *options, row_sink *sink)
{
    ax_dataset *dataset = sink->dataset;
    const int64_t features = dataset->features;
    const bool scaled = options->scale != 1.0;
    const char *p = *cursor;
    for (int64_t r = 0; r < rows; r++) {
        const int64_t row = row0 + r, line = first_line + row, kept = row - sink->keep_first;
        const bool keep = kept >= 0 && kept < dataset->rows;
        const char *line_start = p;
        float *out = keep ? dataset->feature_values + kept * features : sink->scratch;
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
                    const float target = (float)value;
                    if (!isfinite(target))
                        return ax_fail(AX_STATUS_BAD_DATA,
                                       "%s: line %lld, column %lld: target %g overflows float",
                                       reader->path, (long long)line, (long long)column + 1,
                                       value);
                    if (keep)
                        dataset->target_values[kept] = target;
                } else {
                    if (!(value >= 0 && value == floor(value) && value < 2147483647.0))
                        return ax_fail(AX_STATUS_BAD_DATA,
                                       "%s: line %lld, column %lld: label %g is not a "
                                       "non-negative integer class",
                                       reader->path, (long long)line, (long long)column + 1,
                                       value);
                    if (keep)
                        dataset->labels[kept] = (int32_t)value;
                    sink->largest = value > sink->largest ? (int64_t)value : sink->largest;
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
    *cursor = p;
    return AX_STATUS_OK;
}

/* The dataset of `rows` rows for a file of `fields` columns: one of them the
 * label or target unless there is none. */
static ax_status allocate_rows(const char *path, int64_t rows, int64_t fields,
                               const ax_csv_options *options, ax_dataset **out)
{
    if (options->label_column == AX_CSV_NO_LABEL)
        return ax_dataset_allocate(rows, fields, 0, 0, path, out);
    return ax_dataset_allocate(rows, fields - 1, options->regression ? 0 : 1,
                               options->regression ? 1 : 0, path, out);
}

/* True when the rows hold class labels (their count is set after parsing). */
static bool has_classes(const ax_csv_options *options)
{
    return !options->regression && options->label_column != AX_CSV_NO_LABEL;
}

/* The first data line's field count and the label column, checked. */
static ax_status first_line_layout(const char *path, const char *p, const char *end,
                                   int64_t first_line, const ax_csv_options *options,
                                   int64_t *fields, int64_t *label_column)
{
    *fields = count_fields(p, end, options->delimiter);
    *label_column = options->label_column == -1 ? *fields - 1 : options->label_column;
    if (options->label_column == AX_CSV_NO_LABEL)
        return AX_STATUS_OK; /* no column matches it: every field is a feature */
    if (*label_column >= *fields)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s: label column %lld is out of range: line %lld has %lld fields "
                       "(columns 0 to %lld)",
                       path, (long long)*label_column, (long long)first_line,
                       (long long)*fields, (long long)*fields - 1);
    if (*fields < 2)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: line %lld has a single field: it needs a label and at least one "
                       "feature (is the delimiter '%c' right?)",
                       path, (long long)first_line, options->delimiter);
    return AX_STATUS_OK;
}

static ax_status no_rows(const char *path, const ax_csv_options *options)
{
    return ax_fail(AX_STATUS_BAD_FILE, "%s: %s", path,
                   options->header ? "no data rows after the header line" : "the file is empty");
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
        free(text);
        return no_rows(path, &options);
    }
    int64_t rows = 1;
    for (const char *q = p; (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++)
        rows++;
    int64_t fields = 0, label_column = 0;
    status = first_line_layout(path, p, end, first_line, &options, &fields, &label_column);
    if (status == AX_STATUS_OK)
        status = allocate_rows(path, rows, fields, &options, out);
    if (status == AX_STATUS_OK) {
        row_sink sink = {.dataset = *out};
        status = parse_rows(&reader, &p, rows, 0, first_line, fields, label_column, &options,
                            &sink);
        if (status == AX_STATUS_OK && has_classes(&options))
            (*out)->classes = sink.largest + 1;
        if (status != AX_STATUS_OK) {
            ax_dataset_free(*out);
            *out = NULL;
        }
    }
    free(text);
    return status;
}

/* ------------------------------------------------------------ streaming
 * The row-range loader and the row counter read the file in blocks and
 * keep only the bytes not yet consumed (at least one whole line), so their
 * memory is a block plus the range's rows, not the file. */

static const size_t csv_block_bytes = (size_t)1 << 20;

typedef struct csv_stream {
    const char *path;
    FILE *file;
    char *buffer;         /* [0, used): bytes not consumed yet, NUL-terminated */
    size_t used, capacity;
    bool eof;
    bool started;         /* the byte-order mark has been looked for */
} csv_stream;

static bool is_space(char c) { return c == '\n' || c == '\r' || is_blank(c); }

static ax_status stream_open(const char *path, csv_stream *stream)
{
    memset(stream, 0, sizeof *stream);
    stream->path = path;
    stream->file = fopen(path, "rb");
    if (!stream->file)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot open: %s", path, strerror(errno));
    struct stat info;
    if (fstat(fileno(stream->file), &info) != 0 || !S_ISREG(info.st_mode))
        return ax_fail(AX_STATUS_BAD_FILE, "%s: not a regular file", path);
    stream->capacity = csv_block_bytes;
    stream->buffer = malloc(stream->capacity + 1);
    if (!stream->buffer)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    stream->buffer[0] = '\0';
    return AX_STATUS_OK;
}

static void stream_close(csv_stream *stream)
{
    if (stream->file)
        fclose(stream->file);
    free(stream->buffer);
    stream->file = NULL;
    stream->buffer = NULL;
}

/* Reads more bytes, growing the buffer when it is full (a line longer than it). */
static ax_status stream_fill(csv_stream *stream)
{
    if (stream->eof)
        return AX_STATUS_OK;
    if (stream->used == stream->capacity) {
        char *bigger = realloc(stream->buffer, 2 * stream->capacity + 1);
        if (!bigger)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory for a line of over %zu "
                           "bytes", stream->path, stream->capacity);
        stream->buffer = bigger;
        stream->capacity *= 2;
    }
    size_t got = fread(stream->buffer + stream->used, 1, stream->capacity - stream->used,
                       stream->file);
    if (got == 0 && ferror(stream->file))
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot read: %s", stream->path, strerror(errno));
    stream->eof = got == 0;
    stream->used += got;
    stream->buffer[stream->used] = '\0';
    if (!stream->started && (stream->used >= 3 || stream->eof)) {
        stream->started = true;
        if (stream->used >= 3 && memcmp(stream->buffer, "\xEF\xBB\xBF", 3) == 0) {
            memmove(stream->buffer, stream->buffer + 3, stream->used - 3 + 1);
            stream->used -= 3; /* a UTF-8 byte-order mark, as spreadsheet programs write */
        }
    }
    return AX_STATUS_OK;
}

static void stream_consume(csv_stream *stream, size_t bytes)
{
    memmove(stream->buffer, stream->buffer + bytes, stream->used - bytes + 1);
    stream->used -= bytes;
}

/* Drops the header line (up to and including its newline). */
static ax_status stream_skip_line(csv_stream *stream)
{
    for (;;) {
        const char *newline = memchr(stream->buffer, '\n', stream->used);
        if (newline || stream->eof) {
            stream_consume(stream, newline ? (size_t)(newline - stream->buffer) + 1 : stream->used);
            return AX_STATUS_OK;
        }
        AX_TRY(stream_fill(stream));
    }
}

/* The next run of whole lines at the buffer's start, [0, *length): lines
 * that some non-blank byte follows (so they are not the trailing blank
 * lines the whole-file loader cuts off), ending with their newline; at the
 * end of the file, the rest with trailing blanks cut (*final). */
static ax_status stream_lines(csv_stream *stream, size_t *length, bool *final)
{
    for (;;) {
        if (stream->used == 0 && !stream->eof) {
            AX_TRY(stream_fill(stream));
            continue;
        }
        if (stream->eof) {
            size_t n = stream->used;
            while (n > 0 && is_space(stream->buffer[n - 1]))
                n--;
            *length = n;
            *final = true;
            return AX_STATUS_OK;
        }
        size_t last = stream->used; /* the last non-blank byte */
        while (last > 0 && is_space(stream->buffer[last - 1]))
            last--;
        size_t newline = last; /* the last newline before it */
        while (newline > 0 && stream->buffer[newline - 1] != '\n')
            newline--;
        if (last > 0 && newline > 0) {
            *length = newline;
            *final = false;
            return AX_STATUS_OK;
        }
        AX_TRY(stream_fill(stream));
    }
}

/* Opens path, filled, past its header line where options say it has one:
 * at its first data row (each status as stream_open, stream_fill and
 * stream_skip_line give it). */
static ax_status stream_open_at_rows(const char *path, const ax_csv_options *options,
                                     csv_stream *stream)
{
    ax_status status = stream_open(path, stream);
    if (status == AX_STATUS_OK)
        status = stream_fill(stream);
    if (status == AX_STATUS_OK && options->header)
        status = stream_skip_line(stream);
    return status;
}

static int64_t count_newlines(const char *p, const char *end)
{
    int64_t count = 0;
    for (; (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
        count++;
    return count;
}

ax_status ax_dataset_count_csv(const char *path, const ax_csv_options *options_in, int64_t *rows)
{
    *rows = 0;
    if (!path)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "no CSV file given");
    ax_csv_options options = options_in ? *options_in : ax_csv_defaults();
    AX_TRY(check_options(path, &options));
    csv_stream stream;
    ax_status status = stream_open_at_rows(path, &options, &stream);
    /* Rows: 1 + the newlines before the last non-blank byte, if there is one. */
    int64_t newlines = 0, before_last = -1;
    while (status == AX_STATUS_OK) {
        const char *p = stream.buffer;
        size_t last = stream.used;
        while (last > 0 && is_space(p[last - 1]))
            last--;
        if (last > 0) {
            before_last = newlines + count_newlines(p, p + last - 1);
            newlines = before_last + count_newlines(p + last - 1, p + stream.used);
        } else {
            newlines += count_newlines(p, p + stream.used);
        }
        stream_consume(&stream, stream.used);
        if (stream.eof)
            break;
        status = stream_fill(&stream);
    }
    stream_close(&stream);
    AX_TRY(status);
    if (before_last < 0)
        return no_rows(path, &options);
    *rows = before_last + 1;
    return AX_STATUS_OK;
}

ax_status ax_dataset_load_csv_rows(const char *path, const ax_csv_options *options_in,
                                   int64_t first, int64_t count, ax_dataset **out)
{
    *out = NULL;
    if (!path)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "no CSV file given");
    ax_csv_options options = options_in ? *options_in : ax_csv_defaults();
    AX_TRY(check_options(path, &options));
    AX_TRY(ax_row_range_check(path, INT64_MAX, "rows", first, count)); /* signs only, here */
    csv_stream stream;
    ax_status status = stream_open_at_rows(path, &options, &stream);
    const int64_t first_line = options.header ? 2 : 1;
    int64_t rows = 0, fields = 0, label_column = 0;
    row_sink sink = {.keep_first = first};
    for (bool final = false; status == AX_STATUS_OK && !final;) {
        size_t length = 0;
        status = stream_lines(&stream, &length, &final);
        if (status != AX_STATUS_OK || length == 0)
            break;
        const char *p = stream.buffer, *end = p + length;
        if (!sink.dataset) { /* the first data line sets the layout */
            status = first_line_layout(path, p, end, first_line, &options, &fields,
                                       &label_column);
            if (status == AX_STATUS_OK)
                status = allocate_rows(path, count, fields, &options, &sink.dataset);
            if (status == AX_STATUS_OK && !(sink.scratch = malloc((size_t)fields * sizeof(float))))
                status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
            if (status != AX_STATUS_OK)
                break;
        }
        csv_reader reader = {.path = path, .end = end, .delimiter = options.delimiter};
        const int64_t lines = count_newlines(p, end) + (final ? 1 : 0);
        status = parse_rows(&reader, &p, lines, rows, first_line, fields, label_column, &options,
                            &sink);
        rows += lines;
        if (!final)
            stream_consume(&stream, length);
    }
    stream_close(&stream);
    free(sink.scratch);
    if (status == AX_STATUS_OK && rows == 0)
        status = no_rows(path, &options);
    if (status == AX_STATUS_OK)
        status = ax_row_range_check(path, rows, "rows", first, count);
    if (status != AX_STATUS_OK) {
        ax_dataset_free(sink.dataset);
        return status;
    }
    if (has_classes(&options))
        sink.dataset->classes = sink.largest + 1;
    *out = sink.dataset;
    return AX_STATUS_OK;
}

ax_status ax_csv_count_columns(const char *path, const ax_csv_options *options_in,
                               int64_t *columns)
{
    *columns = 0;
    ax_csv_options options = options_in ? *options_in : ax_csv_defaults();
    AX_TRY(check_options(path, &options));
    csv_stream stream;
    ax_status status = stream_open_at_rows(path, &options, &stream);
    size_t length = 0;
    bool final = false;
    if (status == AX_STATUS_OK) /* whole lines only: the first line is read, not the file */
        status = stream_lines(&stream, &length, &final);
    if (status == AX_STATUS_OK && length == 0)
        status = no_rows(path, &options);
    if (status == AX_STATUS_OK)
        *columns = count_fields(stream.buffer, stream.buffer + length, options.delimiter);
    stream_close(&stream);
    return status;
}
