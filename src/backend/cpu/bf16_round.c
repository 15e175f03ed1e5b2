/* bf16_round.c: arrays rounded to bfloat16 (bf16_round.h). */
#include "backend/cpu/bf16_round.h"


/* Below this many values one thread rounds them: about 0.25 ns a value,
 * so 64K values take 16 us, where starting a team costs 1-2 us. */
#define ROUND_PARALLEL_MIN (INT64_C(1) << 16)

void ax_bf16_round_values(float *dst, const float *src, int64_t count)
{
    const uint32_t *in = (const uint32_t *)src;
    uint32_t *out = (uint32_t *)dst;
#pragma omp parallel for simd schedule(static) if (count >= ROUND_PARALLEL_MIN)
    for (int64_t i = 0; i < count; i++)
        out[i] = ax_bf16_round_bits(in[i]);
}

void ax_bf16_pack_values(uint16_t *dst, const float *src, int64_t count)
{
    const uint32_t *in = (const uint32_t *)src;
#pragma omp parallel for simd schedule(static) if (count >= ROUND_PARALLEL_MIN)
    for (int64_t i = 0; i < count; i++)
        dst[i] = (uint16_t)(ax_bf16_round_bits(in[i]) >> 16);
}
