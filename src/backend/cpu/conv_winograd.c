/* conv_winograd.c: see conv_winograd.h. The forward pass and the input
 * gradient share a plan: the tensor the tiles read (NHWC), the padding,
 * the tensor written, and the weights' transform U (as they are, or with
 * filters and channels swapped for the input gradient). The input
 * gradient is the forward algorithm transposed: A d A^T of each 4x4
 * delta tile, the products with U^T, and B m B^T of each, an 8x8 patch
 * added where the forward pass read its input tile.
 *
 * The matrices are those of the points 0, +-1, +-2, +-1/2 and infinity:
 * A^T their powers 0-3, G their Lagrange weights, B^T what makes
 * A^T [(G g) . (B^T d)] the correlation of g and d (Cook-Toom, as Lavin's
 * wincnn derives them); the test checks them against a float64 direct
 * convolution. As constants with the loops unrolled, the zero terms go.
 *
 * Work: the weights' transform U (64 positions, channels, filters) once a
 * call; then each thread takes an equal run of tiles, in blocks: each
 * block's inputs are transformed into V (position, tile, channel),
 * multiplied into M (position, tile, filter) = V U position by position,
 * and M transformed into the output. A block's V and M stay within a
 * core's L2, position by position in runs (rows the block's size): the
 * products read tiles a row apart, not 8 KB (a tile's 64 positions),
 * which all fall in one of L1's sets (1.02-1.05x a pass alone on the AMX
 * Xeon). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "axon.h"
#include "backend/cpu/bf16_round.h"
#include "backend/cpu/conv_winograd.h"
#include "backend/cpu/cpu_features.h"

/* MOST_PAIRS: filters x channels of the weight gradient's sums, 64 of them
 * a pair a slice (4 MB at most). */
enum { ALPHA = 8, TILE = 4, TAPS = 5, POSITIONS = ALPHA * ALPHA, MOST_CHANNELS = 512,
       MOST_PAIRS = 1 << 14 };

typedef struct winograd_plan {
    int64_t images, in_height, in_width, in_channels; /* what the tiles read */
    int64_t padding;                                  /* zeros before its rows and columns */
    int64_t out_height, out_width, out_channels;
    int64_t tiles_high, tiles_wide;                   /* the layer output's 4x4 tiles (the delta's) */
    /* the input gradient, the forward pass's transpose: the tiles read
     * the delta (in: filters) and add 8x8 patches into the input's
     * gradient (out: channels); the weights' filters and channels swapped */
    bool input_gradient;
    bool bf16; /* the operands rounded to bfloat16 as they are read */
} winograd_plan;

/* The weight gradient's: the layer and its delta's 4x4 tiles. */
typedef struct gradient_plan {
    const ax_window_geometry *g;
    int64_t filters, tiles_high, tiles_wide;
    bool bf16; /* the operands rounded to bfloat16 as they are read */
} gradient_plan;

/* 4x4 tiles over n outputs, the last partial */
static int64_t tiles_over(int64_t n) { return (n + TILE - 1) / TILE; }

bool ax_conv_winograd_enabled(void)
{
    const char *asked = getenv("AXON_CONV_WINOGRAD");
    return ax_cpu_kernels_avx512f() && !(asked && strcmp(asked, "off") == 0);
}

static bool takes(const ax_window_geometry *g, int64_t in_channels, int64_t out_channels)
{
    return g->kernel_height == TAPS && g->kernel_width == TAPS && g->stride == 1 &&
           g->padding >= 0 && g->padding < TAPS && g->height > 0 && g->width > 0 &&
           g->out_height > 0 && g->out_width > 0 && in_channels > 0 && in_channels % 16 == 0 &&
           in_channels <= MOST_CHANNELS && out_channels > 0 && out_channels % 32 == 0 &&
           out_channels <= MOST_CHANNELS && ax_conv_winograd_enabled();
}

bool ax_conv_winograd_forward_takes(const ax_window_geometry *g, int64_t filters)
{
    return takes(g, g->channels, filters);
}

