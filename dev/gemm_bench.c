/*
 * gemm_bench.c - standalone GEMM throughput benchmark for choosing axon's BLAS.
 *
 * C11, no axon dependencies.  Times row-major C(M,N) = op(A) op(B) (alpha=1,
 * beta=0) at the shapes of axon's dense layers:
 *
 *   fwd : Z(batch,out) = X(batch,in) * W(out,in)^T     NoTrans, Trans
 *   dW  : dW(out,in)   = dZ(batch,out)^T * X(batch,in) Trans,   NoTrans
 *   dX  : dX(batch,in) = dZ(batch,out) * W(out,in)     NoTrans, NoTrans
 *   ref : square-ish reference C(1024,256) = A(1024,256) B(256,256), NN
 *
 * Back ends (chosen at compile time):
 *   default        : cblas_sgemm / cblas_dgemm (OpenBLAS, BLIS, ...)
 *   -DUSE_LIBXSMM  : libxsmm_sgemm_omp / libxsmm_dgemm_omp (libxsmmext, tiled
 *                    JIT kernels, OpenMP).  sgemm_/dgemm_ are defined here as
 *                    traps so a silent fall-back to a BLAS shows up as "fallback"
 *                    instead of being timed as libxsmm.
 *   -DHAVE_OPENBLAS_INFO : print openblas_get_corename() in the header line
 *   -DHAVE_BLIS_INFO     : print bli_arch_string(bli_arch_query_id())
 *
 * Usage: gemm_bench LABEL ENVLABEL [csv-file]
 *   Threads come from the environment (OMP_NUM_THREADS / OPENBLAS_NUM_THREADS /
 *   BLIS_NUM_THREADS); the value of OMP_NUM_THREADS is what is reported.
 *   GEMM_BENCH_SET=all|key (default all), GEMM_BENCH_PREC=s|d|sd (default sd),
 *   GEMM_BENCH_REPEATS (default 7, min 7), GEMM_BENCH_MIN_MS (default 50).
 *
 * For each shape: warm-up (>= 30 ms and >= 2 calls), then REPEATS timed samples,
 * each looping the call enough times to last >= MIN_MS; the per-call time is the
 * median sample.  GFLOP/s = 2*M*N*K / time (the stdout line also shows the rate
 * of the fastest sample, "best", which is less sensitive to other load on the
 * machine).  The result is then spot-checked against a naive long-double dot
 * product at 64 random entries.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef USE_LIBXSMM
#include <libxsmm.h>
static volatile int g_fallback = 0;
/* Trap BLAS fall-backs from libxsmm (we link no real BLAS into this build). */
void sgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const float *al, const float *a, const int *lda, const float *b, const int *ldb,
            const float *be, float *c, const int *ldc);
void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const double *al, const double *a, const int *lda, const double *b, const int *ldb,
            const double *be, double *c, const int *ldc);
void sgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const float *al, const float *a, const int *lda, const float *b, const int *ldb,
            const float *be, float *c, const int *ldc)
{
    (void)ta; (void)tb; (void)m; (void)n; (void)k; (void)al; (void)a; (void)lda;
    (void)b; (void)ldb; (void)be; (void)c; (void)ldc;
    g_fallback = 1;
}
void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const double *al, const double *a, const int *lda, const double *b, const int *ldb,
            const double *be, double *c, const int *ldc)
{
    (void)ta; (void)tb; (void)m; (void)n; (void)k; (void)al; (void)a; (void)lda;
    (void)b; (void)ldb; (void)be; (void)c; (void)ldc;
    g_fallback = 1;
}
/* libxsmm.a also references sgemv_/dgemv_; trap those as well. */
void sgemv_(void);
void dgemv_(void);
void sgemv_(void) { g_fallback = 1; }
void dgemv_(void) { g_fallback = 1; }
#else
/* Standard CBLAS ABI; declared here so the same source builds against any
 * CBLAS without pulling in a particular library's cblas.h. */
enum BenchOrder { BenchRowMajor = 101, BenchColMajor = 102 };
enum BenchTrans { BenchNoTrans = 111, BenchTrans = 112 };
void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta,
                 float *c, int ldc);
void cblas_dgemm(int order, int ta, int tb, int m, int n, int k, double alpha,
                 const double *a, int lda, const double *b, int ldb, double beta,
                 double *c, int ldc);
#endif

#ifdef HAVE_OPENBLAS_INFO
char *openblas_get_corename(void);
int openblas_get_num_threads(void);
#endif
#ifdef HAVE_BLIS_INFO
typedef int bench_arch_t;
bench_arch_t bli_arch_query_id(void);
char *bli_arch_string(bench_arch_t id);
long bli_thread_get_num_threads(void);
#endif

