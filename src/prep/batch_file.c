/* batch_file.c: the batch files of `axon prep` (docs/prep.md), written so
 * that an interruption at any moment leaves only complete batches, and
 * checked on a rerun before a batch is kept.
 *
 *   batch_NNNNN.npy         uint8 (k, S, S, C): images, row-major, RGB or grey
 *   batch_NNNNN_labels.npy  int32 (k): label numbers (meta.json names them)
 *
 * Each file goes to "NAME.tmp.PID" first (every write, the flush, fsync and
 * close checked: a full disk fails the run with the file named) and is then
 * renamed into place, the labels first: a data file present means both are
 * complete (base/atomic_file.h, which also syncs the folder). An interrupted run can leave such temporaries;
 * prep_remove_stale_temporaries removes them at the start of the next run,
 * by name and only when their process is gone.
 *
 * The batch buffer (prep_batch_buffer) is laid out so that the data file's
 * .npy header and pixels are one block-aligned run of memory, which is then
 * written with O_DIRECT: the device reads it straight from the buffer,
 * without the kernel's copy into fresh page-cache pages (in a VM each new
 * page costs a fault in the hypervisor too). The buffer is mapped once per
 * run on transparent huge pages, for the same reason. A file system that
 * refuses O_DIRECT gets ordinary writes; the bytes are the same. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_DIRECT, MAP_ANONYMOUS, MADV_HUGEPAGE */
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/error.h"
#include "data/jpeg_batch.h"
#include "io/npy_header.h"
#include "prep/prep.h"

void prep_batch_names(const char *dir, int64_t batch, char *data_path, char *labels_path,
                      size_t capacity)
{
    snprintf(data_path, capacity, "%s/batch_%05lld.npy", dir, (long long)batch);
    snprintf(labels_path, capacity, "%s/batch_%05lld_labels.npy", dir, (long long)batch);
}

void prep_batch_names_format(const char *dir, int64_t batch, int format, char *data_path,
                             char *labels_path, size_t capacity)
{
    prep_batch_names(dir, batch, data_path, labels_path, capacity);
    if (format == AX_PREP_FORMAT_JPEG)
        snprintf(data_path, capacity, "%s/batch_%05lld.jpegs", dir, (long long)batch);
}

/* O_DIRECT needs the memory, the file offset and the length aligned to the
 * device's logical block (512 bytes here, 4096 on some disks): 4096 fits
 * both. */
#define PREP_DIRECT_ALIGN 4096

/* prep's words for a failed step of an atomic write (base/atomic_file.h),
 * which has already removed the temporary: the target is named, and a full
 * disk is said to be one. */
static ax_status write_failure(const ax_atomic_file *file, ax_status status)
{
    switch (file->failed) {
    case AX_ATOMIC_STEP_CREATE:
        return ax_fail(status, "%s: cannot create: %s", file->temporary, strerror(file->error));
    case AX_ATOMIC_STEP_WRITE:
        return ax_fail(status, "%s: cannot write: %s%s", file->path, strerror(file->error),
                       file->error == ENOSPC || file->error == EDQUOT ? " (the disk is full)" : "");
    case AX_ATOMIC_STEP_RENAME:
        return ax_fail(status, "%s: cannot rename %s into place: %s", file->path,
                       file->temporary, strerror(file->error));
    default:
        return status;
    }
}

/* Opens path's temporary file and writes parts to it; the caller commits
 * it (fsync, rename) or abandons it. On failure nothing is left behind.
 * direct (one part, its start PREP_DIRECT_ALIGN-aligned): the aligned bulk
 * goes with O_DIRECT, the last partial block through the page cache; the
 * commit's fsync makes both durable, as with ordinary writes. */
/* The bulk of a direct write goes in pieces of this size, each reported
 * to the caller's progress function: the parts of the buffer written can be
 * reused while the rest is still going out. */
#define PREP_WRITE_PIECE ((size_t)8 << 20)

