/* conv_one_channel.h: direct float32 and bf16 convolutions of single-channel images
 * (a grayscale first layer: LeNet's 28x28x1 Fashion-MNIST images), forward
 * pass and weight gradient, with AVX-512 register tiles (conv_one_channel.c).
 * At one input channel a convolution's reduction is only kh x kw long, too
 * short for a GEMM (im2col + sgemm) or oneDNN's blocked kernels to keep their
 * FMA pipes busy: both ran LeNet's first layer at a quarter of the peak of a
 * Xeon that runs the second at half (docs/notes/conv.md). Each output value is
 * one thread's sum in a fixed order, and the weight gradient sums fixed slices
 * of the batch (conv_weight_gradient.h), so the bits never depend on the
 * thread count. */
#ifndef AX_BACKEND_CPU_CONV_ONE_CHANNEL_H
#define AX_BACKEND_CPU_CONV_ONE_CHANNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/cpu/conv_weight_gradient.h"

/* Whether the kernels take this layer: one input channel, filters a
 * multiple of 16, a kernel at most 12 wide, a CPU with AVX-512 whose
 * kernels may be used (cpu_features.h), and AXON_CONV_DIRECT not "off". */
bool ax_conv_one_channel_takes(const ax_window_geometry *geometry, int64_t filters);

/* backend.h's conv_forward in float32, or in bf16 (round_bf16: both operands
 * rounded to bfloat16 by bf16_round.h's rounding, float32 sums of their
 * exact products in the same order; for the bf16 backend, where oneDNN's
 * bf16 kernels, AMX among them, pad one channel to a block and ran LeNet's
 * first layer 2.7x slower than float32's on a Sapphire Rapids,
 * docs/notes/conv.md): z (images, out_height, out_width, filters) = x
 * (images, height, width, 1) convolved with weights (filters, 1, kh, kw);
 * each output the sum over the window in row order, a chain of FMAs from
 * 0. False, with nothing written, when the kernels do not take the layer or
 * memory runs out. */
bool ax_conv_one_channel_forward(const ax_window_geometry *geometry, int64_t filters,
                                 const float *x, const float *weights, float *z, int64_t images,
                                 bool round_bf16);

/* backend.h's conv_forward_bias_activation, float32 or bf16 as above: the
 * forward pass with the bias added and the activation applied to each sum
 * in registers, bias_activation's bits; identity and ReLU only (false, with
 * nothing written, for the others). */
bool ax_conv_one_channel_forward_bias_activation(const ax_window_geometry *geometry,
                                                 int64_t filters, const float *x,
                                                 const float *weights, const float *bias,
                                                 ax_activation activation, float *z,
                                                 int64_t images, bool round_bf16);

/* backend.h's conv_forward_relu_max_pool, float32 or bf16 as above: the
 * forward pass with bias and ReLU into y, and the 2x2 max pooling of
 * stride 2 (pool: its geometry; it must tile y) into pooled and codes, from
 * the sums in registers (each tile two output rows). False, with nothing
 * written, for another pooling or where the forward pass declines. */
bool ax_conv_one_channel_forward_relu_max_pool(const ax_window_geometry *geometry,
                                               int64_t filters, const ax_window_geometry *pool,
                                               const float *x, const float *weights,
                                               const float *bias, float *y, float *pooled,
                                               uint8_t *codes, int64_t images, bool round_bf16);

/* backend.h's conv_backward_weights, float32 or bf16 as above, over the
 * weight gradient's slices (scratch: the backend's); where bias_gradient
 * is not NULL, also the sums of delta (unrounded) over the positions, in
 * each slice a chain of additions in position order, the slices added in
 * order (backend.h: conv_backward_weights_bias); false, with nothing
 * written, as above. */
bool ax_conv_one_channel_weight_gradient(ax_conv_weight_scratch *scratch,
                                         const ax_window_geometry *geometry, int64_t filters,
                                         const float *delta, const float *x,
                                         float *weight_gradient, float *bias_gradient,
                                         int64_t images, bool round_bf16);

/* The same with the delta made slice by slice from a max pooling's output
 * gradient (backend.h: conv_backward_weights_bias_pooled): the bits of
 * max_pool_backward_relu, then the call above. */
bool ax_conv_one_channel_weight_gradient_pooled(ax_conv_weight_scratch *scratch,
                                                const ax_window_geometry *geometry,
                                                int64_t filters, const ax_pooled_delta *pooled,
                                                const float *x, float *weight_gradient,
                                                float *bias_gradient, int64_t images,
                                                bool round_bf16);

#endif
