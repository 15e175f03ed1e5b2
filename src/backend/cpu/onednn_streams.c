/* onednn_streams.c: one oneDNN stream per thread (onednn_streams.h). */
#include <stdlib.h>

#include "backend/cpu/onednn_streams.h"

bool ax_onednn_streams_reserve(ax_onednn_streams *streams, dnnl_engine_t engine, int threads)
{
    if (streams->count >= threads)
        return true;
    dnnl_stream_t *grown = realloc(streams->streams, (size_t)threads * sizeof *grown);
    if (!grown)
        return false;
    streams->streams = grown;
    for (; streams->count < threads; streams->count++)
        if (dnnl_stream_create(&grown[streams->count], engine, dnnl_stream_default_flags) !=
            dnnl_success)
            return false;
    return true;
}

void ax_onednn_streams_free(ax_onednn_streams *streams)
{
    for (int i = 0; i < streams->count; i++)
        dnnl_stream_destroy(streams->streams[i]);
    free(streams->streams);
    streams->streams = NULL;
    streams->count = 0;
}
