/* conv_weight_direct.c: see conv_weight_direct.h. A tile holds the sums of
 * one tap's (ky, kx) gradient for up to 64 filters (4 vectors) by a few
 * input channels (6 at 4 vectors: 24 registers) and streams a chunk of
 * output positions: each position's filter vectors are loaded once and
 * meet each channel's window value, broadcast, so the FMA pipes rather
 * than the loads set the pace. A chunk is about 64 positions (whole
 * images, or rows of one), whose deltas and images stay in L1 while every
 * tap and channel block of the slice's partial sums (in L2) runs over
 * them; where the bias gradient is asked for, each chunk's delta is added
 * into its sums there too. Padding is made real in a copy of the slice's
 * images in the thread's scratch; in bf16 that copy, and one of the
 * slice's deltas, hold the operands rounded. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/bf16_round.h"
#include "backend/cpu/conv_weight_direct.h"
#include "backend/cpu/cpu_features.h"

enum {
    MOST_WEIGHTS = 1 << 17,  /* 512 KB of partial sums: within a core's L2 */
    CHUNK_POSITIONS = 64,    /* LeNet's second layer: one 8x8 image */
    MOST_VECTORS = 4,        /* filter vectors of a tile */
};

bool ax_conv_weight_direct_takes(const ax_window_geometry *g, int64_t filters)
{
    if (!(g->channels >= 2 && filters > 0 && filters % 16 == 0 && g->kernel_height >= 1 &&
          g->kernel_width >= 1 && g->stride >= 1 && g->padding >= 0 && g->out_height > 0 &&
          g->out_width > 0 &&
          filters * g->channels * g->kernel_height * g->kernel_width <= MOST_WEIGHTS &&
          ax_cpu_kernels_avx512f()))
        return false;
    const char *asked = getenv("AXON_CONV_DIRECT");
    return !(asked && strcmp(asked, "off") == 0);
}

/* Channels of a tile with this many filter vectors: 24 sums at most, and
 * at least 8 independent chains for the FMA pipes' latency. */
static int tile_channels(int vectors)
{
    return vectors == 4 ? 6 : vectors == 3 ? 8 : 12;
}

/* out (read_height, read_width, channels) = image with its padding made
 * real: zeros outside it. */
static void copy_padded(const ax_window_geometry *g, const float *image, float *out)
{
    const int64_t rows = ax_window_read_height(g), cols = ax_window_read_width(g), c = g->channels;
    for (int64_t r = 0; r < rows; r++) {
        const int64_t iy = r - g->padding;
        for (int64_t col = 0; col < cols; col++, out += c) {
            const int64_t ix = col - g->padding;
            if (iy < 0 || iy >= g->height || ix < 0 || ix >= g->width)
                memset(out, 0, (size_t)c * sizeof *out);
            else
                memcpy(out, image + (iy * g->width + ix) * c, (size_t)c * sizeof *out);
        }
    }
}

/* Where a tile reads: images (the chunk's first, at the tap's first window
 * value and the tile's first channel), image_size apart; an output row
 * row_step values down, a position step across; delta (the chunk's first
 * position, at the tile's first filter), delta_size per image. */
typedef struct tile_source {
    const float *images;
    int64_t image_size, row_step, step;
    const float *delta;
    int64_t delta_size, filters;
    int64_t images_count, rows, out_width;
} tile_source;

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* partial (channels, filters), at the tile's first channel and filter, +=
 * the chunk's sums for `channels` channels by 16 x vectors filters.
 * Inlined with constant vectors and channels: the sums stay in registers. */
