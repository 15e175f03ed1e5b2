/* idx.c: loads MNIST-format IDX files (LeCun's MNIST, Zalando's
 * Fashion-MNIST): an images file (magic 0x00000803, uint8 (n, rows, cols))
 * and a labels file (magic 0x00000801, uint8 (n)), either gzipped or plain.
 *
 * Every number in a header is checked before it is trusted. A plain file
 * must hold exactly the bytes its header promises, checked against the file
 * size before anything is allocated. A gzipped file cannot tell its size up
 * front: when its trailer's size agrees with the header, pixels are
 * inflated in 1 MiB chunks and scaled straight into the dataset; otherwise
 * they are first read into a buffer that grows only as data actually
 * arrives, so a lying header commits no memory. Either way truncation is
 * reported at the image where the data ran out, and trailing data is an
 * error too.
 *
 * A row range (ax_dataset_load_idx_rows, an MPI rank's shard) seeks a plain
 * file to its first image, or inflates and discards a gzipped one up to it,
 * and stops after its last image: images after the range are not read. The
 * labels file is read whole (a byte per image) for the file's classes.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/error.h"
#include "base/memory.h"
#include "data/dataset.h"

enum {
    IDX_MAGIC_LABELS = 0x00000801,
    IDX_MAGIC_IMAGES = 0x00000803,
};

/* Reads this large let zlib inflate straight into our buffer (no extra
 * copy) while the chunk stays in cache for the conversion to float. */
static const size_t idx_staging_bytes = (size_t)1 << 20;

typedef struct idx_file {
    const char *path;
    gzFile gz;
    int64_t body_bytes;   /* bytes after the header for a plain file, -1 when unknown (gzip) */
    int64_t gzip_size;    /* a gzip trailer's uncompressed size (mod 2^32), -1 if none */
    int64_t header_bytes; /* set by idx_read_header */
} idx_file;

static void idx_close(idx_file *file)
{
    if (file->gz)
        gzclose(file->gz);
    file->gz = NULL;
}

static bool looks_gzipped(int fd)
{
    unsigned char head[2];
    return pread(fd, head, 2, 0) == 2 && head[0] == 0x1f && head[1] == 0x8b;
}

/* ISIZE, the last 4 bytes of a gzip member (RFC 1952): its uncompressed
 * size mod 2^32. Only a hint: the file may be cut short or hold several
 * members. */
