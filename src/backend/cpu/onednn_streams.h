/* onednn_streams.h: one oneDNN stream per OpenMP thread, for the code that
 * runs a single-threaded primitive on each thread at once (the sliced
 * convolution weight gradient, the blocked bf16 matmul): oneDNN lets
 * threads execute a primitive together, each on its own stream. */
#ifndef AX_BACKEND_CPU_ONEDNN_STREAMS_H
#define AX_BACKEND_CPU_ONEDNN_STREAMS_H

#include <oneapi/dnnl/dnnl.h>
#include <stdbool.h>

typedef struct ax_onednn_streams {
    dnnl_stream_t *streams; /* [thread] */
    int count;
} ax_onednn_streams;

/* At least `threads` streams on engine; false when memory or oneDNN fails
 * (the streams made so far are kept). */
bool ax_onednn_streams_reserve(ax_onednn_streams *streams, dnnl_engine_t engine, int threads);
void ax_onednn_streams_free(ax_onednn_streams *streams);

#endif
