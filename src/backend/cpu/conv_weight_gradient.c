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

/* dst = src rounded to bfloat16 on the calling thread, with bf16_round.h's
 * one rounding. Not ax_bf16_round_values: at a slice's counts it took
 * 1.3-1.8 ns a value on the 2-core Xeon against 0.2 for this loop (LeNet's
 * first weight gradient, batch 128: 3.1 ms against 1.7). */
static void round_to_bf16(float *dst, const float *src, int64_t count)
{
    uint32_t *out = (uint32_t *)dst;
    const uint32_t *in = (const uint32_t *)src;
#pragma omp simd
    for (int64_t i = 0; i < count; i++)
        out[i] = ax_bf16_round_bits(in[i]);
}

/* sum (count) = sum (when carry) + parts[0] + parts[1] + ... + parts[n-1],
 * left to right for every element, whatever thread adds it. */
#define ADD_PARTIALS(suffix, real)                                                          \
    static void add_partials_##suffix(real *sum, bool carry, const real *parts, int64_t n,   \
                                      int64_t count)                                        \
    {                                                                                       \
        _Pragma("omp parallel for schedule(static) if (n * count >= 65536)")               \
        for (int64_t e = 0; e < count; e++) {                                               \
            real value = carry ? sum[e] + parts[e] : parts[e];                              \
            for (int64_t s = 1; s < n; s++)                                                 \
                value += parts[s * count + e];                                              \
            sum[e] = value;                                                                 \
        }                                                                                   \
    }
ADD_PARTIALS(f32, float)
ADD_PARTIALS(f64, double)

bool ax_cpu_conv_weight_gradient(ax_backend *backend, ax_conv_weight_scratch *scratch,
                                 ax_cpu_gemm_function *gemm, const ax_window_geometry *geometry,
                                 int64_t filters, const void *delta, const void *x,
                                 const void *columns, void *weight_gradient, int64_t images,
                                 bool round_bf16)
{
    const bool f64 = backend->real_size == sizeof(double);
    const size_t real = backend->real_size;
    const int64_t area = geometry->kernel_height * geometry->kernel_width;
    const int64_t patch = area * geometry->channels;
    const int64_t places = geometry->out_height * geometry->out_width;
    const int64_t weights = filters * patch;
    if (weights > MOST_WEIGHTS)
        return false;
    const int64_t slices = ax_cpu_conv_weight_slices(geometry, images);
    if (slices == 0) {
        memset(weight_gradient, 0, (size_t)weights * real);
        return true;
    }
    const int64_t widest = (images + slices - 1) / slices; /* images of the largest slice */
    const int64_t wave_slices = slices < WAVE ? slices : WAVE;
    const int threads = omp_get_max_threads();
    if (round_bf16)
        columns = NULL;
    /* [the running sum (filters, patch); a wave's partials; each thread's
     * columns, unless the caller's are there to read, then in bf16 its
     * rounded delta] */
    const int64_t delta_reals = round_bf16 ? widest * places * filters : 0;
    const int64_t column_reals = (columns ? 0 : widest * places * patch) + delta_reals;
    const size_t bytes =
        (size_t)(weights * (1 + wave_slices) + (int64_t)threads * column_reals) * real;
    if (!scratch_reserve(scratch, bytes))
        return false;
    char *sum = scratch->memory;
    char *partials = sum + (size_t)weights * real;
    char *own_columns = partials + (size_t)(wave_slices * weights) * real;
    const size_t image_in = (size_t)(geometry->height * geometry->width * geometry->channels) * real;
    const size_t image_out = (size_t)(places * filters) * real;

    for (int64_t wave = 0; wave < slices; wave += WAVE) {
        const int64_t n = slices - wave < WAVE ? slices - wave : WAVE;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
        for (int64_t i = 0; i < n; i++) {
            const int64_t first = slice_first(wave + i, slices, images);
            const int64_t count = slice_first(wave + i + 1, slices, images) - first;
            const char *slice_columns;
            const char *slice_delta = (const char *)delta + (size_t)first * image_out;
            char *own = own_columns + (size_t)omp_get_thread_num() * (size_t)column_reals * real;
            if (columns) {
                slice_columns = (const char *)columns + (size_t)(first * places * patch) * real;
            } else {
                const char *slice_x = (const char *)x + (size_t)first * image_in;
                if (f64)
                    ax_cpu_im2col_f64(backend, geometry, slice_x, own, count);
                else
                    ax_cpu_im2col_f32(backend, geometry, slice_x, own, count);
                slice_columns = own;
            }
            if (round_bf16) {
                float *rounded = (float *)own + (column_reals - delta_reals);
                round_to_bf16((float *)own, (const float *)own, count * places * patch);
                round_to_bf16(rounded, (const float *)slice_delta, count * places * filters);
                slice_delta = (const char *)rounded;
            }
            gemm(backend, true, false, filters, patch, count * places, 1.0,
                 slice_delta, filters, slice_columns, patch,
                 0.0, partials + (size_t)(i * weights) * real, patch);
        }
        if (f64)
            add_partials_f64((double *)sum, wave > 0, (const double *)partials, n, weights);
        else
            add_partials_f32((float *)sum, wave > 0, (const float *)partials, n, weights);
    }
    /* (filters, kh kw, channels) to (filters, channels, kh kw) */
    if (f64)
        ax_cpu_transpose_f64(backend, sum, weight_gradient, filters, area, geometry->channels);
    else
        ax_cpu_transpose_f32(backend, sum, weight_gradient, filters, area, geometry->channels);
    return true;
}
