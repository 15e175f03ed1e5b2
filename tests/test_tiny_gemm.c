/* test_tiny_gemm.c: the kernels for tiny GEMMs (src/backend/cpu/tiny_gemm.c)
 * against a plain float64 triple loop, in float and double, for every
 * shape class they take (A B^T and A B with 2 to 8 columns and an inner
 * dimension up to 16; A^T B with up to 4 x 8 results), at the edges of
 * those limits, with row counts that leave every tail of the 4-row groups
 * and of the 2-row steps, leading dimensions larger than the rows, alpha
 * and beta, and beta 0 over C full of NaN (which must not be read). Then
 * the shapes they must decline, and the CPU backend's gemm: that it takes
 * the kernels (the same bits as calling them), that with them on and off
 * it agrees within rounding, and with 1 and 2 threads to the bit. The row
 * kernel needs AVX-512VL; without it (or with AXON_CPU_KERNELS=generic, as
 * test_tiny_gemm_generic runs it) those shapes must be declined, which is
 * checked instead. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/tiny_gemm.h"
#include "test_reference.h"
#include "test_util.h"

/* Whether the row kernel (A B^T, A B) can run on this CPU. */
static bool rows_supported;

typedef struct {
    bool trans_a, trans_b;
    int64_t m, n, k;
    double alpha, beta;
    int64_t pad; /* leading dimensions exceed the widths by this much */
} shape;

static int failures_reported = 0;

/* Runs one shape in both precisions through the kernels and compares with
 * the reference; C's elements past n in each row must stay as they were. */
static void check_shape(shape s)
{
    const int64_t a_rows = s.trans_a ? s.k : s.m, a_cols = s.trans_a ? s.m : s.k;
    const int64_t b_rows = s.trans_b ? s.n : s.k, b_cols = s.trans_b ? s.k : s.n;
    const int64_t lda = a_cols + s.pad, ldb = b_cols + s.pad, ldc = s.n + s.pad;
    /* the last row ends at its width: nothing may be read past it */
    const int64_t a_size = (a_rows - 1) * lda + a_cols, b_size = (b_rows - 1) * ldb + b_cols;
    const int64_t c_size = (s.m - 1) * ldc + s.n;
    double *a = malloc(sizeof(double) * (size_t)a_size);
    double *b = malloc(sizeof(double) * (size_t)b_size);
    double *c_in = malloc(sizeof(double) * (size_t)c_size);
    double *expected = malloc(sizeof(double) * (size_t)(s.m * s.n));
    double *magnitude = malloc(sizeof(double) * (size_t)(s.m * s.n));
    double *c64 = malloc(sizeof(double) * (size_t)c_size);
    float *a32 = malloc(sizeof(float) * (size_t)a_size);
    float *b32 = malloc(sizeof(float) * (size_t)b_size);
    float *c32 = malloc(sizeof(float) * (size_t)c_size);
    CHECK(a && b && c_in && expected && magnitude && c64 && a32 && b32 && c32);
    if (!(a && b && c_in && expected && magnitude && c64 && a32 && b32 && c32))
        goto done;
    for (int64_t i = 0; i < a_size; i++)
        a[i] = (float)value_at((uint64_t)i, 1), a32[i] = (float)a[i];
    for (int64_t i = 0; i < b_size; i++)
        b[i] = (float)value_at((uint64_t)i, 2), b32[i] = (float)b[i];
    for (int64_t i = 0; i < c_size; i++) {
        const bool padding = i % ldc >= s.n;
        /* padding holds 7: the kernels must not write it, whatever beta */
        c_in[i] = padding ? 7.0 : s.beta == 0 ? NAN : (float)value_at((uint64_t)i, 3);
        c64[i] = c_in[i], c32[i] = (float)c_in[i];
    }
    reference_gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, s.alpha, a, lda, b, ldb, s.beta, c_in, ldc,
                   expected, magnitude);

    const bool took64 = ax_tiny_gemm_f64(s.trans_a, s.trans_b, s.m, s.n, s.k, s.alpha, a, lda, b,
                                         ldb, s.beta, c64, ldc);
    const bool took32 = ax_tiny_gemm_f32(s.trans_a, s.trans_b, s.m, s.n, s.k, (float)s.alpha,
                                         a32, lda, b32, ldb, (float)s.beta, c32, ldc);
    const bool expect = s.trans_a || rows_supported;
    CHECK(took64 == expect && took32 == expect);
    if (!took64 || !took32)
        goto done;
    const double worst64 = worst_error_f64(c64, ldc, s.m, s.n, expected, magnitude);
    const double worst32 = worst_error_f32(c32, ldc, s.m, s.n, expected, magnitude);
    bool padding_kept = true;
    for (int64_t i = 0; i + 1 < s.m; i++)
        for (int64_t j = s.n; j < ldc; j++)
            padding_kept = padding_kept && c64[i * ldc + j] == 7.0 && c32[i * ldc + j] == 7.0f;
    /* any order of summation is within k ulps of the terms' magnitude */
    const double bound64 = (double)(s.k + 2) * 1.2e-16, bound32 = (double)(s.k + 2) * 6e-8;
    if (!(worst64 <= bound64 && worst32 <= bound32 && padding_kept) && failures_reported++ < 10)
        fprintf(stderr,
                "  shape ta=%d tb=%d m=%lld n=%lld k=%lld alpha=%g beta=%g pad=%lld: "
                "errors %.2e (f64) %.2e (f32), padding %s\n",
                s.trans_a, s.trans_b, (long long)s.m, (long long)s.n, (long long)s.k, s.alpha,
                s.beta, (long long)s.pad, worst64, worst32, padding_kept ? "kept" : "written");
    CHECK(worst64 <= bound64);
    CHECK(worst32 <= bound32);
    CHECK(padding_kept);
