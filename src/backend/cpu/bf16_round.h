/* bf16_round.h: float32 values rounded to bfloat16 (round to nearest, ties
 * to even; a NaN stays a quiet NaN of the same sign), the one rounding of
 * AX_PRECISION_BF16: bf16_gemm.c's operands and onednn_conv_bf16.c's
 * convolution operands go through it, so both paths multiply the same
 * values. */
#ifndef AX_BACKEND_CPU_BF16_ROUND_H
#define AX_BACKEND_CPU_BF16_ROUND_H

#include <stdint.h>

/* The bits of float32 u rounded to bfloat16, in the upper half (the lower
 * half zero): a float32 holding the bfloat16 value. No branch, so loops of
 * it vectorise. */
static inline uint32_t ax_bf16_round_bits(uint32_t u)
{
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    const uint32_t quiet = (u | 0x00400000u) & 0xffff0000u;
    return (u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* ax_bf16_round_bits of 16 values at once (AVX-512F; the caller checks
 * the CPU): float32 values holding their bfloat16 roundings. */
__attribute__((target("avx512f"))) static inline __m512 ax_bf16_round16(__m512 values)
{
    const __m512i u = _mm512_castps_si512(values);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_and_si512(
        _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd),
        _mm512_set1_epi32((int)0xffff0000u));
    const __m512i quiet =
        _mm512_and_si512(_mm512_or_si512(u, _mm512_set1_epi32(0x00400000)),
                         _mm512_set1_epi32((int)0xffff0000u));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(
        _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    return _mm512_castsi512_ps(_mm512_mask_blend_epi32(nan, rounded, quiet));
}

/* The same, the 16 bfloat16 values themselves (their bits). */
__attribute__((target("avx512f"))) static inline __m256i ax_bf16_pack16(__m512 values)
{
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(ax_bf16_round16(values)), 16));
}
#endif

/* dst[i] = src[i] rounded to bfloat16, held in float32 (count values;
 * OpenMP threads for large counts, each value alone, so the bits do not
 * depend on the thread count). */
void ax_bf16_round_values(float *dst, const float *src, int64_t count);
/* dst[i] = the bfloat16 (upper 16 bits) of src[i] rounded, as above. */
void ax_bf16_pack_values(uint16_t *dst, const float *src, int64_t count);
/* The two above on the calling thread alone (e.g. inside a parallel
 * region, a slice of the work each). */
void ax_bf16_round_values_serial(float *dst, const float *src, int64_t count);
void ax_bf16_pack_values_serial(uint16_t *dst, const float *src, int64_t count);

#endif
