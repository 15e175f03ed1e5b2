/* test_conv_weight_amx.c: bf16's weight gradient on AMX's tiles
 * (src/backend/cpu/conv_weight_amx.c), run through its scalar emulation
 * (AXON_CONV_AMX=emulate: the same layouts, tile loads and order) on any
 * CPU, and on the tiles themselves where the CPU has AMX:
 * - against float64 sums of the bf16-rounded operands (bf16_round.h) by
 *   the definition, within gamma_K sum |delta x| (K the batch's positions;
 *   each product of two bf16 values is exact in float32, so only the sums
 *   round; Higham 3.1), over LeNet's second layer and shapes that reach
 *   every layout case: output widths odd and even, 5 to 32 wide (1 to 5
 *   output rows a tile: the most that divide the output's height),
 *   padding 0 and 1, non-square kernels, channel and filter blocks in
 *   pairs and alone (16, 32, 48), batches of 1 to 20 images;
 * - the same bits on 1, 2 and 3 threads;
 * - with the bias gradient: the same weight gradient bit for bit, and the
 *   bias as the sums of the unrounded delta in the slices' order of
 *   additions, bit for bit (conv_bias_reference.h);
 * - NaN and infinities reach the sums they touch, as in float64;
 * - an empty batch gives zeros, the bias's too;
 * - the bf16 backend's conv_backward_weights and conv_backward_weights_bias
 *   run the kernel where it is allowed (the same bits), and not under
 *   AXON_CONV_AMX=off or, on the tiles, AXON_ONEDNN_BF16=rounded;
 * - layers it does not take (stride 2, 8 channels, 24 filters, outputs
 *   33 wide, more than 2^17 weights) are declined with nothing written.
 * Where the CPU has AMX the test also says how many values the tiles and
 * the emulation give with the same bits (AMX may round a pair's two
 * products once; both are within the bound). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/cpu/bf16_round.h"
#include "backend/cpu/conv_weight_amx.h"
#include "conv_bias_reference.h"
#include "conv_test_shapes.h"
#include "test_util.h"

static uint64_t random_state = 2029;

static float *random_floats(int64_t n)
{
    return random_floats_from(&random_state, n);
}

/* dW (filters, channels, kh, kw) and sum |terms| in float64 by the
 * definition, from the rounded operands */
static void reference(const shape *s, int64_t images, const float *x, const float *delta,
                      double *dw, double *dw_abs)
{
    const ax_window_geometry *g = &s->g;
    const int64_t kh = g->kernel_height, kw = g->kernel_width, c = g->channels;
    for (int64_t i = 0; i < weights_of(s); i++)
        dw[i] = dw_abs[i] = 0.0;
    for (int64_t n = 0; n < images; n++)
        for (int64_t oy = 0; oy < g->out_height; oy++)
            for (int64_t ox = 0; ox < g->out_width; ox++) {
                const float *d = delta + ((n * g->out_height + oy) * g->out_width + ox) * s->filters;
                for (int64_t ky = 0; ky < kh; ky++)
                    for (int64_t kx = 0; kx < kw; kx++) {
                        const int64_t iy = oy * g->stride - g->padding + ky;
                        const int64_t ix = ox * g->stride - g->padding + kx;
                        /* padding's zeros included (0 x infinity is NaN), as im2col's */
                        const bool inside = iy >= 0 && iy < g->height && ix >= 0 && ix < g->width;
                        const float *v = x + ((n * g->height + (inside ? iy : 0)) * g->width +
                                              (inside ? ix : 0)) * c;
                        for (int64_t f = 0; f < s->filters; f++)
                            for (int64_t ch = 0; ch < c; ch++) {
                                const double term = (double)d[f] * (inside ? v[ch] : 0.0f);
                                const int64_t at = ((f * c + ch) * kh + ky) * kw + kx;
                                dw[at] += term;
                                dw_abs[at] += fabs(term);
                            }
                    }
            }
}

/* mode: "emulate", or NULL for the tiles; with_specials: NaN and
 * infinities among x and delta */