static inline __attribute__((always_inline, target("avx512f"))) void
tile(int vectors, int channels, const tile_source *s, float *partial)
{
    /* the source's fields in locals: the loops then keep them in registers */
    const float *images = s->images, *delta = s->delta;
    const int64_t image_size = s->image_size, row_step = s->row_step, step = s->step;
    const int64_t delta_size = s->delta_size, filters = s->filters;
    const int64_t count = s->images_count, rows = s->rows, out_width = s->out_width;
    __m512 sums[MOST_VECTORS][12];
    for (int v = 0; v < vectors; v++)
        for (int j = 0; j < channels; j++)
            sums[v][j] = _mm512_loadu_ps(partial + j * filters + 16 * v);
    for (int64_t i = 0; i < count; i++) {
        const float *image = images + i * image_size;
        const float *d = delta + i * delta_size;
        for (int64_t oy = 0; oy < rows; oy++) {
            const float *line = image + oy * row_step;
            for (int64_t ox = 0; ox < out_width; ox++, d += filters) {
                __m512 dv[MOST_VECTORS];
                for (int v = 0; v < vectors; v++)
                    dv[v] = _mm512_loadu_ps(d + 16 * v);
                const float *at = line + ox * step;
                for (int j = 0; j < channels; j++) {
                    const __m512 value = _mm512_set1_ps(at[j]);
                    for (int v = 0; v < vectors; v++)
                        sums[v][j] = _mm512_fmadd_ps(dv[v], value, sums[v][j]);
                }
            }
        }
    }
    for (int v = 0; v < vectors; v++)
        for (int j = 0; j < channels; j++)
            _mm512_storeu_ps(partial + j * filters + 16 * v, sums[v][j]);
}

#define TILE_CASE(vectors, channels)                                                       \
    case channels:                                                                         \
        tile(vectors, channels, s, partial);                                               \
        break;
#define TILE_CASES_6(vectors)                                                              \
    TILE_CASE(vectors, 1) TILE_CASE(vectors, 2) TILE_CASE(vectors, 3) TILE_CASE(vectors, 4) \
    TILE_CASE(vectors, 5) TILE_CASE(vectors, 6)
#define TILE_CASES_8(vectors) TILE_CASES_6(vectors) TILE_CASE(vectors, 7) TILE_CASE(vectors, 8)
#define TILE_CASES_12(vectors)                                                             \
    TILE_CASES_8(vectors) TILE_CASE(vectors, 9) TILE_CASE(vectors, 10)                     \
    TILE_CASE(vectors, 11) TILE_CASE(vectors, 12)

__attribute__((target("avx512f"))) static void tile_block(int vectors, int channels,
                                                          const tile_source *s, float *partial)
{
    switch (vectors) {
    case 4:
        switch (channels) { TILE_CASES_6(4) }
        break;
    case 3:
        switch (channels) { TILE_CASES_8(3) }
        break;
    case 2:
        switch (channels) { TILE_CASES_12(2) }
        break;
    default:
        switch (channels) { TILE_CASES_12(1) }
        break;
    }
}
#else
static void tile_block(int vectors, int channels, const tile_source *s, float *partial)
{
    (void)vectors, (void)channels, (void)s, (void)partial;
}
#endif

typedef struct direct_product {
    const ax_window_geometry *geometry;
    int64_t filters;
    const float *delta, *x;
    bool round_bf16;
    int64_t widest;       /* images of the largest slice */
    float *bias_gradient; /* NULL: none asked */
    const ax_pooled_delta *pooled; /* where not NULL, delta's stand-in */
} direct_product;

/* bias (filters) += the unrounded delta of `positions` positions, each
 * filter's sum a chain of additions in position order */
static void bias_sums(const float *delta, int64_t positions, int64_t filters, float *bias)
{
    for (int64_t q = 0; q < positions; q++, delta += filters)
        for (int64_t f = 0; f < filters; f++)
            bias[f] += delta[f];
}

/* One chunk (images [0, count) of images, output rows [row, row + rows)):
 * every tap, filter block and channel block of partial (kh, kw, channels,
 * filters) += its sums. images: (count, image_rows, image_cols, channels). */
