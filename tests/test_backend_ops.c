/* test_cuda_parity.c: the CUDA backend computes what the CPU backend does.
 *
 * Per operation: every entry of the backend table run on the same random
 * inputs on both backends, float64 and float32, compared with a tolerance
 * per operation (the dropout mask, argmax, gathers and copies exactly).
 * Whole network: loss and gradient of ax_net_loss_gradient for each loss,
 * with L2 and dropout, within 1e-5 relative (float64) and 1e-3 (float32);
 * then a few epochs of SGD with momentum and of Adam end at the same weights.
 *
 * Without a CUDA backend in the build, or without a device, the test first
 * checks that asking for a device is refused with a clear message, then
 * reports itself skipped (exit 77): it never passes without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/random.h"
#include "test_util.h"

static ax_rng rng;

/* ------------------------------------------------------------ helpers */

static double *random_values(int64_t count, double low, double high)
{
    double *values = malloc((size_t)count * sizeof(double));
    for (int64_t i = 0; i < count; i++)
        values[i] = low + (high - low) * ax_rng_uniform(&rng);
    return values;
}

/* A pair of buffers holding the same values, one per backend. */
typedef struct pair {
    void *cpu, *gpu;
    int64_t count;
} pair;

typedef struct backends {
    ax_backend *cpu, *gpu;
    const char *precision;
    double loose; /* tolerance of float arithmetic differences */
} backends;

static pair pair_from(const backends *b, const double *values, int64_t count)
{
    pair p = {.count = count};
    p.cpu = b->cpu->ops->alloc(b->cpu, (size_t)count * b->cpu->real_size);
    p.gpu = b->gpu->ops->alloc(b->gpu, (size_t)count * b->gpu->real_size);
    CHECK(p.cpu && p.gpu);
    if (values) {
        b->cpu->ops->upload_f64(b->cpu, p.cpu, values, count);
        b->gpu->ops->upload_f64(b->gpu, p.gpu, values, count);
    }
    return p;
}

static pair pair_random(const backends *b, int64_t count, double low, double high)
{
    double *values = random_values(count, low, high);
    pair p = pair_from(b, values, count);
    free(values);
    return p;
}

static void pair_free(const backends *b, pair *p)
{
    b->cpu->ops->free(b->cpu, p->cpu);
    b->gpu->ops->free(b->gpu, p->gpu);
}

/* Compares the two buffers: |cpu - gpu| <= tol * max(|cpu|, floor), with
 * tol 0 meaning bit-for-bit. Reports the first difference under `what`. */
static void compare(const backends *b, const pair *p, double tol, double floor_value,
                    const char *what)
{
    double *cpu = malloc((size_t)p->count * sizeof(double));
    double *gpu = malloc((size_t)p->count * sizeof(double));
    b->cpu->ops->download_f64(b->cpu, cpu, p->cpu, p->count);
    b->gpu->ops->download_f64(b->gpu, gpu, p->gpu, p->count);
    for (int64_t i = 0; i < p->count; i++) {
        bool same = tol == 0.0 ? memcmp(&cpu[i], &gpu[i], sizeof(double)) == 0 ||
                                     (isnan(cpu[i]) && isnan(gpu[i]))
                               : fabs(cpu[i] - gpu[i]) <= tol * fmax(fabs(cpu[i]), floor_value);
        if (!same) {
            fprintf(stderr, "%s %s: element %lld: cpu %.17g, cuda %.17g (tolerance %g)\n",
                    b->precision, what, (long long)i, cpu[i], gpu[i], tol);
            test_failures++;
            break;
        }
    }
    free(cpu);
    free(gpu);
}

static void compare_scalar(const backends *b, double cpu, double gpu, double tol, const char *what)
{
    if (!(fabs(cpu - gpu) <= tol * fmax(fabs(cpu), 1e-30))) {
        fprintf(stderr, "%s %s: cpu %.17g, cuda %.17g (tolerance %g)\n", b->precision, what, cpu,
                gpu, tol);
        test_failures++;
    }
}

