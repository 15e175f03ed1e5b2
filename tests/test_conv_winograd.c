/* test_conv_winograd.c: 5x5 convolutions by Winograd's F(4x4, 5x5)
 * (src/backend/cpu/conv_winograd.c), float32:
 * - the forward pass and the input gradient within WINOGRAD_ERROR u times
 *   the largest sum of |x w| (u = 2^-24) of float64 direct sums; a
 *   wrong entry of a transform matrix, a tile stored at the wrong place or
 *   not at all (got starts as NaN) is off by far more;
 * - LeNet's second layer (8x8 outputs: whole tiles) and odd shapes: padding
 *   1 to 4, outputs not in 4s (the edge tiles partial), out channels in
 *   64s (tiles of 6 x 64) and in 32s only (12 x 32), 1 and 5 images;
 * - the same bits on 1, 2 and 3 threads;
 * - a NaN among the inputs reaches at least every output whose window
 *   holds it (its whole tile, in fact: conv_winograd.h);
 * - layers it does not take (stride 2, a 3x3 kernel, 8 channels, filters
 *   not in 32s for the forward pass, padding 5, AXON_CONV_WINOGRAD=off)
 *   are declined with nothing written;
 * - the weight gradient by F(5x5, 4x4) within WEIGHT_GRADIENT_ERROR, 1 and
 *   37 images (two slices of the batch), the same bits on 1-3 threads;
 * - the float32 backend's conv_forward, conv_backward_input and
 *   conv_backward_weights run them, and its weight-and-bias entry declines
 *   such a layer (the layer then sums the bias itself); the bf16 backend's
 *   and the _bf16 kernels give their bits on operands rounded to bf16
 *   beforehand.
 * The kernels need AVX-512: on a CPU without it (or
 * AXON_CPU_KERNELS=generic) only the declines are checked. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/conv_winograd.h"
#include "backend/cpu/cpu_features.h"
#include "conv_test_shapes.h"
#include "test_util.h"

/* Winograd's error against float64, in units of u times the largest sum
 * |x w| of the pass's values: a tile's outputs share its transformed sums,
 * whose rounding the transforms' constants scale (up to 5.25 in B^T, 8 in
 * A^T), so a value near an edge, with few products of its own, carries
 * the tile's error. Measured up to 17.6 at these shapes (a direct float32
 * sum's bound is its count of products, 800 at LeNet's second layer). */
enum { WINOGRAD_ERROR = 64 };
/* The same for the weight gradient, F(5x5, 4x4), against the largest sum
 * |x delta|: its sums run over every image's tiles. Measured up to 34.8. */
enum { WEIGHT_GRADIENT_ERROR = 128 };

static uint64_t random_state = 41;

/* The largest error of got against float64 sums, in units of u = 2^-24
 * times the largest sum of |products| (NaN where any value is NaN). */
static double worst_error(const float *got, const double *sums, const double *magnitudes,
                          int64_t count)
{
    double worst = 0.0, largest = 0.0;
    for (int64_t i = 0; i < count; i++)
        largest = magnitudes[i] > largest ? magnitudes[i] : largest;
    for (int64_t i = 0; i < count; i++) {
        const double error = fabs(got[i] - sums[i]) / (0x1p-24 * largest);
        worst = error > worst || isnan(error) ? error : worst;
    }
    return worst;
}

/* float64 sums and sums of |products| of the forward pass (input_gradient
 * false: out = z) or the input gradient (out = previous), both read off
 * the forward pass's windows. */
