/* stats_bench.c: times axon's activation statistics at their benchmark sizes
 * (entropy-mi: B in {256 .. 65536}, D = 256; tensor-mean: N in {64 .. 8192},
 * D = 32) through the library alone, for docs/stats.md. Each figure is the
 * median of REPEATS samples after a warm-up, each sample looping the call
 * for at least MIN_MS (the machine is shared and noisy: medians, not means).
 * Also prints the effective memory bandwidth of entropy-mi (two float32
 * inputs read once), the GFLOP/s of tensor-mean (2 N D^3 flops) and, for
 * the fraction of the GEMM rate, the BLAS's SGEMM rate at two shapes with
 * the same threads.
 *
 * build (from the repository root, after building build-stats/):
 *   gcc -std=c11 -O2 -fopenmp -Iinclude -Isrc -I/usr/include/x86_64-linux-gnu/openblas-pthread \
 *       dev/stats_bench.c build-stats/libaxon.a \
 *       /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0 \
 *       $(pkg-config --libs libarchive libjpeg libpng) -lz -lm -o /tmp/stats_bench
 * usage: env -u OPENBLAS_CORETYPE /tmp/stats_bench [threads] [portable]
 *   portable: force the portable kernels (libmvec, BLAS) instead of AVX-512
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "axon.h"
#include "stats/dispatch.h"

enum { REPEATS = 9, MIN_MS = 40 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Pseudo-normal values from a fixed LCG (the bench needs no library RNG). */
static float *random_array(int64_t count, uint64_t seed)
{
    float *a = malloc((size_t)count * sizeof *a);
    for (int64_t i = 0; i < count; i++) {
        double s = 0;
        for (int k = 0; k < 4; k++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            s += (double)(seed >> 11) / 9007199254740992.0;
        }
        a[i] = (float)((s - 2.0) * 1.7320508);
    }
    return a;
}

typedef struct call {
    int kind; /* 0: entropy-mi, 1: tensor-mean, 2: sgemm C(m,n) = op(A) B */
    const float *a, *b, *c;
    int64_t rows, d;
    float *out;
    int64_t k;  /* sgemm: the inner dimension */
    bool trans; /* sgemm: A is stored (k, m) */
} call;

static void run(const call *c)
{
    if (c->kind == 2) { /* C (rows, d) = op(A) B (k, d) */
        const int m = (int)c->rows, n = (int)c->d, k = (int)c->k;
        cblas_sgemm(CblasRowMajor, c->trans ? CblasTrans : CblasNoTrans, CblasNoTrans, m, n, k,
                    1.0f, c->a, c->trans ? m : k, c->b, n, 0.0f, c->out, n);
        return;
    }
    double h, mi;
    ax_status status = c->kind == 0 ? ax_stats_entropy_mi(c->a, c->b, c->rows, c->d, &h, &mi)
                                    : ax_stats_tensor_mean(c->a, c->b, c->c, c->rows, c->d, c->out);
    if (status != AX_STATUS_OK) {
        fprintf(stderr, "stats_bench: %s\n", ax_error_message());
        exit(1);
    }
}

static double median_seconds(const call *c)
{
    double start = now();
    int warm = 0;
    while (warm < 2 || now() - start < 0.03) {
        run(c);
        warm++;
    }
    double samples[REPEATS];
    for (int s = 0; s < REPEATS; s++) {
        int loops = 0;
        double t0 = now(), elapsed;
        do {
            run(c);
            loops++;
            elapsed = now() - t0;
        } while (elapsed < MIN_MS * 1e-3);
        samples[s] = elapsed / loops;
    }
    qsort(samples, REPEATS, sizeof *samples, compare);
    return samples[REPEATS / 2];
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    bool portable = argc > 2 && strcmp(argv[2], "portable") == 0;
    ax_stats_force_portable(portable);
    if (ax_set_threads(threads) != AX_STATUS_OK) {
        fprintf(stderr, "stats_bench: %s\n", ax_error_message());
        return 2;
    }
    printf("# stats_bench: %d threads, %s kernels, median of %d samples of >= %d ms\n", ax_threads(),
           ax_stats_use_avx512() ? "AVX-512" : "portable", REPEATS, MIN_MS);
    printf("bench,size,seconds,figure\n");
    const int64_t batches[] = {256, 1024, 4096, 16384, 65536};
    for (int i = 0; i < 5; i++) {
        int64_t b = batches[i], d = 256;
        float *x = random_array(b * d, 1 + (uint64_t)i), *y = random_array(b * d, 100 + (uint64_t)i);
        call c = {0, x, y, NULL, b, d, NULL, 0, false};
        double s = median_seconds(&c);
        printf("entropy-mi,%lld,%.6g,%.1f GB/s\n", (long long)b, s,
               2.0 * (double)(b * d) * 4.0 / s * 1e-9);
        free(x);
        free(y);
    }
    const int64_t triplets[] = {64, 256, 1024, 4096, 8192};
    for (int i = 0; i < 5; i++) {
        int64_t n = triplets[i], d = 32;
        float *fx = random_array(n * d, 7 + (uint64_t)i), *fy = random_array(n * d, 70 + (uint64_t)i);
        float *fz = random_array(n * d, 700 + (uint64_t)i), *out = malloc(d * d * d * sizeof *out);
        call c = {1, fx, fy, fz, n, d, out, 0, false};
        double s = median_seconds(&c);
        printf("tensor-mean,%lld,%.6g,%.1f GFLOP/s\n", (long long)n, s,
               2.0 * (double)n * (double)(d * d * d) / s * 1e-9);
        free(fx);
        free(fy);
        free(fz);
        free(out);
    }
    /* The BLAS's own rate, for the tensor-mean fraction: a square-ish
     * reference C(1024,256) = A(1024,256) B(256,256) and the BLAS path's
     * block GEMM C(1024,32) = K^T(1024,256) fz(256,32). */
    const int64_t shapes[2][3] = {{1024, 256, 256}, {1024, 32, 256}};
    for (int i = 0; i < 2; i++) {
        int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
        float *a = random_array(m * k, 5), *b = random_array(k * n, 6), *out = malloc(m * n * sizeof *out);
        call c = {2, a, b, NULL, m, n, out, k, i == 1};
        double s = median_seconds(&c);
        printf("sgemm-%s,%lldx%lldx%lld,%.6g,%.1f GFLOP/s\n", i == 0 ? "ref" : "kr-block",
               (long long)m, (long long)n, (long long)k, s, 2.0 * (double)(m * n * k) / s * 1e-9);
        free(a);
        free(b);
        free(out);
    }
    return 0;
}
