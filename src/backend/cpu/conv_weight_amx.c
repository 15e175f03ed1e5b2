/* conv_weight_amx.c: see conv_weight_amx.h. Each tap's (ky, kx) gradient
 * is a product, dW_tap (channels x filters) = X_tap (channels x positions)
 * times D (positions x filters), summed over the slice's positions. AMX's
 * TDPBF16PS multiplies an A tile of 16 channels by up to 32 positions with
 * a B tile of the same positions, in pairs, by 16 filters (consecutive
 * positions interleaved) into a C tile of 16 x 16 float32 sums.
 *
 * With stride 1, a tap's window values over R whole output rows are
 * contiguous in a copy of each channel's padded plane shifted left by kx
 * and cut to the output width (made even): the kernel width's such copies
 * of the slice's images (bf16, channel planes) make every A tile a plain
 * strided load of R x width positions, R the most rows of at most 32
 * positions that divide the output's height. The slice's delta is copied once,
 * rounded, in B's interleaved layout over the same positions (zeros where
 * the even width overhangs). Four C tiles (2
 * channel blocks x 2 filter blocks) stay in the tile registers over the
 * slice's positions; the other four hold the A and B tiles. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/amx_tiles.h"
#include "backend/cpu/bf16_round.h"
#include "backend/cpu/conv_weight_amx.h"
#include "backend/cpu/conv_weight_direct.h"
#include "backend/cpu/cpu_features.h"

enum {
    MOST_WEIGHTS = 1 << 17, /* 512 KB of partial sums: within a core's L2 */
    TILE = 16,              /* a tile's rows; and float32 columns */
    MOST_K = 32,            /* bf16 values in a tile row (64 bytes) */
};

/* How a slice's positions meet the tiles: an A tile covers `rows` output
 * rows of `width` positions (the output width made even), k of them. */
typedef struct amx_layout {
    int64_t width, rows, k;
    int64_t groups;     /* A tiles down an image: out_height / rows */
    int64_t plane_rows; /* a shifted plane's rows: the padded image's */
    int64_t plane;      /* its values: plane_rows x width */
} amx_layout;

static amx_layout layout_of(const ax_window_geometry *g)
{
    amx_layout l;
    l.width = g->out_width + (g->out_width & 1);
    /* whole groups of rows: an overhanging group's zero deltas would meet
     * the image's next rows, and 0 x infinity is NaN */
    l.rows = MOST_K / l.width;
    while (g->out_height % l.rows)
        l.rows--;
    l.k = l.rows * l.width;
    l.groups = g->out_height / l.rows;
    l.plane_rows = ax_window_read_height(g);
    l.plane = l.plane_rows * l.width;
    return l;
}

/* bf16 values of a thread's scratch for slices of `widest` images: the
 * shifted planes, the interleaved delta, one image's planes */
static int64_t thread_values(const ax_window_geometry *g, int64_t filters, int64_t widest)
{
    const amx_layout l = layout_of(g);
    return g->kernel_width * widest * g->channels * l.plane + widest * l.groups * l.k * filters +
           g->channels * g->height * g->width;
}

/* ------------------------------------------------------------------ mode */

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };

static bool granted = false;
static pthread_once_t grant_once = PTHREAD_ONCE_INIT;

/* AMX-TILE and AMX-BF16 (CPUID leaf 7, EDX bits 24 and 22), and Linux's
 * grant of the tile state to this process (asked once; oneDNN asks too) */
static void ask_grant(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 22)))
        return;
    granted = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}
#else
static bool granted = false;
static pthread_once_t grant_once = PTHREAD_ONCE_INIT;
static void ask_grant(void) {}
#endif

ax_conv_amx_mode ax_conv_amx_mode_chosen(void)
{
    const char *asked = getenv("AXON_CONV_AMX");
    if (asked && strcmp(asked, "off") == 0)
        return AX_CONV_AMX_OFF;
    if (asked && strcmp(asked, "emulate") == 0)
        return AX_CONV_AMX_EMULATED;
    const char *direct = getenv("AXON_CONV_DIRECT"); /* axon's own kernels off */
    if ((direct && strcmp(direct, "off") == 0) || ax_cpu_kernels_generic())
        return AX_CONV_AMX_OFF;
    pthread_once(&grant_once, ask_grant);
    /* every AMX CPU has AVX-512, which the planes' transposes use; a CPU
     * that reports AMX without it (an emulator's) is not trusted */
    return granted && ax_cpu_kernels_avx512f() ? AX_CONV_AMX_HARDWARE : AX_CONV_AMX_OFF;
}

