/* atomic_file.h: the one way axon replaces a file (models, checkpoints,
 * .npy arrays, prep's batches and metadata): the bytes go to "PATH.tmp.PID"
 * in the same folder, which is flushed to the disk (fsync) and closed, then
 * renamed over PATH, and then the folder itself is synced so the rename
 * survives a crash. A reader sees the old file or the whole new one, never
 * half of one; on any failure the temporary is removed and PATH is left as
 * it was. prep_remove_stale_temporaries (src/prep) relies on the name. */
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
    ax_atomic_step failed; /* AX_ATOMIC_STEP_NONE while all is well */
    int error;             /* the errno of the failed step */
} ax_atomic_file;

/* Creates path's temporary file, empty. On failure nothing is left behind
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