/* Integer labels in [0, classes) in both backends' memory. */
static void labels_pair(const backends *b, int32_t *host, int64_t rows, int64_t classes,
                        int32_t **cpu, int32_t **gpu)
{
    for (int64_t r = 0; r < rows; r++)
        host[r] = (int32_t)ax_rng_below(&rng, (uint64_t)classes);
    *cpu = b->cpu->ops->alloc(b->cpu, (size_t)rows * sizeof(int32_t));
    *gpu = b->gpu->ops->alloc(b->gpu, (size_t)rows * sizeof(int32_t));
    b->cpu->ops->gather_labels(b->cpu, *cpu, host, NULL, 0, rows);
    b->gpu->ops->gather_labels(b->gpu, *gpu, host, NULL, 0, rows);
}

/* ---------------------------------------------------- per operation */

static void test_gemm(const backends *b)
{
    const int64_t m = 67, n = 45, k = 130;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            pair a = pair_random(b, m * k, -1, 1), bb = pair_random(b, k * n, -1, 1);
            pair c = pair_random(b, m * n, -1, 1);
            int64_t lda = ta ? m : k, ldb = tb ? k : n;
            b->cpu->ops->gemm(b->cpu, ta, tb, m, n, k, 0.7, a.cpu, lda, bb.cpu, ldb, 0.3, c.cpu, n);
            b->gpu->ops->gemm(b->gpu, ta, tb, m, n, k, 0.7, a.gpu, lda, bb.gpu, ldb, 0.3, c.gpu, n);
            char what[64];
            snprintf(what, sizeof what, "gemm (trans_a %d, trans_b %d)", ta, tb);
            compare(b, &c, b->loose * 10, 1.0, what);
            pair_free(b, &a);
            pair_free(b, &bb);
            pair_free(b, &c);
        }
}

static void test_bias_activation(const backends *b)
{
    static const ax_activation activations[] = {AX_ACT_IDENTITY, AX_ACT_SIGMOID, AX_ACT_TANH,
                                                 AX_ACT_RELU, AX_ACT_SOFTMAX};
    const int64_t rows = 301, widths[] = {37, 130};
    for (int w = 0; w < 2; w++)
        for (int i = 0; i < 5; i++) {
            int64_t cols = widths[w];
            pair z = pair_random(b, rows * cols, -4, 4), bias = pair_random(b, cols, -1, 1);
            b->cpu->ops->bias_activation(b->cpu, activations[i], z.cpu, bias.cpu, rows, cols);
            b->gpu->ops->bias_activation(b->gpu, activations[i], z.gpu, bias.gpu, rows, cols);
            char what[64];
            snprintf(what, sizeof what, "bias_activation %s (%lld columns)",
                     ax_activation_name(activations[i]), (long long)cols);
            compare(b, &z, b->loose, 1e-3, what);
            pair_free(b, &z);
            pair_free(b, &bias);
        }
}

static void test_activation_backward(const backends *b)
{
    static const ax_activation activations[] = {AX_ACT_IDENTITY, AX_ACT_SIGMOID, AX_ACT_TANH,
                                                 AX_ACT_RELU};
    /* 1000 rows: several row chunks in the column sums; 3 rows: one. */
    const int64_t shapes[][2] = {{1000, 70}, {3, 33}};
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < 4; i++) {
            int64_t rows = shapes[s][0], cols = shapes[s][1];
            pair delta = pair_random(b, rows * cols, -1, 1);
            pair a = pair_random(b, rows * cols, -0.5, 0.9);
            pair sums = pair_random(b, cols, -1, 1);
            const double a_scale = 0.8;
            b->cpu->ops->activation_backward(b->cpu, activations[i], delta.cpu, a.cpu, a_scale,
                                             sums.cpu, rows, cols);
            b->gpu->ops->activation_backward(b->gpu, activations[i], delta.gpu, a.gpu, a_scale,
                                             sums.gpu, rows, cols);
            char what[80];
            snprintf(what, sizeof what, "activation_backward %s delta (%lld rows)",
                     ax_activation_name(activations[i]), (long long)rows);
            compare(b, &delta, b->loose, 1e-3, what);
            snprintf(what, sizeof what, "activation_backward %s bias gradient (%lld rows)",
                     ax_activation_name(activations[i]), (long long)rows);
            compare(b, &sums, b->loose * 10, 1.0, what);
            pair_free(b, &delta);
            pair_free(b, &a);
            pair_free(b, &sums);
        }
    pair delta = pair_random(b, 2000 * 17, -1, 1), sums = pair_random(b, 17, -1, 1);
    b->cpu->ops->column_sums(b->cpu, delta.cpu, sums.cpu, 2000, 17);
    b->gpu->ops->column_sums(b->gpu, delta.gpu, sums.gpu, 2000, 17);
    compare(b, &sums, b->loose * 10, 1.0, "column_sums");
    pair_free(b, &delta);
    pair_free(b, &sums);
}

