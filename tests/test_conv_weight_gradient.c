/* test_conv_weight_gradient.c: the CPU backend's convolution weight
 * gradient (backend.h: conv_backward_weights, table version 10;
 * src/backend/cpu/conv_weight_gradient.c: slices of the batch on all
 * threads, their partial sums added in a fixed order):
 * - against float64 sums computed here by the definition, element by
 *   element, within the bound of any summation order, |error| <= gamma_K
 *   sum |delta x|, gamma_K = K u / (1 - K u), K the terms (Higham 3.1), in
 *   float32 (u = 2^-24) and float64 (u = 2^-53), over LeNet's two shapes
 *   and odd ones (non-square kernels, strides 2 and 3, padding), batches
 *   of 1 to 130 images (fewer than the 32 slices, not dividing into them)
 *   and one cut into more slices than a wave holds;
 * - bits equal on 1, 2 and 3 threads for every one of those, and with the
 *   caller's columns (the forward pass's) read instead of gathered;
 * - bf16 (both operands rounded to bfloat16 in the slices, float32's
 *   product: each product of two bf16 values is exact in float32) against
 *   float64 sums of the rounded operands within float32's gamma_K bound,
 *   and against its old path (im2col + the backend's bf16 GEMM, the same
 *   rounded products in another order) within twice it;
 * - an empty batch gives zeros; a layer of more than 2^18 weights is
 *   declined with nothing written;
 * - the network's layer calls the entry (counted through a wrapped table;
 *   in float64 handing it the forward pass's columns) and its gradient matches the im2col + GEMM path's (the table without
 *   the entry) within the same bound;
 * - whole training runs of a small LeNet-like network (two convolutions,
 *   max pooling, SGD with momentum) give the same weights bit for bit on
 *   1, 2 and 3 threads, in float32, float64 and bf16, for batches of 7, 16
 *   and 50 rows;
 * - in a build with oneDNN, float32's and bf16's slices run its primitive
 *   (onednn_conv_weights.c) where the direct kernels (conv_weight_direct.c,
 *   conv_one_channel.c) do not take the layer; the entry checks run again
 *   with AXON_ONEDNN_BF16=native (oneDNN's bf16 primitive), with
 *   AXON_CONV_DIRECT=off (oneDNN's for every layer) and with that and
 *   AXON_ONEDNN_CONV=off (the GEMM product);
 * - bf16's entry, layer and training runs again with AMX's tiles
 *   (conv_weight_amx.c) in their emulation, AXON_CONV_AMX=emulate. */
#include <stdint.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/cpu/bf16_gemm.h"
#include "backend/cpu/conv_weight_gradient.h"
#include "core/net.h"
/* after core/net.h: its layer.h names a parameter "shape" */
#include "conv_test_shapes.h"
#include "test_util.h"

static uint64_t random_state = 11;
static double random_uniform(void)
{
    return test_random_uniform(&random_state, -1.0, 1.0);
}

/* dW[f, c, i, j] = sum over images and positions of delta[n, oy, ox, f]
 * x[n, oy s - p + i, ox s - p + j, c] (inside the image), in float64, with
 * the sum of the terms' magnitudes. */
static void reference(const shape *s, int64_t images, const double *x, const double *delta,
                      double *dw, double *dw_abs)
{
    const ax_window_geometry *g = &s->g;
    memset(dw, 0, (size_t)weights_of(s) * sizeof *dw);
    memset(dw_abs, 0, (size_t)weights_of(s) * sizeof *dw_abs);
    for (int64_t n = 0; n < images; n++)
        for (int64_t oy = 0; oy < g->out_height; oy++)
            for (int64_t ox = 0; ox < g->out_width; ox++)
                for (int64_t f = 0; f < s->filters; f++) {
                    const double d =
                        delta[((n * g->out_height + oy) * g->out_width + ox) * s->filters + f];
                    for (int64_t i = 0; i < g->kernel_height; i++)
                        for (int64_t j = 0; j < g->kernel_width; j++) {
                            const int64_t y = oy * g->stride - g->padding + i;
                            const int64_t xx = ox * g->stride - g->padding + j;
                            if (y < 0 || y >= g->height || xx < 0 || xx >= g->width)
                                continue;
                            for (int64_t c = 0; c < g->channels; c++) {
                                const double term =
                                    d * x[((n * g->height + y) * g->width + xx) * g->channels + c];
                                const int64_t w =
                                    ((f * g->channels + c) * g->kernel_height + i) *
                                        g->kernel_width + j;
                                dw[w] += term;
                                dw_abs[w] += fabs(term);
                            }
                        }
                }
}

