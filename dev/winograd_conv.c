/* winograd_conv.c: Winograd's F(4x4, 5x5) (src/backend/cpu/conv_winograd.c)
 * against oneDNN's direct kernels at LeNet's second convolution
 * (128 x 12x12x32 -> 64 filters 5x5): the forward pass and the input
 * gradient, the time of each (median of ROUNDS alternating rounds of CALLS
 * calls, 1 and 2 threads), their ratio (median of the per-round ratios),
 * and each one's largest error against a float64 direct convolution,
 * relative to the largest |result|. The GFLOP/s are a direct convolution's
 * FLOPs (axon's profile counts) over the time: Winograd makes fewer.
 *
 * build and run: dev/winograd_conv.sh (after building axon_static). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "axon.h"
#include "backend/backend.h"
#include "backend/cpu/conv_winograd.h"
#include "backend/cpu/onednn_conv.h"
#include "bench_median.h"
#include "perf/threads.h"

enum { TAPS = 5 };

/* float64 forward (input_gradient false) or input gradient */
static void reference(const ax_window_geometry *g, int64_t filters, int64_t images,
                      const float *in, const float *w, bool input_gradient, double *out)
{
    const int64_t C = g->channels, H = g->height, W = g->width, OH = g->out_height;
    const int64_t OW = g->out_width, p = g->padding;
    const int64_t count = input_gradient ? images * H * W * C : images * OH * OW * filters;
    for (int64_t i = 0; i < count; i++)
        out[i] = 0;
    for (int64_t n = 0; n < images; n++)
        for (int64_t oy = 0; oy < OH; oy++)
            for (int64_t ox = 0; ox < OW; ox++)
                for (int64_t k = 0; k < filters; k++)
                    for (int i = 0; i < TAPS; i++)
                        for (int j = 0; j < TAPS; j++) {
                            const int64_t y = oy + i - p, x = ox + j - p;
                            if (y < 0 || y >= H || x < 0 || x >= W)
                                continue;
                            for (int64_t c = 0; c < C; c++) {
                                const double weight = w[((k * C + c) * TAPS + i) * TAPS + j];
                                if (input_gradient)
                                    out[((n * H + y) * W + x) * C + c] +=
                                        weight * in[((n * OH + oy) * OW + ox) * filters + k];
                                else
                                    out[((n * OH + oy) * OW + ox) * filters + k] +=
                                        weight * in[((n * H + y) * W + x) * C + c];
                            }
                        }
}

static double error_of(int64_t count, const float *y, const double *want)
{
    double worst = 0, largest = 0;
    for (int64_t i = 0; i < count; i++) {
        worst = fmax(worst, fabs(y[i] - want[i]));
        largest = fmax(largest, fabs(want[i]));
    }
    return worst / largest;
}

static void fill(float *x, int64_t count, uint64_t state, float scale)
{
    for (int64_t i = 0; i < count; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = scale * ((float)(state >> 40) / (float)(1 << 24) - 0.5f);
    }
}

static bool pass(int who, bool input_gradient, ax_onednn_convs **convs, const ax_window_geometry *g,
                 int64_t filters, const float *in, const float *w, float *out, int64_t images)
{
    if (who == 0)
        return input_gradient ? ax_conv_winograd_backward_input(g, filters, in, w, out, images)
                              : ax_conv_winograd_forward(g, filters, in, w, out, images);
    return input_gradient ? ax_onednn_conv_backward_input(convs, g, filters, in, w, out, images)
                          : ax_onednn_conv_forward(convs, g, filters, in, w, out, images);
}

int main(void)
{
    const int rounds = getenv("ROUNDS") ? atoi(getenv("ROUNDS")) : 7;
    const int calls = getenv("CALLS") ? atoi(getenv("CALLS")) : 10;
    if (rounds < 1 || rounds > 64 || calls < 1)
        return 2;
    const int64_t images = 128, filters = 64;
    const ax_window_geometry g = {12, 12, 32, TAPS, TAPS, 1, 0, 8, 8};
    const int64_t nx = images * 12 * 12 * 32, ny = images * 8 * 8 * filters;
    const int64_t nw = filters * 32 * TAPS * TAPS;
    float *x = malloc(nx * 4), *delta = malloc(ny * 4), *w = malloc(nw * 4);
    float *out[2] = {malloc(nx * 4), malloc(nx * 4)};
    double *want = malloc(nx * 8);
    fill(x, nx, 1, 2.0f);
    fill(delta, ny, 2, 0.02f);
    fill(w, nw, 3, 0.2f);
    const double flops = 2.0 * images * 8 * 8 * filters * 32 * TAPS * TAPS;
    ax_onednn_convs *convs = NULL;
    printf("LeNet's conv2, batch %lld; median of %d rounds of %d calls\n", (long long)images,
           rounds, calls);
    for (int input_gradient = 0; input_gradient < 2; input_gradient++) {
        const float *in = input_gradient ? delta : x;
        const int64_t count = input_gradient ? nx : ny;
        reference(&g, filters, images, in, w, input_gradient, want);
        for (int threads = 1; threads <= 2; threads++) {
            ax_threads_run_on(threads);
            double seconds[2][64], ratio[64];
            for (int r = 0; r < rounds; r++) {
                for (int turn = 0; turn < 2; turn++) {
                    const int who = (turn + r) % 2;
                    if (!pass(who, input_gradient, &convs, &g, filters, in, w, out[who], images)) {
                        fprintf(stderr, "%s declined\n", who ? "oneDNN" : "Winograd");
                        return 1;
                    }
                    const double start = ax_seconds_now();
                    for (int c = 0; c < calls; c++)
                        pass(who, input_gradient, &convs, &g, filters, in, w, out[who], images);
                    seconds[who][r] = (ax_seconds_now() - start) / calls;
                }
                ratio[r] = seconds[1][r] / seconds[0][r];
            }
            const double winograd = bench_median(seconds[0], rounds);
            const double onednn = bench_median(seconds[1], rounds);
            printf("%-15s %d thr: oneDNN %.3f ms (%.0f GFLOP/s), Winograd %.3f ms (%.0f), "
                   "Winograd faster by %.2fx; error against float64: oneDNN %.1e, Winograd %.1e\n",
                   input_gradient ? "input gradient" : "forward", threads, 1e3 * onednn,
                   flops / onednn * 1e-9, 1e3 * winograd, flops / winograd * 1e-9,
                   bench_median(ratio, rounds), error_of(count, out[1], want),
                   error_of(count, out[0], want));
        }
    }
    ax_onednn_convs_free(convs);
    return 0;
}
