/* stream.c: batches:DIR streamed from disk, for sets that do not fit in
 * memory as float32 (ImageNet at 256x256 would need about 1 TB). The way
 * cuda-convnet2's data provider and darknet's loader thread feed a trainer:
 * a prefetch thread reads the next batch file (uint8, as axon prep wrote
 * it) while the rows of the current one train; a row becomes float32 only
 * when its batch is asked for. At most SLOTS batch files are held, whatever
 * the number of files, and only while a pass runs.
 *
 * A pass (an epoch, or one evaluation) takes the files in an order drawn
 * from (seed, epoch) and the rows of each file in an order drawn from
 * (seed, epoch, file); unshuffled, meta.json's order. Training rows may be
 * random crops (offsets uniform in 0 .. S - crop) and mirrored left-right
 * with probability 1/2, both drawn from (seed, epoch, row) so that they do
 * not depend on the thread's timing; evaluation takes the centre crop
 * (cuda-convnet2's multiview off). A pixel becomes (p - mean) / 255, or
 * p / 255 without a mean image, computed as batches.c computes it so that a
 * streamed set gives the loaded set's floats bit for bit. With lighting
 * noise (AlexNet's, Krizhevsky et al. 2012, section 4.1) a training image
 * gets one (r, g, b) shift, sum_i a_i stdev_i v_i over meta.json's colour
 * components, a_i ~ N(0, sigma) drawn from (seed, epoch, row) like the
 * crop, added to every pixel before the mean is subtracted. */
#define _POSIX_C_SOURCE 200809L

#include "data/stream.h"

#include <pthread.h>

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/clock.h"
#include "base/random.h"
#include "data/decode_pool.h"
#include "io/npy_header.h"

enum { SLOTS = 2 };

typedef enum slot_state { SLOT_EMPTY, SLOT_LOADING, SLOT_READY, SLOT_HELD } slot_state;

/* One batch file in memory: pixels (images, S, S, C) uint8, labels (images). */
typedef struct slot {
    slot_state state;
    int64_t position; /* in the pass's file order */
    unsigned char *pixels;
    unsigned char *raw_labels; /* the labels file's items, then converted into labels */
    int32_t *labels;
    ax_status status;
    char message[1024];
} slot;

struct ax_batch_stream {
    char dir[4096];
    ax_batches_meta meta;
    int64_t crop, features, pixels_per_image, largest_file;
    bool mirror;
    double lighting;           /* sigma of the lighting noise, 0: none */
    double light_basis[3][3];  /* [i][c] = stdev_i v_i[c] */
    float *mean; /* (S, S, C) or NULL */
    uint64_t options_hash;
    int decode_threads;   /* JPEG batches: the decode pool's size */
    int views;            /* evaluation passes: 1 or 10 views of each image */
    int view;             /* the consumer's next view of its current row */
    ax_decode_pool *pool; /* JPEG batches, during a pass; used by the prefetch thread */
    double wait_seconds;  /* the consumer's, waiting for a file not yet ready */

    /* The pass under way. */
    ax_stream_pass pass;
    bool active;
    int64_t *file_order; /* (files) */
    int64_t *row_order;  /* (largest_file): the current file's rows */
    int64_t *file_first; /* (files): the first row of each file in meta.json's order */
    int64_t position;    /* the consumer's file in file_order */
    int64_t row;         /* its next row in row_order */
    int held;            /* the slot the consumer reads, or -1 */
    ax_status failed;    /* a pass that failed keeps failing with message */
    char message[1024];

    /* Shared with the prefetch thread, under lock. */
    pthread_t thread;
    bool thread_running, stopping;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int64_t next_load;
    slot slots[SLOTS];

    ax_dataset *window; /* the rows handed out, (capacity, features) */
};

