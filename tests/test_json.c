/* test_json.c: the strict JSON parser of src/io/json.c. Proves that valid
 * JSON (escapes, surrogate pairs, numbers at the int64 limits, nesting to the
 * limit) is read exactly, that each kind of invalid input is refused with the
 * byte offset where it goes wrong, and that strings written by the writer
 * parse back to themselves. Every accessor takes NULL (an absent member)
 * and answers as for a value of another type. */
#include <math.h>
#include <string.h>

#include "io/json.h"
#include "test_util.h"

/* Parses a NUL-terminated text (offsets from 0); NULL and a message on failure. */
static ax_json *parse(const char *text)
{
    ax_json *root = NULL;
    if (ax_json_parse(text, strlen(text), 0, &root) != AX_STATUS_OK)
        return NULL;
    return root;
}

/* Checks that text is refused with a message containing each of the texts. */
static void check_refused(const char *text, const char *reason, const char *where, int line)
{
    ax_json *root = (ax_json *)1;
    ax_status status = ax_json_parse(text, strlen(text), 0, &root);
    if (status != AX_STATUS_BAD_FILE || root != NULL) {
        fprintf(stderr, "%s:%d: \"%s\" was accepted\n", __FILE__, line, text);
        test_failures++;
        if (status == AX_STATUS_OK)
            ax_json_free(root);
        return;
    }
    if (!strstr(ax_error_message(), reason) || !strstr(ax_error_message(), where)) {
        fprintf(stderr, "%s:%d: \"%s\": message \"%s\" lacks \"%s\" or \"%s\"\n", __FILE__, line,
                text, ax_error_message(), reason, where);
        test_failures++;
    }
}
#define REFUSED(text, reason, where) check_refused(text, reason, where, __LINE__)

static void test_scalars(void)
{
    int64_t i;
    double d;
    bool b;
    ax_json *root = parse(" [0, -0, 42, -17, 9223372036854775807, -9223372036854775808,"
                          " 9223372036854775808, 1.5, -2.5e-3, 1E2, 0e0, true, false, null] ");
    CHECK(root && ax_json_type_of(root) == AX_JSON_ARRAY && ax_json_length(root) == 14);
    if (!root)
        return;
    CHECK(ax_json_int(ax_json_array_get(root, 0), &i) && i == 0);
    CHECK(ax_json_int(ax_json_array_get(root, 1), &i) && i == 0);
    CHECK(ax_json_int(ax_json_array_get(root, 2), &i) && i == 42);
    CHECK(ax_json_int(ax_json_array_get(root, 3), &i) && i == -17);
    CHECK(ax_json_int(ax_json_array_get(root, 4), &i) && i == INT64_MAX);
    CHECK(ax_json_int(ax_json_array_get(root, 5), &i) && i == INT64_MIN);
    /* One past INT64_MAX is still a number, just not an integer. */
    CHECK(ax_json_type_of(ax_json_array_get(root, 6)) == AX_JSON_DOUBLE);
    CHECK(!ax_json_int(ax_json_array_get(root, 6), &i));
    CHECK(ax_json_number(ax_json_array_get(root, 6), &d) && d == 9223372036854775808.0);
    CHECK(ax_json_type_of(ax_json_array_get(root, 7)) == AX_JSON_DOUBLE);
    CHECK(ax_json_number(ax_json_array_get(root, 7), &d) && d == 1.5);
    CHECK(ax_json_number(ax_json_array_get(root, 8), &d) && d == -2.5e-3);
    /* An exponent makes a double even when the value is integral. */
    CHECK(ax_json_type_of(ax_json_array_get(root, 9)) == AX_JSON_DOUBLE);
    CHECK(ax_json_number(ax_json_array_get(root, 9), &d) && d == 100.0);
    CHECK(ax_json_number(ax_json_array_get(root, 10), &d) && d == 0.0);
    CHECK(ax_json_number(ax_json_array_get(root, 2), &d) && d == 42.0);
    CHECK(ax_json_bool(ax_json_array_get(root, 11), &b) && b);
    CHECK(ax_json_bool(ax_json_array_get(root, 12), &b) && !b);
    CHECK(ax_json_type_of(ax_json_array_get(root, 13)) == AX_JSON_NULL);
    CHECK(!ax_json_bool(ax_json_array_get(root, 13), &b));
    CHECK(ax_json_array_get(root, 14) == NULL);
    /* Offsets point at each value's first byte. */
    CHECK(ax_json_offset(root) == 1);
    CHECK(ax_json_offset(ax_json_array_get(root, 1)) == 5);
    ax_json_free(root);

    root = parse("1e-400"); /* underflow to zero is a value, not an error */
    CHECK(root && ax_json_number(root, &d) && d == 0.0);
    ax_json_free(root);
}

