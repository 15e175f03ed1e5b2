/* test_conv_onednn_bf16.c: the bf16 backend's whole-convolution entries
 * through oneDNN (src/backend/cpu/onednn_conv_bf16.c), both modes, over
 * LeNet's two shapes and odd ones (non-square kernel, strides 2 and 3,
 * padding, 1x1):
 * - against float64 sums of the bf16-rounded operands, element by element:
 *   a product of two bfloat16 values (8 significant bits each) is exact in
 *   float32, so the only error is float32 summation's, within gamma_K sum
 *   |x w| for any order of the K terms, gamma_K = K u / (1 - K u), u = 2^-24
 *   (Higham, Accuracy and Stability of Numerical Algorithms, 3.1);
 * - against the layer's other path, im2col + the backend's bf16 GEMM (the
 *   same rounded products, another order): within twice that bound;
 * - bits equal on 1, 2 and 3 threads;
 * - ROUNDED's bits equal the float32 oneDNN primitive's on operands rounded
 *   here (so it is that primitive, fed ax_bf16_round's values);
 * - the backend's table follows AXON_ONEDNN_BF16 (off: the entries decline);
 * - a short bf16 training of a small LeNet-like network ends within 5 % of
 *   the loss of the old path (AXON_ONEDNN_BF16=off: im2col + bf16 GEMM).
 *   Here the three runs agree to the bit: the sums differ in their last
 *   bits, but the next layer's GEMM rounds its operands to bfloat16 again,
 *   which mostly erases such differences; the bound allows for the rest.
 * NATIVE needs oneDNN's bf16 kernels (they run on avx512_core, emulated,
 * and natively on AVX512_BF16 / AMX); where oneDNN refuses them, their
 * checks are skipped with a message. Skips (77) when built without oneDNN. */
#include <stdint.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/cpu/bf16_gemm.h"
#include "test_util.h"
#ifdef AXON_ONEDNN
#include "backend/cpu/onednn_conv.h"
#endif

#ifdef AXON_ONEDNN
static uint64_t random_state = 11;
static float random_float(void)
{
    return (float)test_random_uniform(&random_state, -1.0, 1.0);
}

typedef struct shape {
    ax_window_geometry g;
    int64_t filters, images;
} shape;

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

static double gamma_of(double terms)
{
    const double u = 0x1.0p-24;
    return terms * u / (1.0 - terms * u);
}

/* The operands of one shape and what they should give. */
typedef struct case_data {
    shape s;
    sizes n;
    float *x, *w, *delta;              /* float32, as the layer holds them */
    double *z, *z_abs, *back, *back_abs; /* float64 sums of the rounded operands */
    float *z_im2col, *back_im2col;     /* the layer's other path */
} case_data;

/* float64 forward and input-gradient sums of the bf16-rounded operands and
 * their sums of |terms|, by the definition of the convolution. */
static void reference(case_data *c)
{
    const ax_window_geometry *g = &c->s.g;
    const int64_t filters = c->s.filters;
    memset(c->z, 0, (size_t)c->n.outputs * 8), memset(c->z_abs, 0, (size_t)c->n.outputs * 8);
    memset(c->back, 0, (size_t)c->n.inputs * 8), memset(c->back_abs, 0, (size_t)c->n.inputs * 8);
    for (int64_t image = 0; image < c->s.images; image++)
        for (int64_t oy = 0; oy < g->out_height; oy++)
            for (int64_t ox = 0; ox < g->out_width; ox++)
                for (int64_t f = 0; f < filters; f++) {
                    const int64_t out =
                        ((image * g->out_height + oy) * g->out_width + ox) * filters + f;
                    const double d = ax_bf16_round(c->delta[out]);
                    for (int64_t i = 0; i < g->kernel_height; i++)
                        for (int64_t j = 0; j < g->kernel_width; j++) {
                            const int64_t y = oy * g->stride - g->padding + i;
                            const int64_t xx = ox * g->stride - g->padding + j;
                            if (y < 0 || y >= g->height || xx < 0 || xx >= g->width)
                                continue;
                            for (int64_t ch = 0; ch < g->channels; ch++) {
                                const int64_t in =
                                    ((image * g->height + y) * g->width + xx) * g->channels + ch;
                                const double w = ax_bf16_round(
                                    c->w[((f * g->channels + ch) * g->kernel_height + i) *
                                             g->kernel_width + j]);
                                const double x = ax_bf16_round(c->x[in]);
                                c->z[out] += x * w, c->z_abs[out] += fabs(x * w);
                                c->back[in] += d * w, c->back_abs[in] += fabs(d * w);
                            }
                        }
                }
}

