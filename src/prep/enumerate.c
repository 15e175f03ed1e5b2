/* enumerate.c: lists the images of a prep input (a folder tree, a .tar, or a
 * tar of tars such as ImageNet's training archive) as byte ranges of the
 * files that hold them, so that the pipeline can read any image by one
 * pread() in any order: that is what lets a seeded shuffle decide the
 * batches without unpacking anything or holding the data set in memory.
 *
 * Tars are read with libarchive through a "window" reader over a byte range
 * of the file (pread + seek), so members are skipped by seeking and a tar
 * inside a tar is opened in place; the data offset of a member is the bytes
 * libarchive has consumed when it returns the member's header
 * (archive_filter_bytes), which is exact for uncompressed tars: compressed
 * ones (.tar.gz) have no such offsets and are refused with a hint. Folder
 * entries are visited in byte order of their names, tar members in stored
 * order, so the list, and thus every batch, does not depend on the file
 * system. */
#define _POSIX_C_SOURCE 200809L

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "prep/prep.h"

enum { MAX_TAR_DEPTH = 4 };

void prep_warn(prep_warnings *warnings, const char *format, ...)
{
    warnings->count++;
    if (warnings->kept >= 1000)
        return; /* counted, not kept: a summary of a million bad files helps nobody */
    if (warnings->kept == warnings->capacity) {
        int64_t capacity = warnings->capacity ? 2 * warnings->capacity : 16;
        char **grown = realloc(warnings->text, (size_t)capacity * sizeof *grown);
        if (!grown)
            return;
        warnings->text = grown;
        warnings->capacity = capacity;
    }
    va_list args;
    va_start(args, format);
    char *text = NULL;
    if (vasprintf(&text, format, args) >= 0)
        warnings->text[warnings->kept++] = text;
    va_end(args);
}

static bool has_suffix(const char *name, const char *suffix)
{
    size_t length = strlen(name), suffix_length = strlen(suffix);
    return length >= suffix_length && strcasecmp(name + length - suffix_length, suffix) == 0;
}

