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
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/bf16_round.h"
#include "backend/cpu/conv_one_channel.h"
#include "backend/cpu/conv_weight_gradient.h"
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

/* The forward pass with bias, ReLU and the 2x2 max pooling over it in one
 * (backend.h: conv_forward_relu_max_pool), against the separate passes:
 * y the fused forward pass's bits, pooled pool_forward's, and the codes
 * such that the delta made from them (ax_pooled_delta_make) has
 * max_pool_backward_relu's bits; ties (a constant image, a filter of
 * zeros), NaN and infinities among the inputs; the same bits on 1 and 3
 * threads; the backends' entries the same, the coded weight gradient the
 * pooled one's. */
static void check_max_pool_shape(const shape *s, int64_t images, ax_precision precision)
{
    const bool bf16 = precision == AX_PRECISION_BF16;
    const ax_window_geometry *g = &s->g;
    const int64_t f = s->filters, area = g->kernel_height * g->kernel_width;
    const ax_window_geometry pool = {g->out_height, g->out_width, f, 2, 2, 2, 0,
                                     g->out_height / 2, g->out_width / 2};
    const int64_t inputs = images * g->height * g->width, outputs = images * g->out_height * g->out_width * f;
    const int64_t pooled_count = outputs / 4;
    float *x = random_floats(inputs), *w = random_floats(f * area), *bias = random_floats(f);
    for (int64_t i = 0; i < g->height * g->width; i++)
        x[i] = 0.5f; /* image 0 constant: equal sums, windows of ties */
    for (int64_t t = 0; t < area; t++)
        w[3 * area + t] = 0.0f; /* filter 3: the bias alone, ties again */
    bias[3] = -bias[3] > 0 ? -bias[3] : bias[3]; /* and not above 0: no gradient */
    if (images > 2) {
        x[2 * g->height * g->width + 5] = NAN;
        x[2 * g->height * g->width + 40] = INFINITY;
        x[2 * g->height * g->width + 41] = -INFINITY;
    }
    float *y = malloc((size_t)outputs * sizeof *y), *y_ref = malloc((size_t)outputs * sizeof *y);
    float *pooled = malloc((size_t)pooled_count * sizeof *pooled);
    float *pooled_ref = malloc((size_t)pooled_count * sizeof *pooled);
    uint8_t *codes = malloc((size_t)pooled_count), *codes_3 = malloc((size_t)pooled_count);
    float *dy = random_floats(pooled_count);
    float *delta = malloc((size_t)outputs * sizeof *delta);
    float *delta_ref = malloc((size_t)outputs * sizeof *delta);
    ax_backend *b = ax_backend_cpu_create(precision);
    CHECK(b && b->ops->conv_forward_relu_max_pool && b->ops->conv_backward_weights_bias_coded);
    if (b) {
        CHECK(ax_conv_one_channel_forward_bias_activation(g, f, x, w, bias, AX_ACT_RELU, y_ref,
                                                          images, bf16));
        b->ops->pool_forward(b, true, &pool, y_ref, pooled_ref, images);
        b->ops->max_pool_backward_relu(b, &pool, y_ref, dy, delta_ref, images);
        omp_set_num_threads(1);
        CHECK(ax_conv_one_channel_forward_relu_max_pool(g, f, &pool, x, w, bias, y, pooled, codes,
                                                        images, bf16));
        CHECK(same_bits(y, y_ref, outputs) && same_bits(pooled, pooled_ref, pooled_count));
        const ax_pooled_delta coded = {&pool, NULL, dy, codes};
        ax_pooled_delta_make(&coded, 0, images, delta);
        CHECK(same_bits(delta, delta_ref, outputs));
        int64_t counts[5] = {0}, beyond = 0;
        for (int64_t i = 0; i < pooled_count; i++) {
            if (codes[i] <= 4)
                counts[codes[i]]++;
            else
                beyond++;
        }
        CHECK(beyond == 0 && counts[4] > 0 && counts[0] > 0 && counts[1] + counts[2] + counts[3] > 0);
        omp_set_num_threads(3);
        memset(y, 0, (size_t)outputs * sizeof *y);
        CHECK(b->ops->conv_forward_relu_max_pool(b, g, f, &pool, x, w, bias, y, pooled, codes_3,
                                                 images));
        CHECK(same_bits(y, y_ref, outputs) && same_bits(pooled, pooled_ref, pooled_count));
        /* the same kernel on both sides (the backend's entry calls it), each
         * output one thread's: bits, on any CPU */
        CHECK(memcmp(codes, codes_3, (size_t)pooled_count) == 0);
        omp_set_num_threads(2);
        /* the weight and bias gradients from the codes: the pooled entry's bits */
        float *dw = malloc((size_t)(f * area + f) * sizeof *dw);
        float *dw_ref = malloc((size_t)(f * area + f) * sizeof *dw);
        CHECK(b->ops->conv_backward_weights_bias_pooled(b, g, f, &pool, y_ref, dy, x, dw_ref,
                                                        dw_ref + f * area, images));
        CHECK(b->ops->conv_backward_weights_bias_coded(b, g, f, &pool, codes, dy, x, dw,
                                                       dw + f * area, images));
        CHECK(same_bits(dw, dw_ref, f * area + f));
        free(dw), free(dw_ref);
        b->ops->destroy(b);
    }
    free(x), free(w), free(bias), free(y), free(y_ref), free(pooled), free(pooled_ref);
    free(codes), free(codes_3), free(dy), free(delta), free(delta_ref);
}

