/* test_skinny_gemm.c: the AVX-512 kernels for GEMMs with an 8-wide side
 * (src/backend/cpu/skinny_gemm.c) against a plain float64 triple loop, for
 * the shapes they take (5 to 8 wide, tails of every length, strides larger
 * than the width, alpha and beta, 1 and 2 threads), and the CPU backend's
 * gemm with them on against the BLAS alone. Skipped on CPUs without
 * AVX-512F, where the kernels never run. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/skinny_gemm.h"
#include "test_reference.h"
#include "test_util.h"

typedef struct {
    bool trans_a, trans_b;
    int64_t m, n, k;
    double alpha, beta;
    int64_t pad; /* leading dimensions exceed the widths by this much */
} shape;

/* Runs one shape in both precisions; returns the worst error relative to
 * the terms' magnitude. C starts as NaN when beta is 0: it must not be read. */
static void check_shape(shape s, int threads)
{
    const int64_t a_rows = s.trans_a ? s.k : s.m, a_cols = s.trans_a ? s.m : s.k;
    const int64_t b_rows = s.trans_b ? s.n : s.k, b_cols = s.trans_b ? s.k : s.n;
    const int64_t lda = a_cols + s.pad, ldb = b_cols + s.pad, ldc = s.n + s.pad;
    double *a = malloc(sizeof(double) * (size_t)(a_rows * lda));
    double *b = malloc(sizeof(double) * (size_t)(b_rows * ldb));
    double *c_in = calloc((size_t)(s.m * ldc), sizeof(double));
    double *expected = malloc(sizeof(double) * (size_t)(s.m * s.n));
    double *magnitude = malloc(sizeof(double) * (size_t)(s.m * s.n));
    double *c64 = malloc(sizeof(double) * (size_t)(s.m * ldc));
    float *a32 = malloc(sizeof(float) * (size_t)(a_rows * lda));
    float *b32 = malloc(sizeof(float) * (size_t)(b_rows * ldb));
    float *c32 = malloc(sizeof(float) * (size_t)(s.m * ldc));
    CHECK(a && b && c_in && expected && magnitude && c64 && a32 && b32 && c32);
    if (!(a && b && c_in && expected && magnitude && c64 && a32 && b32 && c32))
        goto done;
    for (int64_t i = 0; i < a_rows * lda; i++)
        a[i] = (float)value_at((uint64_t)i, 1), a32[i] = (float)a[i];
    for (int64_t i = 0; i < b_rows * ldb; i++)
        b[i] = (float)value_at((uint64_t)i, 2), b32[i] = (float)b[i];
    for (int64_t i = 0; i < s.m * ldc; i++)
        c_in[i] = s.beta == 0 ? NAN : (float)value_at((uint64_t)i, 3);
    reference_gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, s.alpha, a, lda, b, ldb, s.beta, c_in, ldc,
              expected, magnitude);

    omp_set_num_threads(threads);
    memcpy(c64, c_in, sizeof(double) * (size_t)(s.m * ldc));
    for (int64_t i = 0; i < s.m * ldc; i++)
        c32[i] = (float)c_in[i];
    const bool took64 = ax_skinny_gemm_f64(s.trans_a, s.trans_b, s.m, s.n, s.k, s.alpha, a, lda,
                                           b, ldb, s.beta, c64, ldc);
    const bool took32 = ax_skinny_gemm_f32(s.trans_a, s.trans_b, s.m, s.n, s.k, (float)s.alpha,
                                           a32, lda, b32, ldb, (float)s.beta, c32, ldc);
    CHECK(took64 && took32);
    const double worst64 = worst_error_f64(c64, ldc, s.m, s.n, expected, magnitude);
    const double worst32 = worst_error_f32(c32, ldc, s.m, s.n, expected, magnitude);
    for (int64_t i = 0; i < s.m; i++) {
        /* the padding past n is C's own, never written */
        for (int64_t j = s.n; j < ldc; j++) {
            CHECK(memcmp(&c64[i * ldc + j], &c_in[i * ldc + j], sizeof(double)) == 0);
            CHECK(isnan(c_in[i * ldc + j]) ? isnan(c32[i * ldc + j])
                                            : c32[i * ldc + j] == (float)c_in[i * ldc + j]);
        }
    }
    /* any order of summation is within k ulps of the terms' magnitude */
    const double bound64 = (double)(s.k + 2) * 1.2e-16, bound32 = (double)(s.k + 2) * 6e-8;
    if (!(worst64 <= bound64 && worst32 <= bound32))
        fprintf(stderr, "  shape ta=%d tb=%d m=%lld n=%lld k=%lld pad=%lld threads=%d: "
                        "errors %.2e (f64) %.2e (f32)\n",
                s.trans_a, s.trans_b, (long long)s.m, (long long)s.n, (long long)s.k,
                (long long)s.pad, threads, worst64, worst32);
    CHECK(worst64 <= bound64);
    CHECK(worst32 <= bound32);
done:
    free(a), free(b), free(c_in), free(expected), free(magnitude), free(c64);
    free(a32), free(b32), free(c32);
}

