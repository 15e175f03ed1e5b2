/* test_conv_onednn.c: the CPU backend's whole-convolution entries
 * (backend.h: conv_forward, conv_backward_input; oneDNN in float32 where
 * axon is built with it, AXON_ONEDNN) against independent references, over
 * LeNet's two shapes and odd ones (non-square kernels, strides 2 and 3,
 * padding, a last window short of the image's edge):
 * - against float64 sums computed here, element by element, within the
 *   bound of any float32 summation order, |error| <= gamma_K sum |x w|,
 *   gamma_K = K u / (1 - K u), u = 2^-24, K the terms of the sum (Higham,
 *   Accuracy and Stability of Numerical Algorithms, 3.1);
 * - against the layer's other path (im2col + GEMM, col2im: the backend's
 *   own im2col, transpose, gemm and col2im), within twice that bound;
 * - bits equal on 1, 2, 3 and 4 threads (the layer's promise across
 *   --threads), and after the shape's cached primitive was evicted by
 *   more shapes than the cache holds.
 * Skips (77) in a build without oneDNN (AXON_ONEDNN undefined). */
#include <stdint.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "test_util.h"

static uint64_t random_state = 5;
static float random_float(void)
{
    return (float)test_random_uniform(&random_state, -1.0, 1.0);
}

typedef struct shape {
    ax_window_geometry g;
    int64_t filters, images;
} shape;

static ax_window_geometry with_outputs(ax_window_geometry g)
{
    g.out_height = (g.height + 2 * g.padding - g.kernel_height) / g.stride + 1;
    g.out_width = (g.width + 2 * g.padding - g.kernel_width) / g.stride + 1;
    return g;
}

static double gamma_of(double terms)
{
    const double u = 0x1.0p-24;
    return terms * u / (1.0 - terms * u);
}

/* Sizes of one shape's tensors. */
typedef struct sizes {
    int64_t inputs, outputs, weights, patch, places;
} sizes;

static sizes sizes_of(const shape *s)
{
    const ax_window_geometry *g = &s->g;
    sizes z;
    z.patch = g->channels * g->kernel_height * g->kernel_width;
    z.places = g->out_height * g->out_width;
    z.inputs = s->images * g->height * g->width * g->channels;
    z.outputs = s->images * z.places * s->filters;
    z.weights = s->filters * z.patch;
    return z;
}

/* The float64 forward pass and backward-input pass and their sums of
 * |terms|, by the definition: out[n, oy, ox, f] += x[n, y, x, c] w[f, c,
 * i, j] for y = oy stride - padding + i inside the image (x likewise). */
static void reference(const shape *s, const float *x, const float *w, const float *delta,
                      double *z, double *z_abs, double *previous, double *previous_abs)
{
    const ax_window_geometry *g = &s->g;
    const sizes n = sizes_of(s);
    memset(z, 0, (size_t)n.outputs * sizeof *z);
    memset(z_abs, 0, (size_t)n.outputs * sizeof *z_abs);
    memset(previous, 0, (size_t)n.inputs * sizeof *previous);
    memset(previous_abs, 0, (size_t)n.inputs * sizeof *previous_abs);
    for (int64_t image = 0; image < s->images; image++)
        for (int64_t oy = 0; oy < g->out_height; oy++)
            for (int64_t ox = 0; ox < g->out_width; ox++)
                for (int64_t f = 0; f < s->filters; f++) {
                    const int64_t out = ((image * g->out_height + oy) * g->out_width + ox) *
                                            s->filters + f;
                    for (int64_t i = 0; i < g->kernel_height; i++)
                        for (int64_t j = 0; j < g->kernel_width; j++) {
                            const int64_t y = oy * g->stride - g->padding + i;
                            const int64_t xx = ox * g->stride - g->padding + j;
                            if (y < 0 || y >= g->height || xx < 0 || xx >= g->width)
                                continue;
                            for (int64_t c = 0; c < g->channels; c++) {
                                const int64_t in =
                                    ((image * g->height + y) * g->width + xx) * g->channels + c;
                                const double weight =
                                    w[((f * g->channels + c) * g->kernel_height + i) *
                                          g->kernel_width + j];
                                z[out] += (double)x[in] * weight;
                                z_abs[out] += fabs((double)x[in] * weight);
                                previous[in] += (double)delta[out] * weight;
                                previous_abs[in] += fabs((double)delta[out] * weight);
                            }
                        }
                }
}

/* The layer's im2col path in float32 through the backend's own operations
 * (layer_conv.c's forward_products and input_products for one group). */