static int64_t gzip_trailer_size(int fd, off_t file_size)
{
    unsigned char tail[4];
    if (pread(fd, tail, 4, file_size - 4) != 4)
        return -1;
    return (int64_t)((uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 |
                     (uint32_t)tail[3] << 24);
}

static ax_status idx_open(const char *path, idx_file *file)
{
    file->path = path;
    file->gz = NULL;
    file->body_bytes = -1;
    file->gzip_size = -1;
    file->header_bytes = 0;
    /* open() ourselves rather than gzopen() so that errno is reliably the reason. */
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot open: %s", path, strerror(errno));
    struct stat info;
    if (fstat(fd, &info) != 0) {
        int error = errno;
        close(fd);
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot read: %s", path, strerror(error));
    }
    if (S_ISDIR(info.st_mode)) {
        close(fd);
        return ax_fail(AX_STATUS_BAD_FILE, "%s: is a folder, not an IDX file", path);
    }
    if (info.st_size == 0) {
        close(fd);
        return ax_fail(AX_STATUS_BAD_FILE, "%s: the file is empty", path);
    }
    if (S_ISREG(info.st_mode) && !looks_gzipped(fd))
        file->body_bytes = (int64_t)info.st_size; /* header size subtracted by the caller */
    else if (S_ISREG(info.st_mode) && info.st_size >= 18)
        file->gzip_size = gzip_trailer_size(fd, info.st_size);
    file->gz = gzdopen(fd, "rb");
    if (!file->gz) {
        close(fd);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: cannot start decompression", path);
    }
    gzbuffer(file->gz, 256 * 1024);
    return AX_STATUS_OK;
}

/* zlib's message without the "<fd:3>: " that gzdopen'd files get. */
static const char *zlib_message(gzFile gz)
{
    int code;
    const char *message = gzerror(gz, &code);
    if (strncmp(message, "<fd:", 4) == 0 && strstr(message, ": "))
        message = strstr(message, ": ") + 2;
    return message;
}

/* Reads up to `bytes`, returning how many arrived; a zlib failure sets *error. */
static size_t idx_read(idx_file *file, void *buffer, size_t bytes, const char **error)
{
    size_t done = 0;
    *error = NULL;
    while (done < bytes) {
        /* gzread takes an unsigned count and returns an int. */
        size_t want = bytes - done < (size_t)1 << 30 ? bytes - done : (size_t)1 << 30;
        int got = gzread(file->gz, (unsigned char *)buffer + done, (unsigned)want);
        if (got < 0) {
            *error = zlib_message(file->gz);
            return done;
        }
        if (got == 0) {
            int code;
            gzerror(file->gz, &code);
            /* Z_BUF_ERROR: the gzip stream itself was cut short. */
            if (code != Z_OK)
                *error = zlib_message(file->gz);
            return done;
        }
        done += (size_t)got;
    }
    return done;
}

static const char *magic_hint(uint32_t magic)
{
    switch (magic) {
    case IDX_MAGIC_IMAGES: return " (this is an images file)";
    case IDX_MAGIC_LABELS: return " (this is a labels file)";
    default: return "";
    }
}

/* Reads the magic number and `dims` big-endian uint32 dimensions. */
static ax_status idx_read_header(idx_file *file, uint32_t expected_magic, int dims,
                                 uint32_t *shape)
{
    unsigned char header[16];
    const size_t header_bytes = 4 + 4 * (size_t)dims;
    const char *zlib_error;
    size_t got = idx_read(file, header, header_bytes, &zlib_error);
    if (got < 4 && zlib_error)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot decompress (zlib: %s)", file->path,
                       zlib_error);
    if (got < 4)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: too short for an IDX file (%zu bytes)",
                       file->path, got);
    uint32_t magic = (uint32_t)header[0] << 24 | (uint32_t)header[1] << 16 |
                     (uint32_t)header[2] << 8 | header[3];
    if (magic != expected_magic)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: not an IDX %s file: magic number 0x%08x%s, expected 0x%08x",
                       file->path, expected_magic == IDX_MAGIC_IMAGES ? "images" : "labels",
                       magic, magic_hint(magic), expected_magic);
    if (got < header_bytes)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: truncated header: it needs %zu bytes but the file holds only %zu",
                       file->path, header_bytes, got);
    for (int i = 0; i < dims; i++) {
        const unsigned char *p = header + 4 + 4 * i;
        shape[i] = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    }
    file->header_bytes = (int64_t)header_bytes;
    if (file->body_bytes >= 0)
        file->body_bytes -= (int64_t)header_bytes;
    return AX_STATUS_OK;
}

/* Refuses a plain file whose size disagrees with its header, before
 * anything is allocated. */
static ax_status idx_check_size(const idx_file *file, uint64_t count, uint64_t item_bytes,
                                const char *items)
{
    const uint64_t total = count * item_bytes; /* the caller has ruled out overflow */
    if (file->body_bytes < 0)
        return AX_STATUS_OK;
    if ((uint64_t)file->body_bytes < total)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: truncated: header promises %llu %s (%llu bytes) but the file "
                       "holds only %llu",
                       file->path, (unsigned long long)count, items, (unsigned long long)total,
                       (unsigned long long)file->body_bytes);
    if ((uint64_t)file->body_bytes > total)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: trailing data: %llu bytes more than the %llu %s its header "
                       "promises (%llu bytes)",
                       file->path, (unsigned long long)file->body_bytes - total,
                       (unsigned long long)count, items, (unsigned long long)total);
    return AX_STATUS_OK;
}

/* Receives the body in chunks: bytes [offset, offset + bytes). */
typedef void (*idx_sink)(void *context, const uint8_t *chunk, size_t offset, size_t bytes);

/* Streams items [first, first + n) of the count the header promises (the
 * file positioned at item first) through staging into sink, offsets counted
 * from item first (sink may be NULL: the bytes are skipped). When they are
 * the last items, makes sure nothing follows them. */
