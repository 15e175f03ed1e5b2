/* pipeline.c: ax_prep_run, the image-to-batch pipeline: cuda-convnet2's
 * preparation of ILSVRC photographs into batch files, parallelised over
 * threads and MPI ranks (docs/prep.md).
 *
 * The input is listed first (enumerate.c), then a seeded permutation of the
 * list decides which images form batch b: positions [b K, (b + 1) K) of the
 * permutation. Batches are made one after the other; within a batch the
 * images are read (one pread of their byte range), decoded and resized by
 * OpenMP threads, each into its own slot of the batch buffer, so the bytes
 * written do not depend on which thread finished first. Bad images leave
 * their slot empty and are compacted out in slot order, with their warning.
 * A writer thread (writer.c) writes batch b from the batch buffer while
 * batch b + 1 is made in it, each image waiting only for its slot to have
 * been written out.
 *
 * Under mpirun every rank lists and shuffles the same way and makes the
 * batches b with b % P == rank (ranks.c); counts and the exact integer pixel
 * sums are added over ranks at the end and rank 0 writes the metadata, so
 * the files are the same for any number of processes and threads.
 *
 * The threads-and-MPI version of cuda-convnet2's preparation that this
 * follows could not show global progress; here the calling thread (the
 * master of the OpenMP team) reports images done, images/s and the ETA
 * while the others work, summed over all ranks on rank 0. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/memory.h"
#include "base/random.h"
#include "data/dataset.h"
#include "data/jpeg_batch.h"
#include "prep/prep.h"

enum { WHY_LENGTH = 200 };

/* The caller's summary holds the warnings pointer (an older, shorter one may not). */
static bool holds_warnings(const ax_prep_summary *summary)
{
    return ax_sized_output_holds(summary, offsetof(ax_prep_summary, warnings) +
                                              sizeof summary->warnings);
}

void ax_prep_summary_free(ax_prep_summary *summary)
{
    if (!summary || !holds_warnings(summary))
        return;
    for (int64_t i = 0; i < summary->warnings_kept; i++)
        free(summary->warnings[i]);
    free(summary->warnings);
    summary->warnings = NULL;
    summary->warnings_kept = 0;
}

/* What a thread keeps from one batch to the next: buffers that grow to the
 * largest image and are then reused, so that their pages are faulted in
 * once per run, not once per batch (a fresh page costs a fault, and in a VM
 * a hypervisor exit too). */
typedef struct scratch {
    prep_pixels pixels;        /* the decoded image */
    float *work;               /* the resize's rows */
    size_t work_capacity;
    unsigned char *bytes;      /* the file's bytes */
    size_t bytes_capacity;
    uint32_t *partial;         /* (S * S * C) pixel sums of this batch */
} scratch;

/* What one run holds while it goes. */
typedef struct run {
    const ax_prep_options *options;
    prep_list list;
    prep_warnings warnings;
    int channels;
    int threads;
    int64_t *order;            /* (images) the shuffled list */
    int64_t batches;
    size_t image_bytes;        /* S * S * C */
    prep_batch_buffer batch;   /* the memory batches are made in */
    prep_writer *writer;       /* writes batch b while b + 1 is made */
    unsigned char *buffer;     /* (K, S, S, C): batch.pixels */
    int32_t *labels;           /* (K) */
    char *why;                 /* (K, WHY_LENGTH): "" = image fine */
    uint64_t *sums;            /* (S * S * C) */
    ax_color_moments moments;  /* RGB: for meta.json's color_pca */
    int64_t *label_counts;     /* (labels) */
    int64_t *batch_counts;     /* (batches) */
    scratch *scratch;          /* (threads) */
    /* progress */
    ax_prep_progress_fn progress;
    void *user;
    double start, processing_start, last_report;
    int64_t done, processed, skipped, batches_done;
    bool stop;
    ax_prep_summary *summary;  /* never NULL: ax_prep_run's whole summary */
    prep_ranks ranks;
} run;

/* Shows the counts summed over ranks (rank 0 only); false = the caller
 * asked to stop. */
