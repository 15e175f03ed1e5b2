/* conv_one_channel.c: see conv_one_channel.h. Images are (height, width)
 * planes at one channel; outputs and their gradients (positions, filters).
 * Forward: a tile holds the sums of up to 12 output positions of one row
 * by 32 filters (24 registers); each window value is broadcast once and
 * meets two vectors of the filters' weights at that tap, so the FMA pipes,
 * not the loads, set the pace. Weight gradient: a tile holds one or two
 * kernel rows (up to 24 taps) by 32 filters and streams the slice's
 * positions once, a position's two delta vectors meeting each of its
 * window's values. Padding is made real in a small copy (a strip of rows,
 * or the slice's images), so the tiles never test bounds. In bf16 the
 * same copies (made whether padded or not) and the weights' and delta's
 * hold the operands rounded to bfloat16: float32's products of them are
 * exact, so the sums are bf16's (bf16 operands, float32 sums). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/bf16_round.h"
#include "backend/cpu/conv_one_channel.h"
#include "backend/cpu/cpu_features.h"

enum {
    MOST_KERNEL_WIDTH = 12,
    TILE_POSITIONS = 12, /* forward: output positions of a tile */
    TILE_TAPS = 24,      /* weight gradient: taps of a tile (rows x kernel width) */
};

bool ax_conv_one_channel_takes(const ax_window_geometry *g, int64_t filters)
{
    /* the layer's shape first: most layers (every one of another channel
     * count) end the test there, before the environment is read */
    if (!(g->channels == 1 && filters > 0 && filters % 16 == 0 && g->kernel_height >= 1 &&
          g->kernel_width >= 1 && g->kernel_width <= MOST_KERNEL_WIDTH && g->stride >= 1 &&
          g->padding >= 0 && g->out_height > 0 && g->out_width > 0 && ax_cpu_kernels_avx512f()))
        return false;
    const char *asked = getenv("AXON_CONV_DIRECT");
    return !(asked && strcmp(asked, "off") == 0);
}

/* v, or v rounded to bfloat16 (held in float32) when round_bf16 */
static inline float operand(float v, bool round_bf16)
{
    if (!round_bf16)
        return v;
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    u = ax_bf16_round_bits(u);
    memcpy(&v, &u, sizeof v);
    return v;
}

/* rows x cols of image (height x width) from (top, left), zeros outside,
 * each value an operand(). */
