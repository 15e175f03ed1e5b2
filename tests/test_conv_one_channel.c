/* test_conv_one_channel.c: the CPU's direct convolutions of single-channel
 * images (src/backend/cpu/conv_one_channel.c), in float32:
 * - the forward pass bit for bit against the definition written here as a
 *   chain of fmaf from 0 over the window in row order (padding's zeros
 *   included: fma(w, 0, s) = s), over LeNet's first layer and odd shapes
 *   (kernels 1x1 to 7x3 and 12 wide, strides 1 to 3, padding 0 to 2, 16 to
 *   64 filters, output widths that leave tiles of 1 to 12 positions);
 * - the weight gradient against float64 sums within gamma_K sum |delta x|
 *   (K the batch's positions; Higham 3.1), for batches of 1, 7 and 45 images;
 * - both with the same bits on 1, 2 and 3 threads;
 * - the weight gradient with the bias gradient (backend.h:
 *   conv_backward_weights_bias): the same weight gradient bit for bit, and
 *   the bias as the sums of the unrounded delta in the slices' order of
 *   additions, bit for bit, within gamma_K of float64's;
 * - in bf16 (the bf16 backend's): the same checks against the definition on
 *   operands rounded to bfloat16 here (bf16_round.h's rounding), whose
 *   float32 products are exact;
 * - the float32 and bf16 backends' conv_forward, conv_backward_weights and
 *   conv_backward_weights_bias run them (same bits), and
 *   AXON_CONV_DIRECT=off turns them off;
 * - the forward pass with bias and activation (backend.h:
 *   conv_forward_bias_activation) has exactly the bits of the forward pass
 *   followed by the backend's bias_activation, for identity and ReLU, in
 *   float32 and bf16, with NaN and infinities among the inputs, and
 *   declines the other activations with nothing written;
 * - layers they do not take (2 channels, 24 filters, a kernel 13 wide) are
 *   declined with nothing written.
 * The kernels need AVX-512: on a CPU without it (or AXON_CPU_KERNELS=generic)
 * only the declines are checked. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/cpu/bf16_round.h"
#include "backend/cpu/conv_one_channel.h"
#include "backend/cpu/cpu_features.h"
#include "conv_bias_reference.h"
#include "test_util.h"

static uint64_t random_state = 28;

typedef struct shape {
    ax_window_geometry g;
    int64_t filters;
} shape;

static shape make_shape(int64_t height, int64_t width, int64_t kh, int64_t kw, int64_t stride,
                        int64_t padding, int64_t filters)
{
    shape s = {{height, width, 1, kh, kw, stride, padding, 0, 0}, filters};
    s.g.out_height = (height + 2 * padding - kh) / stride + 1;
    s.g.out_width = (width + 2 * padding - kw) / stride + 1;
    return s;
}

static float *random_floats(int64_t n)
{
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)test_random_uniform(&random_state, -1.0, 1.0);
    return v;
}

/* x's value under window tap (ky, kx) of output (oy, ox), 0 in the padding */
static float window_value(const ax_window_geometry *g, const float *image, int64_t oy,
                          int64_t ox, int64_t ky, int64_t kx)
{
    const int64_t iy = oy * g->stride - g->padding + ky, ix = ox * g->stride - g->padding + kx;
    return iy >= 0 && iy < g->height && ix >= 0 && ix < g->width ? image[iy * g->width + ix]
                                                                   : 0.0f;
}

/* z by the definition, each output a chain of fmaf from 0 in row order */
static void forward_reference(const shape *s, int64_t images, const float *x, const float *w,
                              float *z)
{
    const ax_window_geometry *g = &s->g;
    const int64_t area = g->kernel_height * g->kernel_width;
    for (int64_t n = 0; n < images; n++)
        for (int64_t oy = 0; oy < g->out_height; oy++)
            for (int64_t ox = 0; ox < g->out_width; ox++)
                for (int64_t f = 0; f < s->filters; f++) {
                    float sum = 0.0f;
                    for (int64_t ky = 0; ky < g->kernel_height; ky++)
                        for (int64_t kx = 0; kx < g->kernel_width; kx++)
                            sum = fmaf(w[f * area + ky * g->kernel_width + kx],
                                       window_value(g, x + n * g->height * g->width, oy, ox,
                                                    ky, kx),
                                       sum);
                    *z++ = sum;
                }
}