static bool show(run *r, const prep_counts *all)
{
    if (!r->progress || r->ranks.rank != 0)
        return true;
    double now = ax_seconds_now();
    ax_prep_progress p;
    memset(&p, 0, sizeof p);
    p.images_done = all->done;
    p.images_total = r->list.count;
    p.batches_done = all->batches_done;
    p.batches_total = r->batches;
    p.images_skipped = all->skipped;
    p.seconds = now - r->start;
    double working = now - r->processing_start;
    p.images_per_second =
        working > 0 && all->processed > 0 ? (double)all->processed / working : 0.0;
    p.eta_seconds = all->done == r->list.count ? 0.0
                    : p.images_per_second > 0
                        ? (double)(r->list.count - all->done) / p.images_per_second
                        : NAN;
    return r->progress(&p, r->user);
}

static prep_counts my_counts(run *r)
{
    prep_counts mine;
#pragma omp atomic read
    mine.done = r->done;
#pragma omp atomic read
    mine.processed = r->processed;
    mine.skipped = r->skipped;
    mine.batches_done = r->batches_done;
    return mine;
}

/* At most every progress_interval unless forced: exchanges counts with the
 * other ranks and shows them. False = stop (the caller, or another rank's
 * failure). Called only by the thread that called ax_prep_run. */
static bool report(run *r, bool force)
{
    double now = ax_seconds_now();
    if (!force && now - r->last_report < r->options->progress_interval)
        return true;
    r->last_report = now;
    prep_counts mine = my_counts(r), all;
    prep_ranks_poll(&r->ranks, &mine, &all);
    if (r->ranks.stop)
        return false;
    if (!show(r, &all)) {
        prep_ranks_stop_all(&r->ranks);
        return false;
    }
    return true;
}

/* Rank 0's display while it waits for the other ranks to finish. */
static void tick(void *context, const prep_counts *all)
{
    run *r = context;
    double now = ax_seconds_now();
    if (now - r->last_report < r->options->progress_interval)
        return;
    r->last_report = now;
    if (!r->ranks.stop && !show(r, all))
        prep_ranks_stop_all(&r->ranks);
}

/* Reads the bytes of one image into *buffer (grown as needed). */
static bool read_image(const run *r, const prep_image *image, unsigned char **buffer,
                       size_t *capacity, char *why)
{
    if (image->size > (int64_t)1 << 30) {
        snprintf(why, WHY_LENGTH, "larger than 1 GiB (%lld bytes), not read",
                 (long long)image->size);
        return false;
    }
    size_t size = (size_t)image->size;
    if (size + 1 > *capacity) {
        unsigned char *grown = realloc(*buffer, size + 1);
        if (!grown) {
            snprintf(why, WHY_LENGTH, "out of memory for %zu bytes", size);
            return false;
        }
        *buffer = grown;
        *capacity = size + 1;
    }
    int fd = open(r->list.sources[image->source], O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, WHY_LENGTH, "cannot open: %s", strerror(errno));
        return false;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t n = pread(fd, *buffer + got, size - got, (off_t)(image->offset + (int64_t)got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(why, WHY_LENGTH, n < 0 ? "read failed: %s" : "file shorter than listed%s",
                     n < 0 ? strerror(errno) : "");
            close(fd);
            return false;
        }
        got += (size_t)n;
    }
    close(fd);
    return true;
}

/* AX_PREP_FORMAT_JPEG: the slot's pixels encoded into its JPEG, then
 * replaced by that JPEG decoded, so that the mean image (and anything made
 * from the slot) holds the pixels a trainer will decode. */
static bool encode_slot(run *r, int64_t j, unsigned char *slot, char *why)
{
    prep_batch_buffer *b = &r->batch;
    const int64_t side = r->options->image_size;
    return ax_jpeg_encode(slot, side, r->channels, b->quality, &b->jpeg[j], &b->jpeg_capacity[j],
                          &b->jpeg_size[j], why, WHY_LENGTH) &&
           ax_jpeg_decode_exact(b->jpeg[j], b->jpeg_size[j], side, r->channels, slot, why,
                                WHY_LENGTH);
}