static bool is_image_name(const char *name)
{
    return has_suffix(name, ".jpg") || has_suffix(name, ".jpeg") || has_suffix(name, ".png");
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* ------------------------------------------------------------ list growth */

static ax_status add_name(prep_list *list, const char *prefix, const char *name, int64_t *offset)
{
    size_t need = strlen(prefix) + strlen(name) + 2;
    if (list->names_length + (int64_t)need > list->names_capacity) {
        int64_t capacity = list->names_capacity ? 2 * list->names_capacity : 1 << 16;
        while (capacity < list->names_length + (int64_t)need)
            capacity *= 2;
        char *grown = realloc(list->names, (size_t)capacity);
        if (!grown)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory listing the input");
        list->names = grown;
        list->names_capacity = capacity;
    }
    *offset = list->names_length;
    int written = sprintf(list->names + list->names_length, "%s%s%s", prefix, prefix[0] ? ":" : "",
                          name);
    list->names_length += written + 1;
    return AX_STATUS_OK;
}

static ax_status add_source(prep_list *list, const char *path, int32_t *index)
{
    if (list->source_count == list->source_capacity) {
        int32_t capacity = list->source_capacity ? 2 * list->source_capacity : 64;
        char **grown = realloc(list->sources, (size_t)capacity * sizeof *grown);
        if (!grown)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory listing the input");
        list->sources = grown;
        list->source_capacity = capacity;
    }
    char *copy = strdup(path);
    if (!copy)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory listing the input");
    list->sources[list->source_count] = copy;
    *index = list->source_count++;
    return AX_STATUS_OK;
}

/* The index of a label name, added if new. Images of one label come in a
 * row, so the last answer is tried first (ImageNet: 1000 labels). */
static ax_status find_label(prep_list *list, const char *name, size_t length, int32_t *index)
{
    static _Thread_local int32_t last = -1;
    if (last >= 0 && last < list->label_count && strlen(list->labels[last]) == length &&
        memcmp(list->labels[last], name, length) == 0) {
        *index = last;
        return AX_STATUS_OK;
    }
    for (int32_t i = 0; i < list->label_count; i++)
        if (strlen(list->labels[i]) == length && memcmp(list->labels[i], name, length) == 0) {
            *index = last = i;
            return AX_STATUS_OK;
        }
    if (list->label_count == list->label_capacity) {
        int32_t capacity = list->label_capacity ? 2 * list->label_capacity : 64;
        char **grown = realloc(list->labels, (size_t)capacity * sizeof *grown);
        if (!grown)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory listing the input");
        list->labels = grown;
        list->label_capacity = capacity;
    }
    char *copy = strndup(name, length);
    if (!copy)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory listing the input");
    list->labels[list->label_count] = copy;
    *index = last = list->label_count++;
    return AX_STATUS_OK;
}

/* label: the label name (length bytes), or NULL for an unlabelled image. */
static ax_status add_image(prep_list *list, int32_t source, int64_t offset, int64_t size,
                           const char *label, size_t label_length, const char *prefix,
                           const char *name)
{
    if (list->count == list->capacity) {
        int64_t capacity = list->capacity ? 2 * list->capacity : 1024;
        prep_image *grown = realloc(list->images, (size_t)capacity * sizeof *grown);
        if (!grown)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory listing the input");
        list->images = grown;
        list->capacity = capacity;
    }
    prep_image *image = &list->images[list->count];
    image->source = source;
    image->offset = offset;
    image->size = size;
    image->label = -1;
    if (label)
        AX_TRY(find_label(list, label, label_length, &image->label));
    else
        list->unlabelled++;
    AX_TRY(add_name(list, prefix, name, &image->name));
    list->count++;
    return AX_STATUS_OK;
}

/* ------------------------------------------------------------------- tars */

typedef struct window {
    int fd;
    int64_t base, length, position;
    unsigned char buffer[1 << 16];
} window;

static la_ssize_t window_read(struct archive *archive, void *user, const void **buffer)
{
    window *w = user;
    int64_t left = w->length - w->position;
    size_t want = left < (int64_t)sizeof w->buffer ? (size_t)left : sizeof w->buffer;
    *buffer = w->buffer;
    if (want == 0)
        return 0;
    ssize_t got = pread(w->fd, w->buffer, want, (off_t)(w->base + w->position));
    if (got < 0) {
        archive_set_error(archive, errno, "read failed: %s", strerror(errno));
        return -1;
    }
    w->position += got;
    return got;
}

static la_int64_t window_skip(struct archive *archive, void *user, la_int64_t request)
{
    (void)archive;
    window *w = user;
    int64_t left = w->length - w->position;
    int64_t step = request < left ? request : left;
    w->position += step;
    return step;
}

static la_int64_t window_seek(struct archive *archive, void *user, la_int64_t offset, int whence)
{
    window *w = user;
    int64_t target = whence == SEEK_SET ? offset
                     : whence == SEEK_CUR ? w->position + offset
                                          : w->length + offset;
    if (target < 0 || target > w->length) {
        archive_set_error(archive, EINVAL, "seek outside the archive");
        return ARCHIVE_FATAL;
    }
    w->position = target;
    return target;
}

/* The first path component of a member name (its folder), or NULL for a
 * member at the top of the tar. */
static const char *first_component(const char *name, size_t *length)
{
    while (name[0] == '.' && name[1] == '/')
        name += 2;
    const char *slash = strchr(name, '/');
    if (!slash)
        return NULL;
    *length = (size_t)(slash - name);
    return name;
}

static ax_status scan_tar(prep_list *list, int32_t source, int fd, int64_t base, int64_t length,
                          const char *prefix, const char *label, int depth,
                          prep_warnings *warnings);

static ax_status scan_member(prep_list *list, int32_t source, int fd, int64_t base,
                             struct archive *archive, struct archive_entry *entry,
                             const char *prefix, const char *label, int depth,
                             prep_warnings *warnings, int64_t window_length)
{
    const char *name = archive_entry_pathname(entry);
    if (!name || archive_entry_filetype(entry) != AE_IFREG)
        return AX_STATUS_OK; /* folders, links: nothing to read */
    const char *base_part = base_name(name);
    int64_t size = archive_entry_size(entry);
    int64_t offset = archive_filter_bytes(archive, 0);
    if (base_part[0] == '.' || (!is_image_name(name) && !has_suffix(name, ".tar"))) {
        list->files_ignored++;
        return AX_STATUS_OK;
    }
    if (offset < 0 || size < 0 || offset + size > window_length) {
        prep_warn(warnings, "%s:%s: the member runs past the end of the tar (truncated?); skipped",
                  prefix, name);
        list->skipped++;
        return AX_STATUS_OK;
    }
    size_t label_length = label ? strlen(label) : 0;
    const char *member_label = label;
    if (!member_label) {
        member_label = first_component(name, &label_length);
        if (!member_label && has_suffix(name, ".tar")) {
            member_label = base_part; /* an inner tar at the top: its name is the label */
            label_length = strlen(base_part) - 4;
        }
    }
    if (has_suffix(name, ".tar")) {
        if (depth + 1 > MAX_TAR_DEPTH) {
            prep_warn(warnings, "%s:%s: tars nested more than %d deep are not read", prefix, name,
                      MAX_TAR_DEPTH);
            return AX_STATUS_OK;
        }
        char *inner_prefix = NULL, *inner_label = member_label ? strndup(member_label, label_length) : NULL;
        if (asprintf(&inner_prefix, "%s:%s", prefix, name) < 0 || (member_label && !inner_label)) {
            free(inner_label);
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory listing the input");
        }
        ax_status status = scan_tar(list, source, fd, base + offset, size, inner_prefix,
                                    inner_label, depth + 1, warnings);
        free(inner_prefix);
        free(inner_label);
        return status;
    }
    return add_image(list, source, base + offset, size, member_label, label_length, prefix, name);
}

/* Lists the tar in bytes [base, base + length) of fd. The outermost tar
 * (depth 0) must be readable; a damaged inner tar is a warning. */
static ax_status scan_tar(prep_list *list, int32_t source, int fd, int64_t base, int64_t length,
                          const char *prefix, const char *label, int depth,
                          prep_warnings *warnings)
{
    window *w = malloc(sizeof *w);
    struct archive *archive = archive_read_new();
    if (!w || !archive) {
        free(w);
        archive_read_free(archive);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory opening %s", prefix);
    }
    w->fd = fd;
    w->base = base;
    w->length = length;
    w->position = 0;
    archive_read_support_format_tar(archive);
    archive_read_support_filter_all(archive);
    archive_read_set_read_callback(archive, window_read);
    archive_read_set_skip_callback(archive, window_skip);
    archive_read_set_seek_callback(archive, window_seek);
    archive_read_set_callback_data(archive, w);
    ax_status status = AX_STATUS_OK;
    bool damaged = false;
    char why[512] = "";
    if (archive_read_open1(archive) != ARCHIVE_OK) {
        damaged = true;
        snprintf(why, sizeof why, "%s", archive_error_string(archive));
    } else {
        struct archive_entry *entry;
        for (;;) {
            int result = archive_read_next_header(archive, &entry);
            if (result == ARCHIVE_EOF)
                break;
            if (result < ARCHIVE_WARN) {
                damaged = true;
                snprintf(why, sizeof why, "%s", archive_error_string(archive));
                break;
            }
            if (archive_filter_code(archive, 0) != ARCHIVE_FILTER_NONE) {
                status = ax_fail(AX_STATUS_UNSUPPORTED,
                                 "%s: a compressed tar (%s) cannot be read image by image in "
                                 "shuffled order; decompress it first (e.g. gunzip)",
                                 prefix, archive_filter_name(archive, 0));
                break;
            }
            status = scan_member(list, source, fd, base, archive, entry, prefix, label, depth,
                                 warnings, length);
            if (status != AX_STATUS_OK)
                break;
        }
    }
    if (status == AX_STATUS_OK && damaged) {
        if (depth == 0 && list->count == 0)
            status = ax_fail(AX_STATUS_BAD_FILE, "%s: not a readable tar: %s", prefix,
                             why[0] ? why : "unknown format");
        else
            prep_warn(warnings, "%s: damaged tar, the rest of it is skipped: %s", prefix, why);
    }
    archive_read_free(archive);
    free(w);
    return status;
}

static ax_status scan_tar_file(prep_list *list, const char *path, const char *display,
                               const char *label, prep_warnings *warnings)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot open: %s", path, strerror(errno));
    struct stat info;
    ax_status status;
    int32_t source = -1;
    if (fstat(fd, &info) != 0)
        status = ax_fail(AX_STATUS_IO_ERROR, "%s: cannot stat: %s", path, strerror(errno));
    else if ((status = add_source(list, path, &source)) == AX_STATUS_OK)
        status = scan_tar(list, source, fd, 0, (int64_t)info.st_size, display, label, 0, warnings);
    close(fd);
    return status;
}

