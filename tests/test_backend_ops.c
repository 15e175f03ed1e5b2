/* test_backend_ops.c: every operation of a backend computes what the CPU
 * backend does, on every device, as ggml's test-backend-ops (the CPU is the
 * reference).
 *
 *     test_backend_ops [NAME] [--expect-mismatch OPERATION]
 *
 * NAME is a backend ("cuda", "opencl", the test plugins "fake" and
 * "fake_broken"); without it, every device backend this build knows
 * (AXON_TEST_BACKENDS, from tests/CMakeLists.txt). On each device of the
 * backend, float64 and float32:
 * - per operation: every entry of the table (backend.h) on the same random
 *   inputs on both backends, compared with a tolerance per operation (the
 *   dropout mask, argmax, gathers and copies exactly), the optional image
 *   operations (im2col, col2im, pooling, transpose) where the device has
 *   them;
 * - whole networks: loss and gradient of ax_net_loss_gradient for each
 *   loss and for a small convolutional net (where the device has the image
 *   operations), with L2 and dropout, within 1e-5 relative (float64) and 1e-3
 *   (float32); then three epochs of SGD with momentum and of Adam end at the
 *   same weights, and evaluation agrees.
 * The test plugin "fake" (tests/plugin_fake.c) is the CPU backend's own code
 * reached through the plugin loader: there every comparison must be equal
 * bit for bit (same code, same inputs, same thread count), so every machine
 * runs the whole harness and the loader in CI, and any difference at all is
 * a bug, not rounding. "fake_broken" is the CPU with a gemm that is about
 * 0.1% off in one element; with --expect-mismatch gemm the test passes only
 * if the comparisons, at a device's tolerances, catch it in gemm and in the
 * whole networks, and in no other operation: proof that the test can fail.
 *
 * Tolerances (u: the unit roundoff, 2^-24 in float32, 2^-53 in float64;
 * a device may contract a * b + c into one FMA where the CPU rounds twice,
 * and sums in another order, so neither side is exact and no operation is
 * compiled with contraction off: each is compared within a bound instead):
 *   axpy                 derived: 2 sides x 2 roundings x (|a x| + |y|) per
 *                        element, absolute (the result may cancel)
 *   scale                derived: axpy's bound scaled, plus one rounding
 *   dot                  derived: both sum in double: 2 n 2^-53 sum |x z|
 *   sgd_update (p, v)    derived: the roundings of each step, carried over
 *                        the steps, from the operands' magnitudes (host)
 *   gemm, column sums,   relative to max(|result|, 1), 10 x the loose tol
 *   bias gradients       (2e-4 float32, 1e-11 float64): sums of up to 10^6
 *                        terms in other orders; "fake_broken" (0.1 % off)
 *                        shows it still fails
 *   activations, losses, relative 2e-5 / 1e-12 with a floor of 1e-3: the
 *   adam_update          libm's and the device's exp/tanh/log/sqrt differ
 *                        by a few ulps (CUDA: 2, OpenCL: up to 4) magnified
 *                        by the functions' condition (|x| <= 5 here)
 *   image sums           relative 1e-5 / 1e-12
 *   dropout, argmax, copies, gathers, im2col, transpose, max pooling:
 *                        bit for bit (no arithmetic, or integer hashes)
 *   reduce               bit for bit against the same device's separate dot
 *                        and all_finite calls (the same kernels, one wait)
 * With the "fake" plugin (the CPU's own code) every comparison is bit for
 * bit.
 *
 * For every backend named, with or without a device, asking for a device
 * that is not there is first checked to be refused with a clear message.
 * Without the backend in the build or without a device the test says which
 * and exits 77 (skipped): it never passes without having compared. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/plugin.h"
#include "base/random.h"
#include "test_util.h"

/* The device backends this build knows, separated by spaces. */
#ifndef AXON_TEST_BACKENDS
#define AXON_TEST_BACKENDS "cuda"
#endif
#ifndef AXON_TEST_PLUGIN
#define AXON_TEST_PLUGIN "" /* libaxon_fake.so, from tests/CMakeLists.txt */
#endif

/* Test plugins, all in libaxon_fake.so ($AXON_TEST_PLUGIN): exact when a
 * device runs the CPU's own kernels and must equal the CPU bit for bit. */
static const struct {
    const char *name;
    bool exact;
} test_plugins[] = {{"fake", true}, {"fake_broken", false}};

static ax_rng rng;

/* The run's bookkeeping: the device and precision being compared, how many
 * comparisons were made, and (with --expect-mismatch) what differed. */
static struct {
    char device[48];       /* "cuda:0" */
    const char *precision; /* "f64", "f32" */
    const char *expected;  /* --expect-mismatch: the table entry known to be wrong */
    int compared;
    int expected_differed; /* in the expected entry */
    int network_differed;  /* whole networks, while one entry is known to be wrong */
} tally;

/* A comparison failed: `what` begins with the table entry compared
 * ("gemm (trans_a 1, trans_b 0)"), or names a whole-network check. Counts
 * as a failure unless it is the entry --expect-mismatch named or, then, a
 * whole network (which calls that entry). */
static void differs(bool network, const char *what, const char *format, ...)
{
    const size_t length = tally.expected ? strlen(tally.expected) : 0;
    const bool expected_entry = tally.expected && !network &&
                                strncmp(what, tally.expected, length) == 0 &&
                                (what[length] == ' ' || what[length] == '\0');
    fprintf(stderr, "%s %s %s: ", tally.device, tally.precision, what);
    va_list args;
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    if (expected_entry)
        tally.expected_differed++;
    else if (tally.expected && network)
        tally.network_differed++;
    else
        test_failures++;
    if (expected_entry || (tally.expected && network))
        fprintf(stderr, " (expected: this device's %s is wrong)", tally.expected);
    fprintf(stderr, "\n");
}

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
    void *cpu, *dev;
    int64_t count;
} pair;

/* The CPU and the device under test, in one precision. */
typedef struct backends {
    ax_backend *cpu, *dev;
    double loose; /* tolerance of float arithmetic differences; 0: bit for bit */
    bool exact;   /* the device runs the CPU's code: every comparison bit for bit */
    double u;     /* unit roundoff of the precision: 2^-24 (float32), 2^-53 (float64) */
} backends;