/* The two files of batch index opened and checked against meta.json. */
static ax_status open_file(const ax_batch_stream *s, size_t index, npy_array *pixels,
                           npy_array *labels)
{
    const ax_batches_meta *meta = &s->meta;
    const ax_batches_file *file = &meta->files[index];
    memset(labels, 0, sizeof *labels);
    memset(pixels, 0, sizeof *pixels);
    ax_status status = AX_STATUS_OK;
    if (meta->jpeg) { /* the header now, the whole file when it is read */
        int64_t count = 0, side = 0, channels = 0;
        status = ax_jpeg_batch_check_header(file->data_path, &count, &side, &channels);
        if (status == AX_STATUS_OK &&
            !(count == file->images && side == meta->side && channels == meta->channels))
            status = ax_fail(AX_STATUS_BAD_FILE,
                             "%s: holds %lld JPEGs of %lld x %lld x %lld where meta.json says "
                             "%lld of %lld x %lld x %lld",
                             file->data_path, (long long)count, (long long)side, (long long)side,
                             (long long)channels, (long long)file->images, (long long)meta->side,
                             (long long)meta->side, (long long)meta->channels);
        if (status != AX_STATUS_OK)
            return ax_fail_context(status, "batch %zu of %zu in %s/meta.json", index + 1,
                                   meta->files_count, s->dir);
        goto labels;
    }
    status = ax_npy_open(file->data_path, pixels);
    if (status != AX_STATUS_OK)
        return ax_fail_context(status, "batch %zu of %zu in %s/meta.json", index + 1,
                               meta->files_count, s->dir);
    if (!(pixels->kind == NPY_KIND_UNSIGNED && pixels->item_bytes == 1 && pixels->dims == 4 &&
          pixels->shape[0] == file->images && pixels->shape[1] == meta->side &&
          pixels->shape[2] == meta->side && pixels->shape[3] == meta->channels)) {
        char found[160];
        int at = snprintf(found, sizeof found, "dtype %s, shape (", pixels->descr);
        for (int d = 0; d < pixels->dims && at > 0 && at < (int)sizeof found - 24; d++)
            at += snprintf(found + at, sizeof found - (size_t)at, "%s%lld", d ? ", " : "",
                           (long long)pixels->shape[d]);
        if (at > 0 && at < (int)sizeof found - 2)
            snprintf(found + at, sizeof found - (size_t)at, ")");
        status = ax_fail(AX_STATUS_BAD_FILE,
                         "%s: expected uint8 (%lld, %lld, %lld, %lld) as meta.json says, found "
                         "%s (batch %zu of %zu in %s/meta.json)",
                         file->data_path, (long long)file->images, (long long)meta->side,
                         (long long)meta->side, (long long)meta->channels, found, index + 1,
                         meta->files_count, s->dir);
        ax_npy_close(pixels);
        return status;
    }
labels:
    status = ax_npy_open(file->labels_path, labels);
    if (status == AX_STATUS_OK &&
        !(labels->kind != NPY_KIND_FLOAT && labels->dims == 1 && labels->shape[0] == file->images)) {
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: expected %lld integer labels", file->labels_path,
                         (long long)file->images);
        ax_npy_close(labels);
    }
    if (status != AX_STATUS_OK) {
        ax_npy_close(pixels);
        return ax_fail_context(status, "batch %zu of %zu in %s/meta.json", index + 1,
                               meta->files_count, s->dir);
    }
    return AX_STATUS_OK;
}

/* Reads batch index into a slot: on the prefetch thread. */
static ax_status read_file(const ax_batch_stream *s, size_t index, slot *into)
{
    npy_array pixels, labels;
    AX_TRY(open_file(s, index, &pixels, &labels));
    const ax_batches_file *file = &s->meta.files[index];
    const int64_t images = file->images;
    ax_status status = AX_STATUS_OK;
    if (s->meta.jpeg) {
        ax_jpeg_batch jpeg;
        status = ax_jpeg_batch_read(file->data_path, &jpeg);
        if (status == AX_STATUS_OK &&
            !(jpeg.count == images && jpeg.side == s->meta.side &&
              jpeg.channels == s->meta.channels))
            status = ax_fail(AX_STATUS_BAD_FILE, "%s: changed since the set was opened: %lld "
                             "JPEGs of %lld x %lld x %lld", file->data_path,
                             (long long)jpeg.count, (long long)jpeg.side, (long long)jpeg.side,
                             (long long)jpeg.channels);
        if (status == AX_STATUS_OK)
            status = ax_decode_pool_run(s->pool, file->data_path, &jpeg, into->pixels);
        ax_jpeg_batch_release(&jpeg);
    } else {
        status = ax_npy_read_items(&pixels, 0, images * s->pixels_per_image, into->pixels);
    }
    if (status == AX_STATUS_OK)
        status = ax_npy_read_items(&labels, 0, images, into->raw_labels);
    for (int64_t i = 0; status == AX_STATUS_OK && i < images; i++) {
        double label = ax_npy_element(&labels, into->raw_labels, (size_t)i);
        if (!(label >= 0 && label < (double)s->meta.classes))
            status = ax_fail(AX_STATUS_BAD_DATA,
                             "%s: label [%lld] is %g, outside 0 .. %lld (meta.json lists %lld "
                             "labels)",
                             file->labels_path, (long long)i, label,
                             (long long)s->meta.classes - 1, (long long)s->meta.classes);
        else
            into->labels[i] = (int32_t)label;
    }
    ax_npy_close(&pixels);
    ax_npy_close(&labels);
    if (status != AX_STATUS_OK && !strstr(ax_error_message(), "meta.json"))
        status = ax_fail_context(status, "batch %zu of %zu in %s/meta.json", index + 1,
                                 s->meta.files_count, s->dir);
    return status;
}