/* layer_conv.c's im2col path for one group through the bf16 backend's own
 * operations: its gemm rounds the operands to bfloat16. */
static void im2col_path(ax_backend *bf16, case_data *c)
{
    const shape *s = &c->s;
    const int64_t area = s->g.kernel_height * s->g.kernel_width;
    const int64_t rows = s->images * c->n.places, patch = c->n.patch;
    float *columns = malloc((size_t)(rows * patch) * 4);
    float *ordered = malloc((size_t)c->n.weights * 4);
    CHECK(columns && ordered);
    if (columns && ordered) {
        bf16->ops->transpose(bf16, c->w, ordered, s->filters, s->g.channels, area);
        bf16->ops->im2col(bf16, &s->g, c->x, columns, s->images);
        bf16->ops->gemm(bf16, false, true, rows, s->filters, patch, 1.0, columns, patch, ordered,
                        patch, 0.0, c->z_im2col, s->filters);
        bf16->ops->gemm(bf16, false, false, rows, patch, s->filters, 1.0, c->delta, s->filters,
                        ordered, patch, 0.0, columns, patch);
        bf16->ops->col2im(bf16, &s->g, columns, c->back_im2col, s->images);
    }
    free(columns), free(ordered);
}

/* Elements of got outside factor gamma_K sum |terms| (+ the smallest
 * normal, for sums of zeros) of expected, printing the first. */
static int64_t outside(const char *what, const case_data *c, const float *got,
                       const double *expected, const double *abs_sum, int64_t count,
                       double terms, double factor)
{
    int64_t wrong = 0;
    const double bound = factor * gamma_of(terms);
    for (int64_t i = 0; i < count; i++) {
        const double error = fabs((double)got[i] - expected[i]);
        if (!(error <= bound * abs_sum[i] + 0x1.0p-126)) {
            if (!wrong)
                fprintf(stderr, "%s, %lldx%lldx%lld kernel %lldx%lld /s%lld /p%lld: element "
                        "%lld is %.9g, expected %.17g (bound %.3g)\n", what,
                        (long long)c->s.g.height, (long long)c->s.g.width,
                        (long long)c->s.g.channels, (long long)c->s.g.kernel_height,
                        (long long)c->s.g.kernel_width, (long long)c->s.g.stride,
                        (long long)c->s.g.padding, (long long)i, got[i], expected[i],
                        bound * abs_sum[i]);
            wrong++;
        }
    }
    return wrong;
}

static bool native_refused;

/* Both passes in mode on threads; false when one declined. */
static bool run_mode(ax_onednn_convs **convs, ax_onednn_bf16_mode mode, const case_data *c,
                     int threads, float *z, float *back)
{
    CHECK_OK(ax_set_threads(threads));
    const shape *s = &c->s;
    return ax_onednn_conv_forward_bf16(convs, mode, &s->g, s->filters, c->x, c->w, z,
                                       s->images) &&
           ax_onednn_conv_backward_input_bf16(convs, mode, &s->g, s->filters, c->delta, c->w,
                                              back, s->images);
}

