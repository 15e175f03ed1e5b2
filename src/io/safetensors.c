/* safetensors.c: the safetensors reader and writer (see safetensors.h).
 * The reader trusts nothing: the file is read whole after checking its size,
 * then the header length, the JSON, every entry and the tiling of the data
 * buffer are checked, in the spirit of the reference implementation's
 * validate(), before a tensor is handed out. The writer goes through a
 * temporary file, fsync and rename() (base/atomic_file.h) so a reader never
 * sees half a model. */
#define _POSIX_C_SOURCE 200809L

#include "io/safetensors.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/memory.h"
#include "io/json.h"

/* Tensor data is copied between the file and memory as is. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this host would need byte swapping"
#endif

/* Slack after the file's bytes so the data buffer can be moved to an 8-byte
 * boundary when the header length is not a multiple of 8. */
enum { DATA_ALIGNMENT = 8 };

struct ax_safetensors_file {
    char *path;
    unsigned char *bytes; /* the whole file, plus DATA_ALIGNMENT bytes of slack */
    ax_json *header;      /* owns the tensor names and metadata strings */
    int count;
    ax_safetensors_tensor *tensors;
    void **copies; /* per tensor: an aligned copy when its offset was not aligned, else NULL */
    int metadata_count;
    const char **metadata_keys;
    const char **metadata_values;
};

/* Where a tensor's bytes lie in the data buffer, for the tiling check. */
typedef struct extent {
    uint64_t begin, end;
    int index;
} extent;

const char *ax_safetensors_dtype_name(ax_safetensors_dtype dtype)
{
    return dtype == AX_SAFETENSORS_F64 ? "F64" : "F32";
}

size_t ax_safetensors_dtype_size(ax_safetensors_dtype dtype)
{
    return dtype == AX_SAFETENSORS_F64 ? 8 : 4;
}

int64_t ax_safetensors_tensor_elements(const ax_safetensors_tensor *tensor)
{
    int64_t elements = 1;
    for (int d = 0; d < tensor->rank; d++)
        elements *= tensor->shape[d];
    return elements;
}

size_t ax_safetensors_tensor_bytes(const ax_safetensors_tensor *tensor)
{
    return (size_t)ax_safetensors_tensor_elements(tensor) * ax_safetensors_dtype_size(tensor->dtype);
}

/* Bytes of a tensor of this shape, or false if the product exceeds limit.
 * A zero dimension makes any other dimension harmless. */
static bool shape_bytes(const int64_t *shape, int rank, size_t element_size, uint64_t limit,
                        uint64_t *bytes)
{
    uint64_t total = element_size;
    for (int d = 0; d < rank; d++)
        if (shape[d] == 0) {
            *bytes = 0;
            return true;
        }
    for (int d = 0; d < rank; d++) {
        if ((uint64_t)shape[d] > limit / total)
            return false;
        total *= (uint64_t)shape[d];
    }
    if (total > limit)
        return false;
    *bytes = total;
    return true;
}

static void format_shape(const int64_t *shape, int rank, char *text, size_t capacity)
{
    size_t used = (size_t)snprintf(text, capacity, "[");
    for (int d = 0; d < rank && used < capacity; d++)
        used += (size_t)snprintf(text + used, capacity - used, "%s%lld", d ? ", " : "",
                                 (long long)shape[d]);
    if (used < capacity)
        snprintf(text + used, capacity - used, "]");
}

/* ---------------------------------------------------------------- writer */

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first name that occurs twice, or NULL. */
static const char *find_duplicate(const char *const *names, int count, ax_status *status)
{
    *status = AX_STATUS_OK;
    if (count < 2)
        return NULL;
    const char **sorted = malloc((size_t)count * sizeof *sorted);
    if (!sorted) {
        *status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory checking names");
        return NULL;
    }
    memcpy(sorted, names, (size_t)count * sizeof *sorted);
    qsort(sorted, (size_t)count, sizeof *sorted, compare_names);
    const char *duplicate = NULL;
    for (int i = 1; i < count && !duplicate; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0)
            duplicate = sorted[i];
    free(sorted);
    return duplicate;
}

