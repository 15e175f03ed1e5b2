/* skinny_gemm.c: the two products B3 (galaxy 1024-8-3, full-batch CG)
 * spends its time in, through OpenBLAS and as plain loops, against the time
 * to read the 2700 x 1024 data matrix X once (the bound, dev/bandwidth.c):
 *   forward  Z (2700, 8) = X (2700, 1024) W^T, W (8, 1024)   (X D^T alike)
 *   gradient G (8, 1024) = delta^T (8, 2700) X (2700, 1024)
 * The loops read X once each, keeping the 8-wide operand in registers or
 * L1; compiled for x86-64-v3 they show what a backend kernel without hand
 * vectorisation would get (docs/galaxy.md: slower than OpenBLAS).
 *
 * build: cc -O3 -march=x86-64-v3 -fopenmp dev/skinny_gemm.c -o /tmp/skinny_gemm \
 *          -I/usr/include/x86_64-linux-gnu/openblas-openmp \
 *          -L/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas -lm
 * run:   OMP_NUM_THREADS=1 /tmp/skinny_gemm   (best of 50: ms and GB/s of X) */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROWS 2700
#define IN 1024
#define OUT 8

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Z = X W^T: two rows of X at a time against all 8 rows of W; the sums
 * vectorise over the input index. */
#define FORWARD(name, real)                                                              \
    static void name(const real *x, const real *w, real *z)                              \
    {                                                                                    \
        _Pragma("omp parallel for schedule(static)")                                     \
        for (int r = 0; r < ROWS; r += 2) {                                              \
            const real *a0 = x + (size_t)r * IN, *a1 = a0 + IN;                          \
            real s0[OUT] = {0}, s1[OUT] = {0};                                           \
            for (int j = 0; j < OUT; j++) {                                              \
                const real *b = w + (size_t)j * IN;                                      \
                real t0 = 0, t1 = 0;                                                     \
                _Pragma("omp simd reduction(+ : t0, t1)")                                \
                for (int k = 0; k < IN; k++) {                                           \
                    t0 += a0[k] * b[k];                                                  \
                    t1 += a1[k] * b[k];                                                  \
                }                                                                        \
                s0[j] = t0, s1[j] = t1;                                                  \
            }                                                                            \
            for (int j = 0; j < OUT; j++)                                                \
                z[(size_t)r * OUT + j] = s0[j], z[(size_t)(r + 1) * OUT + j] = s1[j];    \
        }                                                                                \
    }
FORWARD(forward_f32, float)
FORWARD(forward_f64, double)

/* G = delta^T X: per block of 64 input columns, the 8 x 64 sums stay in L1
 * while X's rows stream past. */
#define GRADIENT(name, real)                                                             \
    static void name(const real *delta, const real *x, real *g)                          \
    {                                                                                    \
        _Pragma("omp parallel for schedule(static)")                                     \
        for (int c0 = 0; c0 < IN; c0 += 64) {                                            \
            real acc[OUT][64] = {{0}};                                                   \
            for (int r = 0; r < ROWS; r++) {                                             \
                const real *a = x + (size_t)r * IN + c0;                                 \
                for (int j = 0; j < OUT; j++) {                                          \
                    const real d = delta[(size_t)r * OUT + j];                           \
                    _Pragma("omp simd")                                                  \
                    for (int k = 0; k < 64; k++)                                         \
                        acc[j][k] += d * a[k];                                           \
                }                                                                        \
            }                                                                            \
            for (int j = 0; j < OUT; j++)                                                \
                for (int k = 0; k < 64; k++)                                             \
                    g[(size_t)j * IN + c0 + k] = acc[j][k];                              \
        }                                                                                \
    }
GRADIENT(gradient_f32, float)
GRADIENT(gradient_f64, double)

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
        printf("%s forward  X W^T : BLAS %.3f ms (%.1f GB/s), loops %.3f ms (%.1f GB/s), "       \
               "max diff %.1e\n",                                                                \
               #suffix, t_blas * 1e3, bytes / t_blas / 1e9, t_loop * 1e3, bytes / t_loop / 1e9,  \
               err);                                                                             \
        printf("%s gradient d^T X: BLAS %.3f ms (%.1f GB/s), loops %.3f ms (%.1f GB/s), "       \
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
