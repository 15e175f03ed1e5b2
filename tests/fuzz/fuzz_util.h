/* fuzz_util.h: what the libFuzzer targets share. The loaders take paths, so
 * each input is handed to them as an anonymous in-memory file (memfd) named
 * by /proc/self/fd/N: no disk traffic, nothing left behind, and every input
 * gets a fresh file. Inputs made of two files (images + labels, features +
 * labels) are split by a 4-byte little-endian length at the front. */
#ifndef AX_FUZZ_UTIL_H
#define AX_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct fuzz_file {
    int fd;
    char path[64];
} fuzz_file;

/* Writes bytes[0, size) to a new memfd; aborts if the system refuses (that
 * is a broken harness, not a finding). */
static inline fuzz_file fuzz_file_make(const uint8_t *bytes, size_t size)
{
    fuzz_file file;
    file.fd = memfd_create("axon-fuzz", MFD_CLOEXEC);
    if (file.fd < 0)
        abort();
    size_t done = 0;
    while (done < size) {
        ssize_t wrote = write(file.fd, bytes + done, size - done);
        if (wrote <= 0)
            abort();
        done += (size_t)wrote;
    }
    snprintf(file.path, sizeof file.path, "/proc/self/fd/%d", file.fd);
    return file;
}

static inline void fuzz_file_close(fuzz_file *file)
{
    close(file->fd);
    file->fd = -1;
}

/* Splits data into a first part of length given by its first 4 bytes
 * (little-endian, clamped to what is there) and the rest. */
static inline void fuzz_split(const uint8_t *data, size_t size, const uint8_t **first,
                              size_t *first_size, const uint8_t **second, size_t *second_size)
{
    uint32_t length = 0;
    if (size >= 4)
        length = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
                 (uint32_t)data[3] << 24;
    size_t head = size >= 4 ? 4 : size;
    size_t rest = size - head;
    *first = data + head;
    *first_size = length < rest ? length : rest;
    *second = *first + *first_size;
    *second_size = rest - *first_size;
}

/* The row-range loaders (an MPI rank's shard) against the whole-file one:
 * whole holds the file's rows; part must hold rows [first, first + count)
 * of it exactly, with the same classes. A range is chosen from the input's
 * size so that runs cover first, middle, last and empty ranges. */
#include <string.h>

#include "axon.h"

static inline void fuzz_pick_range(size_t size, int64_t rows, int64_t *first, int64_t *count)
{
    *first = (int64_t)(size % (size_t)(rows + 1));
    *count = (int64_t)((size / 7) % (size_t)(rows - *first + 1));
}

static inline void fuzz_check_range(const ax_dataset *whole, ax_dataset *part, int64_t first,
                                    int64_t count)
{
    const int64_t features = ax_dataset_features(whole), targets = ax_dataset_targets(whole);
    if (ax_dataset_rows(part) != count || ax_dataset_features(part) != features ||
        ax_dataset_classes(part) != ax_dataset_classes(whole) || ax_dataset_targets(part) != targets)
        abort();
    if (count == 0)
        return;
    ax_dataset *w = (ax_dataset *)whole;
    if (memcmp(ax_dataset_features_data(part), ax_dataset_features_data(w) + first * features,
               (size_t)(count * features) * sizeof(float)) != 0)
        abort();
    if (ax_dataset_labels_data(w) &&
        memcmp(ax_dataset_labels_data(part), ax_dataset_labels_data(w) + first,
               (size_t)count * sizeof(int32_t)) != 0)
        abort();
    if (ax_dataset_targets_data(w) &&
        memcmp(ax_dataset_targets_data(part), ax_dataset_targets_data(w) + first * targets,
               (size_t)(count * targets) * sizeof(float)) != 0)
        abort();
}

#endif
