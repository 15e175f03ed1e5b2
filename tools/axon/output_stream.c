/* output_stream.c: a stdio stream over ax_output_file or file descriptor 1
 * (output_stream.h), through glibc's fopencookie, so that formatted output
 * keeps the cause of a failed write (stdio alone keeps only a flag). */
#include "output_stream.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "options.h"

static ssize_t write_stream(void *cookie, const char *data, size_t size)
{
    output_stream *output = cookie;
    if (output->error) {
        errno = output->error;
        return -1;
    }
    if (output->file) {
        if (ax_output_file_write(output->file, data, size) != AX_STATUS_OK) {
            snprintf(output->message, sizeof output->message, "%s", ax_error_message());
            output->error = EIO;
            errno = EIO;
            return -1;
        }
        return (ssize_t)size;
    }
    for (size_t done = 0; done < size;) {
        ssize_t written = write(STDOUT_FILENO, data + done, size - done);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0) {
            output->error = written < 0 ? errno : ENOSPC;
            snprintf(output->message, sizeof output->message, "%s", strerror(output->error));
            errno = output->error;
            return -1;
        }
        done += (size_t)written;
    }
    return (ssize_t)size;
}

int output_stream_open(output_stream *output, const char *option, const char *path)
{
    memset(output, 0, sizeof *output);
    output->option = option;
    output->name = path ? path : "standard output";
    if (path && ax_output_file_open(path, &output->file) != AX_STATUS_OK) {
        fprintf(stderr, "axon: %s %s\n", option, ax_error_message());
        return CLI_EXIT_RUNTIME;
    }
    if (!path)
        fflush(stdout); /* what was printed before comes first */
    cookie_io_functions_t functions = {.write = write_stream};
    output->stream = fopencookie(output, "w", functions);
    if (!output->stream) {
        fprintf(stderr, "axon: %s %s: %s\n", option, output->name, strerror(errno));
        ax_output_file_abandon(output->file);
        output->file = NULL;
        return CLI_EXIT_RUNTIME;
    }
    setvbuf(output->stream, NULL, _IOFBF, 1 << 16);
    return CLI_EXIT_OK;
}

bool output_stream_failed(const output_stream *output) { return output->error != 0; }

int output_stream_close(output_stream *output, bool ok)
{
    fclose(output->stream); /* a failure of its last write lands in output->error */
    output->stream = NULL;
    int result = CLI_EXIT_OK;
    if (output->error) {
        if (output->file)
            fprintf(stderr, "axon: %s %s\n", output->option, output->message);
        else
            fprintf(stderr, "axon: writing to %s failed: %s\n", output->name, output->message);
        result = CLI_EXIT_RUNTIME;
    }
    if (!output->file)
        return ok ? result : CLI_EXIT_RUNTIME;
    /* A half-written prediction file would pass for a whole one: the old
     * file stays (only our temporary goes) unless every row went through. */
    if (!ok || result != CLI_EXIT_OK) {
        ax_output_file_abandon(output->file);
        output->file = NULL;
        return CLI_EXIT_RUNTIME;
    }
    ax_status status = ax_output_file_commit(output->file);
    output->file = NULL;
    if (status != AX_STATUS_OK) {
        fprintf(stderr, "axon: %s %s\n", output->option, ax_error_message());
        return CLI_EXIT_RUNTIME;
    }
    return CLI_EXIT_OK;
}

/* stdout's own state: there is one standard output per process. */
static output_stream standard_output;

void output_stream_take_stdout(void)
{
    output_stream *output = &standard_output;
    memset(output, 0, sizeof *output);
    output->name = "standard output";
    cookie_io_functions_t functions = {.write = write_stream};
    FILE *stream = fopencookie(output, "w", functions);
    if (!stream)
        return; /* stdio's stdout then, with its flag but no cause */
    setvbuf(stream, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
    fflush(stdout);
    output->stream = stream;
    stdout = stream;
}

int output_stream_finish_stdout(int result)
{
    const int flushed = fflush(stdout);
    const int error = standard_output.stream ? standard_output.error : (flushed ? errno : 0);
    if (flushed == 0 && !ferror(stdout))
        return result;
    fprintf(stderr, "axon: writing to standard output failed%s%s\n", error ? ": " : "",
            error ? strerror(error) : "");
    return result == CLI_EXIT_OK ? CLI_EXIT_RUNTIME : result;
}
