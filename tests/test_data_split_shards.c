/* test_data_split_shards.c: proves that a --val-split under MPI can read
 * only a span of about rows/size rows per rank (docs/mpi.md): for many row
 * counts, fractions, seeds and rank counts, ax_dataset_split_shards of the
 * rows that ax_dataset_split_span names gives exactly the rows (features,
 * labels or targets, classes) of ax_dataset_split of the whole set followed
 * by the trainer's contiguous sharding of each part; the span is never much
 * larger than rows/size (so a rank does not read the whole file); spans too
 * small and bad ranks or fractions fail with messages naming the problem. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* A set whose every value says its row: row r's features are r*10 + j,
 * its label r % classes (or target r + 0.5). */
static ax_dataset *numbered(int64_t rows, int64_t features, int64_t classes)
{
    ax_dataset *set = NULL;
    CHECK_OK(ax_dataset_create(rows, features, classes, classes > 0 ? 0 : 1, &set));
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < features; j++)
            ax_dataset_features_data(set)[r * features + j] = (float)(r * 10 + j);
        if (classes > 0)
            ax_dataset_labels_data(set)[r] = (int32_t)(r % classes);
        else
            ax_dataset_targets_data(set)[r] = (float)r + 0.5f;
    }
    return set;
}

/* Rows [first, end) of set, as a new set (what a row-range loader returns). */
static ax_dataset *rows_of(ax_dataset *set, int64_t first, int64_t end)
{
    const int64_t features = ax_dataset_features(set), classes = ax_dataset_classes(set);
    ax_dataset *part = NULL;
    CHECK_OK(ax_dataset_create(end - first, features, classes, classes > 0 ? 0 : 1, &part));
    memcpy(ax_dataset_features_data(part), ax_dataset_features_data(set) + first * features,
           (size_t)((end - first) * features) * sizeof(float));
    if (classes > 0)
        memcpy(ax_dataset_labels_data(part), ax_dataset_labels_data(set) + first,
               (size_t)(end - first) * sizeof(int32_t));
    else
        memcpy(ax_dataset_targets_data(part), ax_dataset_targets_data(set) + first,
               (size_t)(end - first) * sizeof(float));
    return part;
}

/* shard must equal rows [first, end) of whole (a part of the full split). */
static bool same_rows(ax_dataset *whole, ax_dataset *shard, int64_t first, int64_t end)
{
    const int64_t features = ax_dataset_features(whole), n = end - first;
    if (ax_dataset_rows(shard) != n || ax_dataset_features(shard) != features ||
        ax_dataset_classes(shard) != ax_dataset_classes(whole) ||
        ax_dataset_targets(shard) != ax_dataset_targets(whole))
        return false;
    if (n == 0)
        return true;
    bool same = memcmp(ax_dataset_features_data(shard), ax_dataset_features_data(whole) + first * features,
                       (size_t)(n * features) * sizeof(float)) == 0;
    if (ax_dataset_classes(whole) > 0)
        same = same && memcmp(ax_dataset_labels_data(shard), ax_dataset_labels_data(whole) + first,
                              (size_t)n * sizeof(int32_t)) == 0;
    else
        same = same && memcmp(ax_dataset_targets_data(shard), ax_dataset_targets_data(whole) + first,
                              (size_t)n * sizeof(float)) == 0;
    return same;
}

/* Every rank of `size`: the shards from its span equal the whole split's
 * shards; returns the largest span. */