static void test_losses(const backends *b)
{
    const int64_t rows = 257, cols = 10;
    int32_t host_labels[257];
    int32_t *labels_cpu, *labels_gpu;
    labels_pair(b, host_labels, rows, cols, &labels_cpu, &labels_gpu);
    const double scale = 1.0 / (double)rows;

    /* Softmax outputs for cross-entropy. */
    pair p = pair_random(b, rows * cols, -3, 3), bias = pair_random(b, cols, 0, 0);
    b->cpu->ops->bias_activation(b->cpu, AX_ACT_SOFTMAX, p.cpu, bias.cpu, rows, cols);
    b->gpu->ops->bias_activation(b->gpu, AX_ACT_SOFTMAX, p.gpu, bias.gpu, rows, cols);
    pair delta = pair_from(b, NULL, rows * cols);
    double cpu = b->cpu->ops->cross_entropy(b->cpu, p.cpu, labels_cpu, delta.cpu, scale, rows, cols);
    double gpu = b->gpu->ops->cross_entropy(b->gpu, p.gpu, labels_gpu, delta.gpu, scale, rows, cols);
    compare_scalar(b, cpu, gpu, b->loose, "cross_entropy loss");
    compare(b, &delta, b->loose, 1e-3, "cross_entropy delta");
    cpu = b->cpu->ops->cross_entropy(b->cpu, p.cpu, labels_cpu, NULL, scale, rows, cols);
    gpu = b->gpu->ops->cross_entropy(b->gpu, p.gpu, labels_gpu, NULL, scale, rows, cols);
    compare_scalar(b, cpu, gpu, b->loose, "cross_entropy loss without delta");
    CHECK(cpu > 0.0);

    /* Sigmoid outputs, against labels and against targets. */
    pair q = pair_random(b, rows * cols, 0.01, 0.99), targets = pair_random(b, rows * cols, 0, 1);
    for (int with_labels = 0; with_labels < 2; with_labels++) {
        const int32_t *lc = with_labels ? labels_cpu : NULL, *lg = with_labels ? labels_gpu : NULL;
        cpu = b->cpu->ops->binary_cross_entropy(b->cpu, q.cpu, lc, targets.cpu, delta.cpu, scale,
                                                rows, cols);
        gpu = b->gpu->ops->binary_cross_entropy(b->gpu, q.gpu, lg, targets.gpu, delta.gpu, scale,
                                                rows, cols);
        compare_scalar(b, cpu, gpu, b->loose, with_labels ? "bce loss (labels)" : "bce loss (targets)");
        compare(b, &delta, b->loose, 1e-3, with_labels ? "bce delta (labels)" : "bce delta (targets)");
        cpu = b->cpu->ops->squared_error(b->cpu, q.cpu, lc, targets.cpu, delta.cpu, scale, rows, cols);
        gpu = b->gpu->ops->squared_error(b->gpu, q.gpu, lg, targets.gpu, delta.gpu, scale, rows, cols);
        compare_scalar(b, cpu, gpu, b->loose, with_labels ? "mse loss (labels)" : "mse loss (targets)");
        compare(b, &delta, b->loose, 1e-3, with_labels ? "mse delta (labels)" : "mse delta (targets)");
    }
    b->cpu->ops->free(b->cpu, labels_cpu);
    b->gpu->ops->free(b->gpu, labels_gpu);
    pair_free(b, &p);
    pair_free(b, &bias);
    pair_free(b, &delta);
    pair_free(b, &q);
    pair_free(b, &targets);
}

