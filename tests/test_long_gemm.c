/* test_long_gemm.c: the AVX-512 kernel for a small product over a long
 * inner dimension (src/backend/cpu/long_gemm.c, a convolution's weight
 * gradient) against a plain float64 triple loop: LeNet's first layer
 * (32 x 25 over 73,728 rows), one and two vectors of rows, every column
 * count up to 32 (tiles of unequal widths), k not a multiple of the
 * quarters, strides larger than the widths, alpha and beta (C not read when
 * beta is 0: it starts as NaN); the same bits on 1 and 2 threads; the
 * shapes it must decline left to the others, C untouched; and the CPU
 * backend's gemm with it against the BLAS alone. Skipped on CPUs without
 * AVX-512F, where it never runs. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/long_gemm.h"
#include "test_reference.h"
#include "test_util.h"

typedef struct {
    int64_t m, n, k;
    double alpha, beta;
    int64_t pad; /* leading dimensions exceed the widths by this much */
} shape;

/* C (m, n) = alpha A (k, m)^T B (k, n) + beta C on `threads` threads into
 * c (m, ldc), from the inputs of seed; returns false when declined. */
static bool run(shape s, int threads, const float *a, const float *b, float *c)
{
    omp_set_num_threads(threads);
    return ax_long_gemm_f32(true, false, s.m, s.n, s.k, (float)s.alpha, a, s.m + s.pad, b,
                            s.n + s.pad, (float)s.beta, c, s.n + s.pad);
}

static void check_shape(shape s)
{
    const int64_t lda = s.m + s.pad, ldb = s.n + s.pad, ldc = s.n + s.pad;
    double *a = malloc(sizeof(double) * (size_t)(s.k * lda));
    double *b = malloc(sizeof(double) * (size_t)(s.k * ldb));
    double *c_in = malloc(sizeof(double) * (size_t)(s.m * ldc));
    double *expected = malloc(sizeof(double) * (size_t)(s.m * s.n));
    double *magnitude = malloc(sizeof(double) * (size_t)(s.m * s.n));
    float *a32 = malloc(sizeof(float) * (size_t)(s.k * lda));
    float *b32 = malloc(sizeof(float) * (size_t)(s.k * ldb));
    float *c32[2] = {malloc(sizeof(float) * (size_t)(s.m * ldc)),
                     malloc(sizeof(float) * (size_t)(s.m * ldc))};
    const bool allocated = a && b && c_in && expected && magnitude && a32 && b32 && c32[0] && c32[1];
    CHECK(allocated);
    if (allocated) {
        for (int64_t i = 0; i < s.k * lda; i++)
            a32[i] = (float)value_at((uint64_t)i, 1), a[i] = a32[i];
        for (int64_t i = 0; i < s.k * ldb; i++)
            b32[i] = (float)value_at((uint64_t)i, 2), b[i] = b32[i];
        for (int64_t i = 0; i < s.m * ldc; i++)
            c_in[i] = s.beta == 0 ? NAN : (float)value_at((uint64_t)i, 3);
        reference_gemm(true, false, s.m, s.n, s.k, s.alpha, a, lda, b, ldb, s.beta, c_in, ldc,
                       expected, magnitude);
        for (int t = 0; t < 2; t++) {
            for (int64_t i = 0; i < s.m * ldc; i++)
                c32[t][i] = (float)c_in[i];
            CHECK(run(s, t + 1, a32, b32, c32[t]));
        }
        /* the quarters' sums and their sum in one order: the same bits */
        CHECK(memcmp(c32[0], c32[1], sizeof(float) * (size_t)(s.m * ldc)) == 0);
        const double worst = worst_error_f32(c32[0], ldc, s.m, s.n, expected, magnitude);
        /* any order of summation is within k ulps of the terms' magnitude */
        const double bound = (double)(s.k + 2) * 6e-8;
        if (!(worst <= bound))
            fprintf(stderr, "  shape m=%lld n=%lld k=%lld pad=%lld: error %.2e\n", (long long)s.m,
                    (long long)s.n, (long long)s.k, (long long)s.pad, worst);
        CHECK(worst <= bound);
        bool padding_kept = true; /* C's own values past n, never written */
        for (int64_t i = 0; i < s.m; i++)
            for (int64_t j = s.n; j < ldc; j++)
                padding_kept = padding_kept && isnan(c32[0][i * ldc + j]) == isnan(c_in[i * ldc + j]) &&
                               (isnan(c_in[i * ldc + j]) || c32[0][i * ldc + j] == (float)c_in[i * ldc + j]);
        CHECK(padding_kept);
    }
    free(a), free(b), free(c_in), free(expected), free(magnitude), free(a32), free(b32);
    free(c32[0]), free(c32[1]);
}

