/* winograd_weight_gradient.c: a first measurement of the weight gradient
 * of LeNet's second layer (128 x 12x12x32 -> 64 filters 5x5, 8x8 outputs)
 * by Winograd's F(5x5, 4x4), against the CPU backend's present kernel
 * (axon's direct tiles), for issue 28's next step (docs/notes/conv.md).
 *
 * dW[k][c] (5x5) = sum over images and 4x4 tiles T of the delta of the
 * correlation of the 8x8 input patch under T with T's delta: F(5, 4) has
 * alpha = 5 + 4 - 1 = 8, so
 *   dW = A^T [ sum_T (G d_T G^T) . (B^T x_T B) ] A,
 * the sum over tiles inside: 64 products (filters x tiles) (tiles x
 * channels), 134 M multiply-adds' worth where the direct pass makes 839 M.
 * For the bits, tiles are summed in fixed slices (SLICE_IMAGES images) and
 * the slices' partial sums added in order, as conv_weight_gradient.c does.
 *
 * A prototype: the matrices (points 0, +-1, +-2, +-1/2, infinity) are
 * solved at startup in float64 and applied as run-time values (the
 * library's conv_winograd.c folds its constants; these transforms are
 * slower than they would be), and it prints each phase's time. Checked
 * against a float64 direct sum.
 *
 * build and run: dev/winograd_weight_gradient.sh (after building axon_static). */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axon.h"
#include "backend/backend.h"
#include "bench_median.h"
#include "perf/threads.h"

enum { ALPHA = 8, OUT = 5, TAP = 4, POS = 64, SLICE_IMAGES = 32, CHUNK = 8 };
enum { N = 128, H = 12, W = 12, C = 32, K = 64, OH = 8, OW = 8, TILES_PER_IMAGE = 4 };

static float AT[OUT][ALPHA], G[ALPHA][TAP], BT[ALPHA][ALPHA];

static bool solve(int n, double a[n][n], double b[n])
{
    for (int col = 0; col < n; col++) {
        int pivot = col;
        for (int r = col + 1; r < n; r++)
            if (fabs(a[r][col]) > fabs(a[pivot][col]))
                pivot = r;
        if (fabs(a[pivot][col]) < 1e-14)
            return false;
        for (int c = 0; c < n; c++) {
            const double t = a[col][c];
            a[col][c] = a[pivot][c], a[pivot][c] = t;
        }
        const double t = b[col];
        b[col] = b[pivot], b[pivot] = t;
        for (int r = 0; r < n; r++)
            if (r != col) {
                const double f = a[r][col] / a[col][col];
                for (int c = col; c < n; c++)
                    a[r][c] -= f * a[col][c];
                b[r] -= f * b[col];
            }
    }
    for (int r = 0; r < n; r++)
        b[r] /= a[r][r];
    return true;
}