static void chunk_sums(const direct_product *p, const float *images, int64_t image_rows,
                       int64_t image_cols, const float *delta, int64_t count, int64_t row,
                       int64_t rows, float *partial)
{
    const ax_window_geometry *g = p->geometry;
    const int64_t c = g->channels, f = p->filters, row_size = image_cols * c;
    tile_source s = {
        .image_size = image_rows * row_size,
        .row_step = g->stride * row_size,
        .step = g->stride * c,
        .delta_size = g->out_height * g->out_width * f,
        .filters = f,
        .images_count = count,
        .rows = rows,
        .out_width = g->out_width,
    };
    for (int64_t ky = 0; ky < g->kernel_height; ky++)
        for (int64_t kx = 0; kx < g->kernel_width; kx++) {
            const float *window = images + (row * g->stride + ky) * row_size + kx * c;
            float *tap = partial + (ky * g->kernel_width + kx) * c * f;
            for (int64_t f0 = 0; f0 < f; f0 += 16 * MOST_VECTORS) {
                const int vectors = f - f0 >= 64 ? MOST_VECTORS : (int)((f - f0) / 16);
                const int most = tile_channels(vectors);
                s.delta = delta + row * g->out_width * f + f0;
                for (int64_t c0 = 0; c0 < c; c0 += most) {
                    s.images = window + c0;
                    tile_block(vectors, c - c0 < most ? (int)(c - c0) : most, &s,
                               tap + c0 * f + f0);
                }
            }
        }
}

/* partial (kh, kw, channels, filters) = the weight gradient of images
 * [first, first + count), a chunk of positions at a time. */
static bool direct_slice(void *context, int64_t first, int64_t count, void *own, void *partial)
{
    const direct_product *p = context;
    const ax_window_geometry *g = p->geometry;
    const int64_t c = g->channels, places = g->out_height * g->out_width;
    const float *images = p->x + first * g->height * g->width * c;
    int64_t image_rows = g->height, image_cols = g->width;
    const float *delta = p->delta + first * places * p->filters;
    if (p->pooled) { /* the slice's delta made last in the thread's scratch */
        float *made = (float *)own + ax_conv_direct_thread_reals(g, p->filters, p->widest,
                                                                 p->round_bf16, false);
        ax_pooled_delta_make(p->pooled, first, count, made);
        delta = made;
    }
    const float *unrounded = delta;
    if (g->padding || p->round_bf16) { /* the slice's images, padded, in the thread's scratch */
        image_rows = ax_window_read_height(g), image_cols = ax_window_read_width(g);
        const int64_t copied = image_rows * image_cols * c;
        for (int64_t i = 0; i < count; i++)
            copy_padded(g, images + i * g->height * g->width * c, (float *)own + i * copied);
        images = own;
        if (p->round_bf16)
            ax_bf16_round_values_serial(own, own, count * copied);
    }
    if (p->round_bf16) { /* and its delta, rounded, after the widest slice's images */
        float *rounded =
            (float *)own + p->widest * ax_window_read_height(g) * ax_window_read_width(g) * c;
        ax_bf16_round_values_serial(rounded, delta, count * places * p->filters);
        delta = rounded;
    }
    const int64_t weights = p->filters * c * g->kernel_height * g->kernel_width;
    float *bias = p->bias_gradient ? (float *)partial + weights : NULL;
    memset(partial, 0, (size_t)(weights + (bias ? p->filters : 0)) * sizeof(float));
    const int64_t image_size = image_rows * image_cols * c, delta_size = places * p->filters;
    /* each chunk's delta, while in L1, also into the bias sums */
    if (places <= CHUNK_POSITIONS) { /* whole images a chunk */
        const int64_t per_chunk = CHUNK_POSITIONS / places;
        for (int64_t i = 0; i < count; i += per_chunk) {
            const int64_t n = count - i < per_chunk ? count - i : per_chunk;
            chunk_sums(p, images + i * image_size, image_rows, image_cols, delta + i * delta_size,
                       n, 0, g->out_height, partial);
            if (bias)
                bias_sums(unrounded + i * delta_size, n * places, p->filters, bias);
        }
    } else { /* rows of one image a chunk */
        const int64_t per_chunk =
            CHUNK_POSITIONS > g->out_width ? CHUNK_POSITIONS / g->out_width : 1;
        for (int64_t i = 0; i < count; i++)
            for (int64_t row = 0; row < g->out_height; row += per_chunk) {
                const int64_t rows =
                    g->out_height - row < per_chunk ? g->out_height - row : per_chunk;
                chunk_sums(p, images + i * image_size, image_rows, image_cols,
                           delta + i * delta_size, 1, row, rows, partial);
                if (bias)
                    bias_sums(unrounded + i * delta_size + row * g->out_width * p->filters,
                              rows * g->out_width, p->filters, bias);
            }
    }
    return true;
}

