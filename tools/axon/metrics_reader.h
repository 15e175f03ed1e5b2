/* metrics_reader.h: reads back the JSON Lines that `axon train --metrics`
 * writes (metrics.c), the epoch and the loss and accuracy curves of each
 * line, for `axon plot`. */
#ifndef AXON_CLI_METRICS_READER_H
#define AXON_CLI_METRICS_READER_H

#include <stdint.h>

/* The curves, in this order in metrics_epoch.values and on the plot. */
enum {
    METRIC_TRAIN_LOSS,
    METRIC_VAL_LOSS,
    METRIC_TEST_LOSS,
    METRIC_VAL_ACCURACY,
    METRIC_TEST_ACCURACY,
    METRIC_COUNT
};

/* The metrics file's key of each curve ("train_loss", ...). */
extern const char *const metric_keys[METRIC_COUNT];

typedef struct metrics_epoch {
    int64_t epoch;
    double values[METRIC_COUNT]; /* NAN where the line has null or lacks the key */
} metrics_epoch;

typedef struct metrics_series {
    metrics_epoch *epochs; /* one per non-blank line, in file order */
    int64_t count;
} metrics_series;

/* Reads path into *series (metrics_series_free frees it). Returns 0, or 1
 * after printing "axon: PATH: line N, column C: ..." for the first line
 * that is not a flat JSON object with an integer "epoch" and numbers or
 * null for the curves (other keys may hold anything flat), or for a file
 * with no epochs. */
int metrics_series_read(const char *path, metrics_series *series);
void metrics_series_free(metrics_series *series);

#endif
