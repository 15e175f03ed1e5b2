/* json.h: a small strict JSON (RFC 8259) parser and string writer, enough for
 * safetensors headers and axon's metadata. The parser builds a read-only tree;
 * it refuses everything RFC 8259 refuses plus duplicate object keys, lone
 * surrogates and invalid UTF-8, and limits nesting to AX_JSON_MAX_DEPTH so a
 * hostile file cannot exhaust the stack. Errors name the byte offset. */
#ifndef AX_IO_JSON_H
#define AX_IO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "axon.h"

/* Deepest nesting of arrays and objects accepted; a safetensors header needs 3. */
#define AX_JSON_MAX_DEPTH 128

typedef enum ax_json_type {
    AX_JSON_NULL = 0,
    AX_JSON_BOOL,
    AX_JSON_INT,    /* a number without fraction or exponent that fits int64_t */
    AX_JSON_DOUBLE, /* any other number */
    AX_JSON_STRING,
    AX_JSON_ARRAY,
    AX_JSON_OBJECT,
} ax_json_type;

typedef struct ax_json ax_json;

/* Parses text[0, length) (need not be NUL-terminated) into a tree owned by
 * the caller (free with ax_json_free). first_offset is the byte offset of
 * text[0] in its file: messages and ax_json_offset() count from there (8
 * for a safetensors header, 0 for a string). On failure returns
 * AX_STATUS_BAD_FILE with a message such as "expected ':' at byte 12". */
AX_NODISCARD ax_status ax_json_parse(const char *text, size_t length, size_t first_offset,
                                     ax_json **out);
/* Frees a tree returned by ax_json_parse; accepts NULL. */
void ax_json_free(ax_json *root);

/* Every accessor below accepts NULL (what a lookup that found nothing returns) and
 * answers as for a value of another type: AX_JSON_NULL, 0, NULL or false. */
/* The node's type; "null", "boolean", "integer", "number", "string", "array", "object". */
ax_json_type ax_json_type_of(const ax_json *node);
const char *ax_json_type_name(ax_json_type type);
/* Byte offset where the node's text begins (see first_offset). */
size_t ax_json_offset(const ax_json *node);

/* Number of elements of an array or members of an object; 0 otherwise. */
size_t ax_json_length(const ax_json *node);
/* Element index of an array, or NULL if not an array or out of range. */
const ax_json *ax_json_array_get(const ax_json *node, size_t index);
/* Value of member key of an object, or NULL if absent or not an object. */
const ax_json *ax_json_object_get(const ax_json *node, const char *key);
/* Key and value of member index of an object, in file order; NULL if out of range. */
const char *ax_json_object_key(const ax_json *node, size_t index);
const ax_json *ax_json_object_value(const ax_json *node, size_t index);

/* A string's UTF-8 bytes, NUL-terminated, or NULL if not a string. A JSON
 * string may contain "\u0000": ax_json_string_length() then exceeds strlen(). */
const char *ax_json_string(const ax_json *node);
size_t ax_json_string_length(const ax_json *node);
/* Key of member index, with its length in bytes (keys may contain NUL too). */
size_t ax_json_object_key_length(const ax_json *node, size_t index);
/* Stores an AX_JSON_INT node's value and returns true; false for anything else. */
bool ax_json_int(const ax_json *node, int64_t *out);
/* Stores the value of any number node (integers converted) and returns true. */
bool ax_json_number(const ax_json *node, double *out);
/* Stores a boolean node's value and returns true. */
bool ax_json_bool(const ax_json *node, bool *out);

/* True if bytes[0, length) is well-formed UTF-8 (no overlong forms, no
 * surrogates, nothing above U+10FFFF). */
bool ax_json_utf8_valid(const char *bytes, size_t length);

/* A growing text buffer for emitting JSON. Start from {0}; an allocation
 * failure sets out_of_memory, after which appends do nothing, so callers
 * check once at the end. text is NUL-terminated once anything was appended. */
typedef struct ax_json_writer {
    char *text;
    size_t length;
    size_t capacity;
    bool out_of_memory;
} ax_json_writer;

/* Appends text verbatim (punctuation, literals). */
void ax_json_writer_append(ax_json_writer *writer, const char *text);
/* Appends value as a quoted JSON string, escaping '"', '\\' and control
 * characters; other bytes pass through, so value should be valid UTF-8. */
void ax_json_writer_append_string(ax_json_writer *writer, const char *value);
/* Appends an integer in decimal. */
void ax_json_writer_append_int(ax_json_writer *writer, int64_t value);
/* Frees the text and resets the writer to {0}. */
void ax_json_writer_free(ax_json_writer *writer);

#endif
