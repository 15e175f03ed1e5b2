/* test_conv_weight_direct.c: the CPU's direct weight gradient of
 * convolutions with several input channels
 * (src/backend/cpu/conv_weight_direct.c):
 * - bit for bit against the definition written here in the kernels'
 *   order: each slice of the batch (ax_cpu_conv_weight_slices' cut) a
 *   chain of fmaf from 0 over its positions (image, output row, output
 *   column; padding's zeros included: fma(d, 0, s) = s), the slices then
 *   added left to right; and that reference against float64 sums within
 *   gamma_K sum |delta x| (K the batch's positions; Higham 3.1);
 * - over LeNet's second layer and shapes that take every tile (1 to 4
 *   filter vectors, 1 to 12 channels a tile, several filter blocks),
 *   padding 0 to 2, strides 1 to 3, 1x1 to 5x5 kernels, chunks of whole
 *   images and of rows (outputs wider than a chunk), batches of 1, 7 and
 *   20 images (1 and 9 for the two largest shapes);
 * - the same bits on 1, 2 and 3 threads;
 * - with the bias gradient (backend.h: conv_backward_weights_bias): the
 *   same weight gradient bit for bit, and the bias as the sums of the
 *   unrounded delta in the slices' order of additions, bit for bit, within
 *   gamma_K of float64's (conv_bias_reference.h);
 * - in bf16 (operands rounded to bfloat16 by bf16_round.h's rounding, their
 *   float32 products exact) against the same definition on rounded copies;
 * - NaN and infinities in the operands reach the sums they touch;
 * - an empty batch gives zeros, the bias gradient's too;
 * - the float32 backend's conv_backward_weights and
 *   conv_backward_weights_bias, and the bf16 backend's conv_backward_weights
 *   in its rounded mode, run the kernels (same bits; bf16's
 *   conv_backward_weights_bias declines); AXON_CONV_DIRECT=off turns them
 *   off;
 * - layers they do not take (one channel, 24 filters, more than 2^17
 *   weights) are declined with nothing written.
 * The kernels need AVX-512: on a CPU without it (or AXON_CPU_KERNELS=generic)
 * only the declines are checked. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/cpu/bf16_round.h"
#include "backend/cpu/conv_weight_direct.h"
#include "backend/cpu/cpu_features.h"
#include "conv_bias_reference.h"
#include "conv_test_shapes.h"
#include "test_util.h"

static uint64_t random_state = 2028;

static float *random_floats(int64_t n)
{
    return random_floats_from(&random_state, n);
}

/* channel c of x's value under window tap (ky, kx) of output (oy, ox) of
 * image n, 0 in the padding */
static float window_value(const shape *s, const float *x, int64_t n, int64_t oy, int64_t ox,
                          int64_t ky, int64_t kx, int64_t c)
{
    const ax_window_geometry *g = &s->g;
    const int64_t iy = oy * g->stride - g->padding + ky, ix = ox * g->stride - g->padding + kx;
    if (iy < 0 || iy >= g->height || ix < 0 || ix >= g->width)
        return 0.0f;
    return x[((n * g->height + iy) * g->width + ix) * g->channels + c];
}

/* dW (filters, channels, kh, kw) in the kernels' order: per slice a chain
 * of fmaf from 0 over its positions, the slices added left to right; and
 * beside it, in the same pass, dW and sum |terms| in float64 */
