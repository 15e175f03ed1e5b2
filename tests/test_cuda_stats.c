/* test_cuda_stats.c: the activation statistics on a CUDA device
 * (ax_stats_entropy_mi_on, ax_stats_tensor_mean_on; src/backend/cuda/stats.cu)
 * give the CPU's results and the float64 naive references' (the softmax
 * stored, MI as the full double sum, the tensor mean as the direct loop)
 * within 1e-5 relative, where their benchmarks ask for 1e-3.
 *
 * Everywhere: a negative device number is refused, a device past the last is
 * refused ("no CUDA device", or "this build has no CUDA backend"), bad
 * shapes are refused before any device is asked for, and the CPU device
 * gives the CPU's results bit for bit. Without a CUDA build or a device the test then exits 77
 * (skipped) saying which: it never passes without a GPU.
 *
 *     test_cuda_stats [BACKEND]
 *
 * BACKEND is another device backend with statistics in its plugin (opencl:
 * src/backend/opencl/opencl_stats.c, CTest's test_opencl_stats); the same
 * cases, device 0 of that backend; default cuda.
 *
 * With a device, the cases cover: B = 1, D = 1 (H = -1, MI = 1 exactly);
 * logits of 1e4 and 1e-4 scale; D not a multiple of 32 (the warp) or of
 * 1024 (a lane's float chunk); B = 1000003 rows at D = 3 (the fixed grid's
 * warps walk many rows each); 17 rows of 2^20 values (the input blocks of
 * 2^24 floats: 16 rows, then 1, with the partials added across blocks);
 * tensor mean at blocks of 8192 rows (d <= 45: n = 8192, 8193, 20000)
 * and of 2^24 / d^2 rows (d = 100: 1677, 1678, 4000); NaN and Inf named by
 * array, row and column; the same bits from two calls; where the time went. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/random.h"
#include "stats_reference.h"
#include "test_util.h"

#define TOLERANCE 1e-5

static ax_rng rng;

/* The backend under test ("cuda", "opencl") and its names in messages. */
static const char *backend = "cuda";
static const char *display = "CUDA"; /* the plugins' own messages: "no CUDA device 3" */
static char upper_name[32];           /* the loader's: "this build has no OPENCL backend" */

/* -1: the CPU; N: device N of the backend under test. */
static ax_device cuda_device(int n)
{
    if (n == -1)
        return ax_device_cpu();
    ax_device device = {.index = n};
    snprintf(device.backend, sizeof device.backend, "%s", backend);
    return device;
}

/* References: tests/stats_reference.h. */

/* count values scale * N(0, 1) + shift. */
static float *random_array(int64_t count, double scale, double shift)
{
    float *a = malloc((size_t)count * sizeof *a);
    CHECK(a != NULL);
    for (int64_t i = 0; a && i < count; i++)
        a[i] = (float)(scale * ax_rng_normal(&rng) + shift);
    return a;
}

static double relative(double a, double b)
{
    return fabs(a - b) / fmax(fabs(b), 1e-300);
}

/* max |a - b| / max |b| over count values (NaN when a holds NaN). */
static double tensor_difference(const float *a, const double *b, int64_t count)
{
    double worst = 0.0, largest = 0.0;
    for (int64_t i = 0; i < count; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (isnan(e))
            return NAN;
        worst = fmax(worst, e);
        largest = fmax(largest, fabs(b[i]));
    }
    return worst / fmax(largest, 1e-300);
}

/* ------------------------------------------------------------ entropy-mi */

static void entropy_case(int device, int64_t rows, int64_t d, double scale, bool naive)
{
    float *x = random_array(rows * d, scale, 0.0), *y = random_array(rows * d, scale, 0.0);
    double h_ref, mi_ref, h_cpu, mi_cpu, h_gpu = NAN, mi_gpu = NAN, h_again, mi_again;
    reference_entropy_mi(x, y, rows, d, naive, &h_ref, &mi_ref);
    CHECK_OK(ax_stats_entropy_mi(x, y, rows, d, &h_cpu, &mi_cpu));
    ax_stats_timing timing;
    CHECK_OK(ax_stats_entropy_mi_on(cuda_device(device), x, y, rows, d, &h_gpu, &mi_gpu, &timing));
    CHECK_OK(ax_stats_entropy_mi_on(cuda_device(device), x, y, rows, d, &h_again, &mi_again, NULL));
    const double worst = fmax(fmax(relative(h_gpu, h_ref), relative(mi_gpu, mi_ref)),
                              fmax(relative(h_gpu, h_cpu), relative(mi_gpu, mi_cpu)));
    printf("entropy-mi %7lld x %-7lld scale %-6g H %.9g MI %.9g  err %.2g  (copy %.3f ms, "
           "kernels %.3f ms)\n",
           (long long)rows, (long long)d, scale, h_gpu, mi_gpu, worst,
           1e3 * timing.upload_seconds, 1e3 * timing.compute_seconds);
    if (!(worst <= TOLERANCE)) {
        fprintf(stderr, "entropy-mi %lld x %lld: GPU H %.12g MI %.12g, CPU %.12g %.12g, "
                        "reference %.12g %.12g\n",
                (long long)rows, (long long)d, h_gpu, mi_gpu, h_cpu, mi_cpu, h_ref, mi_ref);
        test_failures++;
    }
    CHECK(memcmp(&h_gpu, &h_again, sizeof h_gpu) == 0 && memcmp(&mi_gpu, &mi_again, sizeof mi_gpu) == 0);
    CHECK(timing.upload_seconds > 0.0 && timing.compute_seconds > 0.0 &&
          timing.download_seconds > 0.0);
    free(x);
    free(y);
}

