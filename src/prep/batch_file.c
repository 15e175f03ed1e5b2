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
 * complete. An interrupted run can leave such temporaries;
 * prep_remove_stale_temporaries removes them at the start of the next run,
 * by name and only when their process is gone. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "io/npy_header.h"
#include "prep/prep.h"

void prep_batch_names(const char *dir, int64_t batch, char *data_path, char *labels_path,
                      size_t capacity)
{
    snprintf(data_path, capacity, "%s/batch_%05lld.npy", dir, (long long)batch);
    snprintf(labels_path, capacity, "%s/batch_%05lld_labels.npy", dir, (long long)batch);
}

/* Writes parts to path's temporary file; on success *temp_path is that
 * file, to be renamed by the caller. On failure nothing is left behind. */
static ax_status write_temporary(const char *path, const void *const *parts, const size_t *sizes,
                                 int count, char *temp_path, size_t capacity)
{
    snprintf(temp_path, capacity, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(temp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot create: %s", temp_path, strerror(errno));
    int error = 0;
    for (int p = 0; p < count && !error; p++) {
        const unsigned char *data = parts[p];
        size_t left = sizes[p];
        while (left > 0) {
            ssize_t written = write(fd, data, left);
            if (written < 0 && errno == EINTR)
                continue;
            if (written <= 0) {
                error = written < 0 ? errno : ENOSPC;
                break;
            }
            data += written;
            left -= (size_t)written;
        }
    }
    if (!error && fsync(fd) != 0 && errno != EINVAL)
        error = errno;
    if (close(fd) != 0 && !error)
        error = errno;
    if (error) {
        unlink(temp_path);
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot write: %s%s", path, strerror(error),
                       error == ENOSPC || error == EDQUOT ? " (the disk is full)" : "");
    }
    return AX_STATUS_OK;
}

ax_status prep_write_file_atomic(const char *path, const void *data, size_t size)
{
    char temp[4200];
    const void *parts[1] = {data};
    AX_TRY(write_temporary(path, parts, &size, 1, temp, sizeof temp));
    if (rename(temp, path) != 0) {
        int error = errno;
        unlink(temp);
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot rename %s into place: %s", path, temp,
                       strerror(error));
    }
    return AX_STATUS_OK;
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

ax_status prep_batch_write(const char *dir, int64_t batch, const unsigned char *pixels,
                           const int32_t *labels, int64_t count, int64_t side, int channels)
{
    char data_path[4096], labels_path[4096], data_temp[4200], labels_temp[4200];
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
    ax_status status = write_temporary(labels_path, label_parts, label_sizes, 2, labels_temp,
                                       sizeof labels_temp);
    free(label_bytes);
    AX_TRY(status);
    const void *data_parts[2] = {data_header, pixels};
    const size_t data_sizes[2] = {data_header_size,
                                  (size_t)count * (size_t)(side * side * channels)};
    status = write_temporary(data_path, data_parts, data_sizes, 2, data_temp, sizeof data_temp);
    if (status != AX_STATUS_OK) {
        unlink(labels_temp);
        return status;
    }
    if (rename(labels_temp, labels_path) != 0 || rename(data_temp, data_path) != 0) {
        int error = errno;
        unlink(labels_temp);
        unlink(data_temp);
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot rename into place: %s", data_path,
                       strerror(error));
    }
    return AX_STATUS_OK;
}

bool prep_batch_reuse(const char *dir, int64_t batch, int64_t side, int channels,
                      int64_t max_count, int32_t label_count, int64_t *count, uint64_t *sums,
                      int64_t *label_counts)
{
    char data_path[4096], labels_path[4096];
    prep_batch_names(dir, batch, data_path, labels_path, sizeof data_path);
    struct stat info;
    if (stat(data_path, &info) != 0 || stat(labels_path, &info) != 0)
        return false;
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
