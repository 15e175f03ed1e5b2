/* cuda_backend.h: the CUDA backend's entry points for backend.c: creating
 * a backend on a device and describing devices. Only built with AXON_CUDA. */
#ifndef AX_BACKEND_CUDA_BACKEND_H
#define AX_BACKEND_CUDA_BACKEND_H

#include "backend/backend.h"

/* A backend on CUDA device `device`: AX_STATUS_UNSUPPORTED when there is no
 * such device, AX_STATUS_OUT_OF_MEMORY when its buffers do not fit. */
ax_status ax_backend_cuda_create(ax_precision precision, int device, ax_backend **out);
/* Devices visible to this process; 0 when the driver or devices are missing. */
int ax_backend_cuda_device_count(void);
/* See ax_cuda_device_info in axon.h. */
ax_status ax_backend_cuda_device_info(int device, char *text, size_t capacity);

#endif
