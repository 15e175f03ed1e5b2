/* atomic_file.h: the one way axon replaces a file (models, checkpoints,
 * .npy arrays, prep's batches and metadata): the bytes go to "PATH.tmp.PID"
 * in the same folder, which is flushed to the disk (fsync) and closed, then
 * renamed over PATH, and then the folder itself is synced so the rename
 * survives a crash. A reader sees the old file or the whole new one, never
 * half of one; on any failure the temporary is removed and PATH is left as
 * it was. prep_remove_stale_temporaries (src/prep) relies on the name.
 *
 * What PATH is decides how it is written (docs/cli.md, "Output files"):
 *   nothing, or a regular file   replaced as above
 *   a symbolic link              followed to its final target, which is then
 *                                replaced as above (the temporary goes in the
 *                                target's folder, so the rename stays on one
 *                                file system); the link itself is kept
 *   a character device or FIFO   written in place (/dev/null, /dev/stdout on
 *                                a terminal or pipe, a named pipe): never
 *                                replaced, renamed over or removed
 *   a folder, block device, socket  refused before anything is written
 * A failure removes only the temporary this process made, never PATH. */
#ifndef AX_BASE_ATOMIC_FILE_H
#define AX_BASE_ATOMIC_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "axon.h"

/* The step that failed; a caller with its own wording for a failure reads
 * it (with error) after the call returned the status. */
typedef enum ax_atomic_step {
    AX_ATOMIC_STEP_NONE = 0,
    AX_ATOMIC_STEP_CREATE, /* the temporary could not be created (or the path is too long) */
    AX_ATOMIC_STEP_WRITE,  /* a write, the fsync or the close of the temporary failed */
    AX_ATOMIC_STEP_RENAME, /* the temporary could not be renamed over the target */
    AX_ATOMIC_STEP_FOLDER  /* the new file is in place but its folder could not be synced */
} ax_atomic_step;

typedef struct ax_atomic_file {
    int fd;                /* the temporary's descriptor, -1 once closed */
    char path[4096];       /* the target */
    char temporary[4128];  /* "PATH.tmp.PID", kept for messages after a failure */
    bool created;          /* the temporary exists and is still to be renamed or removed */
    bool in_place;         /* path is a character device or FIFO, written directly */
    ax_atomic_step failed; /* AX_ATOMIC_STEP_NONE while all is well */
    int error;             /* the errno of the failed step */
} ax_atomic_file;

/* Where a write to path goes: *in_place true for a character device or a
 * FIFO (target is then path), else target is the name to replace, path
 * with every symbolic link followed (a dangling link: the name it points
 * to). Fails, naming path, for a folder, a block device, a socket, a loop
 * of links or a path that cannot be looked at. */
ax_status ax_output_target(const char *path, char *target, size_t capacity, bool *in_place);
/* Everything ax_atomic_file_open would refuse, without writing: also a
 * target whose folder is missing or not writable (or, in place, a device
 * not writable). The message names path and the folder. */
ax_status ax_output_place_check(const char *path);

/* Creates path's temporary file, empty (see above for links, devices and
 * FIFOs, which are opened in place). On failure nothing is left behind
 * and the message names path and the temporary. */
ax_status ax_atomic_file_open(ax_atomic_file *file, const char *path);
/* Appends size bytes to the temporary. A descriptor switched to O_DIRECT
 * that refuses a write (EINVAL: an alignment the file system does not
 * accept) writes it again without O_DIRECT. On failure the temporary is
 * removed (see ax_atomic_file_abandon) and the message names path. */
ax_status ax_atomic_file_write(ax_atomic_file *file, const void *data, size_t size);
/* fsync and close the temporary, rename it over path, fsync the folder. On
 * failure before the rename the temporary is removed and path unchanged. */
ax_status ax_atomic_file_commit(ax_atomic_file *file);
/* Closes and removes the temporary, if there still is one; path unchanged. */
void ax_atomic_file_abandon(ax_atomic_file *file);

/* Replaces path with the count parts (parts[i] of sizes[i] bytes) in one
 * go: open, write each, commit. file receives the failed step for callers
 * that word the message themselves; NULL when they do not. */
ax_status ax_file_write_atomic(const char *path, const void *const *parts, const size_t *sizes,
                               int count, ax_atomic_file *file);

#endif
