/* jpeg_batch.h: the JPEG batch file of `axon prep --format jpeg`
 * (docs/prep.md, "JPEG batches"): k images of S x S x C pixels, each a
 * JPEG, in one file with a fixed header and a table of offsets.
 *
 *   offset  bytes  field (little-endian)
 *   0       8      magic "AXJPEGB\n"
 *   8       4      version, 1
 *   12      4      header bytes, 48
 *   16      8      k, images
 *   24      8      S, side (every image is S x S)
 *   32      8      C, channels (1 grey, 3 RGB)
 *   40      8      quality the images were encoded at (1 .. 100; 0 unknown)
 *   48      8(k+1) offsets: image i is bytes [offsets[i], offsets[i + 1]);
 *                  offsets[0] = 48 + 8 (k + 1), offsets[k] = the file's size
 *
 * The container (this file, always built) needs no libjpeg; decoding and
 * encoding (src/prep/jpeg_codec.c) do, and fail with a clear message in a
 * build without image preparation. */
#ifndef AX_DATA_JPEG_BATCH_H
#define AX_DATA_JPEG_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "axon.h"
#include "io/jpeg_codec.h"

#define AX_JPEG_BATCH_MAGIC "AXJPEGB\n"
#define AX_JPEG_BATCH_VERSION 1
#define AX_JPEG_BATCH_HEADER 48

/* A JPEG batch file read whole into memory and checked: bytes (size) owned. */
typedef struct ax_jpeg_batch {
    unsigned char *bytes;
    size_t size;
    int64_t count, side, channels, quality;
    const unsigned char *table; /* offsets, (count + 1) little-endian uint64 */
} ax_jpeg_batch;

/* Reads path and checks it against its own size before any byte is used:
 * the magic, version, header size, that the table fits, that the offsets
 * rise from the table's end to exactly the file's size. Fails naming path
 * and the field. *batch is zeroed first and owns nothing on failure. */
ax_status ax_jpeg_batch_read(const char *path, ax_jpeg_batch *batch);
/* The same on bytes already in memory (taken over: freed by release, also on failure). */
ax_status ax_jpeg_batch_parse(const char *path, unsigned char *bytes, size_t size,
                              ax_jpeg_batch *batch);
void ax_jpeg_batch_release(ax_jpeg_batch *batch);
/* Only the 48-byte header (and the file's size: the table must fit): the
 * check of every file when a streamed set opens, before any is read whole. */
ax_status ax_jpeg_batch_check_header(const char *path, int64_t *count, int64_t *side,
                                     int64_t *channels);
/* Image i: its bytes and size. */
void ax_jpeg_batch_image(const ax_jpeg_batch *batch, int64_t i, const unsigned char **bytes,
                         size_t *size);
/* Decodes image i into out (S, S, C) uint8; fails naming path and i. */
ax_status ax_jpeg_batch_decode(const char *path, const ax_jpeg_batch *batch, int64_t i,
                               unsigned char *out);

/* The header and table of a batch of count images of sizes[i] bytes:
 * header must hold ax_jpeg_batch_header_size(count) bytes. */
size_t ax_jpeg_batch_header_size(int64_t count);
void ax_jpeg_batch_header(unsigned char *header, int64_t count, int64_t side, int64_t channels,
                          int64_t quality, const size_t *sizes);

#endif