static void float64_sums(const shape *s, const float *in, const float *w, bool input_gradient,
                         double *sums, double *magnitudes, int64_t images)
{
    const ax_window_geometry *g = &s->g;
    const int64_t count = input_gradient ? inputs_of(s, images) : outputs_of(s, images);
    memset(sums, 0, (size_t)count * sizeof *sums);
    memset(magnitudes, 0, (size_t)count * sizeof *magnitudes);
    for (int64_t n = 0; n < images; n++)
        for (int64_t oy = 0; oy < g->out_height; oy++)
            for (int64_t ox = 0; ox < g->out_width; ox++)
                for (int64_t f = 0; f < s->filters; f++)
                    for (int64_t ky = 0; ky < 5; ky++)
                        for (int64_t kx = 0; kx < 5; kx++) {
                            const int64_t iy = oy + ky - g->padding, ix = ox + kx - g->padding;
                            if (iy < 0 || iy >= g->height || ix < 0 || ix >= g->width)
                                continue;
                            const int64_t image_at = ((n * g->height + iy) * g->width + ix) * g->channels;
                            const int64_t output_at =
                                ((n * g->out_height + oy) * g->out_width + ox) * s->filters + f;
                            for (int64_t c = 0; c < g->channels; c++) {
                                const double weight = w[((f * g->channels + c) * 5 + ky) * 5 + kx];
                                const int64_t at = input_gradient ? image_at + c : output_at;
                                const double p = weight * (input_gradient ? in[output_at]
                                                                          : in[image_at + c]);
                                sums[at] += p;
                                magnitudes[at] += fabs(p);
                            }
                        }
}

/* The weight gradient, F(5x5, 4x4): against float64 sums within
 * WEIGHT_GRADIENT_ERROR u times the largest sum |x delta|, and the same
 * bits on 1-3 threads (batches past one slice of 32 images included): one
 * kernel against itself, its slices fixed by the images (32 each) and
 * added in order, whatever the threads, on any CPU. */
static void check_weight_gradient(const shape *s, int64_t images)
{
    const ax_window_geometry *g = &s->g;
    const int64_t count = weights_of(s);
    float *x = random_floats_from(&random_state, inputs_of(s, images));
    float *delta = random_floats_from(&random_state, outputs_of(s, images));
    float *got = malloc((size_t)count * sizeof *got), *first = malloc((size_t)count * sizeof *first);
    double *sums = calloc((size_t)count, sizeof *sums), *magnitudes = calloc((size_t)count, sizeof *magnitudes);
    for (int64_t n = 0; n < images; n++)
        for (int64_t oy = 0; oy < g->out_height; oy++)
            for (int64_t ox = 0; ox < g->out_width; ox++)
                for (int64_t ky = 0; ky < 5; ky++)
                    for (int64_t kx = 0; kx < 5; kx++) {
                        const int64_t iy = oy + ky - g->padding, ix = ox + kx - g->padding;
                        if (iy < 0 || iy >= g->height || ix < 0 || ix >= g->width)
                            continue;
                        for (int64_t f = 0; f < s->filters; f++)
                            for (int64_t c = 0; c < g->channels; c++) {
                                const double p =
                                    (double)delta[((n * g->out_height + oy) * g->out_width + ox) * s->filters + f] *
                                    x[((n * g->height + iy) * g->width + ix) * g->channels + c];
                                const int64_t at = ((f * g->channels + c) * 5 + ky) * 5 + kx;
                                sums[at] += p;
                                magnitudes[at] += fabs(p);
                            }
                    }
    for (int threads = 1; threads <= 3; threads++) {
        CHECK_OK(ax_set_threads(threads));
        for (int64_t i = 0; i < count; i++)
            got[i] = NAN;
        if (!ax_conv_winograd_weight_gradient(g, s->filters, delta, x, got, images)) {
            describe_failure(s, images, "weight gradient", threads, "declined");
            continue;
        }
        if (threads == 1) {
            const double worst = worst_error(got, sums, magnitudes, count);
            if (!(worst <= WEIGHT_GRADIENT_ERROR)) {
                char what[96];
                snprintf(what, sizeof what, "an error of %.3g u sum |x delta| against float64", worst);
                describe_failure(s, images, "weight gradient", threads, what);
            }
            memcpy(first, got, (size_t)count * sizeof *got);
        } else if (memcmp(first, got, (size_t)count * sizeof *got) != 0)
            describe_failure(s, images, "weight gradient", threads, "other bits than on 1 thread");
    }
    CHECK_OK(ax_set_threads(0));
    free(x), free(delta), free(got), free(first), free(sums), free(magnitudes);
}

typedef bool (*winograd_pass)(const ax_window_geometry *, int64_t, const float *, const float *,
                              float *, int64_t);

/* One pass of one shape: against float64, and the same bits on 1-3 threads.
 * The bit check compares one kernel with itself, on any CPU: each output
 * is one thread's, and its chain of transforms and FMAs is fixed by the
 * tile, never by the blocking or the thread that takes it. */
