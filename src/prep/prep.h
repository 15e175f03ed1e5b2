/* prep.h: the parts of the image-preparation pipeline (ax_prep_run, seed
 * 002) and what they share. enumerate.c lists the input (folder tree, tar,
 * tar of tars) into a prep_list of byte ranges; decode.c turns one range into
 * pixels; resize.c makes the S x S crop; batch_file.c writes and checks the
 * .npy batches, writer.c in a thread beside the workers; metadata.c writes
 * meta.json and the run's plan; ranks.c shares the work between MPI
 * processes; pipeline.c runs it all in parallel. */
#ifndef AX_PREP_PREP_H
#define AX_PREP_PREP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "axon.h"
#include "data/color_pca.h"

/* The caller's options in *full: a program built against an older header
 * passes shorter options, and the fields it lacks keep their defaults; a
 * size below the first version's or above this header's is refused
 * (AX_STATUS_BAD_ARGUMENT). options.c, built with or without the pipeline:
 * ax_prep_run checks it first in every build (src/prep/absent.c too), so a
 * caller's bug gets the same answer whether or not prep was built. */
ax_status prep_options_read(const ax_prep_options *options, ax_prep_options *full);

/* One image file: bytes [offset, offset + size) of source file `source`
 * (a folder's file has offset 0; a tar member's range lies inside the tar,
 * at any depth of nesting, so a reader needs no unpacking). */
typedef struct prep_image {
    int64_t offset;
    int64_t size;
    int32_t source;   /* index into prep_list.sources */
    int32_t label;    /* index into prep_list.labels, -1 = none */
    int64_t name;     /* offset of its name (for warnings) in prep_list.names */
} prep_image;

typedef struct prep_list {
    prep_image *images;
    int64_t count, capacity;
    char **sources;           /* paths of the files that hold images */
    int32_t source_count, source_capacity;
    char **labels;            /* label names, in label order once finished */
    int32_t label_count, label_capacity;
    char *names;              /* NUL-separated display names of images */
    int64_t names_length, names_capacity;
    int64_t files_ignored;    /* members that are neither images nor tars */
    int64_t unlabelled;       /* images at the top level (no folder or inner tar) */
    int64_t skipped;          /* images or tars named but unreadable (a member running past
                                 its tar's end), each with a warning */
    int64_t links_skipped;    /* links not followed and folders reached a second time
                                 (links.c), each with a warning */
} prep_list;

/* Warnings gathered during a run: all counted, the first few kept. */
typedef struct prep_warnings {
    int64_t count, kept, capacity;
    char **text;
} prep_warnings;

