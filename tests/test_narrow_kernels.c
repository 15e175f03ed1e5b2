/* test_narrow_kernels.c: the CPU backend's elementwise and reduction kernels
 * (src/backend/cpu/cpu_kernels.inc) against plain float64 loops. Narrow
 * layers (fewer than 64 columns) run over groups of whole rows as one flat
 * span and sum columns in chunks, wide ones row by row: so every width from
 * 1 to 20 and wide ones (31 to 128), row counts of 1 and of non-multiples of
 * any group or chunk, sizes with and without threads, both precisions, NaN
 * and Inf in the inputs, and 1 and 2 threads giving the same bits (1, 2 and
 * 3 for the backward passes, and LeNet's convolution shapes); and
 * l1_penalty's sum and subgradient around its chunk, thread and stack sizes. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "test_reference.h"
#include "test_util.h"

typedef struct {
    ax_backend *backend;
    const ax_backend_ops *ops;
    double eps; /* relative rounding of the precision */
    const char *name;
} context;

/* The backend array of n values, rounded to its precision. */
static void *upload(const context *cx, const double *values, int64_t n)
{
    void *buffer = cx->ops->alloc(cx->backend, (size_t)(n > 0 ? n : 1) * cx->backend->real_size);
    if (buffer)
        cx->ops->upload_f64(cx->backend, buffer, values, n);
    return buffer;
}

/* values rounded to the backend's precision, in place. */
static void round_to_precision(const context *cx, double *values, int64_t n)
{
    if (cx->backend->precision == AX_PRECISION_F32)
        for (int64_t i = 0; i < n; i++)
            values[i] = (double)(float)values[i];
}

static void download(const context *cx, double *values, const void *buffer, int64_t n)
{
    cx->ops->download_f64(cx->backend, values, buffer, n);
}

static int failures_reported;

/* got against want: NaN for NaN, the same infinity, else within
 * tolerance * (1 + |want|). Reports the first few failures in detail. */
static bool close_enough(double got, double want, double tolerance)
{
    if (isnan(want))
        return isnan(got);
    if (isinf(want))
        return got == want;
    return fabs(got - want) <= tolerance * (1.0 + fabs(want));
}

#define CHECK_CLOSE(got, want, tolerance, what, rows, cols, index)                           \
    do {                                                                                     \
        if (!close_enough((got), (want), (tolerance))) {                                     \
            if (failures_reported++ < 20)                                                    \
                fprintf(stderr, "%s:%d: %s %s (%lld x %lld) [%lld]: got %.9g, want %.9g\n",  \
                        __FILE__, __LINE__, cx->name, (what), (long long)(rows),             \
                        (long long)(cols), (long long)(index), (got), (want));               \
            test_failures++;                                                                 \
        }                                                                                    \
    } while (0)

/* n values of seed scaled by scale, with NaN, +Inf and -Inf at three
 * scattered places when specials is set. */
static double *make_values(int64_t n, uint64_t seed, double scale, bool specials)
{
    double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!v)
        return NULL;
    for (int64_t i = 0; i < n; i++)
        v[i] = scale * value_at((uint64_t)i, seed);
    if (specials && n >= 3) {
        v[(7919 * seed) % (uint64_t)n] = NAN;
        v[(7919 * seed + 1 + (uint64_t)n / 3) % (uint64_t)n] = INFINITY;
        v[(7919 * seed + 2 + 2 * (uint64_t)n / 3) % (uint64_t)n] = -INFINITY;
    }
    return v;
}

static const char *const activation_names[] = {"identity", "sigmoid", "tanh", "relu", "softmax"};

static void set_threads(int threads) { omp_set_num_threads(threads); }

/* z = act(z + bias), row by row in float64 (softmax as the kernel does it:
 * the first entry starts the maximum, so NaN there makes the row NaN). */
