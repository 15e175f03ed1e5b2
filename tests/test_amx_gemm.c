/* test_amx_gemm.c: bf16's GEMMs on AMX's tiles (src/backend/cpu/amx_gemm.c),
 * run through their scalar emulation (AXON_CONV_AMX=emulate: the same
 * packing, tile loads and order) on any CPU, and on the tiles themselves
 * where the CPU has AMX:
 * - against float64 products of the bf16-rounded operands (bf16_round.h)
 *   within gamma_k sum |a b| (each product of two bf16 values is exact in
 *   float32, so only the sums round; Higham 3.1), for the four
 *   transpositions, with m, n and k in whole tiles (LeNet's dense layer
 *   shapes, scaled down) and not (edges of 4, 12 and 24), and leading
 *   dimensions wider than the rows;
 * - alpha and beta: C = alpha times the sums (beta 0: C never read, NaN
 *   there stays out), plus beta C;
 * - the same bits on 1, 2 and 3 threads; ctest runs it all again with the
 *   operands packed one value at a time, as without AVX-512
 *   (AXON_CPU_KERNELS=generic: test_amx_gemm_generic);
 * - NaN and infinities in A reach their rows of C, as in float64;
 * - the bf16 backend's gemm runs the kernel where it is allowed (the same
 *   bits), not under AXON_CONV_AMX=off nor with a kernel named by
 *   AXON_BF16_KERNEL, nor for products under 2^20 multiply-adds (declined
 *   with nothing written). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/amx_gemm.h"
#include "backend/cpu/bf16_gemm.h"
#include "backend/cpu/bf16_round.h"
#include "backend/cpu/conv_weight_amx.h"
#include "conv_test_shapes.h"
#include "test_util.h"

static uint64_t random_state = 2031;

static float *random_floats(int64_t n)
{
    return random_floats_from(&random_state, n);
}

typedef struct gemm_case {
    bool trans_a, trans_b;
    int64_t m, n, k, lda, ldb, ldc;
} gemm_case;

static gemm_case make_case(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                           int64_t wider)
{
    return (gemm_case){trans_a, trans_b, m, n, k, (trans_a ? m : k) + wider,
                       (trans_b ? k : n) + wider, n + wider};
}

static float op(const float *v, bool trans, int64_t ld, int64_t row, int64_t col)
{
    return trans ? v[col * ld + row] : v[row * ld + col];
}

static void describe(const gemm_case *g, const char *mode, int threads, const char *what)
{
    fprintf(stderr, "%s: %s%s m %lld n %lld k %lld, %d threads: %s\n", mode,
            g->trans_a ? "A^T" : "A", g->trans_b ? " B^T" : " B", (long long)g->m,
            (long long)g->n, (long long)g->k, threads, what);
    test_failures++;
}

/* mode: "emulate", or NULL for the tiles */
static void check_case(const gemm_case *g, const char *mode, float alpha, float beta,
                       bool with_specials)
{
    const char *name = mode ? mode : "AMX";
    use_amx_mode(mode);
    const int64_t a_count = (g->trans_a ? g->k : g->m) * g->lda;
    const int64_t b_count = (g->trans_b ? g->n : g->k) * g->ldb, c_count = g->m * g->ldc;
    float *a = random_floats(a_count), *b = random_floats(b_count), *c0 = random_floats(c_count);
    if (with_specials) {
        a[g->trans_a ? 5 * g->lda + 2 : 2 * g->lda + 5] = NAN; /* row 2 */
        a[g->trans_a ? 7 * g->lda + 9 : 9 * g->lda + 7] = INFINITY; /* row 9 */
    }
    if (beta == 0.0f)
        for (int64_t i = 0; i < c_count; i++)
            c0[i] = NAN; /* never read */
    double *sums = malloc((size_t)(g->m * g->n) * sizeof *sums);
    double *magnitudes = malloc((size_t)(g->m * g->n) * sizeof *magnitudes);
    for (int64_t i = 0; i < g->m; i++)
        for (int64_t j = 0; j < g->n; j++) {
            double s = 0.0, mag = 0.0;
            for (int64_t kk = 0; kk < g->k; kk++) {
                const double term = (double)ax_bf16_round(op(a, g->trans_a, g->lda, i, kk)) *
                                    ax_bf16_round(op(b, g->trans_b, g->ldb, kk, j));
                s += term;
                mag += fabs(term);
            }
            sums[i * g->n + j] = s;
            magnitudes[i * g->n + j] = mag;
        }
    const double gamma = (double)g->k * 0x1p-24 / (1.0 - (double)g->k * 0x1p-24);
    float *c = malloc((size_t)c_count * sizeof *c), *first = malloc((size_t)c_count * sizeof *c);
    ax_bf16_workspace workspace = {0};
    CHECK(ax_amx_gemm_takes(g->m, g->n, g->k));
    for (int threads = 1; threads <= 3; threads++) {
        CHECK_OK(ax_set_threads(threads));
        memcpy(c, c0, (size_t)c_count * sizeof *c);
        if (!ax_amx_gemm(&workspace, g->trans_a, g->trans_b, g->m, g->n, g->k, alpha, a, g->lda,
                         b, g->ldb, beta, c, g->ldc)) {
            describe(g, name, threads, "declined");
            continue;
        }
        int64_t outside = 0, padding_touched = 0;
        for (int64_t i = 0; i < g->m; i++) {
            for (int64_t j = 0; j < g->n; j++) {
                const double expected = alpha * sums[i * g->n + j] +
                                        (beta == 0.0f ? 0.0 : beta * (double)c0[i * g->ldc + j]);
                const double got = c[i * g->ldc + j];
                if (isnan(expected) || isinf(expected)) {
                    outside += isnan(expected) != isnan(got) || isinf(expected) != isinf(got);
                    continue;
                }
                /* the sum's bound, scaled, and the rounding of the two last
                 * operations */
                const double scaled_c = beta == 0.0f ? 0.0 : fabs(beta * c0[i * g->ldc + j]);
                const double bound = fabs(alpha) * gamma * magnitudes[i * g->n + j] +
                                     0x1p-22 * (fabs(expected) + scaled_c);
                outside += !(fabs(got - expected) <= bound);
            }
            for (int64_t j = g->n; j < g->ldc; j++) /* beyond n: not C's */
                padding_touched += memcmp(&c[i * g->ldc + j], &c0[i * g->ldc + j], sizeof *c) != 0;
        }
        if (outside)
            describe(g, name, threads, "values outside the bound of float64's");
        if (padding_touched)
            describe(g, name, threads, "values beyond n written");
        if (threads == 1)
            memcpy(first, c, (size_t)c_count * sizeof *c);
        else if (memcmp(first, c, (size_t)c_count * sizeof *c) != 0)
            describe(g, name, threads, "bits unlike one thread's");
    }
    CHECK_OK(ax_set_threads(0));
    unsetenv("AXON_CONV_AMX");
    ax_bf16_workspace_free(&workspace);
    free(a), free(b), free(c0), free(c), free(first), free(sums), free(magnitudes);
}