static ax_status check_arguments(const char *path, const ax_safetensors_tensor *tensors, int count,
                                 const char *const *keys, const char *const *values,
                                 int metadata_count, uint64_t *bytes)
{
    if (!path)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "safetensors: no path given");
    if (count < 0 || (count > 0 && !tensors))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: invalid tensor list (count %d)", path, count);
    if (metadata_count < 0 || (metadata_count > 0 && (!keys || !values)))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: invalid metadata list (count %d)", path,
                       metadata_count);
    uint64_t total = 0;
    for (int i = 0; i < count; i++) {
        const ax_safetensors_tensor *t = &tensors[i];
        if (!t->name || !ax_json_utf8_valid(t->name, strlen(t->name)) ||
            strcmp(t->name, "__metadata__") == 0)
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "%s: tensor %d: the name must be UTF-8 text other than __metadata__",
                           path, i);
        if (t->dtype != AX_SAFETENSORS_F32 && t->dtype != AX_SAFETENSORS_F64)
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: tensor \"%s\": unknown dtype %d", path,
                           t->name, (int)t->dtype);
        if (t->rank < 0 || t->rank > AX_SAFETENSORS_MAX_RANK)
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: tensor \"%s\": rank %d is not in 0..%d",
                           path, t->name, t->rank, AX_SAFETENSORS_MAX_RANK);
        for (int d = 0; d < t->rank; d++)
            if (t->shape[d] < 0)
                return ax_fail(AX_STATUS_BAD_ARGUMENT,
                               "%s: tensor \"%s\": dimension %d is %lld, negative", path, t->name,
                               d, (long long)t->shape[d]);
        if (!shape_bytes(t->shape, t->rank, ax_safetensors_dtype_size(t->dtype),
                         (uint64_t)INT64_MAX - total, &bytes[i]))
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: tensor \"%s\": too large to store", path,
                           t->name);
        if (bytes[i] > 0 && !t->data)
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: tensor \"%s\": data is NULL", path,
                           t->name);
        total += bytes[i];
    }
    for (int i = 0; i < metadata_count; i++)
        if (!keys[i] || !values[i] || !ax_json_utf8_valid(keys[i], strlen(keys[i])) ||
            !ax_json_utf8_valid(values[i], strlen(values[i])))
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "%s: metadata entry %d: key and value must be UTF-8 text", path, i);
    ax_status status;
    const char **names = malloc((size_t)(count > 0 ? count : 1) * sizeof *names);
    if (!names)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    for (int i = 0; i < count; i++)
        names[i] = tensors[i].name;
    const char *duplicate = find_duplicate(names, count, &status);
    free(names);
    if (status != AX_STATUS_OK)
        return status;
    if (duplicate)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: two tensors are named \"%s\"", path, duplicate);
    duplicate = find_duplicate(keys, metadata_count, &status);
    if (status != AX_STATUS_OK)
        return status;
    if (duplicate)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: metadata key \"%s\" is given twice", path,
                       duplicate);
    return AX_STATUS_OK;
}

/* The JSON header, space-padded so the data buffer starts 8-byte aligned. */
static ax_status build_header(const char *path, const ax_safetensors_tensor *tensors, int count,
                              const uint64_t *begins, const uint64_t *bytes,
                              const char *const *keys, const char *const *values,
                              int metadata_count, ax_json_writer *header)
{
    ax_json_writer_append(header, "{");
    if (metadata_count > 0) {
        ax_json_writer_append(header, "\"__metadata__\":{");
        for (int i = 0; i < metadata_count; i++) {
            ax_json_writer_append(header, i ? "," : "");
            ax_json_writer_append_string(header, keys[i]);
            ax_json_writer_append(header, ":");
            ax_json_writer_append_string(header, values[i]);
        }
        ax_json_writer_append(header, "}");
    }
    for (int i = 0; i < count; i++) {
        const ax_safetensors_tensor *t = &tensors[i];
        ax_json_writer_append(header, i || metadata_count > 0 ? "," : "");
        ax_json_writer_append_string(header, t->name);
        ax_json_writer_append(header, ":{\"dtype\":");
        ax_json_writer_append_string(header, ax_safetensors_dtype_name(t->dtype));
        ax_json_writer_append(header, ",\"shape\":[");
        for (int d = 0; d < t->rank; d++) {
            ax_json_writer_append(header, d ? "," : "");
            ax_json_writer_append_int(header, t->shape[d]);
        }
        ax_json_writer_append(header, "],\"data_offsets\":[");
        ax_json_writer_append_int(header, (int64_t)begins[i]);
        ax_json_writer_append(header, ",");
        ax_json_writer_append_int(header, (int64_t)(begins[i] + bytes[i]));
        ax_json_writer_append(header, "]}");
    }
    ax_json_writer_append(header, "}");
    while (!header->out_of_memory && header->length % DATA_ALIGNMENT != 0)
        ax_json_writer_append(header, " ");
    if (header->out_of_memory)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory for the header", path);
    return AX_STATUS_OK;
}