static void check_pass(const shape *s, int64_t images, bool input_gradient)
{
    const winograd_pass pass =
        input_gradient ? ax_conv_winograd_backward_input : ax_conv_winograd_forward;
    const int64_t in_count = input_gradient ? outputs_of(s, images) : inputs_of(s, images);
    const int64_t out_count = input_gradient ? inputs_of(s, images) : outputs_of(s, images);
    float *in = random_floats_from(&random_state, in_count);
    float *w = random_floats_from(&random_state, weights_of(s));
    float *got = malloc((size_t)out_count * sizeof *got);
    float *first = malloc((size_t)out_count * sizeof *first);
    double *sums = malloc((size_t)out_count * sizeof *sums);
    double *magnitudes = malloc((size_t)out_count * sizeof *magnitudes);
    float64_sums(s, in, w, input_gradient, sums, magnitudes, images);
    const char *name = input_gradient ? "input gradient" : "forward";
    for (int threads = 1; threads <= 3; threads++) {
        CHECK_OK(ax_set_threads(threads));
        for (int64_t i = 0; i < out_count; i++)
            got[i] = NAN; /* every value must be written */
        if (!pass(&s->g, s->filters, in, w, got, images)) {
            describe_failure(s, images, name, threads, "declined");
            continue;
        }
        if (threads == 1) {
            const double worst = worst_error(got, sums, magnitudes, out_count);
            if (!(worst <= WINOGRAD_ERROR)) {
                char what[96];
                snprintf(what, sizeof what, "an error of %.3g u sum |x w| against float64", worst);
                describe_failure(s, images, name, threads, what);
            }
            memcpy(first, got, (size_t)out_count * sizeof *got);
        } else if (memcmp(first, got, (size_t)out_count * sizeof *got) != 0)
            describe_failure(s, images, name, threads, "other bits than on 1 thread");
    }
    CHECK_OK(ax_set_threads(0));
    free(in), free(w), free(got), free(first), free(sums), free(magnitudes);
}

/* A NaN in image 0 at (row, column, channel 0): every output whose window
 * holds it is NaN. */
static void check_nan_spreads(const shape *s, int64_t row, int64_t column)
{
    const ax_window_geometry *g = &s->g;
    const int64_t images = 2;
    float *x = random_floats_from(&random_state, inputs_of(s, images));
    float *w = random_floats_from(&random_state, weights_of(s));
    float *z = malloc((size_t)outputs_of(s, images) * sizeof *z);
    x[(row * g->width + column) * g->channels] = NAN;
    CHECK(ax_conv_winograd_forward(g, s->filters, x, w, z, images));
    int64_t missed = 0;
    for (int64_t oy = 0; oy < g->out_height; oy++)
        for (int64_t ox = 0; ox < g->out_width; ox++) {
            const int64_t ky = row + g->padding - oy, kx = column + g->padding - ox;
            if (ky < 0 || ky >= 5 || kx < 0 || kx >= 5)
                continue;
            for (int64_t f = 0; f < s->filters; f++)
                missed += !isnan(z[(oy * g->out_width + ox) * s->filters + f]);
        }
    CHECK(missed == 0);
    /* image 1 has no NaN and none of its outputs is */
    int64_t spread = 0;
    const int64_t per_image = outputs_of(s, 1);
    for (int64_t i = 0; i < per_image; i++)
        spread += isnan(z[per_image + i]);
    CHECK(spread == 0);
    free(x), free(w), free(z);
}

static void check_forward_declined(const shape *s)
{
    const int64_t images = 2, outputs = outputs_of(s, images);
    float *x = random_floats_from(&random_state, inputs_of(s, images));
    float *w = random_floats_from(&random_state, weights_of(s));
    float *z = malloc((size_t)outputs * sizeof *z);
    for (int64_t i = 0; i < outputs; i++)
        z[i] = 7.0f;
    CHECK(!ax_conv_winograd_forward_takes(&s->g, s->filters));
    CHECK(!ax_conv_winograd_forward(&s->g, s->filters, x, w, z, images));
    int64_t changed = 0;
    for (int64_t i = 0; i < outputs; i++)
        changed += z[i] != 7.0f;
    CHECK(changed == 0);
    free(x), free(w), free(z);
}

