/* onednn_conv_bf16.c: the bf16 backend's convolution forward pass and input
 * gradient through oneDNN (onednn_conv.h): the float32 operands are rounded
 * to bfloat16 by axon's own rounding (bf16_round.h, the bf16 GEMM's), into
 * the state's staging memory, then one of onednn_conv.c's primitives runs.
 * NATIVE packs them as bf16 for oneDNN's bf16 kernels (weights then
 * reordered bf16 -> bf16 blocked, a copy: oneDNN's own f32 -> bf16 reorder
 * is not asked to round). ROUNDED keeps them as float32 holding bfloat16
 * values and runs the float32 primitive: the same exact products, oneDNN's
 * float32 sum order. Either way each output is one thread's sum, so the bits
 * do not depend on the thread count. */
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/bf16_gemm.h"
#include "backend/cpu/bf16_round.h"
#include "backend/cpu/onednn_conv.h"

ax_onednn_bf16_mode ax_onednn_bf16_mode_chosen(void)
{
    const char *asked = getenv("AXON_ONEDNN_BF16");
    if (!ax_onednn_conv_enabled() || (asked && strcmp(asked, "off") == 0))
        return AX_ONEDNN_BF16_OFF;
    if (asked && strcmp(asked, "rounded") == 0)
        return AX_ONEDNN_BF16_ROUNDED;
    if (asked && strcmp(asked, "native") == 0)
        return AX_ONEDNN_BF16_NATIVE;
    /* AMX's tiles (oneDNN's brgconv) are far faster than float32 FMAs. Without
     * them oneDNN's bf16 kernels are VDPBF16PS, which some Xeons run at half
     * the rate of float32 FMAs: bf16_gemm.c's probe says whether this one
     * runs it faster. The ISA masks nest (dnnl_types.h). */
    const unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    const unsigned amx = (unsigned)dnnl_cpu_isa_avx512_core_amx;
    const unsigned bf16 = (unsigned)dnnl_cpu_isa_avx512_core_bf16;
    if ((isa & amx) == amx || ((isa & bf16) == bf16 && ax_bf16_cpu_native()))
        return AX_ONEDNN_BF16_NATIVE;
    return AX_ONEDNN_BF16_ROUNDED;
}

/* Rounds in (in_count values) and weights into the staging memory and runs
 * the pass on them. */
static bool run_staged(ax_onednn_convs **convs, ax_onednn_bf16_mode mode,
                        ax_onednn_conv_pass pass, const ax_window_geometry *geometry,
                        int64_t filters, const float *in, int64_t in_count,
                        const float *weights, float *out, int64_t images)
{
    const int64_t weight_count =
        filters * geometry->channels * geometry->kernel_height * geometry->kernel_width;
    const bool native = mode == AX_ONEDNN_BF16_NATIVE;
    const size_t value_size = native ? sizeof(uint16_t) : sizeof(float);
    /* the weights first, their start 64-byte aligned as the images' */
    const size_t weight_bytes = ((size_t)weight_count * value_size + 63) & ~(size_t)63;
    char *staging = ax_onednn_convs_staging(convs, weight_bytes + (size_t)in_count * value_size);
    if (!staging)
        return false;
    void *weights_staged = staging, *in_staged = staging + weight_bytes;
    if (native) {
        ax_bf16_pack_values(weights_staged, weights, weight_count);
        ax_bf16_pack_values(in_staged, in, in_count);
    } else {
        ax_bf16_round_values(weights_staged, weights, weight_count);
        ax_bf16_round_values(in_staged, in, in_count);
    }
    return ax_onednn_conv_run(convs, pass, native ? AX_ONEDNN_CONV_BF16 : AX_ONEDNN_CONV_F32,
                              geometry, filters, in_staged, weights_staged, out, images);
}

bool ax_onednn_conv_forward_bf16(ax_onednn_convs **convs, ax_onednn_bf16_mode mode,
                                 const ax_window_geometry *geometry, int64_t filters,
                                 const float *x, const float *weights, float *z, int64_t images)
{
    if (mode == AX_ONEDNN_BF16_OFF)
        return false;
    const int64_t in_count = images * geometry->height * geometry->width * geometry->channels;
    return run_staged(convs, mode, AX_ONEDNN_CONV_FORWARD, geometry, filters, x, in_count,
                       weights, z, images);
}

bool ax_onednn_conv_backward_input_bf16(ax_onednn_convs **convs, ax_onednn_bf16_mode mode,
                                        const ax_window_geometry *geometry, int64_t filters,
                                        const float *delta, const float *weights,
                                        float *previous, int64_t images)
{
    if (mode == AX_ONEDNN_BF16_OFF)
        return false;
    const int64_t in_count = images * geometry->out_height * geometry->out_width * filters;
    return run_staged(convs, mode, AX_ONEDNN_CONV_INPUT_GRADIENT, geometry, filters, delta,
                       in_count, weights, previous, images);
}
