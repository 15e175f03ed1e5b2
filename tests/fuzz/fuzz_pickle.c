/* fuzz_pickle.c: libFuzzer target for the restricted pickle reader
 * (src/io/pickle.c) that reads cuda-convnet2's batch folders, straight on
 * an exact-size copy of the input (ASan sees a read past the end). An
 * accepted pickle is walked through the accessors to a bounded depth
 * (the reader refuses self-referring values, so the walk ends), and every
 * array's data must lie inside the pickle's own bytes or the reader's. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/pickle.h"

static size_t walk(const ax_pickle_value *v, int depth)
{
    if (!v)
        abort(); /* accessors within length never return NULL */
    if (depth > 10000)
        abort(); /* deeper than any input of this size could nest */
    size_t seen = 1;
    ax_pickle_array array;
    int64_t number;
    switch (ax_pickle_kind_of(v)) {
    case AX_PICKLE_LIST:
    case AX_PICKLE_TUPLE:
        for (size_t i = 0; i < ax_pickle_length(v) && seen < 100000; i++)
            seen += walk(ax_pickle_item(v, i), depth + 1);
        break;
    case AX_PICKLE_DICT:
        for (size_t i = 0; i < ax_pickle_length(v) && seen < 100000; i++) {
            seen += walk(ax_pickle_key(v, i), depth + 1);
            seen += walk(ax_pickle_dict_value(v, i), depth + 1);
        }
        break;
    case AX_PICKLE_STRING:
    case AX_PICKLE_BYTES: {
        const unsigned char *data = ax_pickle_data(v);
        volatile unsigned char sum = 0;
        for (size_t i = 0; i < ax_pickle_length(v); i++)
            sum ^= data[i];
        (void)sum;
        break;
    }
    case AX_PICKLE_ARRAY:
        if (!ax_pickle_array_of(v, &array) || array.count < 0)
            abort();
        if (array.count > 0) { /* touch its first and last bytes */
            volatile unsigned char edge = array.data[0];
            edge = array.data[(size_t)array.count * (size_t)array.item_bytes - 1];
            (void)edge;
        }
        break;
    case AX_PICKLE_INT:
    case AX_PICKLE_BOOL:
        if (!ax_pickle_int(v, &number))
            abort();
        break;
    default:
        break;
    }
    return seen;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    ax_pickle *pickle = NULL;
    const ax_pickle_value *root = NULL;
    if (ax_pickle_parse("fuzz", copy, size, &pickle, &root) == AX_STATUS_OK) {
        if (!pickle || !root)
            abort();
        walk(root, 0);
        /* cuda-convnet2's keys, as the converter asks for them */
        (void)ax_pickle_get(root, "data");
        (void)ax_pickle_get(root, "labels");
        (void)ax_pickle_get(root, "data_mean");
    } else if (pickle || root) {
        abort();
    }
    ax_pickle_free(pickle);
    free(copy);
    return 0;
}
