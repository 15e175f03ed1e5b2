/* test_extreme_logits.c: softmax, sigmoid and the three losses at logits of
 * +-1e4, where exp overflows float32 and float64 alike (e^10000), on the CPU
 * and on every device of every device backend this build has (OpenCL on
 * PoCL in CI; CUDA where there is a GPU), float64 and float32, narrow
 * layers (3 and 10 columns: the CPU's kernels over groups of rows) and wide
 * ones (130 columns: row by row).
 *
 * The expected values are closed forms, not another kernel's output: a row
 * (1e4, 1e4 - 1, -1e4, ...) has softmax (1/(1 + e^-1), e^-1/(1 + e^-1),
 * 0, ...); a row of -1e4 everywhere is uniform; one 1e4 among -1e4 is
 * one-hot; (-1e4, -1e4 + 2, -1e4, ...) gives e^2/(e^2 + cols - 1) and
 * 1/(e^2 + cols - 1). Without the row maximum subtracted these are inf/inf
 * or 0/0: NaN. Sigmoid gives exactly 1 and 0 at +-1e4. The losses at these
 * outputs: cross-entropy log(1 + e^-1), log(cols), 0, and for a probability
 * of 0 the floor's -log(smallest normal) (87.34 in float32, 708.40 in
 * float64), finite; binary cross-entropy and squared error likewise, each
 * with its gradient scale (p - y) (squared error 2 scale (p - y)).
 *
 * Tolerances come from rounding: each probability within 8 units of the
 * precision's epsilon, relative (an exp, a sum of at most 130 terms of
 * which at most two are not 0, a division); a probability of exactly 0 must
 * be 0 (e^-20000 underflows in both precisions); a summed loss of n terms
 * within 4 n epsilon relative (a device may add in its precision). */
#include <float.h>
#include <math.h>

#include "backend/backend.h"
#include "backend/plugin.h"
#include "test_util.h"

#ifndef AXON_TEST_BACKENDS
#define AXON_TEST_BACKENDS ""
#endif

enum { ROWS = 200, PATTERNS = 4, MAX_COLS = 130 };

typedef struct target {
    ax_backend *backend;
    char name[48];    /* "cpu", "opencl:0" */
    const char *precision;
    double epsilon;   /* of the precision */
    double floor_log; /* -log(the precision's smallest normal) */
} target;

static int compared;

static void *upload(const target *t, const double *values, int64_t count)
{
    void *buffer = t->backend->ops->alloc(t->backend, (size_t)count * t->backend->real_size);
    CHECK(buffer != NULL);
    t->backend->ops->upload_f64(t->backend, buffer, values, count);
    return buffer;
}

static void download(const target *t, double *values, const void *buffer, int64_t count)
{
    t->backend->ops->download_f64(t->backend, values, buffer, count);
}

/* got against want: within tol relative to max(|want|, floor); with floor
 * 0 an expected 0 must be 0. */
static bool close_to(double got, double want, double tol, double floor_value)
{
    if (want == 0.0 && floor_value == 0.0)
        return got == 0.0;
    return fabs(got - want) <= tol * fmax(fabs(want), floor_value);
}

static void check_array(const target *t, const double *got, const double *want, int64_t count,
                        double tol, double floor_value, const char *what, int64_t cols)
{
    compared++;
    for (int64_t i = 0; i < count; i++)
        if (!close_to(got[i], want[i], tol, floor_value)) {
            fprintf(stderr, "%s %s %s (%lld columns): element %lld (row %lld): %.17g, expected %.17g\n",
                    t->name, t->precision, what, (long long)cols, (long long)i,
                    (long long)(i / cols), got[i], want[i]);
            test_failures++;
            return;
        }
}

static void check_loss(const target *t, double got, double want, int64_t terms, const char *what,
                       int64_t cols)
{
    compared++;
    if (!(isfinite(got) && fabs(got - want) <= 4.0 * (double)terms * t->epsilon * fabs(want))) {
        fprintf(stderr, "%s %s %s (%lld columns): %.17g, expected %.17g\n", t->name, t->precision,
                what, (long long)cols, got, want);
        test_failures++;
    }
}

/* Row r's logits (pattern r % 4) and their softmax, in closed form. */
static void softmax_case(int64_t r, int64_t cols, double *logits, double *expected, int32_t *label)
{
    const double e1 = exp(-1.0), e2 = exp(2.0);
    for (int64_t c = 0; c < cols; c++) {
        logits[c] = -1e4;
        expected[c] = 0.0;
    }
    switch (r % PATTERNS) {
    case 0: /* two near the top, the rest 2e4 below */
        logits[0] = 1e4;
        logits[1] = 1e4 - 1.0;
        expected[0] = 1.0 / (1.0 + e1);
        expected[1] = e1 / (1.0 + e1);
        *label = r % 8 == 0 ? 0 : 2; /* 2: a probability of 0 */
        break;
    case 1: /* all equal at -1e4 */
        for (int64_t c = 0; c < cols; c++)
            expected[c] = 1.0 / (double)cols;
        *label = (int32_t)(cols - 1);
        break;
    case 2: /* one-hot at column 2 */
        logits[2] = 1e4;
        expected[2] = 1.0;
        *label = 2;
        break;
    default: /* one 2 above the rest at -1e4 */
        logits[1] = -1e4 + 2.0;
        for (int64_t c = 0; c < cols; c++)
            expected[c] = 1.0 / (e2 + (double)(cols - 1));
        expected[1] = e2 / (e2 + (double)(cols - 1));
        *label = 1;
        break;
    }
}

