/* conv_weight_amx_phases.c: where one slice of the AMX weight gradient
 * (src/backend/cpu/conv_weight_amx.c, included here for its static parts)
 * spends its time, on one thread: the shifted planes, the delta's pairs,
 * the tiles' products. Slices of 8 images of LeNet's second layer (12x12x32
 * -> 64 filters 5x5) and of 3x3 with padding 1 (16x16x32 -> 64); the tiles
 * on AMX where the CPU has it, else their scalar emulation (then the third
 * figure means nothing). Best of 50 calls each, in microseconds.
 *
 * build (after building axon_static in build/; for a lent GPU host, into build-gpu/amx_phases
 * against build-gpu/libaxon.a, which dev/gpu_run.sh amx then runs), and run:
 *   gcc -std=c11 -D_GNU_SOURCE -O3 -march=x86-64-v3 -fopenmp -Isrc -Iinclude \
 *       dev/conv_weight_amx_phases.c \
 *       -o /tmp/amx_phases build/libaxon.a $(dnnl, BLAS as dev/conv_weight_gradient.sh) -lm
 *   /tmp/amx_phases */
#include "../src/backend/cpu/conv_weight_amx.c"

#include <omp.h>
#include <stdio.h>

enum { IMAGES = 8, CALLS = 50 };

static double best_us(double *best, double start)
{
    const double us = (omp_get_wtime() - start) * 1e6;
    return *best = us < *best ? us : *best;
}

static void phases(const char *name, ax_window_geometry g, int64_t filters, bool hardware)
{
    const int64_t c = g.channels, in = IMAGES * g.height * g.width * c;
    const int64_t out = IMAGES * g.out_height * g.out_width * filters;
    const int64_t weights = filters * c * g.kernel_height * g.kernel_width;
    float *x = malloc((size_t)in * sizeof *x), *delta = malloc((size_t)out * sizeof *delta);
    float *partial = aligned_alloc(64, (size_t)(weights + 64) * sizeof(float));
    for (int64_t i = 0; i < in; i++)
        x[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (int64_t i = 0; i < out; i++)
        delta[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    const amx_product p = {.geometry = &g, .filters = filters, .delta = delta, .x = x,
                           .widest = IMAGES, .layout = layout_of(&g), .hardware = hardware};
    const amx_layout *l = &p.layout;
    uint16_t *own = aligned_alloc(64, ((size_t)thread_values(&g, filters, IMAGES) * 2 + 63) & ~63ul);
    uint16_t *shifted = own, *pairs = shifted + g.kernel_width * IMAGES * c * l->plane;
    uint16_t *planes = pairs + IMAGES * l->groups * l->k * filters;
    double shift = 1e30, pair = 1e30, whole = 1e30;
    for (int call = 0; call < CALLS; call++) {
        double start = omp_get_wtime();
        for (int64_t i = 0; i < IMAGES; i++)
            copy_shifted(&p, x + i * g.height * g.width * c, i, IMAGES, planes, shifted);
        best_us(&shift, start);
        start = omp_get_wtime();
        copy_pairs(&p, delta, IMAGES, pairs, NULL);
        best_us(&pair, start);
        start = omp_get_wtime();
        amx_slice((void *)&p, 0, IMAGES, own, partial);
        best_us(&whole, start);
    }
    printf("%s, %d images: shifted planes %.1f us, pairs %.1f us, whole slice %.1f us "
           "(tiles %s: about %.1f us)\n",
           name, IMAGES, shift, pair, whole, hardware ? "on AMX" : "emulated",
           whole - shift - pair);
    free(x), free(delta), free(partial), free(own);
}

int main(void)
{
    const bool hardware = ax_conv_amx_mode_chosen() == AX_CONV_AMX_HARDWARE;
    phases("LeNet conv2 12x12x32 -> 64 5x5", (ax_window_geometry){12, 12, 32, 5, 5, 1, 0, 8, 8}, 64,
           hardware);
    phases("3x3 padding 1 16x16x32 -> 64", (ax_window_geometry){16, 16, 32, 3, 3, 1, 1, 16, 16}, 64,
           hardware);
    return 0;
}
