/* test_onednn_matmul.c: GEMMs on oneDNN's matmul in fixed blocks
 * (src/backend/cpu/onednn_matmul.c): the bf16 backend's, forced with
 * AXON_BF16_KERNEL=onednn so that any AVX-512 CPU runs them (oneDNN's bf16
 * kernels there, AMX's on CPUs that have it), and float32's.
 *
 * Against a float64 triple loop of the operands, rounded to bfloat16 as
 * ax_bf16_round does it for bf16: the products of two bfloat16 values are
 * exact in float32, so only the float32 sums may err, by at most (k + 2)
 * 2^-23 of the sum of |terms| in any order (float32's own products add one
 * rounding each, within the same bound). bf16 rounded any other way
 * (truncated, or not at all) would err near 2^-9 of it, far outside. Every
 * transpose, padded leading dimensions, shapes that cross the 256-row and
 * 64-column blocks; 1, 2 and 3 threads bit-identical; C's padding never
 * written; NaN and infinity carried; another alpha or beta declined; the
 * backends' gemm the same bits as a direct call where the rule sends the
 * shape here; a shape's bits the same after its primitive was evicted and
 * made again. Skips (exit 77) in a build without oneDNN. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_reference.h"
#include "test_util.h"

#ifndef AXON_ONEDNN
int main(void)
{
    printf("SKIP: built without oneDNN (AXON_ONEDNN=OFF or libdnnl-dev absent)\n");
    return 77;
}
#else
#include "backend/backend.h"
#include "backend/cpu/bf16_gemm.h"
#include "backend/cpu/onednn_matmul.h"

typedef bool (*matmul_function)(ax_onednn_matmuls **, bool, bool, int64_t, int64_t, int64_t, float,
                                const float *, int64_t, const float *, int64_t, float, float *,
                                int64_t);
/* The entry under test, and whether its operands are rounded to bf16. */
static matmul_function under_test = ax_onednn_bf16_matmul;
static bool rounded = true;

typedef struct {
    bool trans_a, trans_b;
    int64_t m, n, k, pad;
} shape;

typedef struct operands {
    shape s;
    int64_t lda, ldb, ldc;
    float *a, *b;
} operands;

static operands operands_make(shape s, uint64_t seed)
{
    operands o = {.s = s};
    const int64_t a_rows = s.trans_a ? s.k : s.m, a_cols = s.trans_a ? s.m : s.k;
    const int64_t b_rows = s.trans_b ? s.n : s.k, b_cols = s.trans_b ? s.k : s.n;
    o.lda = a_cols + s.pad, o.ldb = b_cols + s.pad, o.ldc = s.n + s.pad;
    o.a = malloc(sizeof(float) * (size_t)(a_rows * o.lda));
    o.b = malloc(sizeof(float) * (size_t)(b_rows * o.ldb));
    CHECK(o.a && o.b);
    if (o.a && o.b) {
        for (int64_t i = 0; i < a_rows * o.lda; i++)
            o.a[i] = (float)value_at((uint64_t)i, seed);
        for (int64_t i = 0; i < b_rows * o.ldb; i++)
            o.b[i] = (float)value_at((uint64_t)i, seed + 1);
    }
    return o;
}

static void operands_free(operands *o) { free(o->a), free(o->b); }

/* C of o on `threads` threads, its padding preset to a marker; NULL when declined. */
static float *product(ax_onednn_matmuls **matmuls, const operands *o, int threads)
{
    const shape s = o->s;
    float *c = malloc(sizeof(float) * (size_t)(s.m * o->ldc));
    CHECK(c != NULL);
    if (!c)
        return NULL;
    for (int64_t i = 0; i < s.m * o->ldc; i++)
        c[i] = -7.0f;
    omp_set_num_threads(threads);
    const bool taken = under_test(matmuls, s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f,
                                             o->a, o->lda, o->b, o->ldb, 0.0f, c, o->ldc);
    CHECK(taken);
    if (!taken) {
        free(c);
        return NULL;
    }
    return c;
}

/* The worst error of c relative to the float64 sum of |terms| of the
 * rounded operands, and whether C's padding kept its marker. */
static double worst_error(const operands *o, const float *c)
{
    const shape s = o->s;
    const int64_t a_count = (s.trans_a ? s.k : s.m) * o->lda;
    const int64_t b_count = (s.trans_b ? s.n : s.k) * o->ldb;
    double *a = malloc(sizeof(double) * (size_t)a_count), *b = malloc(sizeof(double) * (size_t)b_count);
    double *expected = malloc(sizeof(double) * (size_t)(s.m * s.n));
    double *magnitude = malloc(sizeof(double) * (size_t)(s.m * s.n));
    double worst = INFINITY;
    CHECK(a && b && expected && magnitude);
    if (a && b && expected && magnitude) {
        for (int64_t i = 0; i < a_count; i++)
            a[i] = rounded ? ax_bf16_round(o->a[i]) : o->a[i];
        for (int64_t i = 0; i < b_count; i++)
            b[i] = rounded ? ax_bf16_round(o->b[i]) : o->b[i];
        reference_gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0, a, o->lda, b, o->ldb, 0.0, NULL,
                       o->ldc, expected, magnitude);
        worst = 0.0;
        for (int64_t i = 0; i < s.m; i++) {
            for (int64_t j = 0; j < s.n; j++) {
                const double e = fabs(c[i * o->ldc + j] - expected[i * s.n + j]) /
                                 (magnitude[i * s.n + j] + 1e-30);
                worst = e > worst || e != e ? e : worst;
            }
            for (int64_t j = s.n; j < o->ldc; j++)
                CHECK(c[i * o->ldc + j] == -7.0f);
        }
    }
    free(a), free(b), free(expected), free(magnitude);
    return worst;
}