static pair pair_from(const backends *b, const double *values, int64_t count)
{
    pair p = {.count = count};
    p.cpu = b->cpu->ops->alloc(b->cpu, (size_t)count * b->cpu->real_size);
    p.dev = b->dev->ops->alloc(b->dev, (size_t)count * b->dev->real_size);
    CHECK(p.cpu && p.dev);
    if (values) {
        b->cpu->ops->upload_f64(b->cpu, p.cpu, values, count);
        b->dev->ops->upload_f64(b->dev, p.dev, values, count);
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
    b->dev->ops->free(b->dev, p->dev);
}

/* Compares the two buffers: |cpu - dev| <= tol * max(|cpu|, floor), with
 * tol 0 meaning bit-for-bit. Reports the first difference under `what`. */
static void compare(const backends *b, const pair *p, double tol, double floor_value,
                    const char *what)
{
    double *cpu = malloc((size_t)p->count * sizeof(double));
    double *dev = malloc((size_t)p->count * sizeof(double));
    b->cpu->ops->download_f64(b->cpu, cpu, p->cpu, p->count);
    b->dev->ops->download_f64(b->dev, dev, p->dev, p->count);
    tally.compared++;
    for (int64_t i = 0; i < p->count; i++) {
        bool same = tol == 0.0 ? memcmp(&cpu[i], &dev[i], sizeof(double)) == 0 ||
                                     (isnan(cpu[i]) && isnan(dev[i]))
                               : fabs(cpu[i] - dev[i]) <= tol * fmax(fabs(cpu[i]), floor_value);
        if (!same) {
            differs(false, what, "element %lld: cpu %.17g, device %.17g (tolerance %g)",
                    (long long)i, cpu[i], dev[i], tol);
            break;
        }
    }
    free(cpu);
    free(dev);
}

/* Compares the two buffers element by element within bound[i], an error
 * bound derived from the operation's roundings and its operands'
 * magnitudes (see "Tolerances" above); bit for bit when the device runs the
 * CPU's code. */
static void compare_bounded(const backends *b, const pair *p, const double *bound,
                            const char *what)
{
    double *cpu = malloc((size_t)p->count * sizeof(double));
    double *dev = malloc((size_t)p->count * sizeof(double));
    b->cpu->ops->download_f64(b->cpu, cpu, p->cpu, p->count);
    b->dev->ops->download_f64(b->dev, dev, p->dev, p->count);
    tally.compared++;
    for (int64_t i = 0; i < p->count; i++) {
        bool same = b->exact ? memcmp(&cpu[i], &dev[i], sizeof(double)) == 0
                             : fabs(cpu[i] - dev[i]) <= bound[i];
        if (!same) {
            differs(false, what, "element %lld: cpu %.17g, device %.17g (bound %.3g)",
                    (long long)i, cpu[i], dev[i], b->exact ? 0.0 : bound[i]);
            break;
        }
    }
    free(cpu);
    free(dev);
}

static void compare_scalar(double cpu, double dev, double tol, const char *what)
{
    tally.compared++;
    if (!(tol == 0.0 ? cpu == dev : fabs(cpu - dev) <= tol * fmax(fabs(cpu), 1e-30)))
        differs(false, what, "cpu %.17g, device %.17g (tolerance %g)", cpu, dev, tol);
}

/* Results that must be equal (indices, flags, bytes). */
static void compare_same(bool same, const char *what)
{
    tally.compared++;
    if (!same)
        differs(false, what, "the device's result differs from the CPU's");
}

static void compare_scalar_bound(double cpu, double dev, double bound, bool exact,
                                 const char *what)
{
    tally.compared++;
    if (!(exact ? cpu == dev : fabs(cpu - dev) <= bound))
        differs(false, what, "cpu %.17g, device %.17g (bound %.3g)", cpu, dev, exact ? 0.0 : bound);
}

/* x . z of values both sides hold alike: each sums the products in double
 * (exact products of float32 values; rounded ones of float64) in its own
 * order, so each is within n u64 sum |x z| of the exact sum (Higham,
 * Accuracy and Stability, 3.1), and the two within twice that. */
static void check_dot(const backends *b, int64_t count, const char *what)
{
    double *xs = random_values(count, -1, 1), *zs = random_values(count, -1, 1);
    pair x = pair_from(b, xs, count), z = pair_from(b, zs, count);
    double magnitude = 0.0;
    for (int64_t i = 0; i < count; i++)
        magnitude += fabs(xs[i] * zs[i]);
    const double cpu = b->cpu->ops->dot(b->cpu, count, x.cpu, z.cpu);
    const double dev = b->dev->ops->dot(b->dev, count, x.dev, z.dev);
    compare_scalar_bound(cpu, dev, 2.02 * (double)count * 0x1p-53 * magnitude, b->exact, what);
    free(xs);
    free(zs);
    pair_free(b, &x);
    pair_free(b, &z);
}

/* Integer labels in [0, classes) in both backends' memory. */
static void labels_pair(const backends *b, int32_t *host, int64_t rows, int64_t classes,
                        int32_t **cpu, int32_t **dev)
{
    for (int64_t r = 0; r < rows; r++)
        host[r] = (int32_t)ax_rng_below(&rng, (uint64_t)classes);
    *cpu = b->cpu->ops->alloc(b->cpu, (size_t)rows * sizeof(int32_t));
    *dev = b->dev->ops->alloc(b->dev, (size_t)rows * sizeof(int32_t));
    b->cpu->ops->gather_labels(b->cpu, *cpu, host, NULL, 0, rows);
    b->dev->ops->gather_labels(b->dev, *dev, host, NULL, 0, rows);
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
            b->dev->ops->gemm(b->dev, ta, tb, m, n, k, 0.7, a.dev, lda, bb.dev, ldb, 0.3, c.dev, n);
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
            b->dev->ops->bias_activation(b->dev, activations[i], z.dev, bias.dev, rows, cols);
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
            b->dev->ops->activation_backward(b->dev, activations[i], delta.dev, a.dev, a_scale,
                                             sums.dev, rows, cols);
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
    b->dev->ops->column_sums(b->dev, delta.dev, sums.dev, 2000, 17);
    compare(b, &sums, b->loose * 10, 1.0, "column_sums");
    pair_free(b, &delta);
    pair_free(b, &sums);
}

static void test_losses(const backends *b)
{
    const int64_t rows = 257, cols = 10;
    int32_t host_labels[257];
    int32_t *labels_cpu, *labels_dev;
    labels_pair(b, host_labels, rows, cols, &labels_cpu, &labels_dev);
    const double scale = 1.0 / (double)rows;

    /* Softmax outputs for cross-entropy. */
    pair p = pair_random(b, rows * cols, -3, 3), bias = pair_random(b, cols, 0, 0);
    b->cpu->ops->bias_activation(b->cpu, AX_ACT_SOFTMAX, p.cpu, bias.cpu, rows, cols);
    b->dev->ops->bias_activation(b->dev, AX_ACT_SOFTMAX, p.dev, bias.dev, rows, cols);
    pair delta = pair_from(b, NULL, rows * cols);
    double cpu = b->cpu->ops->cross_entropy(b->cpu, p.cpu, labels_cpu, delta.cpu, scale, rows, cols);
    double dev = b->dev->ops->cross_entropy(b->dev, p.dev, labels_dev, delta.dev, scale, rows, cols);
    compare_scalar(cpu, dev, b->loose, "cross_entropy loss");
    compare(b, &delta, b->loose, 1e-3, "cross_entropy delta");
    cpu = b->cpu->ops->cross_entropy(b->cpu, p.cpu, labels_cpu, NULL, scale, rows, cols);
    dev = b->dev->ops->cross_entropy(b->dev, p.dev, labels_dev, NULL, scale, rows, cols);
    compare_scalar(cpu, dev, b->loose, "cross_entropy loss without delta");
    CHECK(cpu > 0.0);

    /* Losses kept on the device (backend.h, version 4): a deferred loss
     * returns 0 at once, and the total kept there takes the value the
     * device reads back, with the host's arithmetic, bit for bit; the first
     * non-finite step is recorded with its value, later ones are not. */
    if (ax_backend_supports(b->dev->ops, AX_BACKEND_FEATURE_DEVICE_LOSS, NULL, 0) &&
        b->dev->ops->loss_defer(b->dev, true)) {
        b->dev->ops->loss_reset(b->dev, 0.5);
        const double deferred = b->dev->ops->cross_entropy(b->dev, p.dev, labels_dev, NULL, scale,
                                                           rows, cols);
        b->dev->ops->loss_accumulate(b->dev, 0.25, 3.0, 7);
        b->dev->ops->loss_defer(b->dev, false);
        double total, bad_value, expected = 0.5;
        int64_t first_bad;
        b->dev->ops->loss_read(b->dev, &total, &first_bad, &bad_value);
        expected += (dev * 0.25) * 3.0;
        compare_same(deferred == 0.0 && memcmp(&total, &expected, sizeof total) == 0 &&
                         first_bad == -1,
                     "loss_defer + loss_accumulate (the total kept on the device)");
        b->dev->ops->loss_defer(b->dev, true);
        (void)b->dev->ops->cross_entropy(b->dev, p.dev, labels_dev, NULL, scale, rows, cols);
        b->dev->ops->loss_accumulate(b->dev, INFINITY, 1.0, 9);
        b->dev->ops->loss_accumulate(b->dev, NAN, 1.0, 10);
        b->dev->ops->loss_defer(b->dev, false);
        b->dev->ops->loss_read(b->dev, &total, &first_bad, &bad_value);
        compare_same(first_bad == 9 && isinf(bad_value) && bad_value > 0 && isnan(total),
                     "loss_accumulate (the first non-finite step recorded)");
        /* after reading, the losses are read at once again */
        const double again = b->dev->ops->cross_entropy(b->dev, p.dev, labels_dev, NULL, scale,
                                                        rows, cols);
        compare_same(memcmp(&again, &dev, sizeof again) == 0, "cross_entropy after loss_defer");
    } else {
        printf("  loss_defer ... loss_read: not in this backend or declined (optional: each "
               "step's loss is read)\n");
    }

    /* Sigmoid outputs, against labels and against targets. */
    pair q = pair_random(b, rows * cols, 0.01, 0.99), targets = pair_random(b, rows * cols, 0, 1);
    for (int with_labels = 0; with_labels < 2; with_labels++) {
        const int32_t *lc = with_labels ? labels_cpu : NULL, *ld = with_labels ? labels_dev : NULL;
        const char *against = with_labels ? "labels" : "targets";
        char what[64];
        cpu = b->cpu->ops->binary_cross_entropy(b->cpu, q.cpu, lc, targets.cpu, delta.cpu, scale,
                                                rows, cols);
        dev = b->dev->ops->binary_cross_entropy(b->dev, q.dev, ld, targets.dev, delta.dev, scale,
                                                rows, cols);
        snprintf(what, sizeof what, "binary_cross_entropy loss (%s)", against);
        compare_scalar(cpu, dev, b->loose, what);
        snprintf(what, sizeof what, "binary_cross_entropy delta (%s)", against);
        compare(b, &delta, b->loose, 1e-3, what);
        cpu = b->cpu->ops->squared_error(b->cpu, q.cpu, lc, targets.cpu, delta.cpu, scale, rows, cols);
        dev = b->dev->ops->squared_error(b->dev, q.dev, ld, targets.dev, delta.dev, scale, rows, cols);
        snprintf(what, sizeof what, "squared_error loss (%s)", against);
        compare_scalar(cpu, dev, b->loose, what);
        snprintf(what, sizeof what, "squared_error delta (%s)", against);
        compare(b, &delta, b->loose, 1e-3, what);
    }
    b->cpu->ops->free(b->cpu, labels_cpu);
    b->dev->ops->free(b->dev, labels_dev);
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
    b->dev->ops->dropout(b->dev, a.dev, 0.3, 0x123456789abcdefULL, 1000, rows, cols);
    compare(b, &a, 0.0, 0.0, "dropout (bit for bit)");
    /* The mask drops about the rate: a check that the comparison saw a mask. */
    double *values = malloc((size_t)(rows * cols) * sizeof(double));
    b->dev->ops->download_f64(b->dev, values, a.dev, rows * cols);
    int64_t dropped = 0;
    for (int64_t i = 0; i < rows * cols; i++)
        dropped += values[i] == 0.0;
    CHECK(fabs((double)dropped / (double)(rows * cols) - 0.3) < 0.02);
    free(values);
    pair_free(b, &a);
}

/* Shapes that catch a device's edge cases: one row (a work-group mostly
 * idle, a softmax of one row), widths that are no multiple of any
 * work-group size, one inner dimension in a GEMM, and reductions over
 * 1000003 rows (many chunks and groups, a ragged last one). */
static void test_awkward_shapes(const backends *b)
{
    static const ax_activation activations[] = {AX_ACT_IDENTITY, AX_ACT_SIGMOID, AX_ACT_TANH,
                                                 AX_ACT_RELU, AX_ACT_SOFTMAX};
    const int64_t widths[] = {1, 257};
    char what[96];
    for (int w = 0; w < 2; w++)
        for (int i = 0; i < 5; i++) {
            const int64_t cols = widths[w];
            pair z = pair_random(b, cols, -4, 4), bias = pair_random(b, cols, -1, 1);
            b->cpu->ops->bias_activation(b->cpu, activations[i], z.cpu, bias.cpu, 1, cols);
            b->dev->ops->bias_activation(b->dev, activations[i], z.dev, bias.dev, 1, cols);
            snprintf(what, sizeof what, "bias_activation %s (1 row, %lld columns)",
                     ax_activation_name(activations[i]), (long long)cols);
            compare(b, &z, b->loose, 1e-3, what);
            if (activations[i] != AX_ACT_SOFTMAX) {
                pair delta = pair_random(b, cols, -1, 1), sums = pair_random(b, cols, -1, 1);
                b->cpu->ops->activation_backward(b->cpu, activations[i], delta.cpu, z.cpu, 1.0,
                                                 sums.cpu, 1, cols);
                b->dev->ops->activation_backward(b->dev, activations[i], delta.dev, z.dev, 1.0,
                                                 sums.dev, 1, cols);
                snprintf(what, sizeof what, "activation_backward %s (1 row, %lld columns)",
                         ax_activation_name(activations[i]), (long long)cols);
                /* As the other bias gradients: tanh' = 1 - y^2 near |y| = 1
                 * magnifies the ulps by which libm's tanh and OpenCL's differ. */
                compare(b, &sums, b->loose * 10, 1.0, what);
                pair_free(b, &delta);
                pair_free(b, &sums);
            }
            pair_free(b, &z);
            pair_free(b, &bias);
        }
    /* GEMMs with one row, one column and an inner dimension of 1. */
    const int64_t shapes[][3] = {{1, 45, 130}, {67, 1, 13}, {33, 29, 1}};
    for (int s = 0; s < 3; s++) {
        const int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        pair a = pair_random(b, m * k, -1, 1), bb = pair_random(b, k * n, -1, 1);
        pair c = pair_random(b, m * n, -1, 1);
        b->cpu->ops->gemm(b->cpu, false, true, m, n, k, 1.0, a.cpu, k, bb.cpu, k, 0.5, c.cpu, n);
        b->dev->ops->gemm(b->dev, false, true, m, n, k, 1.0, a.dev, k, bb.dev, k, 0.5, c.dev, n);
        snprintf(what, sizeof what, "gemm (%lld x %lld x %lld, trans_b 1)", (long long)m,
                 (long long)n, (long long)k);
        compare(b, &c, b->loose * 10, 1.0, what);
        pair_free(b, &a);
        pair_free(b, &bb);
        pair_free(b, &c);
    }
    /* Reductions over 1000003 rows of 3 columns. */
    const int64_t rows = 1000003, cols = 3;
    pair delta = pair_random(b, rows * cols, -1, 1), sums = pair_random(b, cols, -1, 1);
    b->cpu->ops->column_sums(b->cpu, delta.cpu, sums.cpu, rows, cols);
    b->dev->ops->column_sums(b->dev, delta.dev, sums.dev, rows, cols);
    compare(b, &sums, b->loose * 10, 1.0, "column_sums (1000003 rows)");
    pair a = pair_random(b, rows * cols, 0.05, 0.95);
    b->cpu->ops->activation_backward(b->cpu, AX_ACT_SIGMOID, delta.cpu, a.cpu, 1.0, sums.cpu,
                                     rows, cols);
    b->dev->ops->activation_backward(b->dev, AX_ACT_SIGMOID, delta.dev, a.dev, 1.0, sums.dev,
                                     rows, cols);
    compare(b, &sums, b->loose * 10, 1.0, "activation_backward sigmoid bias gradient (1000003 rows)");
    int32_t *host_labels = malloc((size_t)rows * sizeof(int32_t));
    int32_t *labels_cpu, *labels_dev;
    labels_pair(b, host_labels, rows, cols, &labels_cpu, &labels_dev);
    double cpu = b->cpu->ops->binary_cross_entropy(b->cpu, a.cpu, labels_cpu, NULL, delta.cpu,
                                                   1.0 / (double)rows, rows, cols);
    double dev = b->dev->ops->binary_cross_entropy(b->dev, a.dev, labels_dev, NULL, delta.dev,
                                                   1.0 / (double)rows, rows, cols);
    compare_scalar(cpu, dev, b->loose, "binary_cross_entropy loss (1000003 rows)");
    compare(b, &delta, b->loose, 1e-3, "binary_cross_entropy delta (1000003 rows)");
    cpu = b->cpu->ops->cross_entropy(b->cpu, a.cpu, labels_cpu, NULL, 1.0, rows, cols);
    dev = b->dev->ops->cross_entropy(b->dev, a.dev, labels_dev, NULL, 1.0, rows, cols);
    compare_scalar(cpu, dev, b->loose, "cross_entropy loss (1000003 rows)");
    cpu = b->cpu->ops->squared_error(b->cpu, a.cpu, labels_cpu, NULL, NULL, 1.0, rows, cols);
    dev = b->dev->ops->squared_error(b->dev, a.dev, labels_dev, NULL, NULL, 1.0, rows, cols);
    compare_scalar(cpu, dev, b->loose, "squared_error loss (1000003 rows)");
    check_dot(b, rows * cols, "dot (3000009 values)");
    int32_t *arg_cpu = malloc((size_t)rows * sizeof(int32_t));
    int32_t *arg_dev = malloc((size_t)rows * sizeof(int32_t));
    b->cpu->ops->argmax_rows(b->cpu, a.cpu, arg_cpu, rows, cols);
    b->dev->ops->argmax_rows(b->dev, a.dev, arg_dev, rows, cols);
    compare_same(memcmp(arg_cpu, arg_dev, (size_t)rows * sizeof(int32_t)) == 0,
                 "argmax_rows (1000003 rows)");
    free(arg_cpu);
    free(arg_dev);
    b->cpu->ops->free(b->cpu, labels_cpu);
    b->dev->ops->free(b->dev, labels_dev);
    free(host_labels);
    pair_free(b, &a);
    pair_free(b, &delta);
    pair_free(b, &sums);
}

static void test_vector_ops(const backends *b)
{
    const int64_t count = 100003;
    const double alpha = -0.37, factor = 1.7, u = b->u;
    double *xs = random_values(count, -1, 1), *ys = random_values(count, -1, 1);
    double *bound = malloc((size_t)count * sizeof(double));
    pair x = pair_from(b, xs, count), y = pair_from(b, ys, count);
    /* y += alpha x: two roundings (one with an FMA) of operands of magnitude
     * |alpha x| + |y| on each side; the result may cancel to far less, so the
     * bound is absolute, from the operands, not relative to the result. */
    for (int64_t i = 0; i < count; i++)
        bound[i] = 2.02 * 2 * u * (fabs(alpha * xs[i]) + fabs(ys[i]));
    b->cpu->ops->axpy(b->cpu, count, alpha, x.cpu, y.cpu);
    b->dev->ops->axpy(b->dev, count, alpha, x.dev, y.dev);
    compare_bounded(b, &y, bound, "axpy");
    /* y *= factor: the difference scaled, plus one rounding on each side. */
    for (int64_t i = 0; i < count; i++)
        bound[i] = factor * bound[i] + 2.02 * u * factor * (fabs(alpha * xs[i]) + fabs(ys[i]));
    b->cpu->ops->scale(b->cpu, count, factor, y.cpu);
    b->dev->ops->scale(b->dev, count, factor, y.dev);
    compare_bounded(b, &y, bound, "scale");
    free(xs);
    free(ys);
    free(bound);
    check_dot(b, count, "dot");
    compare_same(b->dev->ops->all_finite(b->dev, count, x.dev), "all_finite (all finite)");
    b->cpu->ops->copy(b->cpu, y.cpu, x.cpu, count);
    b->dev->ops->copy(b->dev, y.dev, x.dev, count);
    compare(b, &y, 0.0, 0.0, "copy");
    static const double bad[] = {NAN, INFINITY, -INFINITY};
    for (int i = 0; i < 3; i++) {
        double value = bad[i];
        b->dev->ops->upload_f64(b->dev, (char *)x.dev + 777 * b->dev->real_size, &value, 1);
        b->cpu->ops->upload_f64(b->cpu, (char *)x.cpu + 777 * b->cpu->real_size, &value, 1);
        compare_same(!b->dev->ops->all_finite(b->dev, count, x.dev), "all_finite (NaN, +-Inf)");
        CHECK(!b->cpu->ops->all_finite(b->cpu, count, x.cpu));
    }
    pair_free(b, &x);
    pair_free(b, &y);
}

/* The separate calls reduce stands for, on the same backend. */
static double reduction_alone(ax_backend *backend, const ax_reduction *r)
{
    if (r->kind == AX_REDUCTION_DOT)
        return backend->ops->dot(backend, r->count, r->x, r->y);
    return backend->ops->all_finite(backend, r->count, r->x) ? 0.0 : 1.0;
}

/* Dots: the same bits (NaN matching NaN); counts of non-finite values: zero
 * exactly when all_finite says so. */
static void compare_reductions(ax_backend *backend, int n, const ax_reduction *got,
                               const char *what)
{
    for (int i = 0; i < n; i++) {
        const double alone = reduction_alone(backend, &got[i]);
        const bool same = got[i].kind == AX_REDUCTION_DOT
                              ? memcmp(&alone, &got[i].value, sizeof alone) == 0 ||
                                    (isnan(alone) && isnan(got[i].value))
                              : (alone == 0.0) == (got[i].value == 0.0);
        tally.compared++;
        if (!same) {
            differs(false, what, "reduction %d of %d (count %lld): batched %.17g, alone %.17g", i,
                    n, (long long)got[i].count, got[i].value, alone);
            return;
        }
    }
}

/* reduce (one host wait for several dots and finiteness checks) against the
 * device's own separate calls, bit for bit: full batches, a batch longer
 * than AX_BACKEND_REDUCE_MAX (ax_backend_reduce splits it), empty vectors,
 * offsets into a buffer, a NaN or infinity present, and the fallback of a
 * table without reduce (a plugin before version 9). */
static void test_reduce(const backends *b)
{
    ax_backend *dev = b->dev;
    const int64_t count = 100003;
    const size_t real = dev->real_size;
    double *xs = random_values(count, -1, 1), *ys = random_values(count, -1, 1);
    pair x = pair_from(b, xs, count), y = pair_from(b, ys, count);
    const char *xo = (const char *)x.dev + 3 * real;
    ax_reduction set[11] = {
        {AX_REDUCTION_DOT, count, x.dev, x.dev, 0},
        {AX_REDUCTION_DOT, count, x.dev, y.dev, 0},
        {AX_REDUCTION_NONFINITE, count, x.dev, NULL, 0},
        {AX_REDUCTION_DOT, 1, x.dev, y.dev, 0},
        {AX_REDUCTION_DOT, 0, x.dev, y.dev, 0},
        {AX_REDUCTION_NONFINITE, 0, x.dev, NULL, 0},
        {AX_REDUCTION_DOT, 777, y.dev, y.dev, 0},
        {AX_REDUCTION_DOT, 5000, xo, y.dev, 0},
        {AX_REDUCTION_NONFINITE, 5000, xo, NULL, 0},
        {AX_REDUCTION_DOT, count - 3, y.dev, xo, 0},
        {AX_REDUCTION_NONFINITE, count, y.dev, NULL, 0},
    };
    CHECK(dev->ops->reduce != NULL); /* every backend of this build has it */
    ax_reduction got[11];
    for (int bad = 0; bad < 2; bad++) {
        if (bad) { /* a NaN in x, inside the offset views too */
            const double value = NAN;
            dev->ops->upload_f64(dev, (char *)x.dev + 777 * real, &value, 1);
        }
        memcpy(got, set, sizeof got);
        dev->ops->reduce(dev, AX_BACKEND_REDUCE_MAX, got);
        compare_reductions(dev, AX_BACKEND_REDUCE_MAX, got, "reduce (a full batch)");
        CHECK(bad ? got[2].value != 0.0 && isnan(got[0].value) : got[2].value == 0.0);
        memcpy(got, set, sizeof got);
        dev->ops->reduce(dev, 1, got + 1);
        compare_reductions(dev, 1, got + 1, "reduce (one)");
        memcpy(got, set, sizeof got);
        ax_backend_reduce(dev, 11, got);
        compare_reductions(dev, 11, got, "reduce (11, in two batches)");
        /* A table without reduce: one call per reduction, the same values. */
        const ax_backend_ops *own = dev->ops;
        ax_backend_ops without = *own;
        without.reduce = NULL;
        dev->ops = &without;
        memcpy(got, set, sizeof got);
        ax_backend_reduce(dev, 11, got);
        dev->ops = own;
        compare_reductions(dev, 11, got, "reduce (the fallback without the entry)");
    }
    ax_backend_reduce(dev, 0, NULL); /* nothing asked: nothing read */
    free(xs);
    free(ys);
    pair_free(b, &x);
    pair_free(b, &y);
}

static void test_optimizers(const backends *b)
{
    const int64_t count = 5001;
    /* SGD: each side's error against exact arithmetic (with the rounded
     * learning rate and momentum both use), carried from step to step, from
     * the operands' magnitudes (host, float64), k roundings of a sum of
     * magnitudes M costing at most k u M; the bound is twice it.
     *   v = mu v + g             e_v' = mu e_v + 2u (|mu v| + |g|)
     *   p -= lr v                e_p' = e_p + lr e_v' + 2u (|p| + |lr v'|)
     *   p -= lr (g + mu v)       e_p' = e_p + lr mu e_v' + 3u (|p| + lr (|g| + |mu v'|))
     *   p -= lr g (no momentum)  e_p' = e_p + 2u (|p| + |lr g|) */
    const double u = b->u, lr = 0.05;
    double *ep = malloc((size_t)count * sizeof(double)), *ev = malloc((size_t)count * sizeof(double));
    for (int mode = 0; mode < 3; mode++) {
        const double mu = mode == 0 ? 0.0 : 0.9;
        double *ps = random_values(count, -1, 1), *vs = random_values(count, -0.1, 0.1);
        pair p = pair_from(b, ps, count), v = pair_from(b, vs, count);
        for (int64_t i = 0; i < count; i++)
            ep[i] = ev[i] = 0.0;
        for (int step = 0; step < 3; step++) {
            double *gs = random_values(count, -1, 1);
            pair g = pair_from(b, gs, count);
            b->cpu->ops->sgd_update(b->cpu, count, p.cpu, g.cpu, v.cpu, lr, mu, mode == 2);
            b->dev->ops->sgd_update(b->dev, count, p.dev, g.dev, v.dev, lr, mu, mode == 2);
            for (int64_t i = 0; i < count; i++) {
                const double gi = gs[i];
                if (mode == 0) {
                    ep[i] += 2 * u * (fabs(ps[i]) + fabs(lr * gi));
                    ps[i] -= lr * gi;
                    continue;
                }
                ev[i] = mu * ev[i] + 2 * u * (fabs(mu * vs[i]) + fabs(gi));
                vs[i] = mu * vs[i] + gi;
                if (mode == 1) {
                    ep[i] += lr * ev[i] + 2 * u * (fabs(ps[i]) + fabs(lr * vs[i]));
                    ps[i] -= lr * vs[i];
                } else {
                    ep[i] += lr * mu * ev[i] + 3 * u * (fabs(ps[i]) + lr * (fabs(gi) + fabs(mu * vs[i])));
                    ps[i] -= lr * (gi + mu * vs[i]);
                }
            }
            free(gs);
            pair_free(b, &g);
        }
        for (int64_t i = 0; i < count; i++)
            ep[i] *= 2.02, ev[i] *= 2.02;
        compare_bounded(b, &p, ep, mode == 0   ? "sgd_update"
                                   : mode == 1 ? "sgd_update momentum"
                                               : "sgd_update nesterov");
        if (mode > 0)
            compare_bounded(b, &v, ev, "sgd_update velocity");
        free(ps);
        free(vs);
        pair_free(b, &p);
        pair_free(b, &v);
    }
    free(ep);
    free(ev);
    pair p = pair_random(b, count, -1, 1), m = pair_from(b, NULL, count), v = pair_from(b, NULL, count);
    for (int step = 1; step <= 4; step++) {
        pair g = pair_random(b, count, -1, 1);
        b->cpu->ops->adam_update(b->cpu, count, p.cpu, g.cpu, m.cpu, v.cpu, 1e-2, 0.9, 0.999, 1e-8, step);
        b->dev->ops->adam_update(b->dev, count, p.dev, g.dev, m.dev, v.dev, 1e-2, 0.9, 0.999, 1e-8, step);
        pair_free(b, &g);
    }
    compare(b, &p, b->loose, 1e-3, "adam_update parameters");
    compare(b, &m, b->loose, 1e-3, "adam_update first moment");
    compare(b, &v, b->loose, 1e-3, "adam_update second moment");
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
    int32_t *cpu = malloc((size_t)rows * sizeof(int32_t)), *dev = malloc((size_t)rows * sizeof(int32_t));
    b->cpu->ops->argmax_rows(b->cpu, outputs.cpu, cpu, rows, cols);
    b->dev->ops->argmax_rows(b->dev, outputs.dev, dev, rows, cols);
    compare_same(memcmp(cpu, dev, (size_t)rows * sizeof(int32_t)) == 0 && dev[5] == 3,
                 "argmax_rows (a tie in row 5: the first index)");

    float *f_cpu = malloc((size_t)(rows * cols) * sizeof(float));
    float *f_dev = malloc((size_t)(rows * cols) * sizeof(float));
    b->cpu->ops->download_f32(b->cpu, f_cpu, outputs.cpu, rows * cols);
    b->dev->ops->download_f32(b->dev, f_dev, outputs.dev, rows * cols);
    compare_same(memcmp(f_cpu, f_dev, (size_t)(rows * cols) * sizeof(float)) == 0, "download_f32");

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
        b->dev->ops->gather_rows(b->dev, gathered.dev, source, width, o, first, count);
        compare(b, &gathered, 0.0, 0.0, shuffled ? "gather_rows (shuffled)" : "gather_rows (in order)");
        pair_free(b, &gathered);
        int32_t *labels_dev = b->dev->ops->alloc(b->dev, (size_t)count * sizeof(int32_t));
        b->dev->ops->gather_labels(b->dev, labels_dev, labels, o, first, count);
        /* The table has no int32 download: read the label bytes back as
         * reals of the backend's precision (a real-to-real copy keeps bits). */
        int32_t *back = malloc((size_t)count * sizeof(int32_t));
        int64_t reals = (int64_t)((size_t)count * sizeof(int32_t) / b->dev->real_size);
        if (b->dev->real_size == sizeof(float))
            b->dev->ops->download_f32(b->dev, (float *)back, labels_dev, reals);
        else
            b->dev->ops->download_f64(b->dev, (double *)back, labels_dev, reals);
        bool same = true;
        for (int64_t r = 0; r < count; r++)
            same = same && back[r] == labels[o ? o[first + r] : first + r];
        compare_same(same, shuffled ? "gather_labels (shuffled)" : "gather_labels (in order)");
        /* The same batches gathered on the device (backend.h, version 4)
         * from the set held in two blocks, by an int32 and an int64 order:
         * the host gather's bits. */
        if (ax_backend_supports(b->dev->ops, AX_BACKEND_FEATURE_DEVICE_DATA, NULL, 0)) {
            const int64_t split = 1234; /* rows of the first block */
            float *blocks[2] = {
                b->dev->ops->alloc(b->dev, (size_t)(split * width) * sizeof(float)),
                b->dev->ops->alloc(b->dev, (size_t)((source_rows - split) * width) * sizeof(float))};
            int32_t *labels_on = b->dev->ops->alloc(b->dev, (size_t)source_rows * sizeof(int32_t));
            void *order_on = b->dev->ops->alloc(b->dev, (size_t)source_rows * sizeof(int64_t));
            int32_t *narrow = malloc((size_t)source_rows * sizeof(int32_t));
            for (int64_t r = 0; r < source_rows; r++)
                narrow[r] = (int32_t)order[r];
            b->dev->ops->write_bytes(b->dev, blocks[0], source, (size_t)(split * width) * sizeof(float));
            b->dev->ops->write_bytes(b->dev, blocks[1], source + split * width,
                                     (size_t)((source_rows - split) * width) * sizeof(float));
            b->dev->ops->write_bytes(b->dev, labels_on, labels, (size_t)source_rows * sizeof(int32_t));
            for (int order_bytes = 4; order_bytes <= 8; order_bytes += 4) {
                if (order_bytes == 4)
                    b->dev->ops->write_bytes(b->dev, order_on, narrow,
                                             (size_t)source_rows * sizeof(int32_t));
                else
                    b->dev->ops->write_bytes(b->dev, order_on, order,
                                             (size_t)source_rows * sizeof(int64_t));
                const void *device_order = shuffled ? order_on : NULL;
                pair on_device = pair_from(b, NULL, count * width);
                b->cpu->ops->gather_rows(b->cpu, on_device.cpu, source, width, o, first, count);
                b->dev->ops->gather_rows_device(b->dev, on_device.dev, blocks[0], width, 0, split,
                                                device_order, order_bytes, first, count);
                b->dev->ops->gather_rows_device(b->dev, on_device.dev, blocks[1], width, split,
                                                source_rows - split, device_order, order_bytes,
                                                first, count);
                char what[96];
                snprintf(what, sizeof what, "gather_rows_device (%s, int%d order, 2 blocks)",
                         shuffled ? "shuffled" : "in order", 8 * order_bytes);
                compare(b, &on_device, 0.0, 0.0, what);
                pair_free(b, &on_device);
                b->dev->ops->gather_labels_device(b->dev, labels_dev, labels_on, device_order,
                                                  order_bytes, first, count);
                if (b->dev->real_size == sizeof(float))
                    b->dev->ops->download_f32(b->dev, (float *)back, labels_dev, reals);
                else
                    b->dev->ops->download_f64(b->dev, (double *)back, labels_dev, reals);
                same = true;
                for (int64_t r = 0; r < count; r++)
                    same = same && back[r] == labels[o ? o[first + r] : first + r];
                snprintf(what, sizeof what, "gather_labels_device (%s, int%d order)",
                         shuffled ? "shuffled" : "in order", 8 * order_bytes);
                compare_same(same, what);
            }
            free(narrow);
            b->dev->ops->free(b->dev, blocks[0]);
            b->dev->ops->free(b->dev, blocks[1]);
            b->dev->ops->free(b->dev, labels_on);
            b->dev->ops->free(b->dev, order_on);
        } else {
            printf("  gather_rows_device, gather_labels_device: not in this backend (optional: "
                   "batches are gathered from host memory)\n");
        }
        free(back);
        b->dev->ops->free(b->dev, labels_dev);
    }
    free(source);
    free(labels);
    free(order);
    free(values);
    free(cpu);
    free(dev);
    free(f_cpu);
    free(f_dev);
    pair_free(b, &outputs);
}