/* ---------------------------------------------------------------- folders */

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists folder path; relative is its path below the input ("" at the top),
 * label its label (NULL at the top). */
static ax_status scan_folder(prep_list *list, prep_walk *walk, const char *path,
                             const char *relative, const char *label, int depth,
                             prep_warnings *warnings)
{
    DIR *dir = opendir(path);
    if (!dir) {
        /* A folder skipped for want of memory would drop a label's images. */
        if (errno == ENOMEM)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory opening %s", path);
        if (depth == 0)
            return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot open the folder: %s", path,
                           strerror(errno));
        prep_warn(warnings, "%s: cannot open the folder, skipped: %s", path, strerror(errno));
        return AX_STATUS_OK;
    }
    char **names = NULL;
    size_t count = 0, capacity = 0;
    ax_status status = AX_STATUS_OK;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        if (count == capacity) {
            capacity = capacity ? 2 * capacity : 64;
            char **grown = realloc(names, capacity * sizeof *grown);
            if (!grown) {
                status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory listing %s", path);
                break;
            }
            names = grown;
        }
        if (!(names[count] = strdup(entry->d_name))) {
            status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory listing %s", path);
            break;
        }
        count++;
    }
    closedir(dir);
    if (status == AX_STATUS_OK)
        qsort(names, count, sizeof *names, compare_names);
    for (size_t i = 0; i < count && status == AX_STATUS_OK; i++) {
        char *child = NULL, *child_relative = NULL;
        if (asprintf(&child, "%s/%s", path, names[i]) < 0 ||
            asprintf(&child_relative, "%s%s%s", relative, relative[0] ? "/" : "", names[i]) < 0) {
            free(child);
            status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory listing %s", path);
            break;
        }
        struct stat info;
        const char *child_label = label ? label : names[i];
        char why[1024];
        bool first = true;
        if (names[i][0] == '.') {
            list->files_ignored++;
        } else if (lstat(child, &info) == 0 && S_ISLNK(info.st_mode) &&
                   !prep_walk_link(walk, child, why, sizeof why)) {
            prep_warn(warnings, "%s: %s", child, why);
            list->links_skipped++;
        } else if (stat(child, &info) != 0) {
            prep_warn(warnings, "%s: cannot stat, skipped: %s", child, strerror(errno));
        } else if (S_ISDIR(info.st_mode)) {
            status = prep_walk_enter(walk, &info, &first);
            if (status == AX_STATUS_OK && !first) {
                prep_warn(warnings, "%s: a folder listed already (reached again through a link): "
                          "not listed twice", child);
                list->links_skipped++;
            } else if (status == AX_STATUS_OK && depth < 64) {
                status = scan_folder(list, walk, child, child_relative, child_label, depth + 1,
                                     warnings);
            }
        } else if (!S_ISREG(info.st_mode)) {
            list->files_ignored++;
        } else if (has_suffix(names[i], ".tar")) {
            /* A tar at the top is one label (ImageNet's n01440764.tar). */
            char *tar_label = label ? strdup(label) : strndup(names[i], strlen(names[i]) - 4);
            if (!tar_label)
                status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
            else
                status = scan_tar_file(list, child, child_relative, tar_label, warnings);
            free(tar_label);
        } else if (is_image_name(names[i])) {
            int32_t source = -1;
            status = add_source(list, child, &source);
            if (status == AX_STATUS_OK)
                status = add_image(list, source, 0, (int64_t)info.st_size, label,
                                   label ? strlen(label) : 0, "", child_relative);
        } else {
            list->files_ignored++;
        }
        free(child);
        free(child_relative);
    }
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
    return status;
}

