/* skinny_gemm.c: the two products B3 (galaxy 1024-8-3, full-batch CG)
 * spends its time in, through OpenBLAS, against the time
 * to read the 2700 x 1024 data matrix X once (the bound, dev/bandwidth.c):
 *   forward  Z (2700, 8) = X (2700, 1024) W^T, W (8, 1024)   (X D^T alike)
 *   gradient G (8, 1024) = delta^T (8, 2700) X (2700, 1024)
 * and through axon's AVX-512 kernels for these shapes
 * (src/backend/cpu/skinny_gemm.c), which read X once each with the 8-wide
 * operand in registers. (Plain C loops compiled for x86-64-v3 had been 1.8
 * to 2.2x slower than OpenBLAS; docs/galaxy.md.)
 *
 * build: cc -O2 -fopenmp -Isrc dev/skinny_gemm.c src/backend/cpu/skinny_gemm.c \
 *          -o /tmp/skinny_gemm -I/usr/include/x86_64-linux-gnu/openblas-openmp \
 *          -L/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas -lm
 * run:   OMP_NUM_THREADS=1 /tmp/skinny_gemm   (best of 50: ms and GB/s of X;
 *        unset OPENBLAS_CORETYPE first, or OpenBLAS runs its AVX2 kernels) */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend/cpu/skinny_gemm.h"

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

#define BEST_OF(result, call)                                                            \
    do {                                                                                 \
        result = 1e30;                                                                   \
        for (int rep_ = 0; rep_ < 50; rep_++) {                                          \
            double t0_ = now();                                                          \
            call;                                                                        \
            double t_ = now() - t0_;                                                     \
            if (t_ < result)                                                             \
                result = t_;                                                             \
        }                                                                                \
    } while (0)

#define RUN(real, suffix, gemm)                                                                  \
    do {                                                                                         \
        real *x = malloc(sizeof(real) * ROWS * IN), *w = malloc(sizeof(real) * OUT * IN);        \
        real *z = malloc(sizeof(real) * ROWS * OUT), *z2 = malloc(sizeof(real) * ROWS * OUT);    \
        real *g = malloc(sizeof(real) * OUT * IN), *g2 = malloc(sizeof(real) * OUT * IN);        \
        if (!x || !w || !z || !z2 || !g || !g2)                                                  \
            return 1;                                                                            \
        for (size_t i = 0; i < (size_t)ROWS * IN; i++)                                           \
            x[i] = (real)((i * 2654435761u) % 256) / 255;                                        \
        for (int i = 0; i < OUT * IN; i++)                                                       \
            w[i] = (real)((i % 13) - 6) * (real)0.01;                                            \
        const double bytes = (double)ROWS * IN * sizeof(real);                                   \
        double t_blas, t_loop, t_gblas, t_gloop;                                                 \
        BEST_OF(t_blas, gemm(CblasRowMajor, CblasNoTrans, CblasTrans, ROWS, OUT, IN, 1, x, IN,  \
                             w, IN, 0, z, OUT));                                                 \
        BEST_OF(t_loop, forward_##suffix(x, w, z2));                                             \
        double err = 0;                                                                          \
        for (int i = 0; i < ROWS * OUT; i++)                                                     \
            err = fmax(err, fabs((double)z[i] - (double)z2[i]));                                 \
        for (int i = 0; i < ROWS * OUT; i++)                                                     \
            z2[i] = (real)((i % 7) - 3) * (real)0.1;                                             \
        BEST_OF(t_gblas, gemm(CblasRowMajor, CblasTrans, CblasNoTrans, OUT, IN, ROWS, 1, z2,     \
                              OUT, x, IN, 0, g, IN));                                            \
        BEST_OF(t_gloop, gradient_##suffix(z2, x, g2));                                          \
        double gerr = 0;                                                                         \
        for (int i = 0; i < OUT * IN; i++)                                                       \
            gerr = fmax(gerr, fabs((double)g[i] - (double)g2[i]) / (1 + fabs((double)g[i])));    \
        printf("%s forward  X W^T : BLAS %.3f ms (%.1f GB/s), axon %.3f ms (%.1f GB/s), "       \
               "max diff %.1e\n",                                                                \
               #suffix, t_blas * 1e3, bytes / t_blas / 1e9, t_loop * 1e3, bytes / t_loop / 1e9,  \
               err);                                                                             \
        printf("%s gradient d^T X: BLAS %.3f ms (%.1f GB/s), axon %.3f ms (%.1f GB/s), "       \
               "max diff %.1e\n",                                                                \
               #suffix, t_gblas * 1e3, bytes / t_gblas / 1e9, t_gloop * 1e3,                     \
               bytes / t_gloop / 1e9, gerr);                                                     \
        free(x), free(w), free(z), free(z2), free(g), free(g2);                                  \
    } while (0)

int main(void)
{
    RUN(float, f32, cblas_sgemm);
    RUN(double, f64, cblas_dgemm);
    return 0;
}