static void check_mode(ax_onednn_bf16_mode mode, case_data *c)
{
    const char *name = mode == AX_ONEDNN_BF16_NATIVE ? "native" : "rounded";
    ax_onednn_convs *convs = NULL;
    const sizes n = c->n;
    float *z = malloc((size_t)n.outputs * 4), *z_other = malloc((size_t)n.outputs * 4);
    float *back = malloc((size_t)n.inputs * 4), *back_other = malloc((size_t)n.inputs * 4);
    CHECK(z && z_other && back && back_other);
    if (!(z && z_other && back && back_other))
        goto done;
    if (!run_mode(&convs, mode, c, 1, z, back)) {
        CHECK(mode == AX_ONEDNN_BF16_NATIVE); /* rounded is float32's primitive */
        native_refused = true;
        goto done;
    }
    const double forward_terms = (double)n.patch;
    const double input_terms = (double)(c->s.filters * c->s.g.kernel_height * c->s.g.kernel_width);
    char what[96];
    snprintf(what, sizeof what, "%s forward against float64", name);
    CHECK(outside(what, c, z, c->z, c->z_abs, n.outputs, forward_terms, 1) == 0);
    snprintf(what, sizeof what, "%s input gradient against float64", name);
    CHECK(outside(what, c, back, c->back, c->back_abs, n.inputs, input_terms, 1) == 0);
    double *as_double = malloc((size_t)(n.outputs > n.inputs ? n.outputs : n.inputs) * 8);
    CHECK(as_double != NULL);
    if (as_double) {
        for (int64_t i = 0; i < n.outputs; i++)
            as_double[i] = c->z_im2col[i];
        snprintf(what, sizeof what, "%s forward against im2col + bf16 GEMM", name);
        CHECK(outside(what, c, z, as_double, c->z_abs, n.outputs, forward_terms, 2) == 0);
        for (int64_t i = 0; i < n.inputs; i++)
            as_double[i] = c->back_im2col[i];
        snprintf(what, sizeof what, "%s input gradient against im2col + bf16 GEMM", name);
        CHECK(outside(what, c, back, as_double, c->back_abs, n.inputs, input_terms, 2) == 0);
    }
    free(as_double);
    for (int threads = 2; threads <= 3; threads++) {
        CHECK(run_mode(&convs, mode, c, threads, z_other, back_other));
        if (memcmp(z, z_other, (size_t)n.outputs * 4) != 0 ||
            memcmp(back, back_other, (size_t)n.inputs * 4) != 0) {
            fprintf(stderr, "%s, %lldx%lldx%lld: bits on %d threads differ from 1's\n", name,
                    (long long)c->s.g.height, (long long)c->s.g.width,
                    (long long)c->s.g.channels, threads);
            test_failures++;
        }
    }
    if (mode == AX_ONEDNN_BF16_ROUNDED) { /* float32's primitive on operands rounded here */
        float *xr = malloc((size_t)n.inputs * 4), *wr = malloc((size_t)n.weights * 4);
        float *dr = malloc((size_t)n.outputs * 4);
        CHECK(xr && wr && dr);
        if (xr && wr && dr) {
            for (int64_t i = 0; i < n.inputs; i++)
                xr[i] = ax_bf16_round(c->x[i]);
            for (int64_t i = 0; i < n.weights; i++)
                wr[i] = ax_bf16_round(c->w[i]);
            for (int64_t i = 0; i < n.outputs; i++)
                dr[i] = ax_bf16_round(c->delta[i]);
            CHECK_OK(ax_set_threads(1));
            CHECK(ax_onednn_conv_forward(&convs, &c->s.g, c->s.filters, xr, wr, z_other,
                                         c->s.images));
            CHECK(ax_onednn_conv_backward_input(&convs, &c->s.g, c->s.filters, dr, wr,
                                                back_other, c->s.images));
            CHECK(memcmp(z, z_other, (size_t)n.outputs * 4) == 0);
            CHECK(memcmp(back, back_other, (size_t)n.inputs * 4) == 0);
        }
        free(xr), free(wr), free(dr);
    }
done:
    ax_onednn_convs_free(convs);
    free(z), free(z_other), free(back), free(back_other);
    CHECK_OK(ax_set_threads(0));
}