static void entropy_special(int device)
{
    /* B = 1, D = 1: P = Q = (1), so H = -1 and MI = 1 exactly. */
    float one_x = 3.5f, one_y = -1e4f;
    double h = 0.0, mi = 0.0;
    CHECK_OK(ax_stats_entropy_mi_on(cuda_device(device), &one_x, &one_y, 1, 1, &h, &mi, NULL));
    CHECK(h == -1.0 && mi == 1.0);

    /* A row of equal logits: P uniform, sum P^2 = 1/d. Large equal logits too. */
    float flat[2 * 300];
    for (int i = 0; i < 600; i++)
        flat[i] = i < 300 ? 88.5f : 1e30f;
    CHECK_OK(ax_stats_entropy_mi_on(cuda_device(device), flat, flat + 300, 1, 300, &h, &mi, NULL));
    CHECK_NEAR(h, -1.0 / 300.0, 1e-9);
    CHECK_NEAR(mi, 1.0 / 90000.0, 1e-11);

    /* NaN and Inf are named, as on the CPU. */
    const int64_t rows = 10, d = 40;
    float *x = random_array(rows * d, 1.0, 0.0), *y = random_array(rows * d, 1.0, 0.0);
    x[5 * d + 3] = NAN;
    CHECK_FAILS(ax_stats_entropy_mi_on(cuda_device(device), x, y, rows, d, &h, &mi, NULL), AX_STATUS_BAD_DATA,
                "x [row 5, column 3] is NaN");
    x[5 * d + 3] = 0.0f;
    y[2 * d + 39] = -INFINITY;
    CHECK_FAILS(ax_stats_entropy_mi_on(cuda_device(device), x, y, rows, d, &h, &mi, NULL), AX_STATUS_BAD_DATA,
                "y [row 2, column 39] is Inf");
    y[2 * d + 39] = INFINITY;
    CHECK_FAILS(ax_stats_entropy_mi_on(cuda_device(device), x, y, rows, d, &h, &mi, NULL), AX_STATUS_BAD_DATA,
                "y [row 2, column 39] is Inf");
    /* and the device works again afterwards */
    y[2 * d + 39] = 1.0f;
    double h_cpu, mi_cpu;
    CHECK_OK(ax_stats_entropy_mi(x, y, rows, d, &h_cpu, &mi_cpu));
    CHECK_OK(ax_stats_entropy_mi_on(cuda_device(device), x, y, rows, d, &h, &mi, NULL));
    CHECK(relative(h, h_cpu) <= TOLERANCE && relative(mi, mi_cpu) <= TOLERANCE);
    free(x);
    free(y);
}

/* ----------------------------------------------------------- tensor-mean */