static void im2col_path(ax_backend *cpu, const shape *s, const float *x, const float *w,
                        const float *delta, float *z, float *previous)
{
    const sizes n = sizes_of(s);
    const int64_t area = s->g.kernel_height * s->g.kernel_width, rows = s->images * n.places;
    float *columns = malloc((size_t)(rows * n.patch) * sizeof *columns);
    float *ordered = malloc((size_t)n.weights * sizeof *ordered);
    CHECK(columns && ordered);
    if (columns && ordered) {
        cpu->ops->transpose(cpu, w, ordered, s->filters, s->g.channels, area);
        cpu->ops->im2col(cpu, &s->g, x, columns, s->images);
        cpu->ops->gemm(cpu, false, true, rows, s->filters, n.patch, 1.0, columns, n.patch,
                       ordered, n.patch, 0.0, z, s->filters);
        cpu->ops->gemm(cpu, false, false, rows, n.patch, s->filters, 1.0, delta, s->filters,
                       ordered, n.patch, 0.0, columns, n.patch);
        cpu->ops->col2im(cpu, &s->g, columns, previous, s->images);
    }
    free(columns);
    free(ordered);
}

/* Elements of got outside |got - exact| <= factor gamma_K abs (+ the
 * smallest normal, for sums of zeros), printing the first. */
static int64_t outside(const char *what, const shape *s, const float *got, const double *exact,
                       const double *abs_sum, int64_t count, double terms, double factor)
{
    int64_t wrong = 0;
    const double bound = factor * gamma_of(terms);
    for (int64_t i = 0; i < count; i++) {
        const double error = fabs((double)got[i] - exact[i]);
        if (!(error <= bound * abs_sum[i] + 0x1.0p-126)) {
            if (!wrong)
                fprintf(stderr,
                        "%s, %lldx%lldx%lld kernel %lldx%lld /s%lld /p%lld, %lld filters: "
                        "element %lld is %.9g, expected %.17g (bound %.3g)\n",
                        what, (long long)s->g.height, (long long)s->g.width,
                        (long long)s->g.channels, (long long)s->g.kernel_height,
                        (long long)s->g.kernel_width, (long long)s->g.stride,
                        (long long)s->g.padding, (long long)s->filters, (long long)i, got[i],
                        exact[i], bound * abs_sum[i]);
            wrong++;
        }
    }
    return wrong;
}

/* Runs both entries at a thread count; false when one declined. */
static bool run_entries(ax_backend *cpu, const shape *s, int threads, const float *x,
                        const float *w, const float *delta, float *z, float *previous)
{
    CHECK_OK(ax_set_threads(threads));
    return cpu->ops->conv_forward(cpu, &s->g, s->filters, x, w, z, s->images) &&
           cpu->ops->conv_backward_input(cpu, &s->g, s->filters, delta, w, previous, s->images);
}

static void check_shape(ax_backend *cpu, shape s)
{
    s.g = with_outputs(s.g);
    const sizes n = sizes_of(&s);
    float *x = malloc((size_t)n.inputs * sizeof *x), *w = malloc((size_t)n.weights * sizeof *w);
    float *delta = malloc((size_t)n.outputs * sizeof *delta);
    float *z = malloc((size_t)n.outputs * sizeof *z), *z_other = malloc((size_t)n.outputs * 4);
    float *z_im2col = malloc((size_t)n.outputs * 4), *previous = malloc((size_t)n.inputs * 4);
    float *previous_other = malloc((size_t)n.inputs * 4), *previous_im2col = malloc((size_t)n.inputs * 4);
    double *z64 = malloc((size_t)n.outputs * 8), *z_abs = malloc((size_t)n.outputs * 8);
    double *previous64 = malloc((size_t)n.inputs * 8), *previous_abs = malloc((size_t)n.inputs * 8);
    CHECK(x && w && delta && z && z_other && z_im2col && previous && previous_other &&
          previous_im2col && z64 && z_abs && previous64 && previous_abs);
    if (!(x && w && delta && z && z_other && z_im2col && previous && previous_other &&
          previous_im2col && z64 && z_abs && previous64 && previous_abs))
        goto done;
    for (int64_t i = 0; i < n.inputs; i++)
        x[i] = random_float();
    for (int64_t i = 0; i < n.weights; i++)
        w[i] = random_float() * 0.2f;
    for (int64_t i = 0; i < n.outputs; i++)
        delta[i] = random_float();
    reference(&s, x, w, delta, z64, z_abs, previous64, previous_abs);
    im2col_path(cpu, &s, x, w, delta, z_im2col, previous_im2col);
    CHECK(run_entries(cpu, &s, 1, x, w, delta, z, previous));
    /* any summation order of K terms is within gamma_K; an input value's
     * gradient sums at most filters kh kw terms */
    const double forward_terms = (double)n.patch;
    const double input_terms = (double)(s.filters * s.g.kernel_height * s.g.kernel_width);
    CHECK(outside("oneDNN forward against float64", &s, z, z64, z_abs, n.outputs, forward_terms, 1) == 0);
    CHECK(outside("im2col forward against float64", &s, z_im2col, z64, z_abs, n.outputs, forward_terms, 1) == 0);
    CHECK(outside("oneDNN input gradient against float64", &s, previous, previous64,
                  previous_abs, n.inputs, input_terms, 1) == 0);
    CHECK(outside("im2col input gradient against float64", &s, previous_im2col, previous64,
                  previous_abs, n.inputs, input_terms, 1) == 0);
    /* the two float32 paths, each within gamma_K of the exact sum */
    for (int64_t i = 0; i < n.outputs; i++)
        z64[i] = z_im2col[i];
    for (int64_t i = 0; i < n.inputs; i++)
        previous64[i] = previous_im2col[i];
    CHECK(outside("oneDNN forward against im2col", &s, z, z64, z_abs, n.outputs, forward_terms, 2) == 0);
    CHECK(outside("oneDNN input gradient against im2col", &s, previous, previous64,
                  previous_abs, n.inputs, input_terms, 2) == 0);
    for (int threads = 2; threads <= 4; threads++) {
        CHECK(run_entries(cpu, &s, threads, x, w, delta, z_other, previous_other));
        if (memcmp(z, z_other, (size_t)n.outputs * 4) != 0 ||
            memcmp(previous, previous_other, (size_t)n.inputs * 4) != 0) {
            fprintf(stderr, "%lldx%lldx%lld, %lld filters: bits on %d threads differ from 1's\n",
                    (long long)s.g.height, (long long)s.g.width, (long long)s.g.channels,
                    (long long)s.filters, threads);
            test_failures++;
        }
    }
done:
    free(x), free(w), free(delta), free(z), free(z_other), free(z_im2col), free(previous);
    free(previous_other), free(previous_im2col), free(z64), free(z_abs), free(previous64);
    free(previous_abs);
    CHECK_OK(ax_set_threads(0));
}

