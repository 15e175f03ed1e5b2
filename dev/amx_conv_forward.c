/* dev/amx_conv_forward.c: can a direct bf16 convolution on AMX's tiles beat
 * float32's Winograd at LeNet's second layer (12x12x32 -> 64, 5x5)? Issue
 * 28's bf16 target needs bf16's conv2 well under float32's Winograd time.
 *
 * The forward pass, direct, with each image's rows flattened: output
 * position p = oy * 12 + ox (ox 8-11 junk, 96 positions a image, 1.5x the
 * products) reads input position p + ky * 12 + kx, so a tap's A tile is 16
 * consecutive positions x 32 channels (bf16), one strided load; B tiles
 * (16 channel pairs x 16 filters) are the weights packed once; four C
 * tiles (32 positions x 32 filters) stay in the registers over the 25
 * taps. Checked against float64 on the bf16-rounded operands; timed
 * against ax_conv_winograd_forward, alternating, and beside it the tile
 * product's own rate (TDPBF16PS alone, and with four tile loads from L1 a
 * four products): the ceiling of any AMX kernel on this CPU.
 *
 * build and run: dev/amx_conv_forward.sh (after building axon_static). */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/cpu/amx_tiles.h"
#include "backend/cpu/bf16_round.h"
#include "backend/cpu/conv_weight_amx.h"
#include "backend/cpu/conv_winograd.h"

enum { H = 12, W = 12, C = 32, F = 64, K = 5, OH = 8, OW = 8, ROWS = OH * W /* 96 */,
       XROWS = H * W + 16 };

static uint16_t bf16_bits(float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    return (uint16_t)(ax_bf16_round_bits(u) >> 16);
}

static float bf16_value(uint16_t bits)
{
    const uint32_t u = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median7(double v[7])
{
    qsort(v, 7, sizeof *v, by_value);
    return v[3];
}

static void configure(void)
{
    uint8_t rows[8]; uint16_t bytes[8];
    for (int t = 0; t < 8; t++) { rows[t] = 16; bytes[t] = 64; }
    ax_amx_configure(rows, bytes);
}

/* wb: (tap, filter block of 16) tiles: 16 pairs of channels x 16 filters x 2 */
static void pack_weights(const float *w, uint16_t *wb)
{
    for (int t = 0; t < K * K; t++)
        for (int fblk = 0; fblk < F / 16; fblk++)
            for (int pair = 0; pair < 16; pair++)
                for (int j = 0; j < 16; j++)
                    for (int e = 0; e < 2; e++)
                        wb[((t * (F / 16) + fblk) * 16 + pair) * 32 + 2 * j + e] =
                            bf16_bits(w[((fblk * 16 + j) * C + 2 * pair + e) * K * K + t]);
}

__attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw"))) static void forward(const float *x, const uint16_t *wb, float *y, int64_t n)
{
#pragma omp parallel
    {
        uint16_t *xb = aligned_alloc(64, XROWS * C * 2);
        float *scratch = aligned_alloc(64, ROWS * F * 4);
        memset(xb, 0, XROWS * C * 2);
        configure();
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i++) {
            const float *xi = x + i * H * W * C;
            for (int p = 0; p < H * W * C; p += 16)
                _mm256_storeu_si256((__m256i *)(xb + p), ax_bf16_pack16(_mm512_loadu_ps(xi + p)));
            __asm__ volatile("" ::: "memory");
            /* (a variant with the kernel rows outermost, a row's B tiles in L1
             * and the sums through scratch between rows, ran 0.9x this) */
            for (int rp = 0; rp < ROWS / 32; rp++)
                for (int fp = 0; fp < F / 32; fp++) {
                    _tile_zero(0);
                    _tile_zero(1);
                    _tile_zero(2);
                    _tile_zero(3);
                    for (int ky = 0; ky < K; ky++)
                        for (int kx = 0; kx < K; kx++) {
                            const int t = ky * K + kx, off = ky * W + kx;
                            _tile_loadd(4, xb + (32 * rp + off) * C, C * 2);
                            _tile_loadd(6, wb + (t * (F / 16) + 2 * fp) * 512, 64);
                            _tile_loadd(7, wb + (t * (F / 16) + 2 * fp + 1) * 512, 64);
                            _tile_dpbf16ps(0, 4, 6);
                            _tile_dpbf16ps(1, 4, 7);
                            _tile_loadd(5, xb + (32 * rp + 16 + off) * C, C * 2);
                            _tile_dpbf16ps(2, 5, 6);
                            _tile_dpbf16ps(3, 5, 7);
                        }
                    float *s0 = scratch + (32 * rp) * F + 32 * fp;
                    _tile_stored(0, s0, F * 4);
                    _tile_stored(1, s0 + 16, F * 4);
                    _tile_stored(2, s0 + 16 * F, F * 4);
                    _tile_stored(3, s0 + 16 * F + 16, F * 4);
                }
            __asm__ volatile("" ::: "memory");
            float *yi = y + i * OH * OW * F;
            for (int oy = 0; oy < OH; oy++)
                memcpy(yi + oy * OW * F, scratch + oy * W * F, OW * F * 4);
        }
        ax_amx_release();
        free(xb); free(scratch);
    }
}