/* Writes the file through a temporary (base/atomic_file.h): the length, the
 * header, then the tensors in order. */
static ax_status write_file(const char *path, const ax_json_writer *header,
                            const ax_safetensors_tensor *tensors, const int *order,
                            const uint64_t *bytes, int count)
{
    unsigned char length[8];
    for (int b = 0; b < 8; b++)
        length[b] = (unsigned char)((uint64_t)header->length >> (8 * b));
    ax_atomic_file file;
    AX_TRY(ax_atomic_file_open(&file, path));
    AX_TRY(ax_atomic_file_write(&file, length, 8));
    AX_TRY(ax_atomic_file_write(&file, header->text, header->length));
    for (int k = 0; k < count; k++) {
        int i = order[k];
        if (bytes[i] > 0)
            AX_TRY(ax_atomic_file_write(&file, tensors[i].data, bytes[i]));
    }
    return ax_atomic_file_commit(&file);
}

ax_status ax_safetensors_write(const char *path, const ax_safetensors_tensor *tensors, int count,
                               const char *const *metadata_keys,
                               const char *const *metadata_values, int metadata_count)
{
    size_t slots = (size_t)(count > 0 ? count : 1);
    uint64_t *bytes = calloc(slots, sizeof *bytes);
    uint64_t *begins = calloc(slots, sizeof *begins);
    int *order = calloc(slots, sizeof *order);
    ax_json_writer header = {0};
    ax_status status = AX_STATUS_OK;
    if (!bytes || !begins || !order)
        status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path ? path : "safetensors");
    if (status == AX_STATUS_OK)
        status = check_arguments(path, tensors, count, metadata_keys, metadata_values,
                                 metadata_count, bytes);
    if (status == AX_STATUS_OK) {
        /* F64 before F32 (a stable partition): with the buffer 8-byte
         * aligned, every tensor then starts at a multiple of its value size. */
        int placed = 0;
        uint64_t offset = 0;
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < count; i++)
                if ((tensors[i].dtype == AX_SAFETENSORS_F64) == (pass == 0)) {
                    order[placed++] = i;
                    begins[i] = offset;
                    offset += bytes[i];
                }
        status = build_header(path, tensors, count, begins, bytes, metadata_keys, metadata_values,
                              metadata_count, &header);
    }
    if (status == AX_STATUS_OK)
        status = write_file(path, &header, tensors, order, bytes, count);
    ax_json_writer_free(&header);
    free(bytes);
    free(begins);
    free(order);
    return status;
}

/* ---------------------------------------------------------------- reader */

/* Reads the whole regular file into file->bytes (with slack); *size is its length. */
static ax_status load_file(ax_safetensors_file *file, size_t *size)
{
    const char *path = file->path;
    FILE *stream = fopen(path, "rb");
    if (!stream)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot open: %s", path, strerror(errno));
    struct stat info;
    ax_status status = AX_STATUS_OK;
    if (fstat(fileno(stream), &info) != 0)
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: cannot examine: %s", path, strerror(errno));
    else if (!S_ISREG(info.st_mode))
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: not a regular file", path);
    else if (info.st_size < 8)
        status = ax_fail(AX_STATUS_BAD_FILE,
                         "%s: the file is %lld bytes, too short for the 8-byte header length",
                         path, (long long)info.st_size);
    else if ((uint64_t)info.st_size > SIZE_MAX - DATA_ALIGNMENT)
        status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: the file is too large to read", path);
    if (status == AX_STATUS_OK) {
        *size = (size_t)info.st_size;
        status = ax_memory_check(*size, path);
    }
    if (status == AX_STATUS_OK) {
        file->bytes = malloc(*size + DATA_ALIGNMENT);
        if (!file->bytes)
            status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory for %zu bytes", path,
                             *size);
    }
    if (status == AX_STATUS_OK) {
        size_t got = fread(file->bytes, 1, *size, stream);
        if (got != *size)
            status = ferror(stream)
                         ? ax_fail(AX_STATUS_IO_ERROR, "%s: read failed: %s", path, strerror(errno))
                         : ax_fail(AX_STATUS_BAD_FILE,
                                   "%s: the file shrank to %zu bytes while being read", path, got);
    }
    fclose(stream);
    return status;
}

