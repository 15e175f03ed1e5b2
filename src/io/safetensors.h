/* safetensors.h: reading and writing the safetensors format
 * (https://github.com/huggingface/safetensors), the file format of axon
 * models, so that PyTorch and NumPy users can open them.
 *
 * Layout: 8 bytes little-endian header length N; N bytes of UTF-8 JSON
 *   {"__metadata__": {"key": "value", ...},
 *    "name": {"dtype": "F32", "shape": [d0, d1], "data_offsets": [begin, end]}, ...}
 * padded with spaces; then the data buffer. Offsets count from the start of
 * the buffer; the tensors (row-major, little-endian) tile it exactly.
 *
 * axon stores F32 and F64. The reader recognises the format's other dtypes
 * (F16, BF16, I64, ...) and refuses them with AX_STATUS_UNSUPPORTED and a hint;
 * every malformation is AX_STATUS_BAD_FILE with the path and what is wrong. */
#ifndef AX_IO_SAFETENSORS_H
#define AX_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "axon.h"

#define AX_SAFETENSORS_MAX_RANK 4
/* Largest JSON header accepted, as in the reference implementation. */
#define AX_SAFETENSORS_MAX_HEADER 100000000

typedef enum ax_safetensors_dtype {
    AX_SAFETENSORS_F32 = 0, /* float, 4 bytes */
    AX_SAFETENSORS_F64,     /* double, 8 bytes */
} ax_safetensors_dtype;

/* One tensor, as given to the writer or returned by the reader. */
typedef struct ax_safetensors_tensor {
    const char *name;               /* UTF-8, unique in a file, not "__metadata__" */
    ax_safetensors_dtype dtype;
    int rank;                       /* 0 (a scalar) to AX_SAFETENSORS_MAX_RANK */
    int64_t shape[AX_SAFETENSORS_MAX_RANK];
    const void *data;               /* product(shape) values, row-major; aligned to the
                                       dtype's size in tensors from the reader */
} ax_safetensors_tensor;

/* "F32" or "F64", the format's names. */
const char *ax_safetensors_dtype_name(ax_safetensors_dtype dtype);
/* Size of one value of dtype in bytes. */
size_t ax_safetensors_dtype_size(ax_safetensors_dtype dtype);
/* Number of values (the product of the shape; 1 for rank 0). */
int64_t ax_safetensors_tensor_elements(const ax_safetensors_tensor *tensor);
/* Size of the tensor's data in bytes. */
size_t ax_safetensors_tensor_bytes(const ax_safetensors_tensor *tensor);

/* Writes count tensors and metadata_count key/value string pairs to path.
 * The file is written to "<path>.tmp.<pid>", flushed to disk and renamed
 * over path, so a failure (AX_STATUS_IO_ERROR, naming the path and the
 * system's reason) leaves no partial file and any old file intact. Data is
 * laid out F64 first, then F32, so every tensor is aligned for its type.
 * Bad arguments (duplicate or invalid names, rank > 4, negative dimensions,
 * NULL data) give AX_STATUS_BAD_ARGUMENT before any file is touched. */
AX_NODISCARD ax_status ax_safetensors_write(const char *path, const ax_safetensors_tensor *tensors,
                                            int count, const char *const *metadata_keys,
                                            const char *const *metadata_values,
                                            int metadata_count);

/* A file read into memory and validated; the tensors point into it. */
typedef struct ax_safetensors_file ax_safetensors_file;

/* Reads and validates the whole file at path; on success *out is owned by
 * the caller (free with ax_safetensors_free). */
AX_NODISCARD ax_status ax_safetensors_read(const char *path, ax_safetensors_file **out);
/* Frees the file and everything its accessors returned; accepts NULL. */
void ax_safetensors_free(ax_safetensors_file *file);

/* The path the file was read from. */
const char *ax_safetensors_path(const ax_safetensors_file *file);
/* Number of tensors. */
int ax_safetensors_count(const ax_safetensors_file *file);
/* Tensor index (0 <= index < count) in the header's order, or NULL. */
const ax_safetensors_tensor *ax_safetensors_tensor_at(const ax_safetensors_file *file, int index);
/* The tensor called name, or NULL if there is none. */
const ax_safetensors_tensor *ax_safetensors_find(const ax_safetensors_file *file,
                                                 const char *name);
/* Number of metadata entries, and entry index's key and value. */
int ax_safetensors_metadata_count(const ax_safetensors_file *file);
const char *ax_safetensors_metadata_key(const ax_safetensors_file *file, int index);
/* The metadata value for key, or NULL if absent. */
const char *ax_safetensors_metadata(const ax_safetensors_file *file, const char *key);

#endif
