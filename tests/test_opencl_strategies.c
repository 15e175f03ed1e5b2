/* test_opencl_strategies.c: the OpenCL backend's training-strategy
 * operations (backend.h, AX_BACKEND_FEATURE_STRATEGIES), never run on a
 * device by any other test, against their contract computed here in
 * float64:
 * - l1_penalty: sum |x| over count reals, and y += alpha * sign(x) with
 *   sign(0) = 0 when y is given (untouched when it is not);
 * - clamp: x = min(max(x, -limit), limit), NaN kept.
 * In float64 and float32, on counts of 1, 3 and 3000 (one to several
 * reduction groups), with zeros, both signs and values past the limit; and
 * again on a device made to look without float64 (AXON_OPENCL_HIDE_FP64=1,
 * in a child process, since the device list is made once per process),
 * where the sums are accumulated in float. Tolerances: float64 1e-12
 * relative (a sum of 3000 terms in another order), float32 1e-6 relative
 * for the sums, and the elementwise results exactly the reference's
 * rounding (one add, or a min/max). Without an OpenCL device it exits 77. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend.h"
#include "test_util.h"

static const ax_device opencl = {.backend = "opencl", .index = 0};

enum { MOST = 3000 };

/* x: a pattern with zeros, both signs and magnitudes up to 3.5. */
static double x_value(int i) { return i % 7 == 0 ? 0.0 : ((i * 37) % 71 - 35) / 10.0; }

static void check_on(ax_precision precision)
{
    ax_backend *backend = NULL;
    CHECK_OK(ax_backend_create(precision, opencl, &backend));
    if (!backend)
        return;
    const bool f64 = precision == AX_PRECISION_F64;
    const ax_backend_ops *ops = backend->ops;
    CHECK_OK(ax_backend_require(ops, AX_BACKEND_FEATURE_STRATEGIES, "the test"));
    void *x = NULL, *y = NULL;
    CHECK_OK(ax_backend_alloc(backend, MOST * backend->real_size, "x", &x));
    CHECK_OK(ax_backend_alloc(backend, MOST * backend->real_size, "y", &y));
    static double host_x[MOST], host_y[MOST], back[MOST];
    const int counts[] = {1, 3, MOST};
    const double alpha = 0.25, limit = 1.5;
    for (int c = 0; c < 3 && x && y; c++) {
        const int count = counts[c];
        for (int i = 0; i < count; i++) {
            host_x[i] = x_value(i + c);
            host_y[i] = (i % 5) * 0.125 - 0.25;
            if (!f64) /* what the device holds */
                host_x[i] = (float)host_x[i], host_y[i] = (float)host_y[i];
        }
        ops->upload_f64(backend, x, host_x, count);
        ops->upload_f64(backend, y, host_y, count);

        double reference = 0.0;
        for (int i = 0; i < count; i++)
            reference += fabs(host_x[i]);
        /* Without y: the sum only. */
        CHECK_NEAR(ops->l1_penalty(backend, count, x, alpha, NULL), reference, f64 ? 1e-12 : 1e-6);
        /* With y: the same sum, and y moved by alpha times the sign. */
        CHECK_NEAR(ops->l1_penalty(backend, count, x, alpha, y), reference, f64 ? 1e-12 : 1e-6);
        ops->download_f64(backend, back, y, count);
        int wrong = 0;
        for (int i = 0; i < count; i++) {
            const double sign = host_x[i] > 0 ? 1.0 : host_x[i] < 0 ? -1.0 : 0.0;
            const double expected = f64 ? host_y[i] + alpha * sign
                                        : (double)((float)host_y[i] + (float)alpha * (float)sign);
            wrong += back[i] != expected;
        }
        CHECK(wrong == 0);

        /* clamp, with a NaN among the values. */
        host_x[count - 1] = NAN;
        ops->upload_f64(backend, x, host_x, count);
        ops->clamp(backend, count, limit, x);
        ops->download_f64(backend, back, x, count);
        wrong = 0;
        for (int i = 0; i < count - 1; i++)
            wrong += back[i] != fmin(fmax(host_x[i], -limit), limit);
        CHECK(wrong == 0);
        CHECK(isnan(back[count - 1]));
        CHECK_OK(ops->status(backend));
    }
    /* Nothing to do: zero, and nothing touched. */
    CHECK(ops->l1_penalty(backend, 0, x, alpha, y) == 0.0);
    ops->clamp(backend, 0, limit, x);
    CHECK_OK(ax_backend_synchronize(backend));
    ops->free(backend, x);
    ops->free(backend, y);
    ops->destroy(backend);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--float32-device") == 0) {
        ax_backend *backend = NULL;
        CHECK_FAILS(ax_backend_create(AX_PRECISION_F64, opencl, &backend), AX_STATUS_UNSUPPORTED,
                    "has no float64");
        check_on(AX_PRECISION_F32);
        return test_finish("test_opencl_strategies (a device without float64)");
    }
    if (ax_device_count("opencl") < 1)
        TEST_SKIP("no OpenCL device (the plugin or an ICD is missing: pocl-opencl-icd)");
    /* The device without float64, in a child: float32 only, sums in float.
     * A fresh process image, since this one's device list is made. */
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) {
        setenv("AXON_OPENCL_HIDE_FP64", "1", 1);
        execl("/proc/self/exe", "test_opencl_strategies", "--float32-device", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
          WEXITSTATUS(status) == 0);
    check_on(AX_PRECISION_F64);
    check_on(AX_PRECISION_F32);
    return test_finish("test_opencl_strategies");
}