/* F(5, 4): y_i = sum_a g_a d_(i+a) = sum_j A^T_ij (G g)_j (B^T d)_j */
static void make_matrices(void)
{
    const double p[ALPHA - 1] = {0, 1, -1, 2, -2, 0.5, -0.5};
    double at[OUT][ALPHA], g[ALPHA][TAP], bt[ALPHA][ALPHA], worst = 0;
    for (int i = 0; i < OUT; i++) {
        for (int j = 0; j < ALPHA - 1; j++)
            at[i][j] = pow(p[j], i);
        at[i][ALPHA - 1] = i == OUT - 1;
    }
    for (int j = 0; j < ALPHA - 1; j++) {
        double f = 1;
        for (int l = 0; l < ALPHA - 1; l++)
            if (l != j)
                f *= p[j] - p[l];
        for (int k = 0; k < TAP; k++)
            g[j][k] = pow(p[j], k) / f;
    }
    for (int k = 0; k < TAP; k++)
        g[ALPHA - 1][k] = k == TAP - 1;
    for (int t = 0; t < ALPHA; t++) {
        double n[ALPHA][ALPHA] = {{0}}, rhs[ALPHA] = {0};
        for (int i = 0; i < OUT; i++)
            for (int k = 0; k < TAP; k++) {
                double row[ALPHA];
                for (int j = 0; j < ALPHA; j++)
                    row[j] = at[i][j] * g[j][k];
                for (int a = 0; a < ALPHA; a++) {
                    rhs[a] += row[a] * (t == i + k);
                    for (int b = 0; b < ALPHA; b++)
                        n[a][b] += row[a] * row[b];
                }
            }
        if (!solve(ALPHA, n, rhs))
            exit(1);
        for (int j = 0; j < ALPHA; j++)
            bt[j][t] = rhs[j];
        for (int i = 0; i < OUT; i++)
            for (int k = 0; k < TAP; k++) {
                double s = 0;
                for (int j = 0; j < ALPHA; j++)
                    s += at[i][j] * g[j][k] * bt[j][t];
                worst = fmax(worst, fabs(s - (t == i + k)));
            }
    }
    if (worst > 1e-12) {
        fprintf(stderr, "no B^T for F(5, 4): %.3g\n", worst);
        exit(1);
    }
    for (int i = 0; i < OUT; i++)
        for (int j = 0; j < ALPHA; j++)
            AT[i][j] = (float)at[i][j];
    for (int j = 0; j < ALPHA; j++)
        for (int k = 0; k < TAP; k++)
            G[j][k] = (float)g[j][k];
    for (int a = 0; a < ALPHA; a++)
        for (int b = 0; b < ALPHA; b++)
            BT[a][b] = fabs(bt[a][b]) < 1e-9 ? 0.0f : (float)bt[a][b];
}

/* The solved matrices as constants (checked against them at startup), so
 * that the unrolled products below lose their zero terms. */
static const float AT_C[OUT][ALPHA] = {
    {1, 1, 1, 1, 1, 1, 1, 0},           {0, 1, -1, 2, -2, 0.5f, -0.5f, 0},
    {0, 1, 1, 4, 4, 0.25f, 0.25f, 0},   {0, 1, -1, 8, -8, 0.125f, -0.125f, 0},
    {0, 1, 1, 16, 16, 0.0625f, 0.0625f, 1},
};
static const float G_C[ALPHA][TAP] = {
    {-1, 0, 0, 0},
    {-2.f / 9, -2.f / 9, -2.f / 9, -2.f / 9},
    {-2.f / 9, 2.f / 9, -2.f / 9, 2.f / 9},
    {1.f / 90, 2.f / 90, 4.f / 90, 8.f / 90},
    {1.f / 90, -2.f / 90, 4.f / 90, -8.f / 90},
    {64.f / 90, 32.f / 90, 16.f / 90, 8.f / 90},
    {64.f / 90, -32.f / 90, 16.f / 90, -8.f / 90},
    {0, 0, 0, 1},
};
static const float BT_C[ALPHA][ALPHA] = {
    {-1, 0, 5.25f, 0, -5.25f, 0, 1, 0},      {0, 1, 1, -4.25f, -4.25f, 1, 1, 0},
    {0, -1, 1, 4.25f, -4.25f, -1, 1, 0},     {0, 0.5f, 0.25f, -2.5f, -1.25f, 2, 1, 0},
    {0, -0.5f, 0.25f, 2.5f, -1.25f, -2, 1, 0}, {0, 2, 4, -2.5f, -5, 0.5f, 1, 0},
    {0, -2, 4, 2.5f, -5, -0.5f, 1, 0},       {0, -1, 0, 5.25f, 0, -5.25f, 0, 1},
};

static void check_constants(void)
{
    double worst = 0;
    for (int i = 0; i < OUT; i++)
        for (int j = 0; j < ALPHA; j++)
            worst = fmax(worst, fabs(AT[i][j] - AT_C[i][j]));
    for (int j = 0; j < ALPHA; j++)
        for (int k = 0; k < TAP; k++)
            worst = fmax(worst, fabs(G[j][k] - G_C[j][k]));
    for (int a = 0; a < ALPHA; a++)
        for (int b = 0; b < ALPHA; b++)
            worst = fmax(worst, fabs(BT[a][b] - BT_C[a][b]));
    if (worst > 1e-6) {
        fprintf(stderr, "the constants are not the solved matrices (%.3g)\n", worst);
        exit(1);
    }
}