/* Decodes the `count` images of batch b into their slots, in parallel. */
static void process_batch(run *r, int64_t b, int64_t count)
{
    const int64_t side = r->options->image_size;
    /* AXON_PREP_FULL_DECODE=1 decodes whole JPEGs, as before the partial
     * decode: the same batches, slower (for comparison and timing). */
    const char *full_text = getenv("AXON_PREP_FULL_DECODE");
    const bool full_decode = full_text && strcmp(full_text, "1") == 0;
    double read_seconds = 0, decode_seconds = 0, resize_seconds = 0;
#pragma omp parallel num_threads(r->threads) reduction(+ : read_seconds, decode_seconds, resize_seconds)
    {
        scratch *mine = &r->scratch[omp_get_thread_num()];
        /* This thread's pixel sums, added while the image is still in cache;
         * uint32 holds K <= 10^6 images of 255. Integer sums are exact, so
         * the total does not depend on which thread summed what. */
        if (!mine->partial)
            mine->partial = calloc(r->image_bytes, sizeof *mine->partial);
        uint32_t *partial = mine->partial;
        bool partial_used = false;
        ax_color_moments moments = {0}; /* exact integers too */
#pragma omp for schedule(dynamic, 1)
        for (int64_t j = 0; j < count; j++) {
            bool stop;
#pragma omp atomic read
            stop = r->stop;
            char *why = r->why + j * WHY_LENGTH;
            why[0] = '\0';
            if (stop) {
                snprintf(why, WHY_LENGTH, "interrupted");
                continue;
            }
            const prep_image *image = &r->list.images[r->order[b * r->options->batch_size + j]];
            r->labels[j] = image->label;
            double t0 = ax_seconds_now();
            if (image->label < 0) {
                snprintf(why, WHY_LENGTH,
                         "no label: the image is not inside a folder or an inner tar");
            } else if (read_image(r, image, &mine->bytes, &mine->bytes_capacity, why)) {
                double t1 = ax_seconds_now();
                read_seconds += t1 - t0;
                const unsigned char *bytes = mine->bytes;
                bool decoded =
                    full_decode ? prep_decode(bytes, (size_t)image->size, side, r->channels,
                                              &mine->pixels, why, WHY_LENGTH)
                                : prep_decode_for_crop(bytes, (size_t)image->size, side,
                                                       r->channels, &mine->pixels, why,
                                                       WHY_LENGTH);
                double t2 = ax_seconds_now();
                decode_seconds += t2 - t1;
                unsigned char *slot = r->buffer + (size_t)j * r->image_bytes;
                if (decoded) /* the previous batch may still be going out from there */
                    prep_writer_wait(r->writer, (size_t)j * r->image_bytes,
                                     (size_t)(j + 1) * r->image_bytes);
                if (decoded && !prep_resize_crop(&mine->pixels, side, slot, &mine->work,
                                                 &mine->work_capacity))
                    snprintf(why, WHY_LENGTH, "out of memory resizing %lld x %lld pixels",
                             (long long)mine->pixels.width, (long long)mine->pixels.height);
                else if (decoded && r->batch.format == AX_PREP_FORMAT_JPEG &&
                         !encode_slot(r, j, slot, why))
                    ; /* why says it */
                else if (decoded && !partial)
                    snprintf(why, WHY_LENGTH, "out of memory for the pixel sums");
                else if (decoded) {
                    for (size_t i = 0; i < r->image_bytes; i++)
                        partial[i] += slot[i];
                    partial_used = true;
                    if (r->channels == 3)
                        ax_color_moments_add(&moments, slot, side * side);
                }
                resize_seconds += ax_seconds_now() - t2;
            }
#pragma omp atomic
            r->done++;
#pragma omp atomic
            r->processed++;
            if (omp_get_thread_num() == 0 && !report(r, false)) {
#pragma omp atomic write
                r->stop = true;
            }
        }
        if (partial_used) {
#pragma omp critical(prep_sums)
            {
                for (size_t i = 0; i < r->image_bytes; i++)
                    r->sums[i] += partial[i];
                ax_color_moments_merge(&r->moments, &moments);
            }
            memset(partial, 0, r->image_bytes * sizeof *partial);
        }
    }
    r->summary->seconds_read += read_seconds;
    r->summary->seconds_decode += decode_seconds;
    r->summary->seconds_resize += resize_seconds;
}

/* Moves the good images of a batch to the front, counts their labels, and
 * records the bad ones' warnings, all in slot order (their pixels were
 * added to the sums as they were made). */