/* Device `index` of backend `name`. */
static ax_device device_of(const char *name, int index)
{
    ax_device device = {.index = index};
    snprintf(device.backend, sizeof device.backend, "%s", name);
    return device;
}

/* The optional image operations (backend.h), where the device has them:
 * copies and maxima bit for bit, sums within 1e-12 (float64) or 1e-5
 * (float32) relative; odd sizes, one channel and many (more than the CPU's
 * 256-channel chunks), strides of 1 to 3 (windows that overlap, touch or
 * leave gaps), padding, non-square windows, a window as large as the image.
 * Pooling also runs on values from a set of five, so that windows have ties
 * (the gradient goes to the first largest value, as on the CPU), and max
 * pooling on such values with some -0 and NaN among them. */
static void test_image_operations(const backends *b)
{
    const ax_backend_ops *dev = b->dev->ops;
    if (!dev->im2col || !dev->col2im || !dev->pool_forward || !dev->pool_backward ||
        !dev->transpose) {
        printf("  image operations: not in this backend (optional; conv and pooling layers are "
               "refused on it)\n");
        return;
    }
    const double sums = b->loose == 0.0                          ? 0.0
                        : b->dev->precision == AX_PRECISION_F64 ? 1e-12
                                                                 : 1e-5;
    const int64_t images = 3;
    /* height, width, channels, kernel h, w, stride, padding (out: computed) */
    const ax_window_geometry shapes[] = {
        {9, 7, 3, 3, 2, 2, 1, 0, 0},   {6, 6, 5, 3, 3, 1, 0, 0, 0},  {11, 13, 1, 5, 5, 1, 2, 0, 0},
        {5, 4, 70, 2, 2, 2, 0, 0, 0},  {7, 9, 2, 3, 3, 2, 0, 0, 0},  {8, 5, 300, 3, 1, 1, 1, 0, 0},
        {6, 3, 300, 2, 3, 1, 0, 0, 0}, {4, 4, 1, 4, 4, 1, 0, 0, 0},  {10, 11, 2, 2, 2, 3, 0, 0, 0},
        {12, 12, 1, 2, 2, 2, 0, 0, 0}, {5, 7, 4, 3, 3, 3, 2, 0, 0},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        ax_window_geometry geometry = shapes[s];
        ax_window_geometry *g = &geometry;
        g->out_height = (g->height + 2 * g->padding - g->kernel_height) / g->stride + 1;
        g->out_width = (g->width + 2 * g->padding - g->kernel_width) / g->stride + 1;
        char what[160];
        snprintf(what, sizeof what,
                                " (%lldx%lldx%lld, window %lldx%lld, stride %lld, padding %lld)",
                                (long long)g->height, (long long)g->width, (long long)g->channels,
                                (long long)g->kernel_height, (long long)g->kernel_width,
                                (long long)g->stride, (long long)g->padding);
        char name[200];
        const int64_t inputs = images * g->height * g->width * g->channels;
        const int64_t columns = images * g->out_height * g->out_width * g->channels *
                                g->kernel_height * g->kernel_width;
        const int64_t outputs = images * g->out_height * g->out_width * g->channels;
        pair x = pair_random(b, inputs, -1, 1), c = pair_random(b, columns, -1, 1);
        pair cols = pair_from(b, NULL, columns), back = pair_from(b, NULL, inputs);
        b->cpu->ops->im2col(b->cpu, g, x.cpu, cols.cpu, images);
        dev->im2col(b->dev, g, x.dev, cols.dev, images);
        snprintf(name, sizeof name, "im2col%s", what);
        compare(b, &cols, 0.0, 1.0, name);
        b->cpu->ops->col2im(b->cpu, g, c.cpu, back.cpu, images);
        dev->col2im(b->dev, g, c.dev, back.dev, images);
        snprintf(name, sizeof name, "col2im%s", what);
        compare(b, &back, sums, 1.0, name);
        if (g->padding == 0) {
            double *ties = random_values(inputs, 0, 1);
            for (int64_t i = 0; i < inputs; i++)
                ties[i] = floor(ties[i] * 5) / 2 - 1; /* -1, -0.5, 0, 0.5, 1 */
            pair tied = pair_from(b, ties, inputs);
            double *u = random_values(inputs, 0, 1);
            for (int64_t i = 0; i < inputs; i++) /* a NaN wins a max window, as on the CPU */
                ties[i] = u[i] < 0.1 ? NAN : u[i] < 0.15 ? -0.0 : ties[i];
            free(u);
            pair nans = pair_from(b, ties, inputs);
            free(ties);
            pair y = pair_from(b, NULL, outputs), dy = pair_random(b, outputs, -1, 1);
            for (int variant = 0; variant < 5; variant++) {
                const bool max = variant & 1 || variant == 4;
                const pair *in = variant == 4 ? &nans : variant & 2 ? &tied : &x;
                const char *kind = max ? "max" : "mean";
                const char *values = variant == 4 ? ", ties, -0 and NaN" : variant & 2 ? ", ties" : "";
                b->cpu->ops->pool_forward(b->cpu, max, g, in->cpu, y.cpu, images);
                dev->pool_forward(b->dev, max, g, in->dev, y.dev, images);
                snprintf(name, sizeof name, "pool_forward (%s%s)%s", kind, values, what);
                compare(b, &y, max ? 0.0 : sums, 1.0, name);
                b->cpu->ops->pool_backward(b->cpu, max, g, in->cpu, dy.cpu, back.cpu, images);
                dev->pool_backward(b->dev, max, g, in->dev, dy.dev, back.dev, images);
                snprintf(name, sizeof name, "pool_backward (%s%s)%s", kind, values, what);
                compare(b, &back, sums, 1.0, name);
            }
            pair_free(b, &tied);
            pair_free(b, &nans);
            pair_free(b, &y);
            pair_free(b, &dy);
        }
        b->cpu->ops->transpose(b->cpu, x.cpu, back.cpu, images, g->height, g->width * g->channels);
        dev->transpose(b->dev, x.dev, back.dev, images, g->height, g->width * g->channels);
        snprintf(name, sizeof name, "transpose%s", what);
        compare(b, &back, 0.0, 1.0, name);
        pair_free(b, &x);
        pair_free(b, &c);
        pair_free(b, &cols);
        pair_free(b, &back);
    }
}

