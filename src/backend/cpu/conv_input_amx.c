/* conv_input_amx.c: see conv_input_amx.h. With stride 1, the input
 * gradient at row iy is, over the kernel's taps (ky, kx), the delta at
 * output row iy + padding - ky, shifted by kx, times that tap's weights
 * (filters x channels). In a copy of an image's delta padded by kh - 1 -
 * padding rows and kw - 1 - padding columns on each side (bf16, zeros
 * around), a tap's delta for a whole input row is one strided run of
 * positions: an A tile of (input width) rows by 32 filters. The weights are
 * copied once a call in B's layout (16 pairs of filters by 16 channels a
 * tile). Four C tiles, two input rows by two blocks of 16 channels, stay in
 * the tile registers over the taps and filter blocks, then are stored into
 * the input gradient whole: every value is written once, by one thread.
 * Kernel rows whose output row is outside the delta for both input rows
 * are skipped; the others multiply the padding's zeros too (1.5x the
 * products of LeNet's second layer, which AMX's rate pays for). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/amx_tiles.h"
#include "backend/cpu/bf16_round.h"
#include "backend/cpu/conv_input_amx.h"
#include "backend/cpu/conv_weight_amx.h"

enum {
    TILE = 16,      /* channels of a C tile; most rows of any tile */
    K_BLOCK = 32,   /* filters of an A tile row (64 bytes of bf16) */
    B_VALUES = 512, /* a B tile: 16 pairs of filters x 16 channels x 2 */
};

static bool shape_taken(const ax_window_geometry *g, int64_t filters)
{
    return g->stride == 1 && g->channels > 0 && g->channels % TILE == 0 && filters > 0 &&
           filters % K_BLOCK == 0 && g->width >= 1 && g->width <= TILE && g->height >= 1 &&
           g->kernel_height >= 1 && g->kernel_width >= 1 && g->padding >= 0 &&
           g->padding < g->kernel_height && g->padding < g->kernel_width && g->out_height > 0 &&
           g->out_width > 0;
}

bool ax_conv_input_amx_takes(const ax_window_geometry *g, int64_t filters)
{
    return shape_taken(g, filters) && ax_conv_amx_mode_chosen() != AX_CONV_AMX_OFF;
}

/* One call's shape and operands. */
typedef struct input_product {
    const ax_window_geometry *g;
    int64_t filters, channels;
    int64_t padded_rows, padded_columns; /* the padded delta's */
    int64_t top, left;                   /* its padding: kh - 1 - padding, kw - 1 - padding */
    const uint16_t *b;                   /* (taps, filter blocks, channel blocks) B tiles */
    float *previous;
} input_product;

/* padded (padded_rows, padded_columns, filters) = image n's delta rounded
 * to bf16, zeros around it */
static void copy_padded(const input_product *p, const float *delta, uint16_t *padded)
{
    const ax_window_geometry *g = p->g;
    const int64_t f = p->filters;
    for (int64_t r = 0; r < p->padded_rows; r++)
        for (int64_t col = 0; col < p->padded_columns; col++) {
            const int64_t oy = r - p->top, ox = col - p->left;
            uint16_t *to = padded + (r * p->padded_columns + col) * f;
            if (oy < 0 || oy >= g->out_height || ox < 0 || ox >= g->out_width)
                memset(to, 0, (size_t)f * sizeof *to);
            else
                ax_bf16_pack_values_serial(to, delta + (oy * g->out_width + ox) * f, f);
        }
}

/* b (taps, filter blocks, channel blocks, 16 pairs, 16 channels, 2) = the
 * weights (filters, channels, kh, kw) rounded to bf16 */
static void copy_weights(const ax_window_geometry *g, int64_t filters, const float *weights,
                         uint16_t *b)
{
    const int64_t c = g->channels, taps = g->kernel_height * g->kernel_width;
    const int64_t filter_blocks = filters / K_BLOCK, channel_blocks = c / TILE;
    const uint32_t *w = (const uint32_t *)weights;
    for (int64_t t = 0; t < taps; t++)
        for (int64_t kb = 0; kb < filter_blocks; kb++)
            for (int64_t cb = 0; cb < channel_blocks; cb++) {
                uint16_t *tile = b + ((t * filter_blocks + kb) * channel_blocks + cb) * B_VALUES;
                for (int pair = 0; pair < TILE; pair++)
                    for (int ch = 0; ch < TILE; ch++)
                        for (int e = 0; e < 2; e++) {
                            const int64_t f = kb * K_BLOCK + 2 * pair + e, channel = cb * TILE + ch;
                            tile[pair * 2 * TILE + 2 * ch + e] =
                                (uint16_t)(ax_bf16_round_bits(w[(f * c + channel) * taps + t]) >> 16);
                        }
            }
}