static void references(const shape *s, int64_t images, const float *x, const float *delta,
                       float *dw, double *dw64, double *dw_abs)
{
    const ax_window_geometry *g = &s->g;
    const int64_t weights = weights_of(s), kh = g->kernel_height, kw = g->kernel_width;
    const int64_t slices = ax_cpu_conv_weight_slices(g, images);
    float *part = malloc((size_t)weights * sizeof *part);
    memset(dw, 0, (size_t)weights * sizeof *dw);
    for (int64_t i = 0; i < weights; i++)
        dw64[i] = dw_abs[i] = 0.0;
    for (int64_t slice = 0; slice < slices; slice++) {
        const int64_t first = slice * images / slices, end = (slice + 1) * images / slices;
        memset(part, 0, (size_t)weights * sizeof *part);
        for (int64_t n = first; n < end; n++)
            for (int64_t oy = 0; oy < g->out_height; oy++)
                for (int64_t ox = 0; ox < g->out_width; ox++) {
                    const float *d =
                        delta + ((n * g->out_height + oy) * g->out_width + ox) * s->filters;
                    for (int64_t f = 0; f < s->filters; f++)
                        for (int64_t c = 0; c < g->channels; c++)
                            for (int64_t ky = 0; ky < kh; ky++)
                                for (int64_t kx = 0; kx < kw; kx++) {
                                    const int64_t at = ((f * g->channels + c) * kh + ky) * kw + kx;
                                    const float value = window_value(s, x, n, oy, ox, ky, kx, c);
                                    part[at] = fmaf(d[f], value, part[at]);
                                    const double term = (double)d[f] * value;
                                    dw64[at] += term;
                                    dw_abs[at] += fabs(term);
                                }
                }
        for (int64_t i = 0; i < weights; i++)
            dw[i] = slice == 0 ? part[i] : dw[i] + part[i];
    }
    free(part);
}

static void describe(const shape *s, int64_t images, bool bf16, int threads, const char *what)
{
    const ax_window_geometry *g = &s->g;
    fprintf(stderr, "%s %lldx%lldx%lld kernel %lldx%lld stride %lld padding %lld, %lld filters, "
                    "%lld images, %d threads: %s\n",
            bf16 ? "bf16" : "float32", (long long)g->height, (long long)g->width,
            (long long)g->channels, (long long)g->kernel_height, (long long)g->kernel_width,
            (long long)g->stride, (long long)g->padding, (long long)s->filters, (long long)images,
            threads, what);
    test_failures++;
}

/* with_specials: NaN and infinities among x and delta */
static void check_shape(const shape *s, int64_t images, bool bf16, bool with_specials)
{
    const int64_t inputs = inputs_of(s, images), outputs = outputs_of(s, images);
    const int64_t weights = weights_of(s);
    float *x = random_floats(inputs), *delta = random_floats(outputs);
    if (with_specials)
        put_specials(x, inputs, delta, outputs, s->filters);
    float *dw = malloc((size_t)weights * sizeof *dw);
    float *expected = malloc((size_t)weights * sizeof *dw);
    double *dw64 = malloc((size_t)weights * sizeof *dw64);
    double *dw_abs = malloc((size_t)weights * sizeof *dw_abs);
    ax_conv_weight_scratch scratch = {0};

    /* the operands the sums multiply: bf16's are rounded */
    float *x_op = bf16 ? rounded_copy(x, inputs) : x;
    float *delta_op = bf16 ? rounded_copy(delta, outputs) : delta;
    references(s, images, x_op, delta_op, expected, dw64, dw_abs);
    if (!with_specials) { /* the ordered reference is the sum it claims to be */
        const double k = (double)(images * s->g.out_height * s->g.out_width);
        const double gamma = k * 0x1p-24 / (1.0 - k * 0x1p-24);
        int64_t off = 0;
        for (int64_t i = 0; i < weights; i++)
            off += !(fabs(expected[i] - dw64[i]) <= gamma * dw_abs[i]);
        if (off)
            describe(s, images, bf16, 0, "the ordered reference beyond float64's bound");
    }
    for (int threads = 1; threads <= 3; threads++) {
        CHECK_OK(ax_set_threads(threads));
        memset(dw, 0xff, (size_t)weights * sizeof *dw);
        CHECK(ax_conv_weight_direct(&scratch, &s->g, s->filters, delta, x, dw, NULL, images, bf16));
        if (!same_values(dw, expected, weights))
            describe(s, images, bf16, threads, "not the fmaf chains' bits");
        if (with_specials)
            continue;
        /* with the bias gradient (of the unrounded delta): the same weight
         * gradient, and the bias in the slices' order of additions */
        float *dw_bias = malloc((size_t)weights * sizeof *dw_bias);
        float *bias = malloc((size_t)s->filters * sizeof *bias);
        memset(bias, 0xff, (size_t)s->filters * sizeof *bias);
        CHECK(ax_conv_weight_direct(&scratch, &s->g, s->filters, delta, x, dw_bias, bias, images,
                                    bf16));
        CHECK(memcmp(dw_bias, dw, (size_t)weights * sizeof *dw) == 0);
        CHECK(bias_matches(&s->g, s->filters, images, delta, bias));
        free(dw_bias), free(bias);
    }
    CHECK_OK(ax_set_threads(0));
    ax_conv_weight_scratch_free(&scratch);
    free(x), free(delta), free(dw), free(expected), free(dw64), free(dw_abs);
    if (bf16)
        free(x_op), free(delta_op);
}

