/* pinned_upload.c: a large host-to-device copy from pageable memory through
 * two pinned staging buffers. cudaMemcpyAsync from pageable memory goes
 * through the driver's own staging with one host thread: 6.6 GB/s on an
 * H200's host (entropy-mi's 134 MB took 20.4 ms of its 20.6). Here all the
 * OpenMP threads copy a piece into one pinned buffer while the DMA of the
 * other runs, so the bus, not one core's memcpy, sets the pace. */
#include "backend/cuda/pinned_upload.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One thread's share of a piece: large enough to stream, small enough that
 * 16 threads share an 8 MiB piece. */
enum { SLICE_BYTES = 512 << 10 };

cudaError_t ax_pinned_stage_create(ax_pinned_stage *stage, size_t bytes)
{
    memset(stage, 0, sizeof *stage);
    const char *setting = getenv("AXON_CUDA_STAGING");
    stage->off = setting && strcmp(setting, "off") == 0;
    if (stage->off)
        return cudaSuccess;
    stage->bytes = bytes;
    for (int i = 0; i < 2; i++) {
        cudaError_t error = cudaMallocHost(&stage->host[i], bytes);
        if (error == cudaSuccess)
            error = cudaEventCreateWithFlags(&stage->free[i], cudaEventDisableTiming);
        if (error != cudaSuccess)
            return error;
    }
    return cudaSuccess;
}

void ax_pinned_stage_release(ax_pinned_stage *stage)
{
    for (int i = 0; i < 2; i++) {
        if (stage->free[i]) {
            cudaEventSynchronize(stage->free[i]);
            cudaEventDestroy(stage->free[i]);
        }
        cudaFreeHost(stage->host[i]);
    }
    memset(stage, 0, sizeof *stage);
}

cudaError_t ax_pinned_upload(ax_pinned_stage *stage, void *dst, const void *src, size_t bytes,
                             cudaStream_t stream)
{
    if (stage->off || !stage->host[0])
        return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream);
    for (size_t done = 0; done < bytes;) {
        const size_t count = bytes - done < stage->bytes ? bytes - done : stage->bytes;
        const int i = stage->next;
        stage->next = 1 - i;
        /* The buffer's previous copy to the device must be over. */
        cudaError_t error = cudaEventSynchronize(stage->free[i]);
        if (error != cudaSuccess)
            return error;
        char *to = (char *)stage->host[i];
        const char *from = (const char *)src + done;
        const int64_t slices = (int64_t)((count + SLICE_BYTES - 1) / SLICE_BYTES);
#pragma omp parallel for schedule(static)
        for (int64_t s = 0; s < slices; s++) {
            const size_t offset = (size_t)s * SLICE_BYTES;
            const size_t length = count - offset < SLICE_BYTES ? count - offset : SLICE_BYTES;
            memcpy(to + offset, from + offset, length);
        }
        error = cudaMemcpyAsync((char *)dst + done, to, count, cudaMemcpyHostToDevice, stream);
        if (error == cudaSuccess)
            error = cudaEventRecord(stage->free[i], stream);
        if (error != cudaSuccess)
            return error;
        done += count;
    }
    return cudaSuccess;
}
