/* npy_header.h: the .npy container (format versions 1.0, 2.0 and 3.0, as
 * described in numpy/lib/format.py) shared by the data set loader
 * (data/npy.c) and the plain array reader/writer (io/npy_array.c): opening a
 * file, parsing and checking its header against the file size, reading its
 * data, and converting one element to double. */
#ifndef AX_IO_NPY_HEADER_H
#define AX_IO_NPY_HEADER_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "axon.h"

enum { NPY_MAX_DIMS = 8 };

typedef enum npy_kind {
    NPY_KIND_FLOAT,
    NPY_KIND_SIGNED,
    NPY_KIND_UNSIGNED,
} npy_kind;

typedef struct npy_array {
    const char *path;
    FILE *file;
    char descr[32];
    npy_kind kind;
    int item_bytes;          /* 1, 2, 4 or 8 */
    int dims;
    int64_t shape[NPY_MAX_DIMS];
    int64_t count;           /* elements: the product of shape */
    size_t data_offset;      /* bytes before the data */
} npy_array;

/* Opens path and reads its header; checks the file holds exactly the data
 * the header promises (array->path is set to path). */
ax_status ax_npy_open(const char *path, npy_array *array);
void ax_npy_close(npy_array *array);
/* Reads the whole data of an array (checked against the file size already)
 * into a malloc'd buffer. */
ax_status ax_npy_read_data(npy_array *array, unsigned char **out);

/* Element i of a little-endian buffer as a double (exact for every integer
 * type up to 2^53 and for both float types). */
static inline double ax_npy_element(const npy_array *array, const unsigned char *data, size_t i)
{
    const unsigned char *p = data + i * (size_t)array->item_bytes;
    uint64_t bits = 0;
    for (int b = array->item_bytes - 1; b >= 0; b--)
        bits = bits << 8 | p[b];
    switch (array->kind) {
    case NPY_KIND_FLOAT:
        if (array->item_bytes == 4) {
            uint32_t narrow = (uint32_t)bits;
            float value;
            memcpy(&value, &narrow, sizeof value);
            return value;
        } else {
            double value;
            memcpy(&value, &bits, sizeof value);
            return value;
        }
    case NPY_KIND_SIGNED: {
        int shift = 64 - 8 * array->item_bytes; /* sign-extend */
        return (double)((int64_t)(bits << shift) >> shift);
    }
    case NPY_KIND_UNSIGNED: return (double)bits;
    }
    return 0.0;
}

#endif
