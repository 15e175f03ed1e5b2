/* output_file.c: the public face of base/atomic_file.h (axon.h, "output
 * files"), so that the command line and other programs write their own
 * outputs (predictions, profiles, metrics) with the rules the library's
 * models and checkpoints follow: links followed, devices and FIFOs written
 * in place, regular files replaced whole or not at all, and nothing but our
 * own temporary removed after a failure. */
#include <stdlib.h>

#include "axon.h"
#include "base/atomic_file.h"
#include "base/error.h"

struct ax_output_file {
    ax_atomic_file file;
};

ax_status ax_output_check(const char *path)
{
    if (!path || !path[0])
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "no output path given");
    return ax_output_place_check(path);
}

ax_status ax_output_file_open(const char *path, ax_output_file **out)
{
    *out = NULL;
    if (!path || !path[0])
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "no output path given");
    ax_output_file *output = malloc(sizeof *output);
    if (!output)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    ax_status status = ax_atomic_file_open(&output->file, path);
    if (status != AX_STATUS_OK) {
        free(output);
        return status;
    }
    *out = output;
    return AX_STATUS_OK;
}

ax_status ax_output_file_write(ax_output_file *file, const void *data, size_t size)
{
    if (file->file.failed != AX_ATOMIC_STEP_NONE)
        return AX_STATUS_IO_ERROR; /* told once, at the write that failed */
    return ax_atomic_file_write(&file->file, data, size);
}

bool ax_output_file_in_place(const ax_output_file *file) { return file->file.in_place; }

const char *ax_output_file_target(const ax_output_file *file) { return file->file.path; }

ax_status ax_output_file_commit(ax_output_file *file)
{
    ax_status status = file->file.failed != AX_ATOMIC_STEP_NONE
                           ? AX_STATUS_IO_ERROR
                           : ax_atomic_file_commit(&file->file);
    ax_atomic_file_abandon(&file->file); /* closes what a failure left open */
    free(file);
    return status;
}

void ax_output_file_abandon(ax_output_file *file)
{
    if (!file)
        return;
    ax_atomic_file_abandon(&file->file);
    free(file);
}