/* Shapes it must decline, leaving C alone. */
static void check_declined(void)
{
    enum { K = 4096 };
    float *a = calloc(64 * (size_t)K, sizeof(float)), *b = calloc(64 * (size_t)K, sizeof(float));
    float c[64 * 64];
    for (int i = 0; i < 64 * 64; i++)
        c[i] = 7.0f;
    CHECK(a && b);
    if (a && b) {
        CHECK(!ax_long_gemm_f32(true, false, 32, 25, K - 1, 1, a, 32, b, 25, 0, c, 25)); /* short k */
        CHECK(!ax_long_gemm_f32(true, false, 24, 25, K, 1, a, 24, b, 25, 0, c, 25));     /* m % 16 */
        CHECK(!ax_long_gemm_f32(true, false, 80, 25, K, 1, a, 80, b, 25, 0, c, 25));     /* m > 64 */
        CHECK(!ax_long_gemm_f32(true, false, 32, 33, K, 1, a, 32, b, 33, 0, c, 33));     /* n > 32 */
        CHECK(!ax_long_gemm_f32(false, false, 32, 25, K, 1, a, K, b, 25, 0, c, 25));
        CHECK(!ax_long_gemm_f32(true, true, 32, 25, K, 1, a, 32, b, K, 0, c, 25));
        ax_long_gemm_disable(true);
        CHECK(!ax_long_gemm_f32(true, false, 32, 25, K, 1, a, 32, b, 25, 0, c, 25));
        ax_long_gemm_disable(false);
    }
    bool untouched = true;
    for (int i = 0; i < 64 * 64; i++)
        untouched = untouched && c[i] == 7.0f;
    CHECK(untouched);
    free(a), free(b);
}

/* LeNet's first weight gradient through the CPU backend's gemm, with the
 * kernel and with the BLAS alone: the same within rounding, not all zero. */
static void check_backend(void)
{
    enum { ROWS = 73728, FILTERS = 32, WINDOW = 25 };
    ax_backend *backend = ax_backend_cpu_create(AX_PRECISION_F32);
    CHECK(backend != NULL);
    if (!backend)
        return;
    const ax_backend_ops *ops = backend->ops;
    void *delta = ops->alloc(backend, sizeof(float) * ROWS * FILTERS);
    void *columns = ops->alloc(backend, sizeof(float) * ROWS * WINDOW);
    void *g = ops->alloc(backend, sizeof(float) * FILTERS * WINDOW);
    double *host = malloc(sizeof(double) * ROWS * FILTERS);
    double with[FILTERS * WINDOW], without[FILTERS * WINDOW];
    CHECK(delta && columns && g && host);
    if (delta && columns && g && host) {
        for (int64_t i = 0; i < (int64_t)ROWS * FILTERS; i++)
            host[i] = value_at((uint64_t)i, 4);
        ops->upload_f64(backend, delta, host, (int64_t)ROWS * FILTERS);
        ops->upload_f64(backend, columns, host, (int64_t)ROWS * WINDOW);
        for (int pass = 0; pass < 2; pass++) {
            ax_long_gemm_disable(pass == 1);
            ops->gemm(backend, true, false, FILTERS, WINDOW, ROWS, 1.0, delta, FILTERS, columns,
                      WINDOW, 0.0, g, WINDOW);
            ops->download_f64(backend, pass == 0 ? with : without, g, FILTERS * WINDOW);
        }
        ax_long_gemm_disable(false);
        double worst = 0, size = 0;
        for (int i = 0; i < FILTERS * WINDOW; i++) {
            worst = fmax(worst, fabs(with[i] - without[i]));
            size += fabs(with[i]);
        }
        /* terms at most 1: both within ROWS ulps of a sum of ROWS terms */
        CHECK(worst <= 2.0 * ROWS * 6e-8 * ROWS);
        CHECK(size > 1.0);
    }
    ops->free(backend, delta), ops->free(backend, columns), ops->free(backend, g);
    free(host);
    ops->destroy(backend);
}

int main(void)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f"))
        TEST_SKIP("this CPU has no AVX-512F: the long GEMM kernel never runs here");
    check_declined();
    check_shape((shape){32, 25, 73728, 1.0, 0.0, 0}); /* LeNet's first weight gradient */
    for (int64_t n = 1; n <= 32; n++) {
        const int64_t m = 16 * (1 + n % 4); /* 16, 32, 48, 64: one and two vectors */
        check_shape((shape){m, n, 4096 + 3 * n, n % 2 ? -0.75 : 1.0, n % 3 ? 0.0 : 0.5, n % 3});
    }
    check_backend();
    return test_finish("test_long_gemm");
}
