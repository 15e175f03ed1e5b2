/* jpeg_batch.c: the container of a JPEG batch file (jpeg_batch.h for the
 * layout), read whole and checked against its own size before any offset
 * in it is trusted. Small enough to read whole: a batch of 1024 images of
 * 256 x 256 at quality 90 is about 20 MB. */
#define _POSIX_C_SOURCE 200809L

#include "data/jpeg_batch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--)
        v = (v << 8) | p[b];
    return v;
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int b = 0; b < 8; b++)
        p[b] = (unsigned char)(v >> (8 * b));
}

ax_status ax_jpeg_batch_read(const char *path, ax_jpeg_batch *batch)
{
    memset(batch, 0, sizeof *batch);
    FILE *file = fopen(path, "rb");
    if (!file)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot open: %s", path, strerror(errno));
    struct stat info;
    if (fstat(fileno(file), &info) != 0 || !S_ISREG(info.st_mode)) {
        fclose(file);
        return ax_fail(AX_STATUS_BAD_FILE, "%s: not a regular file", path);
    }
    size_t size = (size_t)info.st_size;
    unsigned char *bytes = malloc(size + 1);
    if (!bytes) {
        fclose(file);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory for %zu bytes", path, size);
    }
    size_t got = fread(bytes, 1, size, file);
    fclose(file);
    if (got != size) {
        free(bytes);
        return ax_fail(AX_STATUS_BAD_FILE, "%s: read %zu of its %zu bytes", path, got, size);
    }
    return ax_jpeg_batch_parse(path, bytes, size, batch);
}

ax_status ax_jpeg_batch_parse(const char *path, unsigned char *bytes, size_t size,
                              ax_jpeg_batch *batch)
{
    memset(batch, 0, sizeof *batch);
    const unsigned char *p = bytes;
    ax_status status = AX_STATUS_OK;
    if (size < AX_JPEG_BATCH_HEADER || memcmp(p, AX_JPEG_BATCH_MAGIC, 8) != 0)
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: not a JPEG batch file (%zu bytes, no "
                         "\"AXJPEGB\" magic at byte 0)", path, size);
    else if (get_u32(p + 8) != AX_JPEG_BATCH_VERSION)
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: JPEG batch version %u at byte 8; this axon "
                         "reads version %d", path, get_u32(p + 8), AX_JPEG_BATCH_VERSION);
    else if (get_u32(p + 12) != AX_JPEG_BATCH_HEADER)
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: header size %u at byte 12, expected %d", path,
                         get_u32(p + 12), AX_JPEG_BATCH_HEADER);
    if (status != AX_STATUS_OK) {
        free(bytes);
        return status;
    }
    const uint64_t count = get_u64(p + 16), side = get_u64(p + 24), channels = get_u64(p + 32),
                   quality = get_u64(p + 40);
    const uint64_t table_slots = (size - AX_JPEG_BATCH_HEADER) / 8;
    if (count >= table_slots) /* count + 1 offsets must fit in the file */
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: claims %llu images at byte 16, but its %zu "
                         "bytes cannot hold their offsets", path, (unsigned long long)count, size);
    else if (side < 1 || side > 16384 || (channels != 1 && channels != 3) || quality > 100)
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: side %llu, channels %llu or quality %llu out "
                         "of range (bytes 24 to 47)", path, (unsigned long long)side,
                         (unsigned long long)channels, (unsigned long long)quality);
    const unsigned char *table = p + AX_JPEG_BATCH_HEADER;
    uint64_t previous = AX_JPEG_BATCH_HEADER + 8 * (count + 1);
    for (uint64_t i = 0; status == AX_STATUS_OK && i <= count; i++) {
        const uint64_t at = get_u64(table + 8 * i);
        const bool ok = i == 0 ? at == previous : at > previous && at <= size;
        if (!ok)
            status = ax_fail(AX_STATUS_BAD_FILE, "%s: offset %llu (byte %llu) is %llu: %s", path,
                             (unsigned long long)i, (unsigned long long)(48 + 8 * i),
                             (unsigned long long)at,
                             i == 0 ? "the images must start right after the table"
                                    : "outside the file or not after the previous image");
        previous = at;
    }
    if (status == AX_STATUS_OK && previous != size)
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: the last image ends at byte %llu but the file "
                         "has %zu bytes (truncated or extended)", path,
                         (unsigned long long)previous, size);
    if (status != AX_STATUS_OK) {
        free(bytes);
        return status;
    }
    batch->bytes = bytes;
    batch->size = size;
    batch->count = (int64_t)count;
    batch->side = (int64_t)side;
    batch->channels = (int64_t)channels;
    batch->quality = (int64_t)quality;
    batch->table = table;
    return AX_STATUS_OK;
}

