/* test_safetensors.c: the safetensors reader and writer of src/io/.
 * Proves: F32 and F64 tensors of rank 0 to 4 and metadata survive a round
 * trip byte for byte; a file written by NumPy by hand from the specification
 * (tests/data/numpy_written.safetensors, made by
 * scripts/make_safetensors_fixture.py) reads with the right values; each kind
 * of corruption is refused with a message naming the file and the fault; a
 * failed write (missing directory, file size limit, rename onto a directory,
 * bad arguments) leaves no partial file and an existing file intact; and,
 * where Python and NumPy are installed, scripts/read_axon_model.py reads what
 * the writer wrote. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/json.h"
#include "io/safetensors.h"
#include "test_util.h"

static char directory[256];

static const char *in_directory(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", directory, name);
    return path;
}

static void write_bytes(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK(fwrite(bytes, 1, n, f) == n);
    CHECK(fclose(f) == 0);
}

/* The whole file, malloc'ed; NULL if it cannot be read. */
static unsigned char *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *bytes = NULL;
    size_t used = 0, capacity = 0, got;
    do {
        if (used == capacity) {
            capacity = capacity ? capacity * 2 : 4096;
            unsigned char *bigger = realloc(bytes, capacity);
            if (!bigger) {
                free(bytes);
                fclose(f);
                return NULL;
            }
            bytes = bigger;
        }
        got = fread(bytes + used, 1, capacity - used, f);
        used += got;
    } while (got > 0);
    fclose(f);
    *n = used;
    return bytes;
}

/* Number of entries of the test directory whose name starts with prefix. */
static int count_entries(const char *prefix)
{
    DIR *dir = opendir(directory);
    int count = 0;
    if (!dir)
        return -1;
    for (struct dirent *entry; (entry = readdir(dir));)
        if (strncmp(entry->d_name, prefix, strlen(prefix)) == 0)
            count++;
    closedir(dir);
    return count;
}

/* A file image: 8-byte length, header as given (not padded), data. */
static unsigned char *make_image(const char *header, const void *data, size_t data_bytes,
                                 size_t *n)
{
    size_t length = strlen(header);
    *n = 8 + length + data_bytes;
    unsigned char *image = malloc(*n);
    if (!image)
        return NULL;
    for (int b = 0; b < 8; b++)
        image[b] = (unsigned char)((uint64_t)length >> (8 * b));
    memcpy(image + 8, header, length);
    if (data_bytes)
        memcpy(image + 8 + length, data, data_bytes);
    return image;
}

/* Writes the image as name and checks the reader refuses it with status and
 * a message naming the file and containing text. */
static void check_refused(const char *name, const unsigned char *image, size_t n,
                          ax_status status, const char *text, int line)
{
    char path[512];
    snprintf(path, sizeof path, "%s", in_directory(name));
    write_bytes(path, image, n);
    ax_safetensors_file *file = (ax_safetensors_file *)1;
    ax_status got = ax_safetensors_read(path, &file);
    if (got != status || file != NULL) {
        fprintf(stderr, "%s:%d: %s: expected %s, got %s (%s)\n", __FILE__, line, name,
                ax_status_name(status), ax_status_name(got), ax_error_message());
        test_failures++;
        if (got == AX_STATUS_OK)
            ax_safetensors_free(file);
    } else if (!strstr(ax_error_message(), text) || !strstr(ax_error_message(), path)) {
        fprintf(stderr, "%s:%d: %s: message \"%s\" lacks \"%s\" or the path\n", __FILE__, line,
                name, ax_error_message(), text);
        test_failures++;
    }
    unlink(path);
}
#define REFUSED(name, image, n, status, text) check_refused(name, image, n, status, text, __LINE__)

/* 48 bytes of data for the header variants: a (2, 3) F32 then a (3) F64. */
static unsigned char variant_data[64];

/* Checks a header with the 48 data bytes (plus extra) is refused. */
static void check_header_refused(const char *name, const char *header, size_t data_bytes,
                                 ax_status status, const char *text, int line)
{
    size_t n;
    unsigned char *image = make_image(header, variant_data, data_bytes, &n);
    CHECK(image != NULL);
    if (image)
        check_refused(name, image, n, status, text, line);
    free(image);
}
#define HEADER_REFUSED(name, header, status, text) \
    check_header_refused(name, header, 48, status, text, __LINE__)

#define A_ENTRY "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}"
#define B_ENTRY "\"b\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[24,48]}"

/* ------------------------------------------------------------ round trip */