/* The bf16 backend's gemm: the kernel's bits where it is allowed. */
static void check_backend(const char *mode, const char *kernel, bool allowed)
{
    const gemm_case g = make_case(false, true, 64, 512, 512, 0); /* 2^24 */
    float *a = random_floats(g.m * g.lda), *b = random_floats(g.n * g.ldb);
    float *c = malloc((size_t)(g.m * g.ldc) * sizeof *c);
    float *direct = malloc((size_t)(g.m * g.ldc) * sizeof *c);
    ax_bf16_workspace workspace = {0};
    use_amx_mode(mode);
    if (kernel)
        setenv("AXON_BF16_KERNEL", kernel, 1);
    for (int64_t i = 0; i < g.m * g.ldc; i++)
        direct[i] = NAN;
    CHECK(ax_amx_gemm(&workspace, false, true, g.m, g.n, g.k, 1.0f, a, g.lda, b, g.ldb, 0.0f,
                      direct, g.ldc) == allowed);
    ax_backend *bf16 = ax_backend_cpu_create(AX_PRECISION_BF16);
    CHECK(bf16 != NULL);
    if (bf16) {
        bf16->ops->gemm(bf16, false, true, g.m, g.n, g.k, 1.0, a, g.lda, b, g.ldb, 0.0, c, g.ldc);
        CHECK((memcmp(c, direct, (size_t)(g.m * g.ldc) * sizeof *c) == 0) == allowed);
        bf16->ops->destroy(bf16);
    }
    unsetenv("AXON_BF16_KERNEL");
    unsetenv("AXON_CONV_AMX");
    ax_bf16_workspace_free(&workspace);
    free(a), free(b), free(c), free(direct);
}

static void check_declines(void)
{
    setenv("AXON_CONV_AMX", "emulate", 1);
    float one = 7.0f;
    ax_bf16_workspace workspace = {0};
    CHECK(!ax_amx_gemm_takes(64, 128, 127)); /* 2^20 - 2^13 */
    CHECK(!ax_amx_gemm(&workspace, false, false, 64, 128, 127, 1.0f, &one, 127, &one, 128, 0.0f,
                       &one, 128) &&
          one == 7.0f);
    CHECK(ax_amx_gemm_takes(64, 128, 128));
    setenv("AXON_BF16_KERNEL", "native", 1);
    CHECK(!ax_amx_gemm_takes(64, 512, 512));
    setenv("AXON_BF16_KERNEL", "auto", 1);
    CHECK(ax_amx_gemm_takes(64, 512, 512));
    unsetenv("AXON_BF16_KERNEL");
    setenv("AXON_CONV_AMX", "off", 1);
    CHECK(!ax_amx_gemm_takes(64, 512, 512));
    unsetenv("AXON_CONV_AMX");
    ax_bf16_workspace_free(&workspace);
}

int main(void)
{
    check_declines();
    const gemm_case cases[] = {
        make_case(false, true, 128, 512, 256, 0),   /* the forward pass: x W^T */
        make_case(true, false, 512, 256, 128, 0),   /* the weight gradient: d^T x */
        make_case(false, false, 128, 256, 512, 0),  /* the input gradient: d W */
        make_case(true, true, 100, 300, 600, 3),    /* edges of 4, 12 and 24, wider rows */
        make_case(false, false, 36, 1000, 520, 1),
    };
    const bool hardware = (unsetenv("AXON_CONV_AMX"), ax_conv_amx_mode_chosen()) ==
                          AX_CONV_AMX_HARDWARE;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        check_case(&cases[i], "emulate", 1.0f, 0.0f, false);
        if (hardware)
            check_case(&cases[i], NULL, 1.0f, 0.0f, false);
    }
    check_case(&cases[3], "emulate", -0.5f, 2.0f, true);
    check_case(&cases[0], "emulate", 1.0f, 1.0f, true);
    if (hardware) {
        check_case(&cases[3], NULL, -0.5f, 2.0f, true);
        check_case(&cases[0], NULL, 1.0f, 1.0f, true);
    }
    check_backend("emulate", NULL, true);
    check_backend("emulate", "emulated", false);
    check_backend("off", NULL, false);
    if (hardware)
        check_backend(NULL, NULL, true);
    else
        printf("amx_gemm: no AMX here (or Linux refuses its tile state): the emulation alone "
               "was checked\n");
    return test_finish("amx_gemm");
}
