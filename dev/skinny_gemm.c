/* skinny_gemm.c: the two products the galaxy classifier
 * (1024-8-3, full-batch CG) spends its time in, through OpenBLAS, against
 * the time to read the 2700 x 1024 data matrix X once (the bound, dev/bandwidth.c):
 *   forward  Z (2700, 8) = X (2700, 1024) W^T, W (8, 1024)   (X D^T alike)
 *   gradient G (8, 1024) = delta^T (8, 2700) X (2700, 1024)
 * and through axon's AVX-512 kernels for these shapes
 * (src/backend/cpu/skinny_gemm.c), which read X once each with the 8-wide
 * operand in registers. (Plain C loops compiled for x86-64-v3 had been 1.8
 * to 2.2x slower than OpenBLAS; docs/notes/galaxy.md.) Each product runs with 1
 * and then 2 threads; the line gives the best, median and 90th percentile
 * of REPEATS calls, since on a shared machine the best alone can hide a
 * slow median. It also checks that the kernels' results do not depend on
 * the thread count (they must not: docs/notes/galaxy.md).
 *
 * build: cc -O3 -march=x86-64-v3 -fopenmp -Isrc dev/skinny_gemm.c \
 *          src/backend/cpu/skinny_gemm.c src/base/memory.c -o /tmp/skinny_gemm \
 *          -I/usr/include/x86_64-linux-gnu/openblas-openmp \
 *          -L/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas -lm
 * run:   env -u OPENBLAS_CORETYPE /tmp/skinny_gemm [repeats, default 200]
 *        (with OPENBLAS_CORETYPE set, OpenBLAS runs its AVX2 kernels) */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/skinny_gemm.h"
#include "base/memory.h"

#define ROWS 2700
#define IN 1024
#define OUT 8

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define FORWARD(name, real, suffix)                                                      \
    static void name(const real *x, const real *w, real *z)                              \
    {                                                                                    \
        if (!ax_skinny_gemm_##suffix(false, true, ROWS, OUT, IN, 1, x, IN, w, IN, 0, z,  \
                                     OUT))                                               \
            abort(); /* no AVX-512F: nothing to compare */                               \
    }
FORWARD(forward_f32, float, f32)
FORWARD(forward_f64, double, f64)

#define GRADIENT(name, real, suffix)                                                     \
    static void name(const real *delta, const real *x, real *g)                          \
    {                                                                                    \
        if (!ax_skinny_gemm_##suffix(true, false, OUT, IN, ROWS, 1, delta, OUT, x, IN, 0, \
                                     g, IN))                                             \
            abort();                                                                     \
    }
GRADIENT(gradient_f32, float, f32)
GRADIENT(gradient_f64, double, f64)