bool ax_conv_winograd_input_takes(const ax_window_geometry *g, int64_t filters)
{
    return takes(g, filters, g->channels);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define KERNEL __attribute__((target("avx512f")))
#define INLINE static inline __attribute__((always_inline, target("avx512f")))

static const float AT[TILE][ALPHA] = {
    {1, 1, 1, 1, 1, 1, 1, 0},
    {0, 1, -1, 2, -2, 0.5f, -0.5f, 0},
    {0, 1, 1, 4, 4, 0.25f, 0.25f, 0},
    {0, 1, -1, 8, -8, 0.125f, -0.125f, 1},
};
static const float G[ALPHA][TAPS] = {
    {-1, 0, 0, 0, 0},
    {-2.f / 9, -2.f / 9, -2.f / 9, -2.f / 9, -2.f / 9},
    {-2.f / 9, 2.f / 9, -2.f / 9, 2.f / 9, -2.f / 9},
    {1.f / 90, 2.f / 90, 4.f / 90, 8.f / 90, 16.f / 90},
    {1.f / 90, -2.f / 90, 4.f / 90, -8.f / 90, 16.f / 90},
    {64.f / 90, 32.f / 90, 16.f / 90, 8.f / 90, 4.f / 90},
    {64.f / 90, -32.f / 90, 16.f / 90, -8.f / 90, 4.f / 90},
    {0, 0, 0, 0, 1},
};
static const float BT[ALPHA][ALPHA] = {
    {-1, 0, 5.25f, 0, -5.25f, 0, 1, 0},
    {0, 1, 1, -4.25f, -4.25f, 1, 1, 0},
    {0, -1, 1, 4.25f, -4.25f, -1, 1, 0},
    {0, 0.5f, 0.25f, -2.5f, -1.25f, 2, 1, 0},
    {0, -0.5f, 0.25f, 2.5f, -1.25f, -2, 1, 0},
    {0, 2, 4, -2.5f, -5, 0.5f, 1, 0},
    {0, -2, 4, 2.5f, -5, -0.5f, 1, 0},
    {0, -1, 0, 5.25f, 0, -5.25f, 0, 1},
};

/* F(5x5, 4x4), the weight gradient's (the same points: B^T is the same):
 * a 5x5 block of the weight gradient from an 8x8 input patch and the 4x4
 * tile of the delta under it. */
static const float AT5[TAPS][ALPHA] = {
    {1, 1, 1, 1, 1, 1, 1, 0},
    {0, 1, -1, 2, -2, 0.5f, -0.5f, 0},
    {0, 1, 1, 4, 4, 0.25f, 0.25f, 0},
    {0, 1, -1, 8, -8, 0.125f, -0.125f, 0},
    {0, 1, 1, 16, 16, 0.0625f, 0.0625f, 1},
};
static const float G4[ALPHA][TILE] = {
    {-1, 0, 0, 0},
    {-2.f / 9, -2.f / 9, -2.f / 9, -2.f / 9},
    {-2.f / 9, 2.f / 9, -2.f / 9, 2.f / 9},
    {1.f / 90, 2.f / 90, 4.f / 90, 8.f / 90},
    {1.f / 90, -2.f / 90, 4.f / 90, -8.f / 90},
    {64.f / 90, 32.f / 90, 16.f / 90, 8.f / 90},
    {64.f / 90, -32.f / 90, 16.f / 90, -8.f / 90},
    {0, 0, 0, 1},
};

/* One term of a row of a constant matrix times vectors: nothing for 0, an
 * add or subtract for +-1. */
INLINE __m512 term(__m512 sum, float coefficient, __m512 value)
{
    if (coefficient == 1)
        return _mm512_add_ps(sum, value);
    if (coefficient == -1)
        return _mm512_sub_ps(sum, value);
    if (coefficient != 0)
        return _mm512_fmadd_ps(_mm512_set1_ps(coefficient), value, sum);
    return sum;
}

/* out = matrix (rows x columns) times in, or its transpose (columns x
 * rows: the input gradient's A and B from A^T and B^T), vectors lane by
 * lane, each output a chain over the inputs in order; inlined with a
 * constant matrix, the loops unroll and the zero terms go. */
INLINE void times(const float *matrix, int rows, int columns, bool transposed, const __m512 *in,
                  __m512 *out)
{
    const int outputs = transposed ? columns : rows, inputs = transposed ? rows : columns;
#pragma GCC unroll 8
    for (int i = 0; i < outputs; i++) {
        __m512 sum = _mm512_setzero_ps();
#pragma GCC unroll 8
        for (int j = 0; j < inputs; j++)
            sum = term(sum, transposed ? matrix[j * columns + i] : matrix[i * columns + j], in[j]);
        out[i] = sum;
    }
}

INLINE void times_bt(const __m512 in[ALPHA], __m512 out[ALPHA]) { times(&BT[0][0], ALPHA, ALPHA, false, in, out); }
INLINE void times_at(const __m512 in[ALPHA], __m512 out[TILE]) { times(&AT[0][0], TILE, ALPHA, false, in, out); }
INLINE void times_g(const __m512 in[TAPS], __m512 out[ALPHA]) { times(&G[0][0], ALPHA, TAPS, false, in, out); }
INLINE void times_a(const __m512 in[TILE], __m512 out[ALPHA]) { times(&AT[0][0], TILE, ALPHA, true, in, out); }
INLINE void times_b(const __m512 in[ALPHA], __m512 out[ALPHA]) { times(&BT[0][0], ALPHA, ALPHA, true, in, out); }
INLINE void times_at5(const __m512 in[ALPHA], __m512 out[TAPS]) { times(&AT5[0][0], TAPS, ALPHA, false, in, out); }
INLINE void times_g4(const __m512 in[TILE], __m512 out[ALPHA]) { times(&G4[0][0], ALPHA, TILE, false, in, out); }

/* 16 operands from at, rounded to bfloat16 for bf16's passes. */
INLINE __m512 operand(const float *at, bool bf16)
{
    const __m512 values = _mm512_loadu_ps(at);
    return bf16 ? ax_bf16_round16(values) : values;
}

/* U (position, in channel, out channel) = G g G^T of each filter's taps,
 * 16 out channels a vector; taps (in channel, tap, out channel) is
 * scratch for the weights regathered. */
static KERNEL void transform_weights(const winograd_plan *p, const float *weights, float *taps,
                                     float *u)
{
    const int64_t in = p->in_channels, out = p->out_channels;
    for (int64_t i = 0; i < in; i++)
        for (int64_t o = 0; o < out; o++)
            for (int t = 0; t < TAPS * TAPS; t++)
                taps[(i * TAPS * TAPS + t) * out + o] =
                    p->input_gradient ? weights[(i * out + o) * TAPS * TAPS + t]
                                      : weights[(o * in + i) * TAPS * TAPS + t];
    if (p->bf16)
        ax_bf16_round_values_serial(taps, taps, TAPS * TAPS * in * out);
    for (int64_t i = 0; i < in; i++)
        for (int64_t o = 0; o < out; o += 16) {
            __m512 columns[ALPHA][TAPS]; /* G g: row a, tap column j */
            for (int j = 0; j < TAPS; j++) {
                __m512 column[TAPS], transformed[ALPHA];
                for (int r = 0; r < TAPS; r++)
                    column[r] = _mm512_loadu_ps(taps + (i * TAPS * TAPS + r * TAPS + j) * out + o);
                times_g(column, transformed);
                for (int a = 0; a < ALPHA; a++)
                    columns[a][j] = transformed[a];
            }
            for (int a = 0; a < ALPHA; a++) {
                __m512 row[ALPHA];
                times_g(columns[a], row);
                for (int b = 0; b < ALPHA; b++)
                    _mm512_storeu_ps(u + ((int64_t)(a * ALPHA + b) * in + i) * out + o, row[b]);
            }
        }
}

/* B^T d B of the 8x8 patch of image (height x width x channels) from
 * (row0, column0), channels [c, c + 16), zeros outside the image; the 64
 * positions stored at out + position * stride. */
INLINE void transform_patch(const float *image, int64_t height, int64_t width, int64_t channels,
                            int64_t row0, int64_t column0, int64_t c, float *out, int64_t stride,
                            bool bf16)
{
    __m512 columns[ALPHA][ALPHA]; /* columns[q]: B^T times the patch's column q */
    for (int q = 0; q < ALPHA; q++) {
        const int64_t column = column0 + q;
        __m512 d[ALPHA];
        for (int r = 0; r < ALPHA; r++) {
            const int64_t row = row0 + r;
            d[r] = row >= 0 && row < height && column >= 0 && column < width
                       ? operand(image + (row * width + column) * channels + c, bf16)
                       : _mm512_setzero_ps();
        }
        times_bt(d, columns[q]);
    }
    for (int a = 0; a < ALPHA; a++) {
        __m512 row[ALPHA], transformed[ALPHA];
        for (int q = 0; q < ALPHA; q++)
            row[q] = columns[q][a];
        times_bt(row, transformed);
        for (int b = 0; b < ALPHA; b++)
            _mm512_storeu_ps(out + (a * ALPHA + b) * stride, transformed[b]);
    }
}

/* The block's tiles [first, first + count): V (position, tile, channel)
 * = B^T d B of each 8x8 input tile, zeros outside the input; a position's
 * rows tiles apart. */
static KERNEL void transform_inputs(const winograd_plan *p, const float *x, int64_t first,
                                    int count, int64_t rows, float *v)
{
    const int64_t channels = p->in_channels;
    for (int tile = 0; tile < count; tile++) {
        const int64_t id = first + tile, image = id / (p->tiles_high * p->tiles_wide);
        const int64_t row0 = (id / p->tiles_wide) % p->tiles_high * TILE - p->padding;
        const int64_t column0 = id % p->tiles_wide * TILE - p->padding;
        const float *at = x + image * p->in_height * p->in_width * channels;
        for (int64_t c = 0; c < channels; c += 16)
            transform_patch(at, p->in_height, p->in_width, channels, row0, column0, c,
                            v + (int64_t)tile * channels + c, rows * channels, p->bf16);
    }
}

/* rows tiles x vectors x 16 out channels of M = V U at one position: each
 * V value is broadcast once against the vectors of U's row. */
INLINE void multiply_tile(const float *v, const float *u, float *m, int64_t in, int64_t out,
                          int rows, int vectors)
{
    __m512 sums[12][4];
#pragma GCC unroll 12
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 4
        for (int j = 0; j < vectors; j++)
            sums[r][j] = _mm512_setzero_ps();
    for (int64_t c = 0; c < in; c++) {
        __m512 b[4];
#pragma GCC unroll 4
        for (int j = 0; j < vectors; j++)
            b[j] = _mm512_loadu_ps(u + c * out + 16 * j);
#pragma GCC unroll 12
        for (int r = 0; r < rows; r++) {
            const __m512 a = _mm512_set1_ps(v[r * in + c]);
#pragma GCC unroll 4
            for (int j = 0; j < vectors; j++)
                sums[r][j] = _mm512_fmadd_ps(a, b[j], sums[r][j]);
        }
    }
#pragma GCC unroll 12
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 4
        for (int j = 0; j < vectors; j++)
            _mm512_storeu_ps(m + r * out + 16 * j, sums[r][j]);
}

/* M (position, tile, out channel) = V (position, tile, in channel) U
 * (position, in channel, out channel): 6 tiles x 64 out channels at a time
 * where they come in 64s (24 sums), else 12 tiles x 32. */
static KERNEL void multiply(const winograd_plan *p, const float *v, const float *u, int count,
                            int64_t rows, float *m)
{
    const int64_t in = p->in_channels, out = p->out_channels;
    for (int pos = 0; pos < POSITIONS; pos++) {
        const float *vp = v + pos * rows * in, *up = u + (int64_t)pos * in * out;
        float *mp = m + pos * rows * out;
        if (out % 64 == 0)
            for (int64_t o = 0; o < out; o += 64) {
                int tile = 0;
                for (; tile + 6 <= count; tile += 6)
                    multiply_tile(vp + tile * in, up + o, mp + tile * out + o,
                                  in, out, 6, 4);
                for (; tile < count; tile++)
                    multiply_tile(vp + tile * in, up + o, mp + tile * out + o,
                                  in, out, 1, 4);
            }
        else
            for (int64_t o = 0; o < out; o += 32) {
                int tile = 0;
                for (; tile + 12 <= count; tile += 12)
                    multiply_tile(vp + tile * in, up + o, mp + tile * out + o,
                                  in, out, 12, 2);
                for (; tile < count; tile++)
                    multiply_tile(vp + tile * in, up + o, mp + tile * out + o,
                                  in, out, 1, 2);
            }
    }
}

/* The block's output tiles, A^T m A, the parts inside the output. */
static KERNEL void transform_outputs(const winograd_plan *p, const float *m, int64_t first,
                                     int count, int64_t block_rows, float *y)
{
    const int64_t channels = p->out_channels;
    for (int tile = 0; tile < count; tile++) {
        const int64_t id = first + tile, image = id / (p->tiles_high * p->tiles_wide);
        const int64_t row0 = (id / p->tiles_wide) % p->tiles_high * TILE;
        const int64_t column0 = id % p->tiles_wide * TILE;
        const int64_t rows = p->out_height - row0 < TILE ? p->out_height - row0 : TILE;
        const int64_t columns = p->out_width - column0 < TILE ? p->out_width - column0 : TILE;
        float *at = y + image * p->out_height * p->out_width * channels;
        for (int64_t c = 0; c < channels; c += 16) {
            __m512 halves[ALPHA][TILE]; /* halves[b]: A^T times column b of m */
            for (int b = 0; b < ALPHA; b++) {
                __m512 column[ALPHA];
                for (int a = 0; a < ALPHA; a++)
                    column[a] = _mm512_loadu_ps(
                        m + ((a * ALPHA + b) * block_rows + tile) * channels + c);
                times_at(column, halves[b]);
            }
            for (int i = 0; i < rows; i++) {
                __m512 row[ALPHA], outputs[TILE];
                for (int b = 0; b < ALPHA; b++)
                    row[b] = halves[b][i];
                times_at(row, outputs);
                for (int j = 0; j < columns; j++)
                    _mm512_storeu_ps(at + ((row0 + i) * p->out_width + column0 + j) * channels + c,
                                     outputs[j]);
            }
        }
    }
}

/* The input gradient's: D (position, tile, filter) = A d A^T of the
 * block's 4x4 delta tiles (zeros past the delta's edge), 16 filters a
 * vector: the forward pass's A^T m A, transposed. */
static KERNEL void transform_deltas(const winograd_plan *p, const float *delta, int64_t first,
                                    int count, int64_t rows, float *d)
{
    const int64_t filters = p->in_channels;
    for (int tile = 0; tile < count; tile++) {
        const int64_t id = first + tile, image = id / (p->tiles_high * p->tiles_wide);
        const int64_t row0 = (id / p->tiles_wide) % p->tiles_high * TILE;
        const int64_t column0 = id % p->tiles_wide * TILE;
        const float *at = delta + image * p->in_height * p->in_width * filters;
        for (int64_t k = 0; k < filters; k += 16) {
            __m512 columns[TILE][ALPHA]; /* columns[q]: A times the tile's column q */
            for (int q = 0; q < TILE; q++) {
                const int64_t column = column0 + q;
                __m512 values[TILE];
                for (int r = 0; r < TILE; r++)
                    values[r] = row0 + r < p->in_height && column < p->in_width
                                    ? operand(at + ((row0 + r) * p->in_width + column) * filters + k, p->bf16)
                                    : _mm512_setzero_ps();
                times_a(values, columns[q]);
            }
            for (int a = 0; a < ALPHA; a++) {
                __m512 row[TILE], transformed[ALPHA];
                for (int q = 0; q < TILE; q++)
                    row[q] = columns[q][a];
                times_a(row, transformed);
                for (int b = 0; b < ALPHA; b++)
                    _mm512_storeu_ps(d + ((a * ALPHA + b) * rows + tile) * filters + k,
                                     transformed[b]);
            }
        }
    }
}

/* The input gradient's: B m B^T of each of the block's tiles (the forward
 * pass's B^T d B, transposed), an 8x8 patch added into previous where
 * it lies inside: neighbouring patches overlap, so a block holds whole
 * images, their gradient zeroed first, and the patches are added in the
 * tiles' order. */
static KERNEL void transform_patches_back(const winograd_plan *p, const float *m, int64_t first,
                                          int count, int64_t rows, float *previous)
{
    const int64_t channels = p->out_channels, per_image = p->tiles_high * p->tiles_wide;
    const int64_t image_values = p->out_height * p->out_width * channels;
    memset(previous + first / per_image * image_values, 0,
           (size_t)(count / per_image * image_values) * sizeof *previous);
    for (int tile = 0; tile < count; tile++) {
        const int64_t id = first + tile, image = id / per_image;
        const int64_t row0 = (id / p->tiles_wide) % p->tiles_high * TILE - p->padding;
        const int64_t column0 = id % p->tiles_wide * TILE - p->padding;
        float *at = previous + image * image_values;
        for (int64_t c = 0; c < channels; c += 16) {
            __m512 columns[ALPHA][ALPHA]; /* columns[b]: B times column b of m */
            for (int b = 0; b < ALPHA; b++) {
                __m512 column[ALPHA];
                for (int a = 0; a < ALPHA; a++)
                    column[a] = _mm512_loadu_ps(
                        m + ((a * ALPHA + b) * rows + tile) * channels + c);
                times_b(column, columns[b]);
            }
            for (int i = 0; i < ALPHA; i++) {
                const int64_t row = row0 + i;
                if (row < 0 || row >= p->out_height)
                    continue;
                __m512 values[ALPHA], patch[ALPHA];
                for (int b = 0; b < ALPHA; b++)
                    values[b] = columns[b][i];
                times_b(values, patch);
                for (int j = 0; j < ALPHA; j++) {
                    const int64_t column = column0 + j;
                    if (column < 0 || column >= p->out_width)
                        continue;
                    float *to = at + (row * p->out_width + column) * channels + c;
                    _mm512_storeu_ps(to, _mm512_add_ps(_mm512_loadu_ps(to), patch[j]));
                }
            }
        }
    }
}

/* Tiles a thread takes at a time: V and M of a block within about 1 MB
 * (a core's L2 holds 1-2 MB), in 12s, 12 to 48; whole images for the
 * input gradient (at least one). */
static int block_tiles(const winograd_plan *p)
{
    const int64_t fit = (1 << 18) / (POSITIONS * (p->in_channels + p->out_channels)) / 12 * 12;
    const int64_t tiles = fit < 12 ? 12 : fit > 48 ? 48 : fit;
    if (!p->input_gradient)
        return (int)tiles;
    const int64_t per_image = p->tiles_high * p->tiles_wide;
    return (int)(tiles < per_image ? per_image : tiles / per_image * per_image);
}

static bool run(const winograd_plan *p, const float *x, const float *weights, float *y)
{
    const int64_t in = p->in_channels, out = p->out_channels;
    const int block = block_tiles(p), threads = omp_get_max_threads();
    const size_t taps_floats = (size_t)(TAPS * TAPS * in * out);
    const size_t u_floats = (size_t)(POSITIONS * in * out);
    const size_t thread_floats = (size_t)block * POSITIONS * (size_t)(in + out);
    float *memory = aligned_alloc(64, (taps_floats + u_floats + thread_floats * (size_t)threads) *
                                          sizeof(float));
    if (!memory)
        return false;
    float *taps = memory, *u = taps + taps_floats, *per_thread = u + u_floats;
    transform_weights(p, weights, taps, u);
    /* each thread an equal run of tiles (of whole images for the input
     * gradient), in blocks: 15 blocks of 36 tiles dealt to 2 threads gave
     * one of them 8, an eighth more than half the work */
    const int64_t unit = p->input_gradient ? p->tiles_high * p->tiles_wide : 1;
    const int64_t tiles = p->images * p->tiles_high * p->tiles_wide, units = tiles / unit;
#pragma omp parallel num_threads(threads) if (tiles > block)
    {
        const int64_t team = omp_get_num_threads(), t = omp_get_thread_num();
        const int64_t end = (t + 1) * units / team * unit;
        float *v = per_thread + thread_floats * (size_t)t;
        float *m = v + (size_t)block * POSITIONS * (size_t)in;
        for (int64_t first = t * units / team * unit; first < end; first += block) {
            const int count = (int)(end - first < block ? end - first : block);
            if (p->input_gradient)
                transform_deltas(p, x, first, count, block, v);
            else
                transform_inputs(p, x, first, count, block, v);
            multiply(p, v, u, count, block, m);
            if (p->input_gradient)
                transform_patches_back(p, m, first, count, block, y);
            else
                transform_outputs(p, m, first, count, block, y);
        }
    }
    free(memory);
    return true;
}

/* ---- the weight gradient by F(5x5, 4x4) ---- */

/* The tiles' sums go into one partial sum per SLICE_IMAGES images, added
 * in the slices' order: the bits depend on the batch, never the threads. */
enum { SLICE_IMAGES = 32 };

/* V (position, tile, channel) = B^T x B of the 8x8 input patches under
 * one image's delta tiles, from tile `first` of a chunk of `tiles`. */
static KERNEL void gradient_inputs(const gradient_plan *p, const float *image, int first,
                                   int tiles, float *v)
{
    const ax_window_geometry *g = p->g;
    const int64_t channels = g->channels;
    for (int64_t ty = 0; ty < p->tiles_high; ty++)
        for (int64_t tx = 0; tx < p->tiles_wide; tx++) {
            const int64_t tile = first + ty * p->tiles_wide + tx;
            const int64_t row0 = ty * TILE - g->padding, column0 = tx * TILE - g->padding;
            for (int64_t c = 0; c < channels; c += 16)
                transform_patch(image, g->height, g->width, channels, row0, column0, c,
                                v + tile * channels + c, tiles * channels, p->bf16);
        }
}

/* D (position, tile, filter) = G d G^T of one image's 4x4 delta tiles
 * (zeros past the output's edge), 16 filters a vector. */
static KERNEL void gradient_deltas(const gradient_plan *p, const float *delta, int first, int tiles,
                                   float *d)
{
    const ax_window_geometry *g = p->g;
    const int64_t filters = p->filters;
    for (int64_t ty = 0; ty < p->tiles_high; ty++)
        for (int64_t tx = 0; tx < p->tiles_wide; tx++) {
            const int64_t tile = first + ty * p->tiles_wide + tx;
            for (int64_t k = 0; k < filters; k += 16) {
                __m512 columns[TILE][ALPHA];
                for (int q = 0; q < TILE; q++) {
                    const int64_t column = tx * TILE + q;
                    __m512 values[TILE];
                    for (int r = 0; r < TILE; r++) {
                        const int64_t row = ty * TILE + r;
                        values[r] = row < g->out_height && column < g->out_width
                                        ? operand(delta + (row * g->out_width + column) * filters + k, p->bf16)
                                        : _mm512_setzero_ps();
                    }
                    times_g4(values, columns[q]);
                }
                for (int a = 0; a < ALPHA; a++) {
                    __m512 row[TILE], transformed[ALPHA];
                    for (int q = 0; q < TILE; q++)
                        row[q] = columns[q][a];
                    times_g4(row, transformed);
                    for (int b = 0; b < ALPHA; b++)
                        _mm512_storeu_ps(d + ((int64_t)(a * ALPHA + b) * tiles + tile) * filters + k,
                                         transformed[b]);
                }
            }
        }
}

/* 8 filters x vectors x 16 channels of M at one position, the chunk's
 * tiles added in order onto the sums so far. */
INLINE void gradient_tile(const float *d, const float *v, int tiles, int64_t filters,
                          int64_t channels, float *m, int vectors)
{
    __m512 sums[8][2];
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++)
#pragma GCC unroll 2
        for (int j = 0; j < vectors; j++)
            sums[r][j] = _mm512_loadu_ps(m + r * channels + 16 * j);
    for (int t = 0; t < tiles; t++) {
        __m512 x[2];
#pragma GCC unroll 2
        for (int j = 0; j < vectors; j++)
            x[j] = _mm512_loadu_ps(v + t * channels + 16 * j);
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) {
            const __m512 a = _mm512_set1_ps(d[t * filters + r]);
#pragma GCC unroll 2
            for (int j = 0; j < vectors; j++)
                sums[r][j] = _mm512_fmadd_ps(a, x[j], sums[r][j]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++)
#pragma GCC unroll 2
        for (int j = 0; j < vectors; j++)
            _mm512_storeu_ps(m + r * channels + 16 * j, sums[r][j]);
}

/* M (position, filter, channel) += D^T V over the chunk's tiles. */
static KERNEL void gradient_products(const float *d, const float *v, int tiles, int64_t filters,
                                     int64_t channels, float *m)
{
    for (int pos = 0; pos < POSITIONS; pos++) {
        const float *dp = d + (int64_t)pos * tiles * filters, *vp = v + (int64_t)pos * tiles * channels;
        float *mp = m + (int64_t)pos * filters * channels;
        for (int64_t k = 0; k < filters; k += 8)
            for (int64_t c = 0; c < channels; c += 32) {
                if (channels - c >= 32)
                    gradient_tile(dp + k, vp + c, tiles, filters, channels, mp + k * channels + c, 2);
                else
                    gradient_tile(dp + k, vp + c, tiles, filters, channels, mp + k * channels + c, 1);
            }
    }
}

/* weight_gradient (filters, channels, 5, 5) = A^T M A, 16 channels a
 * vector, one filter's rows per call. */
static KERNEL void gradient_back(const float *m, int64_t filters, int64_t channels, int64_t k,
                                 float *weight_gradient)
{
    for (int64_t c = 0; c < channels; c += 16) {
        __m512 columns[ALPHA][TAPS];
        for (int b = 0; b < ALPHA; b++) {
            __m512 column[ALPHA];
            for (int a = 0; a < ALPHA; a++)
                column[a] = _mm512_loadu_ps(m + ((int64_t)(a * ALPHA + b) * filters + k) * channels + c);
            times_at5(column, columns[b]);
        }
        for (int i = 0; i < TAPS; i++) {
            __m512 row[ALPHA], out[TAPS];
            for (int b = 0; b < ALPHA; b++)
                row[b] = columns[b][i];
            times_at5(row, out);
            float lanes[TAPS][16];
            for (int j = 0; j < TAPS; j++)
                _mm512_storeu_ps(lanes[j], out[j]);
            for (int l = 0; l < 16; l++)
                for (int j = 0; j < TAPS; j++)
                    weight_gradient[((k * channels + c + l) * TAPS + i) * TAPS + j] = lanes[j][l];
        }
    }
}

static bool gradient_run(const gradient_plan *p, const float *delta, const float *x,
                         float *weight_gradient, int64_t images)
{
    const ax_window_geometry *g = p->g;
    const int64_t filters = p->filters, channels = g->channels;
    const int64_t tiles_per_image = p->tiles_high * p->tiles_wide;
    /* images transformed at a time: their V and D within about 1 MB, beside
     * the slice's sums in L2 (the tiles' order is the same whatever it is) */
    int64_t chunk = (1 << 18) / (POSITIONS * (channels + filters)) / tiles_per_image;
    chunk = chunk < 1 ? 1 : chunk > SLICE_IMAGES ? SLICE_IMAGES : chunk;
    const int64_t slices = (images + SLICE_IMAGES - 1) / SLICE_IMAGES;
    const size_t sums = (size_t)POSITIONS * (size_t)(filters * channels);
    const size_t chunk_floats = (size_t)(chunk * tiles_per_image * POSITIONS * (channels + filters));
    const int threads = omp_get_max_threads();
    float *memory = aligned_alloc(64, (sums * (size_t)slices + chunk_floats * (size_t)threads) * sizeof(float));
    if (!memory)
        return false;
    float *partials = memory, *scratch = memory + sums * (size_t)slices;
#pragma omp parallel for schedule(static) if (slices > 1)
    for (int64_t s = 0; s < slices; s++) {
        float *v = scratch + chunk_floats * (size_t)omp_get_thread_num();
        float *m = partials + sums * (size_t)s;
        memset(m, 0, sums * sizeof *m);
        const int64_t end = (s + 1) * SLICE_IMAGES < images ? (s + 1) * SLICE_IMAGES : images;
        for (int64_t first = s * SLICE_IMAGES; first < end; first += chunk) {
            const int64_t count = end - first < chunk ? end - first : chunk;
            const int tiles = (int)(count * tiles_per_image);
            float *d = v + (size_t)tiles * POSITIONS * (size_t)channels;
            for (int64_t i = 0; i < count; i++) {
                gradient_inputs(p, x + (first + i) * g->height * g->width * channels,
                                (int)(i * tiles_per_image), tiles, v);
                gradient_deltas(p, delta + (first + i) * g->out_height * g->out_width * filters,
                                (int)(i * tiles_per_image), tiles, d);
            }
            gradient_products(d, v, tiles, filters, channels, m);
        }
    }
    for (int64_t s = 1; s < slices; s++) {
        const float *from = partials + sums * (size_t)s;
#pragma omp parallel for schedule(static) if (sums >= 65536)
        for (size_t i = 0; i < sums; i++)
            partials[i] += from[i];
    }
#pragma omp parallel for schedule(static) if (filters >= 16)
    for (int64_t k = 0; k < filters; k++)
        gradient_back(partials, filters, channels, k, weight_gradient);
    free(memory);
    return true;
}
#else
static bool run(const winograd_plan *p, const float *x, const float *weights, float *y)
{
    (void)p, (void)x, (void)weights, (void)y;
    return false;
}

static bool gradient_run(const gradient_plan *p, const float *delta, const float *x,
                         float *weight_gradient, int64_t images)
{
    (void)p, (void)delta, (void)x, (void)weight_gradient, (void)images;
    return false;
}
#endif

static bool forward(const ax_window_geometry *g, int64_t filters, const float *x,
                    const float *weights, float *z, int64_t images, bool bf16)
{
    if (images <= 0 || !ax_conv_winograd_forward_takes(g, filters))
        return false;
    winograd_plan p = {.images = images, .in_height = g->height, .in_width = g->width,
                       .in_channels = g->channels, .padding = g->padding,
                       .out_height = g->out_height, .out_width = g->out_width,
                       .out_channels = filters, .input_gradient = false, .bf16 = bf16,
                       .tiles_high = tiles_over(g->out_height), .tiles_wide = tiles_over(g->out_width)};
    return run(&p, x, weights, z);
}

bool ax_conv_winograd_forward(const ax_window_geometry *g, int64_t filters, const float *x,
                              const float *weights, float *z, int64_t images)
{
    return forward(g, filters, x, weights, z, images, false);
}

bool ax_conv_winograd_forward_bf16(const ax_window_geometry *g, int64_t filters, const float *x,
                                   const float *weights, float *z, int64_t images)
{
    return forward(g, filters, x, weights, z, images, true);
}

static bool backward_input(const ax_window_geometry *g, int64_t filters, const float *delta,
                           const float *weights, float *previous, int64_t images, bool bf16)
{
    if (images <= 0 || !ax_conv_winograd_input_takes(g, filters))
        return false;
    /* the forward pass's tiles, over the delta; the patches' padding */
    winograd_plan p = {.images = images, .in_height = g->out_height, .in_width = g->out_width,
                       .in_channels = filters, .padding = g->padding,
                       .out_height = g->height, .out_width = g->width,
                       .out_channels = g->channels, .input_gradient = true, .bf16 = bf16,
                       .tiles_high = tiles_over(g->out_height), .tiles_wide = tiles_over(g->out_width)};
    return run(&p, delta, weights, previous);
}

bool ax_conv_winograd_backward_input(const ax_window_geometry *g, int64_t filters,
                                     const float *delta, const float *weights, float *previous,
                                     int64_t images)
{
    return backward_input(g, filters, delta, weights, previous, images, false);
}

bool ax_conv_winograd_backward_input_bf16(const ax_window_geometry *g, int64_t filters,
                                          const float *delta, const float *weights,
                                          float *previous, int64_t images)
{
    return backward_input(g, filters, delta, weights, previous, images, true);
}

bool ax_conv_winograd_weights_takes(const ax_window_geometry *g, int64_t filters)
{
    return g->kernel_height == TAPS && g->kernel_width == TAPS && g->stride == 1 &&
           g->padding >= 0 && g->padding < TAPS && g->height > 0 && g->width > 0 &&
           g->out_height > 0 && g->out_width > 0 && g->channels > 0 && g->channels % 16 == 0 &&
           filters > 0 && filters % 16 == 0 && filters * g->channels <= MOST_PAIRS &&
           ax_conv_winograd_enabled();
}

static bool weights_pass(const ax_window_geometry *g, int64_t filters, const float *delta,
                         const float *x, float *gradient, int64_t images, bool bf16)
{
    if (images <= 0 || !ax_conv_winograd_weights_takes(g, filters))
        return false;
    const gradient_plan p = {g, filters, tiles_over(g->out_height), tiles_over(g->out_width), bf16};
    return gradient_run(&p, delta, x, gradient, images);
}

bool ax_conv_winograd_weight_gradient(const ax_window_geometry *g, int64_t filters,
                                      const float *delta, const float *x, float *weight_gradient,
                                      int64_t images)
{
    return weights_pass(g, filters, delta, x, weight_gradient, images, false);
}

bool ax_conv_winograd_weight_gradient_bf16(const ax_window_geometry *g, int64_t filters,
                                           const float *delta, const float *x,
                                           float *weight_gradient, int64_t images)
{
    return weights_pass(g, filters, delta, x, weight_gradient, images, true);
}