static void check_declines(void)
{
    const shape both[] = {
        make_shape(12, 12, 32, 5, 5, 2, 0, 64), /* stride 2 */
        make_shape(12, 12, 32, 3, 3, 1, 1, 64), /* 3x3 */
        make_shape(12, 12, 64, 5, 5, 1, 5, 64), /* padding 5 */
        make_shape(12, 12, 8, 5, 5, 1, 0, 8),   /* 8 channels, 8 filters */
    };
    for (size_t i = 0; i < sizeof both / sizeof *both; i++) {
        check_forward_declined(&both[i]);
        check_input_gradient_declined(&both[i], ax_conv_winograd_input_takes,
                                      ax_conv_winograd_backward_input, &random_state);
    }
    const shape filters_48 = make_shape(12, 12, 32, 5, 5, 1, 0, 48);
    check_forward_declined(&filters_48);
    /* 16 channels: the input gradient's out channels are not in 32s */
    const shape channels_16 = make_shape(12, 12, 16, 5, 5, 1, 0, 64);
    check_input_gradient_declined(&channels_16, ax_conv_winograd_input_takes,
                                  ax_conv_winograd_backward_input, &random_state);
    setenv("AXON_CONV_WINOGRAD", "off", 1);
    const shape lenet = make_shape(12, 12, 32, 5, 5, 1, 0, 64);
    check_forward_declined(&lenet);
    check_input_gradient_declined(&lenet, ax_conv_winograd_input_takes,
                                  ax_conv_winograd_backward_input, &random_state);
    unsetenv("AXON_CONV_WINOGRAD");
}

/* The backend's entries run these kernels, bit for bit: exact on any CPU,
 * since the entries call the same functions (Winograd comes first in each,
 * and the single-channel kernels before it decline 32 channels) with the
 * same operands; only the thread count could differ, and it does not move
 * the bits (check_pass, check_weight_gradient). bf16's entries and the
 * _bf16 kernels give the float32 kernels' bits on operands rounded
 * beforehand: the rounding is the only difference. */
static void check_backend(ax_precision precision)
{
    const bool bf16 = precision == AX_PRECISION_BF16;
    const shape s = make_shape(12, 12, 32, 5, 5, 1, 0, 64);
    const int64_t images = 3, inputs = inputs_of(&s, images), outputs = outputs_of(&s, images);
    const int64_t count = weights_of(&s);
    float *x = random_floats_from(&random_state, inputs);
    float *delta = random_floats_from(&random_state, outputs);
    float *w = random_floats_from(&random_state, count);
    /* what the float32 kernels read: bf16's operands rounded */
    float *xr = bf16 ? rounded_copy(x, inputs) : x, *deltar = bf16 ? rounded_copy(delta, outputs) : delta;
    float *wr = bf16 ? rounded_copy(w, count) : w;
    /* room for the largest of the three results: the weight gradient */
    const int64_t room = count > inputs ? count : inputs;
    float *expected = malloc((size_t)room * sizeof *expected);
    float *got = malloc((size_t)room * sizeof *got);
    ax_backend *b = ax_backend_cpu_create(precision);
    CHECK(b && b->ops->conv_forward && b->ops->conv_backward_input);
    if (b && b->ops->conv_forward && b->ops->conv_backward_input) {
        CHECK(ax_conv_winograd_forward(&s.g, s.filters, xr, wr, expected, images));
        CHECK(b->ops->conv_forward(b, &s.g, s.filters, x, w, got, images));
        CHECK(memcmp(expected, got, (size_t)outputs * sizeof *got) == 0);
        if (bf16) {
            CHECK(ax_conv_winograd_forward_bf16(&s.g, s.filters, x, w, got, images));
            CHECK(memcmp(expected, got, (size_t)outputs * sizeof *got) == 0);
        }
        CHECK(ax_conv_winograd_backward_input(&s.g, s.filters, deltar, wr, expected, images));
        CHECK(b->ops->conv_backward_input(b, &s.g, s.filters, delta, w, got, images));
        CHECK(memcmp(expected, got, (size_t)inputs * sizeof *got) == 0);
        if (bf16) {
            CHECK(ax_conv_winograd_backward_input_bf16(&s.g, s.filters, delta, w, got, images));
            CHECK(memcmp(expected, got, (size_t)inputs * sizeof *got) == 0);
        }
        CHECK(ax_conv_winograd_weight_gradient(&s.g, s.filters, deltar, xr, expected, images));
        CHECK(b->ops->conv_backward_weights(b, &s.g, s.filters, delta, x, NULL, got, images));
        CHECK(memcmp(expected, got, (size_t)count * sizeof *got) == 0);
        if (bf16) {
            CHECK(ax_conv_winograd_weight_gradient_bf16(&s.g, s.filters, delta, x, got, images));
            CHECK(memcmp(expected, got, (size_t)count * sizeof *got) == 0);
        }
        float bias[64];
        CHECK(b->ops->conv_backward_weights_bias &&
              !b->ops->conv_backward_weights_bias(b, &s.g, s.filters, delta, x, NULL, got, bias,
                                                  images));
    }
    if (b)
        b->ops->destroy(b);
    if (bf16)
        free(xr), free(deltar), free(wr);
    free(x), free(delta), free(w), free(expected), free(got);
}