static void check_shape(const shape *s, int64_t images, const char *mode, bool with_specials)
{
    const char *name = mode ? mode : "AMX";
    use_amx_mode(mode);
    const int64_t inputs = inputs_of(s, images), outputs = outputs_of(s, images);
    const int64_t weights = weights_of(s);
    float *x = random_floats(inputs), *delta = random_floats(outputs);
    if (with_specials)
        put_specials(x, inputs, delta, outputs, s->filters);
    float *x_op = rounded_copy(x, inputs), *delta_op = rounded_copy(delta, outputs);
    double *dw64 = malloc((size_t)weights * sizeof *dw64);
    double *dw_abs = malloc((size_t)weights * sizeof *dw_abs);
    reference(s, images, x_op, delta_op, dw64, dw_abs);
    float *dw = malloc((size_t)weights * sizeof *dw), *first = malloc((size_t)weights * sizeof *dw);
    float *bias = malloc((size_t)s->filters * sizeof *bias);
    ax_conv_weight_scratch scratch = {0};
    CHECK(ax_conv_weight_amx_takes(&s->g, s->filters));
    for (int threads = 1; threads <= 3; threads++) {
        CHECK_OK(ax_set_threads(threads));
        memset(dw, 0xff, (size_t)weights * sizeof *dw);
        CHECK(ax_conv_weight_amx(&scratch, &s->g, s->filters, delta, x, dw, NULL, images));
        if (!within_float64_bound(dw, dw64, dw_abs, weights_of(s),
                                  (double)(images * s->g.out_height * s->g.out_width)))
            describe_failure(s, images, name, threads, "beyond float64's bound");
        if (threads == 1)
            memcpy(first, dw, (size_t)weights * sizeof *dw);
        else if (!same_values(dw, first, weights))
            describe_failure(s, images, name, threads, "not the bits of 1 thread");
        if (with_specials)
            continue;
        /* with the bias gradient (of the unrounded delta): the same weight
         * gradient, the bias in the slices' order of additions */
        memset(dw, 0xff, (size_t)weights * sizeof *dw);
        memset(bias, 0xff, (size_t)s->filters * sizeof *bias);
        CHECK(ax_conv_weight_amx(&scratch, &s->g, s->filters, delta, x, dw, bias, images));
        CHECK(memcmp(dw, first, (size_t)weights * sizeof *dw) == 0);
        CHECK(bias_matches(&s->g, s->filters, images, delta, bias));
    }
    CHECK_OK(ax_set_threads(0));
    unsetenv("AXON_CONV_AMX");
    ax_conv_weight_scratch_free(&scratch);
    free(x), free(delta), free(x_op), free(delta_op), free(dw64), free(dw_abs), free(dw);
    free(first), free(bias);
}

/* No images: zeros, the bias's too. */
static void check_empty_batch(const shape *s)
{
    setenv("AXON_CONV_AMX", "emulate", 1);
    const int64_t weights = weights_of(s);
    float *dw = malloc((size_t)weights * sizeof *dw), bias[64], x[1] = {0}, delta[1] = {0};
    ax_conv_weight_scratch scratch = {0};
    memset(dw, 0x7f, (size_t)weights * sizeof *dw);
    memset(bias, 0x7f, sizeof bias);
    CHECK(s->filters <= 64 &&
          ax_conv_weight_amx(&scratch, &s->g, s->filters, delta, x, dw, bias, 0));
    bool zeros = true;
    for (int64_t i = 0; i < weights; i++)
        zeros = zeros && dw[i] == 0.0f;
    for (int64_t f = 0; f < s->filters; f++)
        zeros = zeros && bias[f] == 0.0f;
    CHECK(zeros);
    unsetenv("AXON_CONV_AMX");
    ax_conv_weight_scratch_free(&scratch);
    free(dw);
}

/* Layers the kernel does not take, and AXON_CONV_AMX=off: declined,
 * nothing written. */
