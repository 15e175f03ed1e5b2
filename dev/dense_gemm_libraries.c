/* dense_gemm_libraries.c: issue 28's question for the dense layers: does
 * another float32 GEMM library beat the CPU backend's present path at the
 * dense layers' shapes, and are its bits the same whatever the threads?
 *
 * Contenders, all row-major, alpha 1, beta 0, at the products exactly as
 * src/core/layer_dense.c calls them (fwd: x W^T, NT; dX: delta W, NN;
 * dW: delta^T x, TN with the sum over the batch rows):
 *   axon      the CPU backend's gemm (gemm_f32: its own tiny, skinny and
 *             long kernels, else OpenBLAS in k blocks of 256), the path
 *             a training run takes today;
 *   openblas  the same OpenBLAS (libaxon's ax_blas) in one call, whole k;
 *   onednn    oneDNN 2.6's dnnl_sgemm (Debian's libdnnl-dev), whole k;
 *   onednn_kb dnnl_sgemm in k blocks of 512 (whole k, the input gradient
 *             splits k from 9 threads on; ONEDNN_K_BLOCK=256 changes it);
 *   blis      BLIS 0.9's cblas_sgemm (libblis-openmp), loaded privately
 *             with dlopen (its cblas_sgemm would clash with OpenBLAS's),
 *             BLIS_ARCH_TYPE=0 (its skx kernels: 0.9 does not know this
 *             CPU and falls back to generic C, docs/notes/blas-choice.md);
 *   blis_kb   BLIS in k blocks of 256, as axon hands OpenBLAS k
 *             (BLIS_K_BLOCK changes it).
 * Every library runs on libgomp (oneDNN and BLIS are Debian's OpenMP
 * builds), so one omp_set_num_threads + ax_threads_run_on sets them all.
 *
 * Timing: for each thread count (1, 2), ROUNDS rounds; in each round every
 * contender in turn (the order rotates per round) runs CALLS calls, timed
 * as their mean; the figure per contender is the median over rounds, and
 * the ratio to axon is the median of the per-round ratios (> 1: faster
 * than axon). Bits: each contender's C at 1 thread against its C at 2, 3
 * and 4 threads (memcmp; BITS_THREADS=16 goes to 16, TIMED=0 skips the
 * timing), and its largest error against a float64 reference relative to
 * the largest |C|.
 *
 * Caveat: each product is called again and again, which flatters oneDNN:
 * in a training step's order (forward, input gradient, weight gradient,
 * one after another) its LeNet gradients were slower than OpenBLAS, not
 * 1.2-1.4x faster (docs/notes/conv.md, the dense layer's GEMMs).
 *
 * Output: one line per (threads, shape, contender); the last column says
 * whether C's bits on 2..BITS_THREADS threads equal those on 1, or lists
 * the thread counts where they differ.
 *
 * build and run: dev/dense_gemm_libraries.sh (after building axon_static). */
#include <dlfcn.h>
#include <dnnl.h>
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axon.h"
#include "backend/backend.h"
#include "backend/cpu/blas.h"
#include "perf/threads.h"
#include "bench_median.h"

typedef struct shape {
    const char *name;
    bool trans_a, trans_b;
    int64_t m, n, k;
} shape;

/* The dense layers of LeNet (1024-wide hidden over the 1024 flattened
 * values, 10-wide output), B1 (784-128-128-10) and B2 (20-256x5-1 and
 * its 512-wide variant), batch 128 / 128 / 1024, as layer_dense.c calls
 * gemm: fwd (F,T, batch, out, in), dX (F,F, batch, in, out),
 * dW (T,F, out, in, batch). */
static const shape shapes[] = {
    {"lenet_1024_fwd", false, true, 128, 1024, 1024},
    {"lenet_1024_dX", false, false, 128, 1024, 1024},
    {"lenet_1024_dW", true, false, 1024, 1024, 128},
    {"lenet_10_fwd", false, true, 128, 10, 1024},
    {"lenet_10_dX", false, false, 128, 1024, 10},
    {"lenet_10_dW", true, false, 10, 1024, 128},
    {"b1_784_fwd", false, true, 128, 128, 784},
    {"b1_784_dW", true, false, 128, 784, 128},
    {"b1_128_fwd", false, true, 128, 128, 128},
    {"b1_128_dX", false, false, 128, 128, 128},
    {"b1_128_dW", true, false, 128, 128, 128},
    {"b1_10_fwd", false, true, 128, 10, 128},
    {"b1_10_dX", false, false, 128, 128, 10},
    {"b1_10_dW", true, false, 10, 128, 128},
    {"b2_20_fwd", false, true, 1024, 256, 20},
    {"b2_20_dW", true, false, 256, 20, 1024},
    {"b2_256_fwd", false, true, 1024, 256, 256},
    {"b2_256_dX", false, false, 1024, 256, 256},
    {"b2_256_dW", true, false, 256, 256, 1024},
    {"b2_512_fwd", false, true, 1024, 512, 512},
    {"b2_512_dX", false, false, 1024, 512, 512},
    {"b2_512_dW", true, false, 512, 512, 1024},
};