/* count reals of the backend's precision from doubles. */
static void *converted(const ax_backend *b, const double *values, int64_t count)
{
    char *out = malloc((size_t)(count > 0 ? count : 1) * b->real_size);
    if (out)
        for (int64_t i = 0; i < count; i++) {
            if (b->real_size == sizeof(double))
                ((double *)out)[i] = values[i];
            else
                ((float *)out)[i] = (float)values[i];
        }
    return out;
}

static double real_at(const ax_backend *b, const void *values, int64_t i)
{
    return b->real_size == sizeof(double) ? ((const double *)values)[i]
                                          : ((const float *)values)[i];
}

/* The value the backend multiplies: bf16 rounds its operands first. */
static double operand_at(const ax_backend *b, const void *values, int64_t i)
{
    const double value = real_at(b, values, i);
    return b->precision == AX_PRECISION_BF16 ? ax_bf16_round((float)value) : value;
}

static const char *precision_name(const ax_backend *b)
{
    return b->precision == AX_PRECISION_BF16  ? "bf16"
           : b->precision == AX_PRECISION_F64 ? "float64"
                                              : "float32";
}

/* Elements of got farther from exact than factor * bound * abs_sum (+ the
 * smallest normal float32), the first one reported. */
static int64_t outside(const ax_backend *b, const shape *s, int64_t images, const char *what,
                       const void *got, const double *exact, const double *abs_sum,
                       double bound)
{
    int64_t wrong = 0;
    for (int64_t i = 0; i < weights_of(s); i++) {
        const double value = real_at(b, got, i);
        if (!(fabs(value - exact[i]) <= bound * abs_sum[i] + 0x1.0p-126)) {
            if (!wrong)
                fprintf(stderr,
                        "%s %s, %lldx%lldx%lld kernel %lldx%lld /s%lld /p%lld, %lld filters, "
                        "%lld images: dW[%lld] is %.17g, expected %.17g (bound %.3g)\n",
                        precision_name(b), what, (long long)s->g.height, (long long)s->g.width,
                        (long long)s->g.channels, (long long)s->g.kernel_height,
                        (long long)s->g.kernel_width, (long long)s->g.stride,
                        (long long)s->g.padding, (long long)s->filters, (long long)images,
                        (long long)i, value, exact[i], bound * abs_sum[i]);
            wrong++;
        }
    }
    return wrong;
}

/* bf16's old path, the layer's fallback: im2col + the backend's bf16 GEMM
 * over the whole batch, then the transpose into torch's order. */
static bool old_bf16_path(ax_backend *b, const shape *s, int64_t images, const void *x,
                          const void *delta, void *dw)
{
    const int64_t positions = images * s->g.out_height * s->g.out_width;
    const int64_t patch = weights_of(s) / s->filters;
    float *columns = malloc((size_t)(positions * patch > 0 ? positions * patch : 1) * sizeof *columns);
    float *ordered = malloc((size_t)weights_of(s) * sizeof *ordered);
    if (columns && ordered) {
        b->ops->im2col(b, &s->g, x, columns, images);
        b->ops->gemm(b, true, false, s->filters, patch, positions, 1.0, delta, s->filters,
                     columns, patch, 0.0, ordered, patch);
        b->ops->transpose(b, ordered, dw, s->filters,
                          s->g.kernel_height * s->g.kernel_width, s->g.channels);
    }
    const bool made = columns && ordered;
    free(columns), free(ordered);
    return made;
}

/* Runs the entry on `threads` threads into dw (overwritten), gathering
 * the columns itself or reading the given ones. */