static void test_round_trip(void)
{
    float weight[3][4], bias[3], odd[5];
    double scalar = -3.25, cube[2][2][2][2], column[7];
    for (int i = 0; i < 12; i++)
        weight[i / 4][i % 4] = (float)i * 0.37f - 1.0f;
    for (int i = 0; i < 3; i++)
        bias[i] = (float)(i + 1) / 3.0f;
    for (int i = 0; i < 5; i++)
        odd[i] = -(float)i;
    for (int i = 0; i < 16; i++)
        (&cube[0][0][0][0])[i] = 1.0 / (i + 1);
    for (int i = 0; i < 7; i++)
        column[i] = i * 1e300;
    const ax_safetensors_tensor tensors[] = {
        {"layers.0.weight", AX_SAFETENSORS_F32, 2, {3, 4}, weight},
        {"layers.0.bias", AX_SAFETENSORS_F32, 1, {3}, bias},
        {"odd", AX_SAFETENSORS_F32, 1, {5}, odd}, /* 20 bytes: would misalign an F64 after it */
        {"scalar", AX_SAFETENSORS_F64, 0, {0}, &scalar},
        {"cube", AX_SAFETENSORS_F64, 4, {2, 2, 2, 2}, cube},
        {"empty", AX_SAFETENSORS_F32, 2, {0, 5}, NULL},
        {"column", AX_SAFETENSORS_F64, 2, {7, 1}, column},
        {"caf\xc3\xa9 \"quoted\"", AX_SAFETENSORS_F32, 1, {1}, bias},
    };
    enum { COUNT = sizeof tensors / sizeof tensors[0] };
    const char *keys[] = {"format", "architecture", "odd \"key\"\n"};
    const char *values[] = {"pt", "784-128:relu-10:softmax", "tab\there \\ \xf0\x9f\x98\x80"};
    const char *path = in_directory("round_trip.safetensors");

    CHECK_OK(ax_safetensors_write(path, tensors, COUNT, keys, values, 3));
    CHECK(count_entries("round_trip.safetensors.tmp") == 0);

    ax_safetensors_file *file = NULL;
    CHECK_OK(ax_safetensors_read(path, &file));
    if (!file)
        return;
    CHECK(strcmp(ax_safetensors_path(file), path) == 0);
    CHECK(ax_safetensors_count(file) == COUNT);
    for (int i = 0; i < COUNT && i < ax_safetensors_count(file); i++) {
        const ax_safetensors_tensor *want = &tensors[i];
        const ax_safetensors_tensor *got = ax_safetensors_tensor_at(file, i);
        CHECK(strcmp(got->name, want->name) == 0); /* header keeps the caller's order */
        CHECK(got->dtype == want->dtype && got->rank == want->rank);
        for (int d = 0; d < want->rank; d++)
            CHECK(got->shape[d] == want->shape[d]);
        CHECK(ax_safetensors_tensor_bytes(got) == ax_safetensors_tensor_bytes(want));
        CHECK(ax_safetensors_tensor_elements(got) == ax_safetensors_tensor_elements(want));
        if (want->data)
            CHECK(memcmp(got->data, want->data, ax_safetensors_tensor_bytes(want)) == 0);
        CHECK((uintptr_t)got->data % ax_safetensors_dtype_size(got->dtype) == 0);
        CHECK(ax_safetensors_find(file, want->name) == got);
    }
    CHECK(ax_safetensors_tensor_elements(ax_safetensors_find(file, "scalar")) == 1);
    CHECK(*(const double *)ax_safetensors_find(file, "scalar")->data == -3.25);
    CHECK(ax_safetensors_tensor_bytes(ax_safetensors_find(file, "empty")) == 0);
    CHECK(ax_safetensors_find(file, "missing") == NULL);
    CHECK(ax_safetensors_find(file, "__metadata__") == NULL);
    CHECK(ax_safetensors_tensor_at(file, -1) == NULL && ax_safetensors_tensor_at(file, COUNT) == NULL);
    CHECK(ax_safetensors_metadata_count(file) == 3);
    for (int i = 0; i < 3; i++) {
        CHECK(strcmp(ax_safetensors_metadata_key(file, i), keys[i]) == 0);
        CHECK(strcmp(ax_safetensors_metadata(file, keys[i]), values[i]) == 0);
    }
    CHECK(ax_safetensors_metadata(file, "missing") == NULL);
    CHECK(ax_safetensors_metadata_key(file, 3) == NULL);
    ax_safetensors_free(file);

    /* The raw file: header padded with spaces to a multiple of 8, and F64
     * data first, so every tensor's offset is a multiple of its value size. */
    size_t n = 0;
    unsigned char *raw = read_bytes(path, &n);
    CHECK(raw != NULL && n > 8);
    if (!raw)
        return;
    uint64_t length = 0;
    for (int b = 0; b < 8; b++)
        length |= (uint64_t)raw[b] << (8 * b);
    CHECK(length % 8 == 0 && 8 + length <= n);
    size_t last = 8 + length - 1;
    while (last > 8 && raw[last] == ' ')
        last--;
    CHECK(raw[8] == '{' && raw[last] == '}' && 8 + length - 1 - last < 8);
    ax_json *header = NULL;
    CHECK_OK(ax_json_parse((const char *)raw + 8, length, 8, &header));
    if (header) {
        int64_t begin = -1;
        const ax_json *offsets = ax_json_object_get(ax_json_object_get(header, "scalar"),
                                                    "data_offsets");
        CHECK(offsets && ax_json_int(ax_json_array_get(offsets, 0), &begin) && begin == 0);
        for (int i = 0; i < COUNT; i++) {
            offsets = ax_json_object_get(ax_json_object_get(header, tensors[i].name), "data_offsets");
            CHECK(offsets && ax_json_int(ax_json_array_get(offsets, 0), &begin) &&
                  begin % (int64_t)ax_safetensors_dtype_size(tensors[i].dtype) == 0);
        }
    }
    ax_json_free(header);
    free(raw);

    /* Overwriting replaces the contents; an empty file (no tensors, no
     * metadata) is valid too. */
    CHECK_OK(ax_safetensors_write(path, NULL, 0, NULL, NULL, 0));
    CHECK_OK(ax_safetensors_read(path, &file));
    if (file) {
        CHECK(ax_safetensors_count(file) == 0 && ax_safetensors_metadata_count(file) == 0);
        ax_safetensors_free(file);
    }
    raw = read_bytes(path, &n);
    CHECK(raw && n == 16 && memcmp(raw + 8, "{}      ", 8) == 0);
    free(raw);
    CHECK(count_entries("round_trip.safetensors") == 1);
    unlink(path);
    ax_safetensors_free(NULL);
}

