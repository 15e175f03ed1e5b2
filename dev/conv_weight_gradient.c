/* conv_weight_gradient.c: the CPU backend's convolution weight gradient
 * (backend.h: conv_backward_weights; src/backend/cpu/conv_weight_gradient.c,
 * slices of the batch on all threads) against the layer's own path that it
 * replaces (layer_conv.c's weight_products: im2col of the whole batch, one
 * GEMM through the backend's gemm, the transpose into place), at LeNet's
 * two shapes, batch 128:
 *   conv1 28x28x1 -> 32 filters 5x5 -> 24x24,
 *   conv2 12x12x32 -> 64 filters 5x5 -> 8x8,
 * float32, float64 or bf16 (argument 2), on the thread counts given (argument 1,
 * e.g. 1,2,16). Rounds alternate the two (the machine may be shared); each
 * round times the best of CALLS calls; printed: the median over the rounds
 * of each one's ms and GFLOP/s, the median of the per-round ratios
 * (> 1: the entry faster), and whether the entry's bits on each thread count
 * equal those on one thread (they must). The figures for
 * docs/notes/conv.md come from here and `axon info --peak`.
 * With CONV_WG_BASE=NAME=VALUE (e.g. AXON_CONV_DIRECT=off) the first
 * contender is the entry itself with that variable set during its calls
 * (the entry reads it at each call): two of the entry's kernels compared
 * in one process, alternating. Two more shapes follow LeNet's: 3x3 with
 * padding 1 (16x16x32 -> 64) and with stride 2 (16x16x64 -> 128, 8x8).
 *
 * build and run (after building axon_static in build/): dev/conv_weight_gradient.sh */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "bench_median.h"

enum { ROUNDS = 5, CALLS = 20, IMAGES = 128 };

enum { SHAPES = 4 };
static const ax_window_geometry geometries[SHAPES] = {{28, 28, 1, 5, 5, 1, 0, 24, 24},
                                                      {12, 12, 32, 5, 5, 1, 0, 8, 8},
                                                      {16, 16, 32, 3, 3, 1, 1, 16, 16},
                                                      {16, 16, 64, 3, 3, 2, 1, 8, 8}};
static const int64_t filter_counts[SHAPES] = {32, 64, 64, 128};

static void fill(ax_backend *b, void *memory, int64_t count, uint64_t state)
{
    for (int64_t i = 0; i < count; i++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        const double value = (double)(state >> 11) / 9007199254740992.0 - 0.5;
        if (b->real_size == sizeof(double))
            ((double *)memory)[i] = value;
        else
            ((float *)memory)[i] = (float)value;
    }
}

static void *aligned(size_t bytes)
{
    return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
}

/* The layer's path: dW in the columns' order, then transposed into place. */
static void layer_path(ax_backend *b, const ax_window_geometry *g, int64_t filters,
                       const void *delta, const void *x, void *columns, void *ordered, void *dw)
{
    const int64_t area = g->kernel_height * g->kernel_width, patch = area * g->channels;
    b->ops->im2col(b, g, x, columns, IMAGES);
    b->ops->gemm(b, true, false, filters, patch, IMAGES * g->out_height * g->out_width, 1.0,
                 delta, filters, columns, patch, 0.0, ordered, patch);
    b->ops->transpose(b, ordered, dw, filters, area, g->channels);
}

/* CONV_WG_BASE's NAME and VALUE, or NULL */
static char base_name[128], *base_value;