static bool run_entry(ax_backend *b, const shape *s, int64_t images, int threads, const void *x,
                      const void *columns, const void *delta, void *dw)
{
    CHECK_OK(ax_set_threads(threads));
    memset(dw, 0x7f, (size_t)weights_of(s) * b->real_size); /* overwritten, not added to */
    return b->ops->conv_backward_weights(b, &s->g, s->filters, delta, x, columns, dw, images);
}

/* One shape and batch on one backend: the reference bound, then the bits
 * on 2 and 3 threads against 1's. */
static void check_batch(ax_backend *b, const shape *s, int64_t images)
{
    const int64_t in = inputs_of(s, images), out = outputs_of(s, images), w = weights_of(s);
    double *x = malloc((size_t)(in > 0 ? in : 1) * sizeof *x);
    double *delta = malloc((size_t)(out > 0 ? out : 1) * sizeof *delta);
    double *exact = malloc((size_t)w * sizeof *exact), *abs_sum = malloc((size_t)w * sizeof *abs_sum);
    void *bx = NULL, *bdelta = NULL, *dw[3] = {NULL, NULL, NULL};
    CHECK(x && delta && exact && abs_sum);
    if (!(x && delta && exact && abs_sum))
        goto done;
    for (int64_t i = 0; i < in; i++)
        x[i] = random_uniform();
    for (int64_t i = 0; i < out; i++)
        delta[i] = random_uniform();
    bx = converted(b, x, in);
    bdelta = converted(b, delta, out);
    /* the reference sees the values the backend multiplies */
    for (int64_t i = 0; i < in; i++)
        x[i] = operand_at(b, bx, i);
    for (int64_t i = 0; i < out; i++)
        delta[i] = operand_at(b, bdelta, i);
    reference(s, images, x, delta, exact, abs_sum);
    for (int t = 0; t < 3; t++)
        dw[t] = malloc((size_t)w * b->real_size);
    CHECK(bx && bdelta && dw[0] && dw[1] && dw[2]);
    if (!(bx && bdelta && dw[0] && dw[1] && dw[2]))
        goto done;
    for (int t = 0; t < 3; t++)
        CHECK(run_entry(b, s, images, t + 1, bx, NULL, bdelta, dw[t]));
    const double u = b->real_size == sizeof(double) ? 0x1.0p-53 : 0x1.0p-24;
    const double terms = (double)(images * s->g.out_height * s->g.out_width);
    const double bound = terms * u / (1.0 - terms * u);
    CHECK(outside(b, s, images, "entry", dw[0], exact, abs_sum, bound) == 0);
    for (int t = 1; t < 3; t++)
        if (memcmp(dw[0], dw[t], (size_t)w * b->real_size) != 0) {
            fprintf(stderr, "%lld images, %lld filters: bits on %d threads differ from 1's\n",
                    (long long)images, (long long)s->filters, t + 1);
            CHECK(false);
        }
    /* bf16's old path: the same rounded products, another order, so within
     * twice the bound of the entry (and within the bound of the exact) */
    double *old = malloc((size_t)w * sizeof *old);
    if (b->precision == AX_PRECISION_BF16 && images > 0 && old) {
        CHECK(old_bf16_path(b, s, images, bx, bdelta, dw[1]));
        CHECK(outside(b, s, images, "old path", dw[1], exact, abs_sum, bound) == 0);
        for (int64_t i = 0; i < w; i++)
            old[i] = real_at(b, dw[1], i);
        CHECK(outside(b, s, images, "entry against the old path", dw[0], old, abs_sum,
                      2.0 * bound) == 0);
    }
    free(old);
    /* The caller's columns (the forward pass's) read instead: the same bits. */
    const int64_t column_count = images * s->g.out_height * s->g.out_width * (w / s->filters);
    void *columns = malloc((size_t)(column_count > 0 ? column_count : 1) * b->real_size);
    CHECK(columns != NULL);
    if (columns) {
        b->ops->im2col(b, &s->g, bx, columns, images);
        CHECK(run_entry(b, s, images, 2, bx, columns, bdelta, dw[1]));
        CHECK(memcmp(dw[0], dw[1], (size_t)w * b->real_size) == 0);
    }
    free(columns);
done:
    CHECK_OK(ax_set_threads(0));
    free(x), free(delta), free(exact), free(abs_sum), free(bx), free(bdelta);
    free(dw[0]), free(dw[1]), free(dw[2]);
}