static ax_status read_metadata(ax_safetensors_file *file, const ax_json *metadata)
{
    const char *path = file->path;
    if (ax_json_type_of(metadata) != AX_JSON_OBJECT)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: __metadata__ is a JSON %s, not an object of strings",
                       path, ax_json_type_name(ax_json_type_of(metadata)));
    size_t count = ax_json_length(metadata);
    file->metadata_keys = calloc(count ? count : 1, sizeof *file->metadata_keys);
    file->metadata_values = calloc(count ? count : 1, sizeof *file->metadata_values);
    if (!file->metadata_keys || !file->metadata_values)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory for the metadata", path);
    for (size_t i = 0; i < count; i++) {
        const char *key = ax_json_object_key(metadata, i);
        const ax_json *value = ax_json_object_value(metadata, i);
        if (ax_json_type_of(value) != AX_JSON_STRING)
            return ax_fail(AX_STATUS_BAD_FILE,
                           "%s: __metadata__ value of \"%s\" is a JSON %s, not a string", path, key,
                           ax_json_type_name(ax_json_type_of(value)));
        /* Callers see C strings: a NUL inside would silently cut them. */
        if (strlen(key) != ax_json_object_key_length(metadata, i) ||
            strlen(ax_json_string(value)) != ax_json_string_length(value))
            return ax_fail(AX_STATUS_BAD_FILE, "%s: __metadata__ entry \"%s\" contains a NUL "
                           "character", path, key);
        file->metadata_keys[i] = key;
        file->metadata_values[i] = ax_json_string(value);
    }
    file->metadata_count = (int)count;
    return AX_STATUS_OK;
}

/* Recognised so that the message can say "not supported" rather than "corrupt". */
static const char *const other_dtypes[] = {"BOOL", "U8",  "I8",  "F8_E5M2", "F8_E4M3",
                                           "I16",  "U16", "F16", "BF16",    "I32",
                                           "U32",  "I64", "U64"};

static ax_status read_dtype(const char *path, const char *name, const ax_json *node,
                            ax_safetensors_dtype *dtype)
{
    const char *text = ax_json_string(node);
    if (strcmp(text, "F32") == 0) {
        *dtype = AX_SAFETENSORS_F32;
        return AX_STATUS_OK;
    }
    if (strcmp(text, "F64") == 0) {
        *dtype = AX_SAFETENSORS_F64;
        return AX_STATUS_OK;
    }
    for (size_t i = 0; i < sizeof other_dtypes / sizeof other_dtypes[0]; i++)
        if (strcmp(text, other_dtypes[i]) == 0)
            return ax_fail(AX_STATUS_UNSUPPORTED,
                           "%s: tensor \"%s\" has dtype %s; axon reads only F32 and F64 (convert "
                           "it before saving, e.g. tensor.float() in PyTorch)", path, name, text);
    return ax_fail(AX_STATUS_BAD_FILE, "%s: tensor \"%s\": unknown dtype \"%.40s\"", path, name,
                   text);
}

/* Fetches member key of a tensor entry and checks its JSON type. */
static ax_status entry_member(const char *path, const char *name, const ax_json *entry,
                              const char *key, ax_json_type type, const ax_json **out)
{
    *out = ax_json_object_get(entry, key);
    if (!*out)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: tensor \"%s\" has no \"%s\"", path, name, key);
    if (ax_json_type_of(*out) != type)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: tensor \"%s\": \"%s\" is a JSON %s, not a%s %s",
                       path, name, key, ax_json_type_name(ax_json_type_of(*out)),
                       type == AX_JSON_ARRAY ? "n" : "", ax_json_type_name(type));
    return AX_STATUS_OK;
}

