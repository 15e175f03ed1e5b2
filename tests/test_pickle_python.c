/* test_pickle_python.c: the restricted pickle reader (src/io/pickle.c) on
 * pickles written by CPython's own pickle module, protocols 2 to 4
 * (tests/data/pickle, from scripts/make_pickle_fixtures.py: the values are
 * spelled out there and again below):
 *  - every scalar kind, integers through each opcode's width up to 64 bits,
 *    short and long text and bytes, tuples of 0 to 4 items and more than 256
 *    memo entries read back to the values Python was given, with a shared
 *    list fetched from the memo being the very value stored;
 *  - NumPy arrays (int16, float64, bool, uint8, int64, Fortran-ordered
 *    float32) with their dtype, shape, order and data;
 *  - what the reader does not take (protocol 4's STACK_GLOBAL and sets,
 *    protocol 5, an integer of 2^70, a complex number, a tuple as a dict key,
 *    big-endian, float16 and 9-dimensional arrays) is refused with
 *    AX_STATUS_BAD_FILE, a message naming the file and why, and the byte
 *    offset of the opcode where pickletools puts it;
 *  - fourteen pickles made byte by byte (stack underflows, a missing MARK, a
 *    memo key never stored, a negative length, a list as a dict key, REDUCE
 *    of a number) refused at their opcode's offset with the reader's reason. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "io/pickle.h"

static int failures = 0;
#define CHECK(condition, ...)                                           \
    do {                                                                \
        if (!(condition)) {                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                 \
            printf(__VA_ARGS__);                                        \
            printf("\n");                                               \
            failures++;                                                 \
        }                                                               \
    } while (0)

/* The whole file tests/data/pickle/NAME, malloc'd; NULL (a failed check) if unreadable. */
static unsigned char *read_fixture(const char *name, size_t *size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/pickle/%s", AXON_TEST_DATA, name);
    FILE *file = fopen(path, "rb");
    unsigned char *bytes = NULL;
    long length = -1;
    if (file && fseek(file, 0, SEEK_END) == 0 && (length = ftell(file)) >= 0 &&
        fseek(file, 0, SEEK_SET) == 0 && (bytes = malloc((size_t)length + 1)) &&
        fread(bytes, 1, (size_t)length, file) == (size_t)length) {
        fclose(file);
        *size = (size_t)length;
        return bytes;
    }
    CHECK(false, "cannot read %s", path);
    free(bytes);
    if (file)
        fclose(file);
    return NULL;
}

static bool int_is(const ax_pickle_value *dict, const char *key, int64_t expected)
{
    int64_t value = 0;
    const ax_pickle_value *v = ax_pickle_get(dict, key);
    bool ok = v && ax_pickle_kind_of(v) == AX_PICKLE_INT && ax_pickle_int(v, &value) && value == expected;
    CHECK(ok, "'%s' is not the integer %lld", key, (long long)expected);
    return ok;
}

static void bytes_are(const ax_pickle_value *dict, const char *key, ax_pickle_kind kind,
                      const unsigned char *expected, size_t length)
{
    const ax_pickle_value *v = ax_pickle_get(dict, key);
    CHECK(v && ax_pickle_kind_of(v) == kind && ax_pickle_length(v) == length &&
              memcmp(ax_pickle_data(v), expected, length) == 0,
          "'%s' is not the %zu %s expected", key, length, kind == AX_PICKLE_BYTES ? "bytes" : "text bytes");
}