static void check_shape(ax_backend *bf16, shape s)
{
    s.g.out_height = (s.g.height + 2 * s.g.padding - s.g.kernel_height) / s.g.stride + 1;
    s.g.out_width = (s.g.width + 2 * s.g.padding - s.g.kernel_width) / s.g.stride + 1;
    case_data c = {.s = s, .n = sizes_of(&s)};
    const sizes n = c.n;
    c.x = malloc((size_t)n.inputs * 4), c.w = malloc((size_t)n.weights * 4);
    c.delta = malloc((size_t)n.outputs * 4);
    c.z = malloc((size_t)n.outputs * 8), c.z_abs = malloc((size_t)n.outputs * 8);
    c.back = malloc((size_t)n.inputs * 8), c.back_abs = malloc((size_t)n.inputs * 8);
    c.z_im2col = malloc((size_t)n.outputs * 4), c.back_im2col = malloc((size_t)n.inputs * 4);
    const bool allocated = c.x && c.w && c.delta && c.z && c.z_abs && c.back && c.back_abs &&
                           c.z_im2col && c.back_im2col;
    CHECK(allocated);
    if (allocated) {
        for (int64_t i = 0; i < n.inputs; i++)
            c.x[i] = random_float();
        for (int64_t i = 0; i < n.weights; i++)
            c.w[i] = random_float() * 0.2f;
        for (int64_t i = 0; i < n.outputs; i++)
            c.delta[i] = random_float();
        reference(&c);
        im2col_path(bf16, &c);
        check_mode(AX_ONEDNN_BF16_ROUNDED, &c);
        check_mode(AX_ONEDNN_BF16_NATIVE, &c);
    }
    free(c.x), free(c.w), free(c.delta), free(c.z), free(c.z_abs), free(c.back);
    free(c.back_abs), free(c.z_im2col), free(c.back_im2col);
}

/* The backend's entries follow AXON_ONEDNN_BF16, read when it is created. */
static void check_backend_modes(void)
{
    const shape s = {{12, 12, 3, 5, 5, 1, 0, 8, 8}, 4, 2};
    float x[864], w[300], z[512], z_rounded[512];
    for (int i = 0; i < 864; i++)
        x[i] = random_float();
    for (int i = 0; i < 300; i++)
        w[i] = random_float();
    setenv("AXON_ONEDNN_BF16", "off", 1);
    ax_backend *off = ax_backend_cpu_create(AX_PRECISION_BF16);
    CHECK(off && off->ops->conv_forward);
    if (off)
        CHECK(!off->ops->conv_forward(off, &s.g, s.filters, x, w, z, s.images));
    if (off)
        off->ops->destroy(off);
    setenv("AXON_ONEDNN_BF16", "rounded", 1);
    ax_backend *rounded = ax_backend_cpu_create(AX_PRECISION_BF16);
    ax_onednn_convs *convs = NULL;
    CHECK(rounded && rounded->ops->conv_forward(rounded, &s.g, s.filters, x, w, z, s.images));
    CHECK(ax_onednn_conv_forward_bf16(&convs, AX_ONEDNN_BF16_ROUNDED, &s.g, s.filters, x, w,
                                      z_rounded, s.images));
    CHECK(memcmp(z, z_rounded, sizeof z) == 0);
    ax_onednn_convs_free(convs);
    if (rounded)
        rounded->ops->destroy(rounded);
    unsetenv("AXON_ONEDNN_BF16");
    printf("AXON_ONEDNN_BF16 unset (auto) chooses %s here\n",
           ax_onednn_bf16_mode_chosen() == AX_ONEDNN_BF16_NATIVE ? "native" : "rounded");
}

/* The final training loss of a small LeNet-like network (16x16 images of
 * 4 classes: which quadrant is bright) after 3 epochs of SGD in bf16, the
 * convolutions as AXON_ONEDNN_BF16 = mode says. */
