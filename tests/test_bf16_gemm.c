/* test_bf16_gemm.c: AX_PRECISION_BF16's GEMM (src/backend/cpu/bf16_gemm.c)
 * against a float64 triple loop of the unrounded operands. Rounding each
 * operand to bfloat16 (8 significant bits, round to nearest even) moves it
 * by at most 2^-8 of itself, so each product by at most about 2 * 2^-8 of
 * its size, and float32 sums add k * 2^-24: every element must lie within
 * (2 * 2^-8 + 2^-16 + (k + 2) * 2^-23) * sum |alpha a b| + |beta c| of the
 * exact value. Checked for the native VDPBF16PS kernel (where the CPU has
 * AVX512_BF16, whether or not the probe chose it; said when skipped) and
 * the emulation, for every transpose,
 * tails of every length, odd k, padded strides, alpha and beta, 1 and 2
 * threads and the benchmark shapes; the error must also be above float32's
 * (the operands really are rounded), ties must round to even, and the two
 * paths must agree within the bound. Where the scratch memory for the
 * rounded operands cannot be had (a child process under RLIMIT_AS), the
 * emulation's one-product-at-a-time fallback meets the same bound. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/cpu/amx_gemm.h"
#include "backend/cpu/bf16_gemm.h"
#ifdef AXON_ONEDNN
#include "backend/cpu/onednn_matmul.h"
#endif
#include "test_reference.h"
#include "test_util.h"

typedef struct {
    bool trans_a, trans_b;
    int64_t m, n, k;
    double alpha, beta;
    int64_t pad;
} shape;

static double bf16_bound(int64_t k) { return 2.0 / 256.0 + 1.0 / 65536.0 + (double)(k + 2) / 8388608.0; }

/* The worst error of one shape, relative to the terms' magnitude. */
static double check_shape(ax_bf16_workspace *workspace, shape s, int threads)
{
    const int64_t a_rows = s.trans_a ? s.k : s.m, a_cols = s.trans_a ? s.m : s.k;
    const int64_t b_rows = s.trans_b ? s.n : s.k, b_cols = s.trans_b ? s.k : s.n;
    const int64_t lda = a_cols + s.pad, ldb = b_cols + s.pad, ldc = s.n + s.pad;
    double *a = malloc(sizeof(double) * (size_t)(a_rows * lda));
    double *b = malloc(sizeof(double) * (size_t)(b_rows * ldb));
    double *c_in = malloc(sizeof(double) * (size_t)(s.m * ldc));
    double *expected = malloc(sizeof(double) * (size_t)(s.m * s.n));
    double *magnitude = malloc(sizeof(double) * (size_t)(s.m * s.n));
    float *a32 = malloc(sizeof(float) * (size_t)(a_rows * lda));
    float *b32 = malloc(sizeof(float) * (size_t)(b_rows * ldb));
    float *c32 = malloc(sizeof(float) * (size_t)(s.m * ldc));
    double worst = INFINITY;
    CHECK(a && b && c_in && expected && magnitude && a32 && b32 && c32);
    if (!(a && b && c_in && expected && magnitude && a32 && b32 && c32))
        goto done;
    for (int64_t i = 0; i < a_rows * lda; i++)
        a32[i] = (float)value_at((uint64_t)i, 11), a[i] = a32[i];
    for (int64_t i = 0; i < b_rows * ldb; i++)
        b32[i] = (float)value_at((uint64_t)i, 12), b[i] = b32[i];
    for (int64_t i = 0; i < s.m * ldc; i++)
        c_in[i] = s.beta == 0 ? NAN : (float)value_at((uint64_t)i, 13);
    reference_gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, s.alpha, a, lda, b, ldb, s.beta, c_in, ldc,
                   expected, magnitude);
    for (int64_t i = 0; i < s.m * ldc; i++)
        c32[i] = (float)c_in[i];
    omp_set_num_threads(threads);
    ax_bf16_gemm(workspace, NULL, s.trans_a, s.trans_b, s.m, s.n, s.k, (float)s.alpha, a32, lda, b32,
                 ldb, (float)s.beta, c32, ldc);
    worst = worst_error_f32(c32, ldc, s.m, s.n, expected, magnitude);
    for (int64_t i = 0; i < s.m; i++)
        for (int64_t j = s.n; j < ldc; j++) /* C's padding is never written */
            CHECK(isnan(c_in[i * ldc + j]) ? isnan(c32[i * ldc + j])
                                            : c32[i * ldc + j] == (float)c_in[i * ldc + j]);
    if (!(worst <= bf16_bound(s.k)))
        fprintf(stderr, "  ta=%d tb=%d m=%lld n=%lld k=%lld pad=%lld alpha=%g beta=%g threads=%d: "
                        "error %.3e > bound %.3e\n",
                s.trans_a, s.trans_b, (long long)s.m, (long long)s.n, (long long)s.k,
                (long long)s.pad, s.alpha, s.beta, threads, worst, bf16_bound(s.k));
    CHECK(worst <= bf16_bound(s.k));