/* the layer's shape suits the kernel (ax_conv_weight_amx_takes less the mode) */
static bool shape_taken(const ax_window_geometry *g, int64_t filters)
{
    return g->stride == 1 && g->channels > 0 && g->channels % TILE == 0 && filters > 0 &&
           filters % TILE == 0 && g->kernel_height >= 1 && g->kernel_width >= 1 &&
           g->padding >= 0 && g->out_height > 0 && g->out_width > 0 &&
           g->out_width <= MOST_K &&
           filters * g->channels * g->kernel_height * g->kernel_width <= MOST_WEIGHTS;
}

bool ax_conv_weight_amx_takes(const ax_window_geometry *g, int64_t filters)
{
    return shape_taken(g, filters) && ax_conv_amx_mode_chosen() != AX_CONV_AMX_OFF;
}

/* ------------------------------------------------------------ the tiles */

/* One tap's C tiles over a slice: channel block(s) by filter block(s) of
 * partial (kh, kw, channels, filters) = the sum over the slice's images
 * and groups of rows of A (16 channel planes, stride apart) times B. */
typedef struct block_source {
    const uint16_t *a, *b;             /* the first image's first group, first blocks */
    int64_t a_image, a_group, a_block; /* values to the next image, group, 16 channels */
    int64_t b_image, b_group;          /* values to the next image, group */
    int64_t a_stride, b_stride;        /* values between tile rows */
    int64_t images, groups, k;
    bool two_channel_blocks, two_filter_blocks;
    float *c;         /* partial at the tap, first channel, first filter */
    int64_t c_stride; /* filters: floats between the C tile's rows */
} block_source;

/* The tiles' arithmetic in scalar C (AXON_CONV_AMX=emulate), in the
 * tiles' order. */
static void block_emulated(const block_source *s)
{
    static _Thread_local float sums[2][2][TILE][TILE];
    memset(sums, 0, sizeof sums);
    const int blocks_c = s->two_channel_blocks ? 2 : 1, blocks_f = s->two_filter_blocks ? 2 : 1;
    for (int64_t i = 0; i < s->images; i++)
        for (int64_t grp = 0; grp < s->groups; grp++)
            for (int cb = 0; cb < blocks_c; cb++)
                for (int fb = 0; fb < blocks_f; fb++)
                    ax_amx_dpbf16ps_emulated(
                        &sums[cb][fb][0][0], TILE,
                        s->a + i * s->a_image + grp * s->a_group + cb * s->a_block, s->a_stride,
                        s->b + i * s->b_image + grp * s->b_group + fb * 2 * TILE, s->b_stride,
                        TILE, s->k);
    for (int cb = 0; cb < blocks_c; cb++)
        for (int fb = 0; fb < blocks_f; fb++)
            for (int m = 0; m < TILE; m++)
                memcpy(s->c + (cb * TILE + m) * s->c_stride + fb * TILE, sums[cb][fb][m],
                       sizeof sums[cb][fb][m]);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Tiles 0-3: C (16 x 16 float32); 4, 5: A (16 x k bf16); 6, 7: B (k/2
 * pairs x 16 filters), for this thread until amx_end. */
static void amx_begin(int64_t k)
{
    uint8_t rows[AX_AMX_TILES];
    uint16_t bytes[AX_AMX_TILES];
    for (int t = 0; t < AX_AMX_TILES; t++) {
        rows[t] = t < 6 ? TILE : (uint8_t)(k / 2);
        bytes[t] = t == 4 || t == 5 ? (uint16_t)(k * 2) : 4 * TILE;
    }
    ax_amx_configure(rows, bytes);
}

static void amx_end(void) { ax_amx_release(); }

__attribute__((target("amx-tile,amx-bf16"))) static void block_amx(const block_source *s)
{
    const bool two_c = s->two_channel_blocks, two_f = s->two_filter_blocks;
    const int64_t as = s->a_stride * 2, bs = s->b_stride * 2, cs = s->c_stride * 4;
    /* GCC 12's tile loads and stores are asm that names no memory: the
     * copies must be written before them, the sums read after */
    __asm__ volatile("" : : : "memory");
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t i = 0; i < s->images; i++)
        for (int64_t grp = 0; grp < s->groups; grp++) {
            const uint16_t *a = s->a + i * s->a_image + grp * s->a_group;
            const uint16_t *b = s->b + i * s->b_image + grp * s->b_group;
            _tile_loadd(4, a, as);
            _tile_loadd(6, b, bs);
            _tile_dpbf16ps(0, 4, 6);
            if (two_f) {
                _tile_loadd(7, b + 2 * TILE, bs);
                _tile_dpbf16ps(1, 4, 7);
            }
            if (two_c) {
                _tile_loadd(5, a + s->a_block, as);
                _tile_dpbf16ps(2, 5, 6);
                if (two_f)
                    _tile_dpbf16ps(3, 5, 7);
            }
        }
    _tile_stored(0, s->c, cs);
    if (two_f)
        _tile_stored(1, s->c + TILE, cs);
    if (two_c) {
        _tile_stored(2, s->c + TILE * s->c_stride, cs);
        if (two_f)
            _tile_stored(3, s->c + TILE * s->c_stride + TILE, cs);
    }
    __asm__ volatile("" : : : "memory");
}
#else
static void amx_begin(int64_t k) { (void)k; }
static void amx_end(void) {}
static void block_amx(const block_source *s) { block_emulated(s); }
#endif