static void check_declines(void)
{
    const shape strided = make_shape(9, 9, 16, 3, 3, 2, 0, 16);
    const shape eight = make_shape(8, 8, 8, 3, 3, 1, 0, 16);
    const shape odd_filters = make_shape(8, 8, 16, 3, 3, 1, 0, 24);
    const shape wide = make_shape(3, 35, 16, 3, 3, 1, 0, 16); /* 33 positions a row */
    const shape large = make_shape(4, 4, 128, 3, 3, 1, 0, 128); /* 147,456 weights */
    const shape lenet = make_shape(12, 12, 32, 5, 5, 1, 0, 64);
    const shape *declined[] = {&strided, &eight, &odd_filters, &wide, &large, &lenet};
    static float x[4096], delta[4096], dw[147456];
    ax_conv_weight_scratch scratch = {0};
    for (size_t i = 0; i < sizeof declined / sizeof *declined; i++) {
        const shape *s = declined[i];
        /* LeNet's is taken, but not when turned off */
        setenv("AXON_CONV_AMX", s == &lenet ? "off" : "emulate", 1);
        CHECK(!ax_conv_weight_amx_takes(&s->g, s->filters));
        memset(dw, 0x7f, sizeof dw);
        CHECK(!ax_conv_weight_amx(&scratch, &s->g, s->filters, delta, x, dw, NULL, 1));
        CHECK(!ax_conv_weight_amx(&scratch, &s->g, s->filters, delta, x, dw, dw + 4096, 1));
        CHECK(dw[0] == dw[147455] && !(dw[0] == 0.0f));
    }
    CHECK(ax_conv_amx_mode_chosen() == AX_CONV_AMX_OFF);
    setenv("AXON_CONV_AMX", "emulate", 1);
    CHECK(ax_conv_amx_mode_chosen() == AX_CONV_AMX_EMULATED);
    CHECK(ax_conv_weight_amx_takes(&lenet.g, lenet.filters));
    unsetenv("AXON_CONV_AMX");
    ax_conv_weight_scratch_free(&scratch);
}

/* The bf16 backend's entries run the kernel where it is allowed: the same
 * bits as the kernel called here; turned off, the backend's other kernels
 * (within the bound, and its bias entry declining). */
static void check_backend(const char *mode, const char *onednn_mode, bool allowed)
{
    const shape s = make_shape(12, 12, 32, 5, 5, 1, 0, 64); /* LeNet's second layer */
    const int64_t images = 19, weights = weights_of(&s);
    float *x = random_floats(inputs_of(&s, images)), *delta = random_floats(outputs_of(&s, images));
    float *dw = malloc((size_t)weights * sizeof *dw), *dw_amx = malloc((size_t)weights * sizeof *dw);
    float bias[64], bias_amx[64];
    ax_conv_weight_scratch scratch = {0};
    if (onednn_mode)
        setenv("AXON_ONEDNN_BF16", onednn_mode, 1); /* read when the backend is made */
    ax_backend *b = ax_backend_cpu_create(AX_PRECISION_BF16);
    unsetenv("AXON_ONEDNN_BF16");
    use_amx_mode(mode);
    setenv("AXON_CONV_WINOGRAD", "off", 1); /* read at each call: Winograd's comes first */
    CHECK(b && b->ops->conv_backward_weights && b->ops->conv_backward_weights_bias);
    if (b && b->ops->conv_backward_weights && b->ops->conv_backward_weights_bias) {
        const bool kernel = ax_conv_weight_amx(&scratch, &s.g, 64, delta, x, dw_amx, bias_amx, images);
        CHECK(kernel == (ax_conv_amx_mode_chosen() != AX_CONV_AMX_OFF));
        CHECK(b->ops->conv_backward_weights(b, &s.g, 64, delta, x, NULL, dw, images));
        if (allowed)
            CHECK(memcmp(dw, dw_amx, (size_t)weights * sizeof *dw) == 0);
        memset(bias, 0x7f, sizeof bias);
        memset(dw, 0x7f, (size_t)weights * sizeof *dw);
        const bool taken =
            b->ops->conv_backward_weights_bias(b, &s.g, 64, delta, x, NULL, dw, bias, images);
        CHECK(taken == allowed);
        if (taken)
            CHECK(memcmp(dw, dw_amx, (size_t)weights * sizeof *dw) == 0 &&
                  memcmp(bias, bias_amx, sizeof bias) == 0);
        else
            CHECK(bias[0] == bias[63] && dw[0] == dw[weights - 1] && !(bias[0] == 0.0f));
    }
    unsetenv("AXON_CONV_AMX");
    unsetenv("AXON_CONV_WINOGRAD");
    if (b)
        b->ops->destroy(b);
    ax_conv_weight_scratch_free(&scratch);
    free(x), free(delta), free(dw), free(dw_amx);
}