static int find_slot(const ax_batch_stream *s, slot_state state)
{
    for (int k = 0; k < SLOTS; k++)
        if (s->slots[k].state == state)
            return k;
    return -1;
}

static void *prefetch_main(void *argument)
{
    ax_batch_stream *s = argument;
    const int64_t files = (int64_t)s->meta.files_count;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->stopping && (s->next_load >= files || find_slot(s, SLOT_EMPTY) < 0))
            pthread_cond_wait(&s->changed, &s->lock);
        if (s->stopping)
            break;
        slot *into = &s->slots[find_slot(s, SLOT_EMPTY)];
        into->state = SLOT_LOADING;
        into->position = s->next_load++;
        const size_t index = (size_t)s->file_order[into->position];
        pthread_mutex_unlock(&s->lock);
        ax_status status = read_file(s, index, into);
        if (status != AX_STATUS_OK) /* the message is this thread's: kept for the consumer */
            snprintf(into->message, sizeof into->message, "%s", ax_error_message());
        pthread_mutex_lock(&s->lock);
        into->status = status;
        into->state = SLOT_READY;
        pthread_cond_broadcast(&s->changed);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static uint64_t pass_key(const ax_stream_pass *pass)
{
    return ax_hash64(pass->seed ^ ax_hash64((uint64_t)pass->epoch ^ 0x5354524541ULL));
}

/* The order of the rows of file index within a pass. */
static void file_rows(const ax_batch_stream *s, const ax_stream_pass *pass, int64_t index,
                      int64_t *order)
{
    const int64_t images = s->meta.files[index].images;
    if (!pass->shuffle) {
        for (int64_t i = 0; i < images; i++)
            order[i] = i;
        return;
    }
    ax_rng rng;
    ax_rng_seed(&rng, ax_hash64(pass_key(pass) ^ ax_hash64((uint64_t)index + 1)));
    ax_rng_permutation(&rng, order, images);
}

static void file_order(const ax_batch_stream *s, const ax_stream_pass *pass, int64_t *order)
{
    const int64_t files = (int64_t)s->meta.files_count;
    if (!pass->shuffle) {
        for (int64_t i = 0; i < files; i++)
            order[i] = i;
        return;
    }
    ax_rng rng;
    ax_rng_seed(&rng, pass_key(pass));
    ax_rng_permutation(&rng, order, files);
}

ax_status ax_batch_stream_order(const ax_batch_stream *s, const ax_stream_pass *pass,
                                int64_t *order)
{
    const int64_t files = (int64_t)s->meta.files_count;
    int64_t *files_in_order = malloc((size_t)files * sizeof *files_in_order);
    int64_t *rows = malloc((size_t)(s->largest_file + 1) * sizeof *rows);
    if (!files_in_order || !rows) {
        free(files_in_order);
        free(rows);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory for the row order", s->dir);
    }
    file_order(s, pass, files_in_order);
    int64_t at = 0;
    for (int64_t p = 0; p < files; p++) {
        const int64_t index = files_in_order[p];
        file_rows(s, pass, index, rows);
        for (int64_t i = 0; i < s->meta.files[index].images; i++)
            order[at++] = s->file_first[index] + rows[i];
    }
    free(files_in_order);
    free(rows);
    return AX_STATUS_OK;
}