static void test_strings(void)
{
    ax_json *root = parse("[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\", \"\\u00e9\\u20AC\", \"\\ud83d\\ude00\","
                          " \"a\\u0000b\", \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\", \"\"]");
    CHECK(root != NULL);
    if (!root)
        return;
    const ax_json *s = ax_json_array_get(root, 0);
    CHECK(strcmp(ax_json_string(s), "\"\\/\b\f\n\r\t") == 0 && ax_json_string_length(s) == 8);
    CHECK(strcmp(ax_json_string(ax_json_array_get(root, 1)), "\xc3\xa9\xe2\x82\xac") == 0);
    /* A surrogate pair is one 4-byte character (U+1F600). */
    CHECK(strcmp(ax_json_string(ax_json_array_get(root, 2)), "\xf0\x9f\x98\x80") == 0);
    s = ax_json_array_get(root, 3);
    CHECK(ax_json_string_length(s) == 3 && memcmp(ax_json_string(s), "a\0b", 3) == 0);
    CHECK(strcmp(ax_json_string(ax_json_array_get(root, 4)),
                 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == 0);
    CHECK(strcmp(ax_json_string(ax_json_array_get(root, 5)), "") == 0);
    CHECK(ax_json_string(root) == NULL);
    ax_json_free(root);
}

static void test_objects(void)
{
    ax_json *root = parse("{\"name\": {\"dtype\": \"F32\", \"shape\": [2, 3]}, \"\": [], \"e\": {}}");
    CHECK(root && ax_json_type_of(root) == AX_JSON_OBJECT && ax_json_length(root) == 3);
    if (!root)
        return;
    const ax_json *entry = ax_json_object_get(root, "name");
    CHECK(entry && ax_json_type_of(entry) == AX_JSON_OBJECT);
    CHECK(strcmp(ax_json_string(ax_json_object_get(entry, "dtype")), "F32") == 0);
    const ax_json *shape = ax_json_object_get(entry, "shape");
    int64_t d1 = 0;
    CHECK(ax_json_length(shape) == 2 && ax_json_int(ax_json_array_get(shape, 1), &d1) && d1 == 3);
    CHECK(ax_json_object_get(root, "missing") == NULL);
    CHECK(ax_json_object_get(shape, "name") == NULL); /* not an object */
    CHECK(ax_json_object_get(root, "") && ax_json_length(ax_json_object_get(root, "")) == 0);
    CHECK(strcmp(ax_json_object_key(root, 0), "name") == 0);
    CHECK(strcmp(ax_json_object_key(root, 2), "e") == 0);
    CHECK(ax_json_type_of(ax_json_object_value(root, 2)) == AX_JSON_OBJECT);
    CHECK(ax_json_object_key(root, 3) == NULL && ax_json_object_value(root, 3) == NULL);
    CHECK(ax_json_offset(entry) == 9);
    ax_json_free(root);
}

/* A lookup that found nothing (NULL) reads as a value of another type in
 * every accessor, so chained lookups on untrusted files cannot crash. */
static void test_absent_values(void)
{
    ax_json *root = parse("{\"a\": 1}");
    CHECK(root != NULL);
    const ax_json *absent = ax_json_object_get(root, "b");
    CHECK(absent == NULL);
    int64_t integer = 7;
    double number = 7;
    bool flag = true;
    CHECK(ax_json_type_of(absent) == AX_JSON_NULL);
    CHECK(ax_json_offset(absent) == 0);
    CHECK(ax_json_length(absent) == 0);
    CHECK(ax_json_array_get(absent, 0) == NULL);
    CHECK(ax_json_object_get(absent, "a") == NULL);
    CHECK(ax_json_object_key(absent, 0) == NULL && ax_json_object_key_length(absent, 0) == 0);
    CHECK(ax_json_object_value(absent, 0) == NULL);
    CHECK(ax_json_string(ax_json_object_get(absent, "a")) == NULL);
    CHECK(ax_json_string_length(absent) == 0);
    CHECK(!ax_json_int(absent, &integer) && integer == 7);
    CHECK(!ax_json_number(absent, &number) && number == 7);
    CHECK(!ax_json_bool(absent, &flag) && flag);
    CHECK(ax_json_int(ax_json_object_get(root, "a"), &integer) && integer == 1);
    ax_json_free(root);
}

static void test_nesting_limit(void)
{
    char deep[4 * AX_JSON_MAX_DEPTH];
    for (int n = AX_JSON_MAX_DEPTH; n <= AX_JSON_MAX_DEPTH + 1; n++) {
        memset(deep, '[', (size_t)n);
        memset(deep + n, ']', (size_t)n);
        deep[2 * n] = '\0';
        ax_json *root = NULL;
        ax_status status = ax_json_parse(deep, strlen(deep), 0, &root);
        if (n == AX_JSON_MAX_DEPTH) {
            CHECK(status == AX_STATUS_OK && root);
        } else {
            CHECK(status == AX_STATUS_BAD_FILE && !root);
            /* The offending bracket is the 129th, at byte 128. */
            CHECK(strstr(ax_error_message(), "nested deeper than 128 levels at byte 128"));
        }
        ax_json_free(root);
    }
    /* Far deeper input fails the same way rather than exhausting the stack. */
    enum { HUGE_DEPTH = 1000000 };
    char *huge = malloc(HUGE_DEPTH + 1);
    CHECK(huge != NULL);
    if (huge) {
        memset(huge, '[', HUGE_DEPTH);
        huge[HUGE_DEPTH] = '\0';
        REFUSED(huge, "nested deeper", "at byte 128");
        free(huge);
    }
}

static void test_bad_input(void)
{
    REFUSED("", "expected a value, found end of input", "at byte 0");
    REFUSED("   ", "expected a value", "at byte 3");
    REFUSED("{} x", "expected the end of the JSON text, found 'x'", "at byte 3");
    REFUSED("[1,]", "expected a value, found ']'", "at byte 3");
    REFUSED("[1 2]", "expected ',' or ']' in an array, found '2'", "at byte 3");
    REFUSED("[1", "expected ',' or ']'", "found end of input at byte 2");
    REFUSED("{\"a\":1,}", "expected a string key after ','", "at byte 7");
    REFUSED("{\"a\" 1}", "expected ':' after an object key", "at byte 5");
    REFUSED("{a:1}", "expected a string key or '}'", "at byte 1");
    REFUSED("{\"a\":1 \"b\":2}", "expected ',' or '}'", "at byte 7");
    REFUSED("{\"a\":1,\"b\":2,\"a\":3}", "duplicate key \"a\"", "at byte 13");
    REFUSED("[01]", "leading zeros", "at byte 1");
    REFUSED("[-]", "'-' must be followed by a digit", "at byte 1");
    REFUSED("[+1]", "expected a value, found '+'", "at byte 1");
    REFUSED("[.5]", "expected a value, found '.'", "at byte 1");
    REFUSED("[1.]", "'.' in a number must be followed by a digit", "at byte 1");
    REFUSED("[1e]", "exponent", "at byte 1");
    REFUSED("[1e+]", "exponent", "at byte 1");
    REFUSED("[1e999]", "out of the range of a double", "at byte 1");
    REFUSED("[NaN]", "expected a value, found 'N'", "at byte 1");
    REFUSED("[tru]", "expected a value, found 't'", "at byte 1");
    REFUSED("nul", "expected a value", "at byte 0");
    REFUSED("[True]", "expected a value, found 'T'", "at byte 1");
    REFUSED("[\"abc]", "unterminated string", "at byte 1");
    REFUSED("[\"abc\\\"]", "unterminated string", "at byte 1");
    REFUSED("[\"a\tb\"]", "control character 0x09", "at byte 3");
    REFUSED("[\"a\nb\"]", "control character 0x0a", "at byte 3");
    REFUSED("[\"\\x41\"]", "invalid escape '\\' followed by 'x'", "at byte 2");
    REFUSED("[\"\\u12G4\"]", "4 hex digits", "at byte 2");
    REFUSED("[\"\\u12\"]", "4 hex digits", "at byte 2");
    REFUSED("[\"ab\\ud800\"]", "high surrogate \\ud800 not followed by a low surrogate",
            "at byte 4");
    REFUSED("[\"\\ud800\\u0041\"]", "not followed by a low surrogate", "at byte 2");
    REFUSED("[\"\\udc00\"]", "unpaired low surrogate \\udc00", "at byte 2");
    REFUSED("[\"\xc3\"]", "invalid UTF-8", "at byte 2");          /* truncated sequence */
    REFUSED("[\"\xc0\xaf\"]", "invalid UTF-8", "at byte 2");      /* overlong '/' */
    REFUSED("[\"\xed\xa0\x80\"]", "invalid UTF-8", "at byte 2");  /* encoded surrogate */
    REFUSED("[\"\xf4\x90\x80\x80\"]", "invalid UTF-8", "at byte 2"); /* above U+10FFFF */
    REFUSED("[\"\xff\"]", "invalid UTF-8", "at byte 2");
    REFUSED("\xef\xbb\xbf{}", "expected a value, found byte 0xef", "at byte 0"); /* BOM */

    /* The length bounds the text: nothing after it is read, NUL or not. */
    ax_json *root = NULL;
    CHECK_OK(ax_json_parse("[1]garbage", 3, 0, &root));
    CHECK(root && ax_json_length(root) == 1);
    ax_json_free(root);
    root = NULL;
    CHECK_FAILS(ax_json_parse("[1]\0", 4, 0, &root), AX_STATUS_BAD_FILE,
                "found byte 0x00 at byte 3");
    CHECK(root == NULL);
    CHECK_FAILS(ax_json_parse("[\"ab", 3, 0, &root), AX_STATUS_BAD_FILE, "unterminated string");

    /* first_offset shifts every reported position, as for a safetensors header at byte 8. */
    CHECK_FAILS(ax_json_parse("{\"a\" 1}", 7, 8, &root), AX_STATUS_BAD_FILE, "at byte 13");
    CHECK_OK(ax_json_parse("{\"a\": 1}", 8, 8, &root));
    CHECK(root && ax_json_offset(root) == 8 && ax_json_offset(ax_json_object_get(root, "a")) == 14);
    ax_json_free(root);
}

static void test_utf8_validation(void)
{
    CHECK(ax_json_utf8_valid("", 0));
    CHECK(ax_json_utf8_valid("plain", 5));
    CHECK(ax_json_utf8_valid("\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf",
                             18)); /* the first and last of each length */
    CHECK(!ax_json_utf8_valid("\x80", 1));
    CHECK(!ax_json_utf8_valid("\xc1\xbf", 2));
    CHECK(!ax_json_utf8_valid("\xe0\x9f\xbf", 3));
    CHECK(!ax_json_utf8_valid("\xed\xbf\xbf", 3));
    CHECK(!ax_json_utf8_valid("\xf0\x8f\xbf\xbf", 4));
    CHECK(!ax_json_utf8_valid("\xe2\x82", 2)); /* cut short by the length */
    CHECK(!ax_json_utf8_valid("\xf5\x80\x80\x80", 4));
}

/* Every string the writer emits parses back to the same bytes. */
static void test_writer_round_trip(void)
{
    static const char *const values[] = {
        "", "plain", "quote \" backslash \\ slash /", "\b\f\n\r\t", "\x01\x1f\x7f",
        "caf\xc3\xa9 \xf0\x9f\x98\x80", "{\"json\": [1, 2]}",
    };
    enum { COUNT = sizeof values / sizeof values[0] };
    ax_json_writer writer = {0};
    ax_json_writer_append(&writer, "{");
    for (int i = 0; i < COUNT; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        ax_json_writer_append(&writer, i ? "," : "");
        ax_json_writer_append_string(&writer, key);
        ax_json_writer_append(&writer, ":");
        ax_json_writer_append_string(&writer, values[i]);
    }
    ax_json_writer_append(&writer, ",\"n\":[");
    ax_json_writer_append_int(&writer, INT64_MIN);
    ax_json_writer_append(&writer, ",");
    ax_json_writer_append_int(&writer, INT64_MAX);
    ax_json_writer_append(&writer, "]}");
    CHECK(!writer.out_of_memory);
    /* Control characters are escaped: the text has none left. */
    for (size_t i = 0; i < writer.length; i++)
        CHECK((unsigned char)writer.text[i] >= 0x20);
    CHECK(strstr(writer.text, "\"\\b\\f\\n\\r\\t\"") && strstr(writer.text, "\\u0001\\u001f"));

    ax_json *root = NULL;
    CHECK_OK(ax_json_parse(writer.text, writer.length, 0, &root));
    if (root) {
        for (int i = 0; i < COUNT; i++) {
            const char *back = ax_json_string(ax_json_object_value(root, (size_t)i));
            CHECK(back && strcmp(back, values[i]) == 0);
        }
        const ax_json *n = ax_json_object_get(root, "n");
        int64_t low = 0, high = 0;
        CHECK(ax_json_int(ax_json_array_get(n, 0), &low) && low == INT64_MIN);
        CHECK(ax_json_int(ax_json_array_get(n, 1), &high) && high == INT64_MAX);
    }
    ax_json_free(root);
    ax_json_writer_free(&writer);
    CHECK(writer.text == NULL && writer.length == 0);
    ax_json_free(NULL);
}

int main(void)
{
    test_scalars();
    test_strings();
    test_objects();
    test_absent_values();
    test_nesting_limit();
    test_bad_input();
    test_utf8_validation();
    test_writer_round_trip();
    return test_finish("test_json");
}