static int64_t compact_batch(run *r, int64_t b, int64_t count)
{
    /* Slots of failed images were not waited for; images move into them. */
    prep_writer_wait(r->writer, 0, (size_t)count * r->image_bytes);
    int64_t kept = 0;
    for (int64_t j = 0; j < count; j++) {
        const char *why = r->why + j * WHY_LENGTH;
        if (why[0]) {
            const prep_image *image = &r->list.images[r->order[b * r->options->batch_size + j]];
            prep_warn(&r->warnings, "%s: %s; skipped", prep_image_name(&r->list, image), why);
            r->skipped++;
            continue;
        }
        if (kept != j) {
            memcpy(r->buffer + (size_t)kept * r->image_bytes, r->buffer + (size_t)j * r->image_bytes,
                   r->image_bytes);
            if (r->batch.jpeg) { /* the JPEGs are swapped: each slot keeps a buffer */
                prep_batch_buffer *q = &r->batch;
                unsigned char *bytes = q->jpeg[kept];
                size_t capacity = q->jpeg_capacity[kept];
                q->jpeg[kept] = q->jpeg[j], q->jpeg_capacity[kept] = q->jpeg_capacity[j];
                q->jpeg_size[kept] = q->jpeg_size[j];
                q->jpeg[j] = bytes, q->jpeg_capacity[j] = capacity;
            }
        }
        r->labels[kept] = r->labels[j];
        r->label_counts[r->labels[j]]++;
        kept++;
    }
    return kept;
}

static ax_status check_options(const ax_prep_options *options)
{
    if (!options || !options->input || !options->input[0])
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "prep: no input folder or tar given");
    if (!options->output || !options->output[0])
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "prep: no output folder given");
    if (options->image_size < 1 || options->image_size > 16384)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "prep: image size %lld is outside 1 .. 16384",
                       (long long)options->image_size);
    if (options->format != AX_PREP_FORMAT_RAW && options->format != AX_PREP_FORMAT_JPEG)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "prep: unknown batch format %d (raw %d or jpeg %d)",
                       (int)options->format, AX_PREP_FORMAT_RAW, AX_PREP_FORMAT_JPEG);
    if (options->format == AX_PREP_FORMAT_JPEG &&
        (options->jpeg_quality < 1 || options->jpeg_quality > 100))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "prep: JPEG quality %d is outside 1 .. 100",
                       options->jpeg_quality);
    if (options->batch_size < 1 || options->batch_size > 1000000)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "prep: batch size %lld is outside 1 .. 1000000",
                       (long long)options->batch_size);
    if ((double)options->batch_size * (double)options->image_size * (double)options->image_size *
            3.0 > 64.0 * (1 << 30))
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "prep: a batch of %lld images of %lld x %lld pixels exceeds 64 GiB; use a "
                       "smaller --batch",
                       (long long)options->batch_size, (long long)options->image_size,
                       (long long)options->image_size);
    return AX_STATUS_OK;
}

static ax_status allocate(run *r)
{
    const int64_t n = r->list.count, k = r->options->batch_size;
    r->batches = (n + k - 1) / k;
    r->image_bytes = (size_t)(r->options->image_size * r->options->image_size * r->channels);
    AX_TRY(ax_memory_check((size_t)k * r->image_bytes, "prep: a batch"));
    r->order = malloc((size_t)n * sizeof *r->order);
    AX_TRY(prep_batch_buffer_create(&r->batch, k, r->options->image_size, r->channels,
                                    r->options->format, r->options->jpeg_quality));
    r->buffer = r->batch.pixels;
    AX_TRY(prep_writer_start(&r->writer, &r->batch, k));
    r->labels = malloc((size_t)k * sizeof *r->labels);
    r->why = malloc((size_t)k * WHY_LENGTH);
    r->sums = calloc(r->image_bytes, sizeof *r->sums);
    r->label_counts = calloc((size_t)r->list.label_count + 1, sizeof *r->label_counts);
    r->batch_counts = calloc((size_t)r->batches, sizeof *r->batch_counts);
    r->scratch = calloc((size_t)r->threads, sizeof *r->scratch);
    if (!r->order || !r->buffer || !r->labels || !r->why || !r->sums || !r->label_counts ||
        !r->batch_counts || !r->scratch)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory for a batch of %lld images",
                       (long long)k);
    ax_rng rng;
    ax_rng_seed(&rng, r->options->seed);
    ax_rng_permutation(&rng, r->order, n);
    return AX_STATUS_OK;
}

