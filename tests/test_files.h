/* test_files.h: a temporary folder for the files a test writes, shared by
 * the loader tests: make it (mkdtemp), name files in it, write files
 * (gzip-compressed when the name ends in .gz) and .npy files, and remove it
 * at the end.
 * Include after test_util.h; the including file defines _POSIX_C_SOURCE
 * 200809L (mkdtemp) before any header. */
#ifndef AX_TEST_FILES_H
#define AX_TEST_FILES_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static char work_dir[64];

/* Makes /tmp/<prefix>-XXXXXX; false (with the reason on stderr) on failure. */
static inline bool test_work_dir_make(const char *prefix)
{
    snprintf(work_dir, sizeof work_dir, "/tmp/%s-XXXXXX", prefix);
    if (!mkdtemp(work_dir)) {
        perror("mkdtemp");
        return false;
    }
    return true;
}

/* Removes the folder and everything in it (a failure is a failed check). */
static inline void test_work_dir_remove(void)
{
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", work_dir);
    CHECK(system(command) == 0);
}

/* A path inside the temporary folder; the last 8 stay valid. */
static inline const char *in_work(const char *name)
{
    static char paths[8][256];
    static int next;
    char *path = paths[next++ % 8];
    snprintf(path, 256, "%s/%s", work_dir, name);
    return path;
}

/* Writes bytes to path, through gzip when the name ends in .gz. */
static inline void write_file(const char *path, const void *data, size_t bytes)
{
    bool gz = strlen(path) > 3 && strcmp(path + strlen(path) - 3, ".gz") == 0;
    if (gz) {
        gzFile file = gzopen(path, "wb");
        CHECK(file != NULL);
        if (!file)
            return;
        CHECK(bytes == 0 || gzwrite(file, data, (unsigned)bytes) == (int)bytes);
        CHECK(gzclose(file) == Z_OK);
        return;
    }
    FILE *file = fopen(path, "wb");
    CHECK(file != NULL);
    if (!file)
        return;
    CHECK(fwrite(data, 1, bytes, file) == bytes);
    CHECK(fclose(file) == 0);
}

/* Writes a .npy file of format version major (1 or 2): magic, version,
 * the header dict padded with spaces to a multiple of 64 and ended by '\n'
 * (as numpy does), then bytes of data. */
static inline void write_npy_file(const char *path, int major, const char *dict, const void *data,
                                  size_t bytes)
{
    size_t prefix = major == 1 ? 10 : 12;
    size_t length = strlen(dict) + 1;
    size_t padded = (prefix + length + 63) / 64 * 64 - prefix;
    unsigned char *bytes_out = malloc(prefix + padded + bytes + 1);
    CHECK(bytes_out != NULL);
    if (!bytes_out)
        return;
    memcpy(bytes_out, "\x93NUMPY", 6);
    bytes_out[6] = (unsigned char)major;
    bytes_out[7] = 0;
    for (size_t i = 0; i < prefix - 8; i++)
        bytes_out[8 + i] = (unsigned char)(padded >> (8 * i));
    memset(bytes_out + prefix, ' ', padded);
    memcpy(bytes_out + prefix, dict, strlen(dict));
    bytes_out[prefix + padded - 1] = '\n';
    if (bytes)
        memcpy(bytes_out + prefix + padded, data, bytes);
    write_file(path, bytes_out, prefix + padded + bytes);
    free(bytes_out);
}

/* A version 1 .npy file of dtype descr ("<f4") and shape ("(3, 4)"). */
static inline void write_npy_array(const char *path, const char *descr, const char *shape,
                                   const void *data, size_t bytes)
{
    char dict[256];
    snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr,
             shape);
    write_npy_file(path, 1, dict, data, bytes);
}

#endif