static ax_status write_temporary(ax_atomic_file *file, const char *path,
                                 const void *const *parts, const size_t *sizes, int count,
                                 bool direct, prep_write_progress progress, void *context)
{
    ax_status status = ax_atomic_file_open(file, path);
    if (status != AX_STATUS_OK)
        return write_failure(file, status);
#if defined(O_DIRECT)
    direct = direct && count == 1 && ((uintptr_t)parts[0] % PREP_DIRECT_ALIGN) == 0 &&
             sizes[0] >= PREP_DIRECT_ALIGN;
    if (direct) {
        /* A file system without O_DIRECT refuses it here (EINVAL): ordinary writes then. */
        int flags = fcntl(file->fd, F_GETFL);
        direct = flags >= 0 && fcntl(file->fd, F_SETFL, flags | O_DIRECT) == 0;
    }
#else
    direct = false;
#endif
    if (direct) {
        const unsigned char *data = parts[0];
        const size_t bulk = sizes[0] / PREP_DIRECT_ALIGN * PREP_DIRECT_ALIGN;
        for (size_t done = 0; done < bulk && status == AX_STATUS_OK;) {
            const size_t piece = bulk - done < PREP_WRITE_PIECE ? bulk - done : PREP_WRITE_PIECE;
            status = ax_atomic_file_write(file, data + done, piece);
            done += piece;
            if (status == AX_STATUS_OK && progress)
                progress(context, done);
        }
#if defined(O_DIRECT)
        int now = fcntl(file->fd, F_GETFL);
        if (status == AX_STATUS_OK && bulk < sizes[0] &&
            (now < 0 || fcntl(file->fd, F_SETFL, now & ~O_DIRECT) != 0)) {
            int error = errno;
            ax_atomic_file_abandon(file);
            file->failed = AX_ATOMIC_STEP_WRITE;
            file->error = error;
            status = AX_STATUS_IO_ERROR;
        }
#endif
        if (status == AX_STATUS_OK)
            status = ax_atomic_file_write(file, data + bulk, sizes[0] - bulk);
    } else {
        for (int p = 0; p < count && status == AX_STATUS_OK; p++)
            status = ax_atomic_file_write(file, parts[p], sizes[p]);
    }
    if (status != AX_STATUS_OK)
        return write_failure(file, status);
    if (progress)
        progress(context, SIZE_MAX); /* all of it: the buffer is free */
    return AX_STATUS_OK;
}

ax_status prep_write_file_atomic(const char *path, const void *data, size_t size)
{
    const void *parts[1] = {data};
    ax_atomic_file file;
    ax_status status = ax_file_write_atomic(path, parts, &size, 1, &file);
    return status == AX_STATUS_OK ? status : write_failure(&file, status);
}

/* A .npy 1.0 header, padded with spaces and a newline to 64 bytes. */
static size_t npy_header(char *header, size_t capacity, const char *descr, int rank,
                         const int64_t *shape)
{
    char dict[256];
    int used = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                        descr);
    for (int i = 0; i < rank; i++)
        used += snprintf(dict + used, sizeof dict - (size_t)used, "%lld,%s", (long long)shape[i],
                         i + 1 < rank ? " " : "");
    used += snprintf(dict + used, sizeof dict - (size_t)used, "), }");
    size_t total = 10 + (size_t)used + 1;
    total = (total + 63) / 64 * 64;
    if (total > capacity)
        return 0;
    memcpy(header, "\x93NUMPY\x01\x00", 8);
    size_t dict_length = total - 10;
    header[8] = (char)(dict_length & 0xff);
    header[9] = (char)(dict_length >> 8);
    memset(header + 10, ' ', dict_length);
    memcpy(header + 10, dict, (size_t)used);
    header[total - 1] = '\n';
    return total;
}

/* Transparent huge pages are 2 MiB: a buffer aligned to them is faulted
 * in 2 MiB at a time instead of 4 KiB (measured: 50 MB first touched in
 * 0.27 to 0.34 s on 4 KiB pages in this VM, 0.005 to 0.25 s on huge ones). */
#define PREP_HUGE_PAGE ((size_t)2 << 20)

ax_status prep_batch_buffer_create(prep_batch_buffer *buffer, int64_t images, int64_t side,
                                   int channels, int format, int quality)
{
    memset(buffer, 0, sizeof *buffer);
    buffer->format = format;
    buffer->quality = quality;
    if (format == AX_PREP_FORMAT_JPEG) {
        buffer->jpeg = calloc((size_t)images, sizeof *buffer->jpeg);
        buffer->jpeg_capacity = calloc((size_t)images, sizeof *buffer->jpeg_capacity);
        buffer->jpeg_size = calloc((size_t)images, sizeof *buffer->jpeg_size);
        if (!buffer->jpeg || !buffer->jpeg_capacity || !buffer->jpeg_size)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory for a batch of %lld "
                           "JPEGs", (long long)images);
        buffer->jpeg_slots = (size_t)images;
    }
    char header[256];
    const int64_t shape[4] = {images, side, side, channels};
    const size_t header_size = npy_header(header, sizeof header, "|u1", 4, shape);
    const size_t pixel_bytes = (size_t)images * (size_t)side * (size_t)side * (size_t)channels;
    /* [aligned block of header room][header of a full batch][pixels][slack] */
    const size_t used = PREP_DIRECT_ALIGN + header_size + pixel_bytes + PREP_DIRECT_ALIGN;
    const bool huge = used >= 2 * PREP_HUGE_PAGE;
    const size_t size = used + (huge ? PREP_HUGE_PAGE : 0);
    void *mapping = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory for a batch of %lld images "
                       "(%zu bytes): %s", (long long)images, size, strerror(errno));
    unsigned char *base = mapping;
    if (huge) {
        base += (PREP_HUGE_PAGE - (uintptr_t)base % PREP_HUGE_PAGE) % PREP_HUGE_PAGE;
#if defined(MADV_HUGEPAGE)
        madvise(base, used, MADV_HUGEPAGE); /* advice: without it, 4 KiB pages */
#endif
    }
    buffer->mapping = mapping;
    buffer->mapping_size = size;
    /* The header of a full batch then starts on an aligned address. */
    buffer->pixels = base + PREP_DIRECT_ALIGN + header_size;
    buffer->header_room = PREP_DIRECT_ALIGN + header_size;
    return AX_STATUS_OK;
}