static ax_status make_output_folder(const char *dir)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot create the output folder: %s", dir,
                       strerror(errno));
    struct stat info;
    if (stat(dir, &info) != 0 || !S_ISDIR(info.st_mode))
        return ax_fail(AX_STATUS_IO_ERROR, "%s: exists and is not a folder", dir);
    return AX_STATUS_OK;
}

static ax_status stopped(const run *r)
{
    if (r->ranks.stopped_by_other)
        return ax_fail(AX_STATUS_INTERRUPTED, "prep: stopped because another rank failed");
    return ax_fail(AX_STATUS_INTERRUPTED,
                   "prep: stopped by the caller; %lld complete batches are in %s, a "
                   "rerun makes the rest",
                   (long long)r->batches_done, r->options->output);
}

static ax_status make_batches(run *r)
{
    const ax_prep_options *o = r->options;
    const int64_t n = r->list.count;
    r->processing_start = ax_seconds_now();
    if (!report(r, true))
        return stopped(r);
    for (int64_t b = r->ranks.rank; b < r->batches; b += r->ranks.size) {
        if (!report(r, false))
            return stopped(r);
        const int64_t count = n - b * o->batch_size < o->batch_size ? n - b * o->batch_size
                                                                   : o->batch_size;
        int64_t reused = 0;
        if (prep_batch_reuse(o->output, b, o->format, o->image_size, r->channels, count,
                             r->list.label_count, &reused, r->sums, &r->moments,
                             r->label_counts)) {
            r->batch_counts[b] = reused;
            r->done += count;
            r->skipped += count - reused;
            r->batches_done++;
            r->summary->batches_reused++;
            continue;
        }
        ax_error_clear(); /* the failed check of a missing batch is no error */
        process_batch(r, b, count);
        if (r->stop)
            return stopped(r);
        int64_t kept = compact_batch(r, b, count);
        r->batch_counts[b] = kept;
        if (kept > 0) {
            /* Written by the writer thread while the next batch is made. */
            ax_status status = prep_writer_submit(r->writer, o->output, b, r->labels, kept,
                                                  o->image_size, r->channels);
            if (status != AX_STATUS_OK) {
                r->batch_counts[b] = 0; /* not handed over: the previous write failed */
                return status;
            }
        }
        r->batches_done++;
        ax_test_fault("prep-batch", (long long)r->batches_done); /* tests only: docs/testing.md */
        if (!report(r, true))
            return stopped(r);
    }
    return AX_STATUS_OK;
}

/* Makes this rank's batches, then waits for the last one to be written
 * (also when stopped: a batch handed to the writer is complete, and is
 * renamed into place). */
static ax_status run_batches(run *r)
{
    ax_status status = make_batches(r);
    double seconds = 0;
    int64_t batches_written = 0, failed_batch = -1;
    ax_status written =
        prep_writer_finish(r->writer, &seconds, &batches_written, &failed_batch);
    r->summary->seconds_write += seconds;
    r->summary->batches_written += batches_written;
    if (failed_batch >= 0) /* its images were not written */
        r->batch_counts[failed_batch] = 0;
    if (written != AX_STATUS_OK && status != AX_STATUS_IO_ERROR)
        return written; /* the write's message, not "stopped" */
    return status;
}

/* Rank 0 prepares the output folder; the others check they see it (the
 * folder must be on a file system every rank shares). */