static void reference_bias_activation(ax_activation act, double *z, const double *bias,
                                      int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        double *row = z + r * cols;
        for (int64_t c = 0; c < cols; c++)
            row[c] += bias[c];
        if (act == AX_ACT_SOFTMAX) {
            double largest = row[0], sum = 0;
            for (int64_t c = 0; c < cols; c++)
                largest = row[c] > largest ? row[c] : largest;
            for (int64_t c = 0; c < cols; c++)
                sum += row[c] = exp(row[c] - largest);
            for (int64_t c = 0; c < cols; c++)
                row[c] /= sum;
            continue;
        }
        for (int64_t c = 0; c < cols; c++) {
            const double v = row[c];
            switch (act) {
            case AX_ACT_SIGMOID: row[c] = 1.0 / (1.0 + exp(-v)); break;
            case AX_ACT_TANH: row[c] = tanh(v); break;
            case AX_ACT_RELU: row[c] = v > 0 ? v : (v == v ? 0.0 : v); break;
            default: break;
            }
        }
    }
}

static void check_bias_activation(const context *cx, ax_activation act, int64_t rows,
                                  int64_t cols, bool specials)
{
    const int64_t n = rows * cols;
    double *z = make_values(n, 11 + (uint64_t)cols, 3.0, specials);
    double *bias = make_values(cols, 12, 1.0, false);
    double *want = malloc(sizeof(double) * (size_t)n);
    double *got[2] = {malloc(sizeof(double) * (size_t)n), malloc(sizeof(double) * (size_t)n)};
    CHECK(z && bias && want && got[0] && got[1]);
    if (!(z && bias && want && got[0] && got[1]))
        goto done;
    round_to_precision(cx, z, n);
    round_to_precision(cx, bias, cols);
    void *device_bias = upload(cx, bias, cols);
    for (int threads = 1; threads <= 2; threads++) {
        void *device_z = upload(cx, z, n);
        CHECK(device_z && device_bias);
        if (!device_z || !device_bias)
            break;
        set_threads(threads);
        cx->ops->bias_activation(cx->backend, act, device_z, device_bias, rows, cols);
        download(cx, got[threads - 1], device_z, n);
        cx->ops->free(cx->backend, device_z);
    }
    cx->ops->free(cx->backend, device_bias);
    if (memcmp(got[0], got[1], sizeof(double) * (size_t)n) != 0) {
        fprintf(stderr, "%s bias_activation %s (%lld x %lld): 1 and 2 threads differ\n", cx->name,
                activation_names[act], (long long)rows, (long long)cols);
        test_failures++;
    }
    memcpy(want, z, sizeof(double) * (size_t)n);
    reference_bias_activation(act, want, bias, rows, cols);
    /* z + bias rounds once in the precision, then the function's own error */
    const double tolerance = 16 * cx->eps * (act == AX_ACT_SOFTMAX ? 8 : 1);
    for (int64_t i = 0; i < n; i++)
        CHECK_CLOSE(got[0][i], want[i], tolerance, activation_names[act], rows, cols, i);
done:
    free(z), free(bias), free(want), free(got[0]), free(got[1]);
}

/* The activation's derivative at y = a * s, times d, in float64. */
static double reference_derivative(ax_activation act, double d, double a, double s)
{
    const double y = s * a;
    switch (act) {
    case AX_ACT_SIGMOID: return d * y * (1.0 - y);
    case AX_ACT_TANH: return d * (1.0 - y * y);
    case AX_ACT_RELU: return a > 0 ? d : 0.0;
    default: return d;
    }
}

/* Column sums in float64 of delta, and per column the sum of |terms|. */
static void reference_column_sums(const double *delta, int64_t rows, int64_t cols, double *sums,
                                  double *magnitude)
{
    for (int64_t c = 0; c < cols; c++)
        sums[c] = magnitude[c] = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            sums[c] += delta[r * cols + c];
            magnitude[c] += fabs(delta[r * cols + c]);
        }
}

/* A column sum in double, rounded once to the precision: within half an
 * ulp of the result plus double rounding of any summation order. */
static bool sum_close(const context *cx, double got, double want, double magnitude, int64_t rows)
{
    if (isnan(want))
        return isnan(got);
    if (isinf(want) || isinf(magnitude))
        return got == want;
    return fabs(got - want) <= cx->eps * fabs(want) + 4e-16 * (double)rows * magnitude + 1e-300;
}

