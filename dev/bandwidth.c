/* bandwidth.c: how fast this machine streams a read-only matrix, the bound
 * on one full-batch evaluation of the galaxy network (1024-8-3), which
 * reads the 2700 x 1024 data matrix once per GEMM. A STREAM-like read (sum
 * of all elements, vectorised, one or more OpenMP threads) over buffers of
 * the sizes that matter: the float32 data (11 MB), the float64 data
 * (22 MB), and a buffer far larger than any cache (DRAM).
 *
 * build: cc -O3 -march=native -fopenmp dev/bandwidth.c -o /tmp/bandwidth
 * run:   /tmp/bandwidth [threads]      (prints MB, GB/s best of 20 sweeps) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Sum of n floats with 16 independent accumulators so the adds keep up
 * with the loads. */
static float read_sweep(const float *a, size_t n)
{
    float total = 0.0f;
#pragma omp parallel reduction(+ : total)
    {
        float acc[16] = {0};
#pragma omp for schedule(static)
        for (size_t i = 0; i < n; i += 16)
            for (int j = 0; j < 16; j++)
                acc[j] += a[i + j];
        for (int j = 0; j < 16; j++)
            total += acc[j];
    }
    return total;
}

/* b = 2 a: a read and a write stream. */
static void copy_sweep(const float *restrict a, float *restrict b, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        b[i] = 2.0f * a[i];
}

int main(int argc, char **argv)
{
    if (argc > 1)
        omp_set_num_threads(atoi(argv[1]));
    const size_t sizes_mb[] = {1, 4, 11, 22, 64, 512};
    printf("threads %d\n%8s %10s %10s\n", omp_get_max_threads(), "MB", "read GB/s",
           "copy GB/s");
    for (size_t s = 0; s < sizeof sizes_mb / sizeof *sizes_mb; s++) {
        size_t n = sizes_mb[s] * 1000000 / sizeof(float);
        n -= n % 16;
        float *a = aligned_alloc(64, n * sizeof *a), *b = aligned_alloc(64, n * sizeof *b);
        if (!a || !b)
            return 1;
        for (size_t i = 0; i < n; i++)
            a[i] = (float)(i & 1023) * 1e-3f;
        double best = 1e30;
        volatile float sink = 0.0f;
        for (int r = 0; r < 20; r++) {
            double t0 = now();
            sink += read_sweep(a, n);
            double t = now() - t0;
            if (t < best)
                best = t;
        }
        (void)sink;
        double best_copy = 1e30;
        for (int r = 0; r < 20; r++) {
            double t0 = now();
            copy_sweep(a, b, n);
            double t = now() - t0;
            if (t < best_copy)
                best_copy = t;
        }
        printf("%8.1f %10.1f %10.1f\n", (double)(n * sizeof *a) / 1e6,
               (double)(n * sizeof *a) / best / 1e9, 2.0 * (double)(n * sizeof *a) / best_copy / 1e9);
        free(a), free(b);
    }
    return 0;
}
