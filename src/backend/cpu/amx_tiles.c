/* amx_tiles.c: see amx_tiles.h. */
#include "backend/cpu/amx_tiles.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* ldtilecfg's 64 bytes (palette 1) */
typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t columns_bytes[16];
    uint8_t rows[16];
} tile_config;

__attribute__((target("amx-tile"))) void ax_amx_configure(const uint8_t rows[AX_AMX_TILES],
                                                          const uint16_t bytes[AX_AMX_TILES])
{
    _Alignas(64) tile_config config;
    memset(&config, 0, sizeof config);
    config.palette = 1;
    for (int t = 0; t < AX_AMX_TILES; t++) {
        config.rows[t] = rows[t];
        config.columns_bytes[t] = bytes[t];
    }
    /* not _tile_loadconfig: GCC 12's asm names 8 bytes of its operand, so
     * the compiler may drop the stores to the rest as dead */
    __asm__ volatile("ldtilecfg %0" : : "m"(config) : "memory");
}

__attribute__((target("amx-tile"))) void ax_amx_release(void) { _tile_release(); }
#else
void ax_amx_configure(const uint8_t rows[AX_AMX_TILES], const uint16_t bytes[AX_AMX_TILES])
{
    (void)rows, (void)bytes;
}

void ax_amx_release(void) {}
#endif

/* bf16 bits to float32, a subnormal as zero (AMX's DAZ) */
static float bf16_value(uint16_t v)
{
    const uint32_t u = (v & 0x7f80u) ? (uint32_t)v << 16 : (uint32_t)(v & 0x8000u) << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void ax_amx_dpbf16ps_emulated(float *c, int64_t c_stride, const uint16_t *a, int64_t a_stride,
                              const uint16_t *b, int64_t b_stride, int rows, int64_t k)
{
    for (int m = 0; m < rows; m++)
        for (int n = 0; n < 16; n++) {
            float sum = c[m * c_stride + n];
            for (int64_t pair = 0; pair < k / 2; pair++)
                for (int e = 0; e < 2; e++) {
                    sum = fmaf(bf16_value(a[m * a_stride + 2 * pair + e]),
                               bf16_value(b[pair * b_stride + 2 * n + e]), sum);
                    if (fabsf(sum) < 0x1p-126f)
                        sum = copysignf(0.0f, sum);
                }
            c[m * c_stride + n] = sum;
        }
}