static ax_status prepare_output(run *r)
{
    const ax_prep_options *o = r->options;
    ax_status status = AX_STATUS_OK;
    if (r->ranks.rank == 0) {
        status = make_output_folder(o->output);
        if (status == AX_STATUS_OK)
            status = prep_remove_stale_temporaries(o->output, &r->warnings);
        if (status == AX_STATUS_OK)
            status = prep_plan_check(o->output, prep_fingerprint(&r->list, o, r->channels), o);
    }
    AX_TRY(prep_ranks_agree(&r->ranks, status, false));
    if (r->ranks.rank != 0) {
        char plan[4200];
        struct stat info;
        snprintf(plan, sizeof plan, "%s/plan.json", o->output);
        if (stat(plan, &info) != 0)
            status = ax_fail(AX_STATUS_IO_ERROR,
                             "%s: rank 0 wrote it but this rank cannot see it (%s); the output "
                             "folder must be on a file system every rank shares",
                             plan, strerror(errno));
    }
    return prep_ranks_agree(&r->ranks, status, false);
}

/* Adds the per-rank results into every rank's (exact integer sums). */
static void add_over_ranks(run *r)
{
    prep_ranks *ranks = &r->ranks;
    if (ranks->size == 1)
        return;
    prep_ranks_sum_u64(ranks, r->sums, r->image_bytes);
    prep_ranks_sum_u64(ranks, &r->moments.pixels, 1);
    prep_ranks_sum_u64(ranks, r->moments.sums, 3);
    prep_ranks_sum_u64(ranks, r->moments.products, 6);
    prep_ranks_sum_i64(ranks, r->label_counts, (size_t)r->list.label_count + 1);
    prep_ranks_sum_i64(ranks, r->batch_counts, (size_t)r->batches);
    int64_t counts[4] = {r->skipped, r->summary->batches_written, r->summary->batches_reused,
                         r->done};
    prep_ranks_sum_i64(ranks, counts, 4);
    r->skipped = counts[0];
    r->done = counts[3];
    double seconds[4] = {r->summary->seconds_read, r->summary->seconds_decode,
                         r->summary->seconds_resize, r->summary->seconds_write};
    prep_ranks_sum_f64(ranks, seconds, 4);
    r->summary->batches_written = counts[1];
    r->summary->batches_reused = counts[2];
    r->summary->seconds_read = seconds[0];
    r->summary->seconds_decode = seconds[1];
    r->summary->seconds_resize = seconds[2];
    r->summary->seconds_write = seconds[3];
}

static ax_status list_input(run *r)
{
    const ax_prep_options *o = r->options;
    AX_TRY(check_options(o));
    AX_TRY(prep_list_build(o->input, o->labels_file, &r->list, &r->warnings));
    if (o->ground_truth)
        AX_TRY(prep_list_ground_truth(&r->list, o->ground_truth, o->labels_file != NULL));
    r->summary->seconds_enumerate = ax_seconds_now() - r->start;
    r->summary->images_found = r->list.count;
    r->summary->files_ignored = r->list.files_ignored;
    r->summary->labels = r->list.label_count;
    if (r->list.count == 0)
        return ax_fail(AX_STATUS_BAD_DATA, "%s: no images (.jpg, .jpeg, .png) found", o->input);
    return AX_STATUS_OK;
}

/* Each phase ends with prep_ranks_agree, which every rank reaches: a rank
 * that fails takes the others with it, naming itself, and none waits for
 * it forever. */
static ax_status prep(run *r)
{
    const ax_prep_options *o = r->options;
    prep_ranks *ranks = &r->ranks;
    AX_TRY(prep_ranks_agree(ranks, list_input(r), false));
    uint64_t fingerprint = prep_fingerprint(&r->list, o, r->channels);
    if (!prep_ranks_same(ranks, fingerprint))
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "prep: the ranks list different images or settings for %s; every rank "
                       "must see the same input and options",
                       o->input);
    AX_TRY(prepare_output(r));
    AX_TRY(prep_ranks_agree(ranks, allocate(r), false));
    ax_status status = run_batches(r);
    prep_counts mine = my_counts(r);
    prep_ranks_finish(ranks, &mine, status != AX_STATUS_OK, tick, r);
    if (status == AX_STATUS_OK && ranks->size > 1 && ranks->rank == 0 && !report(r, true))
        status = stopped(r); /* the last, complete figures of all ranks */
    prep_ranks_gather_warnings(ranks, &r->warnings);
    bool secondary = status == AX_STATUS_INTERRUPTED && ranks->stopped_by_other;
    status = prep_ranks_agree(ranks, status, secondary);
    add_over_ranks(r); /* also after a failure: the summary covers every rank */
    if (status != AX_STATUS_OK)
        return status;
    int64_t written = 0;
    for (int64_t b = 0; b < r->batches; b++)
        written += r->batch_counts[b];
    if (written == 0)
        return ax_fail(AX_STATUS_BAD_DATA, "%s: none of the %lld image files could be decoded",
                       o->input, (long long)r->list.count);
    status = AX_STATUS_OK;
    ax_color_pca color_pca;
    ax_color_pca_compute(&r->moments, &color_pca); /* none for grey images: no moments */
    if (ranks->rank == 0)
        status = prep_metadata_write(o->output, &r->list, o, r->channels, r->label_counts,
                                     r->batch_counts, r->batches, r->sums, &color_pca, written,
                                     r->skipped + r->list.skipped);
    return prep_ranks_agree(ranks, status, false);
}