typedef struct {
    const char *op;
    int batch, in, out;
} shape_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Row-major problem description derived from (op, batch, in, out). */
typedef struct {
    int M, N, K, ta, tb, lda, ldb, ldc;
    int a_is; /* 0: A=X-buffer, 1: A=dZ-buffer */
    int b_is; /* 0: B=W-buffer, 1: B=X-buffer  */
} prob_t;

static prob_t make_prob(const shape_t *s)
{
    prob_t p;
    memset(&p, 0, sizeof p);
    if (!strcmp(s->op, "fwd")) { /* Z(b,o) = X(b,i) W(o,i)^T */
        p.M = s->batch; p.N = s->out; p.K = s->in; p.ta = 0; p.tb = 1;
        p.lda = s->in; p.ldb = s->in; p.ldc = s->out; p.a_is = 0; p.b_is = 0;
    } else if (!strcmp(s->op, "dW")) { /* dW(o,i) = dZ(b,o)^T X(b,i) */
        p.M = s->out; p.N = s->in; p.K = s->batch; p.ta = 1; p.tb = 0;
        p.lda = s->out; p.ldb = s->in; p.ldc = s->in; p.a_is = 1; p.b_is = 1;
    } else if (!strcmp(s->op, "dX")) { /* dX(b,i) = dZ(b,o) W(o,i) */
        p.M = s->batch; p.N = s->in; p.K = s->out; p.ta = 0; p.tb = 0;
        p.lda = s->out; p.ldb = s->in; p.ldc = s->in; p.a_is = 1; p.b_is = 0;
    } else { /* ref: C(b,o) = A(b,i) B(i,o), NN */
        p.M = s->batch; p.N = s->out; p.K = s->in; p.ta = 0; p.tb = 0;
        p.lda = s->in; p.ldb = s->out; p.ldc = s->out; p.a_is = 0; p.b_is = 0;
    }
    return p;
}

