/* metrics_reader.c: the JSON Lines of `axon train --metrics` read back, one
 * flat object a line (metrics.c writes them). A small parser of its own, as
 * metrics.c has a small writer: the lines hold only numbers, null, and
 * perhaps strings or booleans under keys a later version adds; nesting is
 * refused. Every error names the file, the line and the column. */
#define _POSIX_C_SOURCE 200809L
#include "metrics_reader.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const metric_keys[METRIC_COUNT] = {"train_loss", "val_loss", "test_loss",
                                               "val_accuracy", "test_accuracy"};

typedef struct line_parser {
    const char *path;
    int64_t line;
    const char *start; /* the line, for columns */
    const char *p;
} line_parser;

static int parse_error(const line_parser *parser, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
static int parse_error(const line_parser *parser, const char *format, ...)
{
    char text[512];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    fprintf(stderr, "axon: %s: line %lld, column %lld: %s (is it an axon train --metrics file?)\n",
            parser->path, (long long)parser->line, (long long)(parser->p - parser->start + 1),
            text);
    return 1;
}

static void skip_space(line_parser *parser)
{
    while (*parser->p == ' ' || *parser->p == '\t' || *parser->p == '\r' || *parser->p == '\n')
        parser->p++;
}

/* A JSON string at p; its text (escapes kept as written, enough to compare
 * keys, which have none) into key when key is not NULL. */
static int parse_string(line_parser *parser, char *key, size_t capacity)
{
    if (*parser->p != '"')
        return parse_error(parser, "expected a string in double quotes");
    const char *begin = ++parser->p;
    while (*parser->p && *parser->p != '"') {
        if (*parser->p == '\\' && parser->p[1])
            parser->p++;
        parser->p++;
    }
    if (*parser->p != '"')
        return parse_error(parser, "the string does not end on its line");
    size_t length = (size_t)(parser->p - begin);
    if (key) {
        if (length >= capacity)
            length = capacity - 1;
        memcpy(key, begin, length);
        key[length] = '\0';
    }
    parser->p++;
    return 0;
}

typedef enum value_kind { VALUE_NUMBER, VALUE_NULL, VALUE_OTHER } value_kind;

static int parse_value(line_parser *parser, value_kind *kind, double *number)
{
    const char *p = parser->p;
    *number = NAN;
    if (*p == '"') {
        *kind = VALUE_OTHER;
        return parse_string(parser, NULL, 0);
    }
    static const char *const words[] = {"null", "true", "false"};
    for (int i = 0; i < 3; i++)
        if (strncmp(p, words[i], strlen(words[i])) == 0) {
            *kind = i == 0 ? VALUE_NULL : VALUE_OTHER;
            parser->p += strlen(words[i]);
            return 0;
        }
    if (*p == '{' || *p == '[')
        return parse_error(parser, "a nested %s; metrics lines are flat", *p == '{' ? "object" : "array");
    if (*p != '-' && !(*p >= '0' && *p <= '9')) /* strtod would take nan, inf, hex */
        return parse_error(parser, "expected a number, null, true, false or a string");
    char *end = NULL;
    errno = 0;
    *number = strtod(p, &end);
    if (end == p || errno == ERANGE)
        return parse_error(parser, "not a number a double holds");
    *kind = VALUE_NUMBER;
    parser->p = end;
    return 0;
}

/* One line into *epoch; the line holds text (NUL-terminated). */
static int parse_line(line_parser *parser, metrics_epoch *epoch)
{
    bool has_epoch = false;
    for (int i = 0; i < METRIC_COUNT; i++)
        epoch->values[i] = NAN;
    skip_space(parser);
    if (*parser->p != '{')
        return parse_error(parser, "expected '{', the start of a JSON object");
    parser->p++;
    skip_space(parser);
    bool empty = *parser->p == '}';
    while (!empty) {
        char key[64];
        if (parse_string(parser, key, sizeof key))
            return 1;
        skip_space(parser);
        if (*parser->p != ':')
            return parse_error(parser, "expected ':' after the key \"%s\"", key);
        parser->p++;
        skip_space(parser);
        const char *value_at = parser->p;
        value_kind kind;
        double number;
        if (parse_value(parser, &kind, &number))
            return 1;
        const char *after = parser->p;
        parser->p = value_at; /* errors about the value point at it */
        if (strcmp(key, "epoch") == 0) {
            if (kind != VALUE_NUMBER || number != floor(number) || number < 0 || number > 1e15)
                return parse_error(parser, "\"epoch\" is not a whole number of epochs");
            epoch->epoch = (int64_t)number;
            has_epoch = true;
        }
        for (int i = 0; i < METRIC_COUNT; i++)
            if (strcmp(key, metric_keys[i]) == 0) {
                if (kind == VALUE_OTHER)
                    return parse_error(parser, "\"%s\" is neither a number nor null", key);
                epoch->values[i] = number;
            }
        parser->p = after;
        skip_space(parser);
        if (*parser->p == '}')
            break;
        if (*parser->p != ',')
            return parse_error(parser, "expected ',' or '}' after the value of \"%s\"", key);
        parser->p++;
        skip_space(parser);
    }
    parser->p++; /* past '}' */
    skip_space(parser);
    if (*parser->p)
        return parse_error(parser, "text after the object's closing '}'");
    if (!has_epoch) {
        parser->p = parser->start;
        return parse_error(parser, "the object has no \"epoch\"");
    }
    return 0;
}

static bool blank(const char *text)
{
    for (; *text; text++)
        if (*text != ' ' && *text != '\t' && *text != '\r' && *text != '\n')
            return false;
    return true;
}

int metrics_series_read(const char *path, metrics_series *series)
{
    series->epochs = NULL;
    series->count = 0;
    FILE *file = fopen(path, "r");
    if (!file) {
        fprintf(stderr, "axon: %s: %s\n", path,
                errno == ENOENT ? "no such file or directory" : strerror(errno));
        return 1;
    }
    char *text = NULL;
    size_t capacity = 0, allocated = 0;
    int result = 0;
    line_parser parser = {.path = path};
    ssize_t length;
    while (result == 0 && (length = getline(&text, &capacity, file)) >= 0) {
        parser.line++;
        parser.start = parser.p = text;
        if ((size_t)length != strlen(text)) {
            parser.p = text + strlen(text);
            result = parse_error(&parser, "a NUL byte: not a text file");
            break;
        }
        if (blank(text))
            continue;
        if ((size_t)series->count == allocated) {
            size_t grown = allocated ? 2 * allocated : 64;
            metrics_epoch *bigger = realloc(series->epochs, grown * sizeof *bigger);
            if (!bigger) {
                fprintf(stderr, "axon: %s: out of memory at line %lld\n", path,
                        (long long)parser.line);
                result = 1;
                break;
            }
            series->epochs = bigger;
            allocated = grown;
        }
        result = parse_line(&parser, &series->epochs[series->count]);
        if (result == 0)
            series->count++;
    }
    if (result == 0 && ferror(file)) {
        fprintf(stderr, "axon: %s: cannot read: %s\n", path, strerror(errno));
        result = 1;
    }
    if (result == 0 && series->count == 0) {
        fprintf(stderr, "axon: %s: no epochs (the file is empty; axon train --metrics writes a "
                        "line per epoch)\n", path);
        result = 1;
    }
    free(text);
    fclose(file);
    if (result != 0)
        metrics_series_free(series);
    return result;
}

void metrics_series_free(metrics_series *series)
{
    free(series->epochs);
    series->epochs = NULL;
    series->count = 0;
}
