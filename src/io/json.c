/* json.c: a strict recursive-descent JSON parser producing a tree, and a
 * string-escaping writer. Strict because its input (safetensors headers,
 * model metadata) may come from anywhere: whatever RFC 8259 does not allow is
 * refused with the byte offset where it starts, rather than guessed at.
 * Recursion is bounded by AX_JSON_MAX_DEPTH. */
#include "io/json.h"

#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

typedef struct ax_json_member ax_json_member;

struct ax_json {
    ax_json_type type;
    size_t offset;
    union {
        bool boolean;
        int64_t integer;
        double number;
        struct {
            char *chars; /* NUL-terminated; may hold NULs before length */
            size_t length;
        } string;
        struct {
            ax_json *items;
            size_t count;
        } array;
        struct {
            ax_json_member *members;
            size_t count;
        } object;
    } as;
};

struct ax_json_member {
    char *key;
    size_t key_length;
    size_t key_offset;
    ax_json value;
};

typedef struct parser {
    const unsigned char *text;
    size_t length;
    size_t pos;
    size_t base; /* added to positions in messages and node offsets */
    int depth;
} parser;

/* ------------------------------------------------------------- messages */

static ax_status fail_at(const parser *p, size_t pos, const char *format, ...) AX_PRINTF(3, 4);

static ax_status fail_at(const parser *p, size_t pos, const char *format, ...)
{
    char what[512];
    va_list args;
    va_start(args, format);
    vsnprintf(what, sizeof what, format, args);
    va_end(args);
    return ax_fail(AX_STATUS_BAD_FILE, "%s at byte %zu", what, p->base + pos);
}

/* The character at pos, as a message shows it: 'x', byte 0x07, or end of input. */
static const char *describe(const parser *p, size_t pos, char *buffer, size_t capacity)
{
    if (pos >= p->length)
        return "end of input";
    unsigned char c = p->text[pos];
    if (c >= 0x20 && c < 0x7f)
        snprintf(buffer, capacity, "'%c'", c);
    else
        snprintf(buffer, capacity, "byte 0x%02x", c);
    return buffer;
}

static ax_status fail_unexpected(const parser *p, const char *expected)
{
    char shown[32];
    return fail_at(p, p->pos, "expected %s, found %s", expected,
                   describe(p, p->pos, shown, sizeof shown));
}

/* ---------------------------------------------------------------- UTF-8 */

/* Length of the well-formed UTF-8 sequence at s (1 to 4), or 0 if it is not
 * one (Unicode table 3-7: no overlong forms, no surrogates, <= U+10FFFF). */
static size_t utf8_sequence(const unsigned char *s, size_t available)
{
    unsigned char c = s[0];
    size_t length;
    unsigned char low = 0x80, high = 0xbf; /* allowed range of the second byte */
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        length = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        length = 3;
        if (c == 0xe0)
            low = 0xa0;
        else if (c == 0xed)
            high = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        length = 4;
        if (c == 0xf0)
            low = 0x90;
        else if (c == 0xf4)
            high = 0x8f;
    } else
        return 0;
    if (available < length || s[1] < low || s[1] > high)
        return 0;
    for (size_t i = 2; i < length; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return length;
}