/* TDPBF16PS's rate on this core: alone, and with four tile loads from L1
 * a four products (a 2x2 block's A and B) */
__attribute__((target("amx-tile,amx-bf16"))) static void tile_rates(void)
{
    static _Alignas(64) uint16_t a[4096], b[4096];
    configure();
    _tile_loadd(4, a, 64);
    _tile_loadd(5, a + 512, 64);
    _tile_loadd(6, b, 64);
    _tile_loadd(7, b + 512, 64);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    const long n = 1000000;
    double t0 = omp_get_wtime();
    for (long i = 0; i < n; i++) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    const double alone = (omp_get_wtime() - t0) / (4.0 * n);
    t0 = omp_get_wtime();
    for (long i = 0; i < n; i++) {
        _tile_loadd(4, a + (i & 7) * 512, 64);
        _tile_loadd(6, b + (i & 7) * 512, 64);
        _tile_loadd(7, b + ((i + 1) & 7) * 512, 64);
        _tile_loadd(5, a + ((i + 3) & 7) * 512, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    const double loaded = (omp_get_wtime() - t0) / (4.0 * n);
    ax_amx_release();
    const double flops = 16.0 * 16 * 32 * 2;
    printf("TDPBF16PS on one core: %.1f ns (%.0f GFLOP/s) alone, %.1f ns (%.0f) with its tile loads\n",
           alone * 1e9, flops / alone * 1e-9, loaded * 1e9, flops / loaded * 1e-9);
}

int main(void)
{
    if (ax_conv_amx_mode_chosen() != AX_CONV_AMX_HARDWARE) { printf("amx_conv_forward: skipped: no AMX here\n"); return 77; }
    tile_rates();
    const int64_t n = 128;
    float *x = malloc(n * H * W * C * 4), *w = malloc(F * C * K * K * 4), *y = malloc(n * OH * OW * F * 4), *y2 = malloc(n * OH * OW * F * 4);
    uint16_t *wb = aligned_alloc(64, K * K * F * C * 2);
    srand(3);
    for (int64_t i = 0; i < n * H * W * C; i++) x[i] = rand() / (float)RAND_MAX - 0.5f;
    for (int64_t i = 0; i < F * C * K * K; i++) w[i] = rand() / (float)RAND_MAX - 0.5f;
    ax_window_geometry g = {0};
    g.height = H; g.width = W; g.channels = C; g.kernel_height = K; g.kernel_width = K; g.stride = 1; g.padding = 0; g.out_height = OH; g.out_width = OW;
    pack_weights(w, wb);
    forward(x, wb, y, n);
    /* check image 0 and 77 against float64 on rounded operands */
    double worst = 0;
    for (int64_t i = 0; i < n; i += 77)
        for (int oy = 0; oy < OH; oy++) for (int ox = 0; ox < OW; ox++) for (int f = 0; f < F; f++) {
            double s = 0;
            for (int ky = 0; ky < K; ky++) for (int kx = 0; kx < K; kx++) for (int c = 0; c < C; c++)
                s += (double)bf16_value(bf16_bits(x[((i * H + oy + ky) * W + ox + kx) * C + c])) * bf16_value(bf16_bits(w[((f * C + c) * K + ky) * K + kx]));
            double e = fabs(s - y[((i * OH + oy) * OW + ox) * F + f]); if (e > worst) worst = e;
        }
    printf("worst error against float64 on bf16 operands: %g\n", worst);
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        double ta[7], tw[7];
        for (int r = 0; r < 7; r++) {
            double t0 = omp_get_wtime();
            for (int c = 0; c < 10; c++) { pack_weights(w, wb); forward(x, wb, y, n); }
            ta[r] = (omp_get_wtime() - t0) / 10;
            t0 = omp_get_wtime();
            for (int c = 0; c < 10; c++) ax_conv_winograd_forward(&g, F, x, w, y2, n);
            tw[r] = (omp_get_wtime() - t0) / 10;
        }
        double ratio[7];
        for (int r = 0; r < 7; r++)
            ratio[r] = tw[r] / ta[r];
        printf("%d thr: AMX direct %.3f ms, f32 Winograd %.3f ms, AMX faster by %.2fx (medians of 7 alternating rounds)\n",
               threads, median7(ta) * 1e3, median7(tw) * 1e3, median7(ratio));
    }
    return 0;
}
