/* conv_input_gradient.c: the CPU backend's convolution input gradient
 * (backend.h: conv_backward_input) in float32: oneDNN's backward-data
 * primitive (the default where built), axon's direct kernel
 * (src/backend/cpu/conv_input_direct.c; a second backend made under
 * AXON_ONEDNN_CONV=off) and the layer's own path that both replace
 * (layer_conv.c: delta times the transposed weights through the backend's
 * GEMM, then col2im), alternating in one process, at LeNet's second layer
 * (12x12x32 -> 64 filters 5x5 -> 8x8) and a 3x3 layer with padding 1
 * (16x16x32 -> 64), batch 128, on the thread counts given (argument 1,
 * e.g. 1,2,16). Each round times the best of CALLS calls of each; printed:
 * the medians over the rounds, the medians of the per-round ratios (> 1:
 * the direct kernel faster), the largest difference between the direct
 * kernel's and oneDNN's results relative to the largest value, and whether
 * the direct kernel's bits on each thread count equal those on one thread
 * (they must).
 *
 * build and run (after building axon_static in build/): dev/conv_input_gradient.sh */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "bench_median.h"

enum { ROUNDS = 5, CALLS = 20, IMAGES = 128, SHAPES = 2 };

static const ax_window_geometry geometries[SHAPES] = {{12, 12, 32, 5, 5, 1, 0, 8, 8},
                                                      {16, 16, 32, 3, 3, 1, 1, 16, 16}};
static const int64_t filter_counts[SHAPES] = {64, 64};

static void fill(float *memory, int64_t count, uint64_t state)
{
    for (int64_t i = 0; i < count; i++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        memory[i] = (float)((double)(state >> 11) / 9007199254740992.0 - 0.5);
    }
}

static float *aligned(int64_t count)
{
    return aligned_alloc(64, ((size_t)count * sizeof(float) + 63) & ~(size_t)63);
}

typedef enum contender { ONEDNN, DIRECT, LAYER } contender;

/* The layer path's scratch: the transposed weights and the columns. */
static float *transposed, *columns;

static double best_ms(ax_backend *with_onednn, ax_backend *without, contender who,
                      const ax_window_geometry *g, int64_t filters, const float *delta,
                      const float *weights, float *previous)
{
    const int64_t area = g->kernel_height * g->kernel_width, patch = area * g->channels;
    const int64_t places = IMAGES * g->out_height * g->out_width;
    double best = 1e30;
    for (int call = 0; call < CALLS; call++) {
        const double start = omp_get_wtime();
        if (who == LAYER) {
            ax_backend *b = without;
            b->ops->transpose(b, weights, transposed, filters, g->channels, area);
            b->ops->gemm(b, false, false, places, patch, filters, 1.0, delta, filters, transposed,
                         patch, 0.0, columns, patch);
            b->ops->col2im(b, g, columns, previous, IMAGES);
        } else if (!(who == ONEDNN ? with_onednn : without)
                        ->ops->conv_backward_input(who == ONEDNN ? with_onednn : without, g,
                                                   filters, delta, weights, previous, IMAGES)) {
            fprintf(stderr, "conv_backward_input declined\n");
            exit(1);
        }
        const double ms = (omp_get_wtime() - start) * 1e3;
        best = ms < best ? ms : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    const char *thread_list = argc > 1 ? argv[1] : "1,2";
    ax_backend *b = ax_backend_cpu_create(AX_PRECISION_F32);
    setenv("AXON_ONEDNN_CONV", "off", 1); /* read when a backend is made */
    ax_backend *direct = ax_backend_cpu_create(AX_PRECISION_F32);
    unsetenv("AXON_ONEDNN_CONV");
    if (!b || !direct || !b->ops->conv_backward_input) {
        fprintf(stderr, "no CPU backend with conv_backward_input\n");
        return 1;
    }
    printf("float32, batch %d, best of %d calls, median of %d alternating rounds\n", IMAGES,
           CALLS, ROUNDS);
    for (int l = 0; l < SHAPES; l++) {
        const ax_window_geometry *g = &geometries[l];
        const int64_t filters = filter_counts[l];
        const int64_t in = IMAGES * g->height * g->width * g->channels;
        const int64_t out = IMAGES * g->out_height * g->out_width * filters;
        const int64_t weights = filters * g->channels * g->kernel_height * g->kernel_width;
        float *delta = aligned(out), *w = aligned(weights), *dx = aligned(in);
        float *first = aligned(in), *onednn = aligned(in);
        transposed = aligned(weights);
        columns = aligned(IMAGES * g->out_height * g->out_width * weights / filters);
        if (!delta || !w || !dx || !first || !onednn || !transposed || !columns)
            return 1;
        fill(delta, out, 1234567u);
        fill(w, weights, 88172645463325252u);
        if (ax_set_threads(1) != AX_STATUS_OK)
            return 1;
        best_ms(b, direct, DIRECT, g, filters, delta, w, first);
        best_ms(b, direct, ONEDNN, g, filters, delta, w, onednn);
        double largest = 0, difference = 0;
        for (int64_t i = 0; i < in; i++) {
            largest = fmax(largest, fabs(onednn[i]));
            difference = fmax(difference, fabs((double)first[i] - onednn[i]));
        }
        /* the useful products: each output position meets each tap once */
        const double gflop = 2.0 * (double)weights * (double)(IMAGES * g->out_height * g->out_width) / 1e9;
        char list[256];
        snprintf(list, sizeof list, "%s", thread_list);
        for (char *item = strtok(list, ","); item; item = strtok(NULL, ",")) {
            const int threads = atoi(item);
            if (threads < 1 || ax_set_threads(threads) != AX_STATUS_OK)
                continue;
            double ms[3][ROUNDS], over_onednn[ROUNDS], over_layer[ROUNDS];
            for (int round = 0; round < ROUNDS; round++) {
                for (int who = 0; who < 3; who++)
                    ms[who][round] = best_ms(b, direct, (contender)who, g, filters, delta, w, dx);
                over_onednn[round] = ms[ONEDNN][round] / ms[DIRECT][round];
                over_layer[round] = ms[LAYER][round] / ms[DIRECT][round];
            }
            best_ms(b, direct, DIRECT, g, filters, delta, w, dx);
            const bool same = memcmp(first, dx, (size_t)in * sizeof *dx) == 0;
            double median[3];
            for (int who = 0; who < 3; who++)
                median[who] = bench_median(ms[who], ROUNDS);
            printf("%dx%dx%d -> %d %dx%d pad %d, %2d threads: oneDNN %7.3f ms (%6.1f GFLOP/s), "
                   "direct %7.3f ms (%6.1f), layer path %7.3f ms (%6.1f); direct over oneDNN "
                   "%.2f, over the layer path %.2f; difference %.1e of the largest; bits as on "
                   "1 thread: %s\n",
                   (int)g->height, (int)g->width, (int)g->channels, (int)filters,
                   (int)g->kernel_height, (int)g->kernel_width, (int)g->padding, threads,
                   median[ONEDNN], gflop / median[ONEDNN] * 1e3, median[DIRECT],
                   gflop / median[DIRECT] * 1e3, median[LAYER], gflop / median[LAYER] * 1e3,
                   bench_median(over_onednn, ROUNDS), bench_median(over_layer, ROUNDS),
                   difference / largest, same ? "yes" : "NO");
        }
        free(transposed), free(columns);
        free(delta), free(w), free(dx), free(first), free(onednn);
    }
    b->ops->destroy(b);
    direct->ops->destroy(direct);
    return 0;
}