/* activation_backward (column_sums when act is negative) at one shape. */
static void check_backward(const context *cx, int act_or_sums, int64_t rows, int64_t cols,
                           double a_scale, bool specials)
{
    const bool sums_only = act_or_sums < 0;
    const ax_activation act = sums_only ? AX_ACT_IDENTITY : (ax_activation)act_or_sums;
    const int64_t n = rows * cols;
    double *delta = make_values(n, 21 + (uint64_t)cols, 2.0, specials);
    double *a = make_values(n, 22, 1.0, false);
    /* on 1, 2 and 3 threads */
    double *got[3] = {malloc(sizeof(double) * (size_t)n), malloc(sizeof(double) * (size_t)n),
                      malloc(sizeof(double) * (size_t)n)};
    double *gradient[3] = {malloc(sizeof(double) * (size_t)cols),
                           malloc(sizeof(double) * (size_t)cols),
                           malloc(sizeof(double) * (size_t)cols)};
    double *want_sums = malloc(sizeof(double) * (size_t)cols);
    double *magnitude = malloc(sizeof(double) * (size_t)cols);
    CHECK(delta && a && got[0] && got[1] && got[2] && gradient[0] && gradient[1] && gradient[2] &&
          want_sums && magnitude);
    if (!(delta && a && got[0] && got[1] && got[2] && gradient[0] && gradient[1] && gradient[2] &&
          want_sums && magnitude))
        goto done;
    for (int64_t i = 0; i < n; i++) /* sigmoid outputs lie in (0, 1) */
        a[i] = act == AX_ACT_SIGMOID ? 0.5 + 0.5 * a[i] : a[i];
    if (specials && n >= 4 && act == AX_ACT_RELU)
        a[n / 2] = NAN; /* relu' at NaN is 0: y > 0 is false */
    round_to_precision(cx, delta, n);
    round_to_precision(cx, a, n);
    void *device_a = upload(cx, a, n);
    for (int threads = 1; threads <= 3; threads++) {
        void *device_delta = upload(cx, delta, n);
        void *device_gradient = cx->ops->alloc(cx->backend, (size_t)cols * cx->backend->real_size);
        CHECK(device_delta && device_gradient && device_a);
        if (!device_delta || !device_gradient || !device_a)
            break;
        set_threads(threads);
        if (sums_only)
            cx->ops->column_sums(cx->backend, device_delta, device_gradient, rows, cols);
        else
            cx->ops->activation_backward(cx->backend, act, device_delta, device_a, a_scale,
                                         device_gradient, rows, cols);
        download(cx, got[threads - 1], device_delta, n);
        download(cx, gradient[threads - 1], device_gradient, cols);
        cx->ops->free(cx->backend, device_delta);
        cx->ops->free(cx->backend, device_gradient);
    }
    cx->ops->free(cx->backend, device_a);
    const char *what = sums_only ? "column_sums" : activation_names[act];
    for (int t = 1; t < 3; t++)
        if (memcmp(got[0], got[t], sizeof(double) * (size_t)n) != 0 ||
            memcmp(gradient[0], gradient[t], sizeof(double) * (size_t)cols) != 0) {
            fprintf(stderr, "%s backward %s (%lld x %lld): 1 and %d threads differ\n", cx->name,
                    what, (long long)rows, (long long)cols, t + 1);
            test_failures++;
        }
    for (int64_t i = 0; i < n; i++) {
        const double want = sums_only ? delta[i] : reference_derivative(act, delta[i], a[i], a_scale);
        CHECK_CLOSE(got[0][i], want, 8 * cx->eps, what, rows, cols, i);
    }
    /* the bias gradient: the column sums of the delta the kernel wrote */
    reference_column_sums(got[0], rows, cols, want_sums, magnitude);
    for (int64_t c = 0; c < cols; c++)
        if (!sum_close(cx, gradient[0][c], want_sums[c], magnitude[c], rows)) {
            if (failures_reported++ < 20)
                fprintf(stderr, "%s %s bias gradient (%lld x %lld) column %lld: got %.17g, want %.17g\n",
                        cx->name, what, (long long)rows, (long long)cols, (long long)c,
                        gradient[0][c], want_sums[c]);
            test_failures++;
        }
done:
    free(delta), free(a), free(got[0]), free(got[1]), free(got[2]);
    free(gradient[0]), free(gradient[1]), free(gradient[2]);
    free(want_sums), free(magnitude);
}

