/* protobuf.c: the protocol buffers wire format, written (see protobuf.h).
 * A tag is (field << 3) | wire type; varints hold 7 bits a byte, low bits
 * first, the high bit saying "more follows". */
#include "io/protobuf.h"

#include <stdlib.h>
#include <string.h>

enum {
    WIRE_VARINT = 0,
    WIRE_LENGTH_DELIMITED = 2,
    WIRE_FIXED32 = 5,
    MOST_VARINT_BYTES = 10,
};

ax_pb_buffer ax_pb_init(void) { return (ax_pb_buffer){0}; }

void ax_pb_free(ax_pb_buffer *buffer)
{
    free(buffer->bytes);
    *buffer = ax_pb_init();
}

bool ax_pb_failed(const ax_pb_buffer *buffer) { return buffer->failed; }

/* Room for size more bytes; false (and failed set) when there is none. */
static bool reserve(ax_pb_buffer *buffer, size_t size)
{
    if (buffer->failed)
        return false;
    if (buffer->size + size <= buffer->capacity)
        return true;
    size_t capacity = buffer->capacity ? buffer->capacity : 256;
    while (capacity < buffer->size + size) {
        if (capacity > SIZE_MAX / 2) {
            buffer->failed = true;
            return false;
        }
        capacity *= 2;
    }
    unsigned char *bytes = realloc(buffer->bytes, capacity);
    if (!bytes) {
        buffer->failed = true;
        return false;
    }
    buffer->bytes = bytes;
    buffer->capacity = capacity;
    return true;
}

/* Writes value as a varint at out; returns the bytes it took. */
static size_t encode_varint(unsigned char *out, uint64_t value)
{
    size_t length = 0;
    do {
        unsigned char byte = value & 0x7f;
        value >>= 7;
        out[length++] = value ? (unsigned char)(byte | 0x80) : byte;
    } while (value);
    return length;
}

static void raw_varint(ax_pb_buffer *buffer, uint64_t value)
{
    if (reserve(buffer, MOST_VARINT_BYTES))
        buffer->size += encode_varint(buffer->bytes + buffer->size, value);
}

static void raw_bytes(ax_pb_buffer *buffer, const void *data, size_t size)
{
    if (size && reserve(buffer, size)) {
        memcpy(buffer->bytes + buffer->size, data, size);
        buffer->size += size;
    }
}

static void tag(ax_pb_buffer *buffer, int field, int wire)
{
    raw_varint(buffer, ((uint64_t)field << 3) | (uint64_t)wire);
}

void ax_pb_varint(ax_pb_buffer *buffer, int field, uint64_t value)
{
    tag(buffer, field, WIRE_VARINT);
    raw_varint(buffer, value);
}

/* The float's bits, least significant byte first, whatever the host. */
static void little_endian_float(unsigned char out[4], float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    for (int i = 0; i < 4; i++)
        out[i] = (unsigned char)(bits >> (8 * i));
}

void ax_pb_float(ax_pb_buffer *buffer, int field, float value)
{
    unsigned char bytes[4];
    little_endian_float(bytes, value);
    tag(buffer, field, WIRE_FIXED32);
    raw_bytes(buffer, bytes, sizeof bytes);
}

void ax_pb_bytes(ax_pb_buffer *buffer, int field, const void *data, size_t size)
{
    tag(buffer, field, WIRE_LENGTH_DELIMITED);
    raw_varint(buffer, size);
    raw_bytes(buffer, data, size);
}

void ax_pb_string(ax_pb_buffer *buffer, int field, const char *text)
{
    ax_pb_bytes(buffer, field, text, strlen(text));
}

void ax_pb_float_bytes(ax_pb_buffer *buffer, int field, const float *values, size_t count)
{
    if (count > SIZE_MAX / 4) {
        buffer->failed = true;
        return;
    }
    tag(buffer, field, WIRE_LENGTH_DELIMITED);
    raw_varint(buffer, (uint64_t)count * 4);
    if (!reserve(buffer, count * 4))
        return;
    for (size_t i = 0; i < count; i++)
        little_endian_float(buffer->bytes + buffer->size + 4 * i, values[i]);
    buffer->size += count * 4;
}

ax_pb_mark ax_pb_begin(ax_pb_buffer *buffer, int field)
{
    tag(buffer, field, WIRE_LENGTH_DELIMITED);
    return (ax_pb_mark){.start = buffer->size};
}

void ax_pb_end(ax_pb_buffer *buffer, ax_pb_mark mark)
{
    if (buffer->failed)
        return;
    /* The length goes where the contents start; they move up by its size. */
    const size_t length = buffer->size - mark.start;
    unsigned char prefix[MOST_VARINT_BYTES];
    const size_t prefix_size = encode_varint(prefix, length);
    if (!reserve(buffer, prefix_size))
        return;
    memmove(buffer->bytes + mark.start + prefix_size, buffer->bytes + mark.start, length);
    memcpy(buffer->bytes + mark.start, prefix, prefix_size);
    buffer->size += prefix_size;
}