static void test_operations(ax_precision precision, ax_device device, bool exact)
{
    backends b = {.loose = exact ? 0.0 : precision == AX_PRECISION_F64 ? 1e-12 : 2e-5,
                  .exact = exact, .u = precision == AX_PRECISION_F64 ? 0x1p-53 : 0x1p-24};
    CHECK_OK(ax_backend_create(precision, ax_device_cpu(), &b.cpu));
    CHECK_OK(ax_backend_create(precision, device, &b.dev));
    if (b.cpu && b.dev) {
        CHECK(b.cpu->host_memory && b.dev->precision == precision && b.dev->ops->name);
        test_gemm(&b);
        test_bias_activation(&b);
        test_activation_backward(&b);
        test_losses(&b);
        test_dropout(&b);
        test_awkward_shapes(&b);
        test_vector_ops(&b);
        test_reduce(&b);
        test_optimizers(&b);
        test_argmax_and_transfers(&b);
        test_image_operations(&b);
        b.dev->ops->synchronize(b.dev);
        CHECK_OK(b.dev->ops->status(b.dev));
    }
    if (b.cpu)
        b.cpu->ops->destroy(b.cpu);
    if (b.dev)
        b.dev->ops->destroy(b.dev);
}

/* ------------------------------------------------------ whole network */