/* -------------------------------------------------------------- layouts */

typedef struct amx_product {
    const ax_window_geometry *geometry;
    int64_t filters;
    const float *delta, *x;
    int64_t widest;
    float *bias_gradient; /* NULL: none asked */
    amx_layout layout;
    bool hardware;
} amx_product;

/* planes (channels, pixels) = image (pixels, channels) rounded to bf16
 * (bf16_round.h's rounding). With AVX-512, 16 pixels by 16 channels at a
 * time transposed in registers and rounded 16 to a vector, a contiguous
 * store to each plane; the pixels past a multiple of 16, and CPUs without
 * AVX-512, one value at a time. */
static void transpose_scalar(const float *image, int64_t first, int64_t pixels, int64_t channels,
                             uint16_t *planes)
{
    const uint32_t *in = (const uint32_t *)image;
    for (int64_t q = first; q < pixels; q++)
        for (int64_t ch = 0; ch < channels; ch++)
            planes[ch * pixels + q] = (uint16_t)(ax_bf16_round_bits(in[q * channels + ch]) >> 16);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) static void transpose_rounded(const float *image, int64_t pixels,
                                                                 int64_t channels, uint16_t *planes)
{
    if (!ax_cpu_kernels_avx512f()) {
        transpose_scalar(image, 0, pixels, channels, planes);
        return;
    }
    const int64_t blocks = pixels / TILE * TILE;
    for (int64_t q = 0; q < blocks; q += TILE)
        for (int64_t c0 = 0; c0 < channels; c0 += TILE) {
            __m512 columns[TILE];
            ax_transpose_16x16(image + q * channels + c0, channels, columns);
            for (int k = 0; k < TILE; k++)
                _mm256_storeu_si256((__m256i *)(planes + (c0 + k) * pixels + q), ax_bf16_pack16(columns[k]));
        }
    transpose_scalar(image, blocks, pixels, channels, planes);
}
#else
static void transpose_rounded(const float *image, int64_t pixels, int64_t channels,
                              uint16_t *planes)
{
    transpose_scalar(image, 0, pixels, channels, planes);
}
#endif

/* One channel's shifted plane (plane_rows x width) from its plane (height
 * x image_width): row r holds the plane's row r - pad from column
 * kx - pad on, its columns [low, high) inside the image, zeros elsewhere.
 * The width is at most 32 bf16 (one vector): with AVX-512BW a row is one
 * masked load, lane shift and masked store; else copies and fills (at
 * LeNet's conv2 these library calls took two thirds of a slice's time
 * on an AMX Xeon, 186 of 251 us). */
