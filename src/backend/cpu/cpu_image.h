/* cpu_image.h: the CPU backend's image operations (cpu_image.c), for its
 * table in cpu_backend.c; see backend.h for what each does. */
#ifndef AX_BACKEND_CPU_IMAGE_H
#define AX_BACKEND_CPU_IMAGE_H

#include "backend/backend.h"

#define AX_CPU_IMAGE_DECLARE(suffix)                                                          \
    void ax_cpu_im2col_##suffix(ax_backend *backend, const ax_window_geometry *geometry,      \
                                const void *x, void *columns, int64_t images);                \
    void ax_cpu_col2im_##suffix(ax_backend *backend, const ax_window_geometry *geometry,      \
                                const void *columns, void *x, int64_t images);                \
    void ax_cpu_pool_forward_##suffix(ax_backend *backend, bool max,                          \
                                      const ax_window_geometry *geometry, const void *x,      \
                                      void *y, int64_t images);                               \
    void ax_cpu_pool_backward_##suffix(ax_backend *backend, bool max,                         \
                                       const ax_window_geometry *geometry, const void *x,     \
                                       const void *dy, void *dx, int64_t images);             \
    void ax_cpu_max_pool_backward_relu_##suffix(ax_backend *backend,                          \
                                                const ax_window_geometry *geometry,           \
                                                const void *x, const void *dy, void *dx,      \
                                                int64_t images);                              \
    void ax_cpu_transpose_##suffix(ax_backend *backend, const void *src, void *dst,           \
                                   int64_t batches, int64_t rows, int64_t cols);
AX_CPU_IMAGE_DECLARE(f32)
AX_CPU_IMAGE_DECLARE(f64)
#undef AX_CPU_IMAGE_DECLARE

#endif