/* ------------------------------------------------- a file NumPy wrote */

static void test_numpy_fixture(void)
{
    ax_safetensors_file *file = NULL;
    CHECK_OK(ax_safetensors_read(AXON_TEST_DATA "/numpy_written.safetensors", &file));
    if (!file)
        return;
    CHECK(ax_safetensors_count(file) == 2);
    const ax_safetensors_tensor *a = ax_safetensors_find(file, "a");
    const ax_safetensors_tensor *b = ax_safetensors_find(file, "b");
    CHECK(a && a->dtype == AX_SAFETENSORS_F32 && a->rank == 2 && a->shape[0] == 2 &&
          a->shape[1] == 3);
    CHECK(b && b->dtype == AX_SAFETENSORS_F64 && b->rank == 1 && b->shape[0] == 3);
    if (a && b) {
        const float *av = a->data;
        for (int i = 0; i < 6; i++)
            CHECK(av[i] == (float)i);
        const double *bv = b->data;
        CHECK(bv[0] == 0.5 && bv[1] == -1.0 && bv[2] == 2.0);
    }
    CHECK(ax_safetensors_metadata_count(file) == 1);
    CHECK(ax_safetensors_metadata(file, "format") && strcmp(ax_safetensors_metadata(file, "format"), "pt") == 0);
    ax_safetensors_free(file);
}

/* A legal file the writer would not produce: header length not a multiple
 * of 8 and an F64 at offset 12. The reader still hands out aligned data. */
static void test_unaligned_offsets(void)
{
    float three[3] = {1.5f, 2.5f, 3.5f};
    double one = 6.25;
    unsigned char data[20];
    memcpy(data, three, 12);
    memcpy(data + 12, &one, 8);
    size_t n;
    unsigned char *image = make_image(
        "{\"o\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},"
        "\"d\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[12,20]}}",
        data, sizeof data, &n);
    const char *path = in_directory("unaligned.safetensors");
    CHECK(image != NULL);
    if (!image)
        return;
    CHECK((n - 20 - 8) % 8 != 0);
    write_bytes(path, image, n);
    free(image);
    ax_safetensors_file *file = NULL;
    CHECK_OK(ax_safetensors_read(path, &file));
    if (file) {
        const ax_safetensors_tensor *o = ax_safetensors_find(file, "o");
        const ax_safetensors_tensor *d = ax_safetensors_find(file, "d");
        CHECK(o && memcmp(o->data, three, 12) == 0 && (uintptr_t)o->data % 4 == 0);
        CHECK(d && d->rank == 0 && *(const double *)d->data == 6.25 && (uintptr_t)d->data % 8 == 0);
        ax_safetensors_free(file);
    }
    unlink(path);
}

/* ------------------------------------------------------------ corruption */