done:
    free(a), free(b), free(c_in), free(expected), free(magnitude), free(c64);
    free(a32), free(b32), free(c32);
}

/* Shapes the kernels must decline, leaving C alone. */
static void check_declined(void)
{
    float a[64 * 64] = {0}, b[64 * 64] = {0}, c[64 * 64];
    double a64[64 * 64] = {0}, b64[64 * 64] = {0}, c64[64 * 64];
    for (int i = 0; i < 64 * 64; i++)
        c[i] = 7.0f, c64[i] = 7.0;
    CHECK(!ax_tiny_gemm_f32(false, true, 64, 9, 8, 1, a, 64, b, 64, 0, c, 64));   /* n > 8 */
    CHECK(!ax_tiny_gemm_f32(false, false, 64, 8, 17, 1, a, 64, b, 64, 0, c, 64)); /* k > 16 */
    CHECK(!ax_tiny_gemm_f32(false, true, 64, 1, 8, 1, a, 64, b, 64, 0, c, 64));   /* n = 1 */
    CHECK(!ax_tiny_gemm_f32(true, false, 5, 8, 64, 1, a, 64, b, 64, 0, c, 64));   /* m > 4 */
    CHECK(!ax_tiny_gemm_f32(true, false, 4, 9, 64, 1, a, 64, b, 64, 0, c, 64));   /* n > 8 */
    CHECK(!ax_tiny_gemm_f32(true, true, 2, 2, 2, 1, a, 64, b, 64, 0, c, 64));     /* A^T B^T */
    CHECK(!ax_tiny_gemm_f32(false, true, 0, 3, 8, 1, a, 64, b, 64, 0, c, 64));    /* empty */
    CHECK(!ax_tiny_gemm_f32(true, false, 3, 8, 0, 1, a, 64, b, 64, 0, c, 64));
    CHECK(!ax_tiny_gemm_f32(true, false, 3, 8, 64, 1, a, 2, b, 8, 0, c, 8)); /* lda < m */
    CHECK(!ax_tiny_gemm_f32(true, false, 3, 8, 64, 1, a, 3, b, 7, 0, c, 8)); /* ldb < n */
    CHECK(!ax_tiny_gemm_f32(false, true, 64, 3, 8, 1, a, 7, b, 8, 0, c, 3)); /* lda < k */
    CHECK(!ax_tiny_gemm_f32(false, true, 64, 3, 8, 1, a, 8, b, 8, 0, c, 2)); /* ldc < n */
    CHECK(!ax_tiny_gemm_f64(false, true, 64, 9, 8, 1, a64, 64, b64, 64, 0, c64, 64));
    CHECK(!ax_tiny_gemm_f64(false, false, 64, 8, 17, 1, a64, 64, b64, 64, 0, c64, 64));
    CHECK(!ax_tiny_gemm_f64(true, false, 5, 8, 64, 1, a64, 64, b64, 64, 0, c64, 64));
    CHECK(!ax_tiny_gemm_f64(true, true, 2, 2, 2, 1, a64, 64, b64, 64, 0, c64, 64));
    /* the output layers of the Fashion-MNIST MLP (10 wide) and of the
     * regression benchmark (1 wide over 256) keep the BLAS */
    CHECK(!ax_tiny_gemm_f32(false, true, 64, 10, 128, 1, a, 128, b, 128, 0, c, 10));
    CHECK(!ax_tiny_gemm_f32(true, false, 10, 128, 64, 1, a, 10, b, 128, 0, c, 128));
    CHECK(!ax_tiny_gemm_f32(false, true, 16, 1, 256, 1, a, 256, b, 256, 0, c, 1));
    CHECK(!ax_tiny_gemm_f32(true, false, 1, 256, 16, 1, a, 1, b, 256, 0, c, 256));
    ax_tiny_gemm_disable(true);
    CHECK(!ax_tiny_gemm_f32(true, false, 3, 8, 64, 1, a, 3, b, 8, 0, c, 8));
    CHECK(!ax_tiny_gemm_f64(false, true, 64, 3, 8, 1, a64, 8, b64, 8, 0, c64, 3));
    ax_tiny_gemm_disable(false);
    bool untouched = true;
    for (int i = 0; i < 64 * 64; i++)
        untouched = untouched && c[i] == 7.0f && c64[i] == 7.0;
    CHECK(untouched);
}