/* ax_prep_run into a whole summary of this library's size. */
static ax_status prep_run(const ax_prep_options *options, ax_prep_progress_fn progress, void *user,
                          ax_prep_summary *summary)
{
    run r;
    memset(&r, 0, sizeof r);
    /* A program built against an older header passes shorter options: the
     * fields it lacks keep their defaults. */
    ax_prep_options full = ax_prep_defaults();
    if (options) {
        AX_TRY(prep_options_read(options, &full));
        options = &full;
    }
    if (options && (options->from_cuda_convnet2 || options->format == AX_PREP_FORMAT_CUDA_CONVNET2))
        return prep_convert(options, summary);
    r.options = options;
    r.progress = progress;
    r.user = user;
    r.summary = summary;
    r.start = ax_seconds_now();
    r.channels = options && options->grey ? 1 : 3;
    AX_TRY(ax_test_fault_check());
    ax_status status = prep_ranks_start(&r.ranks);
    r.start = ax_seconds_now(); /* MPI's start-up is mpirun's time, not prep's */
    /* Under mpirun each rank defaults to the CPUs it is bound to. */
    r.threads = options && options->threads > 0 ? options->threads
                : r.ranks.size > 1              ? prep_cpus_available()
                                                : ax_threads();
    if (status == AX_STATUS_OK)
        status = prep(&r);
    prep_ranks_end(&r.ranks);
    for (int64_t b = 0; r.batch_counts && b < r.batches; b++)
        summary->images_written += r.batch_counts[b];
    /* Members found unreadable while listing are skipped images too
     * (every rank lists them: counted once, not summed over ranks). */
    summary->images_skipped = r.skipped + r.list.skipped;
    summary->images_found += r.list.skipped;
    summary->links_skipped = r.list.links_skipped;
    summary->seconds = ax_seconds_now() - r.start;
    summary->warning_count = r.warnings.count;
    summary->warnings_kept = r.warnings.kept;
    summary->warnings = r.warnings.text;
    r.warnings.text = NULL;
    for (int64_t i = 0; i < r.warnings.kept && r.warnings.text; i++)
        free(r.warnings.text[i]);
    free(r.warnings.text);
    prep_list_free(&r.list);
    free(r.order);
    prep_writer_stop(r.writer);
    prep_batch_buffer_free(&r.batch);
    free(r.labels);
    free(r.why);
    free(r.sums);
    free(r.label_counts);
    free(r.batch_counts);
    for (int t = 0; r.scratch && t < r.threads; t++) {
        free(r.scratch[t].pixels.data);
        free(r.scratch[t].work);
        free(r.scratch[t].bytes);
        free(r.scratch[t].partial);
    }
    free(r.scratch);
    return status;
}

ax_status ax_prep_run(const ax_prep_options *options, ax_prep_progress_fn progress, void *user,
                      ax_prep_summary *summary)
{
    if (summary)
        AX_TRY(ax_sized_output_check(summary, sizeof *summary, "a prep summary",
                                     "ax_prep_summary_empty"));
    ax_prep_summary whole = ax_prep_summary_empty();
    ax_status status = prep_run(options, progress, user, &whole);
    if (!summary || !holds_warnings(summary))
        ax_prep_summary_free(&whole); /* the caller could never free them */
    if (summary)
        ax_sized_output_write(summary, &whole, sizeof whole);
    return status;
}