static void check_entry(ax_precision precision)
{
    ax_backend *b = ax_backend_cpu_create(precision);
    CHECK(b && b->ops->conv_backward_weights);
    if (!b || !b->ops->conv_backward_weights)
        return;
    const shape shapes[] = {
        {with_outputs((ax_window_geometry){28, 28, 1, 5, 5, 1, 0, 0, 0}), 32}, /* LeNet's */
        {with_outputs((ax_window_geometry){12, 12, 32, 5, 5, 1, 0, 0, 0}), 64},
        {with_outputs((ax_window_geometry){9, 11, 3, 3, 2, 2, 1, 0, 0}), 5},
        {with_outputs((ax_window_geometry){10, 7, 2, 4, 3, 3, 2, 0, 0}), 3},
    };
    const int64_t batches[] = {1, 3, 31, 33, 70, 130};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (size_t n = 0; n < sizeof batches / sizeof *batches; n++) {
            /* LeNet's second shape only at two batches: its reference is slow */
            if (s == 1 && batches[n] != 3 && batches[n] != 33)
                continue;
            check_batch(b, &shapes[s], batches[n]);
        }
    /* A shape of 2^20 window values an image: one image a slice, 40 slices,
     * more than one wave of partial sums. */
    const shape wide = {with_outputs((ax_window_geometry){67, 67, 16, 4, 4, 1, 0, 0, 0}), 2};
    CHECK(ax_cpu_conv_weight_slices(&wide.g, 40) == 40);
    check_batch(b, &wide, 40);

    /* More than 2^18 weights (256 filters of 3x3x128): declined, nothing
     * written (the layer's own path runs). */
    const shape large = {with_outputs((ax_window_geometry){3, 3, 128, 3, 3, 1, 0, 0, 0}), 256};
    void *large_dw = calloc((size_t)weights_of(&large), b->real_size);
    void *large_x = calloc((size_t)inputs_of(&large, 2), b->real_size);
    void *large_delta = calloc((size_t)outputs_of(&large, 2), b->real_size);
    CHECK(large_dw && large_x && large_delta);
    if (large_dw && large_x && large_delta) {
        memset(large_dw, 0x7f, (size_t)weights_of(&large) * b->real_size);
        CHECK(!b->ops->conv_backward_weights(b, &large.g, large.filters, large_delta, large_x,
                                             NULL, large_dw, 2));
        CHECK(((unsigned char *)large_dw)[0] == 0x7f &&
              ((unsigned char *)large_dw)[(size_t)weights_of(&large) * b->real_size - 1] == 0x7f);
    }
    free(large_dw), free(large_x), free(large_delta);

    /* No images: zeros. */
    const shape *lenet = &shapes[0];
    void *dw = malloc((size_t)weights_of(lenet) * b->real_size);
    CHECK(dw != NULL);
    if (dw) {
        CHECK(run_entry(b, lenet, 0, 2, dw, NULL, dw, dw));
        for (int64_t i = 0; i < weights_of(lenet); i++)
            CHECK(real_at(b, dw, i) == 0.0);
    }
    free(dw);
    CHECK_OK(ax_set_threads(0));
    b->ops->destroy(b);
}

/* oneDNN's slice primitives are kept per shape in a ring of 12
 * (onednn_conv_weights.c): fill it with 12 shapes (filters 1 to 12, 64
 * images: 32 slices of 2, one primitive each), then ask for the first
 * shape at 40 images (slices of 2 and 1): the 2-image primitive is found
 * where the ring would put the new 1-image one, which must not replace it
 * while the call still uses it. Any build passes the same checks. */