static ax_status read_mean(ax_batch_stream *s, const char *path)
{
    npy_array array;
    AX_TRY(ax_npy_open(path, &array));
    const int64_t side = s->meta.side, channels = s->meta.channels;
    ax_status status = AX_STATUS_OK;
    if (!(array.kind == NPY_KIND_FLOAT && array.item_bytes == 4 && array.dims == 3 &&
          array.shape[0] == side && array.shape[1] == side && array.shape[2] == channels))
        status = ax_fail(AX_STATUS_BAD_FILE,
                         "%s: expected a float32 (%lld, %lld, %lld) mean image for %s, found "
                         "dtype %s with %d dimensions",
                         path, (long long)side, (long long)side, (long long)channels, s->dir,
                         array.descr, array.dims);
    unsigned char *bytes = NULL;
    if (status == AX_STATUS_OK)
        status = ax_npy_read_data(&array, &bytes);
    if (status == AX_STATUS_OK && !(s->mean = malloc((size_t)array.count * sizeof *s->mean)))
        status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    for (int64_t i = 0; status == AX_STATUS_OK && i < array.count; i++) {
        s->mean[i] = (float)ax_npy_element(&array, bytes, (size_t)i);
        if (!(s->mean[i] >= 0.0f && s->mean[i] <= 255.0f))
            status = ax_fail(AX_STATUS_BAD_DATA, "%s: value [%lld] is %g, not a mean of pixels "
                             "(0 .. 255)", path, (long long)i, (double)s->mean[i]);
    }
    free(bytes);
    ax_npy_close(&array);
    return status;
}

void ax_batch_stream_free(ax_batch_stream *s)
{
    if (!s)
        return;
    ax_batch_stream_end(s);
    ax_decode_pool_stop(s->pool);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->changed);
    free(s->file_order);
    free(s->row_order);
    free(s->file_first);
    free(s->mean);
    ax_batches_meta_release(&s->meta);
    free(s);
}

/* The lighting noise needs the colour components of meta.json. */
static ax_status set_lighting(ax_batch_stream *s, double lighting)
{
    if (!(lighting >= 0 && lighting <= 1e6))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: a lighting sigma of %g: expected 0 or more",
                       s->dir, lighting);
    if (lighting == 0)
        return AX_STATUS_OK;
    if (s->meta.channels != 3 || !s->meta.color_pca.present)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s/meta.json: %s; the lighting noise needs the RGB "
                       "colour components axon prep writes (make the batches again with this "
                       "axon prep, or convert them from cuda-convnet2)", s->dir,
                       s->meta.channels != 3 ? "grey images" : "no \"color_pca\"");
    s->lighting = lighting;
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < 3; c++)
            s->light_basis[i][c] = s->meta.color_pca.stdevs[i] * s->meta.color_pca.eigenvectors[i][c];
    /* Another sigma or other components make another set for a checkpoint. */
    uint64_t bits;
    memcpy(&bits, &lighting, sizeof bits);
    s->options_hash = ax_hash64(s->options_hash ^ bits ^ 0x4c49474854ULL);
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < 3; c++) {
            memcpy(&bits, &s->light_basis[i][c], sizeof bits);
            s->options_hash = ax_hash64(s->options_hash ^ bits);
        }
    return AX_STATUS_OK;
}