static ax_status idx_read_items(idx_file *file, uint64_t count, uint64_t item_bytes,
                                const char *items, uint64_t first, uint64_t n, uint8_t *staging,
                                size_t staging_bytes, idx_sink sink, void *context)
{
    const uint64_t total = count * item_bytes, start = first * item_bytes, bytes = n * item_bytes;
    const char *zlib_error = NULL;
    uint64_t done = 0;
    while (done < bytes) {
        size_t want = bytes - done < staging_bytes ? (size_t)(bytes - done) : staging_bytes;
        size_t got = idx_read(file, staging, want, &zlib_error);
        if (got && sink)
            sink(context, staging, (size_t)done, got);
        done += got;
        if (got < want) {
            /* The data ran out: say at which item, the unit the user knows. */
            char why[160] = "";
            if (zlib_error)
                snprintf(why, sizeof why, " (zlib: %s)", zlib_error);
            return ax_fail(AX_STATUS_BAD_FILE,
                           "%s: truncated: header promises %llu %s (%llu bytes) but the data "
                           "runs out at %s %llu (0-based) after %llu bytes%s",
                           file->path, (unsigned long long)count, items,
                           (unsigned long long)total, items[0] == 'i' ? "image" : "label",
                           (unsigned long long)((start + done) / item_bytes),
                           (unsigned long long)(start + done), why);
        }
    }
    if (first + n < count)
        return AX_STATUS_OK; /* a range that stops early: what follows is not read */
    /* Reading on to the end also verifies a gzip stream's CRC and length. */
    unsigned char extra;
    size_t more = idx_read(file, &extra, 1, &zlib_error);
    if (more != 0)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: trailing data after the %llu %s its header promises (%llu bytes)",
                       file->path, (unsigned long long)count, items, (unsigned long long)total);
    if (zlib_error)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: damaged gzip stream after all %llu %s (zlib: %s)",
                       file->path, (unsigned long long)count, items, zlib_error);
    return AX_STATUS_OK;
}

/* Moves a file positioned just after its header to item first: a plain
 * file seeks (its size was checked against the header), a gzipped one is
 * inflated and discarded in staging-sized chunks, so that nothing before the
 * range is kept and truncation before it is still reported. */
static ax_status idx_skip(idx_file *file, uint64_t count, uint64_t item_bytes, const char *items,
                          uint64_t first, uint8_t *staging, size_t staging_bytes)
{
    if (first == 0)
        return AX_STATUS_OK;
    if (file->body_bytes < 0)
        return idx_read_items(file, count, item_bytes, items, 0, first, staging, staging_bytes,
                              NULL, NULL);
    /* gzseek on a plain file is an lseek (zlib's transparent mode). */
    const uint64_t offset = (uint64_t)file->header_bytes + first * item_bytes;
    if (gzseek(file->gz, (z_off_t)offset, SEEK_SET) != (z_off_t)offset)
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot seek to %s %llu (byte %llu): %s",
                       file->path, items[0] == 'i' ? "image" : "label",
                       (unsigned long long)first, (unsigned long long)offset,
                       zlib_message(file->gz));
    return AX_STATUS_OK;
}

/* A sink that keeps the bytes in a buffer grown as they arrive, so that a
 * gzip header promising more than the file holds commits no memory for the
 * bytes that never come. */
typedef struct byte_buffer {
    uint8_t *data;
    size_t capacity;
    bool failed;
} byte_buffer;

static void keep_bytes(void *context, const uint8_t *chunk, size_t offset, size_t bytes)
{
    byte_buffer *buffer = context;
    if (buffer->failed)
        return;
    if (offset + bytes > buffer->capacity) {
        size_t grown = buffer->capacity ? buffer->capacity : 1 << 16;
        while (grown < offset + bytes)
            grown *= 2;
        uint8_t *bigger = realloc(buffer->data, grown);
        if (!bigger) {
            buffer->failed = true;
            return;
        }
        buffer->data = bigger;
        buffer->capacity = grown;
    }
    memcpy(buffer->data + offset, chunk, bytes);
}

/* A sink that scales pixels straight into the dataset: a plain loop over
 * restrict pointers, which the compiler vectorises. */
static void scale_pixels(void *context, const uint8_t *chunk, size_t offset, size_t bytes)
{
    float *restrict out = (float *)context + offset;
    const uint8_t *restrict raw = chunk;
    for (size_t i = 0; i < bytes; i++)
        out[i] = (float)raw[i] / 255.0f;
}

/* True when the body size is known before reading: a plain file (checked
 * against its header already) or a single-member gzip file whose trailer
 * records the uncompressed size the header implies. */
static bool idx_size_trusted(const idx_file *file, uint64_t body_bytes)
{
    if (file->body_bytes >= 0)
        return true;
    return file->gzip_size >= 0 &&
           (uint32_t)file->gzip_size == (uint32_t)(file->header_bytes + body_bytes);
}

/* Labels are read whole whatever the range (one byte per image): the
 * classes are the largest label of the file plus one, the same for every
 * range, and the labels file is checked to its end. */
typedef struct label_sink {
    int32_t *labels;      /* the range's labels */
    uint64_t first, n;    /* the range */
    uint8_t largest;
} label_sink;

static void keep_labels(void *context, const uint8_t *chunk, size_t offset, size_t bytes)
{
    label_sink *sink = context;
    for (size_t i = 0; i < bytes; i++) {
        const uint64_t item = (uint64_t)(offset + i);
        sink->largest = chunk[i] > sink->largest ? chunk[i] : sink->largest;
        if (item - sink->first < sink->n) /* unsigned: also false below first */
            sink->labels[item - sink->first] = chunk[i];
    }
}