static double train_loss(const char *mode, double *first_loss)
{
    enum { ROWS = 256, SIDE = 16, CLASSES = 4 };
    setenv("AXON_ONEDNN_BF16", mode, 1);
    const int64_t image_shape[3] = {SIDE, SIDE, 1};
    ax_net_config config = ax_net_defaults();
    config.input_width = SIDE * SIDE;
    memcpy(config.input_shape, image_shape, sizeof config.input_shape);
    config.precision = AX_PRECISION_BF16;
    config.seed = 7;
    CHECK_OK(ax_layers_parse("conv:8x5x5:relu,maxpool:2,conv:16x3x3:relu,maxpool:2,32:relu,"
                             "4:softmax", &config));
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_create(ROWS, SIDE * SIDE, CLASSES, 0, &data));
    double loss = NAN;
    if (net && data) {
        CHECK_OK(ax_dataset_set_image_shape(data, image_shape));
        float *x = ax_dataset_features_data(data);
        int32_t *labels = ax_dataset_labels_data(data);
        random_state = 99; /* the same data for every mode */
        for (int64_t r = 0; r < ROWS; r++) {
            labels[r] = (int32_t)(r % CLASSES);
            for (int64_t y = 0; y < SIDE; y++)
                for (int64_t xx = 0; xx < SIDE; xx++) {
                    const int quadrant = (y >= SIDE / 2) * 2 + (xx >= SIDE / 2);
                    x[(r * SIDE + y) * SIDE + xx] =
                        random_float() + (quadrant == labels[r] ? 0.25f : 0.0f);
                }
        }
        ax_train_config training = ax_train_defaults();
        training.learning_rate = 0.02;
        training.momentum = 0.9;
        training.batch_size = 32;
        training.epochs = 3;
        training.seed = 7;
        ax_train_summary summary = ax_train_summary_empty();
        CHECK_OK(ax_train(net, data, NULL, NULL, &training, &summary));
        loss = summary.final_train_loss;
        *first_loss = log((double)CLASSES); /* where a network that learned nothing stays */
        printf("bf16 training, AXON_ONEDNN_BF16=%-7s: final training loss %.17g\n", mode, loss);
    }
    ax_net_free(net);
    ax_dataset_free(data);
    unsetenv("AXON_ONEDNN_BF16");
    return loss;
}

static void check_training(void)
{
    double chance = 0.0;
    const double old = train_loss("off", &chance);
    CHECK(old < 0.5 * chance); /* it learns */
    const char *modes[] = {"rounded", native_refused ? NULL : "native"};
    for (int i = 0; i < 2; i++) {
        if (!modes[i])
            continue;
        const double loss = train_loss(modes[i], &chance);
        /* the same rounded products summed in another order: the runs part
         * by float32 roundings only, which 3 epochs amplify little */
        CHECK(fabs(loss - old) <= 0.05 * old + 1e-3);
    }
}
#endif

int main(void)
{
#ifndef AXON_ONEDNN
    TEST_SKIP("this axon is built without oneDNN (AXON_ONEDNN=OFF, or no libdnnl-dev): bf16 "
              "convolutions run im2col + the bf16 GEMM only");
#else
    ax_bf16_gemm_force(AX_BF16_KERNEL_CHOSEN);
    ax_backend *bf16 = ax_backend_cpu_create(AX_PRECISION_BF16);
    CHECK(bf16 && bf16->ops->conv_forward && bf16->ops->conv_backward_input);
    if (!bf16)
        return test_finish("test_conv_onednn_bf16");
    /* {height, width, channels, kh, kw, stride, padding}, filters, images */
    const shape shapes[] = {
        {{28, 28, 1, 5, 5, 1, 0, 0, 0}, 32, 16},  /* LeNet's first convolution */
        {{12, 12, 32, 5, 5, 1, 0, 0, 0}, 64, 16}, /* and its second */
        {{11, 10, 3, 3, 4, 2, 1, 0, 0}, 6, 3},    /* non-square kernel, stride 2, padding */
        {{14, 14, 4, 5, 5, 3, 2, 0, 0}, 7, 2},    /* the last window short of the edge */
        {{7, 9, 17, 1, 1, 1, 0, 0, 0}, 5, 4},     /* 1x1 */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        check_shape(bf16, shapes[i]);
    bf16->ops->destroy(bf16);
    if (native_refused)
        printf("SKIPPED the native checks: oneDNN creates no bf16 convolution on this CPU "
               "(they run where it has avx512_core or newer)\n");
    check_backend_modes();
    check_training();
    return test_finish("test_conv_onednn_bf16");
#endif
}