/* binary_cross_entropy with class labels or with targets, with and without delta. */
static void check_binary_cross_entropy(const context *cx, int64_t rows, int64_t cols,
                                       bool with_labels, bool with_delta, bool with_nan)
{
    const int64_t n = rows * cols;
    const double scale = 1.0 / (double)rows, floor_value = cx->backend->precision == AX_PRECISION_F32
                                                               ? 1.1754943508222875e-38
                                                               : 2.2250738585072014e-308;
    double *p = make_values(n, 31, 1.0, false);
    double *y = make_values(n, 32, 1.0, false);
    int32_t *labels = malloc(sizeof(int32_t) * (size_t)rows);
    double *got[2] = {malloc(sizeof(double) * (size_t)n), malloc(sizeof(double) * (size_t)n)};
    CHECK(p && y && labels && got[0] && got[1]);
    if (!(p && y && labels && got[0] && got[1]))
        goto done;
    for (int64_t i = 0; i < n; i++) {
        p[i] = 0.5 + 0.5 * p[i];
        y[i] = 0.5 + 0.5 * y[i];
        if (i % 17 == 3)
            p[i] = i % 2 ? 1.0 : 0.0; /* confident answers: the floor keeps the loss finite */
        if (i % 5 == 1)
            y[i] = i % 2 ? 1.0 : 0.0;
    }
    if (with_nan && n >= 2)
        p[n / 2] = NAN;
    for (int64_t r = 0; r < rows; r++)
        labels[r] = (int32_t)((uint64_t)(value_at((uint64_t)r, 33) * 1e6 + 1e6) % (uint64_t)cols);
    if (with_labels)
        for (int64_t i = 0; i < n; i++)
            y[i] = labels[i / cols] == i % cols ? 1.0 : 0.0;
    round_to_precision(cx, p, n);
    round_to_precision(cx, y, n);
    double loss[2] = {0, 0};
    void *device_p = upload(cx, p, n), *device_y = upload(cx, y, n);
    int32_t *device_labels = cx->ops->alloc(cx->backend, sizeof(int32_t) * (size_t)rows);
    CHECK(device_p && device_y && device_labels);
    if (!device_p || !device_y || !device_labels)
        goto release;
    memcpy(device_labels, labels, sizeof(int32_t) * (size_t)rows); /* CPU memory */
    for (int threads = 1; threads <= 2; threads++) {
        void *device_delta = with_delta ? upload(cx, p, n) : NULL;
        set_threads(threads);
        loss[threads - 1] = cx->ops->binary_cross_entropy(
            cx->backend, device_p, with_labels ? device_labels : NULL,
            with_labels ? NULL : device_y, device_delta, scale, rows, cols);
        if (device_delta) {
            download(cx, got[threads - 1], device_delta, n);
            cx->ops->free(cx->backend, device_delta);
        }
    }
    double want = 0, magnitude = 0;
    for (int64_t i = 0; i < n; i++) {
        const double q = p[i], q1 = 1.0 - q;
        const double term = -(y[i] * log(q > floor_value ? q : floor_value) +
                              (1.0 - y[i]) * log(q1 > floor_value ? q1 : floor_value));
        want += term, magnitude += fabs(term);
    }
    const char *what = with_labels ? "binary cross-entropy, labels" : "binary cross-entropy, targets";
    if (memcmp(&loss[0], &loss[1], sizeof loss[0]) != 0 ||
        (with_delta && memcmp(got[0], got[1], sizeof(double) * (size_t)n) != 0)) {
        fprintf(stderr, "%s %s (%lld x %lld): 1 and 2 threads differ\n", cx->name, what,
                (long long)rows, (long long)cols);
        test_failures++;
    }
    /* A NaN output fails both `q > floor` tests and counts as the floor (as
     * the kernel always did); its delta is NaN. */
    if (!(fabs(loss[0] - want) <= 1e-13 * magnitude + 1e-300)) {
        fprintf(stderr, "%s %s (%lld x %lld): loss %.17g, want %.17g\n", cx->name, what,
                (long long)rows, (long long)cols, loss[0], want);
        test_failures++;
    }
    if (with_delta)
        for (int64_t i = 0; i < n; i++)
            CHECK_CLOSE(got[0][i], scale * (p[i] - y[i]), 2 * cx->eps, what, rows, cols, i);
release:
    cx->ops->free(cx->backend, device_p);
    cx->ops->free(cx->backend, device_y);
    cx->ops->free(cx->backend, device_labels);
done:
    free(p), free(y), free(labels), free(got[0]), free(got[1]);
}

