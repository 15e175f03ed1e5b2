/* conv_input_amx.h: bf16's input gradient of convolutions with channels on
 * AMX's tiles (TDPBF16PS), for CPUs that have them (conv_input_amx.c).
 * oneDNN's AMX backward-data primitive ran LeNet's second layer (12x12x32 ->
 * 64 filters 5x5) at 230-330 GFLOP/s on a 2-core AMX Xeon, the largest part
 * of a bf16 LeNet step there (docs/notes/conv.md). Each input value is one
 * thread's sum in a fixed order, so the bits never depend on the thread
 * count. The mode (hardware, emulated, off) is conv_weight_amx.h's. */
#ifndef AX_BACKEND_CPU_CONV_INPUT_AMX_H
#define AX_BACKEND_CPU_CONV_INPUT_AMX_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"

/* Whether the kernel takes this layer: an AMX mode other than off
 * (conv_weight_amx.h), stride 1, channels a multiple of 16, filters a
 * multiple of 32, input rows of at most 16 values, padding smaller than
 * the kernel. */
bool ax_conv_input_amx_takes(const ax_window_geometry *geometry, int64_t filters);

/* backend.h's conv_backward_input in bf16: previous (images, height, width,
 * channels) = the gradient of the input given delta (images, out_height,
 * out_width, filters) and weights (filters, channels, kh, kw), both rounded
 * to bfloat16 (bf16_round.h), their products exact and summed in float32
 * by the tiles (which treat subnormal bf16 inputs and float32 results as
 * zero, as AMX does): each value the tiles' sum over the kernel's taps in
 * row order (skipping rows that reach no output row) and the filters in
 * blocks of 32. Overwritten. False, with nothing written, when the kernel
 * does not take the layer or memory runs out. */
bool ax_conv_input_amx(const ax_window_geometry *geometry, int64_t filters, const float *delta,
                       const float *weights, float *previous, int64_t images);

#endif