/* The galaxy classifier's three layer-2 products (1024-8-3 on 2700 rows)
 * through the
 * CPU backend's gemm: with the kernels against the BLAS alone (the same
 * within rounding), and with 1 and 2 threads (the same bits). */
static void check_backend(ax_precision precision)
{
    enum { ROWS = 2700, HIDDEN = 8, OUT = 3, RUNS = 3 };
    ax_backend *backend = ax_backend_cpu_create(precision);
    CHECK(backend != NULL);
    if (!backend)
        return;
    const ax_backend_ops *ops = backend->ops;
    const size_t real = (size_t)backend->real_size;
    void *h = ops->alloc(backend, (int64_t)real * ROWS * HIDDEN);
    void *w = ops->alloc(backend, (int64_t)real * OUT * HIDDEN);
    void *z = ops->alloc(backend, (int64_t)real * ROWS * OUT);
    void *g = ops->alloc(backend, (int64_t)real * OUT * HIDDEN);
    void *dh = ops->alloc(backend, (int64_t)real * ROWS * HIDDEN);
    void *g_direct = ops->alloc(backend, (int64_t)real * OUT * HIDDEN);
    enum { TOTAL = ROWS * OUT + OUT * HIDDEN + ROWS * HIDDEN };
    double *host = malloc(sizeof(double) * ROWS * HIDDEN);
    double *out[RUNS];
    for (int r = 0; r < RUNS; r++)
        out[r] = malloc(sizeof(double) * TOTAL);
    CHECK(h && w && z && g && dh && g_direct && host && out[0] && out[1] && out[2]);
    if (h && w && z && g && dh && g_direct && host && out[0] && out[1] && out[2]) {
        for (int64_t i = 0; i < (int64_t)ROWS * HIDDEN; i++)
            host[i] = value_at((uint64_t)i, 4);
        ops->upload_f64(backend, h, host, (int64_t)ROWS * HIDDEN);
        ops->upload_f64(backend, w, host + 5, OUT * HIDDEN);
        /* run 0: kernels, 1 thread; run 1: kernels, 2 threads; run 2: BLAS */
        for (int r = 0; r < RUNS; r++) {
            omp_set_num_threads(r == 1 ? 2 : 1);
            ax_tiny_gemm_disable(r == 2);
            /* forward z = h w^T, weight gradient g = z^T h (z standing in
             * for delta), input gradient dh = 0.5 z w + 0.25 dh */
            ops->gemm(backend, false, true, ROWS, OUT, HIDDEN, 1.0, h, HIDDEN, w, HIDDEN, 0.0, z,
                      OUT);
            ops->gemm(backend, true, false, OUT, HIDDEN, ROWS, 1.0, z, OUT, h, HIDDEN, 0.0, g,
                      HIDDEN);
            ops->upload_f64(backend, dh, host, (int64_t)ROWS * HIDDEN);
            ops->gemm(backend, false, false, ROWS, HIDDEN, OUT, 0.5, z, OUT, w, HIDDEN, 0.25, dh,
                      HIDDEN);
            if (r == 0) {
                /* the backend really takes the kernels: its gradient is
                 * theirs, bit for bit */
                const bool f32 = precision == AX_PRECISION_F32;
                const bool took =
                    f32 ? ax_tiny_gemm_f32(true, false, OUT, HIDDEN, ROWS, 1.0f, z, OUT, h,
                                           HIDDEN, 0.0f, g_direct, HIDDEN)
                        : ax_tiny_gemm_f64(true, false, OUT, HIDDEN, ROWS, 1.0, z, OUT, h,
                                           HIDDEN, 0.0, g_direct, HIDDEN);
                CHECK(took);
                CHECK(memcmp(g, g_direct, real * OUT * HIDDEN) == 0);
            }
            ops->download_f64(backend, out[r], z, ROWS * OUT);
            ops->download_f64(backend, out[r] + ROWS * OUT, g, OUT * HIDDEN);
            ops->download_f64(backend, out[r] + ROWS * OUT + OUT * HIDDEN, dh, ROWS * HIDDEN);
        }
        ax_tiny_gemm_disable(false);
        omp_set_num_threads(1);
        CHECK(memcmp(out[0], out[1], sizeof(double) * TOTAL) == 0);
        /* |h|, |w| <= 1, so |z| <= HIDDEN: with (k + 2) eps times the sum of
         * |terms| for each side, these bound any two orders' rounding */
        const double eps = precision == AX_PRECISION_F64 ? 1.2e-16 : 6e-8;
        double worst_z = 0, worst_g = 0, worst_dh = 0, size = 0;
        for (int64_t i = 0; i < TOTAL; i++) {
            const double d = fabs(out[0][i] - out[2][i]);
            if (i < ROWS * OUT)
                worst_z = fmax(worst_z, d);
            else if (i < ROWS * OUT + OUT * HIDDEN)
                worst_g = fmax(worst_g, d), size += fabs(out[0][i]);
            else
                worst_dh = fmax(worst_dh, d);
        }
        CHECK(worst_z <= 2 * (HIDDEN + 2) * eps * HIDDEN);
        CHECK(worst_g <= 2 * (ROWS + 2) * eps * ROWS * HIDDEN);
        CHECK(worst_dh <= 2 * (OUT + 2) * eps * (0.5 * OUT * HIDDEN + 0.25));
        /* and not vacuously: the products are not all zero */
        CHECK(size > 1.0);
    }
    ops->free(backend, h), ops->free(backend, w), ops->free(backend, z);
    ops->free(backend, g), ops->free(backend, dh), ops->free(backend, g_direct);
    free(host);
    for (int r = 0; r < RUNS; r++)
        free(out[r]);
    ops->destroy(backend);
}