unsigned char *prep_batch_header_start(const prep_batch_buffer *buffer, int64_t count,
                                       int64_t side, int channels)
{
    char header[256];
    const int64_t shape[4] = {count, side, side, channels};
    return buffer->pixels - npy_header(header, sizeof header, "|u1", 4, shape);
}

void prep_batch_buffer_free(prep_batch_buffer *buffer)
{
    if (buffer->jpeg)
        for (size_t i = 0; i < buffer->jpeg_slots; i++)
            free(buffer->jpeg[i]);
    free(buffer->jpeg);
    free(buffer->jpeg_capacity);
    free(buffer->jpeg_size);
    if (buffer->mapping)
        munmap(buffer->mapping, buffer->mapping_size);
    memset(buffer, 0, sizeof *buffer);
}

ax_status prep_batch_write(const char *dir, int64_t batch, prep_batch_buffer *buffer,
                           const int32_t *labels, int64_t count, int64_t side, int channels,
                           prep_write_progress progress, void *context)
{
    char data_path[4096], labels_path[4096];
    prep_batch_names(dir, batch, data_path, labels_path, sizeof data_path);
    char data_header[256], labels_header[256];
    const int64_t data_shape[4] = {count, side, side, channels};
    size_t data_header_size = npy_header(data_header, sizeof data_header, "|u1", 4, data_shape);
    size_t labels_header_size = npy_header(labels_header, sizeof labels_header, "<i4", 1, &count);
    /* int32 little-endian on disk whatever the host. */
    unsigned char *label_bytes = malloc((size_t)(count > 0 ? count : 1) * 4);
    if (!label_bytes)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
    for (int64_t i = 0; i < count; i++) {
        uint32_t v = (uint32_t)labels[i];
        for (int b = 0; b < 4; b++)
            label_bytes[4 * i + b] = (unsigned char)(v >> (8 * b));
    }
    const void *label_parts[2] = {labels_header, label_bytes};
    const size_t label_sizes[2] = {labels_header_size, (size_t)count * 4};
    ax_atomic_file labels_file, data_file;
    if (buffer->format == AX_PREP_FORMAT_JPEG)
        prep_batch_names_format(dir, batch, buffer->format, data_path, labels_path,
                                sizeof data_path);
    ax_status status = write_temporary(&labels_file, labels_path, label_parts, label_sizes, 2,
                                       false, NULL, NULL);
    free(label_bytes);
    AX_TRY(status);
    if (buffer->format == AX_PREP_FORMAT_JPEG) {
        /* Header and table, then each slot's JPEG: one part each. */
        const size_t header_size = ax_jpeg_batch_header_size(count);
        unsigned char *header = malloc(header_size);
        const void **parts = malloc((size_t)(count + 1) * sizeof *parts);
        size_t *sizes = malloc((size_t)(count + 1) * sizeof *sizes);
        if (!header || !parts || !sizes)
            status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
        if (status == AX_STATUS_OK) {
            ax_jpeg_batch_header(header, count, side, channels, buffer->quality,
                                 buffer->jpeg_size);
            parts[0] = header, sizes[0] = header_size;
            for (int64_t i = 0; i < count; i++)
                parts[i + 1] = buffer->jpeg[i], sizes[i + 1] = buffer->jpeg_size[i];
            status = write_temporary(&data_file, data_path, parts, sizes, (int)(count + 1),
                                     false, progress, context);
        }
        free(header);
        free(parts);
        free(sizes);
    } else {
        /* The header goes just before the pixels: one run of memory, aligned
         * when its size is a full batch's (write_temporary checks). */
        const size_t pixel_bytes = (size_t)count * (size_t)(side * side * channels);
        unsigned char *start = prep_batch_header_start(buffer, count, side, channels);
        const char *direct_text = getenv("AXON_PREP_BUFFERED_WRITE");
        const bool direct = !(direct_text && strcmp(direct_text, "1") == 0);
        memcpy(start, data_header, data_header_size);
        const void *data_parts[1] = {start};
        const size_t data_sizes[1] = {data_header_size + pixel_bytes};
        status = write_temporary(&data_file, data_path, data_parts, data_sizes, 1, direct,
                                 progress, context);
    }
    if (status != AX_STATUS_OK) {
        ax_atomic_file_abandon(&labels_file);
        return status;
    }
    /* The labels first: a data file in place means both are complete. */
    const ax_atomic_file *failed = &labels_file;
    status = ax_atomic_file_commit(&labels_file);
    if (status == AX_STATUS_OK) {
        failed = &data_file;
        status = ax_atomic_file_commit(&data_file);
    }
    ax_atomic_file_abandon(&data_file); /* nothing left to do after a commit */
    if (status != AX_STATUS_OK && failed->failed == AX_ATOMIC_STEP_RENAME)
        return ax_fail(status, "%s: cannot rename into place: %s", data_path,
                       strerror(failed->error));
    return status == AX_STATUS_OK ? status : write_failure(failed, status);
}

