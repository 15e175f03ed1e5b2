/* conv_weight_amx.h: bf16's weight gradient of convolutions with channels
 * on AMX's tiles (TDPBF16PS), for CPUs that have them (Sapphire Rapids and
 * later Xeons). oneDNN's AMX backward-weights primitive ran LeNet's second
 * layer at about 60 GFLOP/s a core over the batch's fixed slices (8 images
 * each), slower than float32's FMAs; these tiles are made for such small
 * slices (conv_weight_amx.c, docs/notes/conv.md). The batch is summed over
 * the fixed slices of conv_weight_gradient.h, so the bits never depend on
 * the thread count. */
#ifndef AX_BACKEND_CPU_CONV_WEIGHT_AMX_H
#define AX_BACKEND_CPU_CONV_WEIGHT_AMX_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/cpu/conv_weight_gradient.h"

/* How the kernel's tile products run: not at all (AXON_CONV_AMX=off or
 * AXON_CONV_DIRECT=off, no AMX, Linux refusing this process the tile
 * state, AXON_CPU_KERNELS=generic), on AMX, or emulated in scalar C with
 * the same layouts and order (AXON_CONV_AMX=emulate, which wins over the
 * rest: for tests on CPUs without AMX; slow). */
typedef enum ax_conv_amx_mode {
    AX_CONV_AMX_OFF,
    AX_CONV_AMX_HARDWARE,
    AX_CONV_AMX_EMULATED,
} ax_conv_amx_mode;

/* The mode for this process: AXON_CONV_AMX read now; the CPU and Linux's
 * grant of the tile state asked once. */
ax_conv_amx_mode ax_conv_amx_mode_chosen(void);

/* Whether the kernel takes this layer: a mode other than off, stride 1,
 * channels and filters multiples of 16, output rows of at most 32
 * positions, at most 2^17 weights. */
bool ax_conv_weight_amx_takes(const ax_window_geometry *geometry, int64_t filters);

/* backend.h's conv_backward_weights in bf16: weight_gradient (filters,
 * channels, kh, kw) = the sum over images and output positions of delta
 * (images, out_height, out_width, filters) times the window values of x
 * (images, height, width, channels), both rounded to bfloat16 (bf16_round.h),
 * their products exact and summed in float32 by the tiles (which treat
 * subnormal bf16 inputs and float32 results as zero, as AMX does). Each
 * slice's value is the tiles' sum over its positions in order (image,
 * group of output rows); the slices are added in order. Where
 * bias_gradient is not NULL, it gets the sums of delta (unrounded), in
 * each slice a chain of additions from 0 in position order, the slices
 * added in order: conv_weight_direct.h's bits. False, with nothing
 * written, when the kernel does not take the layer or scratch cannot be
 * allocated. */
bool ax_conv_weight_amx(ax_conv_weight_scratch *scratch, const ax_window_geometry *geometry,
                        int64_t filters, const float *delta, const float *x,
                        float *weight_gradient, float *bias_gradient, int64_t images);

#endif
