/* bf16_gemm.c: the candidates for AX_PRECISION_BF16's GEMM at the
 * benchmark shapes, float32 in and out, the conversion to bf16 included
 * (docs/notes/blas-choice.md, "bf16 GEMMs"):
 *   sgemm      OpenBLAS float32 (the reference rate, no rounding)
 *   axon       src/backend/cpu/bf16_gemm.c: packing with VCVTNE2PS2BF16 into
 *              pair words, 8x32 VDPBF16PS kernel
 *   emulated   the same file's fallback: sgemm of bf16-rounded operands
 *   onednn     oneDNN 2.6 dnnl_matmul (bf16 src and weights, f32 dst: what
 *              PyTorch's autocast runs), after a float32 -> bf16 copy of
 *              both operands (transposes given as strides)
 *   libxsmm    libxsmm 1.17 JIT bf16 kernels (libxsmm_bsmmdispatch, VNNI A)
 *              on axon's packed operands (its pair-word panels are
 *              libxsmm's VNNI layout), one 32 x 64 tile per call, OpenMP
 *              over tiles as axon does
 *   pack       axon's packing alone (the conversion's share)
 * Each shape: a warm-up, then ROUNDS rounds that time every candidate in
 * turn (alternating, so load from other processes falls on all alike) for
 * >= 20 ms each; the median round's GFLOP/s (2 m n k / s) is printed, for
 * 1 and 2 threads. Every candidate's result is checked against axon's
 * (bf16 roundings alike: within 1e-3 of sum |terms|; sgemm within 2^-7).
 *
 * build: dev/bf16_gemm.sh (needs libdnnl-dev and libxsmm-dev)
 * run:   OPENBLAS_CORETYPE=Cooperlake /tmp/bf16_gemm [rounds, default 7]
 *        (OpenBLAS 0.3.21 runs SSE3 kernels on Xeons it does not know) */
#include "../src/backend/cpu/bf16_gemm.c"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <time.h>

#include <libxsmm.h>
#include <oneapi/dnnl/dnnl.h>

void openblas_set_num_threads(int);

typedef struct {
    const char *name;
    bool trans_a, trans_b;
    int64_t m, n, k;
} shape;

static const shape shapes[] = {
    {"B1 L1 fwd  128x128x784", false, true, 128, 128, 784},
    {"B1 L1 dW   128x784x128", true, false, 128, 784, 128},
    {"B1 L2 fwd  128x128x128", false, true, 128, 128, 128},
    {"B1 L2 dW   128x128x128", true, false, 128, 128, 128},
    {"B1 L2 dX   128x784x128", false, false, 128, 784, 128}, /* (L1's input width) */
    {"B1 L3 fwd  128x10x128", false, true, 128, 10, 128},
    {"B1 L3 dW   10x128x128", true, false, 10, 128, 128},
    {"B1 L3 dX   128x128x10", false, false, 128, 128, 10},
    {"B2 fwd     1024x256x256", false, true, 1024, 256, 256},
    {"B2 dW      256x256x1024", true, false, 256, 256, 1024},
    {"B2 dX      1024x256x256", false, false, 1024, 256, 256},
    {"B2 L1 fwd  1024x256x20", false, true, 1024, 256, 20},
    {"B2 L1 dW   256x20x1024", true, false, 256, 20, 1024},
    {"galaxy fwd 2700x8x1024", false, true, 2700, 8, 1024},
    {"galaxy dW  8x1024x2700", true, false, 8, 1024, 2700},
};

enum { SGEMM, AXON, EMULATED, ONEDNN, LIBXSMM, PACK, CANDIDATES };
static const char *const names[CANDIDATES] = {"sgemm", "axon", "emulated", "onednn", "libxsmm",
                                              "pack"};

typedef struct {
    shape s;
    const float *a, *b;
    int64_t lda, ldb;
    float *c;
    ax_bf16_workspace workspace;
    uint16_t *a16, *b16; /* oneDNN's operands */
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_t matmul;
    dnnl_memory_t a_memory, b_memory, c_memory;
    libxsmm_bsmmfunction tile, tail_tile[2]; /* full 32 x 64; n tail x 64; x rows tail */
    libxsmm_bsmmfunction corner;
} problem;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) static void to_bf16(const float *x, uint16_t *y, int64_t count)
{
#pragma omp parallel for schedule(static) if (count >= 65536)
    for (int64_t i = 0; i < count; i += 16) {
        __mmask16 mask = first_lanes(count - i);
        __m256i h = (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, x + i));
        _mm256_mask_storeu_epi16(y + i, mask, h);
    }
}

