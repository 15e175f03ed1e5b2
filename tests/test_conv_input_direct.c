/* test_conv_input_direct.c: the CPU's direct convolution input gradient
 * (src/backend/cpu/conv_input_direct.c), float32:
 * - bit for bit against its definition written here one value at a time:
 *   over the kernel columns kx in order, a chain of fmaf from 0 over the
 *   kernel rows and filters that reach the value, added to the value in
 *   turn (conv_input_direct.h);
 * - within gamma_K sum |delta w| (K the products of a value; Higham 3.1) of
 *   float64 sums made the other way round, each output position's delta
 *   scattered through its window (the forward pass's definition, read
 *   backwards), so that both the sum and the layout are checked;
 * - over LeNet's second layer and odd shapes: 16, 32 and 48 channels (tiles
 *   of one and two vectors), padding 0 to 2, kernels 1x1 to 7x3, outputs 1
 *   to 30 wide (tiles of 1 to 12 positions), filters not in 16s;
 * - the same bits on 1, 2 and 3 threads; NaN and infinities in delta as the
 *   definition's; every value of previous overwritten;
 * - the float32 backend's conv_backward_input runs it where oneDNN and
 *   Winograd's F(4x4, 5x5) are off (AXON_ONEDNN_CONV=off,
 *   AXON_CONV_WINOGRAD=off; those come first where they take the layer), and with
 *   AXON_CONV_DIRECT=off as well it declines (the layer's GEMM and col2im
 *   then run, test_conv_gradients);
 * - layers it does not take (stride 2, 8 channels, padding as wide as the
 *   kernel) are declined with nothing written.
 * The kernel needs AVX-512: on a CPU without it (or AXON_CPU_KERNELS=generic)
 * only the declines are checked. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/conv_input_direct.h"
#include "backend/cpu/cpu_features.h"
#include "conv_test_shapes.h"
#include "test_util.h"

static uint64_t random_state = 29;

/* weights (filters, channels, kh, kw) at (f, c, ky, kx) */
static float weight_at(const shape *s, const float *w, int64_t f, int64_t c, int64_t ky,
                       int64_t kx)
{
    const ax_window_geometry *g = &s->g;
    return w[((f * g->channels + c) * g->kernel_height + ky) * g->kernel_width + kx];
}

/* The definition, one value at a time (conv_input_direct.h). */
static void definition(const shape *s, const float *delta, const float *w, float *previous,
                       int64_t images)
{
    const ax_window_geometry *g = &s->g;
    const int64_t f_count = s->filters, pad = g->padding;
    for (int64_t n = 0; n < images; n++)
        for (int64_t iy = 0; iy < g->height; iy++)
            for (int64_t ix = 0; ix < g->width; ix++)
                for (int64_t c = 0; c < g->channels; c++) {
                    float total = 0.0f;
                    for (int64_t kx = 0; kx < g->kernel_width; kx++) {
                        const int64_t ox = ix + pad - kx;
                        if (ox < 0 || ox >= g->out_width)
                            continue;
                        float sum = 0.0f;
                        bool reached = false;
                        for (int64_t ky = 0; ky < g->kernel_height; ky++) {
                            const int64_t oy = iy + pad - ky;
                            if (oy < 0 || oy >= g->out_height)
                                continue;
                            reached = true;
                            const float *d = delta + ((n * g->out_height + oy) * g->out_width + ox) *
                                                         f_count;
                            for (int64_t f = 0; f < f_count; f++)
                                sum = fmaf(d[f], weight_at(s, w, f, c, ky, kx), sum);
                        }
                        if (reached)
                            total += sum;
                    }
                    previous[((n * g->height + iy) * g->width + ix) * g->channels + c] = total;
                }
}

/* float64 sums of delta scattered through each output's window, and the
 * sums of |delta w| for the bound */