static void tensor_case(int device, int64_t n, int64_t d, bool naive)
{
    /* d = 1 has one element, a mean of n products: shifted features keep it
     * away from 0, where a relative error means nothing. */
    const double shift = d == 1 ? 1.0 : 0.0;
    float *fx = random_array(n * d, 1.0, shift), *fy = random_array(n * d, 1.0, shift),
          *fz = random_array(n * d, 1.0, shift);
    const int64_t d3 = d * d * d;
    float *cpu = malloc((size_t)d3 * sizeof *cpu), *gpu = malloc((size_t)d3 * sizeof *gpu),
          *again = malloc((size_t)d3 * sizeof *again);
    double *ref = malloc((size_t)d3 * sizeof *ref);
    CHECK(cpu && gpu && again && ref);
    CHECK_OK(ax_stats_tensor_mean(fx, fy, fz, n, d, cpu));
    ax_stats_timing timing;
    CHECK_OK(ax_stats_tensor_mean_on(cuda_device(device), fx, fy, fz, n, d, gpu, &timing));
    CHECK_OK(ax_stats_tensor_mean_on(cuda_device(device), fx, fy, fz, n, d, again, NULL));
    if (naive) {
        reference_tensor_mean(fx, fy, fz, n, d, ref);
    } else { /* the CPU's result, itself checked against the naive loop in test_stats */
        for (int64_t i = 0; i < d3; i++)
            ref[i] = cpu[i];
    }
    double to_ref = tensor_difference(gpu, ref, d3);
    for (int64_t i = 0; i < d3; i++)
        ref[i] = cpu[i];
    double to_cpu = tensor_difference(gpu, ref, d3);
    printf("tensor-mean %6lld x %-4lld err %.2g (%s), %.2g (CPU)  (copy %.3f ms, kernels %.3f ms)\n",
           (long long)n, (long long)d, to_ref, naive ? "naive" : "CPU", to_cpu,
           1e3 * timing.upload_seconds, 1e3 * timing.compute_seconds);
    if (!(to_ref <= TOLERANCE && to_cpu <= TOLERANCE)) {
        fprintf(stderr, "tensor-mean %lld x %lld: GPU differs by %.3g (reference) and %.3g "
                        "(CPU) relative to the largest element\n",
                (long long)n, (long long)d, to_ref, to_cpu);
        test_failures++;
    }
    CHECK(memcmp(gpu, again, (size_t)d3 * sizeof *gpu) == 0);
    CHECK(timing.upload_seconds > 0.0 && timing.compute_seconds > 0.0 &&
          timing.download_seconds > 0.0);
    free(fx);
    free(fy);
    free(fz);
    free(cpu);
    free(gpu);
    free(again);
    free(ref);
}

static void tensor_special(int device)
{
    float a = 3.0f, b = -0.5f, c = 2.0f, out = 0.0f;
    CHECK_OK(ax_stats_tensor_mean_on(cuda_device(device), &a, &b, &c, 1, 1, &out, NULL));
    CHECK(out == -3.0f);

    const int64_t n = 6, d = 5;
    const double shift = 0.0;
    float *fx = random_array(n * d, 1.0, shift), *fy = random_array(n * d, 1.0, shift),
          *fz = random_array(n * d, 1.0, shift), *t = malloc((size_t)(d * d * d) * sizeof *t);
    fz[1 * d + 0] = INFINITY;
    CHECK_FAILS(ax_stats_tensor_mean_on(cuda_device(device), fx, fy, fz, n, d, t, NULL), AX_STATUS_BAD_DATA,
                "fz [row 1, column 0] is Inf");
    fz[1 * d + 0] = 0.0f;
    fy[4 * d + 4] = NAN;
    CHECK_FAILS(ax_stats_tensor_mean_on(cuda_device(device), fx, fy, fz, n, d, t, NULL), AX_STATUS_BAD_DATA,
                "fy [row 4, column 4] is NaN");
    free(fx);
    free(fy);
    free(fz);
    free(t);
}

/* ------------------------------------------------------------------ main */

