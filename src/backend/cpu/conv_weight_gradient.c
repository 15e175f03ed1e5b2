/* conv_weight_gradient.c: see conv_weight_gradient.h. The weight gradient
 * is one product summed over every position of the batch, dW (filters,
 * kh kw channels) = delta^T (filters, positions) columns (positions,
 * kh kw channels), with few filters and window values and a long sum
 * (73,728 positions at LeNet's first layer, batch 128). A multithreaded
 * BLAS splits only the short sides, and splitting the sum across threads
 * would make the order of addition follow the thread count. So the batch's
 * images are cut into slices whose count and boundaries follow from the
 * batch and the layer's shape alone; each slice's im2col (or the caller's
 * columns, kept from the forward pass, where it has them) and product (the
 * backend's own GEMM, which runs on one thread inside a parallel region:
 * nested OpenMP regions are inactive by default and the OpenMP OpenBLAS
 * runs one thread when omp_in_parallel) go to whichever thread takes it,
 * into the slice's own partial sums; the partials are then added slice 0,
 * 1, 2, ... for every element, and transposed into torch's order. The
 * bits therefore depend on the batch and the shape, never on how many
 * threads ran the slices (one thread runs the very same calls). Slices go
 * in waves of at most WAVE, so the partials' memory is bounded whatever
 * the batch; the running sum carries from one wave to the next in the
 * same slice order. In bf16 (round_bf16) each slice's columns are always
 * gathered (the forward pass's are unrounded float32) and rounded in
 * place, and its delta rounded into the thread's buffer beside them, so
 * the float32 product multiplies exactly the bf16 GEMM's operands; the
 * rounding works value by value, on the slice's thread. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/bf16_round.h"
#include "backend/cpu/conv_weight_gradient.h"
#include "backend/cpu/cpu_image.h"
#include "base/memory.h"

enum {
    /* Slices of a batch at least (fewer only when it has fewer images, or
     * too few positions for that many): enough for 16 cores with a few
     * each to balance uneven slices. */
    LEAST_SLICES = 32,
    /* Positions of a slice at least: fewer spend the product's time in
     * writing its partial sums and the BLAS's per-call work (LeNet's second
     * layer, 64 positions an image: 4 images a slice took 1.35x as long
     * as 8 on one thread). */
    LEAST_POSITIONS = 512,
    /* Partial sums held at once. */
    WAVE = 32,
    /* Weights of a layer at most: a layer with more declines (the layer's
     * own path then runs one GEMM whose sides are long enough for the BLAS
     * to split across threads by itself), so a wave's partials stay within
     * 32 x 2^18 values (32 MB in float32). */
    MOST_WEIGHTS = 1 << 18,
    /* A slice's columns at most (unless one image needs more): 4 MB in
     * float32, within a core's share of the last-level cache. */
    SLICE_REALS = 1 << 20,
};

static int64_t per_image(const ax_window_geometry *g)
{
    return g->out_height * g->out_width * g->kernel_height * g->kernel_width * g->channels;
}

int64_t ax_cpu_conv_weight_slices(const ax_window_geometry *geometry, int64_t images)
{
    if (images <= 0)
        return 0;
    const int64_t values = per_image(geometry);
    const int64_t most_images = values >= SLICE_REALS ? 1 : SLICE_REALS / values;
    const int64_t by_size = (images + most_images - 1) / most_images;
    const int64_t places = geometry->out_height * geometry->out_width;
    const int64_t least_images = places >= LEAST_POSITIONS
                                     ? 1
                                     : (LEAST_POSITIONS + places - 1) / places;
    const int64_t by_positions = (images + least_images - 1) / least_images;
    const int64_t least = by_positions < LEAST_SLICES ? by_positions : LEAST_SLICES;
    return by_size > least ? by_size : least;
}

int64_t ax_cpu_conv_weight_widest(const ax_window_geometry *geometry, int64_t images)
{
    const int64_t slices = ax_cpu_conv_weight_slices(geometry, images);
    return slices ? (images + slices - 1) / slices : 0;
}

/* Slice s of count over images: [first, end), sizes differing by one. */
static int64_t slice_first(int64_t s, int64_t count, int64_t images)
{
    return s * images / count;
}

void ax_conv_weight_scratch_free(ax_conv_weight_scratch *scratch)
{
    free(scratch->memory);
    scratch->memory = NULL;
    scratch->bytes = 0;
}

static bool scratch_reserve(ax_conv_weight_scratch *scratch, size_t bytes)
{
    if (scratch->bytes >= bytes)
        return true;
    void *memory = ax_allocate_zeroed(bytes);
    if (!memory)
        return false;
    free(scratch->memory);
    scratch->memory = memory;
    scratch->bytes = bytes;
    return true;
}

/* delta (images, 2 out_height, 2 out_width, channels) = dy at each 2x2
 * window's coded position (0-3, row order), 0 at the others and in every
 * position of a window coded 4 (none) */