static int64_t check_case(int64_t rows, int64_t classes, double fraction, uint64_t seed, int size)
{
    ax_dataset *set = numbered(rows, 3, classes), *train = NULL, *held = NULL;
    CHECK_OK(ax_dataset_split(set, fraction, seed, &train, &held));
    int64_t largest = 0, covered_train = 0, covered_held = 0;
    for (int rank = 0; rank < size; rank++) {
        int64_t first = -1, count = -1;
        CHECK_OK(ax_dataset_split_span(rows, fraction, seed, rank, size, &first, &count));
        CHECK(first >= 0 && count >= 0 && first + count <= rows);
        if (count > largest)
            largest = count;
        ax_dataset *span = rows_of(set, first, first + count), *shard_train = NULL,
                   *shard_held = NULL;
        CHECK_OK(ax_dataset_split_shards(span, first, rows, fraction, seed, rank, size,
                                         &shard_train, &shard_held));
        int64_t t = ax_dataset_rows(train), h = ax_dataset_rows(held);
        bool ok = same_rows(train, shard_train, t * rank / size, t * (rank + 1) / size) &&
                  same_rows(held, shard_held, h * rank / size, h * (rank + 1) / size);
        if (!ok) {
            fprintf(stderr, "rows %lld, fraction %g, seed %llu, rank %d of %d: the shards differ "
                    "from the whole split's\n", (long long)rows, fraction,
                    (unsigned long long)seed, rank, size);
            test_failures++;
        }
        covered_train += ax_dataset_rows(shard_train);
        covered_held += ax_dataset_rows(shard_held);
        ax_dataset_free(shard_train);
        ax_dataset_free(shard_held);
        ax_dataset_free(span);
    }
    CHECK(covered_train == ax_dataset_rows(train) && covered_held == ax_dataset_rows(held));
    ax_dataset_free(train);
    ax_dataset_free(held);
    ax_dataset_free(set);
    return largest;
}

int main(void)
{
    const int64_t row_counts[] = {2, 3, 7, 10, 101, 1000};
    const double fractions[] = {0.1, 0.5, 0.9};
    const int sizes[] = {1, 2, 3, 4, 7, 16};
    for (size_t r = 0; r < sizeof row_counts / sizeof *row_counts; r++)
        for (size_t f = 0; f < 3; f++)
            for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
                int64_t held = (int64_t)(fractions[f] * (double)row_counts[r] + 0.5);
                if (held < 1 || held >= row_counts[r])
                    continue; /* an empty part: refused, checked below */
                check_case(row_counts[r], (r % 2) ? 10 : 0, fractions[f], 42 + r, sizes[s]);
            }

    /* The span is about rows/size: a rank does not read the whole file. With
     * 100,000 rows on 4 ranks the parts' shards meet within a few hundred
     * rows of the plain shard bounds (the held-out rows are spread evenly). */
    int64_t largest = check_case(100000, 10, 0.1, 7, 4);
    CHECK(largest >= 25000 && largest < 26000);
    largest = check_case(100000, 0, 0.5, 9, 8);
    CHECK(largest >= 12500 && largest < 13500);
    /* One rank needs all rows. */
    CHECK(check_case(5000, 3, 0.2, 1, 1) == 5000);

    /* A span that lacks rows the rank needs, bad ranks, bad fractions. */
    ax_dataset *set = numbered(100, 2, 4), *train = NULL, *held = NULL;
    int64_t first = 0, count = 0;
    CHECK_OK(ax_dataset_split_span(100, 0.2, 3, 1, 2, &first, &count));
    CHECK(first > 0 && count > 0 && first + count == 100);
    ax_dataset *short_span = rows_of(set, first + 1, first + count);
    CHECK_FAILS(ax_dataset_split_shards(short_span, first + 1, 100, 0.2, 3, 1, 2, &train, &held),
                AX_STATUS_BAD_ARGUMENT, "needs rows");
    CHECK(train == NULL && held == NULL);
    ax_dataset_free(short_span);
    CHECK_FAILS(ax_dataset_split_span(100, 0.2, 3, 2, 2, &first, &count), AX_STATUS_BAD_ARGUMENT,
                "rank 2 of 2");
    CHECK_FAILS(ax_dataset_split_span(100, 1.5, 3, 0, 2, &first, &count), AX_STATUS_BAD_ARGUMENT,
                "between 0 and 1");
    CHECK_FAILS(ax_dataset_split_span(3, 0.01, 3, 0, 2, &first, &count), AX_STATUS_BAD_ARGUMENT,
                "leaves an empty part");
    CHECK_FAILS(ax_dataset_split_shards(set, 0, 100, 0.2, 3, -1, 2, &train, &held),
                AX_STATUS_BAD_ARGUMENT, "rank -1 of 2");
    ax_dataset_free(set);
    return test_finish("test_data_split_shards");
}