/* What one block of C tiles (one or two input rows from iy, one or two
 * channel blocks from cb) sums over. */
typedef struct block_source {
    const input_product *p;
    const uint16_t *padded; /* the image's padded delta */
    float *rows;            /* the input gradient at (image, iy, 0, cb's first channel) */
    int64_t iy, cb;
    bool two_rows, two_channel_blocks;
} block_source;

/* The A tile of input row iy at tap (ky, kx) and filter block kb */
static const uint16_t *a_tile(const block_source *s, int64_t iy, int64_t ky, int64_t kx,
                              int64_t kb)
{
    const input_product *p = s->p;
    const int64_t r = iy + p->g->kernel_height - 1 - ky, col = p->g->kernel_width - 1 - kx;
    return s->padded + (r * p->padded_columns + col) * p->filters + kb * K_BLOCK;
}

/* Whether input row iy at kernel row ky meets an output row */
static bool reaches(const ax_window_geometry *g, int64_t iy, int64_t ky)
{
    const int64_t oy = iy + g->padding - ky;
    return oy >= 0 && oy < g->out_height;
}

static const uint16_t *b_tile(const input_product *p, int64_t ky, int64_t kx, int64_t kb,
                              int64_t cb)
{
    const int64_t t = ky * p->g->kernel_width + kx;
    return p->b + ((t * (p->filters / K_BLOCK) + kb) * (p->channels / TILE) + cb) * B_VALUES;
}

/* The tiles' arithmetic in scalar C (AXON_CONV_AMX=emulate), in their order. */
static void block_emulated(const block_source *s)
{
    const input_product *p = s->p;
    const ax_window_geometry *g = p->g;
    const int rows = (int)g->width;
    float sums[2][2][TILE][TILE];
    memset(sums, 0, sizeof sums);
    for (int64_t ky = 0; ky < g->kernel_height; ky++) {
        if (!reaches(g, s->iy, ky) && !(s->two_rows && reaches(g, s->iy + 1, ky)))
            continue;
        for (int64_t kx = 0; kx < g->kernel_width; kx++)
            for (int64_t kb = 0; kb < p->filters / K_BLOCK; kb++)
                for (int r = 0; r < (s->two_rows ? 2 : 1); r++)
                    for (int c = 0; c < (s->two_channel_blocks ? 2 : 1); c++)
                        ax_amx_dpbf16ps_emulated(&sums[r][c][0][0], TILE,
                                                 a_tile(s, s->iy + r, ky, kx, kb), p->filters,
                                                 b_tile(p, ky, kx, kb, s->cb + c), 2 * TILE,
                                                 rows, K_BLOCK);
    }
    for (int r = 0; r < (s->two_rows ? 2 : 1); r++)
        for (int c = 0; c < (s->two_channel_blocks ? 2 : 1); c++)
            for (int m = 0; m < rows; m++)
                memcpy(s->rows + (r * g->width + m) * p->channels + c * TILE, sums[r][c][m],
                       sizeof sums[r][c][m]);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Tiles 0-3: C (width x 16 float32; rows by channel blocks); 4, 5: A
 * (width x 32 bf16); 6, 7: B (16 pairs x 16 channels), for this thread
 * until ax_amx_release. */
static void configure(int64_t width)
{
    uint8_t rows[AX_AMX_TILES];
    uint16_t bytes[AX_AMX_TILES];
    for (int t = 0; t < AX_AMX_TILES; t++) {
        rows[t] = t < 6 ? (uint8_t)width : TILE;
        bytes[t] = 64;
    }
    ax_amx_configure(rows, bytes);
}

__attribute__((target("amx-tile,amx-bf16"))) static void block_amx(const block_source *s)
{
    const input_product *p = s->p;
    const ax_window_geometry *g = p->g;
    const int64_t as = p->filters * 2, bs = 4 * TILE, cs = p->channels * 4;
    const bool two_r = s->two_rows, two_c = s->two_channel_blocks;
    /* GCC 12's tile loads and stores are asm that names no memory: the
     * copies must be written before them, the sums read after */
    __asm__ volatile("" : : : "memory");
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t ky = 0; ky < g->kernel_height; ky++) {
        if (!reaches(g, s->iy, ky) && !(two_r && reaches(g, s->iy + 1, ky)))
            continue;
        for (int64_t kx = 0; kx < g->kernel_width; kx++)
            for (int64_t kb = 0; kb < p->filters / K_BLOCK; kb++) {
                _tile_loadd(4, a_tile(s, s->iy, ky, kx, kb), as);
                _tile_loadd(6, b_tile(p, ky, kx, kb, s->cb), bs);
                _tile_dpbf16ps(0, 4, 6);
                if (two_c) {
                    _tile_loadd(7, b_tile(p, ky, kx, kb, s->cb + 1), bs);
                    _tile_dpbf16ps(1, 4, 7);
                }
                if (two_r) {
                    _tile_loadd(5, a_tile(s, s->iy + 1, ky, kx, kb), as);
                    _tile_dpbf16ps(2, 5, 6);
                    if (two_c)
                        _tile_dpbf16ps(3, 5, 7);
                }
            }
    }
    float *row = s->rows, *next = s->rows + g->width * p->channels;
    _tile_stored(0, row, cs);
    if (two_c)
        _tile_stored(1, row + TILE, cs);
    if (two_r) {
        _tile_stored(2, next, cs);
        if (two_c)
            _tile_stored(3, next + TILE, cs);
    }
    __asm__ volatile("" : : : "memory");
}
#else
static void configure(int64_t width) { (void)width; }
static void block_amx(const block_source *s) { block_emulated(s); }
#endif

