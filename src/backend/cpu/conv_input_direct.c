/* conv_input_direct.c: see conv_input_direct.h. With stride 1, output
 * position ox meets input column ix = ox + kx - padding through kernel
 * column kx. For one kx, a tile holds the sums of up to 12 consecutive
 * output positions of one row by 32 channels (24 registers): over the
 * kernel rows that reach the input row and over the filters, each delta
 * value is broadcast once and meets two vectors of the weights at (ky, kx,
 * filter), so the FMA pipes set the pace; the tile is then added into the
 * input row at its columns shifted by kx - padding (a column outside the
 * input is dropped). So only products that land inside the input are
 * made: a gather over the zero-padded delta would make 1.5x as many at
 * LeNet's second layer (12 columns x 5 taps against 8 x 5). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/conv_input_direct.h"
#include "backend/cpu/cpu_features.h"

enum { TILE_POSITIONS = 12 };

bool ax_conv_input_direct_takes(const ax_window_geometry *g, int64_t filters)
{
    if (!(g->stride == 1 && g->channels > 0 && g->channels % 16 == 0 && filters > 0 &&
          g->kernel_height >= 1 && g->kernel_width >= 1 && g->padding >= 0 &&
          g->padding < g->kernel_height && g->padding < g->kernel_width && g->out_height > 0 &&
          g->out_width > 0 && g->height > 0 && g->width > 0 && ax_cpu_kernels_avx512f()))
        return false;
    const char *asked = getenv("AXON_CONV_DIRECT");
    return !(asked && strcmp(asked, "off") == 0);
}

/* What a tile needs beyond its constants: the delta of its first output
 * position at the first kernel row's output row, the weights at (that
 * row, kx, filter 0) and the tile's first channel, and the input row at
 * the tile's first channel. */
typedef struct tile_source {
    const float *delta;    /* at (first ky's output row, first position, filter 0) */
    int64_t delta_row;     /* values from one output row to the previous one (ky + 1) */
    const float *weights;  /* (kh, kw, filters, channels) at (first ky, kx, 0, first channel) */
    int64_t weights_row;   /* values from ky to ky + 1 at the same kx */
    int64_t rows;          /* kernel rows that reach the input row */
    int64_t filters, channels;
    float *input;          /* the input row at column 0, first channel */
    int64_t first_column;  /* the input column of the tile's first position */
    int64_t width;         /* the input's */
} tile_source;

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Inlined with constant vectors and positions: the sums stay in
 * registers and the broadcasts take immediate offsets. */
static inline __attribute__((always_inline, target("avx512f"))) void
input_tile(int vectors, int positions, const tile_source *s)
{
    __m512 sums[2][TILE_POSITIONS];
    for (int v = 0; v < vectors; v++)
        for (int q = 0; q < positions; q++)
            sums[v][q] = _mm512_setzero_ps();
    const float *delta = s->delta, *weights = s->weights;
    for (int64_t r = 0; r < s->rows; r++, delta -= s->delta_row, weights += s->weights_row)
        for (int64_t f = 0; f < s->filters; f++) {
            const __m512 w0 = _mm512_loadu_ps(weights + f * s->channels);
            const __m512 w1 = vectors > 1 ? _mm512_loadu_ps(weights + f * s->channels + 16) : w0;
            for (int q = 0; q < positions; q++) {
                const __m512 d = _mm512_set1_ps(delta[q * s->filters + f]);
                sums[0][q] = _mm512_fmadd_ps(d, w0, sums[0][q]);
                if (vectors > 1)
                    sums[1][q] = _mm512_fmadd_ps(d, w1, sums[1][q]);
            }
        }
    for (int q = 0; q < positions; q++) {
        const int64_t ix = s->first_column + q;
        if (ix < 0 || ix >= s->width)
            continue;
        float *at = s->input + ix * s->channels;
        for (int v = 0; v < vectors; v++)
            _mm512_storeu_ps(at + 16 * v, _mm512_add_ps(_mm512_loadu_ps(at + 16 * v), sums[v][q]));
    }
}