void prep_warn(prep_warnings *warnings, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The walk over a folder input (links.c): its real path, for the links
 * that lead back into it, and the folders entered, by device and inode. */
typedef struct prep_folder_id {
    dev_t device;
    ino_t inode;
} prep_folder_id;
typedef struct prep_walk {
    char *root;                 /* realpath of the input */
    prep_folder_id *folders;
    int64_t folder_count, folder_capacity;
} prep_walk;

ax_status prep_walk_start(prep_walk *walk, const char *input);
void prep_walk_free(prep_walk *walk);
/* Records the folder (stat of it) as entered; *first = false when it was
 * entered before (a loop, or a second link to it): list it once. */
ax_status prep_walk_enter(prep_walk *walk, const struct stat *folder, bool *first);
/* Whether to follow the symbolic link at path; when not, why[] says why. */
bool prep_walk_link(const prep_walk *walk, const char *link, char *why, size_t why_capacity);

/* Lists input (folder, .tar, tar of tars) into list; labels are then
 * renumbered by name, or by labels_file order when given. */
ax_status prep_list_build(const char *input, const char *labels_file, prep_list *list,
                          prep_warnings *warnings);
void prep_list_free(prep_list *list);
/* Labels a flat list from an ILSVRC ground-truth file (ground_truth.c): line
 * i (numbered from 1) labels the i-th image in byte order of the names;
 * labels_file: the numbers index the labels file's names, else the names
 * are "1" .. the largest number. */
ax_status prep_list_ground_truth(prep_list *list, const char *path, bool labels_file);
/* "folder/file.jpg" or "outer.tar:inner.tar:file.jpg". */
static inline const char *prep_image_name(const prep_list *list, const prep_image *image)
{
    return list->names + image->name;
}

/* A decoded image, or the part of it a crop needs: data holds rows
 * [y0, y0 + height) and columns [x0, x0 + width) of an image of
 * full_width x full_height pixels, (height, width, channels) uint8, channels
 * 1 or 3. full_width = full_height = 0 means the whole image (x0 = y0 = 0). */
typedef struct prep_pixels {
    unsigned char *data;
    int64_t width, height;
    int channels;
    size_t capacity;   /* bytes allocated in data (reused between images) */
    int64_t x0, y0;
    int64_t full_width, full_height;
} prep_pixels;

/* Decodes a JPEG or PNG held in bytes[0, size) into pixels, at the
 * smallest JPEG DCT scale whose shorter side is still >= min_side; channels
 * 1 (grey) or 3. On failure returns false with why[] filled (never prints,
 * never exits: libjpeg's errors are caught, its warnings count as failure). */
bool prep_decode(const unsigned char *bytes, size_t size, int64_t min_side, int channels,
                 prep_pixels *pixels, char *why, size_t why_capacity);
/* As prep_decode with min_side = side, but a JPEG's pixels are computed only
 * in the window prep_resize_crop(side) reads (plus a margin; see decode.c):
 * the crop made from the result is byte for byte the one made from a whole
 * decode. Damage anywhere in the file still fails the image. */
bool prep_decode_for_crop(const unsigned char *bytes, size_t size, int64_t side, int channels,
                          prep_pixels *pixels, char *why, size_t why_capacity);

/* Resizes pixels so the shorter side is side and writes the centre
 * side x side crop to out (side, side, channels). Area filter when shrinking
 * an axis, bilinear when enlarging. work is scratch space, grown as needed.
 * Fails (false) when pixels lack a source pixel the crop needs. */
bool prep_resize_crop(const prep_pixels *pixels, int64_t side, unsigned char *out, float **work,
                      size_t *work_capacity);
/* The source pixels prep_resize_crop(side) reads from a width x height
 * image: columns [window[0], window[1]) and rows [window[2], window[3]). */
bool prep_crop_window(int64_t width, int64_t height, int64_t side, int64_t window[4]);

/* Batch files: "batch_NNNNN.npy" (k, S, S, C) uint8 and "batch_NNNNN_labels.npy"
 * (k) int32. Written to temporaries, the labels renamed first, so a data file
 * present means a complete batch. */
void prep_batch_names(const char *dir, int64_t batch, char *data_path, char *labels_path,
                      size_t capacity);
/* The same for a format: AX_PREP_FORMAT_JPEG's data file is "batch_NNNNN.jpegs". */
void prep_batch_names_format(const char *dir, int64_t batch, int format, char *data_path,
                             char *labels_path, size_t capacity);
/* The memory a batch is made in: K images of S x S x C bytes at pixels,
 * with room before them for the data file's .npy header, so that header and
 * pixels are written from one block-aligned run of memory (O_DIRECT, no copy
 * into the page cache). Mapped once per run, on huge pages where it can. */
typedef struct prep_batch_buffer {
    unsigned char *pixels;   /* (K, S, S, C) */
    size_t header_room;      /* bytes of the buffer before pixels */
    void *mapping;
    size_t mapping_size;
    /* AX_PREP_FORMAT_JPEG: each slot's JPEG (malloc'd, reused from batch to
     * batch), its capacity and size; the pixels then hold the decoded JPEG. */
    int format, quality;
    size_t jpeg_slots;
    unsigned char **jpeg;
    size_t *jpeg_capacity, *jpeg_size;
} prep_batch_buffer;

ax_status prep_batch_buffer_create(prep_batch_buffer *buffer, int64_t images, int64_t side,
                                   int channels, int format, int quality);
void prep_batch_buffer_free(prep_batch_buffer *buffer);
/* Where the data file of count images starts in buffer: its .npy header,
 * just before the pixels. */
unsigned char *prep_batch_header_start(const prep_batch_buffer *buffer, int64_t count,
                                       int64_t side, int channels);
/* Told how many bytes of the data file (header included) are written:
 * the buffer's bytes before that offset are no longer read; SIZE_MAX: all. */
typedef void (*prep_write_progress)(void *context, size_t file_bytes_done);

/* Writes the first count images of buffer (its header room is used) and
 * their labels, calling progress (if not NULL) as the data goes out.
 * AXON_PREP_BUFFERED_WRITE=1 writes through the page cache instead of
 * O_DIRECT (for comparison; the files are the same). */
ax_status prep_batch_write(const char *dir, int64_t batch, prep_batch_buffer *buffer,
                           const int32_t *labels, int64_t count, int64_t side, int channels,
                           prep_write_progress progress, void *context);

/* The batch writer (writer.c): a thread that writes batch b (prep_batch_write,
 * then its fsync and rename) while the workers make batch b + 1 in the same
 * buffer, each worker waiting only until the part of the buffer its image
 * goes to has been written out. */
typedef struct prep_writer prep_writer;

ax_status prep_writer_start(prep_writer **writer, prep_batch_buffer *buffer, int64_t max_count);
/* Starts writing the first count images of the buffer as batch b (labels
 * copied); first waits for the previous batch and returns its failure, if
 * it failed. */
ax_status prep_writer_submit(prep_writer *writer, const char *dir, int64_t batch,
                             const int32_t *labels, int64_t count, int64_t side, int channels);
/* Waits until pixel bytes [begin, end) of the buffer may be overwritten. */
void prep_writer_wait(prep_writer *writer, size_t begin, size_t end);
/* Waits for the batch being written; the status (and message) of the first
 * write that failed, if any. Also the writer's seconds, the batches it wrote
 * and renamed, and the batch whose write failed (-1: none). */
ax_status prep_writer_finish(prep_writer *writer, double *seconds, int64_t *written,
                             int64_t *failed_batch);
/* Finishes, ends the thread and frees (NULL is fine). */
void prep_writer_stop(prep_writer *writer);
/* True when both files of a batch exist, are well-formed, hold between 1
 * and max_count images of the right shape and labels below label_count;
 * then *count, and (if not NULL) pixel sums into sums (S*S*C), RGB moments
 * into moments (with sums, for 3 channels) and per-label counts into
 * label_counts are added. */
bool prep_batch_reuse(const char *dir, int64_t batch, int format, int64_t side, int channels,
                      int64_t max_count, int32_t label_count, int64_t *count, uint64_t *sums,
                      ax_color_moments *moments, int64_t *label_counts);

/* Writes a whole file atomically (temporary + rename), checking every write. */
ax_status prep_write_file_atomic(const char *path, const void *data, size_t size);

/* A 64-bit fingerprint of the run: input list and settings. */
uint64_t prep_fingerprint(const prep_list *list, const ax_prep_options *options, int channels);
/* Checks OUT/plan.json against the fingerprint (a mismatch is an error) or
 * writes it when absent. */
ax_status prep_plan_check(const char *dir, uint64_t fingerprint, const ax_prep_options *options);
/* Writes OUT/meta.json and OUT/mean.npy; color_pca (if present) goes into
 * meta.json. */
ax_status prep_metadata_write(const char *dir, const prep_list *list,
                              const ax_prep_options *options, int channels,
                              const int64_t *label_counts, const int64_t *batch_counts,
                              int64_t batches, const uint64_t *sums,
                              const ax_color_pca *color_pca, int64_t images, int64_t skipped);

/* ax_prep_run's conversions (cuda_convnet2.c): options->from_cuda_convnet2
 * (a cuda-convnet2 batch folder to batches of options->format) or format
 * AX_PREP_FORMAT_CUDA_CONVNET2 (prep's batches to such a folder). The
 * output folder must be absent or empty; on failure every file written is
 * removed again. summary: ax_prep_run's own, never NULL. */
ax_status prep_convert(const ax_prep_options *options, ax_prep_summary *summary);

/* Removes DIR's temporaries left by an interrupted run: names this program
 * writes ("batch_NNNNN.npy.tmp.PID", "batch_NNNNN_labels.npy.tmp.PID",
 * "meta.json.tmp.PID", "mean.npy.tmp.PID", "plan.json.tmp.PID") whose
 * process no longer runs on this machine; nothing else is touched. Says
 * what it removed, and what it left because its process still runs, in
 * warnings. */
ax_status prep_remove_stale_temporaries(const char *dir, prep_warnings *warnings);

/* ------------------------------------------------- MPI processes (ranks.c) */

/* The number of processes mpirun started (OMPI_COMM_WORLD_SIZE, PMI_SIZE),
 * 0 when not started by mpirun. */
int prep_launched_size(void);
/* CPUs this process may run on (mpirun binds each rank to its share). */
int prep_cpus_available(void);

typedef struct prep_counts {
    int64_t done, processed, skipped, batches_done;
} prep_counts;

typedef struct prep_ranks {
    int rank, size;          /* 0 and 1 without MPI */
    bool initialized_here;   /* prep called MPI_Init: it finalises too */
    bool stop;               /* stop making batches (told by rank 0, or rank 0 decided) */
    bool stopped_by_other;   /* the stop comes from another rank's failure */
    struct prep_ranks_state *state; /* NULL without MPI */
} prep_ranks;

/* Joins MPI when started by mpirun (or when the program initialised it);
 * otherwise one process. Fails under mpirun in a build without MPI. */
ax_status prep_ranks_start(prep_ranks *ranks);
void prep_ranks_end(prep_ranks *ranks);
/* Collective: when any rank's status failed, every rank returns the status
 * and message of the first rank that failed on its own account (secondary:
 * this rank only stopped because told to), as "rank R of P: message". */
ax_status prep_ranks_agree(prep_ranks *ranks, ax_status status, bool secondary);
/* Collective: true when every rank passed the same value. */
bool prep_ranks_same(prep_ranks *ranks, uint64_t value);
/* During the batches: other ranks send their counts to rank 0 and look for
 * its stop; rank 0 takes them in and returns the sum over ranks in all. */
void prep_ranks_poll(prep_ranks *ranks, const prep_counts *mine, prep_counts *all);
/* Rank 0: tells every other rank to stop. */
void prep_ranks_stop_all(prep_ranks *ranks);
/* The end of the batches on every rank (see ranks.c); rank 0 calls tick
 * with the global counts while it waits for the others. */
void prep_ranks_finish(prep_ranks *ranks, const prep_counts *mine, bool failed,
                       void (*tick)(void *context, const prep_counts *all), void *context);
/* Collective sums over ranks, in place. */
void prep_ranks_sum_u64(prep_ranks *ranks, uint64_t *values, size_t count);
void prep_ranks_sum_i64(prep_ranks *ranks, int64_t *values, size_t count);
void prep_ranks_sum_f64(prep_ranks *ranks, double *values, size_t count);
/* Collective: rank 0 gets every rank's warnings, the others none. */
void prep_ranks_gather_warnings(prep_ranks *ranks, prep_warnings *warnings);

#endif