/* dot, axpy, scale and all_finite on flat arrays of count values. */
static void check_vector_ops(const context *cx, int64_t count)
{
    double *x = make_values(count, 41, 1.0, false), *y = make_values(count, 42, 1.0, false);
    double *got[2] = {malloc(sizeof(double) * (size_t)count), malloc(sizeof(double) * (size_t)count)};
    CHECK(x && y && got[0] && got[1]);
    if (!(x && y && got[0] && got[1]))
        goto done;
    round_to_precision(cx, x, count);
    round_to_precision(cx, y, count);
    void *device_x = upload(cx, x, count);
    CHECK(device_x != NULL);
    if (!device_x)
        goto done;
    /* dot: float64 sums of fixed chunks, the same for any thread count */
    double dots[2], want = 0, magnitude = 0;
    void *device_y = upload(cx, y, count);
    for (int threads = 1; threads <= 2; threads++) {
        set_threads(threads);
        dots[threads - 1] = cx->ops->dot(cx->backend, count, device_x, device_y);
    }
    for (int64_t i = 0; i < count; i++)
        want += x[i] * y[i], magnitude += fabs(x[i] * y[i]);
    CHECK(memcmp(&dots[0], &dots[1], sizeof dots[0]) == 0);
    if (!(fabs(dots[0] - want) <= 1e-14 * magnitude + 1e-300)) {
        fprintf(stderr, "%s dot (%lld): %.17g, want %.17g\n", cx->name, (long long)count, dots[0],
                want);
        test_failures++;
    }
    cx->ops->free(cx->backend, device_y);
    /* l1_penalty: sum |x| in float64 chunks added in order (the same for
     * any thread count, and with or without y), y += alpha sign(x) with
     * sign(0) = 0 (every 7th x set to 0) */
    double l1_sums[3], l1_want = 0;
    for (int64_t i = 0; i < count; i += 7)
        x[i] = 0.0;
    cx->ops->upload_f64(cx->backend, device_x, x, count);
    for (int64_t i = 0; i < count; i++)
        l1_want += fabs(x[i]);
    for (int threads = 1; threads <= 2; threads++) {
        void *device = upload(cx, y, count);
        set_threads(threads);
        l1_sums[threads - 1] = cx->ops->l1_penalty(cx->backend, count, device_x, -0.375, device);
        download(cx, got[threads - 1], device, count);
        cx->ops->free(cx->backend, device);
    }
    l1_sums[2] = cx->ops->l1_penalty(cx->backend, count, device_x, -0.375, NULL);
    CHECK(memcmp(&l1_sums[0], &l1_sums[1], sizeof l1_sums[0]) == 0);
    CHECK(memcmp(&l1_sums[0], &l1_sums[2], sizeof l1_sums[0]) == 0);
    CHECK(memcmp(got[0], got[1], sizeof(double) * (size_t)count) == 0);
    if (!(fabs(l1_sums[0] - l1_want) <= 2e-16 * (double)count * l1_want + 1e-300)) {
        fprintf(stderr, "%s l1_penalty (%lld): %.17g, want %.17g\n", cx->name, (long long)count,
                l1_sums[0], l1_want);
        test_failures++;
    }
    for (int64_t i = 0; i < count; i++)
        CHECK_CLOSE(got[0][i], y[i] - 0.375 * (x[i] > 0 ? 1 : x[i] < 0 ? -1 : 0), 2 * cx->eps,
                    "l1_penalty's y", count, 1, i);
    /* axpy and scale: one rounding per operation in the precision */
    for (int threads = 1; threads <= 2; threads++) {
        void *device = upload(cx, y, count);
        set_threads(threads);
        cx->ops->axpy(cx->backend, count, -0.75, device_x, device);
        cx->ops->scale(cx->backend, count, 1.25, device);
        download(cx, got[threads - 1], device, count);
        cx->ops->free(cx->backend, device);
    }
    CHECK(memcmp(got[0], got[1], sizeof(double) * (size_t)count) == 0);
    for (int64_t i = 0; i < count; i++)
        CHECK_CLOSE(got[0][i], 1.25 * (y[i] - 0.75 * x[i]), 4 * cx->eps * (1 + fabs(x[i])),
                    "axpy and scale", count, 1, i);
    /* all_finite: false for one NaN or Inf anywhere */
    set_threads(2);
    CHECK(cx->ops->all_finite(cx->backend, count, device_x));
    const int64_t places[] = {0, count / 2, count - 1};
    const double specials[] = {NAN, INFINITY, -INFINITY};
    for (int p = 0; p < 3; p++)
        for (int s = 0; s < 3; s++) {
            double saved = x[places[p]];
            x[places[p]] = specials[s];
            cx->ops->upload_f64(cx->backend, device_x, x, count);
            for (int threads = 1; threads <= 2; threads++) {
                set_threads(threads);
                CHECK(!cx->ops->all_finite(cx->backend, count, device_x));
            }
            x[places[p]] = saved;
        }
    cx->ops->free(cx->backend, device_x);
done:
    free(x), free(y), free(got[0]), free(got[1]);
}

