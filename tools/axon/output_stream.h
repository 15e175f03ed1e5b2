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

#endif
