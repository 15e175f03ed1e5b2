/* test_pickle.c: the restricted pickle reader (src/io/pickle.c) on pickles
 * made by Python 3.11 + NumPy 1.24 with protocol 2, as cuda-convnet2's
 * make-data scripts write them (the bytes below come from pickle.dumps of
 * the values in the comments; a batch {'data': [b'\xff\xd8abc',
 * b'\xff\xd8de'], 'labels': [3, 1], 'batch_label': 'batch 1'} and a meta
 * {'data_mean': np.arange(6, dtype=np.float32).reshape(6, 1), 'label_names':
 * ['a', 'b'], 'num_vis': 12}); crafted pickles that call os.system (an
 * object whose __reduce__ returns (os.system, ('echo pwned',))) and hold an
 * object array are refused naming the global and the offset; the writer's
 * output reads back; every truncation of a valid pickle is refused. Empty
 * bytes as Python 3 writes them at protocols 2 to 5, and as Python 2 does
 * (test_pickle_empty_bytes.h, from tests/make_pickle_empty_bytes.py), read
 * as b'', while bytes() with an argument, bytearray and other builtins stay
 * refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "io/pickle.h"
#include "test_pickle_empty_bytes.h"


static const unsigned char batch_py3[] = {128,2,125,113,0,40,88,4,0,0,0,100,97,116,97,113,1,93,113,2,40,99,95,99,111,100,101,99,115,10,101,110,99,111,100,101,10,113,3,88,7,0,0,0,195,191,195,152,97,98,99,113,4,88,6,0,0,0,108,97,116,105,110,49,113,5,134,113,6,82,113,7,104,3,88,6,0,0,0,195,191,195,152,100,101,113,8,104,5,134,113,9,82,113,10,101,88,6,0,0,0,108,97,98,101,108,115,113,11,93,113,12,40,75,3,75,1,101,88,11,0,0,0,98,97,116,99,104,95,108,97,98,101,108,113,13,88,7,0,0,0,98,97,116,99,104,32,49,113,14,117,46};
static const unsigned char meta_py3[] = {128,2,125,113,0,40,88,9,0,0,0,100,97,116,97,95,109,101,97,110,113,1,99,110,117,109,112,121,46,99,111,114,101,46,109,117,108,116,105,97,114,114,97,121,10,95,114,101,99,111,110,115,116,114,117,99,116,10,113,2,99,110,117,109,112,121,10,110,100,97,114,114,97,121,10,113,3,75,0,133,113,4,99,95,99,111,100,101,99,115,10,101,110,99,111,100,101,10,113,5,88,1,0,0,0,98,113,6,88,6,0,0,0,108,97,116,105,110,49,113,7,134,113,8,82,113,9,135,113,10,82,113,11,40,75,1,75,6,75,1,134,113,12,99,110,117,109,112,121,10,100,116,121,112,101,10,113,13,88,2,0,0,0,102,52,113,14,137,136,135,113,15,82,113,16,40,75,3,88,1,0,0,0,60,113,17,78,78,78,74,255,255,255,255,74,255,255,255,255,75,0,116,113,18,98,137,104,5,88,27,0,0,0,0,0,0,0,0,0,194,128,63,0,0,0,64,0,0,64,64,0,0,194,128,64,0,0,194,160,64,113,19,104,7,134,113,20,82,113,21,116,113,22,98,88,11,0,0,0,108,97,98,101,108,95,110,97,109,101,115,113,23,93,113,24,40,88,1,0,0,0,97,113,25,88,1,0,0,0,98,113,26,101,88,7,0,0,0,110,117,109,95,118,105,115,113,27,75,12,117,46};
static const unsigned char evil[] = {128,2,125,113,0,88,4,0,0,0,100,97,116,97,113,1,99,112,111,115,105,120,10,115,121,115,116,101,109,10,113,2,88,10,0,0,0,101,99,104,111,32,112,119,110,101,100,113,3,133,113,4,82,113,5,115,46};
static const unsigned char obj_array[] = {128,2,125,113,0,88,1,0,0,0,120,113,1,99,110,117,109,112,121,46,99,111,114,101,46,109,117,108,116,105,97,114,114,97,121,10,95,114,101,99,111,110,115,116,114,117,99,116,10,113,2,99,110,117,109,112,121,10,110,100,97,114,114,97,121,10,113,3,75,0,133,113,4,99,95,99,111,100,101,99,115,10,101,110,99,111,100,101,10,113,5,88,1,0,0,0,98,113,6,88,6,0,0,0,108,97,116,105,110,49,113,7,134,113,8,82,113,9,135,113,10,82,113,11,40,75,1,75,2,133,113,12,99,110,117,109,112,121,10,100,116,121,112,101,10,113,13,88,2,0,0,0,79,56,113,14,137,136,135,113,15,82,113,16,40,75,3,88,1,0,0,0,124,113,17,78,78,78,74,255,255,255,255,74,255,255,255,255,75,63,116,113,18,98,137,93,113,19,40,75,1,88,1,0,0,0,97,113,20,101,116,113,21,98,115,46};

static int failures = 0;
#define CHECK(condition, ...)                                                                \
    do {                                                                                     \
        if (!(condition)) {                                                                  \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                      \
            printf(__VA_ARGS__);                                                             \
            printf("\n");                                                                    \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

static void test_batch(void)
{
    ax_pickle *p = NULL;
    const ax_pickle_value *root = NULL;
    ax_status status = ax_pickle_parse("batch", batch_py3, sizeof batch_py3, &p, &root);
    CHECK(status == AX_STATUS_OK, "batch refused: %s", ax_error_message());
    if (status != AX_STATUS_OK)
        return;
    const ax_pickle_value *data = ax_pickle_get(root, "data");
    const ax_pickle_value *labels = ax_pickle_get(root, "labels");
    CHECK(data && ax_pickle_kind_of(data) == AX_PICKLE_LIST && ax_pickle_length(data) == 2,
          "data is a list of 2");
    const ax_pickle_value *first = data ? ax_pickle_item(data, 0) : NULL;
    CHECK(first && ax_pickle_kind_of(first) == AX_PICKLE_BYTES && ax_pickle_length(first) == 5 &&
              memcmp(ax_pickle_data(first), "\xff\xd8" "abc", 5) == 0,
          "data[0] is b'\\xff\\xd8abc' (latin-1 through _codecs.encode)");
    int64_t label = -1;
    CHECK(labels && ax_pickle_int(ax_pickle_item(labels, 0), &label) && label == 3, "labels[0] 3");
    const ax_pickle_value *name = ax_pickle_get(root, "batch_label");
    CHECK(name && ax_pickle_kind_of(name) == AX_PICKLE_STRING && ax_pickle_length(name) == 7,
          "batch_label");
    ax_pickle_free(p);
}

static void test_meta(void)
{
    ax_pickle *p = NULL;
    const ax_pickle_value *root = NULL;
    ax_status status = ax_pickle_parse("meta", meta_py3, sizeof meta_py3, &p, &root);
    CHECK(status == AX_STATUS_OK, "meta refused: %s", ax_error_message());
    if (status != AX_STATUS_OK)
        return;
    ax_pickle_array mean;
    CHECK(ax_pickle_array_of(ax_pickle_get(root, "data_mean"), &mean) && mean.kind == 'f' &&
              mean.item_bytes == 4 && mean.dims == 2 && mean.shape[0] == 6 && mean.shape[1] == 1,
          "data_mean is float32 (6, 1)");
    if (mean.data) {
        float values[6];
        memcpy(values, mean.data, sizeof values);
        for (int i = 0; i < 6; i++)
            CHECK(values[i] == (float)i, "data_mean[%d] = %g", i, (double)values[i]);
    }
    int64_t vis = 0;
    CHECK(ax_pickle_int(ax_pickle_get(root, "num_vis"), &vis) && vis == 12, "num_vis 12");
    ax_pickle_free(p);
}

static void refused(const char *what, const unsigned char *bytes, size_t size, const char *words)
{
    ax_pickle *p = NULL;
    const ax_pickle_value *root = NULL;
    ax_status status = ax_pickle_parse(what, bytes, size, &p, &root);
    CHECK(status == AX_STATUS_BAD_FILE && !p && !root && strstr(ax_error_message(), words),
          "%s: expected a refusal saying '%s', got status %d: %s", what, words, (int)status,
          status == AX_STATUS_OK ? "accepted" : ax_error_message());
}

static void test_writer(void)
{
    ax_pickle_writer w;
    ax_pickle_write_start(&w);
    ax_pickle_write_dict_begin(&w);
    ax_pickle_write_string(&w, "data");
    ax_pickle_write_list_begin(&w);
    unsigned char big[300];
    for (int i = 0; i < 300; i++)
        big[i] = (unsigned char)(i * 7);
    ax_pickle_write_bytes(&w, big, 3);
    ax_pickle_write_bytes(&w, big, 300);
    ax_pickle_write_list_end(&w);
    ax_pickle_write_string(&w, "mean");
    const float mean[6] = {0.5f, 1, 2, 3, 4, 255};
    ax_pickle_write_array(&w, 'f', 4, 2, (const int64_t[]){6, 1}, mean);
    ax_pickle_write_string(&w, "n");
    ax_pickle_write_int(&w, -70000);
    ax_pickle_write_dict_end(&w);
    ax_pickle_write_end(&w);
    CHECK(!w.out_of_memory, "writer memory");
    ax_pickle *p = NULL;
    const ax_pickle_value *root = NULL;
    ax_status status = ax_pickle_parse("written", w.data, w.length, &p, &root);
    CHECK(status == AX_STATUS_OK, "written pickle refused: %s", ax_error_message());
    if (status == AX_STATUS_OK) {
        const ax_pickle_value *data = ax_pickle_get(root, "data");
        const ax_pickle_value *second = data ? ax_pickle_item(data, 1) : NULL;
        CHECK(second && ax_pickle_length(second) == 300 &&
                  memcmp(ax_pickle_data(second), big, 300) == 0, "300 bytes back");
        ax_pickle_array a;
        CHECK(ax_pickle_array_of(ax_pickle_get(root, "mean"), &a) && a.count == 6 &&
                  memcmp(a.data, mean, sizeof mean) == 0, "the array back");
        int64_t n = 0;
        CHECK(ax_pickle_int(ax_pickle_get(root, "n"), &n) && n == -70000, "n back");
        ax_pickle_free(p);
    }
    /* Every proper prefix is refused (and never read past). */
    for (size_t cut = 0; cut < w.length; cut++) {
        unsigned char *copy = malloc(cut ? cut : 1);
        memcpy(copy, w.data, cut);
        p = NULL;
        status = ax_pickle_parse("cut", copy, cut, &p, &root);
        CHECK(status == AX_STATUS_BAD_FILE && !p, "a pickle cut at %zu bytes was accepted", cut);
        ax_pickle_free(p);
        free(copy);
    }
    ax_pickle_write_free(&w);
}

