/* pickle.h: a restricted reader of Python pickles, for cuda-convnet2's batch
 * folders (data_batch_N, batches.meta; issue 31). It runs the pickle
 * machine over the opcodes those files use (protocol 2 as Python 2 and 3
 * write it, and the bytes and frames of protocols 3 to 5) and builds only
 * dicts, lists, tuples, strings, bytes, integers, floats, booleans, None and
 * NumPy arrays. The only
 * globals it knows are the ones those values need, and each is a fixed
 * recipe, never a call: _codecs.encode(str, 'latin1') (Python 3's bytes at
 * protocol 2), __builtin__.bytes() and builtins.bytes() with no argument
 * (its empty bytes), numpy.core.multiarray._reconstruct, numpy.ndarray and
 * numpy.dtype (an array's pickle). Any other global, any REDUCE or BUILD
 * that is not part of those recipes, and every other opcode is refused with
 * the opcode, its byte offset and the file named: nothing in a file can run
 * code or make another object.
 *
 * Every size is checked against the bytes left in the file before it is
 * used; the values live in one arena freed by ax_pickle_free. */
#ifndef AX_IO_PICKLE_H
#define AX_IO_PICKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "axon.h"

typedef enum ax_pickle_kind {
    AX_PICKLE_NONE,
    AX_PICKLE_BOOL,
    AX_PICKLE_INT,
    AX_PICKLE_FLOAT,
    AX_PICKLE_STRING, /* text, UTF-8 */
    AX_PICKLE_BYTES,
    AX_PICKLE_LIST,
    AX_PICKLE_TUPLE,
    AX_PICKLE_DICT,
    AX_PICKLE_ARRAY,  /* a NumPy array */
    AX_PICKLE_GLOBAL, /* internal: one of the known globals */
    AX_PICKLE_DTYPE,  /* internal: numpy.dtype(...) */
} ax_pickle_kind;

typedef struct ax_pickle_value ax_pickle_value;
typedef struct ax_pickle ax_pickle;

/* Reads bytes[0, size) (name is for messages) into *out, its root value in
 * *root. Fails with AX_STATUS_BAD_FILE naming name, the opcode and offset. */
ax_status ax_pickle_parse(const char *name, const unsigned char *bytes, size_t size,
                          ax_pickle **out, const ax_pickle_value **root);
void ax_pickle_free(ax_pickle *pickle);

ax_pickle_kind ax_pickle_kind_of(const ax_pickle_value *value);
/* Lists, tuples and dicts: their items; strings and bytes: their bytes. */
size_t ax_pickle_length(const ax_pickle_value *value);
const ax_pickle_value *ax_pickle_item(const ax_pickle_value *value, size_t i);
/* A dict's key i and value i. */
const ax_pickle_value *ax_pickle_key(const ax_pickle_value *value, size_t i);
const ax_pickle_value *ax_pickle_dict_value(const ax_pickle_value *value, size_t i);
/* The value of a dict's string (or bytes) key, or NULL. */
const ax_pickle_value *ax_pickle_get(const ax_pickle_value *dict, const char *key);
bool ax_pickle_int(const ax_pickle_value *value, int64_t *out);
/* Strings and bytes: their data (not NUL-terminated). */
const unsigned char *ax_pickle_data(const ax_pickle_value *value);
/* A NumPy array: its dtype ('u', 'i', 'f' or 'b'; item bytes 1, 2, 4 or 8;
 * little-endian), shape, whether Fortran-ordered, and raw data. */
typedef struct ax_pickle_array {
    char kind;
    int item_bytes;
    int dims;
    int64_t shape[8];
    int64_t count;
    bool fortran;
    const unsigned char *data; /* count * item_bytes */
} ax_pickle_array;
bool ax_pickle_array_of(const ax_pickle_value *value, ax_pickle_array *out);

/* Writing (cuda-convnet2's format back): a pickle of protocol 2 built with
 * the same restricted vocabulary, as Python 2's pickle writes it (bytes as
 * SHORT_BINSTRING / BINSTRING). The writer appends to a growing buffer. */
typedef struct ax_pickle_writer {
    unsigned char *data;
    size_t length, capacity;
    bool out_of_memory;
} ax_pickle_writer;
void ax_pickle_write_start(ax_pickle_writer *w);          /* PROTO 2 */
void ax_pickle_write_end(ax_pickle_writer *w);            /* STOP */
void ax_pickle_write_dict_begin(ax_pickle_writer *w);     /* EMPTY_DICT MARK */
void ax_pickle_write_dict_end(ax_pickle_writer *w);       /* SETITEMS */
void ax_pickle_write_list_begin(ax_pickle_writer *w);     /* EMPTY_LIST MARK */
void ax_pickle_write_list_end(ax_pickle_writer *w);       /* APPENDS */
void ax_pickle_write_string(ax_pickle_writer *w, const char *text);
void ax_pickle_write_bytes(ax_pickle_writer *w, const void *data, size_t size);
void ax_pickle_write_int(ax_pickle_writer *w, int64_t value);
/* A C-ordered array of dtype kind/item_bytes ('u' 1, 'i' 4, 'f' 4 ...). */
void ax_pickle_write_array(ax_pickle_writer *w, char kind, int item_bytes, int dims,
                           const int64_t *shape, const void *data);
void ax_pickle_write_free(ax_pickle_writer *w);

#endif
