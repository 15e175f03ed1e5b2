/* backend.c: picks the backend a network computes on (the CPU, or a CUDA
 * device when this build has the CUDA backend), and answers the public
 * questions about CUDA devices in builds with and without it. */
#include "backend/backend.h"

#include <stdio.h>

#include "core/error.h"

#ifdef AXON_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

ax_status ax_backend_create(ax_precision precision, int device, ax_backend **out)
{
    *out = NULL;
    if (device < -1)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "device %d is not a device: -1 is the CPU, 0 and up a CUDA device", device);
    if (device == -1) {
        *out = ax_backend_cpu_create(precision);
        return *out ? AX_STATUS_OK
                    : ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory creating the CPU backend");
    }
#ifdef AXON_CUDA
    return ax_backend_cuda_create(precision, device, out);
#else
    return ax_fail(AX_STATUS_UNSUPPORTED,
                   "this build has no CUDA backend (CUDA device %d was asked for); "
                   "rebuild with -DAXON_CUDA=ON where nvcc is installed", device);
#endif
}

int ax_cuda_device_count(void)
{
#ifdef AXON_CUDA
    return ax_backend_cuda_device_count();
#else
    return 0;
#endif
}

ax_status ax_cuda_device_info(int device, char *text, size_t capacity)
{
    if (text && capacity > 0)
        text[0] = '\0';
    if (!text || capacity == 0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "ax_cuda_device_info needs a text buffer");
#ifdef AXON_CUDA
    return ax_backend_cuda_device_info(device, text, capacity);
#else
    return ax_fail(AX_STATUS_UNSUPPORTED, "this build has no CUDA backend (device %d)", device);
#endif
}