static void test_values(const char *name)
{
    size_t size = 0;
    unsigned char *bytes = read_fixture(name, &size);
    if (!bytes)
        return;
    ax_pickle *pickle = NULL;
    const ax_pickle_value *root = NULL;
    ax_status status = ax_pickle_parse(name, bytes, size, &pickle, &root);
    CHECK(status == AX_STATUS_OK && root && ax_pickle_kind_of(root) == AX_PICKLE_DICT,
          "%s: not read: %s", name, ax_error_message());
    if (status != AX_STATUS_OK) {
        free(bytes);
        return;
    }
    CHECK(ax_pickle_length(root) == 21, "%s: %zu items, not 21", name, ax_pickle_length(root));
    const ax_pickle_value *v = ax_pickle_get(root, "none");
    CHECK(v && ax_pickle_kind_of(v) == AX_PICKLE_NONE, "%s: 'none' is not None", name);
    int64_t flag = -1;
    v = ax_pickle_get(root, "yes");
    CHECK(v && ax_pickle_kind_of(v) == AX_PICKLE_BOOL && ax_pickle_int(v, &flag) && flag == 1,
          "%s: 'yes' is not True", name);
    v = ax_pickle_get(root, "no");
    CHECK(v && ax_pickle_kind_of(v) == AX_PICKLE_BOOL && ax_pickle_int(v, &flag) && flag == 0,
          "%s: 'no' is not False", name);
    int_is(root, "small", 7);
    int_is(root, "medium", 1000);
    int_is(root, "negative", -5);
    int_is(root, "big", 70000);
    int_is(root, "long", INT64_C(1) << 40);
    int_is(root, "long_negative", -(INT64_C(1) << 40));
    int_is(root, "max", INT64_MAX);
    int_is(root, "min", INT64_MIN);
    /* pickle.h gives a float's kind, not its number (no reader needs one) */
    CHECK(ax_pickle_get(root, "float") && ax_pickle_kind_of(ax_pickle_get(root, "float")) == AX_PICKLE_FLOAT &&
              ax_pickle_kind_of(ax_pickle_get(root, "huge_float")) == AX_PICKLE_FLOAT,
          "%s: 'float' or 'huge_float' is not a float", name);
    CHECK(!ax_pickle_int(ax_pickle_get(root, "float"), &flag), "%s: a float read as an integer", name);
    CHECK(!ax_pickle_get(root, "absent") && !ax_pickle_get(ax_pickle_get(root, "small"), "small"),
          "%s: a key not there, or a key of a non-dict, was found", name);

    bytes_are(root, "short_text", AX_PICKLE_STRING, (const unsigned char *)"abc", 3);
    unsigned char long_text[300];
    memset(long_text, 'x', sizeof long_text);
    bytes_are(root, "long_text", AX_PICKLE_STRING, long_text, sizeof long_text);
    bytes_are(root, "unicode", AX_PICKLE_STRING, (const unsigned char *)"\xc3\xa9\xe2\x82\xac", 5);
    bytes_are(root, "short_bytes", AX_PICKLE_BYTES, (const unsigned char *)"\x00\xff", 2);
    unsigned char long_bytes[512];
    for (int i = 0; i < 512; i++)
        long_bytes[i] = (unsigned char)(i % 256);
    bytes_are(root, "long_bytes", AX_PICKLE_BYTES, long_bytes, sizeof long_bytes);

    const ax_pickle_value *tuples = ax_pickle_get(root, "tuples");
    CHECK(tuples && ax_pickle_kind_of(tuples) == AX_PICKLE_TUPLE && ax_pickle_length(tuples) == 5,
          "%s: 'tuples' is not a tuple of 5", name);
    for (size_t n = 0; tuples && n < 5; n++) {
        const ax_pickle_value *t = ax_pickle_item(tuples, n);
        CHECK(t && ax_pickle_kind_of(t) == AX_PICKLE_TUPLE && ax_pickle_length(t) == n,
              "%s: tuples[%zu] does not have %zu items", name, n, n);
        for (size_t i = 0; t && i < n; i++) {
            int64_t item = 0;
            CHECK(ax_pickle_int(ax_pickle_item(t, i), &item) && item == (int64_t)i + 1,
                  "%s: tuples[%zu][%zu] is not %zu", name, n, i, i + 1);
        }
    }
    CHECK(!ax_pickle_item(tuples, 5), "%s: an item past the tuple's end", name);

    const ax_pickle_value *many = ax_pickle_get(root, "many");
    CHECK(many && ax_pickle_kind_of(many) == AX_PICKLE_LIST && ax_pickle_length(many) == 300,
          "%s: 'many' is not a list of 300", name);
    bool all = many != NULL;
    for (size_t i = 0; many && i < 300; i++) {
        int64_t item = -1;
        const ax_pickle_value *inner = ax_pickle_item(many, i);
        all = all && inner && ax_pickle_length(inner) == 1 && ax_pickle_int(ax_pickle_item(inner, 0), &item) &&
              item == (int64_t)i;
    }
    CHECK(all, "%s: many[i] is not [i] for every i", name);
    /* shared[299] again: fetched from the memo (LONG_BINGET), the same value */
    CHECK(many && ax_pickle_get(root, "again") == ax_pickle_item(many, 299),
          "%s: 'again' is not the value stored as many[299]", name);
    /* the keys, in the order Python wrote them */
    const ax_pickle_value *key = ax_pickle_key(root, 0);
    CHECK(key && ax_pickle_length(key) == 4 && memcmp(ax_pickle_data(key), "none", 4) == 0 &&
              ax_pickle_dict_value(root, 0) == ax_pickle_get(root, "none") && !ax_pickle_key(root, 21) &&
              !ax_pickle_dict_value(root, 21),
          "%s: the first key is not 'none', or a key past the end was given", name);
    ax_pickle_free(pickle);
    free(bytes);
}