typedef enum { TASK_SOFTMAX, TASK_SIGMOID, TASK_REGRESSION, TASK_CONV } task;

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

static ax_net_config net_config(task kind, ax_precision precision, ax_device device)
{
    ax_net_config config = ax_net_defaults();
    const char *layers =
        kind == TASK_SOFTMAX   ? "33:tanh,40:relu,7:softmax"
        : kind == TASK_SIGMOID ? "24:sigmoid,5:sigmoid"
        : kind == TASK_CONV    ? "conv:5x3x3/p1:relu,maxpool:2/s1,conv:4x3x2/s2:tanh,avgpool:2,9:relu,"
                                 "4:softmax"
                               : "31:relu,3";
    CHECK_OK(ax_layers_parse(layers, &config));
    config.input_width = 19;
    if (kind == TASK_CONV) { /* 7x8 images of 2 channels */
        config.input_shape[0] = 7, config.input_shape[1] = 8, config.input_shape[2] = 2;
        config.input_width = 7 * 8 * 2;
    }
    config.precision = precision;
    config.seed = 7;
    config.device = device;
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

/* One whole-network comparison: `difference` within `tol` (0: none). */
static void compare_network(double difference, double tol, const char *what, const char *detail)
{
    tally.compared++;
    if (!(difference <= tol))
        differs(true, what, "%s: a relative difference of %.3g (tolerance %g)", detail, difference,
                tol);
}

/* Two bf16 results, each `error` (relative) from the float32 one, may
 * differ by both errors; three times it, with a floor for a comparison
 * where bf16 happens to land on float32's result. */
static double bf16_bound(double error)
{
    return 3.0 * error + 1e-3;
}

static void test_network(task kind, ax_precision precision, ax_device device, bool exact)
{
    /* bf16 has no fixed tolerance: each side is within bf16's own error of
     * the float32 result, so the two may differ by both errors. A float32
     * net on the CPU (the same initial weights) measures that error at each
     * comparison, and the device must lie within bf16_bound of the CPU's
     * bf16 (measured on an H200: gradients 3.5-5.9 % apart, where a sum's
     * cancellation magnifies the roundings). */
    const bool bf16 = precision == AX_PRECISION_BF16;
    const double tol = exact ? 0.0 : precision == AX_PRECISION_F64 ? 1e-5 : 1e-3;
    const char *name = kind == TASK_SOFTMAX   ? "softmax + cross-entropy"
                       : kind == TASK_SIGMOID ? "sigmoid + binary cross-entropy"
                       : kind == TASK_CONV    ? "convolutions and pooling"
                                              : "regression (mse)";
    ax_net_config cpu_config = net_config(kind, precision, ax_device_cpu());
    ax_net_config dev_config = net_config(kind, precision, device);
    int64_t outputs = ax_net_config_output_width(&cpu_config);
    ax_dataset *data = make_data(kind, 300, cpu_config.input_width, outputs);
    ax_net_config f32_config = net_config(kind, AX_PRECISION_F32, ax_device_cpu());
    ax_net *cpu = NULL, *dev = NULL, *f32 = NULL;
    CHECK_OK(ax_net_create(&cpu_config, &cpu));
    if (bf16)
        CHECK_OK(ax_net_create(&f32_config, &f32));
    if (kind == TASK_CONV) {
        /* The image operations are optional (backend.h): a device without
         * them refuses the net, which test_image_operations reported. */
        const ax_status status = ax_net_create(&dev_config, &dev);
        if (status == AX_STATUS_UNSUPPORTED && strstr(ax_error_message(), "is not supported on")) {
            printf("  %s: refused on this device (%s)\n", name, ax_error_message());
            goto done;
        }
        CHECK_OK(status);
    } else {
        CHECK_OK(ax_net_create(&dev_config, &dev));
    }
    if (!data || !cpu || !dev || (bf16 && !f32))
        goto done;
    int64_t count = ax_net_parameter_count(cpu);
    double *g_cpu = malloc((size_t)count * sizeof(double));
    double *g_dev = malloc((size_t)count * sizeof(double));
    double *g_f32 = malloc((size_t)count * sizeof(double));
    char what[160];

    /* Same initial weights: drawn on the host, uploaded. */
    ax_net_parameters_get(cpu, g_cpu);
    ax_net_parameters_get(dev, g_dev);
    snprintf(what, sizeof what, "%s: initial weights", name);
    compare_network(relative_difference(g_cpu, g_dev, count),
                    exact || precision == AX_PRECISION_F64 ? 0.0 : 1e-7, what, "the weights");

    const ax_regularization settings[] = {
        {.size = sizeof(ax_regularization)}, {.size = sizeof(ax_regularization), .l2 = 1e-3}, {.size = sizeof(ax_regularization), .l2 = 1e-4, .dropout = 0.25, .dropout_key = 99}};
    static const char *const setting_names[] = {"plain", "L2", "L2 + dropout"};
    for (int s = 0; s < 3; s++) {
        if (kind == TASK_SIGMOID && s == 2)
            continue; /* one hidden layer: dropout covered by the others */
        double loss_cpu = 0, loss_dev = 0;
        /* Rows 10 to 290: a batch that does not start at the first row. */
        CHECK_OK(ax_net_loss_gradient(cpu, data, 10, 280, &settings[s], &loss_cpu, g_cpu));
        CHECK_OK(ax_net_loss_gradient(dev, data, 10, 280, &settings[s], &loss_dev, g_dev));
        double loss_tol = tol, gradient_tol = tol;
        if (bf16) {
            double loss_f32 = 0;
            CHECK_OK(ax_net_loss_gradient(f32, data, 10, 280, &settings[s], &loss_f32, g_f32));
            loss_tol = bf16_bound(fabs(loss_cpu - loss_f32) / fabs(loss_f32));
            gradient_tol = bf16_bound(relative_difference(g_f32, g_cpu, count));
        }
        snprintf(what, sizeof what, "%s, %s: ax_net_loss_gradient", name, setting_names[s]);
        compare_network(fabs(loss_cpu - loss_dev) / fabs(loss_cpu), loss_tol, what, "the loss");
        compare_network(relative_difference(g_cpu, g_dev, count), gradient_tol, what, "the gradient");
    }

    /* A few epochs of training, shuffled mini-batches. */
    static const ax_optimizer_kind optimizers[] = {AX_OPTIMIZER_SGD, AX_OPTIMIZER_ADAM};
    for (int o = 0; o < 2; o++) {
        ax_net *a = NULL, *b = NULL, *r = NULL;
        CHECK_OK(ax_net_create(&cpu_config, &a));
        CHECK_OK(ax_net_create(&dev_config, &b));
        if (bf16)
            CHECK_OK(ax_net_create(&f32_config, &r));
        if (a && b && (!bf16 || r)) {
            ax_train_config train = ax_train_defaults();
            train.optimizer = optimizers[o];
            train.learning_rate = o == 0 ? 0.05 : 1e-3;
            train.batch_size = 64;
            train.epochs = 3;
            train.l2 = 1e-4;
            ax_train_summary summary_a = ax_train_summary_empty(), summary_b = ax_train_summary_empty();
            CHECK_OK(ax_train(a, data, NULL, NULL, &train, &summary_a));
            CHECK_OK(ax_train(b, data, NULL, NULL, &train, &summary_b));
            ax_net_parameters_get(a, g_cpu);
            ax_net_parameters_get(b, g_dev);
            double weights_tol = tol;
            if (bf16) {
                ax_train_summary summary_r = ax_train_summary_empty();
                CHECK_OK(ax_train(r, data, NULL, NULL, &train, &summary_r));
                ax_net_parameters_get(r, g_f32);
                weights_tol = bf16_bound(relative_difference(g_f32, g_cpu, count));
            }
            snprintf(what, sizeof what, "%s: 3 epochs of %s", name, o == 0 ? "sgd" : "adam");
            compare_network(relative_difference(g_cpu, g_dev, count), weights_tol, what, "the weights");
        }
        ax_net_free(a);
        ax_net_free(b);
        ax_net_free(r);
    }

    /* Evaluation and prediction read results back through the same paths. */
    ax_evaluation e_cpu = ax_evaluation_empty(), e_dev = ax_evaluation_empty();
    CHECK_OK(ax_net_evaluate(cpu, data, &e_cpu));
    CHECK_OK(ax_net_evaluate(dev, data, &e_dev));
    double evaluation_tol = tol;
    if (bf16) {
        ax_evaluation e_f32 = ax_evaluation_empty();
        CHECK_OK(ax_net_evaluate(f32, data, &e_f32));
        evaluation_tol = bf16_bound(fabs(e_cpu.loss - e_f32.loss) / fmax(fabs(e_f32.loss), 1e-30));
        ax_evaluation_free(&e_f32);
    }
    snprintf(what, sizeof what, "%s: ax_net_evaluate", name);
    compare_network(fabs(e_cpu.loss - e_dev.loss) / fmax(fabs(e_cpu.loss), 1e-30), evaluation_tol,
                    what, "the loss");
    if (kind != TASK_REGRESSION) /* two rows of 300 may fall either side of a tie */
        compare_network(fabs(e_cpu.accuracy - e_dev.accuracy),
                        exact ? 0.0 : (precision == AX_PRECISION_BF16 ? 6.0 : 2.0) / 300.0, what,
                        "the accuracy");
    ax_evaluation_free(&e_cpu);
    ax_evaluation_free(&e_dev);
    free(g_cpu);
    free(g_dev);
    free(g_f32);
done:
    ax_net_free(cpu);
    ax_net_free(dev);
    ax_net_free(f32);
    ax_net_config_release(&cpu_config);
    ax_net_config_release(&dev_config);
    ax_net_config_release(&f32_config);
    ax_dataset_free(data);
}

/* bf16 GEMMs on a device that has them, against the CPU's bf16 backend:
 * both multiply the bfloat16 roundings of float32 operands and sum in
 * float32, in other orders. Bound per element: each product's two operand
 * roundings (2^-8 each, were one side to truncate rather than round to
 * nearest), the float32 sums of k terms on both sides, and C's scaling. */
static void test_bf16_gemm(ax_device device)
{
    backends b = {.loose = 0.0, .u = 0x1p-24};
    CHECK_OK(ax_backend_create(AX_PRECISION_BF16, ax_device_cpu(), &b.cpu));
    CHECK_OK(ax_backend_create(AX_PRECISION_BF16, device, &b.dev));
    if (!b.cpu || !b.dev)
        goto done;
    const int64_t m = 67, n = 45, k = 130;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            double *av = random_values(m * k, -1, 1), *bv = random_values(k * n, -1, 1);
            double *cv = random_values(m * n, -1, 1);
            pair a = pair_from(&b, av, m * k), bb = pair_from(&b, bv, k * n), c = pair_from(&b, cv, m * n);
            const int64_t lda = ta ? m : k, ldb = tb ? k : n;
            const double alpha = 0.7, beta = 0.3;
            b.cpu->ops->gemm(b.cpu, ta, tb, m, n, k, alpha, a.cpu, lda, bb.cpu, ldb, beta, c.cpu, n);
            b.dev->ops->gemm(b.dev, ta, tb, m, n, k, alpha, a.dev, lda, bb.dev, ldb, beta, c.dev, n);
            double *bound = malloc((size_t)(m * n) * sizeof(double));
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double magnitude = 0.0;
                    for (int64_t p = 0; p < k; p++)
                        magnitude += fabs(av[ta ? p * m + i : i * k + p]) *
                                     fabs(bv[tb ? j * k + p : p * n + j]);
                    bound[i * n + j] = alpha * magnitude * (2.0 * 0x1p-8 + 2.0 * (double)k * b.u) +
                                       fabs(beta * cv[i * n + j]) * 4.0 * b.u;
                }
            char what[64];
            snprintf(what, sizeof what, "bf16 gemm (trans_a %d, trans_b %d)", ta, tb);
            compare_bounded(&b, &c, bound, what);
            free(bound);
            free(av);
            free(bv);
            free(cv);
            pair_free(&b, &a);
            pair_free(&b, &bb);
            pair_free(&b, &c);
        }
    b.dev->ops->synchronize(b.dev);
    CHECK_OK(b.dev->ops->status(b.dev));