static void test_corrupt_files(void)
{
    size_t n = 0;
    unsigned char *fixture = read_bytes(AXON_TEST_DATA "/numpy_written.safetensors", &n);
    CHECK(fixture != NULL && n == 8 + 144 + 48);
    if (!fixture || n != 8 + 144 + 48) {
        free(fixture);
        return;
    }
    memcpy(variant_data, fixture + 8 + 144, 48);
    unsigned char *image = malloc(n + 16);
    CHECK(image != NULL);
    if (!image) {
        free(fixture);
        return;
    }

    /* Missing, not a regular file. */
    ax_safetensors_file *file = (ax_safetensors_file *)1;
    const char *missing = in_directory("no_such_file.safetensors");
    CHECK_FAILS(ax_safetensors_read(missing, &file), AX_STATUS_BAD_FILE, "No such file or directory");
    CHECK(file == NULL && strstr(ax_error_message(), missing));
    CHECK_FAILS(ax_safetensors_read(directory, &file), AX_STATUS_BAD_FILE, "not a regular file");

    /* Truncated: before the length, inside the header, inside the data. */
    REFUSED("empty.safetensors", fixture, 0, AX_STATUS_BAD_FILE,
            "the file is 0 bytes, too short for the 8-byte header length");
    REFUSED("cut5.safetensors", fixture, 5, AX_STATUS_BAD_FILE, "the file is 5 bytes, too short");
    REFUSED("cut7.safetensors", fixture, 7, AX_STATUS_BAD_FILE, "too short");
    REFUSED("cut8.safetensors", fixture, 8, AX_STATUS_BAD_FILE,
            "truncated: the header length is 144 bytes but only 0 bytes follow it");
    REFUSED("cut40.safetensors", fixture, 40, AX_STATUS_BAD_FILE,
            "truncated: the header length is 144 bytes but only 32 bytes follow it");
    REFUSED("cut151.safetensors", fixture, 151, AX_STATUS_BAD_FILE, "only 143 bytes follow it");
    REFUSED("cut152.safetensors", fixture, 152, AX_STATUS_BAD_FILE,
            "tensor \"a\": data_offsets [0, 24] reach past the end of the 0-byte data buffer "
            "(is the file truncated?)");
    REFUSED("cut182.safetensors", fixture, 182, AX_STATUS_BAD_FILE,
            "tensor \"b\": data_offsets [24, 48] reach past the end of the 30-byte data buffer");
    /* one byte short: the bound itself, not the tiling check behind it */
    REFUSED("cut199.safetensors", fixture, 199, AX_STATUS_BAD_FILE,
            "tensor \"b\": data_offsets [24, 48] reach past the end of the 47-byte data buffer");
    /* The intact fixture passes through the same helper's file writing. */
    write_bytes(in_directory("intact.safetensors"), fixture, n);
    CHECK_OK(ax_safetensors_read(in_directory("intact.safetensors"), &file));
    ax_safetensors_free(file);

    /* Header length altered. */
    memcpy(image, fixture, n);
    image[0] = 145; /* swallows the first data byte, 0x00 */
    REFUSED("length_plus1.safetensors", image, n, AX_STATUS_BAD_FILE,
            "header is not valid JSON: expected the end of the JSON text, found byte 0x00 at byte 152");
    image[0] = 142; /* drops the padding space and the final '}' */
    REFUSED("length_minus2.safetensors", image, n, AX_STATUS_BAD_FILE,
            "expected ',' or '}' in an object, found end of input at byte 150");
    image[0] = 143; /* drops only the padding: the data buffer gains a leading byte */
    REFUSED("length_minus1.safetensors", image, n, AX_STATUS_BAD_FILE,
            "1 trailing bytes after the last tensor");
    image[0] = 144;
    image[7] = 0x80; /* the high bit: 2^63 + 144 */
    REFUSED("length_huge.safetensors", image, n, AX_STATUS_BAD_FILE,
            "header length 9223372036854775952 exceeds the limit of 100000000 bytes");
    image[7] = 0;
    image[0] = 0x01, image[1] = 0xe1, image[2] = 0xf5, image[3] = 0x05; /* 100000001 */
    REFUSED("length_limit.safetensors", image, n, AX_STATUS_BAD_FILE,
            "header length 100000001 exceeds the limit");
    image[0] = 0x00; /* exactly 100000000: within the limit, but past the end of the file */
    REFUSED("length_past_end.safetensors", image, n, AX_STATUS_BAD_FILE,
            "truncated: the header length is 100000000 bytes but only 192 bytes follow it");

    /* Every variant below is first shown to be otherwise valid. */
    size_t base_n;
    unsigned char *base = make_image("{\"__metadata__\":{\"format\":\"pt\"}," A_ENTRY "," B_ENTRY "}",
                                     variant_data, 48, &base_n);
    CHECK(base != NULL);
    if (base) {
        write_bytes(in_directory("base.safetensors"), base, base_n);
        CHECK_OK(ax_safetensors_read(in_directory("base.safetensors"), &file));
        ax_safetensors_free(file);
        free(base);
    }

    /* Not JSON, or not the JSON the format wants. */
    HEADER_REFUSED("bad_json.safetensors", "{\"a\":{\"dtype\":\"F32\",}}", AX_STATUS_BAD_FILE,
                   "header is not valid JSON: expected a string key after ',', found '}' at byte 28");
    HEADER_REFUSED("spaces_only.safetensors", "        ", AX_STATUS_BAD_FILE,
                   "expected a value, found end of input at byte 16");
    HEADER_REFUSED("array.safetensors", "[1, 2]", AX_STATUS_BAD_FILE,
                   "the header is a JSON array, not an object");
    HEADER_REFUSED("metadata_array.safetensors", "{\"__metadata__\":[\"pt\"]," A_ENTRY "," B_ENTRY "}",
                   AX_STATUS_BAD_FILE, "__metadata__ is a JSON array, not an object of strings");
    HEADER_REFUSED("metadata_number.safetensors",
                   "{\"__metadata__\":{\"epochs\":10}," A_ENTRY "," B_ENTRY "}", AX_STATUS_BAD_FILE,
                   "__metadata__ value of \"epochs\" is a JSON integer, not a string");
    HEADER_REFUSED("metadata_nul.safetensors",
                   "{\"__metadata__\":{\"k\":\"a\\u0000b\"}," A_ENTRY "," B_ENTRY "}",
                   AX_STATUS_BAD_FILE, "__metadata__ entry \"k\" contains a NUL character");
    HEADER_REFUSED("entry_array.safetensors", "{\"a\":[0,24]," B_ENTRY "}", AX_STATUS_BAD_FILE,
                   "tensor \"a\": the entry is a JSON array, not an object");
    HEADER_REFUSED("no_dtype.safetensors",
                   "{\"a\":{\"shape\":[2,3],\"data_offsets\":[0,24]}," B_ENTRY "}",
                   AX_STATUS_BAD_FILE, "tensor \"a\" has no \"dtype\"");
    HEADER_REFUSED("no_shape.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,24]}," B_ENTRY "}",
                   AX_STATUS_BAD_FILE, "tensor \"a\" has no \"shape\"");
    HEADER_REFUSED("no_offsets.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3]}," B_ENTRY "}", AX_STATUS_BAD_FILE,
                   "tensor \"a\" has no \"data_offsets\"");
    HEADER_REFUSED("dtype_number.safetensors",
                   "{\"a\":{\"dtype\":32,\"shape\":[2,3],\"data_offsets\":[0,24]}," B_ENTRY "}",
                   AX_STATUS_BAD_FILE, "tensor \"a\": \"dtype\" is a JSON integer, not a string");
    HEADER_REFUSED("shape_string.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":\"2,3\",\"data_offsets\":[0,24]}," B_ENTRY "}",
                   AX_STATUS_BAD_FILE, "tensor \"a\": \"shape\" is a JSON string, not an array");
    HEADER_REFUSED("offsets_object.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":{}}," B_ENTRY "}",
                   AX_STATUS_BAD_FILE, "\"data_offsets\" is a JSON object, not an array");
    HEADER_REFUSED("extra_key.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24],\"x\":1},"
                   B_ENTRY "}", AX_STATUS_BAD_FILE, "tensor \"a\": unexpected key \"x\"");
    HEADER_REFUSED("unknown_dtype.safetensors",
                   "{\"a\":{\"dtype\":\"F33\",\"shape\":[2,3],\"data_offsets\":[0,24]}," B_ENTRY "}",
                   AX_STATUS_BAD_FILE, "tensor \"a\": unknown dtype \"F33\"");
    HEADER_REFUSED("f16.safetensors",
                   "{\"a\":{\"dtype\":\"F16\",\"shape\":[4,3],\"data_offsets\":[0,24]}," B_ENTRY "}",
                   AX_STATUS_UNSUPPORTED, "tensor \"a\" has dtype F16; axon reads only F32 and F64");
    HEADER_REFUSED("bf16.safetensors",
                   "{\"a\":{\"dtype\":\"BF16\",\"shape\":[12],\"data_offsets\":[0,24]}," B_ENTRY "}",
                   AX_STATUS_UNSUPPORTED, "has dtype BF16");
    HEADER_REFUSED("rank5.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,2,1,3],\"data_offsets\":[0,24]},"
                   B_ENTRY "}", AX_STATUS_UNSUPPORTED, "tensor \"a\" has rank 5");
    HEADER_REFUSED("negative_dim.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2,-3],\"data_offsets\":[0,24]}," B_ENTRY "}",
                   AX_STATUS_BAD_FILE,
                   "tensor \"a\": shape dimension 0 (at byte 37) is not a non-negative integer");
    HEADER_REFUSED("fractional_dim.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3.0],\"data_offsets\":[0,24]}," B_ENTRY "}",
                   AX_STATUS_BAD_FILE, "shape dimension 1 (at byte 39) is not a non-negative integer");
    HEADER_REFUSED("huge_shape.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,24]},"
                   B_ENTRY "}", AX_STATUS_BAD_FILE,
                   "shape [4294967296, 4294967296] of F32 does not match data_offsets [0, 24]: it "
                   "needs more bytes than the whole 48-byte data buffer");
    HEADER_REFUSED("overflowing_dim.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,99999999999999999999],\"data_offsets\":[0,24]},"
                   B_ENTRY "}", AX_STATUS_BAD_FILE, "shape dimension 1");
    HEADER_REFUSED("offsets_reversed.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[24,0]}," B_ENTRY "}",
                   AX_STATUS_BAD_FILE, "tensor \"a\": data_offsets [24, 0] are out of order");
    HEADER_REFUSED("offsets_one.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[24]}," B_ENTRY "}",
                   AX_STATUS_BAD_FILE, "must be [begin, end], two non-negative integers");
    HEADER_REFUSED("offsets_negative.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[-24,0]}," B_ENTRY "}",
                   AX_STATUS_BAD_FILE, "must be [begin, end]");
    HEADER_REFUSED("offsets_outside.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[48,72]}," B_ENTRY "}",
                   AX_STATUS_BAD_FILE,
                   "data_offsets [48, 72] reach past the end of the 48-byte data buffer");
    HEADER_REFUSED("size_mismatch.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}," B_ENTRY "}",
                   AX_STATUS_BAD_FILE,
                   "tensor \"a\": shape [2, 3] of F32 does not match data_offsets [0, 20]: it needs "
                   "24 bytes, they hold 20");
    HEADER_REFUSED("overlap.safetensors",
                   "{" A_ENTRY ",\"b\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[16,40]}}",
                   AX_STATUS_BAD_FILE, "tensors \"a\" [0, 24] and \"b\" [16, 40] overlap");
    HEADER_REFUSED("same_place.safetensors",
                   "{" A_ENTRY ",\"b\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[0,24]},"
                   "\"c\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[24,48]}}",
                   AX_STATUS_BAD_FILE, "overlap");
    check_header_refused("gap.safetensors",
                         "{" A_ENTRY ",\"b\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[32,56]}}",
                         56, AX_STATUS_BAD_FILE,
                         "gap of 8 bytes in the data buffer before tensor \"b\" at offset 32", __LINE__);
    check_header_refused("gap_first.safetensors",
                         "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[8,32]},"
                         "\"b\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[32,56]}}",
                         56, AX_STATUS_BAD_FILE, "gap of 8 bytes in the data buffer before tensor \"a\"",
                         __LINE__);
    check_header_refused("trailing.safetensors", "{" A_ENTRY "," B_ENTRY "}", 56, AX_STATUS_BAD_FILE,
                         "8 trailing bytes after the last tensor (the tensors end at offset 48 of "
                         "the 56-byte data buffer)", __LINE__);
    HEADER_REFUSED("no_tensors_but_data.safetensors", "{\"__metadata__\":{}}", AX_STATUS_BAD_FILE,
                   "48 trailing bytes");
    HEADER_REFUSED("duplicate.safetensors", "{" A_ENTRY "," A_ENTRY "}", AX_STATUS_BAD_FILE,
                   "header is not valid JSON: duplicate key \"a\" at byte 65");
    HEADER_REFUSED("name_nul.safetensors",
                   "{\"a\\u0000x\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                   B_ENTRY "}", AX_STATUS_BAD_FILE, "contains a NUL character");
    free(image);
    free(fixture);
}