static void check_primitive_ring(void)
{
    ax_backend *b = ax_backend_cpu_create(AX_PRECISION_F32);
    CHECK(b != NULL);
    if (!b)
        return;
    shape s = {with_outputs((ax_window_geometry){28, 28, 1, 5, 5, 1, 0, 0, 0}), 1};
    const shape widest = {s.g, 12};
    CHECK(ax_cpu_conv_weight_slices(&s.g, 64) == 32 && ax_cpu_conv_weight_slices(&s.g, 40) == 32);
    float *x = calloc((size_t)inputs_of(&s, 64), sizeof *x);
    float *delta = calloc((size_t)outputs_of(&widest, 64), sizeof *delta);
    float *dw = calloc((size_t)weights_of(&widest), sizeof *dw);
    CHECK(x && delta && dw);
    for (int64_t f = 1; f <= 12 && x && delta && dw; f++)
        CHECK(b->ops->conv_backward_weights(b, &s.g, f, delta, x, NULL, dw, 64));
    free(x), free(delta), free(dw);
    check_batch(b, &s, 40);
    b->ops->destroy(b);
}

/* Slices: as many as images up to 32 (with 512 positions a slice at
 * least), then 32 until a slice's columns would pass 2^20 values,
 * whatever the threads. */
static void check_slices(void)
{
    const ax_window_geometry lenet1 = with_outputs((ax_window_geometry){28, 28, 1, 5, 5, 1, 0, 0, 0});
    CHECK(ax_cpu_conv_weight_slices(&lenet1, 0) == 0);
    CHECK(ax_cpu_conv_weight_slices(&lenet1, 1) == 1);
    CHECK(ax_cpu_conv_weight_slices(&lenet1, 7) == 7);
    CHECK(ax_cpu_conv_weight_slices(&lenet1, 128) == 32);
    /* 14,400 values an image: 72 images a slice at most */
    CHECK(ax_cpu_conv_weight_slices(&lenet1, 72 * 40) == 40);
    CHECK(ax_cpu_conv_weight_slices(&lenet1, 72 * 40 + 1) == 41);
    /* 64 positions an image: 8 images a slice at least */
    const ax_window_geometry lenet2 =
        with_outputs((ax_window_geometry){12, 12, 32, 5, 5, 1, 0, 0, 0});
    CHECK(ax_cpu_conv_weight_slices(&lenet2, 7) == 1);
    CHECK(ax_cpu_conv_weight_slices(&lenet2, 33) == 5);
    CHECK(ax_cpu_conv_weight_slices(&lenet2, 128) == 16);
    CHECK(ax_cpu_conv_weight_slices(&lenet2, 250) == 32);
    CHECK(ax_cpu_conv_weight_slices(&lenet2, 1000) == 50); /* 20 images of 51,200 values */
    for (int threads = 1; threads <= 3; threads++) {
        CHECK_OK(ax_set_threads(threads));
        CHECK(ax_cpu_conv_weight_slices(&lenet1, 100) == 32);
    }
    CHECK_OK(ax_set_threads(0));
}

/* The layer's use: calls counted through a wrapped table. */
static int64_t entry_calls, calls_with_columns;
static const ax_backend_ops *wrapped;
static bool counted_entry(ax_backend *backend, const ax_window_geometry *geometry,
                          int64_t filters, const void *delta, const void *x, const void *columns,
                          void *dw, int64_t images)
{
    entry_calls++;
    calls_with_columns += columns != NULL;
    return wrapped->conv_backward_weights(backend, geometry, filters, delta, x, columns, dw,
                                          images);
}

static ax_status small_lenet(ax_precision precision, ax_net **net)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = 12 * 12;
    config.input_shape[0] = 12, config.input_shape[1] = 12, config.input_shape[2] = 1;
    config.precision = precision;
    config.seed = 5;
    ax_status status = ax_layers_parse("conv:4x3x3:relu,maxpool:2,conv:6x3x3:relu,10:softmax",
                                       &config);
    if (status == AX_STATUS_OK)
        status = ax_net_create(&config, net);
    ax_net_config_release(&config);
    return status;
}

static ax_dataset *small_images(int64_t rows)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_create(rows, 144, 10, 0, &data));
    if (data) {
        float *x = ax_dataset_features_data(data);
        for (int64_t i = 0; i < rows * 144; i++)
            x[i] = (float)random_uniform();
        for (int64_t r = 0; r < rows; r++)
            ax_dataset_labels_data(data)[r] = (int32_t)(r * 7 % 10);
        CHECK_OK(ax_dataset_set_image_shape(data, (int64_t[3]){12, 12, 1}));
    }
    return data;
}