static void test_dropout(const backends *b)
{
    const int64_t rows = 333, cols = 71;
    pair a = pair_random(b, rows * cols, 0.1, 2);
    b->cpu->ops->dropout(b->cpu, a.cpu, 0.3, 0x123456789abcdefULL, 1000, rows, cols);
    b->gpu->ops->dropout(b->gpu, a.gpu, 0.3, 0x123456789abcdefULL, 1000, rows, cols);
    compare(b, &a, 0.0, 0.0, "dropout (bit for bit)");
    /* The mask drops about the rate: a check that the comparison saw a mask. */
    double *values = malloc((size_t)(rows * cols) * sizeof(double));
    b->gpu->ops->download_f64(b->gpu, values, a.gpu, rows * cols);
    int64_t dropped = 0;
    for (int64_t i = 0; i < rows * cols; i++)
        dropped += values[i] == 0.0;
    CHECK(fabs((double)dropped / (double)(rows * cols) - 0.3) < 0.02);
    free(values);
    pair_free(b, &a);
}

static void test_vector_ops(const backends *b)
{
    const int64_t count = 100003;
    pair x = pair_random(b, count, -1, 1), y = pair_random(b, count, -1, 1);
    b->cpu->ops->axpy(b->cpu, count, -0.37, x.cpu, y.cpu);
    b->gpu->ops->axpy(b->gpu, count, -0.37, x.gpu, y.gpu);
    compare(b, &y, b->loose, 1e-3, "axpy");
    b->cpu->ops->scale(b->cpu, count, 1.7, y.cpu);
    b->gpu->ops->scale(b->gpu, count, 1.7, y.gpu);
    compare(b, &y, b->loose, 1e-3, "scale");
    double cpu = b->cpu->ops->dot(b->cpu, count, x.cpu, y.cpu);
    double gpu = b->gpu->ops->dot(b->gpu, count, x.gpu, y.gpu);
    compare_scalar(b, cpu, gpu, 1e-10, "dot"); /* both sum the products in double */
    CHECK(b->gpu->ops->all_finite(b->gpu, count, x.gpu));
    b->cpu->ops->copy(b->cpu, y.cpu, x.cpu, count);
    b->gpu->ops->copy(b->gpu, y.gpu, x.gpu, count);
    compare(b, &y, 0.0, 0.0, "copy");
    static const double bad[] = {NAN, INFINITY, -INFINITY};
    for (int i = 0; i < 3; i++) {
        double value = bad[i];
        b->gpu->ops->upload_f64(b->gpu, (char *)x.gpu + 777 * b->gpu->real_size, &value, 1);
        b->cpu->ops->upload_f64(b->cpu, (char *)x.cpu + 777 * b->cpu->real_size, &value, 1);
        CHECK(!b->gpu->ops->all_finite(b->gpu, count, x.gpu));
        CHECK(!b->cpu->ops->all_finite(b->cpu, count, x.cpu));
    }
    pair_free(b, &x);
    pair_free(b, &y);
}