/* The kernels split work between threads without changing any sum's
 * order, so 1 and 2 threads give the same bits (docs/notes/galaxy.md relies on
 * it: the float32 cost of a run does not depend on --threads). */
static void check_thread_independence(shape s)
{
    const int64_t a_rows = s.trans_a ? s.k : s.m, a_cols = s.trans_a ? s.m : s.k;
    const int64_t b_rows = s.trans_b ? s.n : s.k, b_cols = s.trans_b ? s.k : s.n;
    const int64_t lda = a_cols + s.pad, ldb = b_cols + s.pad, ldc = s.n + s.pad;
    float *a = malloc(sizeof(float) * (size_t)(a_rows * lda));
    float *b = malloc(sizeof(float) * (size_t)(b_rows * ldb));
    float *c[2] = {malloc(sizeof(float) * (size_t)(s.m * ldc)),
                   malloc(sizeof(float) * (size_t)(s.m * ldc))};
    double *a64 = malloc(sizeof(double) * (size_t)(a_rows * lda));
    double *b64 = malloc(sizeof(double) * (size_t)(b_rows * ldb));
    double *c64[2] = {malloc(sizeof(double) * (size_t)(s.m * ldc)),
                      malloc(sizeof(double) * (size_t)(s.m * ldc))};
    CHECK(a && b && c[0] && c[1] && a64 && b64 && c64[0] && c64[1]);
    if (a && b && c[0] && c[1] && a64 && b64 && c64[0] && c64[1]) {
        for (int64_t i = 0; i < a_rows * lda; i++)
            a64[i] = value_at((uint64_t)i, 5), a[i] = (float)a64[i];
        for (int64_t i = 0; i < b_rows * ldb; i++)
            b64[i] = value_at((uint64_t)i, 6), b[i] = (float)b64[i];
        for (int t = 0; t < 2; t++) {
            omp_set_num_threads(t + 1);
            for (int64_t i = 0; i < s.m * ldc; i++)
                c[t][i] = (float)value_at((uint64_t)i, 7), c64[t][i] = value_at((uint64_t)i, 7);
            CHECK(ax_skinny_gemm_f32(s.trans_a, s.trans_b, s.m, s.n, s.k, (float)s.alpha, a,
                                     lda, b, ldb, (float)s.beta, c[t], ldc));
            CHECK(ax_skinny_gemm_f64(s.trans_a, s.trans_b, s.m, s.n, s.k, s.alpha, a64, lda,
                                     b64, ldb, s.beta, c64[t], ldc));
        }
        CHECK(memcmp(c[0], c[1], sizeof(float) * (size_t)(s.m * ldc)) == 0);
        CHECK(memcmp(c64[0], c64[1], sizeof(double) * (size_t)(s.m * ldc)) == 0);
    }
    free(a), free(b), free(c[0]), free(c[1]), free(a64), free(b64), free(c64[0]), free(c64[1]);
}

/* Shapes the kernels must decline, leaving C alone. */
static void check_declined(void)
{
    float a[64 * 64] = {0}, b[64 * 64] = {0}, c[64 * 64];
    for (int i = 0; i < 64 * 64; i++)
        c[i] = 7.0f;
    CHECK(!ax_skinny_gemm_f32(false, true, 64, 4, 64, 1, a, 64, b, 64, 0, c, 64)); /* n < 5 */
    CHECK(!ax_skinny_gemm_f32(false, true, 64, 9, 64, 1, a, 64, b, 64, 0, c, 64)); /* n > 8 */
    CHECK(!ax_skinny_gemm_f32(false, true, 64, 8, 63, 1, a, 64, b, 64, 0, c, 64)); /* short k */
    CHECK(!ax_skinny_gemm_f32(false, false, 64, 8, 64, 1, a, 64, b, 64, 0, c, 64));
    CHECK(!ax_skinny_gemm_f32(true, true, 8, 64, 64, 1, a, 64, b, 64, 0, c, 64));
    CHECK(!ax_skinny_gemm_f32(true, false, 9, 64, 64, 1, a, 64, b, 64, 0, c, 64));
    CHECK(!ax_skinny_gemm_f32(true, false, 8, 64, 0, 1, a, 64, b, 64, 0, c, 64));
    ax_skinny_gemm_disable(true);
    CHECK(!ax_skinny_gemm_f32(false, true, 64, 8, 64, 1, a, 64, b, 64, 0, c, 64));
    ax_skinny_gemm_disable(false);
    bool untouched = true;
    for (int i = 0; i < 64 * 64; i++)
        untouched = untouched && c[i] == 7.0f;
    CHECK(untouched);
}

/* The galaxy network's two products through the CPU backend's gemm, with
 * the kernels and with the BLAS alone: the same within rounding. */
