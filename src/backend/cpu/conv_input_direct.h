/* conv_input_direct.h: a convolution's input gradient (backend.h:
 * conv_backward_input) with AVX-512 register tiles, float32, stride 1
 * (conv_input_direct.c). oneDNN's backward-data primitive ran LeNet's
 * second layer (12x12x32 -> 64 filters 5x5) at half the float32 peak of an
 * AMX Xeon where its forward pass ran at two thirds; a gather over the
 * zero-padded delta would do 1.5x the work at that shape. Each input value
 * is one thread's sum in a fixed order, so the bits never depend on the
 * thread count. */
#ifndef AX_BACKEND_CPU_CONV_INPUT_DIRECT_H
#define AX_BACKEND_CPU_CONV_INPUT_DIRECT_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"

/* Whether the kernel takes this layer: stride 1, channels a multiple of
 * 16, padding smaller than the kernel, a CPU with AVX-512 whose kernels
 * may be used (cpu_features.h), and AXON_CONV_DIRECT not "off". */
bool ax_conv_input_direct_takes(const ax_window_geometry *geometry, int64_t filters);

/* backend.h's conv_backward_input in float32: previous (images, height, width, channels)
 * = the gradient of the input given delta (images, out_height, out_width,
 * filters) and weights (filters, channels, kh, kw), overwritten. Each
 * value: over the kernel's columns kx in order, the sum over the kernel
 * rows ky in order and the filters in order (a chain of FMAs from 0) of
 * delta times weight, added to the value in turn. False, with nothing
 * written, when the kernel does not take the layer or memory runs out. */
bool ax_conv_input_direct(const ax_window_geometry *geometry, int64_t filters, const float *delta,
                          const float *weights, float *previous, int64_t images);

#endif