static ax_status open_stream(const char *dir, int64_t crop, bool mirror, const char *mean_path,
                             int decode_threads, int views, double lighting, ax_batch_stream *s)
{
    if (views != 1 && views != 10)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: %d views: 1 (the centre crop) or 10 (corners "
                       "and centre, each mirrored)", dir, views);
    s->views = views;
    /* OpenMP's count in the opening thread: ax_set_threads sets it (the
     * user's --threads), and the data layer sits below perf/threads.c. */
    int cores = omp_get_max_threads();
    s->decode_threads = decode_threads > 0 ? decode_threads : cores < 8 ? cores : 8;
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    AX_TRY(ax_batches_meta_read(dir, &s->meta));
    const int64_t side = s->meta.side, channels = s->meta.channels;
    if (crop < 0 || crop > side)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: a crop of %lld x %lld does not fit its %lld x "
                       "%lld images", dir, (long long)crop, (long long)crop, (long long)side,
                       (long long)side);
    s->crop = crop > 0 ? crop : side;
    s->mirror = mirror;
    s->pixels_per_image = side * side * channels;
    s->features = s->crop * s->crop * channels;
    s->options_hash = ax_hash64(ax_hash64((uint64_t)s->crop) ^ (mirror ? 1u : 2u));
    if (mean_path) {
        AX_TRY(read_mean(s, mean_path));
        /* The same set with another mean is another set for a checkpoint. */
        for (int64_t i = 0; i < s->pixels_per_image; i++) {
            uint32_t bits;
            memcpy(&bits, &s->mean[i], sizeof bits);
            s->options_hash = ax_hash64(s->options_hash ^ bits);
        }
    }
    AX_TRY(set_lighting(s, lighting));
    const size_t files = s->meta.files_count;
    s->file_order = malloc((files + 1) * sizeof *s->file_order);
    s->file_first = malloc((files + 1) * sizeof *s->file_first);
    if (!s->file_order || !s->file_first)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", dir);
    int64_t first = 0;
    for (size_t b = 0; b < files; b++) {
        /* Every header now: a file missing or of another shape stops the run
         * before it starts (one that changes later is caught as it is read). */
        npy_array pixels, labels;
        AX_TRY(open_file(s, b, &pixels, &labels));
        ax_npy_close(&pixels);
        ax_npy_close(&labels);
        s->file_first[b] = first;
        first += s->meta.files[b].images;
        if (s->meta.files[b].images > s->largest_file)
            s->largest_file = s->meta.files[b].images;
    }
    const size_t largest = (size_t)s->largest_file + 1;
    if (!(s->row_order = malloc(largest * sizeof *s->row_order)))
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", dir);
    return AX_STATUS_OK;
}

/* The slots hold files only during a pass: a test set's stream holds none
 * while the training set's trains. */
static ax_status allocate_slots(ax_batch_stream *s)
{
    const size_t largest = (size_t)s->largest_file + 1;
    for (int k = 0; k < SLOTS; k++) {
        slot *buffer = &s->slots[k];
        if (!buffer->pixels)
            buffer->pixels = malloc(largest * (size_t)s->pixels_per_image);
        if (!buffer->raw_labels)
            buffer->raw_labels = malloc(largest * 8);
        if (!buffer->labels)
            buffer->labels = malloc(largest * sizeof *buffer->labels);
        if (!buffer->pixels || !buffer->raw_labels || !buffer->labels)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY,
                           "%s: out of memory for two batch files of %lld images", s->dir,
                           (long long)s->largest_file);
    }
    return AX_STATUS_OK;
}

static void free_slots(ax_batch_stream *s)
{
    for (int k = 0; k < SLOTS; k++) {
        free(s->slots[k].pixels);
        free(s->slots[k].raw_labels);
        free(s->slots[k].labels);
        s->slots[k].pixels = s->slots[k].raw_labels = NULL;
        s->slots[k].labels = NULL;
    }
}

ax_status ax_batch_stream_open(const char *dir, int64_t crop, bool mirror, const char *mean_path,
                               int decode_threads, int views, double lighting, ax_dataset **out)
{
    *out = NULL;
    ax_batch_stream *s = calloc(1, sizeof *s);
    if (!s)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", dir);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->changed, NULL);
    s->held = -1;
    ax_status status = open_stream(dir, crop, mirror, mean_path, decode_threads, views, lighting,
                                   s);
    /* The set itself holds no rows: rows counts them, the data are read
     * as passes ask for them (ax_dataset_is_streamed). */
    ax_dataset *data = status == AX_STATUS_OK ? calloc(1, sizeof *data) : NULL;
    if (status == AX_STATUS_OK && !data)
        status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", dir);
    if (status != AX_STATUS_OK) {
        ax_batch_stream_free(s);
        return status;
    }
    data->rows = s->meta.rows;
    data->features = s->features;
    /* (crop, crop, C) images, or prep's whole (S, S, C) ones */
    memcpy(data->image_shape, (int64_t[3]){s->crop, s->crop, s->meta.channels},
           sizeof data->image_shape);
    data->classes = s->meta.classes;
    snprintf(data->source, sizeof data->source, "%s", dir);
    data->stream = s;
    data->stream_free = ax_batch_stream_free;
    *out = data;
    return AX_STATUS_OK;
}

