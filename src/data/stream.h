/* stream.h: batches:DIR read as it is used (stream.c) rather than loaded
 * whole (batches.c): what the trainer (core/train.c) and the evaluation
 * (core/propagate.c) call to be fed a streamed set's rows. */
#ifndef AX_DATA_STREAM_H
#define AX_DATA_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "data/color_pca.h"
#include "data/dataset.h"

/* One batch of meta.json: its two files (dir/name, malloc'd) and images. */
typedef struct ax_batches_file {
    char *data_path;
    char *labels_path;
    int64_t images;
} ax_batches_file;

/* meta.json of an axon prep folder, checked (batches.c). */
typedef struct ax_batches_meta {
    int64_t side, channels, classes, rows;
    bool jpeg; /* "batch_format": "jpeg": the data files are JPEG batches (data/jpeg_batch.h) */
    ax_color_pca color_pca; /* "color_pca" (RGB sets of this axon prep), else not present */
    size_t files_count;
    ax_batches_file *files;
    uint64_t hash; /* of meta.json's bytes */
} ax_batches_meta;

ax_status ax_batches_meta_read(const char *dir, ax_batches_meta *meta);
void ax_batches_meta_release(ax_batches_meta *meta);

/* How the rows of one pass over a streamed set are ordered and made. */
typedef struct ax_stream_pass {
    bool training;     /* random crops and mirroring (when set); else the centre crop */
    bool shuffle;      /* the files, and the rows within each, in an order drawn from seed
                          and epoch; else meta.json's order */
    uint64_t seed;
    int64_t epoch;
    int64_t skip_rows; /* the pass starts this many rows in (a resumed epoch) */
} ax_stream_pass;

typedef struct ax_batch_stream ax_batch_stream;

/* Opens dir's batches as a streamed data set (*out owns the stream, freed by
 * ax_dataset_free): every file's header is checked against meta.json now,
 * nothing is read. crop > 0 makes rows crop x crop crops; mirror flips half
 * the training rows left-right; mean_path (or NULL) is a float32 (S, S, C)
 * image subtracted before the scaling by 1/255. JPEG batches are decoded by
 * a pool of decode_threads threads (<= 0: one per core, at most 8). views:
 * 1 or 10, for evaluation passes (below). lighting > 0: AlexNet's lighting
 * noise of sigma lighting on training rows, from meta.json's color_pca
 * (ax_data_options.lighting). */
ax_status ax_batch_stream_open(const char *dir, int64_t crop, bool mirror, const char *mean_path,
                               int decode_threads, int views, double lighting, ax_dataset **out);
/* Views of each image in an evaluation pass: 1, or 10 (cuda-convnet2's
 * multiview: ax_batch_stream_next then gives each image's 10 views as 10
 * consecutive rows: top-left, top-right, bottom-left, bottom-right and
 * centre crops, then the same five mirrored). */
int ax_batch_stream_views(const ax_batch_stream *stream);
/* Seconds the consumer has waited, since the stream was opened, for a file
 * still being read (and, for JPEG batches, decoded) by the prefetch thread. */
double ax_batch_stream_wait_seconds(const ax_batch_stream *stream);

/* Starts a pass (ending any pass under way): the prefetch thread begins
 * reading the pass's first files. */
ax_status ax_batch_stream_begin(ax_batch_stream *stream, const ax_stream_pass *pass);
/* The pass's next count rows, as rows [0, count) of *window (owned by the
 * stream, valid until the next call); fails naming a file that is missing,
 * truncated or of another shape, and the place in meta.json. */
ax_status ax_batch_stream_next(ax_batch_stream *stream, int64_t count, ax_dataset **window);
/* Ends the pass: the prefetch thread stops and its files are let go. */
void ax_batch_stream_end(ax_batch_stream *stream);
void ax_batch_stream_free(ax_batch_stream *stream);

/* What a checkpoint records of the set: meta.json's bytes and the options. */
uint64_t ax_batch_stream_fingerprint(const ax_batch_stream *stream);
/* The rows of the whole set (by their place in meta.json's order) in the
 * order a pass gives them: order is (rows). For tests. */
ax_status ax_batch_stream_order(const ax_batch_stream *stream, const ax_stream_pass *pass,
                                int64_t *order);

#endif