/* ----------------------------------------------------------------- labels */

static ax_status read_label_file(const char *path, char ***names, int32_t *count)
{
    FILE *file = fopen(path, "r");
    if (!file)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot open the labels file: %s", path,
                       strerror(errno));
    char *line = NULL;
    size_t line_capacity = 0;
    ssize_t length;
    int64_t line_number = 0;
    ax_status status = AX_STATUS_OK;
    *names = NULL;
    *count = 0;
    int32_t capacity = 0;
    while ((length = getline(&line, &line_capacity, file)) >= 0) {
        line_number++;
        while (length > 0 && (line[length - 1] == '\n' || line[length - 1] == '\r' ||
                              line[length - 1] == ' ' || line[length - 1] == '\t'))
            line[--length] = '\0';
        if (length == 0)
            continue;
        for (int32_t i = 0; i < *count; i++)
            if (strcmp((*names)[i], line) == 0) {
                status = ax_fail(AX_STATUS_BAD_FILE, "%s:%lld: label '%s' is listed twice", path,
                                 (long long)line_number, line);
                break;
            }
        if (status != AX_STATUS_OK)
            break;
        if (*count == capacity) {
            capacity = capacity ? 2 * capacity : 64;
            char **grown = realloc(*names, (size_t)capacity * sizeof *grown);
            if (!grown) {
                status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
                break;
            }
            *names = grown;
        }
        if (!((*names)[*count] = strdup(line))) {
            status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
            break;
        }
        (*count)++;
    }
    /* getline's -1 is the end, a read error or no memory for the line
     * (ENOMEM sets no error flag): a labels file read in part is no list. */
    const int read_error = errno;
    if (status == AX_STATUS_OK && !feof(file))
        status = read_error == ENOMEM
                     ? ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path)
                     : ax_fail(AX_STATUS_IO_ERROR, "%s: cannot read: %s", path,
                               strerror(read_error));
    free(line);
    fclose(file);
    if (status == AX_STATUS_OK && *count == 0)
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: the labels file names no label", path);
    if (status != AX_STATUS_OK) { /* the names read before the refusal */
        for (int32_t i = 0; i < *count; i++)
            free((*names)[i]);
        free(*names);
        *names = NULL;
        *count = 0;
    }
    return status;
}

