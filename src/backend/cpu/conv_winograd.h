/* conv_winograd.h: 5x5 convolutions of stride 1 by Winograd's minimal
 * filtering (Lavin and Gray 2016), float32: F(4x4, 5x5) for the forward
 * pass and the input gradient, F(5x5, 4x4) for the weight gradient
 * (conv_winograd.c; the weight gradient's own comments are below).
 *
 * Each 4x4 tile of outputs comes from an 8x8 tile of inputs with 64
 * products per (tile, channel, filter) where a direct convolution makes
 * 400: the inputs' and the weights' tiles are transformed (B^T d B,
 * G g G^T), multiplied position by position as 64 small GEMMs over the
 * channels, and transformed back (A^T m A). At LeNet's second layer on a
 * 2-core AMX Xeon that ran the forward pass and the input gradient faster
 * than oneDNN's direct kernels (docs/notes/conv.md, dev/winograd_conv.sh).
 * oneDNN 2.6 has Winograd for 3x3 kernels only.
 *
 * The results are not a direct convolution's bits: each output is a sum
 * of transformed products, about 4x the direct sum's rounding error (at
 * LeNet's second layer, 7e-6 of the largest output against 2e-6;
 * tests/test_conv_winograd.c bounds it against float64). Each output
 * value is one thread's, computed the same way whatever the blocking
 * (the input gradient's: the same patches added in the same order), so
 * the bits do not depend on the thread count. AXON_CONV_WINOGRAD=off
 * leaves these passes to oneDNN's (or the direct) kernels. */
#ifndef AX_BACKEND_CPU_CONV_WINOGRAD_H
#define AX_BACKEND_CPU_CONV_WINOGRAD_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"

/* Whether the forward pass of this layer goes here: a 5x5 kernel of
 * stride 1, padding at most 4, channels in 16s, filters in 32s (each at
 * most 1024), a CPU with AVX-512 whose kernels may be used
 * (cpu_features.h), and AXON_CONV_WINOGRAD not "off". */
bool ax_conv_winograd_forward_takes(const ax_window_geometry *geometry, int64_t filters);
/* Whether its input gradient does: the same with the roles swapped
 * (filters in 16s, channels in 32s). */
bool ax_conv_winograd_input_takes(const ax_window_geometry *geometry, int64_t filters);

/* backend.h's conv_forward in float32: z (images, out_height, out_width,
 * filters) from x (images, height, width, channels) and weights (filters,
 * channels, 5, 5), overwritten. False, with nothing written, when this
 * does not take the layer or memory runs out. */
bool ax_conv_winograd_forward(const ax_window_geometry *geometry, int64_t filters, const float *x,
                              const float *weights, float *z, int64_t images);

/* backend.h's conv_backward_input in float32: previous (images, height,
 * width, channels) from delta (images, out_height, out_width, filters) and
 * the same weights, overwritten: the forward algorithm transposed, over
 * the forward pass's tiles (the delta's 4x4 tiles, each giving an 8x8
 * patch of the input gradient; overlapping patches are added in the
 * tiles' order, each image by one thread): at LeNet's second layer 4
 * tiles an image where the forward pass of the delta padded by 4 -
 * padding takes 9 (2.25x the products). False, with nothing written, as
 * above. */
bool ax_conv_winograd_backward_input(const ax_window_geometry *geometry, int64_t filters,
                                     const float *delta, const float *weights, float *previous,
                                     int64_t images);

/* Whether the weight gradient of this layer goes here: a 5x5 kernel of
 * stride 1, padding at most 4, channels and filters in 16s, filters times
 * channels at most 2^14, a CPU with AVX-512, AXON_CONV_WINOGRAD not "off". */
bool ax_conv_winograd_weights_takes(const ax_window_geometry *geometry, int64_t filters);

/* backend.h's conv_backward_weights in float32 by F(5x5, 4x4): weight_gradient
 * (filters, channels, 5, 5) = the sum over the images and positions of
 * delta (images, out_height, out_width, filters) times the input x
 * (images, height, width, channels) under each position, overwritten. Each
 * 4x4 tile of the delta and the 8x8 input patch under it make 64
 * transformed products per (filter, channel); the tiles are summed in
 * slices of 32 images, in order, and the slices added in order, so the bits
 * depend on the batch, never on the thread count. False, with nothing
 * written, when this does not take the layer or memory runs out. */
bool ax_conv_winograd_weight_gradient(const ax_window_geometry *geometry, int64_t filters,
                                      const float *delta, const float *x, float *weight_gradient,
                                      int64_t images);

/* The three passes above for bf16 (AX_PRECISION_BF16): the same
 * arithmetic on the operands (x, delta, weights) rounded to bfloat16 as
 * they are read (bf16_round.h), the transforms and sums in float32, as
 * the bf16 backend's "rounded" kernels (onednn_conv_bf16.h): the results
 * are the float32 pass's on operands rounded beforehand, bit for bit
 * (tests/test_conv_winograd.c). Not AMX's bf16 products: the transformed
 * values rounded to bf16 gave 38x a direct bf16 convolution's error at
 * LeNet's second layer (docs/notes/conv.md). */
bool ax_conv_winograd_forward_bf16(const ax_window_geometry *geometry, int64_t filters,
                                   const float *x, const float *weights, float *z,
                                   int64_t images);
bool ax_conv_winograd_backward_input_bf16(const ax_window_geometry *geometry, int64_t filters,
                                          const float *delta, const float *weights,
                                          float *previous, int64_t images);
bool ax_conv_winograd_weight_gradient_bf16(const ax_window_geometry *geometry, int64_t filters,
                                           const float *delta, const float *x,
                                           float *weight_gradient, int64_t images);

#endif