int main(void)
{
    check_declines();
    if (!ax_cpu_kernels_avx512f()) {
        printf("conv_winograd: skipped: this CPU has no AVX-512 (or AXON_CPU_KERNELS=generic); "
               "the declines passed\n");
        return test_failures ? 1 : 77;
    }
    /* each with the passes it takes: forward (channels in 16s, filters in
     * 32s), input gradient (filters in 16s, channels in 32s) */
    const struct {
        shape s;
        bool forward, input_gradient;
    } cases[] = {
        {make_shape(12, 12, 32, 5, 5, 1, 0, 64), true, true},  /* LeNet's second layer */
        {make_shape(9, 10, 16, 5, 5, 1, 2, 32), true, false},  /* 9x10 out: edge tiles */
        {make_shape(7, 13, 64, 5, 5, 1, 1, 16), false, true},  /* 5x11 out; 64 out channels */
        {make_shape(6, 5, 32, 5, 5, 1, 4, 96), true, true},    /* 10x9 out; 96 = 12 x 32s */
        {make_shape(5, 5, 48, 5, 5, 1, 0, 32), true, false},   /* a 1x1 output */
        {make_shape(8, 8, 32, 5, 5, 1, 3, 128), true, true},   /* 10x10 out; 128 filters */
    };
    const int64_t batches[] = {1, 5};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const shape *s = &cases[i].s;
        CHECK(ax_conv_winograd_forward_takes(&s->g, s->filters) == cases[i].forward);
        CHECK(ax_conv_winograd_input_takes(&s->g, s->filters) == cases[i].input_gradient);
        for (size_t j = 0; j < sizeof batches / sizeof *batches; j++) {
            if (cases[i].forward)
                check_pass(s, batches[j], false);
            if (cases[i].input_gradient)
                check_pass(s, batches[j], true);
        }
    }
    /* 23 images of LeNet's: three blocks of whole images for the input
     * gradient's overlapping patches, split across the threads */
    check_pass(&cases[0].s, 23, false);
    check_pass(&cases[0].s, 23, true);
    const shape weight_shapes[] = {
        make_shape(12, 12, 32, 5, 5, 1, 0, 64), /* LeNet's second layer: 2x2 whole tiles */
        make_shape(9, 10, 16, 5, 5, 1, 2, 32),  /* 9x10 out: edge tiles; 16 channels */
        make_shape(6, 5, 48, 5, 5, 1, 4, 16),   /* 10x9 out; 32 + 16 channels */
    };
    const int64_t weight_batches[] = {1, 37}; /* 37: two slices, the second short */
    for (size_t i = 0; i < sizeof weight_shapes / sizeof *weight_shapes; i++) {
        CHECK(ax_conv_winograd_weights_takes(&weight_shapes[i].g, weight_shapes[i].filters));
        for (size_t j = 0; j < sizeof weight_batches / sizeof *weight_batches; j++)
            check_weight_gradient(&weight_shapes[i], weight_batches[j]);
    }
    const shape lenet = make_shape(12, 12, 32, 5, 5, 1, 0, 64);
    check_nan_spreads(&lenet, 0, 0);
    check_nan_spreads(&lenet, 6, 9);
    check_nan_spreads(&cases[3].s, 5, 4);
    check_backend(AX_PRECISION_F32);
    check_backend(AX_PRECISION_BF16);
    return test_finish("conv_winograd");
}