void ax_conv_weight_from_taps(const ax_window_geometry *g, int64_t filters, const float *sum,
                              float *weight_gradient, float *bias_gradient)
{
    const int64_t area = g->kernel_height * g->kernel_width, c = g->channels;
    for (int64_t t = 0; t < area; t++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t filter = 0; filter < filters; filter++)
                weight_gradient[(filter * c + ch) * area + t] = sum[(t * c + ch) * filters + filter];
    if (bias_gradient)
        memcpy(bias_gradient, sum + area * c * filters, (size_t)filters * sizeof(float));
}

static bool direct_finish(void *context, const void *sum, void *weight_gradient)
{
    const direct_product *p = context;
    ax_conv_weight_from_taps(p->geometry, p->filters, sum, weight_gradient, p->bias_gradient);
    return true;
}

static bool gradient_over_slices(ax_conv_weight_scratch *scratch,
                                 const ax_window_geometry *geometry, int64_t filters,
                                 const float *delta, const ax_pooled_delta *pooled,
                                 const float *x, float *weight_gradient, float *bias_gradient,
                                 int64_t images, bool round_bf16)
{
    if (!ax_conv_weight_direct_takes(geometry, filters))
        return false;
    const int64_t widest = ax_cpu_conv_weight_widest(geometry, images);
    direct_product p = {geometry, filters, delta, x, round_bf16, widest, bias_gradient, pooled};
    const int64_t weights =
        filters * geometry->channels * geometry->kernel_height * geometry->kernel_width;
    const ax_conv_slice_product product = {
        .context = &p,
        .weights = weights,
        .partial_reals = weights + (bias_gradient ? filters : 0),
        .thread_bytes = (size_t)ax_conv_direct_thread_reals(geometry, filters, widest,
                                                            round_bf16, pooled != NULL) *
                        sizeof(float),
        .slice = direct_slice,
        .finish = direct_finish,
    };
    return ax_cpu_conv_weight_slices_sum(scratch, sizeof(float), geometry, images, &product,
                                         weight_gradient);
}

bool ax_conv_weight_direct(ax_conv_weight_scratch *scratch, const ax_window_geometry *geometry,
                           int64_t filters, const float *delta, const float *x,
                           float *weight_gradient, float *bias_gradient, int64_t images,
                           bool round_bf16)
{
    return gradient_over_slices(scratch, geometry, filters, delta, NULL, x, weight_gradient,
                                bias_gradient, images, round_bf16);
}

bool ax_conv_weight_direct_pooled(ax_conv_weight_scratch *scratch,
                                  const ax_window_geometry *geometry, int64_t filters,
                                  const ax_pooled_delta *pooled, const float *x,
                                  float *weight_gradient, float *bias_gradient, int64_t images,
                                  bool round_bf16)
{
    return gradient_over_slices(scratch, geometry, filters, NULL, pooled, x, weight_gradient,
                                bias_gradient, images, round_bf16);
}