static ax_status read_labels(idx_file *labels, uint64_t count, uint64_t first, uint64_t n,
                             uint8_t *staging, size_t staging_bytes, ax_dataset *dataset)
{
    label_sink sink = {.labels = dataset->labels, .first = first, .n = n};
    AX_TRY(idx_read_items(labels, count, 1, "labels", 0, count, staging, staging_bytes,
                          keep_labels, &sink));
    dataset->classes = (int64_t)sink.largest + 1;
    return AX_STATUS_OK;
}

/* Both headers are read before any body, so that a mismatched pair fails at once. */
static ax_status load_pair(idx_file *images, idx_file *labels, const int64_t *range,
                           uint8_t *staging, size_t staging_bytes, ax_dataset **out)
{
    uint32_t image_shape[3] = {0}, label_shape[1] = {0};
    AX_TRY(idx_read_header(images, IDX_MAGIC_IMAGES, 3, image_shape));
    AX_TRY(idx_read_header(labels, IDX_MAGIC_LABELS, 1, label_shape));
    const uint64_t count = image_shape[0];
    const uint64_t pixels = (uint64_t)image_shape[1] * image_shape[2]; /* < 2^64 */
    if (count == 0)
        return ax_fail(AX_STATUS_BAD_DATA, "%s: the header says it holds no images",
                       images->path);
    if (pixels == 0)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: absurd image size %u x %u in the header",
                       images->path, image_shape[1], image_shape[2]);
    /* Image bytes, then 4 bytes per float: both must fit in 63 bits. */
    if (pixels > (uint64_t)INT64_MAX / 4 / count)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: header promises %llu images of %u x %u pixels: too large to exist",
                       images->path, (unsigned long long)count, image_shape[1],
                       image_shape[2]);
    if (label_shape[0] != count)
        return ax_fail(AX_STATUS_BAD_DATA, "%s holds %llu images but %s holds %u labels",
                       images->path, (unsigned long long)count, labels->path, label_shape[0]);
    AX_TRY(idx_check_size(images, count, pixels, "images"));
    AX_TRY(idx_check_size(labels, count, 1, "labels"));
    /* range: {first, count}, or NULL for the whole file. */
    if (range)
        AX_TRY(ax_row_range_check(images->path, (int64_t)count, "images", range[0], range[1]));
    const uint64_t first = range ? (uint64_t)range[0] : 0;
    const uint64_t n = range ? (uint64_t)range[1] : count;
    char what[600];
    snprintf(what, sizeof what, "%s (%llu images of %u x %u)", images->path,
             (unsigned long long)n, image_shape[1], image_shape[2]);
    AX_TRY(ax_memory_check((size_t)(n * pixels * sizeof(float)), what));
    AX_TRY(idx_skip(images, count, pixels, "images", first, staging, staging_bytes));

    const uint64_t total = n * pixels;
    uint8_t *raw = NULL;
    if (!idx_size_trusted(images, count * pixels)) {
        /* The header may promise more than the file holds: read the bytes first. */
        byte_buffer buffer = {0};
        ax_status status = idx_read_items(images, count, pixels, "images", first, n, staging,
                                          staging_bytes, keep_bytes, &buffer);
        if (status == AX_STATUS_OK && buffer.failed)
            status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory for %llu bytes",
                             images->path, (unsigned long long)total);
        if (status != AX_STATUS_OK) {
            free(buffer.data);
            return status;
        }
        raw = buffer.data;
    }
    ax_status status =
        ax_dataset_allocate((int64_t)n, (int64_t)pixels, 1, 0, images->path, out);
    if (status == AX_STATUS_OK) {
        (*out)->image_shape[0] = image_shape[1];
        (*out)->image_shape[1] = image_shape[2];
        (*out)->image_shape[2] = 1;
        if (raw)
            scale_pixels((*out)->feature_values, raw, 0, (size_t)total);
        else
            status = idx_read_items(images, count, pixels, "images", first, n, staging,
                                    staging_bytes, scale_pixels, (*out)->feature_values);
    }
    free(raw);
    if (status == AX_STATUS_OK) {
        status = read_labels(labels, count, first, n, staging, staging_bytes, *out);
        /* A bad label names its own file, not the images'. */
        snprintf((*out)->labels_source, sizeof (*out)->labels_source, "%s", labels->path);
    }
    if (status != AX_STATUS_OK) {
        ax_dataset_free(*out);
        *out = NULL;
    }
    return status;
}

