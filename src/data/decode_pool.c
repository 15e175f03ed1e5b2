/* decode_pool.c: the JPEG decode pool of streamed batches (decode_pool.h).
 * Plain pthreads rather than OpenMP: the pool works while the trainer's
 * OpenMP team computes, and must not share or resize that team. Work is
 * handed out one image at a time from a shared counter. */
#define _POSIX_C_SOURCE 200809L

#include "data/decode_pool.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

struct ax_decode_pool {
    pthread_t *threads;
    int started;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool quit;
    uint64_t job;                /* increases with each run */
    const ax_jpeg_batch *batch;  /* the job, under lock */
    unsigned char *pixels;
    int64_t next, done;          /* images handed out, images finished */
    int64_t failed;              /* the lowest image that failed, or -1 */
    char why[256];
};

/* Takes images of the current job until none is left; under lock on entry and exit. */
static void work(ax_decode_pool *p)
{
    const ax_jpeg_batch *batch = p->batch;
    const size_t image_bytes = (size_t)(batch->side * batch->side * batch->channels);
    while (p->next < batch->count) {
        const int64_t i = p->next++;
        pthread_mutex_unlock(&p->lock);
        const unsigned char *bytes;
        size_t size;
        ax_jpeg_batch_image(batch, i, &bytes, &size);
        char why[256];
        bool ok = ax_jpeg_decode_exact(bytes, size, batch->side, batch->channels,
                                       p->pixels + (size_t)i * image_bytes, why, sizeof why);
        pthread_mutex_lock(&p->lock);
        if (!ok && (p->failed < 0 || i < p->failed)) {
            p->failed = i;
            snprintf(p->why, sizeof p->why, "%s", why);
        }
        if (++p->done == batch->count)
            pthread_cond_broadcast(&p->changed);
    }
}

static void *pool_main(void *argument)
{
    ax_decode_pool *p = argument;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->quit && (p->job == seen || !p->batch || p->next >= p->batch->count))
            pthread_cond_wait(&p->changed, &p->lock);
        if (p->quit)
            break;
        seen = p->job;
        work(p);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

ax_status ax_decode_pool_start(ax_decode_pool **pool, int threads)
{
    *pool = NULL;
    ax_decode_pool *p = calloc(1, sizeof *p);
    if (!p || !(p->threads = calloc((size_t)(threads > 1 ? threads : 1), sizeof *p->threads))) {
        free(p);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for the decode pool");
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    for (int t = 1; t < threads; t++) {
        if (pthread_create(&p->threads[p->started], NULL, pool_main, p) != 0)
            break; /* fewer helpers: slower, the same pixels */
        p->started++;
    }
    *pool = p;
    return AX_STATUS_OK;
}

ax_status ax_decode_pool_run(ax_decode_pool *p, const char *path, const ax_jpeg_batch *batch,
                             unsigned char *pixels)
{
    pthread_mutex_lock(&p->lock);
    p->batch = batch;
    p->pixels = pixels;
    p->next = p->done = 0;
    p->failed = -1;
    p->job++;
    pthread_cond_broadcast(&p->changed);
    work(p);
    while (p->done < batch->count)
        pthread_cond_wait(&p->changed, &p->lock);
    const int64_t failed = p->failed;
    char why[256];
    snprintf(why, sizeof why, "%s", p->why);
    p->batch = NULL;
    pthread_mutex_unlock(&p->lock);
    if (failed < 0)
        return AX_STATUS_OK;
    const unsigned char *bytes;
    size_t size;
    ax_jpeg_batch_image(batch, failed, &bytes, &size);
    return ax_fail(AX_STATUS_BAD_FILE, "%s: image %lld (bytes %llu to %llu): %s", path,
                   (long long)failed, (unsigned long long)(bytes - batch->bytes),
                   (unsigned long long)(bytes - batch->bytes + size), why);
}

void ax_decode_pool_stop(ax_decode_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->quit = true;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    for (int t = 0; t < p->started; t++)
        pthread_join(p->threads[t], NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->changed);
    free(p->threads);
    free(p);
}
