/* amx_tiles.h: what axon's AMX kernels (conv_weight_amx.c,
 * conv_input_amx.c) share: loading a tile configuration, and TDPBF16PS's
 * arithmetic in scalar C for their emulation (AXON_CONV_AMX=emulate), so
 * that tests check the kernels' layouts on any CPU. */
#ifndef AX_BACKEND_CPU_AMX_TILES_H
#define AX_BACKEND_CPU_AMX_TILES_H

#include <stdint.h>

enum { AX_AMX_TILES = 8 };

/* Loads palette 1 with tile t holding rows[t] rows of bytes[t] bytes (0:
 * unused), for this thread until ax_amx_release. Only on a CPU with AMX
 * whose tile state Linux granted (conv_weight_amx.h: ax_conv_amx_mode_chosen). */
void ax_amx_configure(const uint8_t rows[AX_AMX_TILES], const uint16_t bytes[AX_AMX_TILES]);
void ax_amx_release(void);

/* c (rows x 16 float32, c_stride floats apart) += a (rows x k bf16,
 * a_stride values apart) times b (k / 2 rows of 16 pairs, b_stride values
 * apart; pair j of row p holds column j's values at k = 2p and 2p + 1), as
 * TDPBF16PS computes it: each pair's two exact products added to the sum
 * in turn, subnormal bf16 inputs and float32 sums as zero (AMX's DAZ and
 * FTZ). */
void ax_amx_dpbf16ps_emulated(float *c, int64_t c_stride, const uint16_t *a, int64_t a_stride,
                              const uint16_t *b, int64_t b_stride, int rows, int64_t k);

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* out[c] = column c of the 16 x 16 block of floats at in (rows stride apart) */
__attribute__((target("avx512f"))) static inline void ax_transpose_16x16(const float *in,
                                                                         int64_t stride,
                                                                         __m512 out[16])
{
    __m512 r[16], t[16], u[16], v[16];
    for (int k = 0; k < 16; k++)
        r[k] = _mm512_loadu_ps(in + k * stride);
    for (int k = 0; k < 16; k += 2) {
        t[k] = _mm512_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm512_unpackhi_ps(r[k], r[k + 1]);
    }
    for (int k = 0; k < 16; k += 4) {
        u[k] = _mm512_shuffle_ps(t[k], t[k + 2], 0x44);
        u[k + 1] = _mm512_shuffle_ps(t[k], t[k + 2], 0xEE);
        u[k + 2] = _mm512_shuffle_ps(t[k + 1], t[k + 3], 0x44);
        u[k + 3] = _mm512_shuffle_ps(t[k + 1], t[k + 3], 0xEE);
    }
    for (int k = 0; k < 16; k += 8)
        for (int j = 0; j < 4; j++) {
            v[k + j] = _mm512_shuffle_f32x4(u[k + j], u[k + j + 4], 0x88);
            v[k + j + 4] = _mm512_shuffle_f32x4(u[k + j], u[k + j + 4], 0xDD);
        }
    for (int j = 0; j < 8; j++) {
        out[j] = _mm512_shuffle_f32x4(v[j], v[j + 8], 0x88);
        out[j + 8] = _mm512_shuffle_f32x4(v[j], v[j + 8], 0xDD);
    }
}

#endif

#endif