static void test_optimizers(const backends *b)
{
    const int64_t count = 5001;
    for (int mode = 0; mode < 3; mode++) {
        pair p = pair_random(b, count, -1, 1), v = pair_random(b, count, -0.1, 0.1);
        for (int step = 0; step < 3; step++) {
            pair g = pair_random(b, count, -1, 1);
            double momentum = mode == 0 ? 0.0 : 0.9;
            b->cpu->ops->sgd_update(b->cpu, count, p.cpu, g.cpu, v.cpu, 0.05, momentum, mode == 2);
            b->gpu->ops->sgd_update(b->gpu, count, p.gpu, g.gpu, v.gpu, 0.05, momentum, mode == 2);
            pair_free(b, &g);
        }
        compare(b, &p, b->loose, 1e-3, mode == 0 ? "sgd" : mode == 1 ? "sgd momentum" : "sgd nesterov");
        if (mode > 0)
            compare(b, &v, b->loose, 1e-3, "sgd velocity");
        pair_free(b, &p);
        pair_free(b, &v);
    }
    pair p = pair_random(b, count, -1, 1), m = pair_from(b, NULL, count), v = pair_from(b, NULL, count);
    for (int step = 1; step <= 4; step++) {
        pair g = pair_random(b, count, -1, 1);
        b->cpu->ops->adam_update(b->cpu, count, p.cpu, g.cpu, m.cpu, v.cpu, 1e-2, 0.9, 0.999, 1e-8, step);
        b->gpu->ops->adam_update(b->gpu, count, p.gpu, g.gpu, m.gpu, v.gpu, 1e-2, 0.9, 0.999, 1e-8, step);
        pair_free(b, &g);
    }
    compare(b, &p, b->loose, 1e-3, "adam parameters");
    compare(b, &m, b->loose, 1e-3, "adam first moment");
    compare(b, &v, b->loose, 1e-3, "adam second moment");
    pair_free(b, &p);
    pair_free(b, &m);
    pair_free(b, &v);
}

static void test_argmax_and_transfers(const backends *b)
{
    const int64_t rows = 1025, cols = 13;
    double *values = random_values(rows * cols, -1, 1);
    values[5 * cols + 3] = values[5 * cols + 7] = 5.0; /* a tie: the first index wins */
    pair outputs = pair_from(b, values, rows * cols);
    int32_t *cpu = malloc((size_t)rows * sizeof(int32_t)), *gpu = malloc((size_t)rows * sizeof(int32_t));
    b->cpu->ops->argmax_rows(b->cpu, outputs.cpu, cpu, rows, cols);
    b->gpu->ops->argmax_rows(b->gpu, outputs.gpu, gpu, rows, cols);
    CHECK(memcmp(cpu, gpu, (size_t)rows * sizeof(int32_t)) == 0);
    CHECK(gpu[5] == 3);

    /* download_f32 */
    float *f_cpu = malloc((size_t)(rows * cols) * sizeof(float));
    float *f_gpu = malloc((size_t)(rows * cols) * sizeof(float));
    b->cpu->ops->download_f32(b->cpu, f_cpu, outputs.cpu, rows * cols);
    b->gpu->ops->download_f32(b->gpu, f_gpu, outputs.gpu, rows * cols);
    CHECK(memcmp(f_cpu, f_gpu, (size_t)(rows * cols) * sizeof(float)) == 0);

    /* gather_rows and gather_labels from host memory in a shuffled order,
     * from row `first` on. */
    const int64_t width = 29, source_rows = 3000, first = 100, count = 2000;
    float *source = malloc((size_t)(source_rows * width) * sizeof(float));
    int32_t *labels = malloc((size_t)source_rows * sizeof(int32_t));
    int64_t *order = malloc((size_t)source_rows * sizeof(int64_t));
    for (int64_t i = 0; i < source_rows * width; i++)
        source[i] = (float)(2.0 * ax_rng_uniform(&rng) - 1.0);
    for (int64_t r = 0; r < source_rows; r++)
        labels[r] = (int32_t)r;
    ax_rng_permutation(&rng, order, source_rows);
    for (int shuffled = 0; shuffled < 2; shuffled++) {
        pair gathered = pair_from(b, NULL, count * width);
        const int64_t *o = shuffled ? order : NULL;
        b->cpu->ops->gather_rows(b->cpu, gathered.cpu, source, width, o, first, count);
        b->gpu->ops->gather_rows(b->gpu, gathered.gpu, source, width, o, first, count);
        compare(b, &gathered, 0.0, 0.0, shuffled ? "gather_rows (shuffled)" : "gather_rows (in order)");
        pair_free(b, &gathered);
        int32_t *labels_gpu = b->gpu->ops->alloc(b->gpu, (size_t)count * sizeof(int32_t));
        b->gpu->ops->gather_labels(b->gpu, labels_gpu, labels, o, first, count);
        /* The table has no int32 download: read the label bytes back as
         * reals of the backend's precision (a real-to-real copy keeps bits). */
        int32_t *back = malloc((size_t)count * sizeof(int32_t));
        int64_t reals = (int64_t)((size_t)count * sizeof(int32_t) / b->gpu->real_size);
        if (b->gpu->real_size == sizeof(float))
            b->gpu->ops->download_f32(b->gpu, (float *)back, labels_gpu, reals);
        else
            b->gpu->ops->download_f64(b->gpu, (double *)back, labels_gpu, reals);
        bool same = true;
        for (int64_t r = 0; r < count; r++)
            same = same && back[r] == labels[o ? o[first + r] : first + r];
        CHECK(same);
        free(back);
        b->gpu->ops->free(b->gpu, labels_gpu);
    }
    free(source);
    free(labels);
    free(order);
    free(values);
    free(cpu);
    free(gpu);
    free(f_cpu);
    free(f_gpu);
    pair_free(b, &outputs);
}