void ax_batch_stream_end(ax_batch_stream *s)
{
    if (s->thread_running) {
        pthread_mutex_lock(&s->lock);
        s->stopping = true;
        pthread_cond_broadcast(&s->changed);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
        s->thread_running = false;
    }
    for (int k = 0; k < SLOTS; k++)
        s->slots[k].state = SLOT_EMPTY;
    free_slots(s);
    ax_dataset_free(s->window); /* next pass, next size */
    s->window = NULL;
    s->stopping = false;
    s->active = false;
    s->held = -1;
}

ax_status ax_batch_stream_begin(ax_batch_stream *s, const ax_stream_pass *pass)
{
    ax_batch_stream_end(s);
    AX_TRY(allocate_slots(s));
    if (s->meta.jpeg && !s->pool) /* kept from pass to pass */
        AX_TRY(ax_decode_pool_start(&s->pool, s->decode_threads));
    s->pass = *pass;
    s->failed = AX_STATUS_OK;
    file_order(s, pass, s->file_order);
    /* A resumed epoch: the file and row where its skip_rows end. */
    int64_t skip = pass->skip_rows < 0 ? 0 : pass->skip_rows, position = 0;
    const int64_t files = (int64_t)s->meta.files_count;
    while (position < files && skip >= s->meta.files[s->file_order[position]].images)
        skip -= s->meta.files[s->file_order[position++]].images;
    s->position = position;
    s->row = skip;
    s->view = 0;
    s->next_load = position;
    if (position < files)
        file_rows(s, pass, s->file_order[position], s->row_order);
    if (pthread_create(&s->thread, NULL, prefetch_main, s) != 0)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: cannot start the prefetch thread", s->dir);
    s->thread_running = true;
    s->active = true; /* only now: a pass without its thread would wait forever */
    return AX_STATUS_OK;
}

/* Waits for the pass's file at position, then holds it. */
static ax_status take(ax_batch_stream *s)
{
    pthread_mutex_lock(&s->lock);
    int found = -1;
    for (;;) {
        for (int k = 0; k < SLOTS; k++)
            if (s->slots[k].state == SLOT_READY && s->slots[k].position == s->position)
                found = k;
        if (found >= 0)
            break;
        const double t0 = ax_seconds_now();
        pthread_cond_wait(&s->changed, &s->lock);
        s->wait_seconds += ax_seconds_now() - t0;
    }
    s->slots[found].state = SLOT_HELD;
    pthread_mutex_unlock(&s->lock);
    s->held = found;
    if (s->slots[found].status != AX_STATUS_OK)
        return ax_fail(s->slots[found].status, "%s", s->slots[found].message);
    return AX_STATUS_OK;
}

static void release(ax_batch_stream *s)
{
    pthread_mutex_lock(&s->lock);
    s->slots[s->held].state = SLOT_EMPTY;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    s->held = -1;
}

/* The (r, g, b) lighting shift of a training row, in pixel units. */
static void light_shift(const ax_batch_stream *s, int64_t global_row, float shift[3])
{
    ax_rng rng;
    ax_rng_seed(&rng, ax_hash64(pass_key(&s->pass) ^ ax_hash64((uint64_t)global_row ^
                                                                0x4c49474854ULL)));
    double a[3], sum[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++)
        a[i] = s->lighting * ax_rng_normal(&rng);
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < 3; c++)
            sum[c] += a[i] * s->light_basis[i][c];
    for (int c = 0; c < 3; c++)
        shift[c] = (float)sum[c];
}

/* Row r of the held file into out: cropped, mirrored, less the mean, / 255.
 * view (evaluation with 10 views): 0 to 3 the corners (top-left, top-right,
 * bottom-left, bottom-right), 4 the centre, 5 to 9 the same mirrored, as
 * cuda-convnet2's multiview test takes them. */