static int compare_times(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

typedef struct {
    double best, median, p90;
} timing;

static int repeats = 200;

/* Times `call` `repeats` times; the spread is the median and the 90th
 * percentile. */
#define TIME(result, call)                                                               \
    do {                                                                                 \
        double *t_ = malloc(sizeof(double) * (size_t)repeats);                           \
        if (!t_)                                                                         \
            abort();                                                                     \
        for (int rep_ = 0; rep_ < repeats; rep_++) {                                     \
            const double t0_ = now();                                                    \
            call;                                                                        \
            t_[rep_] = now() - t0_;                                                      \
        }                                                                                \
        qsort(t_, (size_t)repeats, sizeof *t_, compare_times);                           \
        result = (timing){t_[0], t_[repeats / 2], t_[repeats * 9 / 10]};                 \
        free(t_);                                                                        \
    } while (0)

static void report(const char *what, int threads, const char *who, timing t, double bytes)
{
    const double flops = 2.0 * ROWS * IN * OUT;
    printf("%s %dT %-5s best %.3f ms (%5.1f GB/s, %3.0f GFLOP/s)  median %.3f  p90 %.3f\n",
           what, threads, who, t.best * 1e3, bytes / t.best / 1e9, flops / t.best / 1e9,
           t.median * 1e3, t.p90 * 1e3);
}

#define RUN(real, suffix, gemm)                                                                  \
    do {                                                                                         \
        /* allocated as the CPU backend allocates (X on huge pages): with   \
         * malloc's 16-byte alignment every vector load of X spans two      \
         * cache lines, which had made the forward kernel look 20 % slower  \
         * than it runs in axon */                                          \
        real *x = ax_allocate_zeroed(sizeof(real) * ROWS * IN);                                  \
        real *w = ax_allocate_zeroed(sizeof(real) * OUT * IN);                                   \
        real *z = ax_allocate_zeroed(sizeof(real) * ROWS * OUT);                                 \
        real *z2 = ax_allocate_zeroed(sizeof(real) * ROWS * OUT);                                \
        real *z1 = ax_allocate_zeroed(sizeof(real) * ROWS * OUT);                                \
        real *g1 = ax_allocate_zeroed(sizeof(real) * OUT * IN);                                  \
        real *d = ax_allocate_zeroed(sizeof(real) * ROWS * OUT);                                 \
        real *g = ax_allocate_zeroed(sizeof(real) * OUT * IN);                                   \
        real *g2 = ax_allocate_zeroed(sizeof(real) * OUT * IN);                                  \
        if (!x || !w || !z || !z2 || !z1 || !g1 || !d || !g || !g2)                              \
            return 1;                                                                            \
        for (size_t i = 0; i < (size_t)ROWS * IN; i++)                                           \
            x[i] = (real)((i * 2654435761u) % 256) / 255;                                        \
        for (int i = 0; i < OUT * IN; i++)                                                       \
            w[i] = (real)((i % 13) - 6) * (real)0.01;                                            \
        for (int i = 0; i < ROWS * OUT; i++)                                                     \
            d[i] = (real)((i % 7) - 3) * (real)0.1;                                              \
        const double bytes = (double)ROWS * IN * sizeof(real);                                   \
        for (int threads = 1; threads <= 2; threads++) {                                         \
            omp_set_num_threads(threads);                                                        \
            timing blas, axon, gblas, gaxon;                                                     \
            TIME(blas, gemm(CblasRowMajor, CblasNoTrans, CblasTrans, ROWS, OUT, IN, 1, x, IN, w, \
                            IN, 0, z, OUT));                                                     \
            TIME(axon, forward_##suffix(x, w, z2));                                              \
            double err = 0;                                                                      \
            for (int i = 0; i < ROWS * OUT; i++)                                                 \
                err = fmax(err, fabs((double)z[i] - (double)z2[i]));                             \
            TIME(gblas, gemm(CblasRowMajor, CblasTrans, CblasNoTrans, OUT, IN, ROWS, 1, d, OUT,  \
                             x, IN, 0, g, IN));                                                  \
            TIME(gaxon, gradient_##suffix(d, x, g2));                                            \
            double gerr = 0;                                                                     \
            for (int i = 0; i < OUT * IN; i++)                                                   \
                gerr = fmax(gerr, fabs((double)g[i] - (double)g2[i]) / (1 + fabs((double)g[i])));\
            char what[32];                                                                       \
            snprintf(what, sizeof what, "%s forward ", #suffix);                                 \
            report(what, threads, "BLAS", blas, bytes);                                          \
            report(what, threads, "axon", axon, bytes);                                          \
            snprintf(what, sizeof what, "%s gradient", #suffix);                                 \
            report(what, threads, "BLAS", gblas, bytes);                                         \
            report(what, threads, "axon", gaxon, bytes);                                         \
            printf("%s %dT max diff from the BLAS: forward %.1e, gradient %.1e (relative)\n",    \
                   #suffix, threads, err, gerr);                                                 \
            if (threads == 1)                                                                    \
                memcpy(z1, z2, sizeof(real) * ROWS * OUT), memcpy(g1, g2, sizeof(real) * OUT * IN); \
            else if (memcmp(z1, z2, sizeof(real) * ROWS * OUT) ||                                \
                     memcmp(g1, g2, sizeof(real) * OUT * IN))                                    \
                printf("%s: the kernels' results differ between 1 and 2 threads\n", #suffix);    \
        }                                                                                        \
        free(x), free(w), free(z), free(z2), free(z1), free(g1), free(d), free(g), free(g2);     \
    } while (0)

int main(int argc, char **argv)
{
    if (argc > 1 && (repeats = atoi(argv[1])) < 1) {
        fprintf(stderr, "skinny_gemm: the repeat count '%s' is not a positive number\n", argv[1]);
        return 2;
    }
    RUN(float, f32, cblas_sgemm);
    RUN(double, f64, cblas_dgemm);
    return 0;
}