static void onednn_setup(problem *p)
{
    const shape *s = &p->s;
    dnnl_memory_desc_t a_md, b_md, c_md;
    dnnl_dims_t a_dims = {s->m, s->k}, b_dims = {s->k, s->n}, c_dims = {s->m, s->n};
    dnnl_dims_t a_strides = {s->trans_a ? 1 : p->lda, s->trans_a ? p->lda : 1};
    dnnl_dims_t b_strides = {s->trans_b ? 1 : p->ldb, s->trans_b ? p->ldb : 1};
    dnnl_dims_t c_strides = {s->n, 1};
    dnnl_memory_desc_init_by_strides(&a_md, 2, a_dims, dnnl_bf16, a_strides);
    dnnl_memory_desc_init_by_strides(&b_md, 2, b_dims, dnnl_bf16, b_strides);
    dnnl_memory_desc_init_by_strides(&c_md, 2, c_dims, dnnl_f32, c_strides);
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t pd;
    if (dnnl_matmul_desc_init(&desc, &a_md, &b_md, NULL, &c_md) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &desc, NULL, p->engine, NULL) != dnnl_success ||
        dnnl_primitive_create(&p->matmul, pd) != dnnl_success) {
        fprintf(stderr, "oneDNN: no matmul for %s\n", s->name);
        exit(1);
    }
    const char *impl = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    printf("  oneDNN implementation: %s\n", impl ? impl : "?");
    dnnl_primitive_desc_destroy(pd);
    dnnl_memory_create(&p->a_memory, &a_md, p->engine, p->a16);
    dnnl_memory_create(&p->b_memory, &b_md, p->engine, p->b16);
    dnnl_memory_create(&p->c_memory, &c_md, p->engine, p->c);
}

static void onednn_run(problem *p)
{
    const shape *s = &p->s;
    to_bf16(p->a, p->a16, (s->trans_a ? s->k : s->m) * p->lda);
    to_bf16(p->b, p->b16, (s->trans_b ? s->n : s->k) * p->ldb);
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, p->a_memory},
                               {DNNL_ARG_WEIGHTS, p->b_memory},
                               {DNNL_ARG_DST, p->c_memory}};
    dnnl_primitive_execute(p->matmul, p->stream, 3, args);
    dnnl_stream_wait(p->stream);
}

#define XSMM_ROWS 64

static libxsmm_bsmmfunction xsmm_kernel(int64_t columns, int64_t rows, int64_t pairs, int64_t ldc)
{
    const libxsmm_blasint mx = (libxsmm_blasint)columns, nx = (libxsmm_blasint)rows,
                          kx = (libxsmm_blasint)(2 * pairs), lda = BF16_NR, ldb = kx,
                          ldc_ = (libxsmm_blasint)ldc;
    const float alpha = 1.0f, beta = 0.0f;
    const int flags = LIBXSMM_GEMM_FLAG_VNNI_A;
    libxsmm_bsmmfunction f = libxsmm_bsmmdispatch(mx, nx, kx, &lda, &ldb, &ldc_, &alpha, &beta,
                                                  &flags, NULL);
    if (!f) {
        fprintf(stderr, "libxsmm: no kernel %lld x %lld x %lld\n", (long long)mx, (long long)nx,
                (long long)kx);
        exit(1);
    }
    return f;
}

static void xsmm_setup(problem *p)
{
    const shape *s = &p->s;
    const int64_t pairs = (s->k + 1) / 2;
    const int64_t n_tail = s->n % BF16_NR, m_tail = s->m % XSMM_ROWS;
    const bool full_n = s->n >= BF16_NR, full_m = s->m >= XSMM_ROWS;
    p->tile = full_n && full_m ? xsmm_kernel(BF16_NR, XSMM_ROWS, pairs, s->n) : NULL;
    p->tail_tile[0] = n_tail && full_m ? xsmm_kernel(n_tail, XSMM_ROWS, pairs, s->n) : NULL;
    p->tail_tile[1] = m_tail && full_n ? xsmm_kernel(BF16_NR, m_tail, pairs, s->n) : NULL;
    p->corner = n_tail && m_tail ? xsmm_kernel(n_tail, m_tail, pairs, s->n) : NULL;
}

/* axon's packing (A's words need the row-major layout: libxsmm's B), then
 * libxsmm's kernel per 32-column panel and 64-row block. */