static void scattered(const shape *s, const float *delta, const float *w, double *sums,
                      double *magnitudes, int64_t images)
{
    const ax_window_geometry *g = &s->g;
    const int64_t inputs = inputs_of(s, images);
    memset(sums, 0, (size_t)inputs * sizeof *sums);
    memset(magnitudes, 0, (size_t)inputs * sizeof *magnitudes);
    for (int64_t n = 0; n < images; n++)
        for (int64_t oy = 0; oy < g->out_height; oy++)
            for (int64_t ox = 0; ox < g->out_width; ox++)
                for (int64_t ky = 0; ky < g->kernel_height; ky++)
                    for (int64_t kx = 0; kx < g->kernel_width; kx++) {
                        const int64_t iy = oy + ky - g->padding, ix = ox + kx - g->padding;
                        if (iy < 0 || iy >= g->height || ix < 0 || ix >= g->width)
                            continue;
                        const int64_t at = ((n * g->height + iy) * g->width + ix) * g->channels;
                        const float *d =
                            delta + ((n * g->out_height + oy) * g->out_width + ox) * s->filters;
                        for (int64_t c = 0; c < g->channels; c++)
                            for (int64_t f = 0; f < s->filters; f++) {
                                const double p = (double)d[f] * weight_at(s, w, f, c, ky, kx);
                                sums[at + c] += p;
                                magnitudes[at + c] += fabs(p);
                            }
                    }
}

static void check_shape(const shape *s, int64_t images)
{
    const int64_t inputs = inputs_of(s, images), outputs = outputs_of(s, images);
    float *delta = random_floats_from(&random_state, outputs);
    float *w = random_floats_from(&random_state, weights_of(s));
    float *expected = malloc((size_t)inputs * sizeof *expected);
    float *got = malloc((size_t)inputs * sizeof *got);
    double *sums = malloc((size_t)inputs * sizeof *sums);
    double *magnitudes = malloc((size_t)inputs * sizeof *magnitudes);
    definition(s, delta, w, expected, images);
    scattered(s, delta, w, sums, magnitudes, images);
    const double k = (double)(s->g.kernel_height * s->g.kernel_width * s->filters);
    const double gamma = k * 0x1p-24 / (1.0 - k * 0x1p-24);
    for (int threads = 1; threads <= 3; threads++) {
        CHECK_OK(ax_set_threads(threads));
        for (int64_t i = 0; i < inputs; i++)
            got[i] = NAN; /* every value must be written */
        CHECK(ax_conv_input_direct(&s->g, s->filters, delta, w, got, images));
        CHECK(same_values(expected, got, inputs));
        if (threads == 1) {
            int64_t outside = 0;
            for (int64_t i = 0; i < inputs; i++)
                outside += !(fabs(got[i] - sums[i]) <= gamma * magnitudes[i] + 1e-30);
            CHECK(outside == 0);
            if (outside)
                fprintf(stderr, "%dx%dx%d -> %d %dx%d pad %d, %d images: %d values outside "
                                "the bound\n",
                        (int)s->g.height, (int)s->g.width, (int)s->g.channels, (int)s->filters,
                        (int)s->g.kernel_height, (int)s->g.kernel_width, (int)s->g.padding,
                        (int)images, (int)outside);
        }
    }
    /* NaN and infinities among delta (where it has room for them: past
     * its first position's filters): as the definition's */
    if (outputs > s->filters + 1) {
        float x_unused[8] = {0};
        put_specials(x_unused, 8, delta, outputs, s->filters);
        definition(s, delta, w, expected, images);
        CHECK(ax_conv_input_direct(&s->g, s->filters, delta, w, got, images));
        CHECK(same_values(expected, got, inputs));
    }
    CHECK_OK(ax_set_threads(0));
    free(delta), free(w), free(expected), free(got), free(sums), free(magnitudes);
}

/* The float32 backend's entry: the direct kernel where oneDNN is off, and
 * a decline with nothing written where the direct kernels are off too. */