/* Checks one tensor entry against the data buffer's size; fills tensor
 * (all but data) and its extent. */
static ax_status read_entry(const char *path, const char *name, const ax_json *entry,
                            uint64_t buffer_size, ax_safetensors_tensor *tensor, extent *where)
{
    if (ax_json_type_of(entry) != AX_JSON_OBJECT)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: tensor \"%s\": the entry is a JSON %s, not an object with dtype, shape "
                       "and data_offsets", path, name, ax_json_type_name(ax_json_type_of(entry)));
    for (size_t i = 0; i < ax_json_length(entry); i++) {
        const char *key = ax_json_object_key(entry, i);
        if (strcmp(key, "dtype") != 0 && strcmp(key, "shape") != 0 &&
            strcmp(key, "data_offsets") != 0)
            return ax_fail(AX_STATUS_BAD_FILE, "%s: tensor \"%s\": unexpected key \"%.40s\"", path,
                           name, key);
    }
    const ax_json *dtype, *shape, *offsets;
    AX_TRY(entry_member(path, name, entry, "dtype", AX_JSON_STRING, &dtype));
    AX_TRY(entry_member(path, name, entry, "shape", AX_JSON_ARRAY, &shape));
    AX_TRY(entry_member(path, name, entry, "data_offsets", AX_JSON_ARRAY, &offsets));
    AX_TRY(read_dtype(path, name, dtype, &tensor->dtype));

    size_t rank = ax_json_length(shape);
    if (rank > AX_SAFETENSORS_MAX_RANK)
        return ax_fail(AX_STATUS_UNSUPPORTED, "%s: tensor \"%s\" has rank %zu; axon handles at "
                       "most %d dimensions", path, name, rank, AX_SAFETENSORS_MAX_RANK);
    tensor->name = name;
    tensor->rank = (int)rank;
    for (size_t d = 0; d < rank; d++) {
        const ax_json *dimension = ax_json_array_get(shape, d);
        if (!ax_json_int(dimension, &tensor->shape[d]) || tensor->shape[d] < 0)
            return ax_fail(AX_STATUS_BAD_FILE, "%s: tensor \"%s\": shape dimension %zu (at byte "
                           "%zu) is not a non-negative integer", path, name, d,
                           ax_json_offset(dimension));
    }
    int64_t begin, end;
    if (ax_json_length(offsets) != 2 || !ax_json_int(ax_json_array_get(offsets, 0), &begin) ||
        !ax_json_int(ax_json_array_get(offsets, 1), &end) || begin < 0 || end < 0)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: tensor \"%s\": data_offsets (at byte %zu) must be "
                       "[begin, end], two non-negative integers", path, name,
                       ax_json_offset(offsets));
    if (begin > end)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: tensor \"%s\": data_offsets [%lld, %lld] are out "
                       "of order", path, name, (long long)begin, (long long)end);
    if ((uint64_t)end > buffer_size)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: tensor \"%s\": data_offsets [%lld, %lld] reach "
                       "past the end of the %llu-byte data buffer (is the file truncated?)", path,
                       name, (long long)begin, (long long)end, (unsigned long long)buffer_size);
    /* The product is bounded by the buffer's size before it can overflow,
     * so a shape like [2^32, 2^32] is an ordinary mismatch. */
    char shape_text[128];
    format_shape(tensor->shape, tensor->rank, shape_text, sizeof shape_text);
    uint64_t span = (uint64_t)(end - begin), bytes;
    if (!shape_bytes(tensor->shape, tensor->rank, ax_safetensors_dtype_size(tensor->dtype),
                     buffer_size, &bytes))
        return ax_fail(AX_STATUS_BAD_FILE, "%s: tensor \"%s\": shape %s of %s does not match "
                       "data_offsets [%lld, %lld]: it needs more bytes than the whole %llu-byte "
                       "data buffer", path, name, shape_text, ax_json_string(dtype),
                       (long long)begin, (long long)end, (unsigned long long)buffer_size);
    if (bytes != span)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: tensor \"%s\": shape %s of %s does not match "
                       "data_offsets [%lld, %lld]: it needs %llu bytes, they hold %llu", path,
                       name, shape_text, ax_json_string(dtype), (long long)begin, (long long)end,
                       (unsigned long long)bytes, (unsigned long long)span);
    where->begin = (uint64_t)begin;
    where->end = (uint64_t)end;
    return AX_STATUS_OK;
}