static void run_gemm(int dbl, const prob_t *p, const void *A, const void *B, void *C)
{
#ifdef USE_LIBXSMM
    /* Row-major C = op(A) op(B)  <=>  column-major C^T = op(B)^T op(A)^T:
     * swap operands and M/N, keep the transpose flags. */
    const char ta = p->ta ? 'T' : 'N', tb = p->tb ? 'T' : 'N';
    const libxsmm_blasint m = p->N, n = p->M, k = p->K;
    const libxsmm_blasint lda = p->ldb, ldb = p->lda, ldc = p->ldc;
    if (dbl) {
        const double al = 1.0, be = 0.0;
        libxsmm_dgemm_omp(&tb, &ta, &m, &n, &k, &al, (const double *)B, &lda,
                          (const double *)A, &ldb, &be, (double *)C, &ldc);
    } else {
        const float al = 1.0f, be = 0.0f;
        libxsmm_sgemm_omp(&tb, &ta, &m, &n, &k, &al, (const float *)B, &lda,
                          (const float *)A, &ldb, &be, (float *)C, &ldc);
    }
#else
    const int ta = p->ta ? BenchTrans : BenchNoTrans, tb = p->tb ? BenchTrans : BenchNoTrans;
    if (dbl)
        cblas_dgemm(BenchRowMajor, ta, tb, p->M, p->N, p->K, 1.0, (const double *)A, p->lda,
                    (const double *)B, p->ldb, 0.0, (double *)C, p->ldc);
    else
        cblas_sgemm(BenchRowMajor, ta, tb, p->M, p->N, p->K, 1.0f, (const float *)A, p->lda,
                    (const float *)B, p->ldb, 0.0f, (float *)C, p->ldc);
#endif
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng_next(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void fill(void *buf, size_t n, int dbl)
{
    for (size_t i = 0; i < n; ++i) {
        double v = (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0) - 0.5;
        if (dbl) ((double *)buf)[i] = v;
        else ((float *)buf)[i] = (float)v;
    }
}

static long double elem(const void *buf, size_t idx, int dbl)
{
    return dbl ? (long double)((const double *)buf)[idx] : (long double)((const float *)buf)[idx];
}

/* Spot-check 64 random entries of C against a naive dot product.
 * Returns max relative error (relative to sum |a||b|). */
static double check(int dbl, const prob_t *p, const void *A, const void *B, const void *C)
{
    double maxerr = 0.0;
    for (int t = 0; t < 64; ++t) {
        int i = (int)(rng_next() % (uint64_t)p->M), j = (int)(rng_next() % (uint64_t)p->N);
        long double s = 0.0L, sa = 0.0L;
        for (int k = 0; k < p->K; ++k) {
            size_t ia = p->ta ? (size_t)k * p->lda + i : (size_t)i * p->lda + k;
            size_t ib = p->tb ? (size_t)j * p->ldb + k : (size_t)k * p->ldb + j;
            long double a = elem(A, ia, dbl), b = elem(B, ib, dbl);
            s += a * b;
            sa += fabsl(a * b);
        }
        long double c = elem(C, (size_t)i * p->ldc + j, dbl);
        double e = (double)(fabsl(c - s) / (sa > 0 ? sa : 1.0L));
        if (e > maxerr || e != e) maxerr = e;
    }
    return maxerr;
}

int main(int argc, char **argv)
{
    const char *label = argc > 1 ? argv[1] : "cblas";
    const char *envlabel = argc > 2 ? argv[2] : "default";
    const char *csvpath = argc > 3 ? argv[3] : NULL;
    const char *set = getenv("GEMM_BENCH_SET");
    const char *prec = getenv("GEMM_BENCH_PREC");
    const char *th = getenv("OMP_NUM_THREADS");
    int repeats = getenv("GEMM_BENCH_REPEATS") ? atoi(getenv("GEMM_BENCH_REPEATS")) : 7;
    double min_s = (getenv("GEMM_BENCH_MIN_MS") ? atof(getenv("GEMM_BENCH_MIN_MS")) : 50.0) * 1e-3;
    if (!set) set = "all";
    if (!prec) prec = "sd";
    if (!th) th = "default";
    if (repeats < 7) repeats = 7;
    if (min_s < 0.05) min_s = 0.05;

    /* Shape list: (batch,in,out) layers of the regression benchmark's
     * network (20-256x5-1) and of the Fashion-MNIST MLP (784-128-128-10). */
    static const int b2_batches[] = {256, 1024, 4096};
    static const int b1_batches[] = {128, 60000};
    static const char *const ops[] = {"fwd", "dW", "dX"};
    shape_t layers[64];
    int nl = 0;
    int key = !strcmp(set, "key");
    for (int bi = 0; bi < 3; ++bi) {
        int b = b2_batches[bi];
        if (key && b != 1024) continue;
        layers[nl++] = (shape_t){"", b, 20, 256};
        layers[nl++] = (shape_t){"", b, 256, 256};
        if (!key) layers[nl++] = (shape_t){"", b, 256, 1};
    }
    layers[nl++] = (shape_t){"", 1024, 384, 384};
    layers[nl++] = (shape_t){"", 1024, 512, 512};
    for (int bi = 0; bi < 2; ++bi) {
        int b = b1_batches[bi];
        layers[nl++] = (shape_t){"", b, 784, 128};
        if (!key) {
            layers[nl++] = (shape_t){"", b, 128, 128};
            layers[nl++] = (shape_t){"", b, 128, 10};
        }
    }
    shape_t shapes[256];
    int ns = 0;
    for (int l = 0; l < nl; ++l)
        for (int o = 0; o < 3; ++o) {
            shapes[ns] = layers[l];
            shapes[ns].op = ops[o];
            ++ns;
        }
    shapes[ns++] = (shape_t){"ref", 1024, 256, 256};

    /* Buffer sizes (elements): X(batch,in), W(out,in), dZ(batch,out), C = max. */
    size_t nx = 0, nw = 0, nz = 0, nc = 0;
    for (int s = 0; s < ns; ++s) {
        size_t b = (size_t)shapes[s].batch, i = (size_t)shapes[s].in, o = (size_t)shapes[s].out;
        if (b * i > nx) nx = b * i;
        if (o * i > nw) nw = o * i;
        if (i * o > nw) nw = i * o;
        if (b * o > nz) nz = b * o;
        size_t c = b * o > o * i ? b * o : o * i;
        if (b * i > c) c = b * i;
        if (c > nc) nc = c;
    }
#define ALLOC(n) aligned_alloc(64, (((n) * sizeof(double) + 63) / 64) * 64)
    void *X = ALLOC(nx), *W = ALLOC(nw), *Z = ALLOC(nz), *C = ALLOC(nc);
    if (!X || !W || !Z || !C) {
        fprintf(stderr, "allocation failed\n");
        return 1;
    }
    memset(C, 0, nc * sizeof(double));

    FILE *csv = NULL;
    if (csvpath) {
        csv = fopen(csvpath, "a");
        if (!csv) {
            perror(csvpath);
            return 1;
        }
    }

    char info[256] = "";
#ifdef HAVE_OPENBLAS_INFO
    snprintf(info, sizeof info, "openblas core=%s threads=%d", openblas_get_corename(),
             openblas_get_num_threads());
#endif
    printf("# %s env=%s OMP_NUM_THREADS=%s %s repeats=%d min_ms=%.0f set=%s\n", label, envlabel, th,
           info, repeats, min_s * 1e3, set);
    {
        char la[64] = "?";
        FILE *f = fopen("/proc/loadavg", "r");
        if (f) {
            if (!fgets(la, sizeof la, f)) strcpy(la, "?");
            fclose(f);
            la[strcspn(la, "\n")] = 0;
        }
        printf("# loadavg at start: %s\n", la);
    }
    printf("# %-18s %-4s %6s %6s %6s %5s %9s %9s %9s\n", "label", "prec", "M", "N", "K", "tA/tB",
           "GFLOP/s", "best", "maxrelerr");
    fflush(stdout);

    for (int pi = 0; prec[pi]; ++pi) {
        int dbl = prec[pi] == 'd';
        if (prec[pi] != 's' && prec[pi] != 'd') continue;
        fill(X, nx, dbl);
        fill(W, nw, dbl);
        fill(Z, nz, dbl);
        fill(C, nc, dbl);
        for (int s = 0; s < ns; ++s) {
            prob_t p = make_prob(&shapes[s]);
            const void *A = p.a_is ? Z : X;
            const void *B = p.b_is ? X : W;
#ifdef USE_LIBXSMM
            g_fallback = 0;
#endif
            /* warm-up: >= 30 ms and >= 2 calls; gives a per-call estimate */
            double t0 = now_s(), t;
            long calls = 0;
            do {
                run_gemm(dbl, &p, A, B, C);
                ++calls;
                t = now_s() - t0;
            } while (t < 0.03 || calls < 2);
            double per = t / (double)calls;
            long inner = (long)ceil(min_s * 1.05 / per);
            if (inner < 1) inner = 1;
            double samples[64];
            int reps = repeats > 64 ? 64 : repeats;
            for (int r = 0; r < reps; ++r) {
                double ts = now_s();
                for (long it = 0; it < inner; ++it) run_gemm(dbl, &p, A, B, C);
                double el = now_s() - ts;
                if (el < min_s) { /* too short: extend the loop and retry */
                    inner = (long)ceil(inner * min_s * 1.1 / el);
                    --r;
                    continue;
                }
                samples[r] = el / (double)inner;
            }
            qsort(samples, (size_t)reps, sizeof(double), cmp_double);
            double med = samples[reps / 2];
            double flops = 2.0 * (double)p.M * (double)p.N * (double)p.K;
            double gf = flops / med * 1e-9;
            double gf_best = flops / samples[0] * 1e-9; /* fastest sample: less sensitive to other load */
            double err = check(dbl, &p, A, B, C);
            int bad = err > (dbl ? 1e-12 : 1e-5) || err != err;
            const char *tag = "";
#ifdef USE_LIBXSMM
            if (g_fallback) tag = " FALLBACK(blas)";
#endif
            if (!*tag && bad) tag = " WRONG";
            char tt[8];
            snprintf(tt, sizeof tt, "%c/%c", p.ta ? 'T' : 'N', p.tb ? 'T' : 'N');
            printf("%-20s %-4s %6d %6d %6d %5s %9.1f %9.1f %9.1e  %s b=%d in=%d out=%d%s\n", label,
                   dbl ? "f64" : "f32", p.M, p.N, p.K, tt, gf, gf_best, err, shapes[s].op,
                   shapes[s].batch, shapes[s].in, shapes[s].out, tag);
            fflush(stdout);
            if (csv) {
                if (*tag)
                    fprintf(csv, "%s,%s,%s,%s,%s,%d,%d,%d,%s\n", label, envlabel, th,
                            dbl ? "f64" : "f32", shapes[s].op, shapes[s].batch, shapes[s].in,
                            shapes[s].out, tag + 1);
                else
                    fprintf(csv, "%s,%s,%s,%s,%s,%d,%d,%d,%.2f\n", label, envlabel, th,
                            dbl ? "f64" : "f32", shapes[s].op, shapes[s].batch, shapes[s].in,
                            shapes[s].out, gf);
                fflush(csv);
            }
        }
    }
#ifdef HAVE_BLIS_INFO
    /* queried after the first BLIS call: BLIS 0.9.0 aborts if bli_arch_query_id()
     * runs before initialisation while BLIS_ARCH_TYPE is set */
    {
        bench_arch_t id = bli_arch_query_id();
        printf("# blis arch=%d (%s) threads=%ld\n", (int)id, bli_arch_string(id),
               bli_thread_get_num_threads());
    }
#endif
    if (csv) fclose(csv);
    free(X);
    free(W);
    free(Z);
    free(C);
    return 0;
}