static inline __attribute__((always_inline)) void times(const float *m, int rows, int cols,
                                                        const __m512 *in, __m512 *out)
{
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++) {
        __m512 sum = _mm512_setzero_ps();
#pragma GCC unroll 8
        for (int c = 0; c < cols; c++)
            if (m[r * cols + c] != 0)
                sum = _mm512_fmadd_ps(_mm512_set1_ps(m[r * cols + c]), in[c], sum);
        out[r] = sum;
    }
}

/* V[pos][tile][C] of one image's 4 tiles (8x8 input patches, no padding
 * needed: 12x12 covers them) */
static void transform_inputs(const float *x, float *v, int first, int tiles)
{
    for (int t = 0; t < TILES_PER_IMAGE; t++) {
        const int y0 = t / 2 * 4, x0 = t % 2 * 4;
        for (int c = 0; c < C; c += 16) {
            __m512 cols[ALPHA][ALPHA];
            for (int q = 0; q < ALPHA; q++) {
                __m512 d[ALPHA];
                for (int r = 0; r < ALPHA; r++)
                    d[r] = _mm512_loadu_ps(x + ((y0 + r) * W + x0 + q) * C + c);
                times(&BT_C[0][0], ALPHA, ALPHA, d, cols[q]);
            }
            for (int a = 0; a < ALPHA; a++) {
                __m512 row[ALPHA], out[ALPHA];
                for (int q = 0; q < ALPHA; q++)
                    row[q] = cols[q][a];
                times(&BT_C[0][0], ALPHA, ALPHA, row, out);
                for (int b = 0; b < ALPHA; b++)
                    _mm512_storeu_ps(v + ((size_t)(a * ALPHA + b) * tiles + first + t) * C + c, out[b]);
            }
        }
    }
}

/* D[pos][tile][K] = G d_T G^T of one image's 4 delta tiles (4x4) */
static void transform_deltas(const float *dy, float *d, int first, int tiles)
{
    for (int t = 0; t < TILES_PER_IMAGE; t++) {
        const int y0 = t / 2 * 4, x0 = t % 2 * 4;
        for (int k = 0; k < K; k += 16) {
            __m512 cols[TAP][ALPHA];
            for (int q = 0; q < TAP; q++) {
                __m512 g[TAP];
                for (int r = 0; r < TAP; r++)
                    g[r] = _mm512_loadu_ps(dy + ((y0 + r) * OW + x0 + q) * K + k);
                times(&G_C[0][0], ALPHA, TAP, g, cols[q]);
            }
            for (int a = 0; a < ALPHA; a++) {
                __m512 row[TAP], out[ALPHA];
                for (int q = 0; q < TAP; q++)
                    row[q] = cols[q][a];
                times(&G_C[0][0], ALPHA, TAP, row, out);
                for (int b = 0; b < ALPHA; b++)
                    _mm512_storeu_ps(d + ((size_t)(a * ALPHA + b) * tiles + first + t) * K + k, out[b]);
            }
        }
    }
}

/* M[pos][K][C] += sum over the slice's tiles of D[tile][pos][k] V[tile][pos][c]:
 * 8 filters x 32 channels (16 sums) a step, the tiles the sum's order */
static void accumulate(const float *d, const float *v, int tiles, float *m)
{
    for (int pos = 0; pos < POS; pos++)
        for (int k0 = 0; k0 < K; k0 += 8) {
            __m512 s[8][2];
#pragma GCC unroll 8
            for (int r = 0; r < 8; r++) {
                s[r][0] = _mm512_loadu_ps(m + (pos * K + k0 + r) * C);
                s[r][1] = _mm512_loadu_ps(m + (pos * K + k0 + r) * C + 16);
            }
            for (int t = 0; t < tiles; t++) {
                const __m512 v0 = _mm512_loadu_ps(v + ((size_t)pos * tiles + t) * C);
                const __m512 v1 = _mm512_loadu_ps(v + ((size_t)pos * tiles + t) * C + 16);
                const float *dk = d + ((size_t)pos * tiles + t) * K + k0;
    #pragma GCC unroll 8
            for (int r = 0; r < 8; r++) {
                    const __m512 a = _mm512_set1_ps(dk[r]);
                    s[r][0] = _mm512_fmadd_ps(a, v0, s[r][0]);
                    s[r][1] = _mm512_fmadd_ps(a, v1, s[r][1]);
                }
            }
#pragma GCC unroll 8
            for (int r = 0; r < 8; r++) {
                _mm512_storeu_ps(m + (pos * K + k0 + r) * C, s[r][0]);
                _mm512_storeu_ps(m + (pos * K + k0 + r) * C + 16, s[r][1]);
            }
        }
}

