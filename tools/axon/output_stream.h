/* output_stream.h: a FILE * for a command's text output (axon predict's
 * CSV) that is written as every output file is (axon.h, "output files":
 * a link followed, a device or FIFO in place, a regular file replaced whole
 * or left as it was), or standard output. The first failed write is kept
 * with its cause (errno), so that the message says why, once. */
#ifndef AXON_CLI_OUTPUT_STREAM_H
#define AXON_CLI_OUTPUT_STREAM_H

#include <stdbool.h>
#include <stdio.h>

#include "axon.h"

typedef struct output_stream {
    FILE *stream;            /* what the caller writes to */
    ax_output_file *file;    /* NULL for standard output */
    const char *option;      /* "--out", for messages */
    const char *name;        /* the path, or "standard output" */
    int error;               /* errno of the first failed write, 0 while none */
    char message[1024];      /* the library's words for it */
} output_stream;

/* Opens path (NULL: standard output); CLI_EXIT_OK, or CLI_EXIT_RUNTIME after
 * printing why. */
int output_stream_open(output_stream *output, const char *option, const char *path);
/* Flushes and finishes: committed (a file renamed into place) when ok and
 * every write went through, else abandoned (only axon's temporary removed).
 * Returns CLI_EXIT_OK, or CLI_EXIT_RUNTIME after printing the cause once. */
int output_stream_close(output_stream *output, bool ok);
/* True once a write failed (output_stream_close reports it). */
bool output_stream_failed(const output_stream *output);

/* Replaces stdout by a stream over file descriptor 1 that keeps the cause
 * of its first failed write (line-buffered on a terminal, as before), so
 * that output_stream_finish_stdout can say why. Called once, first thing. */
void output_stream_take_stdout(void);
/* Flushes stdout; if any write to it failed, prints "axon: writing to
 * standard output failed: CAUSE" and turns a success into CLI_EXIT_RUNTIME. */
int output_stream_finish_stdout(int result);

#endif