static void copy_padded(const float *image, int64_t height, int64_t width, int64_t top,
                        int64_t left, int64_t rows, int64_t cols, bool round_bf16, float *out)
{
    for (int64_t r = 0; r < rows; r++, out += cols) {
        const int64_t iy = top + r;
        if (iy < 0 || iy >= height) {
            memset(out, 0, (size_t)cols * sizeof *out);
            continue;
        }
        for (int64_t c = 0; c < cols; c++) {
            const int64_t ix = left + c;
            out[c] = ix >= 0 && ix < width ? operand(image[iy * width + ix], round_bf16) : 0.0f;
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* What the forward pass does with its sums before storing them: nothing,
 * adds the bias, or adds it and applies ReLU (bias_activation's bits:
 * v > 0 ? v : (v == v ? 0 : v), NaN kept). */
typedef enum epilogue { EPILOGUE_NONE, EPILOGUE_BIAS, EPILOGUE_BIAS_RELU } epilogue;

/* out (positions, filters) = the window sums of `positions` outputs of one
 * row for 16 x vectors filters, with the epilogue (bias at the first
 * filter). strip: the window's first row at the first output; taps (kh,
 * kw, filters) at the first filter. Inlined with constant vectors,
 * positions and (where 1) stride: the sums stay in registers and the
 * broadcasts take immediate offsets. */
static inline __attribute__((always_inline, target("avx512f"))) void
forward_tile(int vectors, int positions, int64_t stride, const float *strip, int64_t strip_width,
             int64_t kernel_height, int64_t kernel_width, const float *taps, int64_t filters,
             epilogue finish, const float *bias, float *out)
{
    __m512 sums[2][TILE_POSITIONS];
    for (int v = 0; v < vectors; v++)
        for (int p = 0; p < positions; p++)
            sums[v][p] = _mm512_setzero_ps();
    for (int64_t ky = 0; ky < kernel_height; ky++) {
        const float *row = strip + ky * strip_width;
        const float *tap = taps + ky * kernel_width * filters;
        for (int64_t kx = 0; kx < kernel_width; kx++, tap += filters) {
            const __m512 w0 = _mm512_loadu_ps(tap);
            const __m512 w1 = vectors > 1 ? _mm512_loadu_ps(tap + 16) : w0;
            for (int p = 0; p < positions; p++) {
                const __m512 value = _mm512_set1_ps(row[p * stride + kx]);
                sums[0][p] = _mm512_fmadd_ps(w0, value, sums[0][p]);
                if (vectors > 1)
                    sums[1][p] = _mm512_fmadd_ps(w1, value, sums[1][p]);
            }
        }
    }
    for (int v = 0; v < vectors; v++) {
        const __m512 b = finish == EPILOGUE_NONE ? _mm512_setzero_ps() : _mm512_loadu_ps(bias + 16 * v);
        for (int p = 0; p < positions; p++) {
            __m512 value = sums[v][p];
            if (finish != EPILOGUE_NONE)
                value = _mm512_add_ps(value, b);
            if (finish == EPILOGUE_BIAS_RELU) {
                const __mmask16 kept = _mm512_cmp_ps_mask(value, _mm512_setzero_ps(), _CMP_GT_OQ) |
                                       _mm512_cmp_ps_mask(value, value, _CMP_UNORD_Q);
                value = _mm512_maskz_mov_ps(kept, value);
            }
            _mm512_storeu_ps(out + p * filters + 16 * v, value);
        }
    }
}

#define FORWARD_CASE(vectors, stride, positions)                                           \
    case positions:                                                                        \
        forward_tile(vectors, positions, stride, strip, strip_width, kernel_height,        \
                     kernel_width, taps, filters, finish, bias, out);                      \
        break;
#define FORWARD_SWITCH(vectors, stride)                                                    \
    switch (positions) {                                                                   \
        FORWARD_CASE(vectors, stride, 1) FORWARD_CASE(vectors, stride, 2)                  \
        FORWARD_CASE(vectors, stride, 3) FORWARD_CASE(vectors, stride, 4)                  \
        FORWARD_CASE(vectors, stride, 5) FORWARD_CASE(vectors, stride, 6)                  \
        FORWARD_CASE(vectors, stride, 7) FORWARD_CASE(vectors, stride, 8)                  \
        FORWARD_CASE(vectors, stride, 9) FORWARD_CASE(vectors, stride, 10)                 \
        FORWARD_CASE(vectors, stride, 11) FORWARD_CASE(vectors, stride, 12)                \
    }

__attribute__((target("avx512f"))) static void
forward_block(int vectors, int positions, int64_t stride, const float *strip, int64_t strip_width,
              int64_t kernel_height, int64_t kernel_width, const float *taps, int64_t filters,
              epilogue finish, const float *bias, float *out)
{
    if (stride == 1) {
        if (vectors == 2)
            FORWARD_SWITCH(2, 1)
        else
            FORWARD_SWITCH(1, 1)
    } else {
        if (vectors == 2)
            FORWARD_SWITCH(2, stride)
        else
            FORWARD_SWITCH(1, stride)
    }
}

/* The forward tile of two output rows (the two rows of a 2x2 max
 * pooling's windows) by 2 x pairs positions, 16 x vectors filters, with
 * bias and ReLU, then the pooling in registers: y (both rows) gets
 * forward_tile's bits, pooled the max pooling's (the four values in
 * window order, NaN winning), and codes, for each window and filter, the
 * window position (0-3, row order) whose delta max_pool_backward_relu
 * makes from the pooled gradient: the first equal to the maximum where
 * that maximum is above 0 and no value is NaN, else none (4). */
static inline __attribute__((always_inline, target("avx512f"))) void
pool_tile(int vectors, int pairs, int64_t stride, const float *strip, int64_t strip_width,
          int64_t kernel_height, int64_t kernel_width, const float *taps, int64_t filters,
          const float *bias, float *y, int64_t y_row, float *pooled, uint8_t *codes)
{
    enum { MOST_PAIRS = TILE_POSITIONS / 4 };
    __m512 sums[2][2][2 * MOST_PAIRS]; /* [vector][row][position] */
    const int positions = 2 * pairs;
    _Pragma("GCC unroll 12")
    for (int v = 0; v < vectors; v++)
        _Pragma("GCC unroll 12")
        for (int r = 0; r < 2; r++)
            _Pragma("GCC unroll 12")
            for (int p = 0; p < positions; p++)
                sums[v][r][p] = _mm512_setzero_ps();
    for (int64_t ky = 0; ky < kernel_height; ky++) {
        const float *row0 = strip + ky * strip_width, *row1 = row0 + stride * strip_width;
        const float *tap = taps + ky * kernel_width * filters;
        for (int64_t kx = 0; kx < kernel_width; kx++, tap += filters) {
            const __m512 w0 = _mm512_loadu_ps(tap);
            const __m512 w1 = vectors > 1 ? _mm512_loadu_ps(tap + 16) : w0;
            _Pragma("GCC unroll 12")
            for (int r = 0; r < 2; r++)
                _Pragma("GCC unroll 12")
                for (int p = 0; p < positions; p++) {
                    const __m512 value = _mm512_set1_ps((r ? row1 : row0)[p * stride + kx]);
                    sums[0][r][p] = _mm512_fmadd_ps(w0, value, sums[0][r][p]);
                    if (vectors > 1)
                        sums[1][r][p] = _mm512_fmadd_ps(w1, value, sums[1][r][p]);
                }
        }
    }
    const __m512 zero = _mm512_setzero_ps();
    _Pragma("GCC unroll 12")
    for (int v = 0; v < vectors; v++) {
        const __m512 b = _mm512_loadu_ps(bias + 16 * v);
        _Pragma("GCC unroll 12")
        for (int r = 0; r < 2; r++)
            _Pragma("GCC unroll 12")
            for (int p = 0; p < positions; p++) {
                const __m512 value = _mm512_add_ps(sums[v][r][p], b);
                const __mmask16 kept = _mm512_cmp_ps_mask(value, zero, _CMP_GT_OQ) |
                                       _mm512_cmp_ps_mask(value, value, _CMP_UNORD_Q);
                sums[v][r][p] = _mm512_maskz_mov_ps(kept, value);
                /* y is read back, if ever, long after: streamed past the
                 * caches where aligned (no read of its lines first) */
                float *at = y + r * y_row + p * filters + 16 * v;
                if (((uintptr_t)at & 63) == 0)
                    _mm512_stream_ps(at, sums[v][r][p]);
                else
                    _mm512_storeu_ps(at, sums[v][r][p]);
            }
        _Pragma("GCC unroll 12")
        for (int j = 0; j < pairs; j++) {
            const __m512 window[4] = {sums[v][0][2 * j], sums[v][0][2 * j + 1], sums[v][1][2 * j],
                                      sums[v][1][2 * j + 1]};
            __m512 most = window[0];
            _Pragma("GCC unroll 12")
            for (int k = 1; k < 4; k++)
                most = _mm512_mask_mov_ps(most,
                                          _mm512_cmp_ps_mask(window[k], most, _CMP_GT_OQ) |
                                              _mm512_cmp_ps_mask(window[k], window[k], _CMP_UNORD_Q),
                                          window[k]);
            _mm512_storeu_ps(pooled + j * filters + 16 * v, most);
            __m512i code = _mm512_set1_epi32(3);
            _Pragma("GCC unroll 12")
            for (int k = 2; k >= 0; k--)
                code = _mm512_mask_mov_epi32(code, _mm512_cmp_ps_mask(window[k], most, _CMP_EQ_OQ),
                                             _mm512_set1_epi32(k));
            code = _mm512_mask_mov_epi32(_mm512_set1_epi32(4),
                                         _mm512_cmp_ps_mask(most, zero, _CMP_GT_OQ), code);
            _mm_storeu_si128((__m128i *)(codes + j * filters + 16 * v), _mm512_cvtepi32_epi8(code));
        }
    }
}

#define POOL_CASE(vectors, stride, pairs)                                                  \
    case pairs:                                                                            \
        pool_tile(vectors, pairs, stride, strip, strip_width, kernel_height, kernel_width, \
                  taps, filters, bias, y, y_row, pooled, codes);                           \
        break;
#define POOL_SWITCH(vectors, stride)                                                       \
    switch (pairs) {                                                                       \
        POOL_CASE(vectors, stride, 1) POOL_CASE(vectors, stride, 2)                        \
        POOL_CASE(vectors, stride, 3)                                                      \
    }

/* pool_tile's streamed stores of y, ordered before the stores after them
 * (the parallel region's end, where other threads may read y) */
static void order_streamed_stores(void) { _mm_sfence(); }

/* pairs: at most 3 (24 sums: 2 vectors x 2 rows x 6 positions) */
__attribute__((target("avx512f"))) static void
pool_block(int vectors, int pairs, int64_t stride, const float *strip, int64_t strip_width,
           int64_t kernel_height, int64_t kernel_width, const float *taps, int64_t filters,
           const float *bias, float *y, int64_t y_row, float *pooled, uint8_t *codes)
{
    if (stride == 1) {
        if (vectors == 2)
            POOL_SWITCH(2, 1)
        else
            POOL_SWITCH(1, 1)
    } else {
        if (vectors == 2)
            POOL_SWITCH(2, stride)
        else
            POOL_SWITCH(1, stride)
    }
}

/* partial (taps, filters) at the tile's first tap and filter = the sums
 * over `count` images (the first at images, image_size apart) and their
 * output positions of delta (positions, filters) times the window values
 * of `rows` kernel rows from the first (images already at it) by `width`
 * taps, 16 x vectors filters; with_bias: also bias (filters, at the
 * tile's first) = the sums of delta, a chain of additions in position
 * order, in two more registers. Inlined with constant vectors, rows, width
 * and with_bias, as forward_tile. */
static inline __attribute__((always_inline, target("avx512f"))) void
gradient_tile(int vectors, int rows, int width, bool with_bias, const float *images,
              int64_t image_size, int64_t image_width, int64_t stride, const float *delta,
              int64_t delta_size, int64_t filters, int64_t out_height, int64_t out_width,
              int64_t count, float *partial, float *bias)
{
    __m512 sums[2][TILE_TAPS], bias_sums[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int v = 0; v < vectors; v++)
        for (int j = 0; j < rows * width; j++)
            sums[v][j] = _mm512_setzero_ps();
    for (int64_t i = 0; i < count; i++) {
        const float *image = images + i * image_size;
        const float *d = delta + i * delta_size;
        for (int64_t oy = 0; oy < out_height; oy++) {
            const float *line = image + oy * stride * image_width;
            for (int64_t ox = 0; ox < out_width; ox++, d += filters) {
                const __m512 d0 = _mm512_loadu_ps(d);
                const __m512 d1 = vectors > 1 ? _mm512_loadu_ps(d + 16) : d0;
                if (with_bias) {
                    bias_sums[0] = _mm512_add_ps(bias_sums[0], d0);
                    if (vectors > 1)
                        bias_sums[1] = _mm512_add_ps(bias_sums[1], d1);
                }
                const float *at = line + ox * stride;
                for (int r = 0; r < rows; r++)
                    for (int kx = 0; kx < width; kx++) {
                        const __m512 value = _mm512_set1_ps(at[r * image_width + kx]);
                        sums[0][r * width + kx] = _mm512_fmadd_ps(d0, value, sums[0][r * width + kx]);
                        if (vectors > 1)
                            sums[1][r * width + kx] =
                                _mm512_fmadd_ps(d1, value, sums[1][r * width + kx]);
                    }
            }
        }
    }
    for (int v = 0; v < vectors; v++)
        for (int j = 0; j < rows * width; j++)
            _mm512_storeu_ps(partial + j * filters + 16 * v, sums[v][j]);
    if (with_bias)
        for (int v = 0; v < vectors; v++)
            _mm512_storeu_ps(bias + 16 * v, bias_sums[v]);
}

#define GRADIENT_CASE(vectors, width, with_bias)                                           \
    case width:                                                                            \
        if (rows == 2)                                                                     \
            gradient_tile(vectors, 2, width, with_bias, images, image_size, image_width,   \
                          stride, delta, delta_size, filters, out_height, out_width, count, \
                          partial, bias);                                                  \
        else                                                                               \
            gradient_tile(vectors, 1, width, with_bias, images, image_size, image_width,   \
                          stride, delta, delta_size, filters, out_height, out_width, count, \
                          partial, bias);                                                  \
        break;
#define GRADIENT_SWITCH(vectors, with_bias)                                                \
    switch (width) {                                                                       \
        GRADIENT_CASE(vectors, 1, with_bias) GRADIENT_CASE(vectors, 2, with_bias)          \
        GRADIENT_CASE(vectors, 3, with_bias) GRADIENT_CASE(vectors, 4, with_bias)          \
        GRADIENT_CASE(vectors, 5, with_bias) GRADIENT_CASE(vectors, 6, with_bias)          \
        GRADIENT_CASE(vectors, 7, with_bias) GRADIENT_CASE(vectors, 8, with_bias)          \
        GRADIENT_CASE(vectors, 9, with_bias) GRADIENT_CASE(vectors, 10, with_bias)         \
        GRADIENT_CASE(vectors, 11, with_bias) GRADIENT_CASE(vectors, 12, with_bias)        \
    }

/* bias: NULL, or where the tile also puts the sums of its delta */
__attribute__((target("avx512f"))) static void
gradient_block(int vectors, int rows, int width, const float *images, int64_t image_size,
               int64_t image_width, int64_t stride, const float *delta, int64_t delta_size,
               int64_t filters, int64_t out_height, int64_t out_width, int64_t count,
               float *partial, float *bias)
{
    if (bias && vectors == 2)
        GRADIENT_SWITCH(2, true)
    else if (bias)
        GRADIENT_SWITCH(1, true)
    else if (vectors == 2)
        GRADIENT_SWITCH(2, false)
    else
        GRADIENT_SWITCH(1, false)
}
#else
static void forward_block(int vectors, int positions, int64_t stride, const float *strip,
                          int64_t strip_width, int64_t kernel_height, int64_t kernel_width,
                          const float *taps, int64_t filters, epilogue finish, const float *bias,
                          float *out)
{
    (void)vectors, (void)positions, (void)stride, (void)strip, (void)strip_width;
    (void)kernel_height, (void)kernel_width, (void)taps, (void)filters, (void)finish, (void)bias;
    (void)out;
}

static void order_streamed_stores(void) {}

static void pool_block(int vectors, int pairs, int64_t stride, const float *strip,
                       int64_t strip_width, int64_t kernel_height, int64_t kernel_width,
                       const float *taps, int64_t filters, const float *bias, float *y,
                       int64_t y_row, float *pooled, uint8_t *codes)
{
    (void)vectors, (void)pairs, (void)stride, (void)strip, (void)strip_width;
    (void)kernel_height, (void)kernel_width, (void)taps, (void)filters, (void)bias, (void)y;
    (void)y_row, (void)pooled, (void)codes;
}

static void gradient_block(int vectors, int rows, int width, const float *images,
                           int64_t image_size, int64_t image_width, int64_t stride,
                           const float *delta, int64_t delta_size, int64_t filters,
                           int64_t out_height, int64_t out_width, int64_t count, float *partial,
                           float *bias)
{
    (void)vectors, (void)rows, (void)width, (void)images, (void)image_size, (void)image_width;
    (void)stride, (void)delta, (void)delta_size, (void)filters, (void)out_height;
    (void)out_width, (void)count, (void)partial, (void)bias;
}
#endif

/* Where a 2x2 max pooling's outputs go when forward_pass makes them too
 * (NULL: it does not). */
typedef struct pool_output {
    float *pooled;
    uint8_t *codes;
} pool_output;

/* One output row (r: image n's row oy) by blocks of at most 12 positions,
 * equal in size (24 as 12 + 12, 25 as 9 + 8 + 8). */
static void forward_row(const ax_window_geometry *g, int64_t filters, const float *strip,
                        int64_t strip_width, const float *taps, epilogue finish,
                        const float *bias, float *out_row)
{
    const int64_t blocks = (g->out_width + TILE_POSITIONS - 1) / TILE_POSITIONS;
    for (int64_t b = 0; b < blocks; b++) {
        const int64_t first = b * g->out_width / blocks;
        const int positions = (int)((b + 1) * g->out_width / blocks - first);
        for (int64_t f0 = 0; f0 < filters; f0 += 32)
            forward_block(filters - f0 >= 32 ? 2 : 1, positions, g->stride,
                          strip + first * g->stride, strip_width, g->kernel_height,
                          g->kernel_width, taps + f0, filters, finish, bias ? bias + f0 : NULL,
                          out_row + first * filters + f0);
    }
}

/* Two output rows (from image row oy and oy + 1) and the pooled row
 * between them, in blocks of at most 3 windows (pool_tile). */
static void pool_row(const ax_window_geometry *g, int64_t filters, const float *strip,
                     int64_t strip_width, const float *taps, const float *bias, float *out_row,
                     float *pooled_row, uint8_t *codes_row)
{
    const int64_t windows = g->out_width / 2, blocks = (windows + 2) / 3;
    const int64_t y_row = g->out_width * filters;
    for (int64_t b = 0; b < blocks; b++) {
        const int64_t first = b * windows / blocks;
        const int pairs = (int)((b + 1) * windows / blocks - first);
        for (int64_t f0 = 0; f0 < filters; f0 += 32)
            pool_block(filters - f0 >= 32 ? 2 : 1, pairs, g->stride,
                       strip + 2 * first * g->stride, strip_width, g->kernel_height,
                       g->kernel_width, taps + f0, filters, bias + f0,
                       out_row + 2 * first * filters + f0, y_row,
                       pooled_row + first * filters + f0, codes_row + first * filters + f0);
    }
}

static bool forward_pass(const ax_window_geometry *g, int64_t filters, const float *x,
                         const float *weights, epilogue finish, const float *bias, float *z,
                         int64_t images, bool round_bf16, const pool_output *pool)
{
    if (!ax_conv_one_channel_takes(g, filters))
        return false;
    const int64_t kh = g->kernel_height, kw = g->kernel_width, area = kh * kw;
    /* strips copied where padded, read in place otherwise; a pooled pass's
     * covers two output rows */
    const bool copied = g->padding;
    const int64_t strip_width = copied ? ax_window_read_width(g) : g->width;
    const int64_t strip_rows = pool ? kh + g->stride : kh;
    const int threads = omp_get_max_threads();
    /* the weights as (kh, kw, filters): a tap's filters side by side */
    float *taps = malloc((size_t)(area * filters) * sizeof *taps);
    float *strips =
        copied ? malloc((size_t)(threads * strip_rows * strip_width) * sizeof *strips) : NULL;
    /* bf16: the batch's images rounded once (vectors, all threads), not
     * each value in kernel_height strips, one at a time */
    float *rounded = round_bf16 ? malloc((size_t)(images * g->height * g->width) * sizeof *rounded)
                                : NULL;
    if (!taps || (copied && !strips) || (round_bf16 && !rounded)) {
        free(taps);
        free(strips);
        free(rounded);
        return false;
    }
    if (round_bf16) {
        ax_bf16_round_values(rounded, x, images * g->height * g->width);
        x = rounded;
    }
    for (int64_t f = 0; f < filters; f++)
        for (int64_t t = 0; t < area; t++)
            taps[t * filters + f] = operand(weights[f * area + t], round_bf16);
    /* the parallel unit: an output row, or a pooled pass's pair of them */
    const int64_t step = pool ? 2 : 1, rows = images * g->out_height / step;
#pragma omp parallel for schedule(static) num_threads(threads) \
    if (rows * step * g->out_width * filters * area >= 65536)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t n = r * step / g->out_height, oy = r * step % g->out_height;
        const float *image = x + n * g->height * g->width;
        const float *strip = image + oy * g->stride * g->width;
        if (copied) {
            float *own = strips + (int64_t)omp_get_thread_num() * strip_rows * strip_width;
            copy_padded(image, g->height, g->width, oy * g->stride - g->padding, -g->padding,
                        strip_rows, strip_width, false, own);
            strip = own;
        }
        float *out_row = z + r * step * g->out_width * filters;
        if (pool) {
            pool_row(g, filters, strip, strip_width, taps, bias, out_row,
                     pool->pooled + r * g->out_width / 2 * filters,
                     pool->codes + r * g->out_width / 2 * filters);
            order_streamed_stores();
        } else
            forward_row(g, filters, strip, strip_width, taps, finish, bias, out_row);
    }
    free(taps);
    free(strips);
    free(rounded);
    return true;
}

bool ax_conv_one_channel_forward(const ax_window_geometry *geometry, int64_t filters,
                                 const float *x, const float *weights, float *z, int64_t images,
                                 bool round_bf16)
{
    return forward_pass(geometry, filters, x, weights, EPILOGUE_NONE, NULL, z, images,
                        round_bf16, NULL);
}

/* the epilogue that gives bias_activation's bits, if any */
static bool epilogue_of(ax_activation activation, epilogue *finish)
{
    if (activation != AX_ACT_IDENTITY && activation != AX_ACT_RELU)
        return false;
    *finish = activation == AX_ACT_RELU ? EPILOGUE_BIAS_RELU : EPILOGUE_BIAS;
    return true;
}

bool ax_conv_one_channel_forward_bias_activation(const ax_window_geometry *geometry,
                                                 int64_t filters, const float *x,
                                                 const float *weights, const float *bias,
                                                 ax_activation activation, float *z,
                                                 int64_t images, bool round_bf16)
{
    epilogue finish;
    return epilogue_of(activation, &finish) &&
           forward_pass(geometry, filters, x, weights, finish, bias, z, images, round_bf16, NULL);
}

bool ax_conv_one_channel_forward_relu_max_pool(const ax_window_geometry *geometry,
                                               int64_t filters, const ax_window_geometry *pool,
                                               const float *x, const float *weights,
                                               const float *bias, float *y, float *pooled,
                                               uint8_t *codes, int64_t images, bool round_bf16)
{
    /* 2x2 windows of stride 2 that tile the convolution's output */
    if (!(ax_max_pool_2x2_tiles(pool) && pool->channels == filters &&
          pool->height == geometry->out_height && pool->width == geometry->out_width))
        return false;
    const pool_output output = {pooled, codes};
    return forward_pass(geometry, filters, x, weights, EPILOGUE_BIAS_RELU, bias, y, images,
                        round_bf16, &output);
}

/* rounded (positions, filters) = delta rounded to bfloat16; bias (where
 * not NULL) = the sums of the unrounded delta over the positions, each a
 * chain of additions in position order (the float32 tiles' bits), in the
 * same pass. Filters in 16s (ax_conv_one_channel_takes). */
static void round_delta_scalar(float *rounded, const float *delta, int64_t positions,
                               int64_t filters, float *bias)
{
    if (bias) {
        memset(bias, 0, (size_t)filters * sizeof *bias);
        for (int64_t q = 0; q < positions; q++)
            for (int64_t f = 0; f < filters; f++)
                bias[f] += delta[q * filters + f];
    }
    ax_bf16_round_values_serial(rounded, delta, positions * filters);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) static void round_delta(float *rounded, const float *delta,
                                                           int64_t positions, int64_t filters,
                                                           float *bias)
{
    if (!ax_cpu_kernels_avx512f() || filters % 16) {
        round_delta_scalar(rounded, delta, positions, filters, bias);
        return;
    }
    for (int64_t f0 = 0; f0 < filters; f0 += 16) {
        __m512 sums = _mm512_setzero_ps();
        for (int64_t q = 0; q < positions; q++) {
            const __m512 values = _mm512_loadu_ps(delta + q * filters + f0);
            sums = _mm512_add_ps(sums, values);
            _mm512_storeu_ps(rounded + q * filters + f0, ax_bf16_round16(values));
        }
        if (bias)
            _mm512_storeu_ps(bias + f0, sums);
    }
}
#else
static void round_delta(float *rounded, const float *delta, int64_t positions, int64_t filters,
                        float *bias)
{
    round_delta_scalar(rounded, delta, positions, filters, bias);
}
#endif

typedef struct one_channel_product {
    const ax_window_geometry *geometry;
    int64_t filters;
    const float *delta, *x;
    bool round_bf16;
    int64_t widest;       /* images of the largest slice */
    float *bias_gradient; /* NULL: none asked */
    const ax_pooled_delta *pooled; /* where not NULL, delta's stand-in */
} one_channel_product;

/* partial (kh, kw, filters) = the weight gradient of images [first, first +
 * count): each tile streams the slice once. */
static bool gradient_slice(void *context, int64_t first, int64_t count, void *own, void *partial)
{
    const one_channel_product *p = context;
    const ax_window_geometry *g = p->geometry;
    const int64_t kh = g->kernel_height, kw = g->kernel_width;
    const float *images = p->x + first * g->height * g->width;
    int64_t image_size = g->height * g->width, image_width = g->width;
    const int64_t places = g->out_height * g->out_width;
    const float *delta = p->delta + first * places * p->filters;
    if (p->pooled) { /* the slice's delta made last in the thread's scratch */
        float *made = (float *)own + ax_conv_direct_thread_reals(g, p->filters, p->widest,
                                                                 p->round_bf16, false);
        ax_pooled_delta_make(p->pooled, first, count, made);
        delta = made;
    }
    /* the bias sums (filters) after the weights: in float32 the first tile
     * of each filter block adds them as it streams delta; in bf16, whose
     * tiles read a rounded copy, a pass over the unrounded delta here (the
     * same chains of additions in position order) */
    float *bias = p->bias_gradient ? (float *)partial + kh * kw * p->filters : NULL;
    if (g->padding || p->round_bf16) { /* the slice's images, padded, in the thread's scratch */
        const int64_t rows = ax_window_read_height(g), cols = ax_window_read_width(g);
        for (int64_t i = 0; i < count; i++)
            copy_padded(images + i * image_size, g->height, g->width, -g->padding, -g->padding,
                        rows, cols, p->round_bf16, (float *)own + i * rows * cols);
        images = own;
        image_size = rows * cols;
        image_width = cols;
    }
    if (p->round_bf16) { /* and its delta, rounded, after the widest slice's images */
        float *rounded = (float *)own + p->widest * image_size;
        round_delta(rounded, delta, count * places, p->filters, bias);
        delta = rounded;
    }
    for (int64_t f0 = 0; f0 < p->filters; f0 += 32) {
        const int vectors = p->filters - f0 >= 32 ? 2 : 1;
        const int most_rows = vectors * 2 * kw <= TILE_TAPS ? 2 : 1;
        for (int64_t ky = 0; ky < kh; ky += most_rows) {
            const int rows = kh - ky < most_rows ? (int)(kh - ky) : most_rows;
            gradient_block(vectors, rows, (int)kw, images + ky * image_width, image_size,
                           image_width, g->stride, delta + f0, places * p->filters, p->filters,
                           g->out_height, g->out_width, count,
                           (float *)partial + ky * kw * p->filters + f0,
                           bias && !p->round_bf16 && ky == 0 ? bias + f0 : NULL);
        }
    }
    return true;
}

/* (kh kw, filters) to torch's (filters, 1, kh, kw) */
static bool gradient_finish(void *context, const void *sum, void *weight_gradient)
{
    const one_channel_product *p = context;
    const int64_t area = p->geometry->kernel_height * p->geometry->kernel_width;
    const float *s = sum;
    float *out = weight_gradient;
    for (int64_t f = 0; f < p->filters; f++)
        for (int64_t t = 0; t < area; t++)
            out[f * area + t] = s[t * p->filters + f];
    if (p->bias_gradient)
        memcpy(p->bias_gradient, s + area * p->filters, (size_t)p->filters * sizeof *s);
    return true;
}

static bool gradient_over_slices(ax_conv_weight_scratch *scratch,
                                 const ax_window_geometry *geometry, int64_t filters,
                                 const float *delta, const ax_pooled_delta *pooled,
                                 const float *x, float *weight_gradient, float *bias_gradient,
                                 int64_t images, bool round_bf16)
{
    if (!ax_conv_one_channel_takes(geometry, filters))
        return false;
    const int64_t widest = ax_cpu_conv_weight_widest(geometry, images);
    one_channel_product p = {geometry, filters, delta,         x,
                             round_bf16, widest, bias_gradient, pooled};
    const int64_t weights = filters * geometry->kernel_height * geometry->kernel_width;
    const ax_conv_slice_product product = {
        .context = &p,
        .weights = weights,
        .partial_reals = weights + (bias_gradient ? filters : 0),
        .thread_bytes =
            (size_t)ax_conv_direct_thread_reals(geometry, filters, widest, round_bf16,
                                                pooled != NULL) *
            sizeof(float),
        .slice = gradient_slice,
        .finish = gradient_finish,
    };
    return ax_cpu_conv_weight_slices_sum(scratch, sizeof(float), geometry, images, &product,
                                         weight_gradient);
}

bool ax_conv_one_channel_weight_gradient(ax_conv_weight_scratch *scratch,
                                         const ax_window_geometry *geometry, int64_t filters,
                                         const float *delta, const float *x,
                                         float *weight_gradient, float *bias_gradient,
                                         int64_t images, bool round_bf16)
{
    return gradient_over_slices(scratch, geometry, filters, delta, NULL, x, weight_gradient,
                                bias_gradient, images, round_bf16);
}

bool ax_conv_one_channel_weight_gradient_pooled(ax_conv_weight_scratch *scratch,
                                                const ax_window_geometry *geometry,
                                                int64_t filters, const ax_pooled_delta *pooled,
                                                const float *x, float *weight_gradient,
                                                float *bias_gradient, int64_t images,
                                                bool round_bf16)
{
    return gradient_over_slices(scratch, geometry, filters, NULL, pooled, x, weight_gradient,
                                bias_gradient, images, round_bf16);
}
