/* metrics.c: JSON Lines per epoch for --metrics, and the small JSON writer
 * shared with `axon eval --json`. Written by hand: the output is a handful of
 * flat numbers, not worth a JSON library. */
#include "metrics.h"

#include <errno.h>
#include <math.h>
#include <string.h>

void json_write_string(FILE *stream, const char *text)
{
    fputc('"', stream);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        switch (*c) {
        case '"': fputs("\\\"", stream); break;
        case '\\': fputs("\\\\", stream); break;
        case '\n': fputs("\\n", stream); break;
        case '\r': fputs("\\r", stream); break;
        case '\t': fputs("\\t", stream); break;
        default:
            if (*c < 0x20)
                fprintf(stream, "\\u%04x", *c);
            else
                fputc(*c, stream);
        }
    }
    fputc('"', stream);
}

void json_write_number(FILE *stream, double value)
{
    if (isfinite(value))
        fprintf(stream, "%.10g", value);
    else
        fputs("null", stream);
}

bool metrics_open(metrics_file *metrics, const char *path)
{
    metrics->file = NULL;
    metrics->path = path;
    if (!path)
        return true;
    metrics->file = fopen(path, "w");
    if (!metrics->file) {
        fprintf(stderr, "axon: cannot write the metrics file %s: %s\n", path, strerror(errno));
        return false;
    }
    return true;
}

static void write_field(FILE *stream, const char *name, double value)
{
    fprintf(stream, ",\"%s\":", name);
    json_write_number(stream, value);
}

bool metrics_write_epoch(metrics_file *metrics, const ax_progress *progress, bool classification)
{
    if (!metrics->file)
        return true;
    FILE *stream = metrics->file;
    fprintf(stream, "{\"epoch\":%d", progress->epoch);
    write_field(stream, "train_loss", progress->train_loss);
    write_field(stream, "val_loss", progress->validation_loss);
    write_field(stream, "test_loss", progress->test_loss);
    write_field(stream, "test_accuracy", classification ? progress->test_accuracy : NAN);
    write_field(stream, "seconds", progress->epoch_seconds);
    write_field(stream, "gflops", progress->gflops);
    fputs("}\n", stream);
    /* Flushed per epoch so that a run can be watched, and a full disk is
     * noticed at the epoch it happens rather than at the end. */
    if (fflush(stream) != 0 || ferror(stream)) {
        fprintf(stderr, "axon: writing the metrics file %s failed: %s\n", metrics->path,
                strerror(errno));
        return false;
    }
    return true;
}

bool metrics_close(metrics_file *metrics)
{
    if (!metrics->file)
        return true;
    bool failed = ferror(metrics->file) != 0;
    if (fclose(metrics->file) != 0)
        failed = true;
    metrics->file = NULL;
    if (failed) {
        fprintf(stderr, "axon: writing the metrics file %s failed: %s\n", metrics->path,
                strerror(errno));
        return false;
    }
    return true;
}
