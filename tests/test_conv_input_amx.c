/* test_conv_input_amx.c: bf16's input gradient on AMX's tiles
 * (src/backend/cpu/conv_input_amx.c), run through its scalar emulation
 * (AXON_CONV_AMX=emulate: the same layouts, tile loads and order) on any
 * CPU, and on the tiles themselves where the CPU has AMX:
 * - against float64 sums of the bf16-rounded operands (bf16_round.h), made
 *   the other way round (each output position's delta scattered through
 *   its window), within gamma_K sum |delta w| (K the products of a value:
 *   kh kw filters; each product of two bf16 values is exact in float32, so
 *   only the sums round; Higham 3.1), over LeNet's second layer and shapes
 *   that reach every layout case: input rows odd and even in number (a
 *   block of one row last), 1 to 16 wide, padding 0 to 2, non-square
 *   kernels, channel blocks in pairs and alone (16, 32, 48 channels), 32
 *   and 64 filters, batches of 1 to 9 images;
 * - the same bits on 1, 2 and 3 threads; every value written;
 * - NaN and infinities in delta reach the values they touch, as in float64;
 * - an empty batch writes nothing;
 * - the bf16 backend's conv_backward_input runs the kernel where it is
 *   allowed (the same bits), and not under AXON_CONV_AMX=off;
 * - layers it does not take (stride 2, 8 channels, 48 filters, rows 17
 *   wide, padding as wide as the kernel) are declined with nothing written.
 * Where the CPU has AMX the test also says how many values the tiles and
 * the emulation give with the same bits. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/conv_input_amx.h"
#include "backend/cpu/conv_weight_amx.h"
#include "conv_test_shapes.h"
#include "test_util.h"

static uint64_t random_state = 2030;

/* float64 sums of delta scattered through each output's window and the
 * sums of |terms|, from the rounded operands */
static void reference(const shape *s, int64_t images, const float *delta, const float *w,
                      double *sums, double *magnitudes)
{
    const ax_window_geometry *g = &s->g;
    const int64_t c = g->channels, kh = g->kernel_height, kw = g->kernel_width;
    memset(sums, 0, (size_t)inputs_of(s, images) * sizeof *sums);
    memset(magnitudes, 0, (size_t)inputs_of(s, images) * sizeof *magnitudes);
    for (int64_t n = 0; n < images; n++)
        for (int64_t oy = 0; oy < g->out_height; oy++)
            for (int64_t ox = 0; ox < g->out_width; ox++)
                for (int64_t ky = 0; ky < kh; ky++)
                    for (int64_t kx = 0; kx < kw; kx++) {
                        const int64_t iy = oy + ky - g->padding, ix = ox + kx - g->padding;
                        if (iy < 0 || iy >= g->height || ix < 0 || ix >= g->width)
                            continue;
                        const float *d = delta + ((n * g->out_height + oy) * g->out_width + ox) *
                                                     s->filters;
                        const int64_t at = ((n * g->height + iy) * g->width + ix) * c;
                        for (int64_t ch = 0; ch < c; ch++)
                            for (int64_t f = 0; f < s->filters; f++) {
                                const double term =
                                    (double)d[f] * w[((f * c + ch) * kh + ky) * kw + kx];
                                sums[at + ch] += term;
                                magnitudes[at + ch] += fabs(term);
                            }
                    }
}

/* mode: "emulate", or NULL for the tiles; with_specials: NaN and
 * infinities among delta */