static void check_layer_uses_entry(ax_precision precision)
{
    ax_net *net = NULL;
    ax_dataset *data = small_images(45);
    CHECK_OK(small_lenet(precision, &net));
    if (!net || !data)
        goto done;
    const int64_t count = ax_net_parameter_count(net);
    double *with = malloc((size_t)count * sizeof *with), *without = malloc((size_t)count * sizeof *without);
    double loss_with = NAN, loss_without = NAN;
    CHECK(with && without);
    if (with && without) {
        ax_backend *b = net->backend;
        const ax_backend_ops *own = b->ops;
        ax_backend_ops counting = *own, plain = *own;
        wrapped = own;
        counting.conv_backward_weights = counted_entry;
        plain.conv_backward_weights = NULL;
        b->ops = &counting;
        entry_calls = calls_with_columns = 0;
        CHECK_OK(ax_net_loss_gradient(net, data, 0, 45, NULL, &loss_with, with));
        CHECK(entry_calls == 2); /* both convolutions */
        /* float64's forward pass is im2col + GEMM: its columns are handed on */
        if (precision == AX_PRECISION_F64)
            CHECK(calls_with_columns == 2);
        b->ops = &plain;
        CHECK_OK(ax_net_loss_gradient(net, data, 0, 45, NULL, &loss_without, without));
        b->ops = own;
        CHECK(loss_with == loss_without);
        /* the im2col + GEMM path sums in another order: within float64's or
         * float32's rounding of sums over 45 x 100 positions */
        const double tolerance = precision == AX_PRECISION_F64 ? 1e-12 : 1e-4;
        double largest = 0.0, difference = 0.0;
        for (int64_t i = 0; i < count; i++) {
            largest = fmax(largest, fabs(without[i]));
            difference = fmax(difference, fabs(with[i] - without[i]));
        }
        CHECK(largest > 0.0 && difference <= tolerance * largest);
    }
    free(with);
    free(without);
done:
    ax_net_free(net);
    ax_dataset_free(data);
}

/* Whole training runs: the same weights on 1, 2 and 3 threads. */
static double *train_on(ax_precision precision, const ax_dataset *data, int64_t batch,
                        int threads, int64_t *count)
{
    CHECK_OK(ax_set_threads(threads));
    ax_net *net = NULL;
    double *weights = NULL;
    CHECK_OK(small_lenet(precision, &net));
    if (net) {
        ax_train_config training = ax_train_defaults();
        training.optimizer = AX_OPTIMIZER_SGD;
        training.learning_rate = 0.05;
        training.momentum = 0.9;
        training.batch_size = batch;
        training.epochs = 2;
        training.seed = 3;
        training.adapt_threads = false;
        ax_train_summary summary = ax_train_summary_empty();
        CHECK_OK(ax_train(net, data, NULL, NULL, &training, &summary));
        *count = ax_net_parameter_count(net);
        weights = malloc((size_t)*count * sizeof *weights);
        if (weights)
            ax_net_parameters_get(net, weights);
    }
    ax_net_free(net);
    CHECK_OK(ax_set_threads(0));
    return weights;
}

static void check_training_threads(ax_precision precision)
{
    ax_dataset *data = small_images(50);
    if (!data)
        return;
    const int64_t batches[] = {7, 16, 50};
    for (size_t n = 0; n < sizeof batches / sizeof *batches; n++) {
        int64_t count = 0;
        double *first = train_on(precision, data, batches[n], 1, &count);
        CHECK(first != NULL);
        for (int threads = 2; threads <= 3 && first; threads++) {
            int64_t other_count = 0;
            double *other = train_on(precision, data, batches[n], threads, &other_count);
            CHECK(other && other_count == count);
            if (other && memcmp(first, other, (size_t)count * sizeof *first) != 0) {
                fprintf(stderr, "%s, batch %lld: weights after training on %d threads differ "
                        "from 1's\n", precision == AX_PRECISION_BF16  ? "bf16"
                                       : precision == AX_PRECISION_F64 ? "float64"
                                                                       : "float32",
                        (long long)batches[n], threads);
                CHECK(false);
            }
            free(other);
        }
        free(first);
    }
    ax_dataset_free(data);
}