done:
    if (b.cpu)
        b.cpu->ops->destroy(b.cpu);
    if (b.dev)
        b.dev->ops->destroy(b.dev);
}

/* ------------------------------------------------------------- driver */

/* Asking backend `name` for a device it does not have is refused with a
 * clear message, whether or not the build has it (`loaded`) and whatever
 * its `devices`; `failure` is the loader's message when it is not loaded. */
static void check_refusals(const char *name, bool loaded, int devices, const char *failure)
{
    ax_net_config config = net_config(TASK_SOFTMAX, AX_PRECISION_F32, device_of(name, -2));
    ax_net *net = NULL;
    char text[512];
    snprintf(text, sizeof text, "device %s:-2", name);
    CHECK_FAILS(ax_net_create(&config, &net), AX_STATUS_BAD_ARGUMENT, text);
    const int missing = devices + 3;
    config.device = device_of(name, missing);
    ax_status status = ax_net_create(&config, &net);
    /* A plugin says "no NAME device N" (CUDA: "no CUDA device 3"); without
     * one the loader says why ("this build has no CUDA backend ..."). */
    if (loaded)
        snprintf(text, sizeof text, "no %s device %d", name, missing);
    else
        snprintf(text, sizeof text, "%.500s", failure);
    if (status != AX_STATUS_UNSUPPORTED || !strcasestr(ax_error_message(), text)) {
        fprintf(stderr, "%s: device %d: expected AX_STATUS_UNSUPPORTED and \"%s\", got %s (%s)\n",
                name, missing, text, ax_status_name(status), ax_error_message());
        test_failures++;
    }
    CHECK(net == NULL);
    ax_net_config_release(&config);
    CHECK(ax_device_info(device_of(name, missing), text, sizeof text) == AX_STATUS_UNSUPPORTED);
    ax_device_properties properties;
    CHECK(ax_device_properties_get(device_of(name, missing), &properties) == AX_STATUS_UNSUPPORTED);
}

