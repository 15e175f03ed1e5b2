/* atomic_file.c: temporary file, fsync, rename, fsync of the folder (see
 * atomic_file.h). The messages are the library's model writer's; callers
 * that said other words before keep them through file->failed. */
#include "base/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"

/* A file system that cannot fsync (some FUSE ones, /dev/null) says EINVAL:
 * the data are then as durable as that file system makes them. */
static int sync_descriptor(int fd)
{
    return fsync(fd) != 0 && errno != EINVAL ? errno : 0;
}

/* Records the failed step, removes the temporary and says why. */
static ax_status fail_step(ax_atomic_file *file, ax_atomic_step step, int error)
{
    ax_atomic_file_abandon(file);
    file->failed = step;
    file->error = error;
    switch (step) {
    case AX_ATOMIC_STEP_CREATE:
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot create the temporary file %s: %s",
                       file->path, file->temporary, strerror(error));
    case AX_ATOMIC_STEP_WRITE:
        /* A short write without errno cannot happen on POSIX, but say something useful. */
        return ax_fail(AX_STATUS_IO_ERROR, "%s: writing failed (%s); the old file, if any, is "
                       "unchanged", file->path, error ? strerror(error) : "short write");
    case AX_ATOMIC_STEP_RENAME:
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot replace it with the new file: %s",
                       file->path, strerror(error));
    default:
        return ax_fail(AX_STATUS_IO_ERROR, "%s: the new file is in place but its folder "
                       "could not be synced to the disk: %s", file->path, strerror(error));
    }
}

ax_status ax_atomic_file_open(ax_atomic_file *file, const char *path)
{
    file->fd = -1;
    file->failed = AX_ATOMIC_STEP_NONE;
    file->error = 0;
    file->created = false;
    file->temporary[0] = '\0';
    int length = snprintf(file->path, sizeof file->path, "%s", path);
    snprintf(file->temporary, sizeof file->temporary, "%s.tmp.%ld", path, (long)getpid());
    if (length < 0 || (size_t)length >= sizeof file->path)
        return fail_step(file, AX_ATOMIC_STEP_CREATE, ENAMETOOLONG);
    /* 0666 less the umask, as fopen creates files. */
    file->fd = open(file->temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (file->fd < 0)
        return fail_step(file, AX_ATOMIC_STEP_CREATE, errno);
    file->created = true;
    return AX_STATUS_OK;
}

ax_status ax_atomic_file_write(ax_atomic_file *file, const void *data, size_t size)
{
    const unsigned char *bytes = data;
    while (size > 0) {
        ssize_t written = write(file->fd, bytes, size);
        if (written < 0 && errno == EINTR)
            continue;
#if defined(O_DIRECT)
        if (written < 0 && errno == EINVAL) {
            int flags = fcntl(file->fd, F_GETFL);
            if (flags >= 0 && (flags & O_DIRECT) && fcntl(file->fd, F_SETFL, flags & ~O_DIRECT) == 0)
                continue;
        }
#endif
        if (written <= 0)
            return fail_step(file, AX_ATOMIC_STEP_WRITE, written < 0 ? errno : ENOSPC);
        bytes += written;
        size -= (size_t)written;
    }
    return AX_STATUS_OK;
}

/* fsync of the folder holding path, so that the rename is on the disk too. */
static int sync_folder(const char *path)
{
    char folder[4096];
    snprintf(folder, sizeof folder, "%s", path);
    char *slash = strrchr(folder, '/');
    if (!slash)
        snprintf(folder, sizeof folder, ".");
    else if (slash == folder)
        folder[1] = '\0';
    else
        *slash = '\0';
    int fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int error = sync_descriptor(fd);
    close(fd);
    return error;
}

ax_status ax_atomic_file_commit(ax_atomic_file *file)
{
    int error = sync_descriptor(file->fd);
    int fd = file->fd;
    file->fd = -1;
    if (close(fd) != 0 && !error)
        error = errno;
    if (error)
        return fail_step(file, AX_ATOMIC_STEP_WRITE, error);
    if (rename(file->temporary, file->path) != 0)
        return fail_step(file, AX_ATOMIC_STEP_RENAME, errno);
    file->created = false; /* it is the target now */
    error = sync_folder(file->path);
    if (error)
        return fail_step(file, AX_ATOMIC_STEP_FOLDER, error);
    return AX_STATUS_OK;
}

void ax_atomic_file_abandon(ax_atomic_file *file)
{
    if (file->fd >= 0)
        close(file->fd);
    file->fd = -1;
    if (file->created)
        unlink(file->temporary);
    file->created = false;
}

ax_status ax_file_write_atomic(const char *path, const void *const *parts, const size_t *sizes,
                               int count, ax_atomic_file *file)
{
    ax_atomic_file local;
    if (!file)
        file = &local;
    AX_TRY(ax_atomic_file_open(file, path));
    for (int i = 0; i < count; i++)
        AX_TRY(ax_atomic_file_write(file, parts[i], sizes[i]));
    return ax_atomic_file_commit(file);
}
