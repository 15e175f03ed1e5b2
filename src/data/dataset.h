/* dataset.h: the dataset object shared by the loaders (idx.c, csv.c, npy.c,
 * synth.c) and the trainer. Features are always float32 (rows, features):
 * the smallest faithful copy of every source we read; the trainer converts
 * batches to the compute precision as it copies them. */
#ifndef AX_DATA_DATASET_H
#define AX_DATA_DATASET_H

#include "axon.h"

struct ax_dataset {
    int64_t rows;
    int64_t features;
    int64_t classes;   /* > 0: labels is (rows) */
    int64_t targets;   /* > 0: target_values is (rows, targets) */
    float *feature_values; /* (rows, features), 64-byte aligned */
    int32_t *labels;       /* (rows) or NULL */
    float *target_values;  /* (rows, targets) or NULL */
    char source[512];      /* path or description, for messages */
    char labels_source[512]; /* the labels' own file (IDX, .npy with --labels), else "" */
    /* batches:DIR streamed (stream.c): the rows are read as a pass asks for
     * them; feature_values and labels are NULL, rows counts the rows. */
    struct ax_batch_stream *stream;
    /* Frees stream: set with it by stream.c, so that ax_dataset_free
     * (dataset.c) calls nothing of stream.c (no loop between the two). */
    void (*stream_free)(struct ax_batch_stream *stream);
    bool borrowed;         /* the arrays are the caller's (ax_dataset_wrap): not freed */
    int64_t image_shape[3]; /* (height, width, channels) when rows are images, else zeros */
    /* A compressed-sparse-row set (ax_dataset_wrap_csr; the caller's arrays, borrowed):
     * feature_values is NULL and the rows a batch uses are made dense (sparse.c). */
    const int64_t *csr_row_starts; /* (rows + 1): row r is [starts[r], starts[r + 1]) */
    const int32_t *csr_columns;    /* (nonzeros) */
    const float *csr_values;       /* (nonzeros) */
};

/* Allocates a dataset (see ax_dataset_create) and records its source. */
ax_status ax_dataset_allocate(int64_t rows, int64_t features, int64_t classes, int64_t targets,
                              const char *source, ax_dataset **out);

/* ax_dataset_wrap's set with the caller's arrays, features either dense
 * (feature_values) or sparse (csr[3]: row starts, columns, values, already
 * checked by sparse.c); labels and values checked here. */
ax_status ax_dataset_wrap_borrowed(int64_t rows, int64_t features, int64_t classes,
                                   int64_t targets, const float *feature_values,
                                   const void *const csr[3], const int32_t *labels,
                                   const float *target_values, const char *source,
                                   ax_dataset **out);

/* Rows order[first + i] (or first + i where order is NULL), i < count, of a
 * sparse set made dense into out (count, features), zeros included:
 * the same float32 values as the dense matrix holds (sparse.c). */
void ax_dataset_densify_rows(const ax_dataset *data, float *out, const int64_t *order,
                             int64_t first, int64_t count);

/* Reads elements [first, first + n) of an opened .npy array (io/npy_header.h;
 * its size already checked against the header) into buffer; npy.c. */
struct npy_array;
ax_status ax_npy_read_items(struct npy_array *array, int64_t first, int64_t n,
                            unsigned char *buffer);

/* Feature-only files (ax_data_options.unlabeled): every column a feature, no
 * labels or targets. range is {first, count}, or NULL for the whole file. */
ax_status ax_npy_load_unlabeled(const char *features_path, double scale, const int64_t *range,
                                ax_dataset **out);
/* The columns of a CSV file's first data line (csv.c) and the values per row
 * of a .npy file (npy.c), reading only that line or the header. */
ax_status ax_csv_count_columns(const char *path, const ax_csv_options *options, int64_t *columns);
ax_status ax_npy_count_columns(const char *path, int64_t *columns);

/* Refuses a row range [first, first + count) that is not inside the rows
 * (what: "images", "rows") of source, naming it. */
ax_status ax_row_range_check(const char *source, int64_t rows, const char *what, int64_t first,
                             int64_t count);

#endif
