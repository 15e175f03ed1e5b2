/* fingerprint.h: a 64-bit fingerprint of a dataset's rows (features,
 * labels, targets), which checkpoints record to refuse a resume on other
 * data, and which the ranks of a data-parallel run add up shard by shard. */
#ifndef AX_DATA_FINGERPRINT_H
#define AX_DATA_FINGERPRINT_H

#include <stdint.h>

#include "axon.h"

/* A fingerprint of a dataset's features and answers (not its name):
 * ax_dataset_fingerprint_finish(the sum of the parts of its row ranges, its
 * rows, its features). The part of rows [first_row, first_row + rows) of a
 * larger set is that of a data set holding those rows alone, with first_row
 * its place in the set; parts add up mod 2^64 (how ranks combine shards). */
enum { AX_FINGERPRINT_VERSION = 2 };
uint64_t ax_dataset_fingerprint(const ax_dataset *data);
uint64_t ax_dataset_fingerprint_part(const ax_dataset *data, int64_t first_row);
uint64_t ax_dataset_fingerprint_finish(uint64_t sum, int64_t rows, int64_t features);
/* The fingerprint checkpoints of version 1 stored (one process only). */
uint64_t ax_dataset_fingerprint_v1(const ax_dataset *data);

#endif