/* Poolings the fused pass does not take: declined, nothing written. */
static void check_max_pool_declines(ax_precision precision)
{
    const shape s = make_shape(12, 12, 3, 3, 1, 0, 16); /* 10x10 out */
    const ax_window_geometry good = {10, 10, 16, 2, 2, 2, 0, 5, 5};
    ax_window_geometry bad[5];
    for (int i = 0; i < 5; i++)
        bad[i] = good;
    bad[0].kernel_height = bad[0].kernel_width = 3, bad[0].out_height = bad[0].out_width = 4;
    bad[1].stride = 1, bad[1].out_height = bad[1].out_width = 9; /* overlapping */
    bad[2].channels = 32;
    bad[3].padding = 1;
    bad[4].height = bad[4].width = 9, bad[4].out_height = bad[4].out_width = 4; /* not its output */
    float x[144] = {0}, w[144] = {0}, bias[16] = {0}, y[1600], pooled[400];
    uint8_t codes[400];
    ax_backend *b = ax_backend_cpu_create(precision);
    for (int i = 0; i < 5; i++) {
        memset(y, 0x7f, sizeof y), memset(pooled, 0x7f, sizeof pooled), memset(codes, 9, sizeof codes);
        CHECK(!ax_conv_one_channel_forward_relu_max_pool(&s.g, 16, &bad[i], x, w, bias, y, pooled,
                                                         codes, 1, precision == AX_PRECISION_BF16));
        CHECK(b && !b->ops->conv_backward_weights_bias_coded(b, &s.g, 16, &bad[i], codes, pooled,
                                                              x, w, bias, 1));
        CHECK(y[0] == y[1599] && !(y[0] == 0.0f) && pooled[0] == pooled[399] && codes[0] == 9);
    }
    /* the backend's entry off under AXON_CONV_POOL=off; float64's has none to take */
    setenv("AXON_CONV_POOL", "off", 1);
    CHECK(b && !b->ops->conv_forward_relu_max_pool(b, &s.g, 16, &good, x, w, bias, y, pooled,
                                                   codes, 1));
    unsetenv("AXON_CONV_POOL");
    CHECK(y[0] == y[1599] && codes[0] == 9);
    CHECK(b && b->ops->conv_forward_relu_max_pool(b, &s.g, 16, &good, x, w, bias, y, pooled,
                                                  codes, 1));
    CHECK(y[0] == 0.0f && codes[0] == 4); /* zeros: ReLU's 0, no gradient */
    if (b)
        b->ops->destroy(b);
    ax_backend *f64 = ax_backend_cpu_create(AX_PRECISION_F64);
    double x64[144] = {0}, w64[144] = {0}, bias64[16] = {0}, y64[1600], pooled64[400];
    CHECK(f64 && !f64->ops->conv_forward_relu_max_pool(f64, &s.g, 16, &good, x64, w64, bias64,
                                                       y64, pooled64, codes, 1));
    if (f64)
        f64->ops->destroy(f64);
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
    const shape pooled_shapes[] = {
        make_shape(28, 28, 5, 5, 1, 0, 32),  /* LeNet's first layer: 12 windows a row */
        make_shape(20, 19, 5, 4, 1, 1, 48),  /* padded, 18x18 out, filters 32 + 16 */
        make_shape(16, 20, 3, 3, 2, 1, 16),  /* stride 2, 8x10 out: 2 + 3 windows */
    };
    for (int p = 0; p < 2; p++) {
        const ax_precision precision = p ? AX_PRECISION_BF16 : AX_PRECISION_F32;
        for (size_t i = 0; i < sizeof pooled_shapes / sizeof *pooled_shapes; i++)
            check_max_pool_shape(&pooled_shapes[i], i == 0 ? 6 : 3, precision);
        check_max_pool_declines(precision);
    }
    return test_finish("conv_one_channel");
}