static double floored_log(const target *t, double q)
{
    return q > 0.0 ? log(q) : -t->floor_log;
}

static void check_softmax_and_cross_entropy(const target *t, int64_t cols)
{
    const int64_t n = ROWS * cols;
    double *logits = malloc((size_t)n * sizeof(double)), *want = malloc((size_t)n * sizeof(double));
    double *got = malloc((size_t)n * sizeof(double)), *zero = calloc((size_t)cols, sizeof(double));
    int32_t labels[ROWS];
    for (int64_t r = 0; r < ROWS; r++)
        softmax_case(r, cols, logits + r * cols, want + r * cols, &labels[r]);
    void *z = upload(t, logits, n), *bias = upload(t, zero, cols);
    const ax_backend_ops *ops = t->backend->ops;
    ops->bias_activation(t->backend, AX_ACT_SOFTMAX, z, bias, ROWS, cols);
    download(t, got, z, n);
    check_array(t, got, want, n, 8.0 * t->epsilon, 0.0, "softmax at +-1e4", cols);

    /* Cross-entropy at the expected probabilities' closed forms. */
    int32_t *device_labels = ops->alloc(t->backend, ROWS * sizeof(int32_t));
    ops->gather_labels(t->backend, device_labels, labels, NULL, 0, ROWS);
    const double scale = 1.0 / ROWS;
    double loss = 0.0;
    double *want_delta = malloc((size_t)n * sizeof(double));
    for (int64_t r = 0; r < ROWS; r++) {
        loss -= floored_log(t, want[r * cols + labels[r]]);
        for (int64_t c = 0; c < cols; c++)
            want_delta[r * cols + c] = scale * (want[r * cols + c] - (c == labels[r] ? 1.0 : 0.0));
    }
    void *delta = ops->alloc(t->backend, (size_t)n * t->backend->real_size);
    check_loss(t, ops->cross_entropy(t->backend, z, device_labels, delta, scale, ROWS, cols), loss,
               ROWS, "cross-entropy after softmax at +-1e4", cols);
    check_loss(t, ops->cross_entropy(t->backend, z, device_labels, NULL, scale, ROWS, cols), loss,
               ROWS, "cross-entropy after softmax at +-1e4 (no gradient)", cols);
    download(t, got, delta, n);
    /* scale (p - y): p's error (8 epsilon at most, p <= 1) times scale */
    check_array(t, got, want_delta, n, 8.0 * t->epsilon, scale, "cross-entropy gradient at +-1e4",
                cols);
    ops->free(t->backend, z);
    ops->free(t->backend, bias);
    ops->free(t->backend, delta);
    ops->free(t->backend, device_labels);
    free(logits);
    free(want);
    free(got);
    free(zero);
    free(want_delta);
}

/* Sigmoid at +-1e4 and 0 gives exactly 1, 0 and 1/2; binary
 * cross-entropy and squared error at those outputs, against labels and
 * against targets. */
