/* progress.h: what `axon train` shows while it runs. On a terminal one live
 * line on stderr, rewritten in place:
 *   epoch 2/5  batch 231/469  41250 samples/s  loss 0.4512  ETA 3s
 * and, on a terminal or not, one plain line per finished epoch on stdout:
 *   epoch 2/5  loss 0.4123  test_loss 0.4312  test_acc 84.91%  1.23 s  45.6 GFLOP/s
 * The same callback writes the --metrics line of each epoch and turns Ctrl-C
 * into a clean stop (the callback returns false, the library returns
 * AX_STATUS_INTERRUPTED). */
#ifndef AXON_CLI_PROGRESS_H
#define AXON_CLI_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "axon.h"
#include "metrics.h"

typedef struct progress_display {
    FILE *out;              /* epoch lines (stdout) */
    bool live;              /* draw the live line: stderr is a terminal and not --quiet */
    bool quiet;             /* no epoch lines either */
    bool classification;    /* show accuracies */
    const char *step_name;  /* "epoch", or "iteration" for full-batch CG and L-BFGS */
    bool show_rate;         /* the epoch line names the epoch's rate (a schedule or warmup) */
    int phase, phases;      /* --phase: lines start "phase 2/3  "; phases 0 = none */
    metrics_file *metrics;  /* may hold no file */
    bool metrics_failed;    /* a metrics write failed: training was stopped */
    bool line_shown;        /* a live line is on the terminal now */
    int current_epoch;      /* the epoch of the latest progress call, 0 before any */
    bool have_epoch;        /* last_epoch holds a finished epoch */
    ax_progress last_epoch;
} progress_display;

void progress_init(progress_display *display, bool quiet, bool classification,
                   metrics_file *metrics);
/* The ax_progress_fn given to ax_train; user is the progress_display. */
bool progress_callback(const ax_progress *progress, void *user);
/* Erases the live line, if one is shown, before other output. */
void progress_clear_line(progress_display *display);

/* From the first call to the process's exit, Ctrl-C (SIGINT) or SIGTERM
 * sets a flag that progress_callback reports as "stop"; a second signal
 * kills the process as usual. */
void progress_catch_interrupt(void);
bool progress_interrupted(void);
/* "SIGINT" or "SIGTERM": the signal that set the flag. */
const char *progress_interrupt_name(void);

/* "3s", "4m05s", "2h07m": a duration for people. */
void format_duration(double seconds, char *text, size_t capacity);
/* "1.23 s", or "0.45 ms" below a tenth of a second. */
void format_seconds(double seconds, char *text, size_t capacity);
/* "45.6 GFLOP/s": three significant digits, whole numbers from 100 up. */
void format_gflops(double gflops, char *text, size_t capacity);
/* A loss with four decimals, or four significant digits when large. */
void format_loss(double loss, char *text, size_t capacity);

#endif
