/* fuzz_json.c: libFuzzer target for the JSON parser, straight on the buffer
 * (not NUL-terminated: ASan catches a read past the end). Accepted trees are
 * walked through the accessors, and every string must be valid UTF-8. */
#include <stdint.h>
#include <stdlib.h>

#include "io/json.h"

static void walk(const ax_json *node, int depth)
{
    if (depth > AX_JSON_MAX_DEPTH + 1)
        abort();
    switch (ax_json_type_of(node)) {
    case AX_JSON_STRING:
        if (!ax_json_utf8_valid(ax_json_string(node), ax_json_string_length(node)))
            abort();
        break;
    case AX_JSON_ARRAY:
        for (size_t i = 0; i < ax_json_length(node); i++)
            walk(ax_json_array_get(node, i), depth + 1);
        break;
    case AX_JSON_OBJECT:
        for (size_t i = 0; i < ax_json_length(node); i++) {
            const char *key = ax_json_object_key(node, i);
            if (!ax_json_utf8_valid(key, ax_json_object_key_length(node, i)))
                abort();
            walk(ax_json_object_value(node, i), depth + 1);
        }
        break;
    default: {
        double number;
        int64_t integer;
        bool flag;
        (void)ax_json_number(node, &number);
        (void)ax_json_int(node, &integer);
        (void)ax_json_bool(node, &flag);
    }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly size bytes, so ASan sees any read past the end. */
    char *text = malloc(size ? size : 1);
    if (!text)
        return 0;
    for (size_t i = 0; i < size; i++)
        text[i] = (char)data[i];
    ax_json *root = NULL;
    if (ax_json_parse(text, size, 0, &root) == AX_STATUS_OK) {
        walk(root, 0);
        ax_json_free(root);
    }
    (void)ax_json_utf8_valid(text, size);
    free(text);
    return 0;
}