void ax_jpeg_batch_release(ax_jpeg_batch *batch)
{
    free(batch->bytes);
    memset(batch, 0, sizeof *batch);
}

void ax_jpeg_batch_image(const ax_jpeg_batch *batch, int64_t i, const unsigned char **bytes,
                         size_t *size)
{
    const uint64_t from = get_u64(batch->table + 8 * i), to = get_u64(batch->table + 8 * (i + 1));
    *bytes = batch->bytes + from;
    *size = (size_t)(to - from);
}

ax_status ax_jpeg_batch_decode(const char *path, const ax_jpeg_batch *batch, int64_t i,
                               unsigned char *out)
{
    const unsigned char *bytes;
    size_t size;
    ax_jpeg_batch_image(batch, i, &bytes, &size);
    char why[256];
    if (!ax_jpeg_decode_exact(bytes, size, batch->side, batch->channels, out, why, sizeof why))
        return ax_fail(AX_STATUS_BAD_FILE, "%s: image %lld (bytes %llu to %llu): %s", path,
                       (long long)i, (unsigned long long)(bytes - batch->bytes),
                       (unsigned long long)(bytes - batch->bytes + size), why);
    return AX_STATUS_OK;
}

size_t ax_jpeg_batch_header_size(int64_t count)
{
    return AX_JPEG_BATCH_HEADER + 8 * (size_t)(count + 1);
}

void ax_jpeg_batch_header(unsigned char *header, int64_t count, int64_t side, int64_t channels,
                          int64_t quality, const size_t *sizes)
{
    memcpy(header, AX_JPEG_BATCH_MAGIC, 8);
    header[8] = AX_JPEG_BATCH_VERSION, header[9] = header[10] = header[11] = 0;
    header[12] = AX_JPEG_BATCH_HEADER, header[13] = header[14] = header[15] = 0;
    put_u64(header + 16, (uint64_t)count);
    put_u64(header + 24, (uint64_t)side);
    put_u64(header + 32, (uint64_t)channels);
    put_u64(header + 40, (uint64_t)quality);
    uint64_t at = ax_jpeg_batch_header_size(count);
    for (int64_t i = 0; i <= count; i++) {
        put_u64(header + AX_JPEG_BATCH_HEADER + 8 * i, at);
        if (i < count)
            at += sizes[i];
    }
}

ax_status ax_jpeg_batch_check_header(const char *path, int64_t *count, int64_t *side,
                                     int64_t *channels)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot open: %s", path, strerror(errno));
    struct stat info;
    unsigned char header[AX_JPEG_BATCH_HEADER];
    const bool regular = fstat(fileno(file), &info) == 0 && S_ISREG(info.st_mode);
    const size_t got = regular ? fread(header, 1, sizeof header, file) : 0;
    /* The table's last entry, the end of the last image: a truncated file
     * is found now, before training starts. */
    unsigned char end[8] = {0};
    const uint64_t n_claimed = got == sizeof header ? get_u64(header + 16) : 0;
    const bool end_read = got == sizeof header && n_claimed < ((uint64_t)info.st_size) / 8 &&
                          fseek(file, (long)(AX_JPEG_BATCH_HEADER + 8 * n_claimed), SEEK_SET) == 0 &&
                          fread(end, 1, 8, file) == 8;
    fclose(file);
    if (!regular)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: not a regular file", path);
    /* The header alone, as a file of its own size: parse checks the rest. */
    const size_t size = (size_t)info.st_size;
    if (got < sizeof header || memcmp(header, AX_JPEG_BATCH_MAGIC, 8) != 0 ||
        get_u32(header + 8) != AX_JPEG_BATCH_VERSION || get_u32(header + 12) != AX_JPEG_BATCH_HEADER)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: not a JPEG batch file of version %d (%zu bytes; "
                       "magic, version and header size are bytes 0 to 15)", path,
                       AX_JPEG_BATCH_VERSION, size);
    const uint64_t n = get_u64(header + 16);
    if (n >= (size - AX_JPEG_BATCH_HEADER) / 8)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: claims %llu images at byte 16, but its %zu bytes "
                       "cannot hold their offsets", path, (unsigned long long)n, size);
    if (!end_read || get_u64(end) != size)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: the last image ends at byte %llu but the file "
                       "has %zu bytes (truncated or extended)", path,
                       (unsigned long long)get_u64(end), size);
    *count = (int64_t)n;
    *side = (int64_t)get_u64(header + 24);
    *channels = (int64_t)get_u64(header + 32);
    return AX_STATUS_OK;
}
