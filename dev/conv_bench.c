/* conv_bench.c: the parts of a convolution layer's passes at the LeNet
 * benchmark's shapes (Fashion-MNIST, batch 128: conv 32 5x5 over 28x28x1,
 * conv 64 5x5 over 12x12x32), to see where the time goes and to weigh
 * alternatives (docs/notes/conv.md):
 *   im2col       axon's, columns in (kh, kw, channel) order: runs of
 *                channels copied whole (the weights are transposed to match)
 *   im2col_chw   the alternative, torch's weight-row order (channel, kh,
 *                kw): no transposes, but a stride of kh kw per value
 *   col2im       axon's input-gradient scatter (a gather per input value)
 *   gemm fwd / wgrad / igrad  OpenBLAS sgemm of the three products
 *   maxpool fwd / bwd  axon's pooling kernels on the first conv's output
 * Each: a warm-up, then the minimum of ROUNDS timings (the machine is
 * shared: the minimum is the least disturbed), for 1 and 2 threads.
 *
 * build and run: dev/conv_bench.sh */
#include <cblas.h>
#include <stdbool.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend/cpu/cpu_image.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define ROUNDS 15
#define TIME(label, flops, call)                                                   \
    do {                                                                           \
        call;                                                                      \
        double best = 1e30;                                                        \
        for (int r = 0; r < ROUNDS; r++) {                                         \
            double start = now();                                                  \
            call;                                                                  \
            double t = now() - start;                                              \
            best = t < best ? t : best;                                            \
        }                                                                          \
        printf("  %-14s %8.3f ms", label, best * 1e3);                             \
        if (flops > 0)                                                             \
            printf("  %6.1f GFLOP/s", (flops) / best * 1e-9);                      \
        printf("\n");                                                              \
    } while (0)

/* (channel, kh, kw) columns, torch's weight-row order: the alternative
 * (axon's first version), which needs no weight transposes but writes each
 * input value with a stride of kh kw. */
static void im2col_chw(const ax_window_geometry *g, const float *x, float *columns, int64_t images)
{
    const int64_t kh = g->kernel_height, kw = g->kernel_width, c = g->channels;
    const int64_t patch = c * kh * kw, oh = g->out_height, ow = g->out_width;
#pragma omp parallel for schedule(static)
    for (int64_t item = 0; item < images * oh; item++) {
        const int64_t n = item / oh, oy = item % oh;
        const float *image = x + n * g->height * g->width * c;
        for (int64_t ox = 0; ox < ow; ox++) {
            float *column = columns + (item * ow + ox) * patch;
            for (int64_t i = 0; i < kh; i++) {
                const int64_t y = oy * g->stride - g->padding + i;
                for (int64_t j = 0; j < kw; j++) {
                    const int64_t xx = ox * g->stride - g->padding + j;
                    float *to = column + i * kw + j;
                    const bool inside = y >= 0 && y < g->height && xx >= 0 && xx < g->width;
                    const float *from = image + (y * g->width + xx) * c;
                    for (int64_t ch = 0; ch < c; ch++)
                        to[ch * kh * kw] = inside ? from[ch] : 0;
                }
            }
        }
    }
}

static void layer(const char *name, int64_t h, int64_t w, int64_t c, int64_t f, int64_t k,
                  int64_t images)
{
    ax_window_geometry g = {h, w, c, k, k, 1, 0, h - k + 1, w - k + 1};
    const int64_t p = images * g.out_height * g.out_width, kk = c * k * k;
    float *x = calloc((size_t)(images * h * w * c), sizeof(float));
    float *cols = calloc((size_t)(p * kk), sizeof(float));
    float *wts = calloc((size_t)(f * kk), sizeof(float));
    float *z = calloc((size_t)(p * f), sizeof(float));
    float *pooled = calloc((size_t)(p * f), sizeof(float));
    for (int64_t i = 0; i < images * h * w * c; i++)
        x[i] = (float)(i % 17) * 0.1f;
    for (int64_t i = 0; i < f * kk; i++)
        wts[i] = (float)(i % 13) * 0.01f;
    for (int64_t i = 0; i < p * f; i++)
        z[i] = (float)(i % 7) * 0.1f;
    const double flops = 2.0 * (double)p * (double)f * (double)kk;
    printf("%s: %lldx%lldx%lld, %lld filters %lldx%lld, %lld images (%d threads)\n", name,
           (long long)h, (long long)w, (long long)c, (long long)f, (long long)k, (long long)k,
           (long long)images, omp_get_max_threads());
    TIME("im2col", 0, ax_cpu_im2col_f32(NULL, &g, x, cols, images));
    TIME("im2col_chw", 0, im2col_chw(&g, x, cols, images));
    TIME("gemm fwd", flops,
         cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)p, (int)f, (int)kk, 1, cols,
                     (int)kk, wts, (int)kk, 0, z, (int)f));
    TIME("gemm wgrad", flops,
         cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)f, (int)kk, (int)p, 1, z,
                     (int)f, cols, (int)kk, 0, wts, (int)kk));
    TIME("gemm igrad", flops,
         cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)p, (int)kk, (int)f, 1, z,
                     (int)f, wts, (int)kk, 0, cols, (int)kk));
    TIME("col2im", 0, ax_cpu_col2im_f32(NULL, &g, cols, x, images));
    ax_window_geometry pool = {g.out_height, g.out_width, f, 2, 2, 2, 0, g.out_height / 2,
                               g.out_width / 2};
    TIME("maxpool fwd", 0, ax_cpu_pool_forward_f32(NULL, true, &pool, z, pooled, images));
    float *dz = calloc((size_t)(p * f), sizeof(float));
    TIME("maxpool bwd", 0, ax_cpu_pool_backward_f32(NULL, true, &pool, z, pooled, dz, images));
    free(dz);
    free(x);
    free(cols);
    free(wts);
    free(z);
    free(pooled);
}

int main(void)
{
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        openblas_set_num_threads(threads);
        layer("conv1", 28, 28, 1, 32, 5, 128);
        layer("conv2", 12, 12, 32, 64, 5, 128);
    }
    return 0;
}