/* dW and sum |terms| in float64 */
static void gradient_reference(const shape *s, int64_t images, const float *x,
                               const float *delta, double *dw, double *dw_abs)
{
    const ax_window_geometry *g = &s->g;
    const int64_t area = g->kernel_height * g->kernel_width;
    for (int64_t i = 0; i < s->filters * area; i++)
        dw[i] = dw_abs[i] = 0.0;
    for (int64_t n = 0; n < images; n++)
        for (int64_t oy = 0; oy < g->out_height; oy++)
            for (int64_t ox = 0; ox < g->out_width; ox++) {
                const float *d = delta + ((n * g->out_height + oy) * g->out_width + ox) * s->filters;
                for (int64_t f = 0; f < s->filters; f++)
                    for (int64_t t = 0; t < area; t++) {
                        const double term =
                            (double)d[f] * window_value(g, x + n * g->height * g->width, oy, ox,
                                                        t / g->kernel_width, t % g->kernel_width);
                        dw[f * area + t] += term;
                        dw_abs[f * area + t] += fabs(term);
                    }
            }
}

/* a copy of v rounded to bfloat16 (held in float32) */
static float *rounded_copy(const float *v, int64_t n)
{
    float *r = malloc((size_t)n * sizeof *r);
    ax_bf16_round_values_serial(r, v, n);
    return r;
}

