/* file_roles.c: inputs against outputs, before any work (file_roles.h).
 * Files are compared by identity, not by name: (device, inode) for a file
 * that exists, else (device, inode) of its folder and its last name, so
 * that "g.csv", "./g.csv", "../x/g.csv" and a link to it are one file. */
#define _POSIX_C_SOURCE 200809L
#include "file_roles.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "axon.h"
#include "options.h"

static void add(file_role *roles, int *count, const char *option, const char *path,
                const char *what, file_role_kind kind)
{
    if (!path || *count >= FILE_ROLES_MAX)
        return;
    roles[(*count)++] = (file_role){option, path, what, kind, NULL};
}

void file_roles_input(file_roles *roles, const char *option, const char *path, const char *what)
{
    add(roles->inputs, &roles->input_count, option, path, what, FILE_ROLE_FILE);
}

void file_roles_resumed(file_roles *roles, const char *option, const char *path, const char *what)
{
    add(roles->inputs, &roles->input_count, option, path, what, FILE_ROLE_RESUMED);
}

void file_roles_data(file_roles *roles, const char *option, const char *spec, const char *what)
{
    add(roles->inputs, &roles->input_count, option, spec, what, FILE_ROLE_DATA);
}

void file_roles_output(file_roles *roles, const char *option, const char *path)
{
    add(roles->outputs, &roles->output_count, option, path, NULL, FILE_ROLE_FILE);
}

void file_roles_checkpoints(file_roles *roles, const char *option, const char *prefix)
{
    add(roles->outputs, &roles->output_count, option, prefix, NULL, FILE_ROLE_CHECKPOINTS);
}

void file_roles_folder(file_roles *roles, const char *option, const char *folder,
                       const char *const *names)
{
    add(roles->outputs, &roles->output_count, option, folder, NULL, FILE_ROLE_FOLDER);
    if (folder && roles->output_count > 0)
        roles->outputs[roles->output_count - 1].names = names;
}

/* Where a data spec's files are, as ax_dataset_open resolves it
 * (src/data/open.c): false for synthetic data, which reads no file. */
static bool data_path(const char *spec, char *path, size_t capacity)
{
    struct stat info;
    if (strncmp(spec, "synth:", 6) == 0)
        return false;
    if (strncmp(spec, "batches:", 8) == 0)
        spec += 8;
    else if (stat(spec, &info) != 0 && !strchr(spec, '/') && spec[0] != '.') {
        const char *datasets = getenv("AXON_DATASETS");
        snprintf(path, capacity, "%s/%s", datasets && datasets[0] ? datasets : "/usr/share/datasets",
                 spec);
        return true;
    }
    snprintf(path, capacity, "%s", spec);
    return true;
}

/* The folder part and last name of path. */
static void split_path(const char *path, char *folder, size_t capacity, const char **name)
{
    const char *slash = strrchr(path, '/');
    *name = slash ? slash + 1 : path;
    if (!slash)
        snprintf(folder, capacity, ".");
    else if (slash == path)
        snprintf(folder, capacity, "/");
    else
        snprintf(folder, capacity, "%.*s", (int)(slash - path), path);
}

/* Two paths are one file: both exist as one (device, inode), or neither
 * exists and they name one name in one folder. */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    const bool has_a = stat(a, &sa) == 0, has_b = stat(b, &sb) == 0;
    if (has_a || has_b)
        return has_a && has_b && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char fa[4096], fb[4096];
    const char *na, *nb;
    split_path(a, fa, sizeof fa, &na);
    split_path(b, fb, sizeof fb, &nb);
    return strcmp(na, nb) == 0 && stat(fa, &sa) == 0 && stat(fb, &sb) == 0 &&
           sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The entry of folder that is the file `out` (its stat), or NULL. */
static bool file_in_folder(const char *folder, const struct stat *out, char *found, size_t capacity)
{
    DIR *dir = opendir(folder);
    if (!dir)
        return false;
    bool hit = false;
    struct dirent *entry;
    while (!hit && (entry = readdir(dir)) != NULL) {
        if (entry->d_ino != out->st_ino) /* the cheap test first; stat confirms */
            continue;
        char path[4096];
        struct stat info;
        if (snprintf(path, sizeof path, "%s/%s", folder, entry->d_name) >= (int)sizeof path)
            continue;
        if (stat(path, &info) == 0 && info.st_dev == out->st_dev && info.st_ino == out->st_ino) {
            snprintf(found, capacity, "%s", path);
            hit = true;
        }
    }
    closedir(dir);
    return hit;
}

/* An output that is input `in`: prints the refusal. */
static bool output_is_input(const file_role *out, const file_role *in)
{
    struct stat info;
    if (stat(out->path, &info) != 0 || !S_ISREG(info.st_mode))
        return false; /* a new file, a device or a FIFO is no one's data */
    char path[4096], found[4096];
    if (in->kind != FILE_ROLE_DATA) {
        if (!same_file(out->path, in->path))
            return false;
        fprintf(stderr, "axon: %s %s is %s (%s %s); give another file name\n", out->option,
                out->path, in->what, in->option, in->path);
        return true;
    }
    if (!data_path(in->path, path, sizeof path))
        return false;
    struct stat data;
    if (stat(path, &data) != 0)
        return false; /* the loader will say so */
    if (S_ISDIR(data.st_mode)) {
        if (!file_in_folder(path, &info, found, sizeof found))
            return false;
        fprintf(stderr, "axon: %s %s is a file of %s (%s %s: %s); give another file name\n",
                out->option, out->path, in->what, in->option, in->path, found);
        return true;
    }
    if (!same_file(out->path, path))
        return false;
    fprintf(stderr, "axon: %s %s is %s (%s %s); give another file name\n", out->option,
            out->path, in->what, in->option, in->path);
    return true;
}