static ax_status load_files(const char *images_path, const char *labels_path,
                            const int64_t *range, ax_dataset **out)
{
    *out = NULL;
    if (!images_path || !labels_path)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "IDX loading needs both an images and a labels file");
    /* One staging buffer, small enough to stay in cache while it is converted. */
    uint8_t *staging = malloc(idx_staging_bytes);
    if (!staging)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", images_path);
    idx_file images, labels = {0};
    ax_status status = idx_open(images_path, &images);
    if (status == AX_STATUS_OK)
        status = idx_open(labels_path, &labels);
    if (status == AX_STATUS_OK)
        status = load_pair(&images, &labels, range, staging, idx_staging_bytes, out);
    idx_close(&images);
    idx_close(&labels);
    free(staging);
    return status;
}

ax_status ax_dataset_load_idx(const char *images_path, const char *labels_path, ax_dataset **out)
{
    return load_files(images_path, labels_path, NULL, out);
}

ax_status ax_dataset_load_idx_rows(const char *images_path, const char *labels_path,
                                   int64_t first, int64_t count, ax_dataset **out)
{
    const int64_t range[2] = {first, count};
    return load_files(images_path, labels_path, range, out);
}

ax_status ax_dataset_count_idx(const char *images_path, int64_t *rows)
{
    *rows = 0;
    if (!images_path)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "no IDX images file given");
    idx_file images;
    uint32_t shape[3] = {0};
    ax_status status = idx_open(images_path, &images);
    if (status == AX_STATUS_OK)
        status = idx_read_header(&images, IDX_MAGIC_IMAGES, 3, shape);
    idx_close(&images);
    *rows = status == AX_STATUS_OK ? (int64_t)shape[0] : 0;
    return status;
}

/* Finds dir/name or dir/name.gz, preferring the plain file (faster to read). */
static bool find_member(const char *dir, const char *name, char *path, size_t capacity,
                        char *looked_for, size_t looked_capacity)
{
    static const char *const suffixes[] = {"", ".gz"};
    struct stat info;
    for (int i = 0; i < 2; i++) {
        snprintf(path, capacity, "%s/%s%s", dir, name, suffixes[i]);
        if (stat(path, &info) == 0 && !S_ISDIR(info.st_mode))
            return true;
    }
    size_t used = strlen(looked_for);
    snprintf(looked_for + used, looked_capacity - used, "%s%s, %s.gz", used ? ", " : "", name,
             name);
    return false;
}

/* The images and labels files of a folder's train or t10k pair. */
static ax_status find_pair(const char *dir, bool test, char *images_path, char *labels_path,
                           size_t capacity)
{
    struct stat info;
    if (!dir || stat(dir, &info) != 0)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot open folder: %s", dir ? dir : "(null)",
                       dir ? strerror(errno) : "no folder given");
    if (!S_ISDIR(info.st_mode))
        return ax_fail(AX_STATUS_BAD_FILE, "%s: is not a folder", dir);
    const char *prefix = test ? "t10k" : "train";
    char images_name[64], labels_name[64];
    snprintf(images_name, sizeof images_name, "%s-images-idx3-ubyte", prefix);
    snprintf(labels_name, sizeof labels_name, "%s-labels-idx1-ubyte", prefix);
    char looked_for[512] = "";
    bool have_images = find_member(dir, images_name, images_path, capacity, looked_for,
                                   sizeof looked_for);
    bool have_labels = find_member(dir, labels_name, labels_path, capacity, looked_for,
                                   sizeof looked_for);
    if (!have_images || !have_labels)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: no MNIST-format %s set: looked for %s", dir,
                       test ? "test" : "training", looked_for);
    return AX_STATUS_OK;
}

ax_status ax_dataset_load_idx_dir(const char *dir, bool test, ax_dataset **out)
{
    *out = NULL;
    char images_path[4096], labels_path[4096];
    AX_TRY(find_pair(dir, test, images_path, labels_path, sizeof images_path));
    return ax_dataset_load_idx(images_path, labels_path, out);
}

ax_status ax_dataset_load_idx_dir_rows(const char *dir, bool test, int64_t first, int64_t count,
                                       ax_dataset **out)
{
    *out = NULL;
    char images_path[4096], labels_path[4096];
    AX_TRY(find_pair(dir, test, images_path, labels_path, sizeof images_path));
    return ax_dataset_load_idx_rows(images_path, labels_path, first, count, out);
}

ax_status ax_dataset_count_idx_dir(const char *dir, bool test, int64_t *rows)
{
    *rows = 0;
    char images_path[4096], labels_path[4096];
    AX_TRY(find_pair(dir, test, images_path, labels_path, sizeof images_path));
    return ax_dataset_count_idx(images_path, rows);
}
