/* atomic_file.c: temporary file, fsync, rename, fsync of the folder (see
 * atomic_file.h). The messages are the library's model writer's; callers
 * that said other words before keep them through file->failed. */
#include "base/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
        if (file->in_place)
            return ax_fail(AX_STATUS_IO_ERROR, "%s: writing failed: %s", file->path,
                           error ? strerror(error) : "short write");
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

/* Follows path's symbolic links, as open() would, to the name that is not
 * a link (or does not exist: a dangling link's target). Returns 0 or errno. */
static int follow_links(const char *path, char *target, size_t capacity)
{
    char current[PATH_MAX], next[PATH_MAX], link[PATH_MAX];
    if (snprintf(current, sizeof current, "%s", path) >= (int)sizeof current)
        return ENAMETOOLONG;
    for (int hops = 0; hops < 40; hops++) { /* 40: Linux's own limit (ELOOP) */
        struct stat info;
        if (lstat(current, &info) != 0 || !S_ISLNK(info.st_mode)) {
            if (snprintf(target, capacity, "%s", current) >= (int)capacity)
                return ENAMETOOLONG;
            return 0;
        }
        ssize_t length = readlink(current, link, sizeof link - 1);
        if (length < 0)
            return errno;
        link[length] = '\0';
        /* A relative link is relative to the folder holding it. */
        const char *slash = strrchr(current, '/');
        int written = link[0] == '/' || !slash
                          ? snprintf(next, sizeof next, "%s", link)
                          : snprintf(next, sizeof next, "%.*s/%s", (int)(slash - current), current,
                                     link);
        if (written < 0 || (size_t)written >= sizeof next)
            return ENAMETOOLONG;
        memcpy(current, next, (size_t)written + 1);
    }
    return ELOOP;
}

static const char *kind_name(mode_t mode)
{
    return S_ISBLK(mode)    ? "a block device (a disk)"
           : S_ISSOCK(mode) ? "a socket"
                            : "neither a file, a character device nor a FIFO";
}

ax_status ax_output_target(const char *path, char *target, size_t capacity, bool *in_place)
{
    *in_place = false;
    struct stat info;
    if (stat(path, &info) == 0) {
        if (S_ISDIR(info.st_mode))
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: is a folder; give a file name", path);
        /* Replacing a device node or a pipe by a regular file would break
         * whatever else uses it (/dev/null, a reader of the pipe): written
         * in place, as a shell's redirection writes them. */
        if (S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode)) {
            *in_place = true;
            if (snprintf(target, capacity, "%s", path) >= (int)capacity)
                return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: the path is too long", path);
            return AX_STATUS_OK;
        }
        /* Writing over a disk is never what an output option means. */
        if (!S_ISREG(info.st_mode))
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: is %s; axon writes only files, "
                           "character devices and FIFOs", path, kind_name(info.st_mode));
    } else if (errno != ENOENT) {
        return ax_fail(AX_STATUS_IO_ERROR, "%s: %s", path, strerror(errno));
    }
    int error = follow_links(path, target, capacity);
    if (error)
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot follow its links: %s", path, strerror(error));
    return AX_STATUS_OK;
}

/* The folder holding path ("." for a bare name). */
static void folder_of(const char *path, char *folder, size_t capacity)
{
    snprintf(folder, capacity, "%s", path);
    char *slash = strrchr(folder, '/');
    if (!slash)
        snprintf(folder, capacity, ".");
    else if (slash == folder)
        folder[1] = '\0';
    else
        *slash = '\0';
}

ax_status ax_output_place_check(const char *path)
{
    char target[4096], folder[4096];
    bool in_place = false;
    AX_TRY(ax_output_target(path, target, sizeof target, &in_place));
    if (in_place) {
        if (access(path, W_OK) != 0)
            return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot write to it: %s", path, strerror(errno));
        return AX_STATUS_OK;
    }
    folder_of(target, folder, sizeof folder);
    const char *via = strcmp(target, path) != 0 ? " (where its link points)" : "";
    struct stat info;
    if (stat(folder, &info) != 0 || !S_ISDIR(info.st_mode))
        return ax_fail(AX_STATUS_IO_ERROR, "%s: the folder %s%s does not exist", path, folder, via);
    if (access(folder, W_OK) != 0)
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot write in the folder %s%s: %s", path,
                       folder, via, strerror(errno));
    return AX_STATUS_OK;
}

ax_status ax_atomic_file_open(ax_atomic_file *file, const char *path)
{
    file->fd = -1;
    file->failed = AX_ATOMIC_STEP_NONE;
    file->error = 0;
    file->created = false;
    file->in_place = false;
    file->temporary[0] = '\0';
    snprintf(file->path, sizeof file->path, "%s", path);
    AX_TRY(ax_output_target(path, file->path, sizeof file->path, &file->in_place));
    if (file->in_place) {
        /* No O_CREAT, no O_TRUNC: the node exists, and stays as it is. */
        file->fd = open(file->path, O_WRONLY | O_CLOEXEC);
        if (file->fd < 0) {
            int error = errno;
            file->failed = AX_ATOMIC_STEP_CREATE;
            file->error = error;
            return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot open it for writing: %s", file->path,
                           strerror(error));
        }
        return AX_STATUS_OK;
    }
    int length = snprintf(file->temporary, sizeof file->temporary, "%s.tmp.%ld", file->path,
                          (long)getpid());
    if (length < 0 || (size_t)length >= sizeof file->temporary)
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
    folder_of(path, folder, sizeof folder);
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
    if (file->in_place)
        return AX_STATUS_OK; /* nothing to rename: the bytes went to the device itself */
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