BF16_TARGET static void xsmm_run(problem *p)
{
    const shape *s = &p->s;
    const int64_t m = s->m, n = s->n, k = s->k, pairs = (k + 1) / 2;
    const int64_t panels = (n + BF16_NR - 1) / BF16_NR, blocks = (m + XSMM_ROWS - 1) / XSMM_ROWS;
    size_t a_words = (size_t)(m * pairs + 15) / 16 * 16;
    uint32_t *packed = workspace_reserve(&p->workspace,
                                         (a_words + (size_t)(panels * pairs * BF16_NR)) * 4);
    uint32_t *packed_a = packed, *packed_b = packed + a_words;
#pragma omp parallel
    {
        if (s->trans_a) { /* rows of A^T are A's columns: convert through a gather */
#pragma omp for schedule(static)
            for (int64_t i = 0; i < m; i++)
                for (int64_t q = 0; q < pairs; q++) {
                    float lo = p->a[2 * q * p->lda + i];
                    float hi = 2 * q + 1 < k ? p->a[(2 * q + 1) * p->lda + i] : 0.0f;
                    uint32_t l, h;
                    float rl = ax_bf16_round(lo), rh = ax_bf16_round(hi);
                    memcpy(&l, &rl, 4), memcpy(&h, &rh, 4);
                    packed_a[i * pairs + q] = (l >> 16) | (h & 0xffff0000u);
                }
        } else {
            pack_a(false, m, k, p->a, p->lda, packed_a, pairs, 0);
        }
        pack_b(s->trans_b, n, k, p->b, p->ldb, packed_b, pairs);
#pragma omp for schedule(static) collapse(2)
        for (int64_t panel = 0; panel < panels; panel++)
            for (int64_t block = 0; block < blocks; block++) {
                const bool n_tail = (panel + 1) * BF16_NR > n, m_tail = (block + 1) * XSMM_ROWS > m;
                libxsmm_bsmmfunction f = n_tail && m_tail ? p->corner
                                         : n_tail         ? p->tail_tile[0]
                                         : m_tail         ? p->tail_tile[1]
                                                          : p->tile;
                f((const libxsmm_bfloat16 *)(packed_b + panel * pairs * BF16_NR),
                  (const libxsmm_bfloat16 *)(packed_a + block * XSMM_ROWS * pairs),
                  p->c + block * XSMM_ROWS * n + panel * BF16_NR);
            }
    }
}

static void pack_only(problem *p)
{
    const shape *s = &p->s;
    const int64_t pairs = (s->k + 1) / 2, m16 = (s->m + 15) / 16 * 16;
    const int64_t panels = (s->n + BF16_NR - 1) / BF16_NR;
    size_t a_words = (size_t)(s->trans_a ? pairs * m16 : s->m * pairs);
    a_words = (a_words + 15) / 16 * 16;
    uint32_t *packed = workspace_reserve(&p->workspace,
                                         (a_words + (size_t)(panels * pairs * BF16_NR)) * 4);
#pragma omp parallel if (s->m * s->n * s->k >= BF16_PARALLEL_MIN)
    {
        pack_a(s->trans_a, s->m, s->k, p->a, p->lda, packed, pairs, m16);
        pack_b(s->trans_b, s->n, s->k, p->b, p->ldb, packed + a_words, pairs);
    }
}

static void run(problem *p, int candidate)
{
    const shape *s = &p->s;
    switch (candidate) {
    case SGEMM:
        cblas_sgemm(CblasRowMajor, s->trans_a ? CblasTrans : CblasNoTrans,
                    s->trans_b ? CblasTrans : CblasNoTrans, (int)s->m, (int)s->n, (int)s->k, 1.0f,
                    p->a, (int)p->lda, p->b, (int)p->ldb, 0.0f, p->c, (int)s->n);
        break;
    case AXON:
    case EMULATED:
        ax_bf16_gemm_force(candidate == EMULATED ? AX_BF16_KERNEL_EMULATED : AX_BF16_KERNEL_NATIVE);
        ax_bf16_gemm(&p->workspace, NULL, s->trans_a, s->trans_b, s->m, s->n, s->k, 1.0f, p->a, p->lda,
                     p->b, p->ldb, 0.0f, p->c, s->n);
        ax_bf16_gemm_force(AX_BF16_KERNEL_CHOSEN);
        break;
    case ONEDNN:
        onednn_run(p);
        break;
    case LIBXSMM:
        xsmm_run(p);
        break;
    case PACK:
        pack_only(p);
        break;
    }
}