int main(void)
{
    /* the CPU's AVX-512VL, unless AXON_CPU_KERNELS=generic (CTest's
     * test_tiny_gemm_generic) takes the path of a CPU without it */
    rows_supported = ax_cpu_kernels_avx512vl();
    if (!rows_supported)
        fprintf(stderr, "  no AVX-512VL%s: checking that A B and A B^T are declined\n",
                ax_cpu_kernels_generic() ? " (AXON_CPU_KERNELS=generic)" : "");
    check_declined();
    /* the row kernel: C (m, n) = A (m, k) op(B); m leaves every tail of its
     * 4-row groups, n both vector widths (4 and 8) and their ends, k the
     * whole range */
    const int64_t rows[] = {1, 2, 3, 4, 5, 7, 8, 9, 33};
    const int64_t widths[] = {2, 3, 4, 5, 7, 8};
    const int64_t inner[] = {1, 2, 3, 5, 8, 13, 16};
    int count = 0;
    for (int trans_b = 0; trans_b < 2; trans_b++)
        for (size_t r = 0; r < sizeof rows / sizeof *rows; r++)
            for (size_t w = 0; w < sizeof widths / sizeof *widths; w++)
                for (size_t i = 0; i < sizeof inner / sizeof *inner; i++, count++) {
                    const double alpha = count % 2 ? -0.75 : 1.0;
                    const double beta = count % 3 == 0 ? 0.0 : count % 3 == 1 ? 1.0 : 0.5;
                    const int64_t pad = (count / 2) % 2 ? 3 : 0;
                    check_shape((shape){false, trans_b, rows[r], widths[w], inner[i], alpha, beta,
                                        pad});
                }
    /* the weight gradient: C (m, n) = A (k, m)^T B (k, n); k leaves both
     * parities of the 2-row steps and long sums, n below, at and above 4 */
    const int64_t results[] = {1, 2, 3, 4};
    const int64_t columns[] = {1, 2, 3, 4, 5, 7, 8};
    const int64_t lengths[] = {1, 2, 3, 4, 5, 17, 100, 2701};
    for (size_t r = 0; r < sizeof results / sizeof *results; r++)
        for (size_t w = 0; w < sizeof columns / sizeof *columns; w++)
            for (size_t l = 0; l < sizeof lengths / sizeof *lengths; l++, count++) {
                const double alpha = count % 2 ? 1.0 : 2.0;
                const double beta = count % 3 == 0 ? 0.0 : count % 3 == 1 ? 1.0 : -0.5;
                const int64_t pad = count % 4 < 2 ? 0 : 5;
                check_shape((shape){true, false, results[r], columns[w], lengths[l], alpha, beta,
                                    pad});
            }
    check_backend(AX_PRECISION_F32);
    check_backend(AX_PRECISION_F64);
    return test_finish("test_tiny_gemm");
}