static int compare_extents(const void *a, const void *b)
{
    const extent *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

/* The tensors must tile [0, buffer_size) exactly, like the reference
 * implementation demands: no overlap, no gap, nothing after the last one. */
static ax_status check_tiling(const ax_safetensors_file *file, extent *extents,
                              uint64_t buffer_size)
{
    const char *path = file->path;
    qsort(extents, (size_t)file->count, sizeof *extents, compare_extents);
    uint64_t covered = 0;
    for (int k = 0; k < file->count; k++) {
        const extent *e = &extents[k];
        const char *name = file->tensors[e->index].name;
        if (e->begin < covered)
            return ax_fail(AX_STATUS_BAD_FILE, "%s: tensors \"%s\" [%llu, %llu] and \"%s\" [%llu, "
                           "%llu] overlap", path, file->tensors[extents[k - 1].index].name,
                           (unsigned long long)extents[k - 1].begin,
                           (unsigned long long)extents[k - 1].end, name,
                           (unsigned long long)e->begin, (unsigned long long)e->end);
        if (e->begin > covered)
            return ax_fail(AX_STATUS_BAD_FILE, "%s: gap of %llu bytes in the data buffer before "
                           "tensor \"%s\" at offset %llu", path,
                           (unsigned long long)(e->begin - covered), name,
                           (unsigned long long)e->begin);
        covered = e->end;
    }
    if (covered != buffer_size)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: %llu trailing bytes after the last tensor (the "
                       "tensors end at offset %llu of the %llu-byte data buffer)", path,
                       (unsigned long long)(buffer_size - covered), (unsigned long long)covered,
                       (unsigned long long)buffer_size);
    return AX_STATUS_OK;
}

/* Validates the header and points the tensors into the data. */
static ax_status read_contents(ax_safetensors_file *file, size_t size)
{
    const char *path = file->path;
    uint64_t header_length = 0;
    for (int b = 0; b < 8; b++)
        header_length |= (uint64_t)file->bytes[b] << (8 * b);
    if (header_length > AX_SAFETENSORS_MAX_HEADER)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: header length %llu exceeds the limit of %d bytes "
                       "(not a safetensors file?)", path, (unsigned long long)header_length,
                       AX_SAFETENSORS_MAX_HEADER);
    if (header_length > size - 8)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: truncated: the header length is %llu bytes but "
                       "only %zu bytes follow it", path, (unsigned long long)header_length,
                       size - 8);
    ax_status status = ax_json_parse((const char *)file->bytes + 8, header_length, 8,
                                     &file->header);
    if (status != AX_STATUS_OK)
        return ax_fail_context(status, "%s: header is not valid JSON", path);
    const ax_json *root = file->header;
    if (ax_json_type_of(root) != AX_JSON_OBJECT)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: the header is a JSON %s, not an object", path,
                       ax_json_type_name(ax_json_type_of(root)));

    size_t members = ax_json_length(root);
    const ax_json *metadata = ax_json_object_get(root, "__metadata__");
    if (metadata)
        AX_TRY(read_metadata(file, metadata));
    size_t count = members - (metadata != NULL);
    if (count > (size_t)INT32_MAX)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: %zu tensors are too many", path, count);
    uint64_t data_start = 8 + header_length, buffer_size = size - data_start;
    file->tensors = calloc(count ? count : 1, sizeof *file->tensors);
    file->copies = calloc(count ? count : 1, sizeof *file->copies);
    extent *extents = calloc(count ? count : 1, sizeof *extents);
    if (!file->tensors || !file->copies || !extents) {
        free(extents);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory for %zu tensors", path, count);
    }
    for (size_t i = 0; i < members && status == AX_STATUS_OK; i++) {
        const char *name = ax_json_object_key(root, i);
        if (strcmp(name, "__metadata__") == 0)
            continue;
        if (strlen(name) != ax_json_object_key_length(root, i))
            status = ax_fail(AX_STATUS_BAD_FILE, "%s: tensor name \"%s\" contains a NUL character",
                             path, name);
        else {
            extents[file->count].index = file->count;
            status = read_entry(path, name, ax_json_object_value(root, i), buffer_size,
                                &file->tensors[file->count], &extents[file->count]);
            file->count++;
        }
    }
    if (status == AX_STATUS_OK)
        status = check_tiling(file, extents, buffer_size);
    if (status == AX_STATUS_OK) {
        /* Move the buffer to an 8-byte boundary (the slack allows it) so
         * that F32 and F64 values at aligned offsets can be used in place. */
        unsigned char *data = file->bytes + data_start;
        size_t misalignment = (size_t)((uintptr_t)data % DATA_ALIGNMENT);
        if (misalignment) {
            memmove(data + DATA_ALIGNMENT - misalignment, data, (size_t)buffer_size);
            data += DATA_ALIGNMENT - misalignment;
        }
        for (int k = 0; k < file->count && status == AX_STATUS_OK; k++) {
            ax_safetensors_tensor *t = &file->tensors[extents[k].index];
            const unsigned char *at = data + extents[k].begin;
            size_t bytes = (size_t)(extents[k].end - extents[k].begin);
            if (extents[k].begin % ax_safetensors_dtype_size(t->dtype) == 0) {
                t->data = at;
                continue;
            }
            /* Legal but unaligned (e.g. an odd-length F32 before an F64): copy. */
            void *copy = malloc(bytes);
            if (!copy)
                status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
            else {
                memcpy(copy, at, bytes);
                file->copies[extents[k].index] = copy;
                t->data = copy;
            }
        }
    }
    free(extents);
    return status;
}