static const ax_pickle_array *array_is(const ax_pickle_value *dict, const char *key, ax_pickle_array *a,
                                       char kind, int item_bytes, int dims, const int64_t *shape,
                                       bool fortran)
{
    const ax_pickle_value *v = ax_pickle_get(dict, key);
    bool ok = v && ax_pickle_kind_of(v) == AX_PICKLE_ARRAY && ax_pickle_array_of(v, a) && a->kind == kind &&
              a->item_bytes == item_bytes && a->dims == dims && a->fortran == fortran;
    int64_t count = 1;
    for (int d = 0; ok && d < dims; d++) {
        ok = a->shape[d] == shape[d];
        count *= shape[d];
    }
    ok = ok && a->count == count && a->data;
    CHECK(ok, "'%s' is not a %c%d array of the shape expected", key, kind, item_bytes);
    return ok ? a : NULL;
}

static void test_arrays(const char *name)
{
    size_t size = 0;
    unsigned char *bytes = read_fixture(name, &size);
    if (!bytes)
        return;
    ax_pickle *pickle = NULL;
    const ax_pickle_value *root = NULL;
    ax_status status = ax_pickle_parse(name, bytes, size, &pickle, &root);
    CHECK(status == AX_STATUS_OK, "%s: not read: %s", name, ax_error_message());
    if (status != AX_STATUS_OK) {
        free(bytes);
        return;
    }
    ax_pickle_array a;
    if (array_is(root, "int16", &a, 'i', 2, 2, (const int64_t[]){2, 3}, false)) {
        int16_t data[6];
        memcpy(data, a.data, sizeof data);
        for (int i = 0; i < 6; i++)
            CHECK(data[i] == i - 3, "%s: int16[%d] = %d, not %d", name, i, data[i], i - 3);
    }
    if (array_is(root, "float64", &a, 'f', 8, 1, (const int64_t[]){2}, false)) {
        double data[2];
        memcpy(data, a.data, sizeof data);
        CHECK(data[0] == 1.5 && data[1] == -2.0, "%s: float64 is [%g, %g], not [1.5, -2]", name, data[0], data[1]);
    }
    if (array_is(root, "bool", &a, 'b', 1, 1, (const int64_t[]){3}, false))
        CHECK(memcmp(a.data, "\x01\x00\x01", 3) == 0, "%s: bool is not [True, False, True]", name);
    if (array_is(root, "uint8", &a, 'u', 1, 1, (const int64_t[]){2}, false))
        CHECK(a.data[0] == 0 && a.data[1] == 255, "%s: uint8 is not [0, 255]", name);
    if (array_is(root, "int64", &a, 'i', 8, 1, (const int64_t[]){2}, false)) {
        int64_t data[2];
        memcpy(data, a.data, sizeof data);
        CHECK(data[0] == -(INT64_C(1) << 62) && data[1] == (INT64_C(1) << 62), "%s: int64 is not [-2^62, 2^62]", name);
    }
    /* arange(6).reshape(2, 3) in Fortran order: the columns one after another */
    if (array_is(root, "fortran", &a, 'f', 4, 2, (const int64_t[]){2, 3}, true)) {
        float data[6];
        const float columns[6] = {0, 3, 1, 4, 2, 5};
        memcpy(data, a.data, sizeof data);
        CHECK(memcmp(data, columns, sizeof data) == 0, "%s: the Fortran array's data is not column by column", name);
    }
    CHECK(!ax_pickle_array_of(ax_pickle_get(root, "absent"), &a), "%s: an array of nothing", name);
    ax_pickle_free(pickle);
    free(bytes);
}