/* Seconds per call, over >= 20 ms of calls. */
static double time_candidate(problem *p, int candidate)
{
    int calls = 0;
    double start = now(), elapsed;
    do {
        run(p, candidate);
        calls++;
        elapsed = now() - start;
    } while (elapsed < 0.02);
    return elapsed / calls;
}

static int compare(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    const int rounds = argc > 1 ? atoi(argv[1]) : 7;
    libxsmm_init();
    problem p = {0};
    dnnl_engine_create(&p.engine, dnnl_cpu, 0);
    dnnl_stream_create(&p.stream, p.engine, dnnl_stream_default_flags);
    ax_bf16_choice choice = ax_bf16_cpu_choice();
    printf("bf16 GEMM candidates, GFLOP/s (median of %d alternating rounds)\n%s; VDPBF16PS at "
           "%.2fx float32 FMAs' multiply-adds per second\n",
           rounds, choice.reason, choice.speed_ratio);
    printf("%-26s %3s", "shape", "thr");
    for (int c = 0; c < CANDIDATES; c++)
        printf(" %9s", names[c]);
    printf("  pack share of axon\n");
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        p.s = shapes[i];
        const shape *s = &p.s;
        p.lda = s->trans_a ? s->m : s->k, p.ldb = s->trans_b ? s->k : s->n;
        const int64_t a_count = (s->trans_a ? s->k : s->m) * p.lda;
        const int64_t b_count = (s->trans_b ? s->n : s->k) * p.ldb;
        float *a = malloc(sizeof(float) * (size_t)a_count), *b = malloc(sizeof(float) * (size_t)b_count);
        float *reference = malloc(sizeof(float) * (size_t)(s->m * s->n));
        p.c = malloc(sizeof(float) * (size_t)(s->m * s->n));
        p.a16 = malloc(2 * (size_t)a_count), p.b16 = malloc(2 * (size_t)b_count);
        for (int64_t j = 0; j < a_count; j++)
            a[j] = (float)((double)((j * 2654435761u) % 1000) / 500.0 - 1.0);
        for (int64_t j = 0; j < b_count; j++)
            b[j] = (float)((double)((j * 40503u + 7) % 997) / 498.5 - 1.0);
        p.a = a, p.b = b;
        onednn_setup(&p);
        xsmm_setup(&p);
        run(&p, AXON);
        memcpy(reference, p.c, sizeof(float) * (size_t)(s->m * s->n));
        for (int c = 0; c < CANDIDATES; c++) {
            if (c == PACK)
                continue;
            memset(p.c, 0, sizeof(float) * (size_t)(s->m * s->n));
            run(&p, c);
            double worst = 0.0;
            for (int64_t j = 0; j < s->m * s->n; j++)
                worst = fmax(worst, fabs(p.c[j] - reference[j]) / (double)s->k);
            if (!(worst <= (c == SGEMM ? 1.0 / 128 : 1e-3))) {
                fprintf(stderr, "%s: %s differs from axon by %.3e of k\n", s->name, names[c], worst);
                return 1;
            }
        }
        for (int threads = 1; threads <= 2; threads++) {
            omp_set_num_threads(threads);
            openblas_set_num_threads(threads);
            double seconds[CANDIDATES][64];
            for (int c = 0; c < CANDIDATES; c++)
                time_candidate(&p, c);
            for (int r = 0; r < rounds && r < 64; r++)
                for (int c = 0; c < CANDIDATES; c++)
                    seconds[c][r] = time_candidate(&p, c);
            printf("%-26s %3d", s->name, threads);
            double median[CANDIDATES];
            for (int c = 0; c < CANDIDATES; c++) {
                qsort(seconds[c], (size_t)rounds, sizeof(double), compare);
                median[c] = seconds[c][rounds / 2];
                printf(" %9.1f", 2.0 * (double)s->m * (double)s->n * (double)s->k / median[c] * 1e-9);
            }
            printf("  %.0f%%\n", 100.0 * median[PACK] / median[AXON]);
            fflush(stdout);
        }
        dnnl_primitive_destroy(p.matmul);
        dnnl_memory_destroy(p.a_memory), dnnl_memory_destroy(p.b_memory);
        dnnl_memory_destroy(p.c_memory);
        free(a), free(b), free(reference), free(p.c), free(p.a16), free(p.b16);
    }
    ax_bf16_workspace_free(&p.workspace);
    dnnl_stream_destroy(p.stream);
    dnnl_engine_destroy(p.engine);
    libxsmm_finalize();
    return 0;
}