done:
    free(a), free(b), free(c_in), free(expected), free(magnitude);
    free(a32), free(b32), free(c32);
    return worst;
}

/* Every transpose, tails around the 8-row and 32-column tiles, odd and even k. */
static void check_all_shapes(ax_bf16_workspace *workspace, const char *path)
{
    static const int64_t ms[] = {1, 7, 8, 9, 17}, ns[] = {1, 15, 16, 31, 33, 70};
    static const int64_t ks[] = {1, 2, 3, 31, 32, 33, 67};
    double worst = 0.0, typical = 0.0;
    int shapes = 0;
    for (int t = 0; t < 4; t++)
        for (size_t mi = 0; mi < sizeof ms / sizeof *ms; mi++)
            for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
                for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
                    shape s = {t & 1, t >> 1, ms[mi], ns[ni], ks[ki], 1.0, 0.0, (int64_t)(ki % 3)};
                    if ((mi + ni + ki) % 3 == 1)
                        s.alpha = -0.5, s.beta = 0.75;
                    double e = check_shape(workspace, s, 1 + (int)((mi + ki) % 2));
                    worst = fmax(worst, e);
                    if (s.k >= 31)
                        typical = fmax(typical, e);
                    shapes++;
                }
    /* The training shapes: the Fashion-MNIST MLP's three products (784-128-128-10,
     * batch 128), TMVA's regression benchmark's (20-256x5-1, batch 1024), a tall-narrow one. */
    const shape big[] = {
        {false, true, 128, 128, 784, 1.0, 0.0, 0},  {true, false, 128, 784, 128, 1.0, 0.0, 0},
        {false, false, 128, 784, 128, 1.0, 0.0, 0}, {false, true, 1024, 256, 256, 1.0, 0.0, 0},
        {true, false, 256, 256, 1024, 1.0, 0.0, 0}, {false, false, 1024, 256, 256, 1.0, 1.0, 3},
        {false, true, 300, 8, 1024, 1.0, 0.0, 0},   {true, false, 8, 1024, 300, 1.0, 0.0, 0},
    };
    for (size_t i = 0; i < sizeof big / sizeof *big; i++)
        for (int threads = 1; threads <= 2; threads++) {
            double e = check_shape(workspace, big[i], threads);
            worst = fmax(worst, e);
            typical = fmax(typical, e);
            shapes++;
        }
    printf("%s: %d shapes, worst error %.2e of sum |terms| (bound 2^-7 + ...: %.2e); "
           "largest with k >= 31: %.2e\n",
           path, shapes, worst, bf16_bound(1), typical);
    /* float32 operands would stay near 1e-7: the operands are rounded. */
    CHECK(typical > 1e-4);
}

/* 1 + 2^-8 lies halfway between bf16's 1 and 1 + 2^-7 and rounds to 1 (even);
 * 1 + 3 * 2^-8 lies between 1 + 2^-7 and 1 + 2^-6 and rounds to 1 + 2^-6. */