bool ax_json_utf8_valid(const char *bytes, size_t length)
{
    const unsigned char *s = (const unsigned char *)bytes;
    size_t i = 0;
    while (i < length) {
        size_t n = utf8_sequence(s + i, length - i);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

static size_t utf8_encode(uint32_t code, char *out)
{
    if (code < 0x80) {
        out[0] = (char)code;
        return 1;
    }
    if (code < 0x800) {
        out[0] = (char)(0xc0 | (code >> 6));
        out[1] = (char)(0x80 | (code & 0x3f));
        return 2;
    }
    if (code < 0x10000) {
        out[0] = (char)(0xe0 | (code >> 12));
        out[1] = (char)(0x80 | ((code >> 6) & 0x3f));
        out[2] = (char)(0x80 | (code & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (code >> 18));
    out[1] = (char)(0x80 | ((code >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((code >> 6) & 0x3f));
    out[3] = (char)(0x80 | (code & 0x3f));
    return 4;
}

/* ---------------------------------------------------------------- parser */

static void free_contents(ax_json *node)
{
    switch (node->type) {
    case AX_JSON_STRING:
        free(node->as.string.chars);
        break;
    case AX_JSON_ARRAY:
        for (size_t i = 0; i < node->as.array.count; i++)
            free_contents(&node->as.array.items[i]);
        free(node->as.array.items);
        break;
    case AX_JSON_OBJECT:
        for (size_t i = 0; i < node->as.object.count; i++) {
            free(node->as.object.members[i].key);
            free_contents(&node->as.object.members[i].value);
        }
        free(node->as.object.members);
        break;
    default:
        break;
    }
    node->type = AX_JSON_NULL;
}

static void skip_whitespace(parser *p)
{
    while (p->pos < p->length) {
        unsigned char c = p->text[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        p->pos++;
    }
}

static ax_status parse_value(parser *p, ax_json *node);

static int hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Reads the 4 hex digits of a \u escape at pos (just after the 'u'). */
static bool read_hex4(const parser *p, size_t pos, size_t end, uint32_t *out)
{
    uint32_t value = 0;
    if (end - pos < 4)
        return false;
    for (size_t i = 0; i < 4; i++) {
        int digit = hex_digit(p->text[pos + i]);
        if (digit < 0)
            return false;
        value = value * 16 + (uint32_t)digit;
    }
    *out = value;
    return true;
}

/* Parses the string whose opening quote is at p->pos. Escapes never expand
 * (\uXXXX is 6 bytes for at most 3 of UTF-8, a surrogate pair 12 for 4), so
 * the decoded text fits in the raw span: find the closing quote, allocate
 * once, decode. */
static ax_status parse_string(parser *p, char **chars, size_t *length)
{
    size_t start = p->pos + 1, end = start;
    while (end < p->length && p->text[end] != '"')
        end += p->text[end] == '\\' ? 2 : 1;
    if (end >= p->length)
        return fail_at(p, p->pos, "unterminated string");
    char *out = malloc(end - start + 1);
    if (!out)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for a JSON string of %zu bytes",
                       end - start);
    size_t n = 0, i = start;
    while (i < end) {
        unsigned char c = p->text[i];
        if (c < 0x20) {
            free(out);
            return fail_at(p, i, "control character 0x%02x in a string (escape it)", c);
        }
        if (c != '\\') {
            size_t sequence = utf8_sequence(p->text + i, end - i);
            if (sequence == 0) {
                free(out);
                return fail_at(p, i, "invalid UTF-8 in a string");
            }
            memcpy(out + n, p->text + i, sequence);
            n += sequence;
            i += sequence;
            continue;
        }
        unsigned char e = p->text[i + 1];
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e != '\0' && simple) {
            static const char decoded[] = "\"\\/\b\f\n\r\t";
            out[n++] = decoded[simple - "\"\\/bfnrt"];
            i += 2;
            continue;
        }
        if (e != 'u') {
            free(out);
            char shown[32];
            return fail_at(p, i, "invalid escape '\\' followed by %s",
                           describe(p, i + 1, shown, sizeof shown));
        }
        uint32_t code, low;
        if (!read_hex4(p, i + 2, end, &code)) {
            free(out);
            return fail_at(p, i, "\\u must be followed by 4 hex digits");
        }
        size_t escape_start = i;
        i += 6;
        if (code >= 0xdc00 && code <= 0xdfff) {
            free(out);
            return fail_at(p, escape_start, "unpaired low surrogate \\u%04x", (unsigned)code);
        }
        if (code >= 0xd800 && code <= 0xdbff) {
            if (end - i < 6 || p->text[i] != '\\' || p->text[i + 1] != 'u' ||
                !read_hex4(p, i + 2, end, &low) || low < 0xdc00 || low > 0xdfff) {
                free(out);
                return fail_at(p, escape_start,
                               "high surrogate \\u%04x not followed by a low surrogate",
                               (unsigned)code);
            }
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
            i += 6;
        }
        n += utf8_encode(code, out + n);
    }
    out[n] = '\0';
    p->pos = end + 1;
    *chars = out;
    *length = n;
    return AX_STATUS_OK;
}

static size_t skip_digits(const parser *p, size_t pos)
{
    while (pos < p->length && p->text[pos] >= '0' && p->text[pos] <= '9')
        pos++;
    return pos;
}

static ax_status parse_number(parser *p, ax_json *node)
{
    size_t start = p->pos, pos = start;
    bool negative = false, integral = true;
    if (p->text[pos] == '-') {
        negative = true;
        pos++;
    }
    if (pos >= p->length || p->text[pos] < '0' || p->text[pos] > '9')
        return fail_at(p, start, "'-' must be followed by a digit");
    if (p->text[pos] == '0' && pos + 1 < p->length && p->text[pos + 1] >= '0' &&
        p->text[pos + 1] <= '9')
        return fail_at(p, start, "a number must not have leading zeros");
    size_t digits_start = pos;
    pos = skip_digits(p, pos);
    size_t digits_end = pos;
    if (pos < p->length && p->text[pos] == '.') {
        integral = false;
        size_t fraction = pos + 1;
        pos = skip_digits(p, fraction);
        if (pos == fraction)
            return fail_at(p, start, "'.' in a number must be followed by a digit");
    }
    if (pos < p->length && (p->text[pos] == 'e' || p->text[pos] == 'E')) {
        integral = false;
        pos++;
        if (pos < p->length && (p->text[pos] == '+' || p->text[pos] == '-'))
            pos++;
        size_t exponent = pos;
        pos = skip_digits(p, exponent);
        if (pos == exponent)
            return fail_at(p, start, "the exponent of a number must have digits");
    }
    node->offset = p->base + start;
    p->pos = pos;
    if (integral) {
        /* Accumulate the magnitude in uint64: -2^63 fits though +2^63 does not. */
        uint64_t magnitude = 0, limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        bool fits = true;
        for (size_t i = digits_start; i < digits_end && fits; i++) {
            uint64_t digit = (uint64_t)(p->text[i] - '0');
            if (magnitude > (limit - digit) / 10)
                fits = false;
            else
                magnitude = magnitude * 10 + digit;
        }
        if (fits) {
            node->type = AX_JSON_INT;
            node->as.integer = negative ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
            return AX_STATUS_OK;
        }
    }
    /* strtod reads the locale's decimal point, so a program that called
     * setlocale() would misread "0.5"; give it the character it expects. */
    size_t span = pos - start;
    char local[64];
    char *copy = span < sizeof local ? local : malloc(span + 1);
    if (!copy)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for a JSON number");
    memcpy(copy, p->text + start, span);
    copy[span] = '\0';
    const char *point = localeconv()->decimal_point;
    char *dot = strchr(copy, '.');
    if (dot && point && point[0] && !point[1])
        *dot = point[0];
    double value = strtod(copy, NULL);
    if (copy != local)
        free(copy);
    if (isinf(value))
        return fail_at(p, start, "number %.*s is out of the range of a double",
                       (int)(span < 40 ? span : 40), (const char *)p->text + start);
    node->type = AX_JSON_DOUBLE;
    node->as.number = value;
    return AX_STATUS_OK;
}

static ax_status parse_literal(parser *p, ax_json *node)
{
    static const char *const words[] = {"true", "false", "null"};
    for (int w = 0; w < 3; w++) {
        size_t n = strlen(words[w]);
        if (p->length - p->pos >= n && memcmp(p->text + p->pos, words[w], n) == 0) {
            node->offset = p->base + p->pos;
            node->type = w == 2 ? AX_JSON_NULL : AX_JSON_BOOL;
            node->as.boolean = w == 0;
            p->pos += n;
            return AX_STATUS_OK;
        }
    }
    return fail_unexpected(p, "a value");
}

/* Makes room for one more element in an array of element_size items. */
static ax_status grow(void **items, size_t count, size_t *capacity, size_t element_size)
{
    if (count < *capacity)
        return AX_STATUS_OK;
    size_t wanted = *capacity ? *capacity * 2 : 4;
    void *bigger = realloc(*items, wanted * element_size);
    if (!bigger)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for a JSON array or object");
    *items = bigger;
    *capacity = wanted;
    return AX_STATUS_OK;
}

static ax_status parse_array(parser *p, ax_json *node)
{
    size_t capacity = 0;
    node->type = AX_JSON_ARRAY;
    node->offset = p->base + p->pos;
    node->as.array.items = NULL;
    node->as.array.count = 0;
    p->pos++;
    skip_whitespace(p);
    if (p->pos < p->length && p->text[p->pos] == ']') {
        p->pos++;
        return AX_STATUS_OK;
    }
    for (;;) {
        ax_json item = {0};
        ax_status status = parse_value(p, &item);
        if (status == AX_STATUS_OK)
            status = grow((void **)&node->as.array.items, node->as.array.count, &capacity,
                          sizeof item);
        if (status != AX_STATUS_OK) {
            free_contents(&item);
            return status;
        }
        node->as.array.items[node->as.array.count++] = item;
        skip_whitespace(p);
        if (p->pos < p->length && p->text[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->length && p->text[p->pos] == ']') {
            p->pos++;
            return AX_STATUS_OK;
        }
        return fail_unexpected(p, "',' or ']' in an array");
    }
}

/* Orders members by key bytes, then by position, so equal keys are adjacent
 * with the earlier one first. */
static int compare_members(const void *a, const void *b)
{
    const ax_json_member *x = *(const ax_json_member *const *)a;
    const ax_json_member *y = *(const ax_json_member *const *)b;
    size_t shorter = x->key_length < y->key_length ? x->key_length : y->key_length;
    int order = memcmp(x->key, y->key, shorter);
    if (order)
        return order;
    if (x->key_length != y->key_length)
        return x->key_length < y->key_length ? -1 : 1;
    return x->key_offset < y->key_offset ? -1 : x->key_offset > y->key_offset;
}

/* RFC 8259 leaves duplicate keys to the reader; readers disagree on which
 * one wins, so a file relying on either is refused. */
static ax_status check_duplicate_keys(const parser *p, const ax_json *node)
{
    size_t count = node->as.object.count;
    if (count < 2)
        return AX_STATUS_OK;
    const ax_json_member **sorted = malloc(count * sizeof *sorted);
    if (!sorted)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory checking a JSON object's keys");
    for (size_t i = 0; i < count; i++)
        sorted[i] = &node->as.object.members[i];
    qsort(sorted, count, sizeof *sorted, compare_members);
    ax_status status = AX_STATUS_OK;
    for (size_t i = 1; i < count && status == AX_STATUS_OK; i++) {
        const ax_json_member *a = sorted[i - 1], *b = sorted[i];
        if (a->key_length == b->key_length && memcmp(a->key, b->key, a->key_length) == 0)
            status = fail_at(p, b->key_offset - p->base, "duplicate key \"%.*s\"",
                             (int)(b->key_length < 100 ? b->key_length : 100), b->key);
    }
    free(sorted);
    return status;
}

static ax_status parse_object(parser *p, ax_json *node)
{
    size_t capacity = 0;
    node->type = AX_JSON_OBJECT;
    node->offset = p->base + p->pos;
    node->as.object.members = NULL;
    node->as.object.count = 0;
    p->pos++;
    skip_whitespace(p);
    if (p->pos < p->length && p->text[p->pos] == '}') {
        p->pos++;
        return AX_STATUS_OK;
    }
    for (;;) {
        skip_whitespace(p);
        if (p->pos >= p->length || p->text[p->pos] != '"')
            return fail_unexpected(p, node->as.object.count ? "a string key after ','"
                                                            : "a string key or '}'");
        ax_json_member member = {0};
        member.key_offset = p->base + p->pos;
        AX_TRY(parse_string(p, &member.key, &member.key_length));
        skip_whitespace(p);
        ax_status status = AX_STATUS_OK;
        if (p->pos >= p->length || p->text[p->pos] != ':')
            status = fail_unexpected(p, "':' after an object key");
        else {
            p->pos++;
            status = parse_value(p, &member.value);
        }
        if (status == AX_STATUS_OK)
            status = grow((void **)&node->as.object.members, node->as.object.count, &capacity,
                          sizeof member);
        if (status != AX_STATUS_OK) {
            free(member.key);
            free_contents(&member.value);
            return status;
        }
        node->as.object.members[node->as.object.count++] = member;
        skip_whitespace(p);
        if (p->pos < p->length && p->text[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->length && p->text[p->pos] == '}') {
            p->pos++;
            return check_duplicate_keys(p, node);
        }
        return fail_unexpected(p, "',' or '}' in an object");
    }
}

static ax_status parse_value(parser *p, ax_json *node)
{
    skip_whitespace(p);
    if (p->pos >= p->length)
        return fail_unexpected(p, "a value");
    unsigned char c = p->text[p->pos];
    if (c == '{' || c == '[') {
        if (p->depth >= AX_JSON_MAX_DEPTH)
            return fail_at(p, p->pos, "arrays and objects nested deeper than %d levels",
                           AX_JSON_MAX_DEPTH);
        p->depth++;
        ax_status status = c == '{' ? parse_object(p, node) : parse_array(p, node);
        p->depth--;
        return status;
    }
    if (c == '"') {
        node->offset = p->base + p->pos;
        AX_TRY(parse_string(p, &node->as.string.chars, &node->as.string.length));
        node->type = AX_JSON_STRING;
        return AX_STATUS_OK;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return parse_number(p, node);
    return parse_literal(p, node);
}

ax_status ax_json_parse(const char *text, size_t length, size_t first_offset, ax_json **out)
{
    *out = NULL;
    parser p = {(const unsigned char *)text, length, 0, first_offset, 0};
    ax_json *root = calloc(1, sizeof *root);
    if (!root)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory parsing JSON");
    ax_status status = parse_value(&p, root);
    if (status == AX_STATUS_OK) {
        skip_whitespace(&p);
        if (p.pos < p.length)
            status = fail_unexpected(&p, "the end of the JSON text");
    }
    if (status != AX_STATUS_OK) {
        ax_json_free(root);
        return status;
    }
    *out = root;
    return AX_STATUS_OK;
}

void ax_json_free(ax_json *root)
{
    if (!root)
        return;
    free_contents(root);
    free(root);
}

/* ------------------------------------------------------------- accessors */

/* Every accessor takes NULL, the answer of a lookup that found nothing, and
 * answers as for a value of another type: callers chain
 * ax_json_string(ax_json_object_get(root, key)) on files they do not trust. */
ax_json_type ax_json_type_of(const ax_json *node) { return node ? node->type : AX_JSON_NULL; }

const char *ax_json_type_name(ax_json_type type)
{
    switch (type) {
    case AX_JSON_NULL: return "null";
    case AX_JSON_BOOL: return "boolean";
    case AX_JSON_INT: return "integer";
    case AX_JSON_DOUBLE: return "number";
    case AX_JSON_STRING: return "string";
    case AX_JSON_ARRAY: return "array";
    case AX_JSON_OBJECT: return "object";
    }
    return "unknown";
}

size_t ax_json_offset(const ax_json *node) { return node ? node->offset : 0; }

size_t ax_json_length(const ax_json *node)
{
    if (ax_json_type_of(node) == AX_JSON_ARRAY)
        return node->as.array.count;
    if (ax_json_type_of(node) == AX_JSON_OBJECT)
        return node->as.object.count;
    return 0;
}

const ax_json *ax_json_array_get(const ax_json *node, size_t index)
{
    if (ax_json_type_of(node) != AX_JSON_ARRAY || index >= node->as.array.count)
        return NULL;
    return &node->as.array.items[index];
}

const ax_json *ax_json_object_get(const ax_json *node, const char *key)
{
    if (ax_json_type_of(node) != AX_JSON_OBJECT)
        return NULL;
    size_t length = strlen(key);
    for (size_t i = 0; i < node->as.object.count; i++) {
        const ax_json_member *member = &node->as.object.members[i];
        if (member->key_length == length && memcmp(member->key, key, length) == 0)
            return &member->value;
    }
    return NULL;
}

const char *ax_json_object_key(const ax_json *node, size_t index)
{
    if (ax_json_type_of(node) != AX_JSON_OBJECT || index >= node->as.object.count)
        return NULL;
    return node->as.object.members[index].key;
}

size_t ax_json_object_key_length(const ax_json *node, size_t index)
{
    if (ax_json_type_of(node) != AX_JSON_OBJECT || index >= node->as.object.count)
        return 0;
    return node->as.object.members[index].key_length;
}

const ax_json *ax_json_object_value(const ax_json *node, size_t index)
{
    if (ax_json_type_of(node) != AX_JSON_OBJECT || index >= node->as.object.count)
        return NULL;
    return &node->as.object.members[index].value;
}

const char *ax_json_string(const ax_json *node)
{
    return ax_json_type_of(node) == AX_JSON_STRING ? node->as.string.chars : NULL;
}

size_t ax_json_string_length(const ax_json *node)
{
    return ax_json_type_of(node) == AX_JSON_STRING ? node->as.string.length : 0;
}

bool ax_json_int(const ax_json *node, int64_t *out)
{
    if (ax_json_type_of(node) != AX_JSON_INT)
        return false;
    *out = node->as.integer;
    return true;
}

bool ax_json_number(const ax_json *node, double *out)
{
    if (ax_json_type_of(node) == AX_JSON_INT)
        *out = (double)node->as.integer;
    else if (ax_json_type_of(node) == AX_JSON_DOUBLE)
        *out = node->as.number;
    else
        return false;
    return true;
}

bool ax_json_bool(const ax_json *node, bool *out)
{
    if (ax_json_type_of(node) != AX_JSON_BOOL)
        return false;
    *out = node->as.boolean;
    return true;
}

/* ---------------------------------------------------------------- writer */

static void append_bytes(ax_json_writer *writer, const char *bytes, size_t n)
{
    if (writer->out_of_memory)
        return;
    if (writer->length + n + 1 > writer->capacity) {
        size_t wanted = writer->capacity ? writer->capacity : 256;
        while (wanted < writer->length + n + 1)
            wanted *= 2;
        char *bigger = realloc(writer->text, wanted);
        if (!bigger) {
            writer->out_of_memory = true;
            return;
        }
        writer->text = bigger;
        writer->capacity = wanted;
    }
    memcpy(writer->text + writer->length, bytes, n);
    writer->length += n;
    writer->text[writer->length] = '\0';
}

void ax_json_writer_append(ax_json_writer *writer, const char *text)
{
    append_bytes(writer, text, strlen(text));
}

void ax_json_writer_append_string(ax_json_writer *writer, const char *value)
{
    append_bytes(writer, "\"", 1);
    const char *run = value; /* bytes that need no escape are copied in runs */
    for (const char *c = value; *c; c++) {
        unsigned char byte = (unsigned char)*c;
        if (byte >= 0x20 && byte != '"' && byte != '\\')
            continue;
        append_bytes(writer, run, (size_t)(c - run));
        run = c + 1;
        char escape[8];
        const char *named = strchr("\"\\\b\f\n\r\t", byte);
        if (byte != 0 && named)
            snprintf(escape, sizeof escape, "\\%c", "\"\\bfnrt"[named - "\"\\\b\f\n\r\t"]);
        else
            snprintf(escape, sizeof escape, "\\u%04x", byte);
        append_bytes(writer, escape, strlen(escape));
    }
    append_bytes(writer, run, strlen(run));
    append_bytes(writer, "\"", 1);
}

void ax_json_writer_append_int(ax_json_writer *writer, int64_t value)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%lld", (long long)value);
    ax_json_writer_append(writer, digits);
}

void ax_json_writer_free(ax_json_writer *writer)
{
    free(writer->text);
    *writer = (ax_json_writer){0};
}