/* The checks in parts, each one CTest test (tests/CMakeLists.txt), so
 * that under the sanitizers, where the whole took 8.5 of CTest's 10
 * minutes (AMX's emulation 5.5 of them), no part comes near the limit; no
 * argument runs them all. */
static void part_entries(void)
{
    check_slices();
    check_entry(AX_PRECISION_F32);
    check_entry(AX_PRECISION_F64);
    check_entry(AX_PRECISION_BF16);
    check_primitive_ring();
}

/* oneDNN's bf16 primitive (AVX512_BF16 or AMX, or oneDNN's emulation on
 * other AVX-512 CPUs; rounded float32 ones where it has neither) */
static void part_onednn_bf16(void)
{
    setenv("AXON_ONEDNN_BF16", "native", 1);
    setenv("AXON_CONV_AMX", "off", 1); /* AMX's tiles would take LeNet's layer first */
    check_entry(AX_PRECISION_BF16);
    check_training_threads(AX_PRECISION_BF16);
    unsetenv("AXON_CONV_AMX");
    unsetenv("AXON_ONEDNN_BF16");
}

/* AMX's tiles (conv_weight_amx.c) take bf16's layers of channels and
 * filters in 16s first, where the CPU has them: their emulation on any
 * CPU, checked the same way */
static void part_amx(void)
{
    setenv("AXON_CONV_AMX", "emulate", 1);
    check_entry(AX_PRECISION_BF16);
    unsetenv("AXON_CONV_AMX");
}

static void part_amx_layers(void)
{
    setenv("AXON_CONV_AMX", "emulate", 1);
    check_layer_uses_entry(AX_PRECISION_BF16);
    check_training_threads(AX_PRECISION_BF16);
    unsetenv("AXON_CONV_AMX");
}

/* The direct kernels (conv_weight_direct.c, conv_one_channel.c) take
 * float32's and rounded bf16's layers of filters in multiples of 16
 * first: off, oneDNN's primitive runs those too, and with oneDNN off the
 * GEMM product (a build with oneDNN runs float32's and bf16's slices
 * through its primitive, onednn_conv_weights.c; oneDNN's switch is read
 * when a backend is made). */
static void part_direct_off(void)
{
    setenv("AXON_CONV_DIRECT", "off", 1);
    check_entry(AX_PRECISION_F32);
    check_entry(AX_PRECISION_BF16);
    check_training_threads(AX_PRECISION_F32);
    setenv("AXON_ONEDNN_CONV", "off", 1);
    check_entry(AX_PRECISION_F32);
    check_entry(AX_PRECISION_BF16);
    check_training_threads(AX_PRECISION_F32);
    unsetenv("AXON_ONEDNN_CONV");
    unsetenv("AXON_CONV_DIRECT");
}

static void part_layers(void)
{
    check_layer_uses_entry(AX_PRECISION_F32);
    check_layer_uses_entry(AX_PRECISION_F64);
    check_layer_uses_entry(AX_PRECISION_BF16);
    check_training_threads(AX_PRECISION_F32);
    check_training_threads(AX_PRECISION_F64);
    check_training_threads(AX_PRECISION_BF16);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } parts[] = {{"entries", part_entries},     {"onednn_bf16", part_onednn_bf16},
                 {"amx", part_amx},             {"amx_layers", part_amx_layers},
                 {"direct_off", part_direct_off}, {"layers", part_layers}};
    const size_t count = sizeof parts / sizeof *parts;
    bool known = argc < 2;
    for (size_t i = 0; i < count; i++)
        if (argc < 2 || strcmp(argv[1], parts[i].name) == 0) {
            parts[i].run();
            known = true;
        }
    if (!known) {
        fprintf(stderr, "test_conv_weight_gradient: no part %s (entries, onednn_bf16, amx, "
                        "amx_layers, direct_off, layers)\n", argv[1]);
        return 2;
    }
    return test_finish("test_conv_weight_gradient");
}