/* The float32 backend's entry, and the bf16 backend's in its rounded mode
 * (a CPU with bf16 instructions otherwise takes oneDNN's native kernels
 * first), run the kernels: the same bits. */
static void check_backend(ax_precision precision)
{
    const bool bf16 = precision == AX_PRECISION_BF16;
    const shape s = make_shape(12, 12, 32, 5, 5, 1, 0, 64); /* LeNet's second layer */
    const int64_t images = 19, weights = weights_of(&s);
    float *x = random_floats(inputs_of(&s, images)), *delta = random_floats(outputs_of(&s, images));
    float *dw = malloc((size_t)weights * sizeof *dw);
    float *dw_direct = malloc((size_t)weights * sizeof *dw);
    ax_conv_weight_scratch scratch = {0};
    if (bf16)
        setenv("AXON_ONEDNN_BF16", "rounded", 1); /* read when the backend is made */
    ax_backend *b = ax_backend_cpu_create(precision);
    unsetenv("AXON_ONEDNN_BF16");
    /* float32's Winograd F(5x5, 4x4) would take this layer first (read at
     * each call; test_conv_winograd checks it) */
    setenv("AXON_CONV_WINOGRAD", "off", 1);
    CHECK(b && b->ops->conv_backward_weights);
    if (b && b->ops->conv_backward_weights) {
        CHECK(ax_conv_weight_direct(&scratch, &s.g, 64, delta, x, dw_direct, NULL, images, bf16));
        CHECK(b->ops->conv_backward_weights(b, &s.g, 64, delta, x, NULL, dw, images));
        CHECK(memcmp(dw, dw_direct, (size_t)weights * sizeof *dw) == 0);
        /* with the bias gradient: float32's runs the kernels; bf16's declines
         * (its bias is of the unrounded delta, its layer's own pass) */
        float bias[64], bias_direct[64];
        memset(bias, 0x7f, sizeof bias);
        memset(dw, 0x7f, (size_t)weights * sizeof *dw);
        const bool taken = b->ops->conv_backward_weights_bias &&
                           b->ops->conv_backward_weights_bias(b, &s.g, 64, delta, x, NULL, dw,
                                                              bias, images);
        CHECK(taken == !bf16);
        if (taken) {
            CHECK(ax_conv_weight_direct(&scratch, &s.g, 64, delta, x, dw_direct, bias_direct,
                                        images, false));
            CHECK(memcmp(dw, dw_direct, (size_t)weights * sizeof *dw) == 0 &&
                  memcmp(bias, bias_direct, sizeof bias) == 0);
        } else
            CHECK(bias[0] == bias[63] && dw[0] == dw[weights - 1] && !(bias[0] == 0.0f));
        /* turned off, the backend's other kernels (another order): close, not equal bits */
        setenv("AXON_CONV_DIRECT", "off", 1);
        CHECK(!ax_conv_weight_direct_takes(&s.g, 64));
        CHECK(!ax_conv_weight_direct(&scratch, &s.g, 64, delta, x, dw, NULL, images, bf16));
        CHECK(b->ops->conv_backward_weights(b, &s.g, 64, delta, x, NULL, dw, images));
        double largest = 0.0, difference = 0.0;
        for (int64_t i = 0; i < weights; i++) {
            largest = fmax(largest, fabs(dw_direct[i]));
            difference = fmax(difference, fabs(dw[i] - dw_direct[i]));
        }
        CHECK(difference <= 1e-4 * largest);
        unsetenv("AXON_CONV_DIRECT");
        CHECK(ax_conv_weight_direct_takes(&s.g, 64));
    }
    unsetenv("AXON_CONV_WINOGRAD");
    if (b)
        b->ops->destroy(b);
    ax_conv_weight_scratch_free(&scratch);
    free(x), free(delta), free(dw), free(dw_direct);
}