/* -1: the CPU; N: CUDA device N. */
static ax_device cuda_device(int n)
{
    return n == -1 ? ax_device_cpu() : (ax_device){.backend = "cuda", .index = n};
}

static void test_operations(ax_precision precision, int device)
{
    backends b = {.precision = precision == AX_PRECISION_F64 ? "f64" : "f32",
                  .loose = precision == AX_PRECISION_F64 ? 1e-12 : 2e-5};
    CHECK_OK(ax_backend_create(precision, ax_device_cpu(), &b.cpu));
    CHECK_OK(ax_backend_create(precision, cuda_device(device), &b.gpu));
    if (!b.cpu || !b.gpu)
        return;
    CHECK(!b.gpu->host_memory && b.cpu->host_memory);
    CHECK(strcmp(b.gpu->ops->name, "cuda") == 0);
    test_gemm(&b);
    test_bias_activation(&b);
    test_activation_backward(&b);
    test_losses(&b);
    test_dropout(&b);
    test_vector_ops(&b);
    test_optimizers(&b);
    test_argmax_and_transfers(&b);
    b.gpu->ops->synchronize(b.gpu);
    b.cpu->ops->destroy(b.cpu);
    b.gpu->ops->destroy(b.gpu);
}

/* ------------------------------------------------------ whole network */

typedef enum { TASK_SOFTMAX, TASK_SIGMOID, TASK_REGRESSION } task;

static ax_dataset *make_data(task kind, int64_t rows, int64_t features, int64_t outputs)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_create(rows, features, kind == TASK_REGRESSION ? 0 : outputs,
                               kind == TASK_REGRESSION ? outputs : 0, &data));
    if (!data)
        return NULL;
    float *x = ax_dataset_features_data(data);
    for (int64_t i = 0; i < rows * features; i++)
        x[i] = (float)(2.0 * ax_rng_uniform(&rng) - 1.0);
    if (kind == TASK_REGRESSION) {
        float *t = ax_dataset_targets_data(data);
        for (int64_t i = 0; i < rows * outputs; i++)
            t[i] = (float)ax_rng_normal(&rng);
    } else {
        int32_t *labels = ax_dataset_labels_data(data);
        for (int64_t r = 0; r < rows; r++)
            labels[r] = (int32_t)(r % outputs); /* every class present */
    }
    return data;
}

