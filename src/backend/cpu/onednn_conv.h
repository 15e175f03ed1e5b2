/* onednn_conv.h: float32 convolutions of the CPU backend through oneDNN
 * (built when CMake's AXON_ONEDNN finds libdnnl-dev 2.x; docs/notes/conv.md
 * says which passes use it and why). Images stay in axon's (row, column,
 * channel) order and weights in torch's (filters, channels, kh, kw): each
 * call reorders the weights into oneDNN's blocked layout, which is part of
 * what was measured against im2col + GEMM. */
#ifndef AX_BACKEND_CPU_ONEDNN_CONV_H
#define AX_BACKEND_CPU_ONEDNN_CONV_H

#include "backend/backend.h"

/* A backend's oneDNN state: an engine, a stream and the primitives of the
 * shapes met so far (created on first use of a shape, kept for later
 * calls); created by the first call, owned by the backend. */
typedef struct ax_onednn_convs ax_onednn_convs;

/* z (images, out_height, out_width, filters) = x (images, height, width,
 * channels) convolved with weights (filters, channels, kernel_height,
 * kernel_width), no bias. False, with nothing written, when oneDNN cannot
 * take it (out of memory creating the primitive): the caller then runs its
 * own path. */
bool ax_onednn_conv_forward(ax_onednn_convs **convs, const ax_window_geometry *geometry,
                            int64_t filters, const float *x, const float *weights, float *z,
                            int64_t images);
/* previous (images, height, width, channels) = the gradient of the input of
 * that convolution given delta (images, out_height, out_width, filters), the
 * gradient of its output. False as above. */
bool ax_onednn_conv_backward_input(ax_onednn_convs **convs, const ax_window_geometry *geometry,
                                   int64_t filters, const float *delta, const float *weights,
                                   float *previous, int64_t images);
/* Frees the state (NULL is fine). */
void ax_onednn_convs_free(ax_onednn_convs *convs);

#endif
