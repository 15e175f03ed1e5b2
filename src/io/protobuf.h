/* protobuf.h: a small writer of the protocol buffers wire format
 * (https://protobuf.dev/programming-guides/encoding/), enough to write
 * messages whose schema the caller knows: varint fields (int32, int64,
 * enums), 32-bit floats, and length-delimited fields (strings, bytes,
 * nested messages). Repeated fields are written one tag per value, which
 * every parser accepts for packed and unpacked fields alike.
 *
 * The message is built in one growing buffer. A nested message is opened
 * (ax_pb_begin), its fields written, then closed (ax_pb_end), which moves
 * the bytes written since the opening forward to make room for their
 * length. The first allocation failure sticks: every later call does
 * nothing and ax_pb_failed says so, so a writer checks once at the end. */
#ifndef AX_IO_PROTOBUF_H
#define AX_IO_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ax_pb_buffer {
    unsigned char *bytes;
    size_t size, capacity;
    bool failed; /* an allocation failed: the contents are void */
} ax_pb_buffer;

/* Where a nested message begins in the buffer (ax_pb_begin's result). */
typedef struct ax_pb_mark {
    size_t start; /* the first byte of the message's contents */
} ax_pb_mark;

/* An empty buffer; free with ax_pb_free. */
ax_pb_buffer ax_pb_init(void);
void ax_pb_free(ax_pb_buffer *buffer);
bool ax_pb_failed(const ax_pb_buffer *buffer);

/* field with a varint value (int32, int64, uint64, bool, enum; a negative
 * int32/int64 is written as its 10-byte two's complement, as protobuf does). */
void ax_pb_varint(ax_pb_buffer *buffer, int field, uint64_t value);
/* field with a 32-bit float (wire type 5, little-endian). */
void ax_pb_float(ax_pb_buffer *buffer, int field, float value);
/* field with size bytes (strings, bytes). */
void ax_pb_bytes(ax_pb_buffer *buffer, int field, const void *data, size_t size);
/* field with a NUL-terminated UTF-8 string. */
void ax_pb_string(ax_pb_buffer *buffer, int field, const char *text);
/* field with count floats as little-endian bytes (a bytes field, e.g. ONNX's
 * TensorProto.raw_data). */
void ax_pb_float_bytes(ax_pb_buffer *buffer, int field, const float *values, size_t count);

/* Opens a nested message in field; its fields follow, then ax_pb_end. */
ax_pb_mark ax_pb_begin(ax_pb_buffer *buffer, int field);
/* Closes the message opened at mark: writes its length in front of it. */
void ax_pb_end(ax_pb_buffer *buffer, ax_pb_mark mark);

#endif