/* A JPEG batch to keep: its header agrees and every image decodes (into
 * *pixels, (count, S, S, C), for the sums). */
static bool jpeg_batch_usable(const char *path, int64_t side, int channels, int64_t max_count,
                              int64_t *count, unsigned char **pixels)
{
    ax_jpeg_batch jpeg;
    if (ax_jpeg_batch_read(path, &jpeg) != AX_STATUS_OK)
        return false;
    bool ok = jpeg.count >= 1 && jpeg.count <= max_count && jpeg.side == side &&
              jpeg.channels == channels;
    const size_t image_bytes = (size_t)(side * side * channels);
    if (ok && pixels)
        ok = (*pixels = malloc((size_t)jpeg.count * image_bytes)) != NULL;
    for (int64_t i = 0; ok && pixels && i < jpeg.count; i++)
        ok = ax_jpeg_batch_decode(path, &jpeg, i, *pixels + (size_t)i * image_bytes) ==
             AX_STATUS_OK;
    *count = ok ? jpeg.count : 0;
    ax_jpeg_batch_release(&jpeg);
    return ok;
}

bool prep_batch_reuse(const char *dir, int64_t batch, int format, int64_t side, int channels,
                      int64_t max_count, int32_t label_count, int64_t *count, uint64_t *sums,
                      ax_color_moments *moments, int64_t *label_counts)
{
    char data_path[4096], labels_path[4096];
    prep_batch_names_format(dir, batch, format, data_path, labels_path, sizeof data_path);
    struct stat info;
    if (stat(data_path, &info) != 0 || stat(labels_path, &info) != 0)
        return false;
    if (format == AX_PREP_FORMAT_JPEG) {
        npy_array labels;
        unsigned char *label_bytes = NULL, *pixel_bytes = NULL;
        int64_t images = 0;
        bool ok = ax_npy_open(labels_path, &labels) == AX_STATUS_OK;
        ok = ok && jpeg_batch_usable(data_path, side, channels, max_count, &images,
                                     sums ? &pixel_bytes : NULL) &&
             labels.kind == NPY_KIND_SIGNED && labels.item_bytes == 4 && labels.dims == 1 &&
             labels.shape[0] == images && ax_npy_read_data(&labels, &label_bytes) == AX_STATUS_OK;
        for (int64_t i = 0; ok && i < images; i++) {
            double label = ax_npy_element(&labels, label_bytes, (size_t)i);
            ok = label >= 0 && label < label_count;
        }
        if (ok) {
            *count = images;
            const size_t image_bytes = (size_t)(side * side * channels);
            for (int64_t i = 0; sums && i < images; i++)
                for (size_t j = 0; j < image_bytes; j++)
                    sums[j] += pixel_bytes[(size_t)i * image_bytes + j];
            if (sums && moments && channels == 3)
                ax_color_moments_add(moments, pixel_bytes, images * side * side);
            for (int64_t i = 0; label_counts && i < images; i++)
                label_counts[(int64_t)ax_npy_element(&labels, label_bytes, (size_t)i)]++;
        }
        free(label_bytes);
        free(pixel_bytes);
        ax_npy_close(&labels);
        return ok;
    }
    npy_array data, labels;
    bool ok = ax_npy_open(data_path, &data) == AX_STATUS_OK;
    ok = ax_npy_open(labels_path, &labels) == AX_STATUS_OK && ok;
    unsigned char *label_bytes = NULL, *pixel_bytes = NULL;
    ok = ok && data.kind == NPY_KIND_UNSIGNED && data.item_bytes == 1 && data.dims == 4 &&
         data.shape[0] >= 1 && data.shape[0] <= max_count && data.shape[1] == side &&
         data.shape[2] == side && data.shape[3] == channels && labels.kind == NPY_KIND_SIGNED &&
         labels.item_bytes == 4 && labels.dims == 1 && labels.shape[0] == data.shape[0];
    ok = ok && ax_npy_read_data(&labels, &label_bytes) == AX_STATUS_OK;
    for (int64_t i = 0; ok && i < labels.count; i++) {
        double label = ax_npy_element(&labels, label_bytes, (size_t)i);
        ok = label >= 0 && label < label_count;
    }
    if (ok && sums)
        ok = ax_npy_read_data(&data, &pixel_bytes) == AX_STATUS_OK;
    if (ok) {
        *count = data.shape[0];
        if (sums) {
            const size_t image_bytes = (size_t)(side * side * channels);
            for (int64_t i = 0; i < data.shape[0]; i++)
                for (size_t j = 0; j < image_bytes; j++)
                    sums[j] += pixel_bytes[(size_t)i * image_bytes + j];
            if (moments && channels == 3)
                ax_color_moments_add(moments, pixel_bytes, data.shape[0] * side * side);
        }
        if (label_counts)
            for (int64_t i = 0; i < labels.count; i++)
                label_counts[(int64_t)ax_npy_element(&labels, label_bytes, (size_t)i)]++;
    }
    free(label_bytes);
    free(pixel_bytes);
    ax_npy_close(&data);
    ax_npy_close(&labels);
    return ok;
}