/* Renumbers labels: by byte order of their names, or by the order of the
 * labels file (every label found must be in it). */
static ax_status order_labels(prep_list *list, const char *labels_file)
{
    int32_t old_count = list->label_count;
    char **order = NULL;
    int32_t order_count = 0;
    if (labels_file) {
        AX_TRY(read_label_file(labels_file, &order, &order_count));
    } else {
        order = malloc((size_t)(old_count > 0 ? old_count : 1) * sizeof *order);
        if (!order)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
        for (int32_t i = 0; i < old_count; i++)
            order[i] = strdup(list->labels[i]);
        order_count = old_count;
        for (int32_t i = 0; i < old_count; i++)
            if (!order[i]) {
                for (int32_t j = 0; j < old_count; j++)
                    free(order[j]);
                free(order);
                return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
            }
        qsort(order, (size_t)order_count, sizeof *order, compare_names);
    }
    int32_t *map = malloc((size_t)(old_count > 0 ? old_count : 1) * sizeof *map);
    ax_status status = map ? AX_STATUS_OK : ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
    for (int32_t i = 0; i < old_count && status == AX_STATUS_OK; i++) {
        map[i] = -1;
        for (int32_t j = 0; j < order_count; j++)
            if (strcmp(order[j], list->labels[i]) == 0)
                map[i] = j;
        if (map[i] < 0)
            status = ax_fail(AX_STATUS_BAD_DATA,
                             "%s: label '%s' (a folder or tar of the input) is not in the labels "
                             "file",
                             labels_file, list->labels[i]);
    }
    if (status == AX_STATUS_OK) {
        for (int64_t i = 0; i < list->count; i++)
            if (list->images[i].label >= 0)
                list->images[i].label = map[list->images[i].label];
        for (int32_t i = 0; i < old_count; i++)
            free(list->labels[i]);
        free(list->labels);
        list->labels = order;
        list->label_count = list->label_capacity = order_count;
    } else {
        for (int32_t j = 0; j < order_count; j++)
            free(order[j]);
        free(order);
    }
    free(map);
    return status;
}

ax_status prep_list_build(const char *input, const char *labels_file, prep_list *list,
                          prep_warnings *warnings)
{
    memset(list, 0, sizeof *list);
    struct stat info;
    if (stat(input, &info) != 0)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: %s", input, strerror(errno));
    ax_status status;
    if (S_ISDIR(info.st_mode)) {
        prep_walk walk;
        bool first = true;
        status = prep_walk_start(&walk, input);
        if (status == AX_STATUS_OK)
            status = prep_walk_enter(&walk, &info, &first);
        if (status == AX_STATUS_OK)
            status = scan_folder(list, &walk, input, "", NULL, 0, warnings);
        prep_walk_free(&walk);
    } else
        status = scan_tar_file(list, input, base_name(input), NULL, warnings);
    if (status == AX_STATUS_OK)
        status = order_labels(list, labels_file);
    return status;
}

void prep_list_free(prep_list *list)
{
    for (int32_t i = 0; i < list->source_count; i++)
        free(list->sources[i]);
    for (int32_t i = 0; i < list->label_count; i++)
        free(list->labels[i]);
    free(list->sources);
    free(list->labels);
    free(list->images);
    free(list->names);
    memset(list, 0, sizeof *list);
}
