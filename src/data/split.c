/* split.c: ax_dataset_split (a validation part drawn at random from a set)
 * and its sharded form for MPI ranks: which rows of the file a rank needs
 * for its shards of the two parts (ax_dataset_split_span), and those shards
 * cut from just that span of rows (ax_dataset_split_shards), identical to
 * splitting the whole set and sharding each part (docs/mpi.md). Both work
 * from the held-out mask alone: it depends only on the row count, the
 * fraction and the seed, and both parts keep the file's order. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/random.h"
#include "data/dataset.h"

static void copy_row(const ax_dataset *from, int64_t from_row, ax_dataset *to, int64_t to_row)
{
    memcpy(to->feature_values + to_row * to->features, from->feature_values + from_row * from->features,
           (size_t)from->features * sizeof(float));
    if (from->labels)
        to->labels[to_row] = from->labels[from_row];
    if (from->target_values)
        memcpy(to->target_values + to_row * to->targets,
               from->target_values + from_row * from->targets, (size_t)from->targets * sizeof(float));
}

/* The held-out rows of a split of `rows` rows of source (NULL: a count
 * without a set; the caller names the file): *mask (rows bytes, 1 = held
 * out, to free) and their count. The rows taken are the first `held` of a
 * permutation drawn from the seed. */
static ax_status held_mask(const char *source, int64_t rows, double fraction, uint64_t seed,
                           char **mask, int64_t *held)
{
    *mask = NULL;
    if (!(fraction > 0.0 && fraction < 1.0))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "the split fraction must be between 0 and 1, not %g",
                       fraction);
    *held = (int64_t)llround(fraction * (double)rows);
    if (*held < 1 || *held >= rows)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s%sa fraction %g of %lld rows leaves an empty part",
                       source ? source : "", source ? ": " : "", fraction, (long long)rows);
    int64_t *order = malloc((size_t)rows * sizeof *order);
    *mask = calloc((size_t)rows, 1);
    if (!order || !*mask) {
        free(order);
        free(*mask);
        *mask = NULL;
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory splitting %s",
                       source ? source : "the rows");
    }
    ax_rng rng;
    ax_rng_seed(&rng, seed ^ 0x5eed5011ULL);
    ax_rng_permutation(&rng, order, rows);
    for (int64_t i = 0; i < *held; i++)
        (*mask)[order[i]] = 1;
    free(order);
    return AX_STATUS_OK;
}

/* Allocates the two parts of source, rows_train and rows_held rows. */
static ax_status allocate_parts(const ax_dataset *source, int64_t rows_train, int64_t rows_held,
                                ax_dataset **train, ax_dataset **holdout)
{
    char name[600];
    snprintf(name, sizeof name, "%s (training part)", source->source);
    ax_status status = ax_dataset_allocate(rows_train, source->features, source->classes,
                                           source->targets, name, train);
    if (status == AX_STATUS_OK) {
        snprintf(name, sizeof name, "%s (held-out part)", source->source);
        status = ax_dataset_allocate(rows_held, source->features, source->classes,
                                     source->targets, name, holdout);
    }
    if (status == AX_STATUS_OK)
        for (int i = 0; i < 3; i++)
            (*train)->image_shape[i] = (*holdout)->image_shape[i] = source->image_shape[i];
    if (status != AX_STATUS_OK) {
        ax_dataset_free(*train);
        *train = NULL;
    }
    return status;
}

ax_status ax_dataset_split(const ax_dataset *source, double fraction, uint64_t seed,
                           ax_dataset **train, ax_dataset **holdout)
{
    *train = NULL;
    *holdout = NULL;
    if (source->stream)
        return ax_fail(AX_STATUS_UNSUPPORTED, "%s: a streamed set cannot be split (open it "
                       "whole, without ax_data_options.stream)", source->source);
    if (source->csr_values)
        return ax_fail(AX_STATUS_UNSUPPORTED, "%s: a sparse set cannot be split (split the "
                       "caller's matrix and wrap each part)", source->source);
    char *mask;
    int64_t held = 0;
    AX_TRY(held_mask(source->source, source->rows, fraction, seed, &mask, &held));
    ax_status status = allocate_parts(source, source->rows - held, held, train, holdout);
    if (status != AX_STATUS_OK) {
        free(mask);
        return status;
    }
    /* Keep each part in the source's order so the split is easy to inspect. */
    int64_t next_train = 0, next_held = 0;
    for (int64_t row = 0; row < source->rows; row++) {
        if (mask[row])
            copy_row(source, row, *holdout, next_held++);
        else
            copy_row(source, row, *train, next_train++);
    }
    free(mask);
    return AX_STATUS_OK;
}