static void check_shape(const shape *s, int64_t images, const char *mode, bool with_specials)
{
    const char *name = mode ? mode : "AMX";
    use_amx_mode(mode);
    const int64_t inputs = inputs_of(s, images), outputs = outputs_of(s, images);
    float *delta = random_floats_from(&random_state, outputs);
    float *w = random_floats_from(&random_state, weights_of(s));
    if (with_specials) {
        float unused[8] = {0};
        put_specials(unused, 8, delta, outputs, s->filters);
    }
    float *delta_op = rounded_copy(delta, outputs), *w_op = rounded_copy(w, weights_of(s));
    double *sums = malloc((size_t)inputs * sizeof *sums);
    double *magnitudes = malloc((size_t)inputs * sizeof *magnitudes);
    reference(s, images, delta_op, w_op, sums, magnitudes);
    float *got = malloc((size_t)inputs * sizeof *got), *first = malloc((size_t)inputs * sizeof *got);
    CHECK(ax_conv_input_amx_takes(&s->g, s->filters));
    for (int threads = 1; threads <= 3; threads++) {
        CHECK_OK(ax_set_threads(threads));
        for (int64_t i = 0; i < inputs; i++)
            got[i] = NAN; /* every value must be written */
        if (!ax_conv_input_amx(&s->g, s->filters, delta, w, got, images)) {
            describe_failure(s, images, name, threads, "declined");
            continue;
        }
        if (!within_float64_bound(got, sums, magnitudes, inputs,
                                  (double)(s->g.kernel_height * s->g.kernel_width * s->filters)))
            describe_failure(s, images, name, threads, "outside the bound of float64's sums");
        if (threads == 1)
            memcpy(first, got, (size_t)inputs * sizeof *got);
        else if (memcmp(first, got, (size_t)inputs * sizeof *got) != 0)
            describe_failure(s, images, name, threads, "bits unlike one thread's");
    }
    CHECK_OK(ax_set_threads(0));
    unsetenv("AXON_CONV_AMX");
    free(delta), free(w), free(delta_op), free(w_op), free(sums), free(magnitudes), free(got),
        free(first);
}

static void check_declines(void)
{
    setenv("AXON_CONV_AMX", "emulate", 1);
    const shape declined[] = {
        make_shape(12, 12, 32, 3, 3, 2, 1, 64), /* stride 2 */
        make_shape(12, 12, 8, 5, 5, 1, 0, 64),  /* 8 channels */
        make_shape(12, 12, 32, 5, 5, 1, 0, 48), /* 48 filters */
        make_shape(12, 17, 16, 3, 3, 1, 1, 32), /* rows 17 wide */
        make_shape(12, 12, 16, 3, 3, 1, 3, 32), /* padding as wide as the kernel */
    };
    for (size_t i = 0; i < sizeof declined / sizeof *declined; i++)
        check_input_gradient_declined(&declined[i], ax_conv_input_amx_takes, ax_conv_input_amx,
                                      &random_state);
    const shape lenet = make_shape(12, 12, 32, 5, 5, 1, 0, 64);
    CHECK(ax_conv_input_amx_takes(&lenet.g, lenet.filters));
    setenv("AXON_CONV_AMX", "off", 1);
    check_input_gradient_declined(&lenet, ax_conv_input_amx_takes, ax_conv_input_amx,
                                      &random_state);
    unsetenv("AXON_CONV_AMX");
    if (ax_conv_amx_mode_chosen() == AX_CONV_AMX_OFF)
        check_input_gradient_declined(&lenet, ax_conv_input_amx_takes, ax_conv_input_amx,
                                      &random_state);
    /* an empty batch: true, nothing to write */
    setenv("AXON_CONV_AMX", "emulate", 1);
    float one = 7.0f;
    CHECK(ax_conv_input_amx(&lenet.g, lenet.filters, &one, &one, &one, 0) && one == 7.0f);
    unsetenv("AXON_CONV_AMX");
}

/* The bf16 backend's conv_backward_input runs the kernel where it is
 * allowed (the same bits); with AXON_CONV_AMX=off it runs another. */