static void delta_from_codes(const ax_window_geometry *g, const uint8_t *codes, const float *dy,
                             float *delta, int64_t images)
{
    const int64_t c = g->channels, row = g->width * c, windows = images * g->out_height * g->out_width;
    for (int64_t w = 0; w < windows; w++) {
        const int64_t band = w / g->out_width, ox = w % g->out_width;
        float *restrict d00 = delta + band * 2 * row + ox * 2 * c, *restrict d01 = d00 + c;
        float *restrict d10 = d00 + row, *restrict d11 = d10 + c;
        const uint8_t *code = codes + w * c;
        const float *top = dy + w * c;
#pragma omp simd
        for (int64_t ch = 0; ch < c; ch++) {
            const float value = top[ch];
            d00[ch] = code[ch] == 0 ? value : 0.0f;
            d01[ch] = code[ch] == 1 ? value : 0.0f;
            d10[ch] = code[ch] == 2 ? value : 0.0f;
            d11[ch] = code[ch] == 3 ? value : 0.0f;
        }
    }
}

void ax_pooled_delta_make(const ax_pooled_delta *pooled, int64_t first, int64_t count,
                          float *delta)
{
    const ax_window_geometry *g = pooled->pool;
    const int64_t in = g->height * g->width * g->channels;
    const int64_t out = g->out_height * g->out_width * g->channels;
    if (pooled->codes) {
        delta_from_codes(g, pooled->codes + first * out, pooled->dy + first * out, delta, count);
        return;
    }
    /* per image and exact (a select and a mask); its own OpenMP loop is
     * inactive inside the slices' parallel region */
    ax_cpu_max_pool_backward_relu_f32(NULL, g, pooled->y + first * in, pooled->dy + first * out,
                                      delta, count);
}

/* sum (count) = sum (when carry) + parts[0] + parts[1] + ... + parts[n-1]
 * (stride values apart), left to right for every element, whatever thread
 * adds it. A block of elements at a time, partial by partial: one stream
 * at a time for the prefetcher, where element by element (n streams at
 * once) took 5x as long (docs/notes/conv.md). */
enum { ADD_BLOCK = 512 };
#define ADD_PARTIALS(suffix, real)                                                          \
    static void add_partials_##suffix(real *sum, bool carry, const real *parts, int64_t n,   \
                                      int64_t count, int64_t stride)                        \
    {                                                                                       \
        _Pragma("omp parallel for schedule(static) if (n * count >= 65536)")               \
        for (int64_t first = 0; first < count; first += ADD_BLOCK) {                        \
            const int64_t block = count - first < ADD_BLOCK ? count - first : ADD_BLOCK;    \
            real value[ADD_BLOCK];                                                          \
            for (int64_t e = 0; e < block; e++)                                             \
                value[e] = carry ? sum[first + e] + parts[first + e] : parts[first + e];     \
            for (int64_t s = 1; s < n; s++) {                                               \
                const real *part = parts + s * stride + first;                              \
                _Pragma("omp simd")                                                         \
                for (int64_t e = 0; e < block; e++)                                         \
                    value[e] += part[e];                                                    \
            }                                                                               \
            memcpy(sum + first, value, (size_t)block * sizeof(real));                       \
        }                                                                                   \
    }
ADD_PARTIALS(f32, float)
ADD_PARTIALS(f64, double)

bool ax_cpu_conv_weight_slices_sum(ax_conv_weight_scratch *scratch, size_t real_size,
                                   const ax_window_geometry *geometry, int64_t images,
                                   const ax_conv_slice_product *product, void *weight_gradient)
{
    const bool f64 = real_size == sizeof(double);
    const int64_t reals = product->partial_reals;
    if (reals > MOST_WEIGHTS)
        return false;
    const int64_t slices = ax_cpu_conv_weight_slices(geometry, images);
    const size_t partial_bytes = ((size_t)reals * real_size + 63) & ~(size_t)63;
    if (slices == 0) { /* no images: finish from zero sums, so every output it has is zero */
        if (!scratch_reserve(scratch, partial_bytes))
            return false;
        memset(scratch->memory, 0, partial_bytes);
        return product->finish(product->context, scratch->memory, weight_gradient);
    }
    const int64_t wave_slices = slices < WAVE ? slices : WAVE;
    const int threads = omp_get_max_threads();
    /* [the running sum; a wave's partials; each thread's scratch] */
    const size_t thread_bytes = (product->thread_bytes + 63) & ~(size_t)63;
    if (!scratch_reserve(scratch, partial_bytes * (size_t)(1 + wave_slices) +
                                      (size_t)threads * thread_bytes))
        return false;
    char *sum = scratch->memory;
    char *partials = sum + partial_bytes;
    char *thread_scratch = partials + partial_bytes * (size_t)wave_slices;
    const int64_t stride = (int64_t)(partial_bytes / real_size); /* reals between partials */

    bool failed = false;
    for (int64_t wave = 0; wave < slices && !failed; wave += WAVE) {
        const int64_t n = slices - wave < WAVE ? slices - wave : WAVE;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) reduction(|| : failed)
        for (int64_t i = 0; i < n; i++) {
            const int64_t first = slice_first(wave + i, slices, images);
            const int64_t count = slice_first(wave + i + 1, slices, images) - first;
            char *own = thread_scratch + (size_t)omp_get_thread_num() * thread_bytes;
            if (!product->slice(product->context, first, count, own,
                                partials + (size_t)i * partial_bytes))
                failed = true;
        }
        if (failed)
            break;
        if (f64)
            add_partials_f64((double *)sum, wave > 0, (const double *)partials, n, reals, stride);
        else
            add_partials_f32((float *)sum, wave > 0, (const float *)partials, n, reals, stride);
    }
    return !failed && product->finish(product->context, sum, weight_gradient);
}

