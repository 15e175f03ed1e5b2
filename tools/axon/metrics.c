/* metrics.c: JSON Lines per epoch for --metrics, and the small JSON writer
 * shared with `axon eval --json`. Written by hand: the output is a handful of
 * flat numbers, not worth a JSON library. A resumed run continues the file of
 * the run it resumes: the lines up to the checkpoint's epoch are kept, the
 * later ones (written before the kill, after the checkpoint) are dropped,
 * since the resumed run writes those epochs again. */
#define _POSIX_C_SOURCE 200809L
#include "metrics.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    metrics->phase = 0;
    metrics->epoch_offset = 0;
    metrics->file = NULL;
    metrics->path = path;
    metrics->reported = false;
    if (!path)
        return true;
    /* Written in place, not through a temporary: the lines are meant to be
     * followed as epochs end (tail -f). fopen follows a link to its target
     * and leaves a device or FIFO what it is. */
    metrics->file = fopen(path, "w");
    if (!metrics->file) {
        fprintf(stderr, "axon: cannot write the metrics file %s: %s\n", path, strerror(errno));
        return false;
    }
    return true;
}

/* The epoch of a whole metrics line ({"epoch":N,...}\n), or -1 for a line
 * that is not one: cut short by a kill, or not ours. */
static int line_epoch(const char *line, size_t length)
{
    static const char prefix[] = "{\"epoch\":";
    if (length < sizeof prefix || line[length - 1] != '\n' || line[length - 2] != '}' ||
        strncmp(line, prefix, sizeof prefix - 1) != 0)
        return -1;
    char *end = NULL;
    errno = 0;
    long epoch = strtol(line + sizeof prefix - 1, &end, 10);
    if (errno || end == line + sizeof prefix - 1 || (*end != ',' && *end != '}') || epoch < 1 ||
        epoch > 100000000)
        return -1;
    return (int)epoch;
}

/* Copies the lines of epochs 1..epochs_done from old to out; *kept counts
 * them and *in_order says whether they were exactly 1, 2, .., epochs_done. */
static bool copy_kept_lines(FILE *old, FILE *out, int epochs_done, int *kept, bool *in_order)
{
    char *line = NULL;
    size_t capacity = 0;
    ssize_t length;
    *kept = 0;
    *in_order = true;
    while ((length = getline(&line, &capacity, old)) > 0) {
        int epoch = line_epoch(line, (size_t)length);
        if (epoch < 1 || epoch > epochs_done)
            continue;
        if (epoch != *kept + 1)
            *in_order = false;
        (*kept)++;
        fwrite(line, 1, (size_t)length, out);
    }
    free(line);
    return !ferror(old);
}

bool metrics_open_resumed(metrics_file *metrics, const char *path, int epochs_done)
{
    metrics->phase = 0;
    metrics->epoch_offset = 0;
    struct stat info;
    const bool exists = path && stat(path, &info) == 0;
    if (!exists || !S_ISREG(info.st_mode)) {
        /* Nothing to continue (or a pipe, a terminal): write as a new run does. */
        if (path && !exists && epochs_done > 0)
            fprintf(stderr, "axon: note: the metrics file %s did not exist; it holds epochs %d on only\n",
                    path, epochs_done + 1);
        return metrics_open(metrics, path);
    }
    metrics->file = NULL;
    metrics->path = path;
    metrics->reported = false;
    FILE *old = fopen(path, "r");
    if (!old) {
        fprintf(stderr, "axon: cannot read the metrics file %s: %s\n", path, strerror(errno));
        return false;
    }
    /* The kept lines replace the file whole (through a temporary, a link's
     * target rather than the link), then the resumed epochs are appended. */
    ax_output_file *rewritten = NULL;
    if (ax_output_file_open(path, &rewritten) != AX_STATUS_OK) {
        fprintf(stderr, "axon: cannot rewrite the metrics file: %s\n", ax_error_message());
        fclose(old);
        return false;
    }
    char target[4096];
    snprintf(target, sizeof target, "%s", ax_output_file_target(rewritten));
    char *kept_text = NULL;
    size_t kept_size = 0;
    FILE *out = open_memstream(&kept_text, &kept_size);
    int kept = 0;
    bool in_order = true;
    bool read_ok = out && copy_kept_lines(old, out, epochs_done, &kept, &in_order);
    int read_errno = errno;
    fclose(old);
    if (out)
        fclose(out);
    ax_status status = AX_STATUS_OK;
    if (read_ok)
        status = ax_output_file_write(rewritten, kept_text, kept_size);
    free(kept_text);
    if (!read_ok || status != AX_STATUS_OK ||
        (status = ax_output_file_commit(rewritten), rewritten = NULL, status != AX_STATUS_OK)) {
        ax_output_file_abandon(rewritten);
        if (!read_ok)
            fprintf(stderr, "axon: reading the metrics file %s failed: %s\n", path,
                    strerror(read_errno));
        else
            fprintf(stderr, "axon: rewriting the metrics file failed: %s\n", ax_error_message());
        return false;
    }
    out = fopen(target, "a");
    if (!out) {
        fprintf(stderr, "axon: cannot write the metrics file %s: %s\n", path, strerror(errno));
        return false;
    }
    if (kept != epochs_done || !in_order)
        fprintf(stderr, "axon: note: the metrics file %s held %d line%s for the %d epoch%s before the "
                        "checkpoint (not epochs 1 to %d in order); kept as found\n",
                path, kept, kept == 1 ? "" : "s", epochs_done, epochs_done == 1 ? "" : "s", epochs_done);
    metrics->file = out;
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
    fprintf(stream, "{\"epoch\":%d", progress->epoch + metrics->epoch_offset);
    if (metrics->phase > 0)
        fprintf(stream, ",\"phase\":%d,\"phase_epoch\":%d", metrics->phase, progress->epoch);
    write_field(stream, "train_loss", progress->train_loss);
    write_field(stream, "val_loss", progress->validation_loss);
    write_field(stream, "test_loss", progress->test_loss);
    write_field(stream, "test_accuracy", classification ? progress->test_accuracy : NAN);
    write_field(stream, "val_accuracy", classification ? progress->validation_accuracy : NAN);
    write_field(stream, "seconds", progress->epoch_seconds);
    write_field(stream, "gflops", progress->gflops);
    write_field(stream, "lr", progress->learning_rate); /* null for cg and lbfgs */
    fputs("}\n", stream);
    /* Flushed per epoch so that a run can be watched, and a full disk is
     * noticed at the epoch it happens rather than at the end. */
    if (fflush(stream) != 0 || ferror(stream)) {
        if (!metrics->reported)
            fprintf(stderr, "axon: writing the metrics file %s failed: %s\n", metrics->path,
                    strerror(errno));
        metrics->reported = true;
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
    if (failed && metrics->reported)
        return false; /* told at the epoch it happened */
    if (failed) {
        fprintf(stderr, "axon: writing the metrics file %s failed: %s\n", metrics->path,
                strerror(errno));
        return false;
    }
    return true;
}
