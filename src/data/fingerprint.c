/* fingerprint.c: the fingerprint of a dataset's features and answers (not
 * its name), which a checkpoint records so that a resume on other data is
 * refused (see fingerprint.h). It reads only the dataset, and the ranks of
 * a data-parallel run compute it too, so it lives with the dataset. */
#include "data/fingerprint.h"

#include <string.h>

#include "base/random.h"
#include "data/dataset.h"
#include "data/stream.h"

/* The fingerprint is a sum (mod 2^64) of one hash per row, each keyed by
 * the row's place in the whole set: the ranks of a data-parallel run each
 * add up their shard's rows and the sums of all shards give the fingerprint
 * of the whole set, whatever the number of ranks (docs/mpi.md). A change of
 * any value, or rows swapped, changes it. */
uint64_t ax_dataset_fingerprint_part(const ax_dataset *data, int64_t first_row)
{
    if (data->stream) /* its rows are not in memory: meta.json's list and the options */
        return ax_batch_stream_fingerprint(data->stream);
    uint64_t sum = 0;
    const int64_t features = data->features, targets = data->targets;
    for (int64_t r = 0; r < data->rows; r++) {
        uint64_t hash = ax_hash64((uint64_t)(first_row + r) ^ 0x9e3779b97f4a7c15ULL);
        const float *row = data->feature_values + r * features;
        for (int64_t j = 0; j < features; j++) {
            uint32_t bits;
            memcpy(&bits, &row[j], sizeof bits);
            hash = ax_hash64(hash ^ bits);
        }
        if (data->labels)
            hash = ax_hash64(hash ^ (uint32_t)data->labels[r]);
        if (data->target_values)
            for (int64_t j = 0; j < targets; j++) {
                uint32_t bits;
                memcpy(&bits, &data->target_values[r * targets + j], sizeof bits);
                hash = ax_hash64(hash ^ bits);
            }
        sum += hash;
    }
    return sum;
}

uint64_t ax_dataset_fingerprint_finish(uint64_t sum, int64_t rows, int64_t features)
{
    return ax_hash64(sum ^ ax_hash64((uint64_t)rows)) ^ (uint64_t)features;
}

/* Version 1: one hash chained through the whole set, kept so that older
 * checkpoints still resume in one process. */
uint64_t ax_dataset_fingerprint_v1(const ax_dataset *data)
{
    if (data->stream)
        return ax_batch_stream_fingerprint(data->stream);
    uint64_t hash = ax_hash64((uint64_t)data->rows) ^ (uint64_t)data->features;
    const int64_t count = data->rows * data->features;
    for (int64_t i = 0; i < count; i++) {
        uint32_t bits;
        memcpy(&bits, &data->feature_values[i], sizeof bits);
        hash = ax_hash64(hash ^ bits);
    }
    if (data->labels)
        for (int64_t i = 0; i < data->rows; i++)
            hash = ax_hash64(hash ^ (uint32_t)data->labels[i]);
    if (data->target_values)
        for (int64_t i = 0; i < data->rows * data->targets; i++) {
            uint32_t bits;
            memcpy(&bits, &data->target_values[i], sizeof bits);
            hash = ax_hash64(hash ^ bits);
        }
    return hash;
}

uint64_t ax_dataset_fingerprint(const ax_dataset *data)
{
    return ax_dataset_fingerprint_finish(ax_dataset_fingerprint_part(data, 0), data->rows,
                                         data->features);
}