/* cross_entropy and squared_error: the loss against float64 loops, and the
 * same bits (loss and delta) on 1 and 2 threads: their row spans are added
 * in a fixed order, as a line search needs. */
static void check_row_losses(const context *cx, int64_t rows, int64_t cols)
{
    const int64_t n = rows * cols;
    double *p = make_values(n, 41, 1.0, false);
    int32_t *labels = malloc(sizeof(int32_t) * (size_t)rows);
    double *got[2] = {malloc(sizeof(double) * (size_t)n), malloc(sizeof(double) * (size_t)n)};
    CHECK(p && labels && got[0] && got[1]);
    if (!(p && labels && got[0] && got[1]))
        goto done;
    for (int64_t i = 0; i < n; i++)
        p[i] = 0.5 + 0.49 * p[i]; /* probabilities in (0, 1) */
    for (int64_t r = 0; r < rows; r++)
        labels[r] = (int32_t)((uint64_t)(value_at((uint64_t)r, 43) * 1e6 + 1e6) % (uint64_t)cols);
    round_to_precision(cx, p, n);
    void *device_p = upload(cx, p, n);
    int32_t *device_labels = cx->ops->alloc(cx->backend, sizeof(int32_t) * (size_t)rows);
    CHECK(device_p && device_labels);
    if (device_p && device_labels) {
        memcpy(device_labels, labels, sizeof(int32_t) * (size_t)rows); /* CPU memory */
        for (int kind = 0; kind < 2; kind++) {
            double loss[2];
            for (int threads = 1; threads <= 2; threads++) {
                void *device_delta = upload(cx, p, n);
                CHECK(device_delta != NULL);
                if (!device_delta)
                    break;
                set_threads(threads);
                loss[threads - 1] =
                    kind == 0 ? cx->ops->cross_entropy(cx->backend, device_p, device_labels,
                                                       device_delta, 1.0 / (double)rows, rows, cols)
                              : cx->ops->squared_error(cx->backend, device_p, device_labels, NULL,
                                                       device_delta, 1.0 / (double)rows, rows, cols);
                download(cx, got[threads - 1], device_delta, n);
                cx->ops->free(cx->backend, device_delta);
            }
            double want = 0.0;
            for (int64_t r = 0; r < rows; r++)
                for (int64_t c = 0; c < cols; c++) {
                    const double q = p[r * cols + c], y = labels[r] == c ? 1.0 : 0.0;
                    want += kind == 0 ? (y > 0 ? -log(q) : 0.0) : (q - y) * (q - y);
                }
            const char *what = kind == 0 ? "cross-entropy" : "squared error";
            if (memcmp(&loss[0], &loss[1], sizeof loss[0]) != 0 ||
                memcmp(got[0], got[1], sizeof(double) * (size_t)n) != 0) {
                fprintf(stderr, "%s %s (%lld x %lld): 1 and 2 threads differ (loss %.17g, %.17g)\n",
                        cx->name, what, (long long)rows, (long long)cols, loss[0], loss[1]);
                test_failures++;
            }
            CHECK_CLOSE(loss[0], want, 1e-12 * (double)rows, what, rows, cols, 0);
        }
    }
    cx->ops->free(cx->backend, device_p);
    cx->ops->free(cx->backend, device_labels);
done:
    free(p);
    free(labels);
    free(got[0]);
    free(got[1]);
}