/* A checkpoint name: PREFIX.epoch-NNNNNN.safetensors or
 * PREFIX.interrupted.safetensors (src/core/checkpoint.c). */
static bool is_checkpoint_name(const char *name, const char *prefix)
{
    size_t length = strlen(prefix);
    if (strncmp(name, prefix, length) != 0)
        return false;
    const char *rest = name + length;
    if (strcmp(rest, ".interrupted.safetensors") == 0)
        return true;
    if (strncmp(rest, ".epoch-", 7) != 0)
        return false;
    rest += 7;
    size_t digits = strspn(rest, "0123456789");
    return digits >= 6 && strcmp(rest + digits, ".safetensors") == 0;
}

/* An input that checkpoints of PREFIX may overwrite (not --resume's, which
 * checkpoints are meant to follow). */
static bool checkpoint_is_input(const file_role *out, const file_role *in)
{
    if (in->kind != FILE_ROLE_FILE)
        return false;
    char out_folder[4096], in_folder[4096];
    const char *out_name, *in_name;
    split_path(out->path, out_folder, sizeof out_folder, &out_name);
    split_path(in->path, in_folder, sizeof in_folder, &in_name);
    struct stat a, b;
    if (!is_checkpoint_name(in_name, out_name) || stat(in->path, &a) != 0 ||
        stat(out_folder, &a) != 0 ||
        stat(in_folder, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
        return false;
    fprintf(stderr, "axon: %s %s would write over %s (%s %s); give another prefix\n", out->option,
            out->path, in->what, in->option, in->path);
    return true;
}

/* An input that an output folder's files may overwrite: in that folder
 * (by identity) under one of its names. */
static bool folder_is_input(const file_role *out, const file_role *in)
{
    if (in->kind == FILE_ROLE_DATA)
        return false;
    char in_folder[4096];
    const char *in_name;
    split_path(in->path, in_folder, sizeof in_folder, &in_name);
    struct stat a, b;
    if (stat(in->path, &a) != 0 || !S_ISREG(a.st_mode) || stat(out->path, &a) != 0 ||
        stat(in_folder, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
        return false;
    for (int i = 0; out->names[i]; i++)
        if (fnmatch(out->names[i], in_name, 0) == 0) {
            fprintf(stderr, "axon: %s %s would write over %s (%s %s); give another folder\n",
                    out->option, out->path, in->what, in->option, in->path);
            return true;
        }
    return false;
}

/* The place of an output, as ax_output_check sees it; a checkpoint prefix
 * by its first file's name. */
static bool place_writable(const file_role *out)
{
    char path[4200];
    if (out->kind == FILE_ROLE_FOLDER)
        return true; /* made by the command, which says why it cannot */
    if (out->kind == FILE_ROLE_CHECKPOINTS)
        snprintf(path, sizeof path, "%s.epoch-000001.safetensors", out->path);
    else
        snprintf(path, sizeof path, "%s", out->path);
    if (ax_output_check(path) == AX_STATUS_OK)
        return true;
    if (out->kind == FILE_ROLE_CHECKPOINTS)
        fprintf(stderr, "axon: %s %s: cannot write checkpoints there: %s\n", out->option,
                out->path, ax_error_message());
    else
        fprintf(stderr, "axon: %s %s\n", out->option, ax_error_message());
    return false;
}

int file_roles_check(const file_roles *roles)
{
    for (int o = 0; o < roles->output_count; o++) {
        const file_role *out = &roles->outputs[o];
        if (!place_writable(out))
            return CLI_EXIT_RUNTIME;
        for (int i = 0; i < roles->input_count; i++) {
            const file_role *in = &roles->inputs[i];
            if (out->kind == FILE_ROLE_CHECKPOINTS ? checkpoint_is_input(out, in)
                : out->kind == FILE_ROLE_FOLDER    ? folder_is_input(out, in)
                                                   : output_is_input(out, in))
                return CLI_EXIT_RUNTIME;
        }
        struct stat info;
        if (out->kind != FILE_ROLE_FILE ||
            (stat(out->path, &info) == 0 && !S_ISREG(info.st_mode)))
            continue; /* /dev/null may take several outputs */
        for (int p = 0; p < o; p++)
            if (roles->outputs[p].kind == FILE_ROLE_FILE && same_file(out->path, roles->outputs[p].path)) {
                fprintf(stderr, "axon: %s %s is also %s; give each output its own file\n",
                        out->option, out->path, roles->outputs[p].option);
                return CLI_EXIT_RUNTIME;
            }
    }
    return CLI_EXIT_OK;
}