ax_status ax_safetensors_read(const char *path, ax_safetensors_file **out)
{
    *out = NULL;
    if (!path)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "safetensors: no path given");
    ax_safetensors_file *file = calloc(1, sizeof *file);
    size_t size = 0;
    if (!file || !(file->path = malloc(strlen(path) + 1))) {
        free(file);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    strcpy(file->path, path);
    ax_status status = load_file(file, &size);
    if (status == AX_STATUS_OK)
        status = read_contents(file, size);
    if (status != AX_STATUS_OK) {
        ax_safetensors_free(file);
        return status;
    }
    *out = file;
    return AX_STATUS_OK;
}

void ax_safetensors_free(ax_safetensors_file *file)
{
    if (!file)
        return;
    if (file->copies)
        for (int i = 0; i < file->count; i++)
            free(file->copies[i]);
    free(file->copies);
    free(file->tensors);
    free(file->metadata_keys);
    free(file->metadata_values);
    ax_json_free(file->header);
    free(file->bytes);
    free(file->path);
    free(file);
}

/* ------------------------------------------------------------- accessors */

const char *ax_safetensors_path(const ax_safetensors_file *file) { return file->path; }

int ax_safetensors_count(const ax_safetensors_file *file) { return file->count; }

const ax_safetensors_tensor *ax_safetensors_tensor_at(const ax_safetensors_file *file, int index)
{
    if (index < 0 || index >= file->count)
        return NULL;
    return &file->tensors[index];
}

const ax_safetensors_tensor *ax_safetensors_find(const ax_safetensors_file *file,
                                                 const char *name)
{
    for (int i = 0; i < file->count; i++)
        if (strcmp(file->tensors[i].name, name) == 0)
            return &file->tensors[i];
    return NULL;
}

int ax_safetensors_metadata_count(const ax_safetensors_file *file)
{
    return file->metadata_count;
}

const char *ax_safetensors_metadata_key(const ax_safetensors_file *file, int index)
{
    if (index < 0 || index >= file->metadata_count)
        return NULL;
    return file->metadata_keys[index];
}

const char *ax_safetensors_metadata(const ax_safetensors_file *file, const char *key)
{
    for (int i = 0; i < file->metadata_count; i++)
        if (strcmp(file->metadata_keys[i], key) == 0)
            return file->metadata_values[i];
    return NULL;
}