/* dW (K, C, 5, 5) = A^T M A, 16 channels a vector */
static void transform_back(const float *m, float *dw)
{
    for (int k = 0; k < K; k++)
        for (int c = 0; c < C; c += 16) {
            __m512 cols[ALPHA][OUT];
            for (int b = 0; b < ALPHA; b++) {
                __m512 col[ALPHA];
                for (int a = 0; a < ALPHA; a++)
                    col[a] = _mm512_loadu_ps(m + ((a * ALPHA + b) * K + k) * C + c);
                times(&AT_C[0][0], OUT, ALPHA, col, cols[b]);
            }
            for (int i = 0; i < OUT; i++) {
                __m512 row[ALPHA], out[OUT];
                for (int b = 0; b < ALPHA; b++)
                    row[b] = cols[b][i];
                times(&AT_C[0][0], OUT, ALPHA, row, out);
                float lanes[OUT][16];
                for (int j = 0; j < OUT; j++)
                    _mm512_storeu_ps(lanes[j], out[j]);
                for (int l = 0; l < 16; l++)
                    for (int j = 0; j < OUT; j++)
                        dw[((k * C + c + l) * OUT + i) * OUT + j] = lanes[j][l];
            }
        }
}

static double phase[4];

static void winograd_weight_gradient(const float *x, const float *dy, float *partials, float *dw,
                                     bool timed)
{
    const int slices = N / SLICE_IMAGES;
    const size_t m_floats = (size_t)POS * K * C;
#pragma omp parallel
    {
        float *v = malloc(sizeof(float) * TILES_PER_IMAGE * CHUNK * POS * C);
        float *d = malloc(sizeof(float) * TILES_PER_IMAGE * CHUNK * POS * K);
#pragma omp for schedule(static)
        for (int s = 0; s < slices; s++) {
            float *m = partials + (size_t)s * m_floats;
            memset(m, 0, m_floats * sizeof *m);
            /* CHUNK images at a time, their V and D within L2 beside M: the
             * tiles still added to M in the slice's order */
            for (int first = 0; first < SLICE_IMAGES; first += CHUNK) {
                const double t0 = timed ? ax_seconds_now() : 0;
                for (int i = 0; i < CHUNK; i++) {
                    const int n = s * SLICE_IMAGES + first + i;
                    transform_inputs(x + (size_t)n * H * W * C, v, i * TILES_PER_IMAGE, TILES_PER_IMAGE * CHUNK);
                    transform_deltas(dy + (size_t)n * OH * OW * K, d, i * TILES_PER_IMAGE, TILES_PER_IMAGE * CHUNK);
                }
                const double t1 = timed ? ax_seconds_now() : 0;
                accumulate(d, v, TILES_PER_IMAGE * CHUNK, m);
                if (timed) {
                    const double t2 = ax_seconds_now();
#pragma omp atomic
                    phase[0] += t1 - t0;
#pragma omp atomic
                    phase[1] += t2 - t1;
                }
            }
        }
        free(v), free(d);
    }
    /* the slices' partial sums in order (the bits never follow the threads) */
    const double t2 = ax_seconds_now();
    for (int s = 1; s < slices; s++) {
        const float *from = partials + (size_t)s * m_floats;
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < m_floats; i++)
            partials[i] += from[i];
    }
    const double t3 = ax_seconds_now();
    transform_back(partials, dw);
    if (timed) {
        phase[2] += t3 - t2;
        phase[3] += ax_seconds_now() - t3;
    }
}

static void fill(float *x, int64_t count, uint64_t state, float scale)
{
    for (int64_t i = 0; i < count; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = scale * ((float)(state >> 40) / (float)(1 << 24) - 0.5f);
    }
}