bool ax_conv_input_amx(const ax_window_geometry *g, int64_t filters, const float *delta,
                       const float *weights, float *previous, int64_t images)
{
    const ax_conv_amx_mode mode = ax_conv_amx_mode_chosen(); /* read once a call */
    if (mode == AX_CONV_AMX_OFF || !shape_taken(g, filters))
        return false;
    if (images == 0)
        return true; /* nothing to write, nor to read */
    const bool hardware = mode == AX_CONV_AMX_HARDWARE;
    const int64_t c = g->channels, taps = g->kernel_height * g->kernel_width;
    input_product p = {
        .g = g,
        .filters = filters,
        .channels = c,
        .padded_rows = g->height + g->kernel_height - 1,
        .padded_columns = g->width + g->kernel_width - 1,
        .top = g->kernel_height - 1 - g->padding,
        .left = g->kernel_width - 1 - g->padding,
        .previous = previous,
    };
    const int threads = omp_get_max_threads();
    /* 64-byte aligned, each thread's copy too: a tile row across two cache
     * lines costs a second access */
    const size_t padded_values = (size_t)(p.padded_rows * p.padded_columns * filters);
    uint16_t *b = aligned_alloc(64, (size_t)(taps * filters * c) * sizeof *b);
    uint16_t *padded = aligned_alloc(64, (size_t)threads * padded_values * sizeof *padded);
    if (!b || !padded) {
        free(b);
        free(padded);
        return false;
    }
    copy_weights(g, filters, weights, b);
    p.b = b;
    const int64_t image_delta = g->out_height * g->out_width * filters;
    const int64_t image_input = g->height * g->width * c;
#pragma omp parallel num_threads(threads) if (images > 1)
    {
        uint16_t *own = padded + (size_t)omp_get_thread_num() * padded_values;
        if (hardware)
            configure(g->width);
#pragma omp for schedule(static)
        for (int64_t n = 0; n < images; n++) {
            copy_padded(&p, delta + n * image_delta, own);
            for (int64_t iy = 0; iy < g->height; iy += 2)
                for (int64_t cb = 0; cb < c / TILE; cb += 2) {
                    const block_source s = {
                        .p = &p,
                        .padded = own,
                        .rows = previous + n * image_input + iy * g->width * c + cb * TILE,
                        .iy = iy,
                        .cb = cb,
                        .two_rows = iy + 1 < g->height,
                        .two_channel_blocks = cb + 1 < c / TILE,
                    };
                    if (hardware)
                        block_amx(&s);
                    else
                        block_emulated(&s);
                }
        }
        if (hardware)
            ax_amx_release();
    }
    free(b);
    free(padded);
    return true;
}