/* Rank `rank` of `size`'s shard of each part: places [first, end) among the
 * part's rows, as the trainer shards any set (contiguous, in rank order). */
static void part_shard(int64_t rows, int rank, int size, int64_t *first, int64_t *end)
{
    *first = rows * rank / size;
    *end = rows * (rank + 1) / size;
}

/* The file rows [*span_first, *span_end) that hold rank's shards of both
 * parts, given the mask, and each shard's bounds among its part's rows. */
static void shard_span(const char *mask, int64_t rows, int64_t held, int rank, int size,
                       int64_t bounds[2][2], int64_t *span_first, int64_t *span_end)
{
    part_shard(rows - held, rank, size, &bounds[0][0], &bounds[0][1]);
    part_shard(held, rank, size, &bounds[1][0], &bounds[1][1]);
    *span_first = rows;
    *span_end = 0;
    int64_t seen[2] = {0, 0}; /* rows of each part before the file row */
    for (int64_t row = 0; row < rows; row++) {
        int part = mask[row] ? 1 : 0;
        if (seen[part] >= bounds[part][0] && seen[part] < bounds[part][1]) {
            if (row < *span_first)
                *span_first = row;
            *span_end = row + 1;
        }
        seen[part]++;
    }
    if (*span_end == 0) /* both shards empty */
        *span_first = 0;
}

static ax_status check_rank(int rank, int size)
{
    if (size < 1 || rank < 0 || rank >= size)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "rank %d of %d is not a rank (0 <= rank < size)",
                       rank, size);
    return AX_STATUS_OK;
}

ax_status ax_dataset_split_span(int64_t rows, double fraction, uint64_t seed, int rank, int size,
                                int64_t *first, int64_t *count)
{
    *first = *count = 0;
    AX_TRY(check_rank(rank, size));
    char *mask;
    int64_t held = 0, bounds[2][2], end = 0;
    AX_TRY(held_mask(NULL, rows, fraction, seed, &mask, &held));
    shard_span(mask, rows, held, rank, size, bounds, first, &end);
    *count = end - *first;
    free(mask);
    return AX_STATUS_OK;
}

ax_status ax_dataset_split_shards(const ax_dataset *span, int64_t first, int64_t rows,
                                  double fraction, uint64_t seed, int rank, int size,
                                  ax_dataset **train, ax_dataset **holdout)
{
    *train = NULL;
    *holdout = NULL;
    if (span->stream)
        return ax_fail(AX_STATUS_UNSUPPORTED, "%s: a streamed set cannot be split (open it "
                       "whole, without ax_data_options.stream)", span->source);
    AX_TRY(check_rank(rank, size));
    char *mask;
    int64_t held = 0, bounds[2][2], span_first = 0, span_end = 0;
    AX_TRY(held_mask(span->source, rows, fraction, seed, &mask, &held));
    shard_span(mask, rows, held, rank, size, bounds, &span_first, &span_end);
    if (span_first < first || span_end > first + span->rows) {
        free(mask);
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s: rows %lld to %lld of %lld were given, but rank %d of %d needs rows "
                       "%lld to %lld for its shards of the split (ax_dataset_split_span)",
                       span->source, (long long)first, (long long)(first + span->rows),
                       (long long)rows, rank, size, (long long)span_first, (long long)span_end);
    }
    ax_status status = allocate_parts(span, bounds[0][1] - bounds[0][0],
                                      bounds[1][1] - bounds[1][0], train, holdout);
    if (status != AX_STATUS_OK) {
        free(mask);
        return status;
    }
    ax_dataset *parts[2] = {*train, *holdout};
    int64_t seen[2] = {0, 0};
    for (int64_t row = 0; row < rows; row++) {
        int part = mask[row] ? 1 : 0;
        if (seen[part] >= bounds[part][0] && seen[part] < bounds[part][1])
            copy_row(span, row - first, parts[part], seen[part] - bounds[part][0]);
        seen[part]++;
    }
    free(mask);
    return AX_STATUS_OK;
}
