/* writer.c: the batch writer of `axon prep`, a thread that writes batch b
 * while the workers make batch b + 1 in the same buffer.
 *
 * The data file goes out with O_DIRECT (batch_file.c): the thread spends
 * its time waiting for the device, not on a CPU, so the wait leaves the
 * critical path at no cost in CPU time. There is one buffer, not two (a
 * second 50 MB buffer costs its page faults): the writer reports how far
 * it has written, and a worker about to store an image into slot j waits
 * until slot j is behind that point (prep_writer_wait). The device writes
 * at several hundred MB/s and a worker makes a few MB of images in that
 * time, so in practice nobody waits.
 *
 * A batch is renamed into place only after its fsync, by the writer, so the
 * guarantee of batch_file.c holds: a data file present is complete and
 * durable. A failed write is kept and returned by the next submit or by
 * finish, which the pipeline calls before it ends, also when stopped. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "prep/prep.h"

struct prep_writer {
    prep_batch_buffer *buffer;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    /* The job, under lock. */
    bool busy, quit;
    const char *dir;
    int64_t batch, count, side;
    int channels;
    int32_t *labels;           /* (max_count) a copy */
    size_t header_size;        /* of the data file being written */
    size_t region;             /* pixel bytes the job writes */
    size_t safe;               /* pixel bytes the job no longer reads (atomic) */
    /* The outcome. */
    ax_status status;
    char message[1024];
    int64_t failed_batch;      /* -1: none */
    int64_t written;           /* batches written and renamed */
    double seconds;
};

static void on_progress(void *context, size_t file_bytes_done)
{
    prep_writer *w = context;
    size_t safe = file_bytes_done == SIZE_MAX     ? SIZE_MAX
                  : file_bytes_done > w->header_size ? file_bytes_done - w->header_size
                                                     : 0;
    pthread_mutex_lock(&w->lock);
    __atomic_store_n(&w->safe, safe, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
}

static void *writer_main(void *context)
{
    prep_writer *w = context;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->busy && !w->quit)
            pthread_cond_wait(&w->changed, &w->lock);
        if (!w->busy)
            break;
        pthread_mutex_unlock(&w->lock);
        double t0 = ax_seconds_now();
        ax_status status = prep_batch_write(w->dir, w->batch, w->buffer, w->labels, w->count,
                                            w->side, w->channels, on_progress, w);
        pthread_mutex_lock(&w->lock);
        if (status != AX_STATUS_OK && w->status == AX_STATUS_OK) {
            w->status = status;
            w->failed_batch = w->batch;
            snprintf(w->message, sizeof w->message, "%s", ax_error_message());
        }
        w->written += status == AX_STATUS_OK;
        w->seconds += ax_seconds_now() - t0;
        w->busy = false;
        __atomic_store_n(&w->safe, SIZE_MAX, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&w->changed);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

ax_status prep_writer_start(prep_writer **writer, prep_batch_buffer *buffer, int64_t max_count)
{
    *writer = NULL;
    prep_writer *w = calloc(1, sizeof *w);
    int32_t *labels = malloc((size_t)(max_count > 0 ? max_count : 1) * sizeof *labels);
    if (!w || !labels) {
        free(w);
        free(labels);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
    }
    w->buffer = buffer;
    w->labels = labels;
    w->safe = SIZE_MAX;
    w->failed_batch = -1;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->changed, NULL);
    int error = pthread_create(&w->thread, NULL, writer_main, w);
    if (error != 0) {
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->changed);
        free(labels);
        free(w);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: cannot start the batch writer: %s",
                       strerror(error));
    }
    *writer = w;
    return AX_STATUS_OK;
}

/* Waits for the job in hand; under lock. */
static void wait_idle(prep_writer *w)
{
    while (w->busy)
        pthread_cond_wait(&w->changed, &w->lock);
}

static ax_status outcome(prep_writer *w)
{
    return w->status == AX_STATUS_OK ? AX_STATUS_OK : ax_fail(w->status, "%s", w->message);
}

ax_status prep_writer_submit(prep_writer *w, const char *dir, int64_t batch,
                             const int32_t *labels, int64_t count, int64_t side, int channels)
{
    pthread_mutex_lock(&w->lock);
    wait_idle(w);
    if (w->status != AX_STATUS_OK) {
        ax_status status = outcome(w);
        pthread_mutex_unlock(&w->lock);
        return status;
    }
    w->dir = dir;
    w->batch = batch;
    w->count = count;
    w->side = side;
    w->channels = channels;
    memcpy(w->labels, labels, (size_t)count * sizeof *labels);
    w->header_size = (size_t)(w->buffer->pixels - prep_batch_header_start(w->buffer, count, side,
                                                                           channels));
    w->region = (size_t)count * (size_t)(side * side * channels);
    __atomic_store_n(&w->safe, (size_t)0, __ATOMIC_RELEASE);
    w->busy = true;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
    return AX_STATUS_OK;
}

void prep_writer_wait(prep_writer *w, size_t begin, size_t end)
{
    /* The common case without the lock: written already, or idle. */
    if (!w || __atomic_load_n(&w->safe, __ATOMIC_ACQUIRE) >= end)
        return;
    pthread_mutex_lock(&w->lock);
    while (w->busy && begin < w->region && __atomic_load_n(&w->safe, __ATOMIC_ACQUIRE) < end)
        pthread_cond_wait(&w->changed, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

ax_status prep_writer_finish(prep_writer *w, double *seconds, int64_t *written,
                             int64_t *failed_batch)
{
    *seconds = 0, *written = 0, *failed_batch = -1;
    if (!w)
        return AX_STATUS_OK;
    pthread_mutex_lock(&w->lock);
    wait_idle(w);
    ax_status status = outcome(w);
    *seconds = w->seconds;
    *written = w->written;
    *failed_batch = w->failed_batch;
    pthread_mutex_unlock(&w->lock);
    return status;
}

void prep_writer_stop(prep_writer *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    wait_idle(w);
    w->quit = true;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->changed);
    free(w->labels);
    free(w);
}