/* True when name is "X.tmp.PID" for an X this program writes; *pid is PID. */
static bool own_temporary(const char *name, long *pid)
{
    const char *tmp = strstr(name, ".tmp.");
    if (!tmp)
        return false;
    const char *digits = tmp + 5;
    if (!*digits || strspn(digits, "0123456789") != strlen(digits) || strlen(digits) > 9)
        return false;
    *pid = atol(digits);
    size_t base = (size_t)(tmp - name);
    static const char *const fixed[] = {"meta.json", "mean.npy", "plan.json"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (base == strlen(fixed[i]) && strncmp(name, fixed[i], base) == 0)
            return true;
    /* batch_ + at least 5 digits + ".npy" or "_labels.npy" */
    if (strncmp(name, "batch_", 6) != 0)
        return false;
    size_t number = strspn(name + 6, "0123456789");
    if (number < 5 || 6 + number > base)
        return false;
    const char *rest = name + 6 + number;
    size_t rest_length = base - 6 - number;
    return (rest_length == 4 && strncmp(rest, ".npy", 4) == 0) ||
           (rest_length == 6 && strncmp(rest, ".jpegs", 6) == 0) ||
           (rest_length == 11 && strncmp(rest, "_labels.npy", 11) == 0);
}

ax_status prep_remove_stale_temporaries(const char *dir, prep_warnings *warnings)
{
    DIR *folder = opendir(dir);
    if (!folder)
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot list the output folder: %s", dir,
                       strerror(errno));
    int64_t removed = 0;
    char first[300] = "";
    struct dirent *entry;
    ax_status status = AX_STATUS_OK;
    while ((entry = readdir(folder)) != NULL) {
        long pid = 0;
        if (!own_temporary(entry->d_name, &pid))
            continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, entry->d_name);
        struct stat info;
        if (lstat(path, &info) != 0 || !S_ISREG(info.st_mode))
            continue; /* only plain files are ours */
        if (pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM)) {
            /* Its process runs: maybe a run into the same folder now, or
             * an unrelated process that got the same number. Left alone. */
            prep_warn(warnings, "%s: left alone: a temporary file whose process %ld is running",
                      path, pid);
            continue;
        }
        if (unlink(path) != 0) {
            status = ax_fail(AX_STATUS_IO_ERROR, "%s: cannot remove this stale temporary: %s",
                             path, strerror(errno));
            break;
        }
        if (removed++ == 0)
            snprintf(first, sizeof first, "%s", entry->d_name);
    }
    closedir(folder);
    if (removed > 0)
        prep_warn(warnings,
                  "%s: removed %lld stale temporary file%s (%s%s) left by an interrupted run",
                  dir, (long long)removed, removed == 1 ? "" : "s", first,
                  removed > 1 ? ", ..." : "");
    return status;
}