static void check_ties(ax_bf16_workspace *workspace, const char *path)
{
    const float a[2] = {1.0f + 0x1p-8f, 1.0f + 0x1p-8f * 3.0f}, one[2] = {1.0f, 1.0f};
    float c[2] = {0, 0};
    ax_bf16_gemm(workspace, NULL, false, false, 2, 1, 1, 1.0f, a, 1, one, 1, 0.0f, c, 1);
    printf("%s: ties to even: %.8f %.8f\n", path, c[0], c[1]);
    CHECK(c[0] == 1.0f);
    CHECK(c[1] == 1.0f + 0x1p-6f);
    CHECK(ax_bf16_round(a[0]) == 1.0f && ax_bf16_round(a[1]) == 1.0f + 0x1p-6f);
    CHECK(isnan(ax_bf16_round(NAN)) && ax_bf16_round(INFINITY) == INFINITY);
}

/* The backend's bf16 table uses this GEMM: the same bits as a direct call
 * (axon's AMX tiles' where the CPU has them, test_amx_gemm; else oneDNN's
 * matmul's, where it was chosen: on AMX, test_onednn_matmul). */
static void check_backend(void)
{
    ax_backend *backend = ax_backend_cpu_create(AX_PRECISION_BF16);
    CHECK(backend && backend->real_size == sizeof(float) && backend->precision == AX_PRECISION_BF16);
    if (!backend)
        return;
    /* 2^24 multiply-adds: where oneDNN's matmul was chosen, it takes them */
    enum { M = 256, N = 256, K = 256 };
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
    float *c1 = malloc(sizeof(float) * M * N), *c2 = malloc(sizeof(float) * M * N);
    for (int i = 0; i < M * K; i++)
        a[i] = (float)value_at((uint64_t)i, 21);
    for (int i = 0; i < K * N; i++)
        b[i] = (float)value_at((uint64_t)i, 22);
    ax_bf16_workspace workspace = {0};
    backend->ops->gemm(backend, false, false, M, N, K, 1.0, a, K, b, N, 0.0, c1, N);
    bool direct = false;
    if (ax_amx_gemm_takes(M, N, K)) {
        printf("the bf16 backend's GEMMs run on axon's AMX tiles\n");
        direct = ax_amx_gemm(&workspace, false, false, M, N, K, 1.0f, a, K, b, N, 0.0f, c2, N);
        CHECK(direct);
    }
#ifdef AXON_ONEDNN
    ax_onednn_matmuls *matmuls = NULL;
    if (!direct && ax_onednn_bf16_matmul_takes(M, N, K)) {
        printf("the bf16 backend's GEMMs run on oneDNN's matmul\n");
        direct = ax_onednn_bf16_matmul(&matmuls, false, false, M, N, K, 1.0f, a, K, b, N, 0.0f, c2, N);
        CHECK(direct);
    }
    ax_onednn_matmuls_free(matmuls);
#endif
    if (!direct)
        ax_bf16_gemm(&workspace, NULL, false, false, M, N, K, 1.0f, a, K, b, N, 0.0f, c2, N);
    CHECK(memcmp(c1, c2, sizeof(float) * M * N) == 0);
    ax_bf16_workspace_free(&workspace);
    backend->ops->destroy(backend);
    free(a), free(b), free(c1), free(c2);
}

