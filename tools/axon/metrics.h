/* metrics.h: machine-readable output. `axon train --metrics FILE` writes one
 * JSON object per line per epoch (JSON Lines), flushed as each epoch ends so
 * that a run can be followed with `tail -f` and a crash loses nothing; the
 * JSON helpers also serve `axon eval --json`. Absent or non-finite figures
 * are written as null, since JSON has no NaN. */
#ifndef AXON_CLI_METRICS_H
#define AXON_CLI_METRICS_H

#include <stdbool.h>
#include <stdio.h>

#include "axon.h"

/* Writes text as a JSON string literal, escaping quotes, backslashes and
 * control characters. */
void json_write_string(FILE *stream, const char *text);
/* Writes a number with enough digits to round-trip, or null when not finite. */
void json_write_number(FILE *stream, double value);

typedef struct metrics_file {
    FILE *file;        /* NULL when no --metrics was given */
    const char *path;
    bool reported;     /* a failed write was told already: metrics_close says nothing more */
    /* --phase (set by the caller after opening): phase > 0 writes "phase"
     * and "phase_epoch" (the phase's own epoch), and "epoch" counts the
     * run's epochs, epoch_offset those of the phases before. */
    int phase;
    int epoch_offset;
} metrics_file;

/* Creates (truncates) the metrics file; prints "axon: ..." and returns false
 * when it cannot. path NULL means no metrics: every call is then a no-op. */
bool metrics_open(metrics_file *metrics, const char *path);
/* For `--resume`: keeps the lines of epochs 1..epochs_done that the
 * interrupted run wrote to path, drops those of later epochs (the resumed run
 * writes them again) and any line cut short by a kill, and appends after
 * them. The file is rewritten as every output is (axon.h, "output files":
 * a link's target replaced through a temporary, a device or FIFO written in
 * place), so a failure leaves it as it was. A missing file is created; a note on stderr
 * says when the kept lines are not exactly epochs 1..epochs_done. Prints
 * "axon: ..." and returns false when the file cannot be read or written. */
bool metrics_open_resumed(metrics_file *metrics, const char *path, int epochs_done);
/* Appends the line of a finished epoch:
 * {"epoch":1,"train_loss":..,"val_loss":..,"test_loss":..,"test_accuracy":..,
 *  "seconds":..,"gflops":..} (test_accuracy null for regression); false
 * (after printing why) when writing failed. */
bool metrics_write_epoch(metrics_file *metrics, const ax_progress *progress, bool classification);
/* Closes the file; false (after printing why) when the last write failed. */
bool metrics_close(metrics_file *metrics);

#endif