static ax_net_config net_config(task kind, ax_precision precision, int device)
{
    ax_net_config config = ax_net_defaults();
    const char *layers = kind == TASK_SOFTMAX   ? "33:tanh,40:relu,7:softmax"
                         : kind == TASK_SIGMOID ? "24:sigmoid,5:sigmoid"
                                                : "31:relu,3";
    CHECK_OK(ax_layers_parse(layers, &config));
    config.input_width = 19;
    config.precision = precision;
    config.seed = 7;
    config.device = cuda_device(device);
    return config;
}

/* Largest |a - b| relative to the largest |a|: one figure for a vector. */
static double relative_difference(const double *a, const double *b, int64_t count)
{
    double largest = 0.0, difference = 0.0;
    for (int64_t i = 0; i < count; i++) {
        largest = fmax(largest, fabs(a[i]));
        difference = fmax(difference, fabs(a[i] - b[i]));
    }
    return largest > 0.0 ? difference / largest : difference;
}

static void test_network(task kind, ax_precision precision, int device)
{
    const double tol = precision == AX_PRECISION_F64 ? 1e-5 : 1e-3;
    const char *name = kind == TASK_SOFTMAX ? "softmax + cross-entropy"
                       : kind == TASK_SIGMOID ? "sigmoid + binary cross-entropy"
                                              : "regression (mse)";
    const char *prec = precision == AX_PRECISION_F64 ? "f64" : "f32";
    ax_net_config cpu_config = net_config(kind, precision, -1);
    ax_net_config gpu_config = net_config(kind, precision, device);
    int64_t outputs = ax_net_config_output_width(&cpu_config);
    ax_dataset *data = make_data(kind, 300, 19, outputs);
    ax_net *cpu = NULL, *gpu = NULL;
    CHECK_OK(ax_net_create(&cpu_config, &cpu));
    CHECK_OK(ax_net_create(&gpu_config, &gpu));
    if (!data || !cpu || !gpu)
        goto done;
    int64_t count = ax_net_parameter_count(cpu);
    double *g_cpu = malloc((size_t)count * sizeof(double));
    double *g_gpu = malloc((size_t)count * sizeof(double));

    /* Same initial weights: drawn on the host, uploaded. */
    ax_net_parameters_get(cpu, g_cpu);
    ax_net_parameters_get(gpu, g_gpu);
    CHECK(relative_difference(g_cpu, g_gpu, count) <= (precision == AX_PRECISION_F64 ? 0.0 : 1e-7));

    const ax_regularization settings[] = {
        {0}, {.l2 = 1e-3}, {.l2 = 1e-4, .dropout = 0.25, .dropout_key = 99}};
    for (int s = 0; s < 3; s++) {
        if (kind == TASK_SIGMOID && s == 2)
            continue; /* one hidden layer: dropout covered by the others */
        double loss_cpu = 0, loss_gpu = 0;
        /* Rows 10 to 290: a batch that does not start at the first row. */
        CHECK_OK(ax_net_loss_gradient(cpu, data, 10, 280, &settings[s], &loss_cpu, g_cpu));
        CHECK_OK(ax_net_loss_gradient(gpu, data, 10, 280, &settings[s], &loss_gpu, g_gpu));
        double loss_diff = fabs(loss_cpu - loss_gpu) / fabs(loss_cpu);
        double grad_diff = relative_difference(g_cpu, g_gpu, count);
        if (!(loss_diff <= tol && grad_diff <= tol)) {
            fprintf(stderr, "%s %s, regularisation %d: loss %.10g vs %.10g, gradient differs by %.3g "
                            "relative (tolerance %g)\n",
                    prec, name, s, loss_cpu, loss_gpu, grad_diff, tol);
            test_failures++;
        }
    }

    /* A few epochs of training, shuffled mini-batches. */
    static const ax_optimizer_kind optimizers[] = {AX_OPTIMIZER_SGD, AX_OPTIMIZER_ADAM};
    for (int o = 0; o < 2; o++) {
        ax_net *a = NULL, *b = NULL;
        CHECK_OK(ax_net_create(&cpu_config, &a));
        CHECK_OK(ax_net_create(&gpu_config, &b));
        if (!a || !b) {
            ax_net_free(a);
            ax_net_free(b);
            continue;
        }
        ax_train_config train = ax_train_defaults();
        train.optimizer = optimizers[o];
        train.learning_rate = o == 0 ? 0.05 : 1e-3;
        train.batch_size = 64;
        train.epochs = 3;
        train.l2 = 1e-4;
        ax_train_summary summary_a, summary_b;
        memset(&summary_a, 0, sizeof summary_a);
        memset(&summary_b, 0, sizeof summary_b);
        CHECK_OK(ax_train(a, data, NULL, NULL, &train, &summary_a));
        CHECK_OK(ax_train(b, data, NULL, NULL, &train, &summary_b));
        ax_net_parameters_get(a, g_cpu);
        ax_net_parameters_get(b, g_gpu);
        double difference = relative_difference(g_cpu, g_gpu, count);
        if (!(difference <= tol)) {
            fprintf(stderr, "%s %s: after 3 epochs of %s the weights differ by %.3g relative "
                            "(tolerance %g)\n",
                    prec, name, o == 0 ? "sgd" : "adam", difference, tol);
            test_failures++;
        }
        ax_net_free(a);
        ax_net_free(b);
    }

    /* Evaluation and prediction read results back through the same paths. */
    ax_evaluation e_cpu, e_gpu;
    CHECK_OK(ax_net_evaluate(cpu, data, &e_cpu));
    CHECK_OK(ax_net_evaluate(gpu, data, &e_gpu));
    CHECK_NEAR(e_cpu.loss, e_gpu.loss, tol);
    if (kind != TASK_REGRESSION)
        CHECK(fabs(e_cpu.accuracy - e_gpu.accuracy) <= 2.0 / 300.0);
    ax_evaluation_free(&e_cpu);
    ax_evaluation_free(&e_gpu);
    free(g_cpu);
    free(g_gpu);
done:
    ax_net_free(cpu);
    ax_net_free(gpu);
    ax_net_config_release(&cpu_config);
    ax_net_config_release(&gpu_config);
    ax_dataset_free(data);
}