static void check_backend(const char *mode, bool allowed)
{
    const shape s = make_shape(12, 12, 32, 5, 5, 1, 0, 64);
    const int64_t images = 5, inputs = inputs_of(&s, images);
    float *delta = random_floats_from(&random_state, outputs_of(&s, images));
    float *w = random_floats_from(&random_state, weights_of(&s));
    float *kernel = malloc((size_t)inputs * sizeof *kernel), *got = malloc((size_t)inputs * sizeof *got);
    ax_backend *b = ax_backend_cpu_create(AX_PRECISION_BF16);
    use_amx_mode(mode);
    setenv("AXON_CONV_WINOGRAD", "off", 1); /* read at each call: Winograd's comes first */
    for (int64_t i = 0; i < inputs; i++)
        kernel[i] = NAN;
    const bool made = ax_conv_input_amx(&s.g, s.filters, delta, w, kernel, images);
    CHECK(made == allowed);
    CHECK(b && b->ops->conv_backward_input);
    if (b && b->ops->conv_backward_input &&
        b->ops->conv_backward_input(b, &s.g, s.filters, delta, w, got, images))
        CHECK((memcmp(kernel, got, (size_t)inputs * sizeof *got) == 0) == allowed);
    else
        CHECK(!allowed); /* a build without oneDNN has nothing else */
    unsetenv("AXON_CONV_AMX");
    unsetenv("AXON_CONV_WINOGRAD");
    if (b)
        b->ops->destroy(b);
    free(delta), free(w), free(kernel), free(got);
}

/* On AMX: how many values the tiles and the emulation give bit for bit */
static void compare_tiles_with_emulation(const shape *s, int64_t images)
{
    const int64_t inputs = inputs_of(s, images);
    float *delta = random_floats_from(&random_state, outputs_of(s, images));
    float *w = random_floats_from(&random_state, weights_of(s));
    float *tiles = malloc((size_t)inputs * sizeof *tiles);
    float *emulated = malloc((size_t)inputs * sizeof *emulated);
    unsetenv("AXON_CONV_AMX");
    CHECK(ax_conv_input_amx(&s->g, s->filters, delta, w, tiles, images));
    setenv("AXON_CONV_AMX", "emulate", 1);
    CHECK(ax_conv_input_amx(&s->g, s->filters, delta, w, emulated, images));
    unsetenv("AXON_CONV_AMX");
    int64_t same = 0;
    for (int64_t i = 0; i < inputs; i++)
        same += memcmp(&tiles[i], &emulated[i], sizeof *tiles) == 0;
    printf("conv_input_amx: the tiles and the emulation: %lld of %lld values bit for bit "
           "(%lldx%lldx%lld, %lld filters, %lld images)\n",
           (long long)same, (long long)inputs, (long long)s->g.height, (long long)s->g.width,
           (long long)s->g.channels, (long long)s->filters, (long long)images);
    free(delta), free(w), free(tiles), free(emulated);
}

int main(void)
{
    check_declines();
    const shape shapes[] = {
        make_shape(12, 12, 32, 5, 5, 1, 0, 64), /* LeNet's second layer */
        make_shape(16, 16, 32, 3, 3, 1, 1, 64), /* padded, 16 wide */
        make_shape(9, 7, 48, 5, 3, 1, 2, 32),   /* 9 rows (one alone last); 32 + 16 channels */
        make_shape(5, 1, 16, 3, 1, 1, 0, 32),   /* one column */
        make_shape(6, 13, 16, 1, 1, 1, 0, 64),  /* 1x1 */
        make_shape(3, 4, 16, 3, 2, 1, 1, 32),   /* taller kernel than reached */
    };
    const int64_t batches[] = {1, 9};
    const bool hardware = (unsetenv("AXON_CONV_AMX"), ax_conv_amx_mode_chosen()) ==
                          AX_CONV_AMX_HARDWARE;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (size_t j = 0; j < sizeof batches / sizeof *batches; j++) {
            check_shape(&shapes[i], batches[j], "emulate", false);
            if (hardware)
                check_shape(&shapes[i], batches[j], NULL, false);
        }
    check_shape(&shapes[0], 3, "emulate", true);
    check_shape(&shapes[2], 4, "emulate", true);
    if (hardware) {
        check_shape(&shapes[0], 3, NULL, true);
        check_shape(&shapes[2], 4, NULL, true);
    }
    check_backend("emulate", true);
    check_backend("off", false);
    if (hardware) {
        check_backend(NULL, true);
        compare_tiles_with_emulation(&shapes[0], 8);
        compare_tiles_with_emulation(&shapes[2], 5);
    } else
        printf("conv_input_amx: no AMX here (or Linux refuses its tile state): the emulation "
               "alone was checked\n");
    return test_finish("conv_input_amx");
}