/* No images: zeros, the bias's too. */
static void check_empty_batch(const shape *s)
{
    const int64_t weights = weights_of(s);
    float *dw = malloc((size_t)weights * sizeof *dw), bias[64], x[1] = {0}, delta[1] = {0};
    ax_conv_weight_scratch scratch = {0};
    memset(dw, 0x7f, (size_t)weights * sizeof *dw);
    memset(bias, 0x7f, sizeof bias);
    CHECK(s->filters <= 64 &&
          ax_conv_weight_direct(&scratch, &s->g, s->filters, delta, x, dw, bias, 0, false));
    bool zeros = true;
    for (int64_t i = 0; i < weights; i++)
        zeros = zeros && dw[i] == 0.0f;
    for (int64_t f = 0; f < s->filters; f++)
        zeros = zeros && bias[f] == 0.0f;
    CHECK(zeros);
    ax_conv_weight_scratch_free(&scratch);
    free(dw);
}

/* Layers the kernels do not take: declined, nothing written. */
static void check_declines(void)
{
    const shape one = make_shape(8, 8, 1, 3, 3, 1, 0, 16);
    const shape odd_filters = make_shape(8, 8, 4, 3, 3, 1, 0, 24);
    const shape large = make_shape(4, 4, 128, 3, 3, 1, 0, 128); /* 147,456 weights */
    const shape *declined[] = {&one, &odd_filters, &large};
    static float x[4096], delta[4096], dw[147456];
    ax_conv_weight_scratch scratch = {0};
    for (size_t i = 0; i < sizeof declined / sizeof *declined; i++) {
        const shape *s = declined[i];
        CHECK(!ax_conv_weight_direct_takes(&s->g, s->filters));
        memset(dw, 0x7f, sizeof dw);
        CHECK(!ax_conv_weight_direct(&scratch, &s->g, s->filters, delta, x, dw, NULL, 1, false));
        CHECK(!ax_conv_weight_direct(&scratch, &s->g, s->filters, delta, x, dw, NULL, 1, true));
        CHECK(!ax_conv_weight_direct(&scratch, &s->g, s->filters, delta, x, dw, dw + 4096, 1,
                                     false));
        CHECK(dw[0] == dw[147455] && !(dw[0] == 0.0f));
    }
    ax_conv_weight_scratch_free(&scratch);
}

int main(void)
{
    check_declines();
    if (!ax_cpu_kernels_avx512f()) {
        printf("conv_weight_direct: skipped: this CPU has no AVX-512 (or "
               "AXON_CPU_KERNELS=generic); the declines passed\n");
        return test_failures ? 1 : 77;
    }
    const shape shapes[] = {
        make_shape(12, 12, 32, 5, 5, 1, 0, 64), /* LeNet's second layer: 4 vectors x 6 + 2 */
        make_shape(16, 16, 32, 3, 3, 1, 1, 64), /* padded, 256 positions: chunks of 8 rows */
        make_shape(9, 11, 3, 3, 2, 2, 1, 48),   /* 3 vectors, 3 channels, stride 2 */
        make_shape(10, 7, 5, 4, 3, 3, 2, 16),   /* 1 vector, stride 3, padding 2 */
        make_shape(6, 80, 2, 1, 3, 1, 0, 80),   /* 78 wide: one row a chunk; 4 + 1 vectors */
        make_shape(7, 7, 13, 1, 1, 1, 0, 32),   /* 1x1, 2 vectors: 12 + 1 channels */
        make_shape(5, 5, 7, 5, 5, 1, 2, 128),   /* two blocks of 4 vectors, 6 + 1 channels */
        make_shape(5, 5, 4, 3, 3, 1, 0, 16),    /* 9 positions: chunks of 7 images */
    };
    /* the first two shapes' references are slow (under the sanitizers
     * above all): 9 images there, 2 and 5 slices */
    const int64_t batches[] = {1, 7, 20}, large_batches[] = {1, 9};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (size_t j = 0; j < (i < 2 ? 2 : 3); j++)
            for (int bf16 = 0; bf16 <= 1; bf16++)
                check_shape(&shapes[i], i < 2 ? large_batches[j] : batches[j], bf16, false);
    check_shape(&shapes[0], 9, false, true);
    check_empty_batch(&shapes[0]);
    check_shape(&shapes[1], 3, true, true);
    check_backend(AX_PRECISION_F32);
    check_backend(AX_PRECISION_BF16);
    return test_finish("conv_weight_direct");
}