int main(void)
{
    ax_rng_seed(&rng, 2024);
    const bool built = strstr(ax_build_info_get().backends, "cuda") != NULL;
    const int devices = ax_cuda_device_count();

    /* Refusals that hold with or without a device. */
    ax_net_config config = net_config(TASK_SOFTMAX, AX_PRECISION_F32, -2);
    ax_net *net = NULL;
    CHECK_FAILS(ax_net_create(&config, &net), AX_STATUS_BAD_ARGUMENT, "device cuda:-2");
    config.device = cuda_device(devices + 3);
    CHECK_FAILS(ax_net_create(&config, &net), AX_STATUS_UNSUPPORTED,
                built ? "no CUDA device" : "this build has no CUDA backend");
    CHECK(net == NULL);
    ax_net_config_release(&config);
    char text[256];
    CHECK(ax_cuda_device_info(devices + 3, text, sizeof text) == AX_STATUS_UNSUPPORTED);

    if (test_failures)
        return test_finish("test_cuda_parity");
    if (!built)
        TEST_SKIP("this build has no CUDA backend (configure with -DAXON_CUDA=ON where nvcc is "
                  "installed)");
    if (devices < 1)
        TEST_SKIP("no CUDA device (cudaGetDeviceCount found none): CPU/CUDA parity not checked");

    CHECK_OK(ax_cuda_device_info(0, text, sizeof text));
    printf("device 0: %s\n", text);
    for (int p = 0; p < 2; p++) {
        ax_precision precision = p == 0 ? AX_PRECISION_F64 : AX_PRECISION_F32;
        test_operations(precision, 0);
        test_network(TASK_SOFTMAX, precision, 0);
        test_network(TASK_SIGMOID, precision, 0);
        test_network(TASK_REGRESSION, precision, 0);
    }
    return test_finish("test_cuda_parity");
}