static void check_shapes(ax_onednn_matmuls **matmuls)
{
    static const shape sizes[] = {
        {0, 0, 1, 1, 1, 0},     {0, 0, 7, 65, 33, 2},     {0, 0, 300, 130, 77, 1},
        {0, 0, 128, 64, 128, 0}, {0, 0, 257, 129, 300, 3}, {0, 0, 512, 128, 20, 0},
        /* one block with a long sum: run outside any team unless the entry makes one */
        {0, 0, 128, 64, 2048, 0}, {0, 0, 16, 16, 65536, 0},
    };
    double worst = 0.0;
    int count = 0;
    for (int t = 0; t < 4; t++)
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            shape s = sizes[i];
            s.trans_a = t & 1, s.trans_b = t >> 1;
            operands o = operands_make(s, 40 + (uint64_t)i);
            float *one = product(matmuls, &o, 1);
            if (one) {
                const double e = worst_error(&o, one);
                const double bound = (double)(s.k + 2) * 0x1p-23;
                if (!(e <= bound))
                    fprintf(stderr, "  ta=%d tb=%d m=%lld n=%lld k=%lld: error %.3e > %.3e\n",
                            s.trans_a, s.trans_b, (long long)s.m, (long long)s.n,
                            (long long)s.k, e, bound);
                CHECK(e <= bound);
                worst = e > worst ? e : worst;
                for (int threads = 2; threads <= 3; threads++) {
                    float *many = product(matmuls, &o, threads);
                    CHECK(many && memcmp(one, many, sizeof(float) * (size_t)(s.m * o.ldc)) == 0);
                    free(many);
                }
            }
            free(one);
            operands_free(&o);
            count++;
        }
    omp_set_num_threads(2);
    printf("%s: %d shapes x 4 transposes: worst error %.2e of sum |terms|%s; "
           "1, 2 and 3 threads identical; kernel %s\n",
           rounded ? "bf16" : "float32", count / 4, worst,
           rounded ? " of the rounded operands" : "", ax_onednn_matmuls_kernel(*matmuls));
}

/* 1 + 2^-8 rounds to 1 (even) and 1 + 3 2^-8 to 1 + 2^-6; NaN and
 * infinity reach their row and column. */
static void check_values(ax_onednn_matmuls **matmuls)
{
    const float a[3] = {1.0f + 0x1p-8f, 1.0f + 0x1p-8f * 3.0f, 2.0f}, one[1] = {1.0f};
    float c[3] = {0, 0, 0};
    CHECK(under_test(matmuls, false, false, 3, 1, 1, 1.0f, a, 1, one, 1, 0.0f, c, 1));
    if (rounded)
        CHECK(c[0] == 1.0f && c[1] == 1.0f + 0x1p-6f && c[2] == 2.0f);
    else
        CHECK(c[0] == a[0] && c[1] == a[1] && c[2] == 2.0f);
    enum { M = 5, N = 70, K = 9 };
    float x[M * K], w[K * N], y[M * N];
    for (int i = 0; i < M * K; i++)
        x[i] = (float)value_at((uint64_t)i, 3);
    for (int i = 0; i < K * N; i++)
        w[i] = (float)value_at((uint64_t)i, 4);
    x[1 * K + 4] = NAN;      /* row 1 all NaN */
    w[2 * N + 66] = INFINITY; /* column 66: +-inf, or NaN in row 1 */
    CHECK(under_test(matmuls, false, false, M, N, K, 1.0f, x, K, w, N, 0.0f, y, N));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            if (i == 1)
                CHECK(isnan(y[i * N + j]));
            else if (j == 66)
                CHECK(isinf(y[i * N + j]));
            else
                CHECK(isfinite(y[i * N + j]));
        }
}

static void check_declines(ax_onednn_matmuls **matmuls)
{
    float a[4] = {1, 2, 3, 4}, c[4] = {0, 0, 0, 0};
    CHECK(!under_test(matmuls, false, false, 2, 2, 2, 2.0f, a, 2, a, 2, 0.0f, c, 2));
    CHECK(!under_test(matmuls, false, false, 2, 2, 2, 1.0f, a, 2, a, 2, 1.0f, c, 2));
    CHECK(!under_test(matmuls, false, false, 0, 2, 2, 1.0f, a, 2, a, 2, 0.0f, c, 2));
}

/* The first shape's bits, then enough other shapes to evict its
 * primitives, then the first again. */