/* The pickle's root is b'' (a bytes value of length 0, data not NULL). */
static void empty_bytes(const char *what, const unsigned char *bytes, size_t size)
{
    ax_pickle *p = NULL;
    const ax_pickle_value *root = NULL;
    ax_status status = ax_pickle_parse(what, bytes, size, &p, &root);
    CHECK(status == AX_STATUS_OK, "%s refused: %s", what, ax_error_message());
    if (status != AX_STATUS_OK)
        return;
    CHECK(ax_pickle_kind_of(root) == AX_PICKLE_BYTES && ax_pickle_length(root) == 0 &&
              ax_pickle_data(root) != NULL,
          "%s: kind %d length %zu, expected empty bytes", what, (int)ax_pickle_kind_of(root),
          ax_pickle_length(root));
    ax_pickle_free(p);
}

static void test_empty_bytes(void)
{
    empty_bytes("protocol 2", empty_p2, sizeof empty_p2);
    empty_bytes("protocol 3", empty_p3, sizeof empty_p3);
    empty_bytes("protocol 4", empty_p4, sizeof empty_p4);
    empty_bytes("protocol 5", empty_p5, sizeof empty_p5);
    empty_bytes("Python 2's ''", empty_py2, sizeof empty_py2);
    empty_bytes("builtins.bytes", empty_builtins, sizeof empty_builtins);
    empty_bytes("_codecs.encode('')", empty_encode, sizeof empty_encode);

    /* {'data': [b'', b'ab', b''], 'mean': np.zeros((0, 1), np.float32)}: the
     * array's data is the memoized b'' */
    ax_pickle *p = NULL;
    const ax_pickle_value *root = NULL;
    ax_status status = ax_pickle_parse("empty batch", empty_batch, sizeof empty_batch, &p, &root);
    CHECK(status == AX_STATUS_OK, "empty batch refused: %s", ax_error_message());
    if (status == AX_STATUS_OK) {
        const ax_pickle_value *data = ax_pickle_get(root, "data");
        CHECK(data && ax_pickle_length(data) == 3, "data is a list of 3");
        const size_t lengths[3] = {0, 2, 0};
        for (size_t i = 0; data && i < 3; i++) {
            const ax_pickle_value *item = ax_pickle_item(data, i);
            CHECK(item && ax_pickle_kind_of(item) == AX_PICKLE_BYTES &&
                      ax_pickle_length(item) == lengths[i],
                  "data[%zu] is bytes of length %zu", i, lengths[i]);
        }
        ax_pickle_array mean;
        CHECK(ax_pickle_array_of(ax_pickle_get(root, "mean"), &mean) && mean.kind == 'f' &&
                  mean.dims == 2 && mean.shape[0] == 0 && mean.shape[1] == 1 && mean.count == 0,
              "mean is float32 (0, 1)");
        ax_pickle_free(p);
    }

    refused("bytes(10)", bytes_ten, sizeof bytes_ten, "bytes takes no arguments");
    refused("bytes('ab', 'latin1')", bytes_text, sizeof bytes_text, "bytes takes no arguments");
    refused("bytearray()", bytearray_empty, sizeof bytearray_empty,
            "the global __builtin__.bytearray is not allowed");
    refused("builtins.eval()", builtins_eval, sizeof builtins_eval,
            "the global builtins.eval is not allowed");
    /* The same global with its module renamed is another global. */
    unsigned char renamed[sizeof empty_builtins];
    memcpy(renamed, empty_builtins, sizeof renamed);
    memcpy(renamed + 3, "builtinz", 8);
    refused("builtinz.bytes", renamed, sizeof renamed, "the global builtinz.bytes is not allowed");
    /* A protocol beyond 5 is refused. */
    unsigned char six[sizeof empty_p5];
    memcpy(six, empty_p5, sizeof six);
    six[1] = 6;
    refused("protocol 6", six, sizeof six, "a protocol other than 2 to 5");
}

int main(void)
{
    test_batch();
    test_meta();
    refused("evil", evil, sizeof evil, "the global posix.system is not allowed");
    refused("object array", obj_array, sizeof obj_array, "numpy.dtype of a type other than");
    /* A list that would hold itself: ]q\x00(h\x00e. */
    refused("self", (const unsigned char[]){0x80, 2, ']', 'q', 0, '(', 'h', 0, 'e', '.'}, 10,
            "fetched from the memo");
    refused("empty", (const unsigned char *)"", 0, "without its STOP");
    test_writer();
    test_empty_bytes();
    if (failures == 0)
        printf("test_pickle: all passed\n");
    return failures ? 1 : 0;
}