/* On AMX: how many values the tiles and the emulation give bit for bit */
static void compare_tiles_with_emulation(const shape *s, int64_t images)
{
    const int64_t weights = weights_of(s);
    float *x = random_floats(inputs_of(s, images)), *delta = random_floats(outputs_of(s, images));
    float *tiles = malloc((size_t)weights * sizeof *tiles);
    float *emulated = malloc((size_t)weights * sizeof *emulated);
    ax_conv_weight_scratch scratch = {0};
    unsetenv("AXON_CONV_AMX");
    CHECK(ax_conv_weight_amx(&scratch, &s->g, s->filters, delta, x, tiles, NULL, images));
    setenv("AXON_CONV_AMX", "emulate", 1);
    CHECK(ax_conv_weight_amx(&scratch, &s->g, s->filters, delta, x, emulated, NULL, images));
    unsetenv("AXON_CONV_AMX");
    int64_t same = 0;
    for (int64_t i = 0; i < weights; i++)
        same += memcmp(&tiles[i], &emulated[i], sizeof *tiles) == 0;
    printf("conv_weight_amx: the tiles and the emulation: %lld of %lld values bit for bit "
           "(%lldx%lldx%lld, %lld filters, %lld images)\n",
           (long long)same, (long long)weights, (long long)s->g.height, (long long)s->g.width,
           (long long)s->g.channels, (long long)s->filters, (long long)images);
    ax_conv_weight_scratch_free(&scratch);
    free(x), free(delta), free(tiles), free(emulated);
}

int main(void)
{
    check_declines();
    const shape shapes[] = {
        make_shape(12, 12, 32, 5, 5, 1, 0, 64), /* LeNet's second layer: 4 rows of 8 a tile */
        make_shape(16, 16, 32, 3, 3, 1, 1, 32), /* padded, 16 wide: 2 rows a tile */
        make_shape(7, 7, 16, 3, 3, 1, 0, 16),   /* 5 wide (6 with a zero): one group */
        make_shape(6, 9, 48, 2, 3, 1, 1, 48),   /* 9 wide, 7 rows one a tile; blocks of 32 + 16 */
        make_shape(7, 9, 16, 2, 3, 1, 0, 16),   /* 7 wide, 6 rows in groups of 3 */
        make_shape(3, 34, 16, 1, 3, 1, 0, 32),  /* 32 wide: one row a tile */
        make_shape(4, 21, 16, 1, 1, 1, 0, 16),  /* 21 wide: a row and a zero */
    };
    const int64_t batches[] = {1, 7, 20}, large_batches[] = {1, 9};
    const bool hardware = (unsetenv("AXON_CONV_AMX"), ax_conv_amx_mode_chosen()) ==
                          AX_CONV_AMX_HARDWARE;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (size_t j = 0; j < (i < 2 ? 2 : 3); j++) {
            const int64_t images = i < 2 ? large_batches[j] : batches[j];
            check_shape(&shapes[i], images, "emulate", false);
            if (hardware)
                check_shape(&shapes[i], images, NULL, false);
        }
    check_shape(&shapes[0], 9, "emulate", true);
    check_shape(&shapes[3], 7, "emulate", true);
    if (hardware)
        check_shape(&shapes[0], 9, NULL, true);
    check_empty_batch(&shapes[0]);
    /* the emulation whatever the backend's mode; the tiles unless rounded */
    check_backend("emulate", "rounded", true);
    check_backend("off", NULL, false);
    if (hardware) {
        check_backend(NULL, NULL, true);
        check_backend(NULL, "rounded", false);
        compare_tiles_with_emulation(&shapes[0], 16);
        compare_tiles_with_emulation(&shapes[3], 7);
    } else
        printf("conv_weight_amx: no AMX here (or Linux refuses its tile state): the emulation "
               "alone was checked\n");
    return test_finish("conv_weight_amx");
}