static void check_precision(ax_precision precision)
{
    context cx = {.backend = ax_backend_cpu_create(precision)};
    CHECK(cx.backend != NULL);
    if (!cx.backend)
        return;
    cx.ops = cx.backend->ops;
    cx.eps = precision == AX_PRECISION_F32 ? 0x1p-23 : 0x1p-52;
    cx.name = precision == AX_PRECISION_F32 ? "f32" : "f64";

    /* Rows: 1, a few, and counts that are no multiple of a row group (up
     * to 96 rows for 3 columns) or of a chunk. */
    const int64_t rows[] = {1, 2, 7, 97, 1001};
    int64_t widths[32], width_count = 0;
    for (int64_t w = 1; w <= 20; w++)
        widths[width_count++] = w;
    const int64_t wide[] = {31, 33, 63, 64, 65, 128};
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
        widths[width_count++] = wide[i];
    /* Large enough for threads, several column-sum chunks and loss spans. */
    const int64_t big[][2] = {{5003, 8}, {4099, 3}, {40001, 1}, {3001, 20}, {1203, 33}, {700, 128}};
    for (int64_t w = 0; w < width_count; w++)
        for (size_t r = 0; r < sizeof rows / sizeof rows[0] + sizeof big / sizeof big[0]; r++) {
            const bool is_big = r >= sizeof rows / sizeof rows[0];
            const size_t b = r - sizeof rows / sizeof rows[0];
            if (is_big && w > 0) /* each big shape once, with the first width */
                continue;
            const int64_t m = is_big ? big[b][0] : rows[r], n = is_big ? big[b][1] : widths[w];
            for (int act = AX_ACT_IDENTITY; act <= AX_ACT_SOFTMAX; act++) {
                check_bias_activation(&cx, (ax_activation)act, m, n, false);
                check_bias_activation(&cx, (ax_activation)act, m, n, true);
                check_backward(&cx, act, m, n, 1.0, false);
                check_backward(&cx, act, m, n, 0.8, true);
            }
            check_backward(&cx, -1, m, n, 1.0, false);
            check_backward(&cx, -1, m, n, 1.0, true);
            for (int labels = 0; labels < 2; labels++) {
                check_binary_cross_entropy(&cx, m, n, labels, true, false);
                check_binary_cross_entropy(&cx, m, n, labels, false, false);
                check_binary_cross_entropy(&cx, m, n, labels, true, true);
            }
        }
    /* narrow column sums with more chunk partials (rows x 63 columns) than
     * the kernel keeps on its stack (4096) */
    check_backward(&cx, -1, 20001, 63, 1.0, false);
    check_backward(&cx, AX_ACT_TANH, 20001, 63, 0.8, false);
    /* LeNet's convolutions: 24x24 and 8x8 places of 32 and 64 filters (a
     * batch of 16 and of 128) */
    check_backward(&cx, AX_ACT_RELU, 16 * 24 * 24, 32, 1.0, true);
    check_backward(&cx, AX_ACT_RELU, 128 * 8 * 8, 64, 1.0, true);
    /* around a dot chunk (4096), the threads' threshold (32768), and more
     * chunks than the kernel keeps on its stack (256) */
    /* one span, some, spans no multiple of the threads' share, more spans
     * than a stack array holds (256 of 512 rows) */
    const int64_t loss_shapes[][2] = {{7, 3}, {3001, 10}, {40001, 1}, {140001, 2}};
    for (size_t i = 0; i < sizeof loss_shapes / sizeof loss_shapes[0]; i++)
        check_row_losses(&cx, loss_shapes[i][0], loss_shapes[i][1]);
    const int64_t counts[] = {1, 5, 4095, 4097, 32767, 40000, 257 * 4096 + 3};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        check_vector_ops(&cx, counts[i]);
    cx.ops->destroy(cx.backend);
}

int main(void)
{
    check_precision(AX_PRECISION_F32);
    check_precision(AX_PRECISION_F64);
    set_threads(1);
    return test_finish("test_narrow_kernels");
}
