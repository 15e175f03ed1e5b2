/* pinned_upload.h: large host-to-device copies from pageable memory through
 * two pinned staging buffers (pinned_upload.c). */
#ifndef AXON_BACKEND_CUDA_PINNED_UPLOAD_H
#define AXON_BACKEND_CUDA_PINNED_UPLOAD_H

#include <stdbool.h>
#include <stddef.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ax_pinned_stage {
    void *host[2];       /* pinned, `bytes` each */
    cudaEvent_t free[2]; /* recorded after the copy out of host[i] */
    size_t bytes;
    int next;
    bool off; /* AXON_CUDA_STAGING=off: copies go straight from pageable memory */
} ax_pinned_stage;

/* Two pinned buffers of `bytes` each and their events; the current device's. */
cudaError_t ax_pinned_stage_create(ax_pinned_stage *stage, size_t bytes);
void ax_pinned_stage_release(ax_pinned_stage *stage);

/* Queues the copy of `bytes` from host `src` (pageable) to device `dst` on
 * `stream`; returns when `src` may be reused (every piece is in a pinned
 * buffer or on its way), not when the copy is done. */
cudaError_t ax_pinned_upload(ax_pinned_stage *stage, void *dst, const void *src, size_t bytes,
                             cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
