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

#endif