/* A shape's results stay the same after more other shapes than the cache
 * holds have evicted its primitive (and a new one was created). */
static void check_eviction(ax_backend *cpu)
{
    shape s = {{10, 10, 3, 3, 3, 1, 1, 0, 0}, 4, 2};
    s.g = with_outputs(s.g);
    const sizes n = sizes_of(&s);
    float x[600], w[108], delta[800], first[800], again[800], previous[600];
    for (int64_t i = 0; i < n.inputs; i++)
        x[i] = random_float();
    for (int64_t i = 0; i < n.weights; i++)
        w[i] = random_float();
    for (int64_t i = 0; i < n.outputs; i++)
        delta[i] = random_float();
    CHECK(cpu->ops->conv_forward(cpu, &s.g, s.filters, x, w, first, s.images));
    for (int64_t images = 1; images <= 20; images++) { /* 20 other shapes */
        float *big_x = calloc((size_t)(images * 300 + 1), 4), *big_z = calloc((size_t)(images * 400 + 1), 4);
        CHECK(big_x && big_z);
        if (big_x && big_z)
            CHECK(cpu->ops->conv_forward(cpu, &s.g, s.filters, big_x, w, big_z, images) &&
                  cpu->ops->conv_backward_input(cpu, &s.g, s.filters, big_z, w, big_x, images));
        free(big_x), free(big_z);
    }
    CHECK(cpu->ops->conv_forward(cpu, &s.g, s.filters, x, w, again, s.images));
    CHECK(memcmp(first, again, (size_t)n.outputs * 4) == 0);
    CHECK(cpu->ops->conv_backward_input(cpu, &s.g, s.filters, delta, w, previous, s.images));
}

int main(void)
{
    ax_backend *cpu = ax_backend_cpu_create(AX_PRECISION_F32);
    CHECK(cpu != NULL);
    if (!cpu)
        return test_finish("test_conv_onednn");
#ifndef AXON_ONEDNN
    /* the table's entries are there without oneDNN too (axon's direct
     * kernels), declining most of these shapes */
    if (true) {
#else
    if (!cpu->ops->conv_forward || !cpu->ops->conv_backward_input) {
#endif
        cpu->ops->destroy(cpu);
        TEST_SKIP("this axon is built without oneDNN (AXON_ONEDNN=OFF, or no libdnnl-dev): "
                  "convolutions run im2col + GEMM only");
    }
    ax_backend *f64 = ax_backend_cpu_create(AX_PRECISION_F64);
    ax_backend *bf16 = ax_backend_cpu_create(AX_PRECISION_BF16);
    /* oneDNN has no float64 convolutions; bf16's are checked in
     * test_conv_onednn_bf16.c */
    CHECK(f64 && !f64->ops->conv_forward && !f64->ops->conv_backward_input);
    CHECK(bf16 && bf16->ops->conv_forward && bf16->ops->conv_backward_input);
    if (f64)
        f64->ops->destroy(f64);
    if (bf16)
        bf16->ops->destroy(bf16);
    /* {height, width, channels, kh, kw, stride, padding}, filters, images */
    const shape shapes[] = {
        {{28, 28, 1, 5, 5, 1, 0, 0, 0}, 32, 16}, /* LeNet's first convolution */
        {{12, 12, 32, 5, 5, 1, 0, 0, 0}, 64, 16}, /* and its second */
        {{11, 10, 3, 3, 4, 2, 1, 0, 0}, 6, 3},   /* non-square kernel, stride 2, padding */
        {{14, 14, 4, 5, 5, 3, 2, 0, 0}, 7, 2},   /* the last window short of the edge */
        {{7, 9, 17, 1, 1, 1, 0, 0, 0}, 5, 4},    /* 1x1 */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        check_shape(cpu, shapes[i]);
    check_eviction(cpu);
    cpu->ops->destroy(cpu);
    return test_finish("test_conv_onednn");
}