static double best_ms(ax_backend *b, int entry, const ax_window_geometry *g, int64_t filters,
                      const void *delta, const void *x, void *columns, void *ordered, void *dw)
{
    double best = 1e30;
    for (int call = 0; call < CALLS; call++) {
        const double start = omp_get_wtime();
        if (entry)
            b->ops->conv_backward_weights(b, g, filters, delta, x, NULL, dw, IMAGES);
        else if (base_value) {
            setenv(base_name, base_value, 1);
            b->ops->conv_backward_weights(b, g, filters, delta, x, NULL, dw, IMAGES);
            unsetenv(base_name);
        } else
            layer_path(b, g, filters, delta, x, columns, ordered, dw);
        const double ms = (omp_get_wtime() - start) * 1e3;
        best = ms < best ? ms : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    const char *thread_list = argc > 1 ? argv[1] : "1,2";
    const ax_precision precision = argc > 2 && strcmp(argv[2], "f64") == 0    ? AX_PRECISION_F64
                                   : argc > 2 && strcmp(argv[2], "bf16") == 0 ? AX_PRECISION_BF16
                                                                              : AX_PRECISION_F32;
    const char *base = getenv("CONV_WG_BASE");
    if (base && strchr(base, '=') && strlen(base) < sizeof base_name) {
        snprintf(base_name, sizeof base_name, "%s", base);
        base_value = strchr(base_name, '=');
        *base_value++ = '\0';
        printf("first contender: the entry under %s=%s\n", base_name, base_value);
    }
    ax_backend *b = ax_backend_cpu_create(precision);
    if (!b || !b->ops->conv_backward_weights) {
        fprintf(stderr, "no CPU backend with conv_backward_weights\n");
        return 1;
    }
    const size_t real = b->real_size;
    printf("%s, batch %d, best of %d calls, median of %d alternating rounds\n",
           precision == AX_PRECISION_F64    ? "float64"
           : precision == AX_PRECISION_BF16 ? "bf16"
                                            : "float32",
           IMAGES, CALLS, ROUNDS);
    for (int l = 0; l < SHAPES; l++) {
        const ax_window_geometry *g = &geometries[l];
        const int64_t filters = filter_counts[l];
        const int64_t places = g->out_height * g->out_width;
        const int64_t patch = g->channels * g->kernel_height * g->kernel_width;
        const int64_t in = IMAGES * g->height * g->width * g->channels;
        const int64_t out = IMAGES * places * filters, weights = filters * patch;
        /* 64-byte aligned, as the network's arena is (a vector load across
         * two cache lines costs the direct kernels 15 %) */
        char *x = aligned(in * real), *delta = aligned(out * real);
        char *columns = aligned(IMAGES * places * patch * real);
        char *ordered = aligned(weights * real), *dw = aligned(weights * real);
        char *first = aligned(weights * real);
        if (!x || !delta || !columns || !ordered || !dw || !first)
            return 1;
        fill(b, x, in, 88172645463325252u);
        fill(b, delta, out, 1234567u);
        if (ax_set_threads(1) != AX_STATUS_OK)
            return 1;
        b->ops->conv_backward_weights(b, g, filters, delta, x, NULL, first, IMAGES);
        const double gflop = 2.0 * (double)filters * (double)patch * (double)(IMAGES * places) / 1e9;
        char list[256];
        snprintf(list, sizeof list, "%s", thread_list);
        for (char *item = strtok(list, ","); item; item = strtok(NULL, ",")) {
            const int threads = atoi(item);
            if (threads < 1 || ax_set_threads(threads) != AX_STATUS_OK)
                continue;
            double layer_ms[ROUNDS], entry_ms[ROUNDS], ratio[ROUNDS];
            for (int round = 0; round < ROUNDS; round++) {
                layer_ms[round] = best_ms(b, 0, g, filters, delta, x, columns, ordered, dw);
                entry_ms[round] = best_ms(b, 1, g, filters, delta, x, columns, ordered, dw);
                ratio[round] = layer_ms[round] / entry_ms[round];
            }
            const bool same = memcmp(first, dw, (size_t)weights * real) == 0;
            const double lm = bench_median(layer_ms, ROUNDS), em = bench_median(entry_ms, ROUNDS);
            printf("conv%d, %2d threads: %s %7.3f ms (%6.1f GFLOP/s), entry %7.3f ms "
                   "(%6.1f GFLOP/s), ratio %.2f; entry's bits as on 1 thread: %s\n",
                   l + 1, threads, base_value ? "base" : "layer path", lm, gflop / lm * 1e3, em, gflop / em * 1e3,
                   bench_median(ratio, ROUNDS), same ? "yes" : "NO");
        }
        free(x), free(delta), free(columns), free(ordered), free(dw), free(first);
    }
    b->ops->destroy(b);
    return 0;
}