/* Native and emulated results differ only in summation order. */
static void check_paths_agree(void)
{
    enum { M = 64, N = 96, K = 200 };
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * N * K);
    float *c[2] = {malloc(sizeof(float) * M * N), malloc(sizeof(float) * M * N)};
    for (int i = 0; i < M * K; i++)
        a[i] = (float)value_at((uint64_t)i, 31);
    for (int i = 0; i < N * K; i++)
        b[i] = (float)value_at((uint64_t)i, 32);
    ax_bf16_workspace workspace = {0};
    for (int path = 0; path < 2; path++) {
        ax_bf16_gemm_force(path == 1 ? AX_BF16_KERNEL_EMULATED : AX_BF16_KERNEL_NATIVE);
        ax_bf16_gemm(&workspace, NULL, false, true, M, N, K, 1.0f, a, K, b, K, 0.0f, c[path], N);
    }
    ax_bf16_gemm_force(AX_BF16_KERNEL_CHOSEN);
    double worst = 0.0;
    for (int i = 0; i < M * N; i++)
        worst = fmax(worst, fabs(c[0][i] - c[1][i]));
    printf("native against emulated: largest difference %.2e\n", worst);
    CHECK(worst < 1e-4 * K); /* float32 sums of |terms| < 1 in another order */
    ax_bf16_workspace_free(&workspace);
    free(a), free(b), free(c[0]), free(c[1]);
}

#if !defined(__SANITIZE_ADDRESS__)
/* The process's address space in bytes (/proc/self/statm), 0 if unknown. */
static size_t address_space_bytes(void)
{
    FILE *file = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (file) {
        if (fscanf(file, "%lu", &pages) != 1)
            pages = 0;
        fclose(file);
    }
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}
#endif

/* The emulation without its scratch memory: in a child whose address space
 * leaves room for the test's own arrays (48 MiB for this shape) but not
 * for the 16 MiB of rounded operands, the fallback must give bf16's
 * results all the same. AddressSanitizer reserves terabytes of shadow
 * memory, which no such limit allows: skipped there. */
static void check_without_scratch(void)
{
#if defined(__SANITIZE_ADDRESS__)
    printf("fallback without scratch memory not checked: RLIMIT_AS under AddressSanitizer\n");
#else
    const char *preload = getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload")) { /* valgrind's own memory is limited too */
        printf("fallback without scratch memory not checked: RLIMIT_AS under valgrind\n");
        return;
    }
    fflush(stdout), fflush(stderr);
    const pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        omp_set_num_threads(1); /* no new thread stacks under the limit */
        ax_bf16_workspace workspace = {0};
        const size_t arrays = (size_t)1024 * 4096 * (sizeof(double) + sizeof(float));
        struct rlimit limit = {.rlim_cur = address_space_bytes() + arrays + (6u << 20),
                               .rlim_max = RLIM_INFINITY};
        if (setrlimit(RLIMIT_AS, &limit) != 0)
            exit(3);
        check_shape(&workspace, (shape){false, false, 1024, 2, 4096, 1.0, 0.0, 0}, 1);
        const bool limited = workspace.memory == NULL; /* the scratch was refused */
        ax_bf16_workspace_free(&workspace);
        /* exit, not _exit: a coverage build writes the child's counters */
        exit(test_failures ? 1 : limited ? 0 : 2);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2) /* results right, but not the fallback's */
        printf("fallback without scratch memory not reached: RLIMIT_AS did not refuse it\n");
    else
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
#endif
}

int main(void)
{
    ax_bf16_workspace_free(NULL); /* accepted, as every _free */
    ax_bf16_workspace workspace = {0};
    ax_bf16_gemm_force(AX_BF16_KERNEL_EMULATED);
    check_all_shapes(&workspace, "emulated");
    check_ties(&workspace, "emulated");
    check_without_scratch();
    ax_bf16_gemm_force(AX_BF16_KERNEL_NATIVE);
    if (ax_bf16_cpu_has_instructions()) {
        check_all_shapes(&workspace, "native VDPBF16PS");
        check_ties(&workspace, "native VDPBF16PS");
        check_paths_agree();
    } else {
        printf("native kernel not checked: this CPU has no AVX512_BF16\n");
    }
    ax_bf16_gemm_force(AX_BF16_KERNEL_CHOSEN);
    printf("chosen here: %s\n", ax_bf16_cpu_choice().reason);
    check_backend();
    ax_bf16_workspace_free(&workspace);
    return test_finish("test_bf16_gemm");
}
