/* tiny_gemm.c: times the GEMMs of a small output layer through OpenBLAS and
 * through axon's tiny kernels (src/backend/cpu/tiny_gemm.c), one thread,
 * best and median of REPEATS calls each, and prints the largest difference
 * between the two results relative to the largest element. The shapes are
 * the galaxy classifier's layer 2 (1024-8-3 on 2700 rows) and larger
 * relatives; shapes the kernels decline (the output layers of the
 * Fashion-MNIST MLP 784-128-128-10 and of the regression benchmark, 1 wide
 * over 256 inputs) are timed through the BLAS only, to show they keep it.
 *
 * build: cc -O3 -march=x86-64-v3 -fopenmp -fno-math-errno -Isrc dev/tiny_gemm.c \
 *          src/backend/cpu/tiny_gemm.c -o /tmp/tiny_gemm \
 *          -I/usr/include/x86_64-linux-gnu/openblas-openmp \
 *          -L/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas -lm
 * run:   env -u OPENBLAS_CORETYPE /tmp/tiny_gemm [repeats, default 2000] */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend/cpu/tiny_gemm.h"

typedef struct {
    const char *name;
    bool trans_a, trans_b;
    int m, n, k;
} shape;

static const shape shapes[] = {
    {"galaxy layer 2 forward H W2^T", false, true, 2700, 3, 8},
    {"galaxy layer 2 weight grad d2^T H", true, false, 3, 8, 2700},
    {"galaxy layer 2 input grad d2 W2", false, false, 2700, 8, 3},
    {"60000 rows forward", false, true, 60000, 3, 8},
    {"60000 rows weight grad", true, false, 3, 8, 60000},
    {"60000 rows input grad", false, false, 60000, 8, 3},
    {"1-output forward", false, true, 4096, 1, 16},
    {"1-output weight grad", true, false, 1, 16, 4096},
    {"MLP output forward", false, true, 60000, 10, 128},
    {"MLP output forward, 64 rows", false, true, 64, 10, 128},
    {"MLP output weight grad", true, false, 10, 128, 64},
    {"MLP output input grad", false, false, 64, 128, 10},
    {"regression output forward", false, true, 1024, 1, 256},
    {"regression output weight grad", true, false, 1, 256, 1024},
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int compare(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

#define TIME_SHAPE(suffix, real, blas)                                                     \
    static void time_##suffix(shape s, int repeats, double *times)                         \
    {                                                                                      \
        const int a_cols = s.trans_a ? s.m : s.k, b_cols = s.trans_b ? s.k : s.n;          \
        const size_t a_size = (size_t)s.m * s.k, b_size = (size_t)s.k * s.n,               \
                     c_size = (size_t)s.m * s.n;                                           \
        real *a = malloc(a_size * sizeof(real)), *b = malloc(b_size * sizeof(real));       \
        real *c_blas = malloc(c_size * sizeof(real)), *c_tiny = malloc(c_size * sizeof(real)); \
        if (!a || !b || !c_blas || !c_tiny)                                                \
            abort();                                                                       \
        for (size_t i = 0; i < a_size; i++)                                                \
            a[i] = (real)sin(0.1 * (double)i);                                             \
        for (size_t i = 0; i < b_size; i++)                                                \
            b[i] = (real)cos(0.3 * (double)i);                                             \
        const CBLAS_TRANSPOSE ta = s.trans_a ? CblasTrans : CblasNoTrans,                  \
                              tb = s.trans_b ? CblasTrans : CblasNoTrans;                  \
        double *t = malloc((size_t)repeats * sizeof(double));                              \
        if (!t)                                                                            \
            abort();                                                                       \
        for (int r = 0; r < repeats; r++) {                                                \
            const double start = now();                                                    \
            blas(CblasRowMajor, ta, tb, s.m, s.n, s.k, 1, a, a_cols, b, b_cols, 0, c_blas, \
                 s.n);                                                                     \
            t[r] = now() - start;                                                          \
        }                                                                                  \
        qsort(t, (size_t)repeats, sizeof(double), compare);                                \
        times[0] = t[0], times[1] = t[repeats / 2];                                        \
        times[2] = times[3] = NAN, times[4] = NAN;                                         \
        if (ax_tiny_gemm_##suffix(s.trans_a, s.trans_b, s.m, s.n, s.k, 1, a, a_cols, b,    \
                                  b_cols, 0, c_tiny, s.n)) {                               \
            for (int r = 0; r < repeats; r++) {                                            \
                const double start = now();                                                \
                ax_tiny_gemm_##suffix(s.trans_a, s.trans_b, s.m, s.n, s.k, 1, a, a_cols, b, \
                                      b_cols, 0, c_tiny, s.n);                             \
                t[r] = now() - start;                                                      \
            }                                                                              \
            qsort(t, (size_t)repeats, sizeof(double), compare);                            \
            times[2] = t[0], times[3] = t[repeats / 2];                                    \
            double diff = 0, size = 0;                                                     \
            for (size_t i = 0; i < c_size; i++) {                                          \
                diff = fmax(diff, fabs((double)c_tiny[i] - (double)c_blas[i]));            \
                size = fmax(size, fabs((double)c_blas[i]));                                \
            }                                                                              \
            times[4] = diff / size;                                                        \
        }                                                                                  \
        free(t), free(a), free(b), free(c_blas), free(c_tiny);                             \
    }
TIME_SHAPE(f32, float, cblas_sgemm)
TIME_SHAPE(f64, double, cblas_dgemm)

int main(int argc, char **argv)
{
    const int repeats = argc > 1 ? atoi(argv[1]) : 2000;
    if (repeats < 1) {
        fprintf(stderr, "tiny_gemm: repeats must be a positive number, got '%s'\n", argv[1]);
        return 1;
    }
    omp_set_num_threads(1);
    printf("%-34s %5s %6s %6s %5s  %9s %9s  %9s %9s  %8s\n", "shape", "trans", "m", "n", "k",
           "blas best", "median", "tiny best", "median", "rel diff");
    for (int precision = 0; precision < 2; precision++) {
        printf("%s\n", precision ? "float64 (us)" : "float32 (us)");
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            const shape s = shapes[i];
            double t[5];
            if (precision)
                time_f64(s, repeats, t);
            else
                time_f32(s, repeats, t);
            printf("%-34s %c%c    %6d %6d %5d  %9.2f %9.2f  ", s.name, s.trans_a ? 'T' : 'N',
                   s.trans_b ? 'T' : 'N', s.m, s.n, s.k, 1e6 * t[0], 1e6 * t[1]);
            if (isnan(t[2]))
                printf("%9s %9s  %8s\n", "(BLAS)", "", "");
            else
                printf("%9.2f %9.2f  %8.1e\n", 1e6 * t[2], 1e6 * t[3], t[4]);
        }
    }
    return 0;
}