static void shift_rows_scalar(const uint16_t *from, int64_t height, int64_t image_width,
                              int64_t pad, int64_t kx, int64_t low, int64_t high,
                              const amx_layout *l, uint16_t *to)
{
    for (int64_t row = 0; row < l->plane_rows; row++, to += l->width) {
        const int64_t iy = row - pad;
        if (iy < 0 || iy >= height || low >= high) {
            memset(to, 0, (size_t)l->width * sizeof *to);
            continue;
        }
        memset(to, 0, (size_t)low * sizeof *to);
        memcpy(to + low, from + iy * image_width + low + kx - pad,
               (size_t)(high - low) * sizeof *to);
        memset(to + high, 0, (size_t)(l->width - high) * sizeof *to);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f,avx512bw"))) static void
shift_rows_avx512(const uint16_t *from, int64_t height, int64_t image_width, int64_t pad,
                  int64_t kx, int64_t low, int64_t high, const amx_layout *l, uint16_t *to)
{
    const __mmask32 row = (__mmask32)((UINT64_C(1) << l->width) - 1);
    const __mmask32 taken = (__mmask32)((UINT64_C(1) << (high - low)) - 1);
    const __mmask32 inside = (__mmask32)(taken << low);
    /* lane j takes loaded lane j - low (the load starts at column low) */
    uint16_t index[32];
    for (int j = 0; j < 32; j++)
        index[j] = (uint16_t)(j >= low ? j - low : 0);
    const __m512i lanes = _mm512_loadu_si512(index);
    for (int64_t r = 0; r < l->plane_rows; r++, to += l->width) {
        const int64_t iy = r - pad;
        __m512i values = _mm512_setzero_si512();
        if (iy >= 0 && iy < height && low < high) {
            values = _mm512_maskz_loadu_epi16(taken, from + iy * image_width + low + kx - pad);
            values = _mm512_maskz_permutexvar_epi16(inside, lanes, values);
        }
        _mm512_mask_storeu_epi16(to, row, values);
    }
}
#endif

/* shifted (kw, count, channels, plane_rows, width) at image i = the
 * image's channel planes (made in planes: channels, height x width),
 * padded, shifted left by kx, cut to the output width, zero beyond it */
static void copy_shifted(const amx_product *p, const float *image, int64_t i, int64_t count,
                         uint16_t *planes, uint16_t *shifted)
{
    const ax_window_geometry *g = p->geometry;
    const amx_layout *l = &p->layout;
    const int64_t c = g->channels, pixels = g->height * g->width, pad = g->padding;
#if defined(__x86_64__) && defined(__GNUC__)
    const bool vector = ax_cpu_kernels_avx512bw();
#endif
    transpose_rounded(image, pixels, c, planes);
    for (int64_t kx = 0; kx < g->kernel_width; kx++) {
        /* the output columns whose window column ix = e + kx - pad is inside */
        const int64_t low = pad - kx > 0 ? pad - kx : 0;
        const int64_t high = g->width + pad - kx < g->out_width ? g->width + pad - kx : g->out_width;
        for (int64_t ch = 0; ch < c; ch++) {
            const uint16_t *from = planes + ch * pixels;
            uint16_t *to = shifted + ((kx * count + i) * c + ch) * l->plane;
#if defined(__x86_64__) && defined(__GNUC__)
            if (vector) {
                shift_rows_avx512(from, g->height, g->width, pad, kx, low, high, l, to);
                continue;
            }
#endif
            shift_rows_scalar(from, g->height, g->width, pad, kx, low, high, l, to);
        }
    }
}

/* pair (filters x 2) = first and second (NULL: zeros), rounded and
 * interleaved: one 32-bit word a filter, the first in its low half */
static void pack_pair(uint16_t *pair, const float *first, const float *second, int64_t filters)
{
    const uint32_t *a = (const uint32_t *)first, *b = (const uint32_t *)second;
#pragma omp simd
    for (int64_t f = 0; f < filters; f++) {
        const uint32_t word = (ax_bf16_round_bits(a[f]) >> 16) |
                              (b ? ax_bf16_round_bits(b[f]) & 0xffff0000u : 0u);
        memcpy(pair + 2 * f, &word, sizeof word);
    }
}

/* pairs (count, groups x k / 2, filters, 2) = the slice's delta rounded,
 * positions (row, column) of rows of the even width, two consecutive
 * positions interleaved, zero where the width overhangs; bias (where not
 * NULL) += the unrounded delta in position order */
static void copy_pairs(const amx_product *p, const float *delta, int64_t count, uint16_t *pairs,
                       float *bias)
{
    const ax_window_geometry *g = p->geometry;
    const amx_layout *l = &p->layout;
    const int64_t f = p->filters, ow = g->out_width;
    for (int64_t i = 0; i < count; i++) {
        const float *d = delta + i * g->out_height * ow * f;
        uint16_t *to = pairs + i * l->groups * l->k * f;
        for (int64_t row = 0; row < g->out_height; row++)
            for (int64_t col = 0; col < l->width; col += 2) {
                const float *first = d + (row * ow + col) * f;
                const float *second = col + 1 < ow ? first + f : NULL;
                pack_pair(to + (row * l->width + col) * f, first, second, f);
                if (bias)
                    for (int64_t filter = 0; filter < f; filter++) {
                        bias[filter] += first[filter];
                        if (second)
                            bias[filter] += second[filter];
                    }
            }
    }
}

/* partial (kh, kw, channels, filters), then the bias's sums where asked =
 * the gradient of images [first, first + count) */
static bool amx_slice(void *context, int64_t first, int64_t count, void *own, void *partial)
{
    const amx_product *p = context;
    const ax_window_geometry *g = p->geometry;
    const amx_layout *l = &p->layout;
    const int64_t c = g->channels, f = p->filters;
    const int64_t weights = f * c * g->kernel_height * g->kernel_width;
    uint16_t *shifted = own;
    uint16_t *pairs = shifted + g->kernel_width * p->widest * c * l->plane;
    uint16_t *planes = pairs + p->widest * l->groups * l->k * f;
    float *bias = p->bias_gradient ? (float *)partial + weights : NULL;
    if (bias)
        memset(bias, 0, (size_t)f * sizeof *bias);
    for (int64_t i = 0; i < count; i++)
        copy_shifted(p, p->x + (first + i) * g->height * g->width * c, i, count, planes, shifted);
    copy_pairs(p, p->delta + first * g->out_height * g->out_width * f, count, pairs, bias);
    block_source s = {
        .a_image = c * l->plane,
        .a_group = l->rows * l->width,
        .a_block = TILE * l->plane,
        .b_image = l->groups * l->k * f,
        .b_group = l->k * f,
        .a_stride = l->plane,
        .b_stride = 2 * f,
        .images = count,
        .groups = l->groups,
        .k = l->k,
        .c_stride = f,
    };
    if (p->hardware)
        amx_begin(l->k);
    for (int64_t ky = 0; ky < g->kernel_height; ky++)
        for (int64_t kx = 0; kx < g->kernel_width; kx++) {
            float *tap = (float *)partial + (ky * g->kernel_width + kx) * c * f;
            for (int64_t c0 = 0; c0 < c; c0 += 2 * TILE)
                for (int64_t f0 = 0; f0 < f; f0 += 2 * TILE) {
                    s.a = shifted + (kx * count * c + c0) * l->plane + ky * l->width;
                    s.b = pairs + 2 * f0;
                    s.two_channel_blocks = c - c0 >= 2 * TILE;
                    s.two_filter_blocks = f - f0 >= 2 * TILE;
                    s.c = tap + c0 * f + f0;
                    if (p->hardware)
                        block_amx(&s);
                    else
                        block_emulated(&s);
                }
        }
    if (p->hardware)
        amx_end();
    return true;
}

static bool amx_finish(void *context, const void *sum, void *weight_gradient)
{
    const amx_product *p = context;
    ax_conv_weight_from_taps(p->geometry, p->filters, sum, weight_gradient, p->bias_gradient);
    return true;
}

bool ax_conv_weight_amx(ax_conv_weight_scratch *scratch, const ax_window_geometry *geometry,
                        int64_t filters, const float *delta, const float *x,
                        float *weight_gradient, float *bias_gradient, int64_t images)
{
    const ax_conv_amx_mode mode = ax_conv_amx_mode_chosen(); /* read once a call */
    if (mode == AX_CONV_AMX_OFF || !shape_taken(geometry, filters))
        return false;
    const int64_t widest = ax_cpu_conv_weight_widest(geometry, images);
    const amx_product p = {
        .geometry = geometry,
        .filters = filters,
        .delta = delta,
        .x = x,
        .widest = widest,
        .bias_gradient = bias_gradient,
        .layout = layout_of(geometry),
        .hardware = mode == AX_CONV_AMX_HARDWARE,
    };
    const int64_t weights =
        filters * geometry->channels * geometry->kernel_height * geometry->kernel_width;
    const ax_conv_slice_product product = {
        .context = (void *)&p,
        .weights = weights,
        .partial_reals = weights + (bias_gradient ? filters : 0),
        .thread_bytes = (size_t)thread_values(geometry, filters, widest) * sizeof(uint16_t),
        .slice = amx_slice,
        .finish = amx_finish,
    };
    return ax_cpu_conv_weight_slices_sum(scratch, sizeof(float), geometry, images, &product,
                                         weight_gradient);
}