static void check_backend(void)
{
    const shape s = make_shape(12, 12, 32, 5, 5, 1, 0, 64);
    const int64_t images = 3, inputs = inputs_of(&s, images);
    float *delta = random_floats_from(&random_state, outputs_of(&s, images));
    float *w = random_floats_from(&random_state, weights_of(&s));
    float *expected = malloc((size_t)inputs * sizeof *expected);
    float *got = malloc((size_t)inputs * sizeof *got);
    CHECK(ax_conv_input_direct(&s.g, s.filters, delta, w, expected, images));
    setenv("AXON_ONEDNN_CONV", "off", 1); /* read when the backend is made */
    setenv("AXON_CONV_WINOGRAD", "off", 1); /* read at each call: Winograd's comes first */
    ax_backend *b = ax_backend_cpu_create(AX_PRECISION_F32);
    unsetenv("AXON_ONEDNN_CONV");
    CHECK(b && b->ops->conv_backward_input);
    if (b && b->ops->conv_backward_input) {
        CHECK(b->ops->conv_backward_input(b, &s.g, s.filters, delta, w, got, images));
        CHECK(memcmp(expected, got, (size_t)inputs * sizeof *got) == 0);
        setenv("AXON_CONV_DIRECT", "off", 1);
        for (int64_t i = 0; i < inputs; i++)
            got[i] = 7.0f;
        CHECK(!b->ops->conv_backward_input(b, &s.g, s.filters, delta, w, got, images));
        unsetenv("AXON_CONV_DIRECT");
        int64_t changed = 0;
        for (int64_t i = 0; i < inputs; i++)
            changed += got[i] != 7.0f;
        CHECK(changed == 0);
    }
    unsetenv("AXON_CONV_WINOGRAD");
    if (b)
        b->ops->destroy(b);
    free(delta), free(w), free(expected), free(got);
}

static void check_declines(void)
{
    const shape declined[] = {
        make_shape(12, 12, 32, 3, 3, 2, 1, 64), /* stride 2 */
        make_shape(12, 12, 8, 5, 5, 1, 0, 64),  /* 8 channels */
        make_shape(12, 12, 16, 3, 3, 1, 3, 16), /* padding as wide as the kernel */
    };
    for (size_t i = 0; i < sizeof declined / sizeof *declined; i++)
        check_input_gradient_declined(&declined[i], ax_conv_input_direct_takes, ax_conv_input_direct,
                                      &random_state);
    const shape lenet = make_shape(12, 12, 32, 5, 5, 1, 0, 64);
    setenv("AXON_CONV_DIRECT", "off", 1);
    check_input_gradient_declined(&lenet, ax_conv_input_direct_takes, ax_conv_input_direct,
                                      &random_state);
    unsetenv("AXON_CONV_DIRECT");
    if (!ax_cpu_kernels_avx512f())
        check_input_gradient_declined(&lenet, ax_conv_input_direct_takes, ax_conv_input_direct,
                                      &random_state);
}

int main(void)
{
    check_declines();
    if (!ax_cpu_kernels_avx512f()) {
        printf("conv_input_direct: skipped: this CPU has no AVX-512 (or "
               "AXON_CPU_KERNELS=generic); the declines passed\n");
        return test_failures ? 1 : 77;
    }
    const shape shapes[] = {
        make_shape(12, 12, 32, 5, 5, 1, 0, 64), /* LeNet's second layer: tiles of 8 */
        make_shape(16, 16, 32, 3, 3, 1, 1, 64), /* 16 wide out: 8 + 8 */
        make_shape(9, 30, 48, 5, 5, 1, 2, 24),  /* 30 wide out: 10 + 10 + 10; 32 + 16 channels */
        make_shape(11, 10, 16, 7, 3, 1, 1, 20), /* 7x10 out, one vector of channels */
        make_shape(6, 13, 16, 1, 1, 1, 0, 16),  /* 1x1, 13 wide: 7 + 6 */
        make_shape(5, 5, 32, 5, 5, 1, 0, 3),    /* a 1x1 output */
        make_shape(4, 2, 16, 3, 2, 1, 1, 5),    /* 4x3 out, padding wider than reached */
    };
    const int64_t batches[] = {1, 5};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (size_t j = 0; j < sizeof batches / sizeof *batches; j++)
            check_shape(&shapes[i], batches[j]);
    check_backend();
    return test_finish("conv_input_direct");
}