static void check_backend(ax_precision precision)
{
    enum { ROWS = 2700, IN = 1024, OUT = 8 };
    ax_backend *backend = ax_backend_cpu_create(precision);
    CHECK(backend != NULL);
    if (!backend)
        return;
    const ax_backend_ops *ops = backend->ops;
    void *x = ops->alloc(backend, backend->real_size * ROWS * IN);
    void *w = ops->alloc(backend, backend->real_size * OUT * IN);
    void *z = ops->alloc(backend, backend->real_size * ROWS * OUT);
    void *g = ops->alloc(backend, backend->real_size * OUT * IN);
    double *host = malloc(sizeof(double) * ROWS * IN);
    double *with = malloc(sizeof(double) * ROWS * IN), *without = malloc(sizeof(double) * ROWS * IN);
    CHECK(x && w && z && g && host && with && without);
    if (x && w && z && g && host && with && without) {
        for (int64_t i = 0; i < (int64_t)ROWS * IN; i++)
            host[i] = value_at((uint64_t)i, 4);
        ops->upload_f64(backend, x, host, (int64_t)ROWS * IN);
        ops->upload_f64(backend, w, host, OUT * IN);
        double worst_forward = 0, worst_gradient = 0;
        for (int pass = 0; pass < 2; pass++) {
            ax_skinny_gemm_disable(pass == 1);
            double *out = pass == 0 ? with : without;
            ops->gemm(backend, false, true, ROWS, OUT, IN, 1.0, x, IN, w, IN, 0.0, z, OUT);
            ops->download_f64(backend, out, z, (int64_t)ROWS * OUT);
            ops->gemm(backend, true, false, OUT, IN, ROWS, 0.5, z, OUT, x, IN, 0.0, g, IN);
            ops->download_f64(backend, out + ROWS * OUT, g, OUT * IN);
        }
        ax_skinny_gemm_disable(false);
        /* terms are at most 1, so sums of IN (forward) or ROWS x IN-sized
         * (gradient) terms bound the rounding */
        const double eps = precision == AX_PRECISION_F64 ? 1.2e-16 : 6e-8;
        for (int64_t i = 0; i < (int64_t)ROWS * OUT; i++)
            worst_forward = fmax(worst_forward, fabs(with[i] - without[i]));
        for (int64_t i = 0; i < OUT * IN; i++)
            worst_gradient = fmax(worst_gradient,
                                  fabs(with[ROWS * OUT + i] - without[ROWS * OUT + i]));
        CHECK(worst_forward <= 2 * IN * eps * IN);
        CHECK(worst_gradient <= 2 * ROWS * eps * IN);
        /* and not vacuously: the products are not all zero */
        double size = 0;
        for (int64_t i = 0; i < OUT * IN; i++)
            size += fabs(with[ROWS * OUT + i]);
        CHECK(size > 1.0);
    }
    ops->free(backend, x), ops->free(backend, w), ops->free(backend, z), ops->free(backend, g);
    free(host), free(with), free(without);
    ops->destroy(backend);
}

int main(void)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f"))
        TEST_SKIP("this CPU has no AVX-512F: the skinny GEMM kernels never run here");
    check_declined();
    const int64_t widths[] = {5, 6, 7, 8};
    /* the gradient's column chunks are 48 floats or 24 doubles wide: 96
     * fills whole chunks, and the others end one in each of its vectors */
    const int64_t lengths[] = {64, 65, 79, 96, 100, 143, 1024, 1031};
    const int64_t tall[] = {1, 2, 3, 4, 97, 700};
    for (int threads = 1; threads <= 2; threads++)
        for (size_t w = 0; w < sizeof widths / sizeof *widths; w++)
            for (size_t l = 0; l < sizeof lengths / sizeof *lengths; l++)
                for (size_t t = 0; t < sizeof tall / sizeof *tall; t++) {
                    const double alpha = (t % 2) ? -0.75 : 1.0, beta = (l % 3) ? 0.0 : 0.5;
                    const int64_t pad = (int64_t)(t % 3) * 3;
                    /* forward: C (tall, width) = A (tall, length) B (width, length)^T */
                    check_shape((shape){false, true, tall[t], widths[w], lengths[l], alpha, beta,
                                        pad},
                                threads);
                    /* gradient: C (width, length) = A (tall', width)^T B (tall', length),
                     * with at least 64 rows to sum over */
                    check_shape((shape){true, false, widths[w], lengths[l], 64 + tall[t], alpha,
                                        beta, pad},
                                threads);
                }
    /* large enough for the parallel branch, with the gradient's 128-row
     * blocks whole (512) and with a tail (2701, 300, 2700) */
    const shape large[] = {
        {false, true, 2701, 8, 1024, 1.0, 0.0, 0}, {true, false, 8, 1000, 2701, 1.0, 1.0, 8},
        {true, false, 6, 4099, 300, 2.0, 0.0, 1},  {true, false, 8, 1024, 512, 1.0, 0.0, 0},
        {true, false, 7, 1031, 2700, 0.5, 0.0, 0},
    };
    for (size_t i = 0; i < sizeof large / sizeof *large; i++) {
        for (int threads = 1; threads <= 2; threads++)
            check_shape(large[i], threads);
        check_thread_independence(large[i]);
    }
    check_backend(AX_PRECISION_F32);
    check_backend(AX_PRECISION_F64);
    return test_finish("test_skinny_gemm");
}