int main(void)
{
    make_matrices();
    check_constants();
    const int rounds = getenv("ROUNDS") ? atoi(getenv("ROUNDS")) : 7;
    const int calls = getenv("CALLS") ? atoi(getenv("CALLS")) : 10;
    if (rounds < 1 || rounds > 64 || calls < 1)
        return 2;
    float *x = malloc(sizeof(float) * N * H * W * C), *dy = malloc(sizeof(float) * N * OH * OW * K);
    float *dw = malloc(sizeof(float) * K * C * 25), *dw_axon = malloc(sizeof(float) * K * C * 25);
    float *partials = malloc(sizeof(float) * (N / SLICE_IMAGES) * POS * K * C);
    double *want = calloc((size_t)K * C * 25, sizeof *want), *magnitude = calloc((size_t)K * C * 25, 8);
    fill(x, (int64_t)N * H * W * C, 1, 2.0f);
    fill(dy, (int64_t)N * OH * OW * K, 2, 0.02f);
    for (int n = 0; n < N; n++)
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++)
                for (int k = 0; k < K; k++)
                    for (int c = 0; c < C; c++)
                        for (int i = 0; i < 5; i++)
                            for (int j = 0; j < 5; j++) {
                                const double p = (double)dy[((n * OH + oy) * OW + ox) * K + k] *
                                                 x[((n * H + oy + i) * W + ox + j) * C + c];
                                want[((k * C + c) * 5 + i) * 5 + j] += p;
                                magnitude[((k * C + c) * 5 + i) * 5 + j] += fabs(p);
                            }
    ax_backend *backend = ax_backend_cpu_create(AX_PRECISION_F32);
    const ax_window_geometry g = {H, W, C, 5, 5, 1, 0, OH, OW};
    const double flops = 2.0 * N * OH * OW * K * C * 25;
    for (int threads = 1; threads <= 2; threads++) {
        ax_threads_run_on(threads);
        double t_w[64], t_a[64], ratio[64];
        for (int r = 0; r < rounds; r++) {
            for (int turn = 0; turn < 2; turn++) {
                const int who = (turn + r) % 2;
                winograd_weight_gradient(x, dy, partials, dw, false);
                backend->ops->conv_backward_weights(backend, &g, K, dy, x, NULL, dw_axon, N);
                const double start = ax_seconds_now();
                for (int c = 0; c < calls; c++)
                    if (who == 0)
                        winograd_weight_gradient(x, dy, partials, dw, false);
                    else
                        backend->ops->conv_backward_weights(backend, &g, K, dy, x, NULL, dw_axon, N);
                (who ? t_a : t_w)[r] = (ax_seconds_now() - start) / calls;
            }
            ratio[r] = t_a[r] / t_w[r];
        }
        memset(phase, 0, sizeof phase);
        for (int c = 0; c < calls; c++)
            winograd_weight_gradient(x, dy, partials, dw, true);
        double worst[2] = {0, 0}, largest = 0;
        for (int i = 0; i < K * C * 25; i++)
            largest = fmax(largest, magnitude[i]);
        for (int i = 0; i < K * C * 25; i++) {
            worst[0] = fmax(worst[0], fabs(dw[i] - want[i]) / (0x1p-24 * largest));
            worst[1] = fmax(worst[1], fabs(dw_axon[i] - want[i]) / (0x1p-24 * largest));
        }
        const double mw = bench_median(t_w, rounds), ma = bench_median(t_a, rounds);
        printf("conv2 weight gradient, %d thr: axon %.3f ms (%.0f GFLOP/s), Winograd %.3f ms (%.0f), "
               "Winograd faster by %.2fx; error in u x the largest sum |x d|: axon %.1f, Winograd %.1f\n"
               "  Winograd's phases a call (thread time, summed over threads): transforms %.3f ms, "
               "products %.3f, slices added %.3f, back %.3f\n",
               threads, 1e3 * ma, flops / ma * 1e-9, 1e3 * mw, flops / mw * 1e-9,
               bench_median(ratio, rounds), worst[1], worst[0], 1e3 * phase[0] / calls,
               1e3 * phase[1] / calls, 1e3 * phase[2] / calls, 1e3 * phase[3] / calls);
    }
    backend->ops->destroy(backend);
    return 0;
}