/* ---------------------------------------------------------- failed writes */

static bool same_file(const char *path, const unsigned char *bytes, size_t n)
{
    size_t got_n = 0;
    unsigned char *got = read_bytes(path, &got_n);
    bool same = got && got_n == n && memcmp(got, bytes, n) == 0;
    free(got);
    return same;
}

static void test_failed_writes(void)
{
    float small[2] = {1.0f, 2.0f};
    const ax_safetensors_tensor keep_tensor = {"keep", AX_SAFETENSORS_F32, 1, {2}, small};
    const char *keys[] = {"format"}, *values[] = {"pt"};

    /* A directory that does not exist: the message names the path. */
    char missing[512];
    snprintf(missing, sizeof missing, "%s/no_such_dir/model.safetensors", directory);
    CHECK_FAILS(ax_safetensors_write(missing, &keep_tensor, 1, keys, values, 1), AX_STATUS_IO_ERROR,
                "No such file or directory");
    CHECK(strstr(ax_error_message(), missing));

    /* An existing good file, to be kept through every failure below. */
    char path[512];
    snprintf(path, sizeof path, "%s", in_directory("keep.safetensors"));
    CHECK_OK(ax_safetensors_write(path, &keep_tensor, 1, keys, values, 1));
    size_t old_n = 0;
    unsigned char *old = read_bytes(path, &old_n);
    CHECK(old != NULL);
    if (!old)
        return;

    /* Disk full, simulated by a file size limit: the write fails half way
     * (EFBIG), the temporary file is removed and the old file stays. */
    enum { BIG = 1 << 16 };
    float *big = calloc(BIG, sizeof *big);
    CHECK(big != NULL);
    struct rlimit limit, saved;
    CHECK(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    if (big && saved.rlim_cur >= (rlim_t)(4 * BIG)) {
        const ax_safetensors_tensor big_tensor = {"big", AX_SAFETENSORS_F32, 2, {256, BIG / 256}, big};
        /* Just over the limit: the failure comes from a later fwrite, fflush or fclose. */
        const ax_safetensors_tensor over_tensor = {"over", AX_SAFETENSORS_F32, 1, {1010}, big};
        signal(SIGXFSZ, SIG_IGN);
        limit = saved;
        limit.rlim_cur = 4096;
        for (int trial = 0; trial < 2; trial++) {
            CHECK(setrlimit(RLIMIT_FSIZE, &limit) == 0);
            ax_status status = ax_safetensors_write(path, trial ? &over_tensor : &big_tensor, 1,
                                                    keys, values, 1);
            CHECK(setrlimit(RLIMIT_FSIZE, &saved) == 0);
            CHECK_FAILS(status, AX_STATUS_IO_ERROR, "File too large");
            CHECK(strstr(ax_error_message(), path) && strstr(ax_error_message(), "unchanged"));
            CHECK(same_file(path, old, old_n));
            CHECK(count_entries("keep.safetensors.tmp") == 0);
        }
        /* Without the limit the same write succeeds. */
        CHECK_OK(ax_safetensors_write(in_directory("big.safetensors"), &big_tensor, 1, keys, values, 1));
        unlink(in_directory("big.safetensors"));
    } else {
        fprintf(stderr, "note: file size limit below %d bytes; disk-full simulation not run\n",
                4 * BIG);
    }
    free(big);

    /* The target is a directory: refused before a temporary is made
     * (base/atomic_file.h), the folder left as it was. */
    const char *target_dir = in_directory("a_directory");
    CHECK(mkdir(target_dir, 0700) == 0);
    CHECK_FAILS(ax_safetensors_write(target_dir, &keep_tensor, 1, keys, values, 1),
                AX_STATUS_BAD_ARGUMENT, "is a folder");
    CHECK(strstr(ax_error_message(), target_dir));
    CHECK(count_entries("a_directory") == 1);
    rmdir(target_dir);

    /* Bad arguments are refused before the file is touched. */
    float data[4] = {0};
    ax_safetensors_tensor pair[2] = {
        {"w", AX_SAFETENSORS_F32, 1, {4}, data},
        {"w", AX_SAFETENSORS_F32, 1, {4}, data},
    };
    CHECK_FAILS(ax_safetensors_write(path, pair, 2, NULL, NULL, 0), AX_STATUS_BAD_ARGUMENT,
                "two tensors are named \"w\"");
    pair[1].name = "__metadata__";
    CHECK_FAILS(ax_safetensors_write(path, pair, 2, NULL, NULL, 0), AX_STATUS_BAD_ARGUMENT,
                "tensor 1: the name must be UTF-8 text other than __metadata__");
    pair[1].name = "bad \xff utf-8";
    CHECK_FAILS(ax_safetensors_write(path, pair, 2, NULL, NULL, 0), AX_STATUS_BAD_ARGUMENT,
                "the name must be UTF-8");
    pair[1].name = "v";
    pair[1].rank = 5;
    CHECK_FAILS(ax_safetensors_write(path, pair, 2, NULL, NULL, 0), AX_STATUS_BAD_ARGUMENT,
                "tensor \"v\": rank 5 is not in 0..4");
    pair[1].rank = 1;
    pair[1].shape[0] = -4;
    CHECK_FAILS(ax_safetensors_write(path, pair, 2, NULL, NULL, 0), AX_STATUS_BAD_ARGUMENT,
                "dimension 0 is -4, negative");
    pair[1].shape[0] = 4;
    pair[1].data = NULL;
    CHECK_FAILS(ax_safetensors_write(path, pair, 2, NULL, NULL, 0), AX_STATUS_BAD_ARGUMENT,
                "tensor \"v\": data is NULL");
    pair[1].data = data;
    pair[1].dtype = (ax_safetensors_dtype)7;
    CHECK_FAILS(ax_safetensors_write(path, pair, 2, NULL, NULL, 0), AX_STATUS_BAD_ARGUMENT,
                "unknown dtype 7");
    pair[1].dtype = AX_SAFETENSORS_F64;
    pair[1].rank = 2;
    pair[1].shape[0] = pair[1].shape[1] = INT64_C(1) << 40;
    CHECK_FAILS(ax_safetensors_write(path, pair, 2, NULL, NULL, 0), AX_STATUS_BAD_ARGUMENT,
                "too large to store");
    pair[1].rank = 1;
    pair[1].shape[0] = 2;
    const char *twice[] = {"k", "k"}, *two_values[] = {"1", "2"};
    CHECK_FAILS(ax_safetensors_write(path, pair, 2, twice, two_values, 2), AX_STATUS_BAD_ARGUMENT,
                "metadata key \"k\" is given twice");
    const char *null_value[] = {NULL};
    CHECK_FAILS(ax_safetensors_write(path, pair, 2, keys, null_value, 1), AX_STATUS_BAD_ARGUMENT,
                "metadata entry 0");
    CHECK_FAILS(ax_safetensors_write(path, NULL, 1, NULL, NULL, 0), AX_STATUS_BAD_ARGUMENT,
                "invalid tensor list");
    CHECK(same_file(path, old, old_n));
    CHECK(count_entries("keep.safetensors") == 1);
    /* And the corrected call succeeds. */
    CHECK_OK(ax_safetensors_write(path, pair, 2, keys, values, 1));
    CHECK(!same_file(path, old, old_n));
    free(old);
    unlink(path);
}

/* ------------------------------------------- NumPy reads what we write */

static void test_numpy_reads_our_file(void)
{
    if (system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
        printf("note: /usr/bin/python3 with NumPy not found; scripts/read_axon_model.py not run\n");
        return;
    }
    float weight[2][3] = {{1, 2, 3}, {4, 5, 6}};
    double bias[2] = {0.25, -0.5};
    const ax_safetensors_tensor tensors[] = {
        {"layers.0.weight", AX_SAFETENSORS_F32, 2, {2, 3}, weight},
        {"layers.0.bias", AX_SAFETENSORS_F64, 1, {2}, bias},
    };
    const char *keys[] = {"architecture"}, *values[] = {"3-2:identity"};
    const char *path = in_directory("for_numpy.safetensors");
    CHECK_OK(ax_safetensors_write(path, tensors, 2, keys, values, 1));
    /* The script's load() is the one users copy; check values, not just shapes. */
    char command[2048];
    snprintf(command, sizeof command,
             "cd '%s/../../scripts' && /usr/bin/python3 -B -c \"import read_axon_model as r, numpy as np; "
             "t, m = r.load('%s'); "
             "assert t['layers.0.weight'].dtype == np.float32 and t['layers.0.bias'].dtype == np.float64; "
             "assert (t['layers.0.weight'] == np.arange(1, 7).reshape(2, 3)).all(); "
             "assert list(t['layers.0.bias']) == [0.25, -0.5]; "
             "assert m == {'architecture': '3-2:identity'}\" && "
             "/usr/bin/python3 -B read_axon_model.py '%s' | grep 'layers.0.weight .*float32 *(2, 3)' >/dev/null",
             AXON_TEST_DATA, path, path);
    CHECK(system(command) == 0);
    unlink(path);
}

int main(void)
{
    snprintf(directory, sizeof directory, "/tmp/axon_test_safetensors_XXXXXX");
    if (!mkdtemp(directory)) {
        fprintf(stderr, "cannot create a temporary directory: %s\n", strerror(errno));
        return 1;
    }
    test_round_trip();
    test_numpy_fixture();
    test_unaligned_offsets();
    test_corrupt_files();
    test_failed_writes();
    test_numpy_reads_our_file();
    unlink(in_directory("intact.safetensors"));
    unlink(in_directory("base.safetensors"));
    if (rmdir(directory) != 0) {
        fprintf(stderr, "%s: left behind files (%s)\n", directory, strerror(errno));
        test_failures++;
    }
    return test_finish("test_safetensors");
}