/* Every check on device `index` of backend `name`, both precisions. */
static void test_device(const char *name, int index, bool exact)
{
    const ax_device device = device_of(name, index);
    /* The enumeration's structured facts agree with the line of
     * ax_device_info and name the device they describe. */
    ax_device_properties properties;
    char line[512];
    CHECK_OK(ax_device_properties_get(device, &properties));
    CHECK_OK(ax_device_info(device, line, sizeof line));
    CHECK(strcmp(properties.description, line) == 0);
    CHECK(strcmp(properties.device.backend, name) == 0 && properties.device.index == index);
    char info[256] = "";
    CHECK_OK(ax_device_info(device, info, sizeof info));
    ax_device_format(device, tally.device, sizeof tally.device);
    printf("%s (%s): compared with the CPU %s\n", tally.device, info,
           exact ? "bit for bit (the CPU's own code behind the plugin loader)"
                 : "within each operation's tolerance");
    for (int p = 0; p < 2; p++) {
        const ax_precision precision = p == 0 ? AX_PRECISION_F64 : AX_PRECISION_F32;
        tally.precision = p == 0 ? "f64" : "f32";
        ax_rng_seed(&rng, 2024); /* each device and precision sees the same inputs */
        const int failures = test_failures, compared = tally.compared;
        const int expected = tally.expected_differed, network = tally.network_differed;
        test_operations(precision, device, exact);
        const int operations = tally.compared - compared;
        test_network(TASK_SOFTMAX, precision, device, exact);
        test_network(TASK_SIGMOID, precision, device, exact);
        test_network(TASK_REGRESSION, precision, device, exact);
        test_network(TASK_CONV, precision, device, exact);
        printf("%s %s: %d comparisons of operations, %d of whole networks: %s\n", tally.device,
               tally.precision, operations, tally.compared - compared - operations,
               test_failures > failures ? "FAILED" : "passed");
        if (tally.expected) {
            printf("%s %s: %d comparisons of %s and %d of whole networks caught the wrong %s\n",
                   tally.device, tally.precision, tally.expected_differed - expected,
                   tally.expected, tally.network_differed - network, tally.expected);
            if (tally.expected_differed == expected || tally.network_differed == network) {
                fprintf(stderr, "%s %s: the comparisons did not catch the wrong %s\n",
                        tally.device, tally.precision, tally.expected);
                test_failures++;
            }
        }
    }
    if (properties.capabilities & AX_DEVICE_CAPABILITY_BF16) {
        tally.precision = "bf16";
        ax_rng_seed(&rng, 2024);
        const int failures = test_failures, compared = tally.compared;
        test_bf16_gemm(device);
        const int operations = tally.compared - compared;
        test_network(TASK_SOFTMAX, AX_PRECISION_BF16, device, false);
        test_network(TASK_CONV, AX_PRECISION_BF16, device, false);
        printf("%s bf16: %d comparisons of GEMMs, %d of whole networks: %s\n", tally.device,
               operations, tally.compared - compared - operations,
               test_failures > failures ? "FAILED" : "passed");
    }
}