#define INPUT_CASE(vectors, positions)                                                     \
    case positions:                                                                        \
        input_tile(vectors, positions, s);                                                 \
        break;
#define INPUT_SWITCH(vectors)                                                              \
    switch (positions) {                                                                   \
        INPUT_CASE(vectors, 1) INPUT_CASE(vectors, 2) INPUT_CASE(vectors, 3)               \
        INPUT_CASE(vectors, 4) INPUT_CASE(vectors, 5) INPUT_CASE(vectors, 6)               \
        INPUT_CASE(vectors, 7) INPUT_CASE(vectors, 8) INPUT_CASE(vectors, 9)               \
        INPUT_CASE(vectors, 10) INPUT_CASE(vectors, 11) INPUT_CASE(vectors, 12)            \
    }

__attribute__((target("avx512f"))) static void input_block(int vectors, int positions,
                                                           const tile_source *s)
{
    if (vectors == 2)
        INPUT_SWITCH(2)
    else
        INPUT_SWITCH(1)
}
#else
static void input_block(int vectors, int positions, const tile_source *s)
{
    (void)vectors, (void)positions, (void)s;
}
#endif

bool ax_conv_input_direct(const ax_window_geometry *g, int64_t filters, const float *delta,
                          const float *weights, float *previous, int64_t images)
{
    if (!ax_conv_input_direct_takes(g, filters))
        return false;
    const int64_t kh = g->kernel_height, kw = g->kernel_width, c = g->channels, pad = g->padding;
    const int64_t oh = g->out_height, ow = g->out_width;
    /* the weights as (kh, kw, filters, channels): a tap's filter's channels
     * side by side */
    float *taps = malloc((size_t)(kh * kw * filters * c) * sizeof *taps);
    if (!taps)
        return false;
    for (int64_t f = 0; f < filters; f++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t t = 0; t < kh * kw; t++)
                taps[(t * filters + f) * c + ch] = weights[(f * c + ch) * kh * kw + t];
    const int64_t rows = images * g->height;
    /* equal blocks of at most 12 positions: 24 as 12 + 12, 25 as 9 + 8 + 8 */
    const int64_t blocks = (ow + TILE_POSITIONS - 1) / TILE_POSITIONS;
#pragma omp parallel for schedule(static) \
    if (rows * g->width * c * filters * kh * kw >= 65536)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t n = r / g->height, iy = r % g->height;
        float *input = previous + r * g->width * c;
        memset(input, 0, (size_t)(g->width * c) * sizeof *input);
        /* the kernel rows whose output row oy = iy + pad - ky is inside */
        const int64_t first_ky = iy + pad - oh + 1 > 0 ? iy + pad - oh + 1 : 0;
        const int64_t last_ky = iy + pad < kh - 1 ? iy + pad : kh - 1;
        if (first_ky > last_ky)
            continue;
        for (int64_t c0 = 0; c0 < c; c0 += 32)
            for (int64_t kx = 0; kx < kw; kx++)
                for (int64_t b = 0; b < blocks; b++) {
                    const int64_t first = b * ow / blocks;
                    const int positions = (int)((b + 1) * ow / blocks - first);
                    const int64_t oy = iy + pad - first_ky;
                    const tile_source s = {
                        .delta = delta + ((n * oh + oy) * ow + first) * filters,
                        .delta_row = ow * filters,
                        .weights = taps + ((first_ky * kw + kx) * filters) * c + c0,
                        .weights_row = kw * filters * c,
                        .rows = last_ky - first_ky + 1,
                        .filters = filters,
                        .channels = c,
                        .input = input + c0,
                        .first_column = first + kx - pad,
                        .width = g->width,
                    };
                    input_block(c - c0 >= 32 ? 2 : 1, positions, &s);
                }
    }
    free(taps);
    return true;
}
