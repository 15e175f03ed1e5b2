/* onednn_conv.h: float32 and bf16 convolutions of the CPU backend through
 * oneDNN (built when CMake's AXON_ONEDNN finds libdnnl-dev 2.x;
 * docs/notes/conv.md says which passes use it and why). Images stay in axon's (row, column,
 * channel) order and weights in torch's (filters, channels, kh, kw): each
 * call reorders the weights into oneDNN's blocked layout, which is part of
 * what was measured against im2col + GEMM. */
#ifndef AX_BACKEND_CPU_ONEDNN_CONV_H
#define AX_BACKEND_CPU_ONEDNN_CONV_H

#include "backend/backend.h"
#include "backend/cpu/conv_weight_gradient.h"

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
/* weight_gradient (filters, channels, kernel_height, kernel_width) = the
 * sum over images of the gradients of the weights of that convolution,
 * given x and delta as above: oneDNN's backward-weights primitive on each
 * of conv_weight_gradient.h's slices of the batch, on one thread each,
 * their partial sums added in slice order (in scratch), so the bits do
 * not depend on the thread count. False, with nothing written, when
 * oneDNN cannot take it or memory runs out: the caller then runs the GEMM
 * product (ax_cpu_conv_weight_gradient). */
bool ax_onednn_conv_backward_weights(ax_onednn_convs **convs, ax_conv_weight_scratch *scratch,
                                     const ax_window_geometry *geometry, int64_t filters,
                                     const float *delta, const float *x, float *weight_gradient,
                                     int64_t images);
/* False when AXON_ONEDNN_CONV=off asks for no oneDNN convolutions at all
 * (float32 and bf16 then run im2col + GEMM, as a build without oneDNN). */
bool ax_onednn_conv_enabled(void);
/* Frees the state (NULL is fine). */
void ax_onednn_convs_free(ax_onednn_convs *convs);

/* bf16 convolutions (onednn_conv_bf16.c): operands rounded to bfloat16
 * (bf16_round.h), products exact, sums and outputs float32.
 * NATIVE: oneDNN's bf16 primitives (bf16 images or deltas and weights in,
 * float32 out), for CPUs where oneDNN has bf16 instructions (AVX512_BF16,
 * AMX). ROUNDED: oneDNN's float32 primitives on copies of the operands
 * rounded to bfloat16 (a product of two bfloat16 values is exact in
 * float32, so the roundings are the same). OFF: none (the layer's im2col +
 * bf16 GEMM). */
typedef enum ax_onednn_bf16_mode {
    AX_ONEDNN_BF16_OFF,
    AX_ONEDNN_BF16_ROUNDED,
    AX_ONEDNN_BF16_NATIVE,
} ax_onednn_bf16_mode;
/* OFF when AXON_ONEDNN_CONV=off; else the mode AXON_ONEDNN_BF16 asks for
 * (native, rounded or off); unset or
 * anything else (auto): NATIVE where oneDNN's effective ISA has AMX
 * (avx512_core_amx), or has avx512_core_bf16 and bf16_gemm.h's probe finds
 * VDPBF16PS faster than float32 FMAs; else ROUNDED. */
ax_onednn_bf16_mode ax_onednn_bf16_mode_chosen(void);
/* The entries above in mode (ROUNDED or NATIVE) for bf16; false, with
 * nothing written, when oneDNN cannot create that mode's primitive (NATIVE
 * on a CPU where oneDNN has no bf16 kernels) or memory runs out. */
bool ax_onednn_conv_forward_bf16(ax_onednn_convs **convs, ax_onednn_bf16_mode mode,
                                 const ax_window_geometry *geometry, int64_t filters,
                                 const float *x, const float *weights, float *z, int64_t images);
bool ax_onednn_conv_backward_input_bf16(ax_onednn_convs **convs, ax_onednn_bf16_mode mode,
                                        const ax_window_geometry *geometry, int64_t filters,
                                        const float *delta, const float *weights,
                                        float *previous, int64_t images);

/* The weight gradient above in bf16: each slice's images and deltas
 * rounded to bfloat16 on its thread, then oneDNN's bf16 primitive (NATIVE)
 * or float32 one (ROUNDED); float32 sums. False as above (OFF: always). */
bool ax_onednn_conv_backward_weights_bf16(ax_onednn_convs **convs,
                                          ax_conv_weight_scratch *scratch,
                                          ax_onednn_bf16_mode mode,
                                          const ax_window_geometry *geometry, int64_t filters,
                                          const float *delta, const float *x,
                                          float *weight_gradient, int64_t images);

/* Between onednn_conv.c and onednn_conv_bf16.c. */
typedef enum ax_onednn_conv_pass {
    AX_ONEDNN_CONV_FORWARD,
    AX_ONEDNN_CONV_INPUT_GRADIENT,
} ax_onednn_conv_pass;
/* F32: in, weights and out float32. BF16: in and weights bfloat16
 * (uint16_t, the upper half of a float32), out float32. */
typedef enum ax_onednn_conv_type {
    AX_ONEDNN_CONV_F32,
    AX_ONEDNN_CONV_BF16,
} ax_onednn_conv_type;
/* One pass of the convolution of the entries above, in (the images or the
 * deltas) and weights of type. */
bool ax_onednn_conv_run(ax_onednn_convs **convs, ax_onednn_conv_pass pass,
                        ax_onednn_conv_type type, const ax_window_geometry *geometry,
                        int64_t filters, const void *in, const void *weights, float *out,
                        int64_t images);
/* Scratch memory of at least bytes (64-byte aligned), kept by the state
 * and grown to the largest asked for (so a warm training step allocates
 * nothing); NULL when out of memory. */
void *ax_onednn_convs_staging(ax_onednn_convs **convs, size_t bytes);

#endif