static void convert_row(const ax_batch_stream *s, const unsigned char *image, int64_t global_row,
                        int view, float *out)
{
    const int64_t side = s->meta.side, channels = s->meta.channels, crop = s->crop;
    int64_t top = (side - crop) / 2, left = (side - crop) / 2;
    bool flip = false;
    if (!s->pass.training && s->views == 10) {
        const int corner = view % 5;
        if (corner < 4) {
            top = corner >= 2 ? side - crop : 0;
            left = corner % 2 ? side - crop : 0;
        }
        flip = view >= 5;
    }
    if (s->pass.training && (crop < side || s->mirror)) {
        uint64_t draw = ax_hash64(pass_key(&s->pass) ^ ax_hash64((uint64_t)global_row ^
                                                                  0x43524f50ULL));
        if (crop < side) {
            top = (int64_t)(draw % (uint64_t)(side - crop + 1));
            draw = ax_hash64(draw);
            left = (int64_t)(draw % (uint64_t)(side - crop + 1));
            draw = ax_hash64(draw);
        }
        flip = s->mirror && (draw >> 63) != 0;
    }
    const float *mean = s->mean;
    /* p + 0.0f is p exactly: without lighting the floats are the loaded set's */
    float shift[3] = {0, 0, 0};
    if (s->pass.training && s->lighting > 0)
        light_shift(s, global_row, shift);
    for (int64_t y = 0; y < crop; y++)
        for (int64_t x = 0; x < crop; x++) {
            const int64_t source_x = left + (flip ? crop - 1 - x : x);
            const int64_t at = ((top + y) * side + source_x) * channels;
            float *to = out + (y * crop + x) * channels;
            for (int64_t c = 0; c < channels; c++) {
                const float lit = (float)image[at + c] + shift[c];
                to[c] = mean ? (lit - mean[at + c]) * (1.0f / 255.0f) : lit * (1.0f / 255.0f);
            }
        }
}

ax_status ax_batch_stream_next(ax_batch_stream *s, int64_t count, ax_dataset **window)
{
    *window = NULL;
    if (!s->active)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: a streamed set read outside a pass", s->dir);
    if (s->failed != AX_STATUS_OK)
        return ax_fail(s->failed, "%s", s->message);
    if (!s->window || s->window->rows < count) {
        ax_dataset_free(s->window);
        s->window = NULL;
        AX_TRY(ax_dataset_allocate(count, s->features, s->meta.classes, 0, s->dir, &s->window));
    }
    const int64_t files = (int64_t)s->meta.files_count;
    ax_status status = AX_STATUS_OK;
    for (int64_t made = 0; made < count && status == AX_STATUS_OK;) {
        if (s->position >= files) {
            status = ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: a pass asked for more than its %lld "
                             "rows", s->dir, (long long)s->meta.rows);
            break;
        }
        const int64_t index = s->file_order[s->position];
        const int64_t images = s->meta.files[index].images;
        if (s->held < 0) /* an empty file is taken and let go like any other */
            status = take(s);
        if (status != AX_STATUS_OK)
            break;
        const slot *held = &s->slots[s->held];
        const int views = s->pass.training ? 1 : s->views;
        for (; made < count && s->row < images; made++) {
            const int64_t row = s->row_order[s->row];
            convert_row(s, held->pixels + row * s->pixels_per_image, s->file_first[index] + row,
                        s->view, s->window->feature_values + made * s->features);
            s->window->labels[made] = held->labels[row];
            if (++s->view >= views) {
                s->view = 0;
                s->row++;
            }
        }
        if (s->row >= images) { /* the file is used up: its slot goes to the next */
            release(s);
            s->position++;
            s->row = 0;
            if (s->position < files)
                file_rows(s, &s->pass, s->file_order[s->position], s->row_order);
        }
    }
    if (status != AX_STATUS_OK) {
        s->failed = status;
        snprintf(s->message, sizeof s->message, "%s", ax_error_message());
        return status;
    }
    *window = s->window;
    return AX_STATUS_OK;
}

uint64_t ax_batch_stream_fingerprint(const ax_batch_stream *s)
{
    return ax_hash64(s->meta.hash ^ s->options_hash);
}

double ax_batch_stream_wait_seconds(const ax_batch_stream *s)
{
    return s->wait_seconds;
}

int ax_batch_stream_views(const ax_batch_stream *s)
{
    return s->views;
}
