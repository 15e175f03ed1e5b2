/* decode_pool.h: threads that decode the JPEGs of one batch file
 * (data/jpeg_batch.h) into pixels, for the streamed batches of stream.c:
 * the prefetch thread hands a batch to the pool and decodes with it, so a
 * JPEG batch file is ready in 1/threads of one thread's time while the
 * previous file trains. Each image goes to its own place, so the pixels do
 * not depend on which thread decoded what. */
#ifndef AX_DATA_DECODE_POOL_H
#define AX_DATA_DECODE_POOL_H

#include "data/jpeg_batch.h"

typedef struct ax_decode_pool ax_decode_pool;

/* threads in all, the caller's included (threads - 1 are started). */
ax_status ax_decode_pool_start(ax_decode_pool **pool, int threads);
/* Decodes images [0, batch->count) of batch (read from path) into pixels
 * (count, S, S, C); fails naming path and the first image that failed. */
ax_status ax_decode_pool_run(ax_decode_pool *pool, const char *path, const ax_jpeg_batch *batch,
                             unsigned char *pixels);
/* Ends the threads and frees (NULL is fine). */
void ax_decode_pool_stop(ax_decode_pool *pool);

#endif