static void check_sigmoid_losses(const target *t, int64_t cols)
{
    const int64_t n = ROWS * cols;
    double *logits = malloc((size_t)n * sizeof(double)), *q = malloc((size_t)n * sizeof(double));
    double *got = malloc((size_t)n * sizeof(double)), *targets = malloc((size_t)n * sizeof(double));
    double *zero = calloc((size_t)cols, sizeof(double)), *want = malloc((size_t)n * sizeof(double));
    int32_t labels[ROWS];
    for (int64_t i = 0; i < n; i++) {
        const int k = (int)(i % 5);
        logits[i] = k == 0 ? 1e4 : k == 1 ? -1e4 : k == 2 ? 0.0 : k == 3 ? 1e4 : -1e4;
        q[i] = k == 0 || k == 3 ? 1.0 : k == 1 || k == 4 ? 0.0 : 0.5;
        /* right (k 0, 1), unsure (2) and confidently wrong (3, 4) */
        targets[i] = k == 0 || k == 4 ? 1.0 : k == 2 ? 0.25 : 0.0;
    }
    for (int64_t r = 0; r < ROWS; r++)
        labels[r] = (int32_t)(r % cols);
    const ax_backend_ops *ops = t->backend->ops;
    void *z = upload(t, logits, n), *bias = upload(t, zero, cols);
    ops->bias_activation(t->backend, AX_ACT_SIGMOID, z, bias, ROWS, cols);
    download(t, got, z, n);
    check_array(t, got, q, n, t->epsilon, 0.0, "sigmoid at +-1e4", cols);

    int32_t *device_labels = ops->alloc(t->backend, ROWS * sizeof(int32_t));
    ops->gather_labels(t->backend, device_labels, labels, NULL, 0, ROWS);
    void *device_targets = upload(t, targets, n);
    void *delta = ops->alloc(t->backend, (size_t)n * t->backend->real_size);
    const double scale = 0.5;
    for (int with_labels = 0; with_labels < 2; with_labels++) {
        double bce = 0.0, squared = 0.0;
        for (int64_t i = 0; i < n; i++) {
            const double y = with_labels ? (labels[i / cols] == i % cols ? 1.0 : 0.0) : targets[i];
            /* the one log a label needs: y log q + (1 - y) log(1 - q) */
            if (with_labels)
                bce -= y != 0.0 ? floored_log(t, q[i]) : floored_log(t, 1.0 - q[i]);
            else
                bce -= y * floored_log(t, q[i]) + (1.0 - y) * floored_log(t, 1.0 - q[i]);
            squared += (q[i] - y) * (q[i] - y);
        }
        const int32_t *l = with_labels ? device_labels : NULL;
        const char *against = with_labels ? "labels" : "targets";
        char what[96];
        snprintf(what, sizeof what, "binary cross-entropy after sigmoid at +-1e4 (%s)", against);
        check_loss(t, ops->binary_cross_entropy(t->backend, z, l, device_targets, delta, scale, ROWS,
                                                cols),
                   bce, n, what, cols);
        download(t, got, delta, n);
        for (int64_t i = 0; i < n; i++)
            want[i] = scale * (q[i] - (with_labels ? (labels[i / cols] == i % cols ? 1.0 : 0.0)
                                                   : targets[i]));
        snprintf(what, sizeof what, "binary cross-entropy gradient (%s)", against);
        check_array(t, got, want, n, t->epsilon, 0.0, what, cols);
        snprintf(what, sizeof what, "squared error after sigmoid at +-1e4 (%s)", against);
        check_loss(t, ops->squared_error(t->backend, z, l, device_targets, delta, scale, ROWS, cols),
                   squared, n, what, cols);
        download(t, got, delta, n);
        for (int64_t i = 0; i < n; i++)
            want[i] *= 2.0;
        snprintf(what, sizeof what, "squared error gradient (%s)", against);
        check_array(t, got, want, n, t->epsilon, 0.0, what, cols);
    }
    ops->free(t->backend, z);
    ops->free(t->backend, bias);
    ops->free(t->backend, delta);
    ops->free(t->backend, device_labels);
    ops->free(t->backend, device_targets);
    free(logits);
    free(q);
    free(got);
    free(targets);
    free(zero);
    free(want);
}

static void check_target(ax_device device, const char *name)
{
    for (int p = 0; p < 2; p++) {
        const ax_precision precision = p == 0 ? AX_PRECISION_F64 : AX_PRECISION_F32;
        target t = {.precision = p == 0 ? "f64" : "f32",
                    .epsilon = p == 0 ? DBL_EPSILON : FLT_EPSILON,
                    .floor_log = p == 0 ? -log(DBL_MIN) : -log((double)FLT_MIN)};
        snprintf(t.name, sizeof t.name, "%s", name);
        if (ax_backend_create(precision, device, &t.backend) != AX_STATUS_OK) {
            /* a device without float64 (cl_khr_fp64) says so */
            printf("%s %s: not available: %s\n", name, t.precision, ax_error_message());
            CHECK(precision == AX_PRECISION_F64 && strcmp(name, "cpu") != 0);
            continue;
        }
        const int before = test_failures;
        const int64_t widths[] = {3, 10, MAX_COLS};
        for (int w = 0; w < 3; w++) {
            check_softmax_and_cross_entropy(&t, widths[w]);
            check_sigmoid_losses(&t, widths[w]);
        }
        t.backend->ops->synchronize(t.backend);
        CHECK_OK(t.backend->ops->status(t.backend));
        printf("%s %s: softmax, sigmoid and losses at +-1e4 %s\n", name, t.precision,
               test_failures > before ? "FAILED" : "as the closed forms");
        t.backend->ops->destroy(t.backend);
    }
}

int main(void)
{
    check_target(ax_device_cpu(), "cpu");
    char names[256], *state = NULL;
    snprintf(names, sizeof names, "%s", AXON_TEST_BACKENDS);
    for (char *name = strtok_r(names, " ", &state); name; name = strtok_r(NULL, " ", &state)) {
        const int devices = ax_device_count(name);
        if (devices < 1)
            printf("%s: no device (or no plugin in this build): not checked here\n", name);
        for (int index = 0; index < devices; index++) {
            ax_device device = {.index = index};
            snprintf(device.backend, sizeof device.backend, "%s", name);
            char label[48];
            snprintf(label, sizeof label, "%s:%d", name, index);
            check_target(device, label);
        }
    }
    printf("%d comparisons\n", compared);
    return test_finish("test_extreme_logits");
}