static void test_refusals(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/pickle/refusals.txt", AXON_TEST_DATA);
    FILE *manifest = fopen(path, "r");
    CHECK(manifest, "cannot read %s", path);
    if (!manifest)
        return;
    char line[512];
    int refusals = 0;
    while (fgets(line, sizeof line, manifest)) {
        char name[128];
        long offset = 0;
        int used = 0;
        if (line[0] == '#' || sscanf(line, "%127s %ld %n", name, &offset, &used) != 2)
            continue;
        char *words = line + used;
        words[strcspn(words, "\n")] = '\0';
        size_t size = 0;
        unsigned char *bytes = read_fixture(name, &size);
        if (!bytes)
            continue;
        ax_pickle *pickle = NULL;
        const ax_pickle_value *root = NULL;
        ax_status status = ax_pickle_parse(name, bytes, size, &pickle, &root);
        const char *message = status == AX_STATUS_OK ? "accepted" : ax_error_message();
        char at[64];
        snprintf(at, sizeof at, " at byte %ld:", offset);
        CHECK(status == AX_STATUS_BAD_FILE && !pickle && !root && strncmp(message, name, strlen(name)) == 0 &&
                  strstr(message, words) && (offset < 0 || strstr(message, at)),
              "%s: expected a refusal naming the file%s and saying '%s', got status %d: %s", name,
              offset < 0 ? "" : at, words, (int)status, message);
        ax_pickle_free(pickle);
        free(bytes);
        refusals++;
    }
    fclose(manifest);
    CHECK(refusals == 9, "%d refusals in the manifest, not 9", refusals);
}

/* Pickles no writer makes, byte by byte: each refused at the opcode (offset
 * after the 2 bytes of PROTO 2) with the reason the reader gives. */
static void test_crafted(void)
{
    static const struct {
        const char *bytes;
        size_t size;
        long offset;
        const char *words;
    } cases[] = {
        {"\x80\x02" "e.", 4, 2, "no MARK before it"},
        {"\x80\x02" "K\x01K\x02.", 7, 6, "STOP with other than one value on the stack"},
        {"\x80\x02" "\x86.", 4, 2, "TUPLE1-3 with too few values on the stack"},
        {"\x80\x02" "K\x01" "a.", 6, 4, "APPEND needs a list and a value"},
        {"\x80\x02" "}K\x01" "s.", 7, 5, "SETITEM needs a dict, a key and a value"},
        {"\x80\x02" "h\x03.", 5, 2, "a memo key never stored"},
        {"\x80\x02" "K\x01R.", 6, 4, "REDUCE needs a callable and its arguments"},
        {"\x80\x02" "K\x01" "b.", 6, 4, "BUILD needs an object and its state"},
        {"\x80\x02" "T\xff\xff\xff\xff.", 8, 2, "a negative length"},
        {"\x80\x02" "q\x00.", 5, 2, "nothing on the stack to remember"},
        {"\x80\x02" "(K\x01" "e.", 7, 5, "no list or dict below its MARK"},
        {"\x80\x02" "}(K\x01u.", 8, 6, "SETITEMS with a key but no value"},
        {"\x80\x02" "}(]K\x01u.", 9, 7, "a dict key that is not a string or an integer"},
        {"\x80\x02" "K\x01K\x02R.", 8, 6, "REDUCE of something other than an allowed global"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ax_pickle *pickle = NULL;
        const ax_pickle_value *root = NULL;
        ax_status status = ax_pickle_parse("crafted", (const unsigned char *)cases[i].bytes, cases[i].size,
                                           &pickle, &root);
        const char *message = status == AX_STATUS_OK ? "accepted" : ax_error_message();
        char at[64];
        snprintf(at, sizeof at, "crafted: pickle opcode 0x%02x at byte %ld: %s",
                 (unsigned char)cases[i].bytes[cases[i].offset], cases[i].offset, cases[i].words);
        CHECK(status == AX_STATUS_BAD_FILE && !pickle && !root && strncmp(message, at, strlen(at)) == 0,
              "case %zu: expected '%s', got status %d: %s", i, at, (int)status, message);
        ax_pickle_free(pickle);
    }
}

int main(void)
{
    test_values("values_p2.pkl");
    test_values("values_p3.pkl");
    test_values("values_p4.pkl");
    test_arrays("arrays_p2.pkl");
    test_arrays("arrays_p3.pkl");
    test_refusals();
    test_crafted();
    if (failures == 0)
        printf("test_pickle_python: all passed\n");
    return failures ? 1 : 0;
}