static bool same_bits(const float *a, const float *b, int64_t n)
{
    return memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

static void check_shape(const shape *s, int64_t images, bool bf16)
{
    const ax_window_geometry *g = &s->g;
    const int64_t inputs = images * g->height * g->width;
    const int64_t outputs = images * g->out_height * g->out_width * s->filters;
    const int64_t weights = s->filters * g->kernel_height * g->kernel_width;
    float *x = random_floats(inputs), *w = random_floats(weights), *delta = random_floats(outputs);
    float *z = malloc((size_t)outputs * sizeof *z), *expected = malloc((size_t)outputs * sizeof *z);
    float *dw = malloc((size_t)weights * sizeof *dw), *dw_one = malloc((size_t)weights * sizeof *dw);
    double *dw_ref = malloc((size_t)weights * sizeof *dw_ref);
    double *dw_abs = malloc((size_t)weights * sizeof *dw_abs);
    ax_conv_weight_scratch scratch = {0};

    /* the operands the sums multiply: bf16's are rounded */
    float *x_op = bf16 ? rounded_copy(x, inputs) : x, *w_op = bf16 ? rounded_copy(w, weights) : w;
    float *delta_op = bf16 ? rounded_copy(delta, outputs) : delta;
    forward_reference(s, images, x_op, w_op, expected);
    gradient_reference(s, images, x_op, delta_op, dw_ref, dw_abs);
    const double k = (double)(images * g->out_height * g->out_width);
    const double gamma = k * 0x1p-24 / (1.0 - k * 0x1p-24);
    for (int threads = 1; threads <= 3; threads++) {
        CHECK_OK(ax_set_threads(threads));
        memset(z, 0xff, (size_t)outputs * sizeof *z);
        CHECK(ax_conv_one_channel_forward(g, s->filters, x, w, z, images, bf16));
        if (!same_bits(z, expected, outputs)) {
            fprintf(stderr, "%s forward %lldx%lld kernel %lldx%lld stride %lld padding %lld, %lld "
                            "filters, %lld images, %d threads: not the fmaf chain's bits\n",
                    bf16 ? "bf16" : "float32", (long long)g->height, (long long)g->width, (long long)g->kernel_height,
                    (long long)g->kernel_width, (long long)g->stride, (long long)g->padding,
                    (long long)s->filters, (long long)images, threads);
            test_failures++;
        }
        memset(dw, 0xff, (size_t)weights * sizeof *dw);
        CHECK(ax_conv_one_channel_weight_gradient(&scratch, g, s->filters, delta, x, dw, NULL,
                                                  images, bf16));
        int64_t off = 0;
        for (int64_t i = 0; i < weights; i++)
            if (!(fabs(dw[i] - dw_ref[i]) <= gamma * dw_abs[i]))
                off++;
        if (off) {
            fprintf(stderr, "%s weight gradient %lldx%lld kernel %lldx%lld stride %lld padding "
                            "%lld, %lld images: %lld of %lld beyond the bound\n",
                    bf16 ? "bf16" : "float32", (long long)g->height, (long long)g->width, (long long)g->kernel_height,
                    (long long)g->kernel_width, (long long)g->stride, (long long)g->padding,
                    (long long)images, (long long)off, (long long)weights);
            test_failures++;
        }
        if (threads == 1)
            memcpy(dw_one, dw, (size_t)weights * sizeof *dw);
        else if (!same_bits(dw, dw_one, weights)) {
            fprintf(stderr, "weight gradient, %lld images: bits on %d threads differ from 1's\n",
                    (long long)images, threads);
            test_failures++;
        }
        /* with the bias gradient (of the unrounded delta): the same weight
         * gradient, and the bias in the slices' order of additions */
        float *dw_bias = malloc((size_t)weights * sizeof *dw_bias);
        float *bias = malloc((size_t)s->filters * sizeof *bias);
        memset(bias, 0xff, (size_t)s->filters * sizeof *bias);
        CHECK(ax_conv_one_channel_weight_gradient(&scratch, g, s->filters, delta, x, dw_bias, bias,
                                                  images, bf16));
        CHECK(same_bits(dw_bias, dw, weights));
        CHECK(bias_matches(g, s->filters, images, delta, bias));
        free(dw_bias), free(bias);
    }
    CHECK_OK(ax_set_threads(0));
    ax_conv_weight_scratch_free(&scratch);
    free(x), free(w), free(delta), free(z), free(expected), free(dw), free(dw_one);
    free(dw_ref), free(dw_abs);
    if (bf16)
        free(x_op), free(w_op), free(delta_op);
}

/* The float32 and bf16 backends' entries run the kernels: the same bits. */
static void check_backend(ax_precision precision)
{
    const bool bf16 = precision == AX_PRECISION_BF16;
    const shape s = make_shape(28, 28, 5, 5, 1, 0, 32);
    const int64_t images = 9, inputs = images * 784, outputs = images * 576 * 32;
    float *x = random_floats(inputs), *w = random_floats(800), *delta = random_floats(outputs);
    float *z = malloc((size_t)outputs * sizeof *z), *z_direct = malloc((size_t)outputs * sizeof *z);
    float dw[800], dw_direct[800];
    ax_conv_weight_scratch scratch = {0};
    ax_backend *b = ax_backend_cpu_create(precision);
    CHECK(b && b->ops->conv_forward && b->ops->conv_backward_weights);
    if (b && b->ops->conv_forward && b->ops->conv_backward_weights) {
        CHECK(ax_conv_one_channel_forward(&s.g, 32, x, w, z_direct, images, bf16));
        CHECK(b->ops->conv_forward(b, &s.g, 32, x, w, z, images));
        CHECK(same_bits(z, z_direct, outputs));
        CHECK(ax_conv_one_channel_weight_gradient(&scratch, &s.g, 32, delta, x, dw_direct, NULL,
                                                  images, bf16));
        CHECK(b->ops->conv_backward_weights(b, &s.g, 32, delta, x, NULL, dw, images));
        CHECK(same_bits(dw, dw_direct, 800));
        /* with the bias gradient (of the unrounded delta): both run the kernels */
        float bias[32], bias_direct[32];
        memset(bias, 0x7f, sizeof bias);
        memset(dw, 0x7f, sizeof dw);
        const bool taken = b->ops->conv_backward_weights_bias &&
                           b->ops->conv_backward_weights_bias(b, &s.g, 32, delta, x, NULL, dw,
                                                              bias, images);
        CHECK(taken);
        CHECK(ax_conv_one_channel_weight_gradient(&scratch, &s.g, 32, delta, x, dw_direct,
                                                  bias_direct, images, bf16));
        CHECK(same_bits(dw, dw_direct, 800) && same_bits(bias, bias_direct, 32));
    }
    if (b)
        b->ops->destroy(b);
    setenv("AXON_CONV_DIRECT", "off", 1);
    CHECK(!ax_conv_one_channel_takes(&s.g, 32));
    CHECK(!ax_conv_one_channel_forward(&s.g, 32, x, w, z, images, false));
    CHECK(!ax_conv_one_channel_forward(&s.g, 32, x, w, z, images, true));
    unsetenv("AXON_CONV_DIRECT");
    CHECK(ax_conv_one_channel_takes(&s.g, 32));
    ax_conv_weight_scratch_free(&scratch);
    free(x), free(w), free(delta), free(z), free(z_direct);
}

/* The fused forward pass against the forward pass, then bias_activation. */
static void check_fused(ax_precision precision)
{
    const bool bf16 = precision == AX_PRECISION_BF16;
    const shape s = make_shape(20, 19, 5, 4, 1, 1, 48);
    const int64_t images = 5, inputs = images * 20 * 19;
    const int64_t outputs = images * s.g.out_height * s.g.out_width * 48;
    float *x = random_floats(inputs), *w = random_floats(960), *bias = random_floats(48);
    x[7] = NAN, x[400] = INFINITY, x[401] = -INFINITY, x[900] = -NAN;
    float *fused = malloc((size_t)outputs * sizeof *fused);
    float *separate = malloc((size_t)outputs * sizeof *separate);
    ax_backend *b = ax_backend_cpu_create(precision);
    CHECK(b != NULL);
    const ax_activation activations[] = {AX_ACT_RELU, AX_ACT_IDENTITY};
    for (size_t a = 0; b && a < 2; a++) {
        CHECK(ax_conv_one_channel_forward(&s.g, 48, x, w, separate, images, bf16));
        b->ops->bias_activation(b, activations[a], separate, bias, outputs / 48, 48);
        CHECK(ax_conv_one_channel_forward_bias_activation(&s.g, 48, x, w, bias, activations[a],
                                                          fused, images, bf16));
        CHECK(same_bits(fused, separate, outputs));
        CHECK(b->ops->conv_forward_bias_activation(b, &s.g, 48, x, w, bias, activations[a], fused,
                                                   images));
        CHECK(same_bits(fused, separate, outputs));
    }
    const ax_activation declined[] = {AX_ACT_TANH, AX_ACT_SIGMOID, AX_ACT_SOFTMAX};
    for (size_t a = 0; a < 3; a++) {
        memset(fused, 0x7f, (size_t)outputs * sizeof *fused);
        CHECK(!ax_conv_one_channel_forward_bias_activation(&s.g, 48, x, w, bias, declined[a],
                                                           fused, images, bf16));
        CHECK(fused[0] == fused[outputs - 1] && !(fused[0] == 0.0f));
    }
    if (b)
        b->ops->destroy(b);
    free(x), free(w), free(bias), free(fused), free(separate);
}

/* Layers the kernels do not take: declined, nothing written. */
static void check_declines(void)
{
    shape two = make_shape(8, 8, 3, 3, 1, 0, 16);
    two.g.channels = 2;
    const shape odd_filters = make_shape(8, 8, 3, 3, 1, 0, 24);
    const shape wide = make_shape(16, 16, 3, 13, 1, 0, 16);
    const shape *declined[] = {&two, &odd_filters, &wide};
    float x[512] = {0}, w[1024] = {0}, z[4096], dw[1024];
    ax_conv_weight_scratch scratch = {0};
    for (size_t i = 0; i < sizeof declined / sizeof *declined; i++) {
        const shape *s = declined[i];
        CHECK(!ax_conv_one_channel_takes(&s->g, s->filters));
        memset(z, 0x7f, sizeof z);
        memset(dw, 0x7f, sizeof dw);
        CHECK(!ax_conv_one_channel_forward(&s->g, s->filters, x, w, z, 1, false));
        CHECK(!ax_conv_one_channel_weight_gradient(&scratch, &s->g, s->filters, z, x, dw, NULL, 1,
                                                   false));
        CHECK(!ax_conv_one_channel_weight_gradient(&scratch, &s->g, s->filters, z, x, dw, dw + 512,
                                                   1, false));
        CHECK(z[0] == z[4095] && dw[0] == dw[1023] && !(z[0] == 0.0f));
    }
    ax_conv_weight_scratch_free(&scratch);
}

int main(void)
{
    check_declines();
    if (!ax_cpu_kernels_avx512f()) {
        printf("conv_one_channel: skipped: this CPU has no AVX-512 (or AXON_CPU_KERNELS=generic); "
               "the declines passed\n");
        return test_failures ? 1 : 77;
    }
    const shape shapes[] = {
        make_shape(28, 28, 5, 5, 1, 0, 32),  /* LeNet's first layer: tiles of 12 */
        make_shape(28, 28, 5, 5, 1, 2, 32),  /* padded to 28x28 out: 10 + 9 + 9 */
        make_shape(13, 17, 3, 3, 2, 1, 16),  /* stride 2: 7x9 out, one tile of 9 */
        make_shape(16, 60, 3, 4, 2, 1, 32),  /* stride 2, 30 wide out: 10 + 10 + 10 */
        make_shape(11, 10, 7, 3, 1, 0, 48),  /* 5x8 out, filters 32 + 16 */
        make_shape(9, 30, 1, 12, 3, 2, 64),  /* 12 wide, stride 3 */
        make_shape(6, 6, 1, 1, 1, 0, 16),    /* 1x1 */
        make_shape(20, 35, 4, 2, 1, 0, 32),  /* 34 wide out: 12 + 11 + 11 */
    };
    const int64_t batches[] = {1, 7, 45}; /* 45: 32 slices of one or two images */
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (size_t j = 0; j < sizeof batches / sizeof *batches; j++)
            for (int bf16 = 0; bf16 <= 1; bf16++)
                check_shape(&shapes[i], batches[j], bf16);
    check_backend(AX_PRECISION_F32);
    check_backend(AX_PRECISION_BF16);
    check_fused(AX_PRECISION_F32);
    check_fused(AX_PRECISION_BF16);
    return test_finish("conv_one_channel");
}