enum { CONTENDERS = 6 };
static const char *contender_name[CONTENDERS] = {"axon", "openblas", "onednn", "onednn_kb",
                                                 "blis", "blis_kb"};

static ax_backend *backend;
static int64_t onednn_k_block = 512, blis_k_block = 256;
static __typeof__(cblas_sgemm) *blis_sgemm;
static void (*blis_set_threads)(long);

static void set_threads(int threads)
{
    ax_threads_run_on(threads); /* omp_set_num_threads and OpenBLAS's */
    blis_set_threads(threads);
}

/* One product C = op(A) op(B) of shape s through contender `who`, k whole
 * or in blocks of `block` (0: whole). */
static void product(int who, const shape *s, const float *a, const float *b, float *c)
{
    const int64_t lda = s->trans_a ? s->m : s->k, ldb = s->trans_b ? s->k : s->n, ldc = s->n;
    if (who == 0) {
        backend->ops->gemm(backend, s->trans_a, s->trans_b, s->m, s->n, s->k, 1.0, a, lda, b, ldb,
                           0.0, c, ldc);
        return;
    }
    const int64_t block = who == 3 ? onednn_k_block : who == 5 ? blis_k_block : s->k;
    for (int64_t first = 0; first < s->k; first += block) {
        const int64_t depth = s->k - first < block ? s->k - first : block;
        const float *a_part = a + (s->trans_a ? first * lda : first);
        const float *b_part = b + (s->trans_b ? first : first * ldb);
        const float beta = first == 0 ? 0.0f : 1.0f;
        switch (who) {
        case 1:
            ax_blas.sgemm(CblasRowMajor, s->trans_a ? CblasTrans : CblasNoTrans,
                          s->trans_b ? CblasTrans : CblasNoTrans, (int)s->m, (int)s->n, (int)depth,
                          1.0f, a_part, (int)lda, b_part, (int)ldb, beta, c, (int)ldc);
            break;
        case 2:
        case 3:
            if (dnnl_sgemm(s->trans_a ? 'T' : 'N', s->trans_b ? 'T' : 'N', s->m, s->n, depth, 1.0f,
                           a_part, lda, b_part, ldb, beta, c, ldc) != dnnl_success) {
                fprintf(stderr, "dnnl_sgemm failed at %s\n", s->name);
                exit(1);
            }
            break;
        default:
            blis_sgemm(CblasRowMajor, s->trans_a ? CblasTrans : CblasNoTrans,
                       s->trans_b ? CblasTrans : CblasNoTrans, (int)s->m, (int)s->n, (int)depth,
                       1.0f, a_part, (int)lda, b_part, (int)ldb, beta, c, (int)ldc);
        }
    }
}

static void fill(float *x, int64_t count, uint64_t state)
{
    for (int64_t i = 0; i < count; i++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        x[i] = (float)((double)(state >> 11) / 9007199254740992.0 - 0.5);
    }
}

/* reference (m, n) = op(A) op(B) in float64. */
static void reference_product(const shape *s, const float *a, const float *b, double *reference)
{
    const int64_t lda = s->trans_a ? s->m : s->k, ldb = s->trans_b ? s->k : s->n;
    for (int64_t i = 0; i < s->m; i++)
        for (int64_t j = 0; j < s->n; j++) {
            double sum = 0.0;
            for (int64_t p = 0; p < s->k; p++)
                sum += (double)(s->trans_a ? a[p * lda + i] : a[i * lda + p]) *
                       (double)(s->trans_b ? b[j * ldb + p] : b[p * ldb + j]);
            reference[i * s->n + j] = sum;
        }
}

/* Largest |C - reference| over largest |reference|. */
static double relative_error(const shape *s, const double *reference, const float *c)
{
    double worst = 0.0, largest = 0.0;
    for (int64_t i = 0; i < s->m * s->n; i++) {
        worst = fmax(worst, fabs(reference[i] - c[i]));
        largest = fmax(largest, fabs(reference[i]));
    }
    return worst / largest;
}