/* Checks every device of backend `name`; the number compared, or 0 with
 * the reason in `skipped`. */
static int test_backend(const char *name, char *skipped, size_t capacity)
{
    bool exact = false;
    for (size_t i = 0; i < sizeof test_plugins / sizeof *test_plugins; i++)
        if (strcmp(name, test_plugins[i].name) == 0) {
            exact = test_plugins[i].exact;
            char variable[64];
            snprintf(variable, sizeof variable, "AXON_%s_PLUGIN", name);
            for (char *c = variable; *c; c++)
                *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
            setenv(variable, AXON_TEST_PLUGIN, 0); /* one already set wins */
        }
    const ax_backend_plugin *plugin = NULL;
    const bool loaded = ax_backend_plugin_get(name, &plugin) == AX_STATUS_OK;
    char failure[512];
    snprintf(failure, sizeof failure, "%s", loaded ? "" : ax_error_message());
    const int devices = ax_device_count(name);
    check_refusals(name, loaded, devices, failure);
    if (!loaded)
        snprintf(skipped, capacity, "%s: %s", name, failure);
    else if (devices < 1)
        snprintf(skipped, capacity, "%s: the plugin found no device (ax_device_count(\"%s\") "
                 "is 0): CPU/%s parity not checked", name, name, name);
    else
        for (int index = 0; index < devices; index++)
            test_device(name, index, exact);
    return devices > 0 && loaded ? devices : 0;
}

int main(int argc, char **argv)
{
    const char *named = NULL;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--expect-mismatch") == 0 && i + 1 < argc)
            tally.expected = argv[++i];
        else if (argv[i][0] != '-' && !named)
            named = argv[i];
        else {
            fprintf(stderr, "usage: test_backend_ops [BACKEND] [--expect-mismatch OPERATION]\n");
            return 2;
        }
    char names[256];
    snprintf(names, sizeof names, "%s", named ? named : AXON_TEST_BACKENDS);
    int compared = 0, skips = 0;
    char skipped[4][768], *state = NULL;
    for (char *name = strtok_r(names, " ", &state); name; name = strtok_r(NULL, " ", &state)) {
        char why[768] = "";
        const int devices = test_backend(name, why, sizeof why);
        compared += devices;
        if (devices == 0 && skips < 4)
            snprintf(skipped[skips++], sizeof skipped[0], "%s", why);
    }
    if (tally.expected && compared == 0) {
        fprintf(stderr, "test_backend_ops: --expect-mismatch %s: no device was compared, so "
                "nothing shows the comparisons catch a wrong %s\n", tally.expected,
                tally.expected);
        test_failures++;
    }
    if (test_failures || compared > 0) {
        for (int i = 0; i < skips; i++)
            printf("skipped %s\n", skipped[i]);
        return test_finish("test_backend_ops");
    }
    for (int i = 0; i + 1 < skips; i++)
        printf("SKIPPED: %s\n", skipped[i]);
    TEST_SKIP("%s", skips > 0 ? skipped[skips - 1] : "no backend named");
}