/* What holds with or without a device. */
static void refusals(bool built, int devices)
{
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
    double h = 0.0, mi = 0.0, h_cpu = 0.0, mi_cpu = 0.0;
    char absent[96], negative[64];
    if (built)
        snprintf(absent, sizeof absent, "no %s device", display);
    else
        snprintf(absent, sizeof absent, "this build has no %s backend", upper_name);
    snprintf(negative, sizeof negative, "device %s:-2", backend);
    CHECK_FAILS(ax_stats_entropy_mi_on(cuda_device(-2), x, x, 2, 4, &h, &mi, NULL), AX_STATUS_BAD_ARGUMENT,
                negative);
    CHECK_FAILS(ax_stats_tensor_mean_on(cuda_device(-2), x, x, x, 1, 2, out, NULL), AX_STATUS_BAD_ARGUMENT,
                negative);
    CHECK_FAILS(ax_stats_entropy_mi_on(cuda_device(devices + 3), x, x, 2, 4, &h, &mi, NULL),
                AX_STATUS_UNSUPPORTED, absent);
    CHECK_FAILS(ax_stats_tensor_mean_on(cuda_device(devices + 3), x, x, x, 1, 2, out, NULL),
                AX_STATUS_UNSUPPORTED, absent);
    /* Shapes are checked before a device is asked for, with the CPU's messages. */
    CHECK_FAILS(ax_stats_entropy_mi_on(cuda_device(0), x, x, 0, 4, &h, &mi, NULL), AX_STATUS_BAD_ARGUMENT,
                "empty");
    CHECK_FAILS(ax_stats_entropy_mi_on(cuda_device(0), x, NULL, 2, 4, &h, &mi, NULL), AX_STATUS_BAD_ARGUMENT,
                "y array is missing");
    CHECK_FAILS(ax_stats_tensor_mean_on(cuda_device(0), x, x, x, 1, 0, out, NULL), AX_STATUS_BAD_ARGUMENT,
                "empty");
    CHECK_FAILS(ax_stats_tensor_mean_on(cuda_device(0), x, x, x, 1, 1291, out, NULL), AX_STATUS_BAD_ARGUMENT,
                "too large");
    /* Device -1 is the CPU: the same bits, timing of the whole call. */
    ax_stats_timing timing = {1, 1, 1};
    CHECK_OK(ax_stats_entropy_mi(x, x + 4, 1, 4, &h_cpu, &mi_cpu));
    CHECK_OK(ax_stats_entropy_mi_on(cuda_device(-1), x, x + 4, 1, 4, &h, &mi, &timing));
    CHECK(h == h_cpu && mi == mi_cpu);
    CHECK(timing.upload_seconds == 0.0 && timing.download_seconds == 0.0 &&
          timing.compute_seconds >= 0.0);
    float t_cpu[8], t_on[8];
    CHECK_OK(ax_stats_tensor_mean(x, x + 2, x + 4, 2, 2, t_cpu));
    CHECK_OK(ax_stats_tensor_mean_on(cuda_device(-1), x, x + 2, x + 4, 2, 2, t_on, NULL));
    CHECK(memcmp(t_cpu, t_on, sizeof t_cpu) == 0);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        backend = argv[1];
    display = strcmp(backend, "cuda") == 0 ? "CUDA" : strcmp(backend, "opencl") == 0 ? "OpenCL" : backend;
    for (size_t i = 0; backend[i] && i + 1 < sizeof upper_name; i++)
        upper_name[i] = (char)(backend[i] >= 'a' && backend[i] <= 'z' ? backend[i] - 32 : backend[i]);
    char test_name[64];
    snprintf(test_name, sizeof test_name, "test_%s_stats", backend);
    ax_rng_seed(&rng, 4004);
    const char *backends = ax_build_info_get().backends;
    const char *at = strstr(backends, backend);
    const bool built = at && (at == backends || at[-1] == ' ');
    const int devices = ax_device_count(backend);
    refusals(built, devices);
    if (test_failures)
        return test_finish(test_name);
    if (!built)
        TEST_SKIP("this build has no %s backend (configure with -DAXON_%s=ON where its compiler or "
                  "libraries are installed): the device statistics were not checked", display,
                  upper_name);
    if (devices < 1)
        TEST_SKIP("no %s device (the plugin found none): the device statistics were not checked",
                  display);

    char text[512];
    CHECK_OK(ax_device_info(cuda_device(0), text, sizeof text));
    printf("%s device 0: %s\n", display, text);
    const int device = 0;
    entropy_special(device);
    entropy_case(device, 1, 7, 1.0, true);
    entropy_case(device, 3, 33, 1.0, true);
    entropy_case(device, 64, 256, 1.0, true);
    entropy_case(device, 64, 256, 1e4, true); /* exp would overflow without the maximum */
    entropy_case(device, 64, 256, 1e-4, true);
    entropy_case(device, 37, 1025, 3.0, true);  /* a lane's second float chunk */
    entropy_case(device, 5, 4099, 1.0, false);
    entropy_case(device, 16384, 256, 1.0, false); /* the benchmark's B = 16384 */
    entropy_case(device, 1000003, 3, 2.0, false);
    entropy_case(device, 17, 1 << 20, 1.0, false); /* two input blocks: 16 rows, then 1 */

    tensor_special(device);
    tensor_case(device, 1, 1, true);
    tensor_case(device, 3, 7, true);
    tensor_case(device, 300, 33, true);
    tensor_case(device, 8192, 1, true);
    tensor_case(device, 8193, 1, true); /* a second GEMM of one row */
    tensor_case(device, 8192, 32, true); /* the benchmark's largest N */
    tensor_case(device, 8193, 32, true);
    tensor_case(device, 20000, 32, false);
    tensor_case(device, 1677, 100, false); /* 2^24 / 100^2 = 1677 rows per block */
    tensor_case(device, 1678, 100, false);
    tensor_case(device, 4000, 100, false);
    return test_finish(test_name);
}