int main(void)
{
    const int rounds = getenv("ROUNDS") ? atoi(getenv("ROUNDS")) : 7;
    if (getenv("ONEDNN_K_BLOCK"))
        onednn_k_block = atoi(getenv("ONEDNN_K_BLOCK"));
    if (getenv("BLIS_K_BLOCK"))
        blis_k_block = atoi(getenv("BLIS_K_BLOCK"));
    const int most_threads = getenv("BITS_THREADS") ? atoi(getenv("BITS_THREADS")) : 4;
    const int timed = getenv("TIMED") ? atoi(getenv("TIMED")) : 1; /* 0: bits only */
    const double seconds_per_call_set = 0.02; /* each contender's share of a round */
    setenv("BLIS_ARCH_TYPE", "0", 0);     /* read at BLIS's first call */
    void *blis = dlopen("/usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!blis) {
        fprintf(stderr, "needs libblis-openmp-dev: %s\n", dlerror());
        return 77;
    }
    *(void **)&blis_sgemm = dlsym(blis, "cblas_sgemm");
    *(void **)&blis_set_threads = dlsym(blis, "bli_thread_set_num_threads");
    char *(*blis_arch_string)(int) = NULL;
    int (*blis_arch_id)(void) = NULL;
    *(void **)&blis_arch_string = dlsym(blis, "bli_arch_string");
    *(void **)&blis_arch_id = dlsym(blis, "bli_arch_query_id");
    backend = ax_backend_cpu_create(AX_PRECISION_F32);
    if (!blis_sgemm || !blis_set_threads || !backend) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }
    const int shape_count = (int)(sizeof shapes / sizeof shapes[0]);
    const char *only = getenv("SHAPES"); /* substring filter, e.g. "lenet" */
    int64_t most = 0;
    for (int s = 0; s < shape_count; s++) {
        const shape *x = &shapes[s];
        most = x->m * x->k > most ? x->m * x->k : most;
        most = x->k * x->n > most ? x->k * x->n : most;
        most = x->m * x->n > most ? x->m * x->n : most;
    }
    float *a = malloc((size_t)most * sizeof(float)), *b = malloc((size_t)most * sizeof(float));
    float *c = malloc((size_t)most * sizeof(float)), *first = malloc((size_t)most * sizeof(float));
    double *reference = malloc((size_t)most * sizeof(double));
    fill(a, most, 88172645463325252u);
    fill(b, most, 1234567891234567u);
    set_threads(1);
    product(4, &shapes[0], a, b, c); /* BLIS initialised: now its arch can be asked */
    printf("# OpenBLAS core %s; oneDNN %d.%d.%d; BLIS arch %s\n",
           ax_blas.corename ? ax_blas.corename() : "?", dnnl_version()->major,
           dnnl_version()->minor, dnnl_version()->patch, blis_arch_string(blis_arch_id()));
    printf("%-16s %3s %-9s %8s %9s %8s %-7s\n", "shape", "thr", "library", "GFLOP/s",
           "vs_axon", "relerr", "bits vs 1 thread");

    for (int s = 0; s < shape_count; s++) {
        const shape *x = &shapes[s];
        if (only && !strstr(x->name, only))
            continue;
        /* Bits and accuracy first: "same" when C on 2..BITS_THREADS threads
         * equals C on 1, else the thread counts where it differs. */
        char bits[CONTENDERS][256];
        double error[CONTENDERS];
        reference_product(x, a, b, reference);
        for (int who = 0; who < CONTENDERS; who++) {
            set_threads(1);
            product(who, x, a, b, first);
            error[who] = relative_error(x, reference, first);
            strcpy(bits[who], "differ:");
            bool all_same = true;
            for (int t = 2; t <= most_threads; t++) {
                set_threads(t);
                memset(c, 0, (size_t)(x->m * x->n) * sizeof(float));
                product(who, x, a, b, c);
                if (memcmp(c, first, (size_t)(x->m * x->n) * sizeof(float)) != 0) {
                    const size_t used = strlen(bits[who]);
                    snprintf(bits[who] + used, sizeof bits[who] - used, "%s%d",
                             all_same ? "" : ",", t);
                    all_same = false;
                }
            }
            if (all_same)
                snprintf(bits[who], sizeof bits[who], "same 1-%d", most_threads);
        }
        const double flops = 2.0 * (double)x->m * (double)x->n * (double)x->k;
        if (!timed)
            for (int who = 0; who < CONTENDERS; who++)
                printf("%-16s %3s %-9s %8s %9s %8.1e %s\n", x->name, "-", contender_name[who], "-",
                       "-", error[who], bits[who]);
        for (int threads = 1; timed && threads <= 2; threads++) {
            set_threads(threads);
            /* calls per timing: about seconds_per_call_set at the axon rate */
            double t0 = ax_seconds_now();
            int warm = 0;
            while (ax_seconds_now() - t0 < 0.01 || warm < 3)
                product(0, x, a, b, c), warm++;
            int calls = (int)(seconds_per_call_set / ((ax_seconds_now() - t0) / warm)) + 1;
            double rate[CONTENDERS][64], ratio[CONTENDERS][64];
            for (int r = 0; r < rounds && r < 64; r++) {
                double seconds[CONTENDERS];
                for (int turn = 0; turn < CONTENDERS; turn++) {
                    const int who = (turn + r) % CONTENDERS;
                    product(who, x, a, b, c); /* warm its packing buffers and threads */
                    const double start = ax_seconds_now();
                    for (int call = 0; call < calls; call++)
                        product(who, x, a, b, c);
                    seconds[who] = (ax_seconds_now() - start) / calls;
                }
                for (int who = 0; who < CONTENDERS; who++) {
                    rate[who][r] = flops / seconds[who] * 1e-9;
                    ratio[who][r] = seconds[0] / seconds[who];
                }
            }
            for (int who = 0; who < CONTENDERS; who++)
                printf("%-16s %3d %-9s %8.1f %9.2f %8.1e %s\n", x->name, threads,
                       contender_name[who], bench_median(rate[who], rounds),
                       bench_median(ratio[who], rounds), error[who], bits[who]);
            fflush(stdout);
        }
    }
    backend->ops->destroy(backend);
    free(a), free(b), free(c), free(first), free(reference);
    return 0;
}