/* The GEMM product: a slice's columns (the caller's, or gathered into the
 * thread's scratch), in bf16 rounded there with its delta, times its delta
 * through the backend's GEMM; partials in the columns' order
 * (filters, kh kw, channels), transposed into torch's at the end. */
typedef struct gemm_product {
    ax_backend *backend;
    ax_cpu_gemm_function *gemm;
    const ax_window_geometry *geometry;
    int64_t filters, places, patch;
    const char *delta, *x, *columns;
    int64_t column_reals, delta_reals; /* a thread's scratch: columns, then the rounded delta */
    bool round_bf16;
} gemm_product;

static bool gemm_slice(void *context, int64_t first, int64_t count, void *own, void *partial)
{
    const gemm_product *p = context;
    const ax_window_geometry *g = p->geometry;
    const size_t real = p->backend->real_size;
    const size_t image_in = (size_t)(g->height * g->width * g->channels) * real;
    const size_t image_out = (size_t)(p->places * p->filters) * real;
    const char *slice_columns;
    const char *slice_delta = p->delta + (size_t)first * image_out;
    if (p->columns) {
        slice_columns = p->columns + (size_t)(first * p->places * p->patch) * real;
    } else {
        const char *slice_x = p->x + (size_t)first * image_in;
        if (real == sizeof(double))
            ax_cpu_im2col_f64(p->backend, g, slice_x, own, count);
        else
            ax_cpu_im2col_f32(p->backend, g, slice_x, own, count);
        slice_columns = own;
    }
    if (p->round_bf16) {
        float *rounded = (float *)own + (p->column_reals - p->delta_reals);
        ax_bf16_round_values_serial(own, own, count * p->places * p->patch);
        ax_bf16_round_values_serial(rounded, (const float *)slice_delta,
                                    count * p->places * p->filters);
        slice_delta = (const char *)rounded;
    }
    p->gemm(p->backend, true, false, p->filters, p->patch, count * p->places, 1.0, slice_delta,
            p->filters, slice_columns, p->patch, 0.0, partial, p->patch);
    return true;
}

/* (filters, kh kw, channels) to (filters, channels, kh kw) */
static bool gemm_finish(void *context, const void *sum, void *weight_gradient)
{
    const gemm_product *p = context;
    const ax_window_geometry *g = p->geometry;
    const int64_t area = g->kernel_height * g->kernel_width;
    if (p->backend->real_size == sizeof(double))
        ax_cpu_transpose_f64(p->backend, sum, weight_gradient, p->filters, area, g->channels);
    else
        ax_cpu_transpose_f32(p->backend, sum, weight_gradient, p->filters, area, g->channels);
    return true;
}

bool ax_cpu_conv_weight_gradient(ax_backend *backend, ax_conv_weight_scratch *scratch,
                                 ax_cpu_gemm_function *gemm, const ax_window_geometry *geometry,
                                 int64_t filters, const void *delta, const void *x,
                                 const void *columns, void *weight_gradient, int64_t images,
                                 bool round_bf16)
{
    const int64_t patch = geometry->kernel_height * geometry->kernel_width * geometry->channels;
    const int64_t places = geometry->out_height * geometry->out_width;
    const int64_t widest = ax_cpu_conv_weight_widest(geometry, images);
    if (round_bf16)
        columns = NULL; /* the forward pass's are unrounded float32 */
    gemm_product p = {
        .backend = backend, .gemm = gemm, .geometry = geometry,
        .filters = filters, .places = places, .patch = patch,
        .delta = delta, .x = x, .columns = columns, .round_bf16 = round_bf16,
    };
    p.delta_reals = round_bf16 ? widest * places * filters : 0;
    p.column_reals = (columns ? 0 : widest * places * patch) + p.delta_reals;
    const ax_conv_slice_product product = {
        .context = &p,
        .weights = filters * patch,
        .partial_reals = filters * patch,
        .thread_bytes = (size_t)p.column_reals * backend->real_size,
        .slice = gemm_slice,
        .finish = gemm_finish,
    };
    return ax_cpu_conv_weight_slices_sum(scratch, backend->real_size, geometry, images, &product,
                                         weight_gradient);
}