static void check_remade(ax_onednn_matmuls **matmuls)
{
    operands o = operands_make((shape){false, true, 300, 100, 50, 0}, 60);
    float *first = product(matmuls, &o, 2);
    for (int64_t k = 1; k <= 30; k++) {
        operands other = operands_make((shape){false, false, 3, 5, k, 0}, 70);
        free(product(matmuls, &other, 2));
        operands_free(&other);
    }
    float *again = product(matmuls, &o, 2);
    CHECK(first && again && memcmp(first, again, sizeof(float) * 300 * 100) == 0);
    free(first), free(again);
    operands_free(&o);
}

/* backend's gemm of s (forward, alpha 1, beta 0) gives the bits of the
 * entry under test called directly, on 2 threads. */
static bool backend_matches(ax_backend *backend, ax_onednn_matmuls **matmuls, shape s,
                            uint64_t seed)
{
    operands o = operands_make(s, seed);
    float *direct = product(matmuls, &o, 2);
    float *c = malloc(sizeof(float) * (size_t)(s.m * o.ldc));
    bool same = direct && c;
    if (same) {
        backend->ops->gemm(backend, s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0, o.a, o.lda, o.b,
                           o.ldb, 0.0, c, o.ldc);
        same = memcmp(direct, c, sizeof(float) * (size_t)(s.m * o.ldc)) == 0;
    }
    free(direct), free(c);
    operands_free(&o);
    return same;
}

/* With the variable set, the bf16 backend's gemm is this one from 2^24
 * multiply-adds, bf16_gemm.c's below. */
static void check_backend(ax_onednn_matmuls **matmuls)
{
    ax_backend *backend = ax_backend_cpu_create(AX_PRECISION_BF16);
    CHECK(backend != NULL);
    if (!backend)
        return;
    CHECK(ax_onednn_bf16_matmul_takes(256, 256, 256) && !ax_onednn_bf16_matmul_takes(256, 256, 255));
    CHECK(backend_matches(backend, matmuls, (shape){false, true, 256, 256, 256, 0}, 80));
    /* below: bf16_gemm.c's kernels, whose sums run in another order (the
     * backend's emulation through its own float32 kernels): within bf16's
     * bound of the float64 product of the rounded operands, not bits */
    operands small = operands_make((shape){false, true, 64, 64, 64, 0}, 81);
    float *c = malloc(sizeof(float) * 64 * 64);
    CHECK(c != NULL);
    if (c) {
        backend->ops->gemm(backend, false, true, 64, 64, 64, 1.0, small.a, 64, small.b, 64, 0.0,
                           c, 64);
        CHECK(worst_error(&small, c) <= 66.0 * 0x1p-23);
    }
    free(c);
    operands_free(&small);
    backend->ops->destroy(backend);
}

/* The float32 backend's gemm takes the forward products of 2^24
 * multiply-adds and more here (on AVX-512 CPUs), the others elsewhere;
 * AXON_ONEDNN_MATMUL=off keeps them all elsewhere, =on sends them all. */
static void check_f32_backend(ax_onednn_matmuls **matmuls)
{
    CHECK(!ax_onednn_f32_matmul_takes(false, true, 256, 256, 255));
    CHECK(!ax_onednn_f32_matmul_takes(true, false, 256, 256, 256));
    CHECK(!ax_onednn_f32_matmul_takes(false, false, 256, 256, 256));
    setenv("AXON_ONEDNN_MATMUL", "off", 1);
    CHECK(!ax_onednn_f32_matmul_takes(false, true, 256, 256, 256));
    setenv("AXON_ONEDNN_MATMUL", "on", 1);
    CHECK(ax_onednn_f32_matmul_takes(true, false, 2, 2, 2));
    unsetenv("AXON_ONEDNN_MATMUL");
    if (!ax_onednn_f32_matmul_takes(false, true, 256, 256, 256)) {
        printf("float32: this CPU has no AVX-512: its forward products stay with the BLAS\n");
        return;
    }
    ax_backend *backend = ax_backend_cpu_create(AX_PRECISION_F32);
    CHECK(backend != NULL);
    if (!backend)
        return;
    CHECK(backend_matches(backend, matmuls, (shape){false, true, 300, 256, 256, 0}, 90));
    backend->ops->destroy(backend);
}

int main(void)
{
    setenv("AXON_BF16_KERNEL", "onednn", 1);
    CHECK(ax_onednn_bf16_matmul_chosen());
    ax_onednn_matmuls *matmuls = NULL;
    check_shapes(&matmuls);
    check_values(&matmuls);
    check_declines(&matmuls);
    check_remade(&matmuls);
    check_backend(&matmuls);
    ax_onednn_matmuls_free(matmuls);
    /* float32: the same checks of its entry, and its backend's rule */
    under_test = ax_onednn_f32_matmul;
    rounded = false;
    matmuls = NULL;
    check_shapes(&matmuls);
    check_values(&matmuls);
    check_declines(&matmuls);
    check_remade(&matmuls);
    check_f32_backend(&matmuls);
    ax_onednn_matmuls_free(matmuls);
    return test_finish("test_onednn_matmul");
}
#endif
