/* conv_weight_direct.h: the float32 (and bf16, on rounded operands) weight
 * gradient of convolutions with several input channels, straight from the
 * images and the deltas (NHWC) with AVX-512 register tiles, no im2col and
 * no blocked copies (conv_weight_direct.c). oneDNN's jit kernel ran LeNet's
 * second layer at 55-60 % of the FMA loop on a 2-core Xeon, where this
 * reaches about 80 % (docs/notes/conv.md). The batch is summed over the
 * fixed slices of conv_weight_gradient.h, so the bits never depend on the
 * thread count. */
#ifndef AX_BACKEND_CPU_CONV_WEIGHT_DIRECT_H
#define AX_BACKEND_CPU_CONV_WEIGHT_DIRECT_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/cpu/conv_weight_gradient.h"

/* Whether the kernels take this layer: two input channels or more, filters
 * a multiple of 16, at most 2^17 weights (a slice's partial sums stay in a
 * core's L2 cache), a CPU with AVX-512 whose kernels may be used
 * (cpu_features.h), and AXON_CONV_DIRECT not "off". */
bool ax_conv_weight_direct_takes(const ax_window_geometry *geometry, int64_t filters);

/* backend.h's conv_backward_weights in float32, or on operands rounded to
 * bfloat16 (round_bf16: bf16_round.h's rounding; float32 products of them
 * are exact, so the sums are bf16's): weight_gradient (filters, channels,
 * kh, kw) = the sum over images and output positions of delta (images,
 * out_height, out_width, filters) times the window values of x (images,
 * height, width, channels). Each slice's value is a chain of FMAs from 0
 * over its positions in order (image, output row, output column); the
 * slices are added in order. Where bias_gradient is not NULL, it gets the
 * sums of delta (unrounded) over the positions in the same pass: in each
 * slice a chain of additions from 0 in the same order, the slices added in
 * order (backend.h: conv_backward_weights_bias). False, with nothing
 * written, when the kernels do not take the layer or scratch cannot be
 * allocated. */
bool ax_conv_weight_direct(ax_conv_weight_scratch *scratch, const ax_window_geometry *geometry,
                           int64_t filters, const float *delta, const float *x,
                           float *weight_gradient, float *bias_gradient, int64_t images,
                           bool round_bf16);

/* The same with the delta made slice by slice from a max pooling's output
 * gradient (backend.h: conv_backward_weights_bias_pooled): the bits of
 * max_pool_backward_relu, then the call above. */
bool ax_conv_weight_direct_pooled(ax_conv_weight_scratch *scratch,
                                  const ax_window_geometry *geometry, int64_t filters,
                                  const ax_pooled_delta *pooled, const float *x,
                                  float *weight_gradient, float *bias_gradient, int64_t images,
                                  bool round_bf16);

/* weight_gradient (filters, channels, kh, kw), torch's order, from sum
 * (kh, kw, channels, filters), the direct kernels' order of their partial
 * sums; bias_gradient (where not NULL) from the `filters` values after
 * them. */
void ax_conv_weight_from_taps(const ax_window_geometry *geometry, int64_t filters,
                              const float *sum, float *weight_gradient, float *bias_gradient);

#endif
