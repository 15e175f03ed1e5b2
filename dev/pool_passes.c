/* pool_passes.c: the memory-bound passes of LeNet's epoch outside the
 * convolution GEMMs, called through the CPU backend's table at LeNet's
 * shapes (batch 128, NHWC):
 *   pool_forward / pool_backward (max, window 2, stride 2) of layer 2,
 *     128x24x24x32 -> 12x12, and of layer 4, 128x8x8x64 -> 4x4;
 *   activation_backward (relu derivative + bias gradient) and
 *     bias_activation (bias + relu) of conv layer 1 (73,728 rows x 32) and
 *     conv layer 3 (8,192 rows x 64).
 * One run is one round: for each thread count (argument 1, e.g. 1,2,3) and
 * each pass, the best of CALLS calls, printed as a line
 *   pass <name> threads <t> ms <best> gbs <GB/s> bits <same|DIFFERENT> hash <h>
 * where GB/s counts the ideal traffic (each input read once, each output
 * written once), bits says whether the output equals the one of the first
 * thread count (it must), and hash is an FNV-1a hash of the output (two
 * builds that keep the same bits print the same hashes). dev/pool_passes.sh alternates rounds of this
 * program built against two libraries and takes the medians.
 * In-place passes get their input back (untimed) before each call. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"

enum { CALLS = 30, IMAGES = 128 };

static const ax_window_geometry pools[2] = {{24, 24, 32, 2, 2, 2, 0, 12, 12},
                                            {8, 8, 64, 2, 2, 2, 0, 4, 4}};
static const int64_t conv_rows[2] = {IMAGES * 24 * 24, IMAGES * 8 * 8};
static const int64_t conv_cols[2] = {32, 64};

/* Values in [-0.5, 0.5), with ties in pooling windows now and then (a
 * coarse grid), as relu outputs give (many exact zeros). */
static void fill(ax_backend *b, void *memory, int64_t count, uint64_t state, bool coarse)
{
    for (int64_t i = 0; i < count; i++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        double value = (double)(state >> 11) / 9007199254740992.0 - 0.5;
        if (coarse)
            value = value < 0 ? 0.0 : (double)(int)(value * 64) / 64;
        if (b->real_size == sizeof(double))
            ((double *)memory)[i] = value;
        else
            ((float *)memory)[i] = (float)value;
    }
}

typedef struct pass {
    char name[48];
    int kind; /* 0 pool forward, 1 pool backward, 2 activation backward, 3 bias activation */
    int layer;
    double bytes;
    void *in, *in2, *out, *saved, *first, *bias;
    size_t out_bytes, saved_bytes;
} pass;

static void call(ax_backend *b, const pass *p)
{
    const int l = p->layer;
    switch (p->kind) {
    case 0:
        b->ops->pool_forward(b, true, &pools[l], p->in, p->out, IMAGES);
        break;
    case 1:
        b->ops->pool_backward(b, true, &pools[l], p->in, p->in2, p->out, IMAGES);
        break;
    case 2:
        b->ops->activation_backward(b, AX_ACT_RELU, p->out, p->in, 1.0, p->bias, conv_rows[l],
                                    conv_cols[l]);
        break;
    case 3:
        b->ops->bias_activation(b, AX_ACT_RELU, p->out, p->bias, conv_rows[l], conv_cols[l]);
        break;
    }
}

static double best_ms(ax_backend *b, const pass *p)
{
    double best = 1e30;
    for (int c = 0; c < CALLS; c++) {
        if (p->saved)
            memcpy(p->out, p->saved, p->saved_bytes);
        const double start = omp_get_wtime();
        call(b, p);
        const double ms = (omp_get_wtime() - start) * 1e3;
        best = ms < best ? ms : best;
    }
    return best;
}

/* What a pass's result is: its output, and the bias gradient for the
 * activation backward pass. */
static size_t result_bytes(const pass *p, size_t real) {
    return p->out_bytes + (p->kind == 2 ? (size_t)conv_cols[p->layer] * real : 0);
}

static void copy_result(const pass *p, size_t real, char *to)
{
    memcpy(to, p->out, p->out_bytes);
    if (p->kind == 2)
        memcpy(to + p->out_bytes, p->bias, (size_t)conv_cols[p->layer] * real);
}

static uint64_t fnv1a(const char *bytes, size_t count)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < count; i++)
        h = (h ^ (uint8_t)bytes[i]) * 1099511628211u;
    return h;
}

static void *grab(size_t bytes)
{
    void *memory = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!memory) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return memory;
}

int main(int argc, char **argv)
{
    const char *thread_list = argc > 1 ? argv[1] : "1,2";
    const ax_precision precision =
        argc > 2 && strcmp(argv[2], "f64") == 0 ? AX_PRECISION_F64 : AX_PRECISION_F32;
    ax_backend *b = ax_backend_cpu_create(precision);
    if (!b || !b->ops->pool_forward || !b->ops->pool_backward) {
        fprintf(stderr, "no CPU backend with pooling\n");
        return 1;
    }
    const size_t real = b->real_size;
    pass passes[8];
    int count = 0;
    for (int l = 0; l < 2; l++) {
        const ax_window_geometry *g = &pools[l];
        const int64_t in = IMAGES * g->height * g->width * g->channels;
        const int64_t out = IMAGES * g->out_height * g->out_width * g->channels;
        void *x = grab((size_t)in * real), *y = grab((size_t)out * real);
        void *dy = grab((size_t)out * real), *dx = grab((size_t)in * real);
        fill(b, x, in, 88172645463325252u + (uint64_t)l, true);
        fill(b, dy, out, 1234567u + (uint64_t)l, false);
        pass *f = &passes[count++], *bw = &passes[count++];
        *f = (pass){.kind = 0, .layer = l, .in = x, .out = y, .out_bytes = (size_t)out * real,
                    .bytes = (double)(in + out) * (double)real};
        snprintf(f->name, sizeof f->name, "pool_forward_layer%d", 2 * l + 2);
        *bw = (pass){.kind = 1, .layer = l, .in = x, .in2 = dy, .out = dx,
                     .out_bytes = (size_t)in * real, .bytes = (double)(2 * in + out) * (double)real};
        snprintf(bw->name, sizeof bw->name, "pool_backward_layer%d", 2 * l + 2);
    }
    for (int l = 0; l < 2; l++) {
        const int64_t n = conv_rows[l] * conv_cols[l];
        void *a = grab((size_t)n * real), *delta = grab((size_t)n * real);
        void *delta_saved = grab((size_t)n * real), *z = grab((size_t)n * real);
        void *z_saved = grab((size_t)n * real);
        void *bias = grab((size_t)conv_cols[l] * real), *bias_gradient = grab((size_t)conv_cols[l] * real);
        fill(b, a, n, 99u + (uint64_t)l, true);
        fill(b, delta_saved, n, 77u + (uint64_t)l, false);
        fill(b, z_saved, n, 55u + (uint64_t)l, false);
        fill(b, bias, conv_cols[l], 33u + (uint64_t)l, false);
        pass *d = &passes[count++], *ba = &passes[count++];
        *d = (pass){.kind = 2, .layer = l, .in = a, .out = delta, .saved = delta_saved,
                    .bias = bias_gradient, .out_bytes = (size_t)n * real,
                    .saved_bytes = (size_t)n * real, .bytes = 3.0 * (double)n * (double)real};
        snprintf(d->name, sizeof d->name, "derivative_bias_gradient_layer%d", 2 * l + 1);
        *ba = (pass){.kind = 3, .layer = l, .out = z, .saved = z_saved, .bias = bias,
                     .out_bytes = (size_t)n * real, .saved_bytes = (size_t)n * real,
                     .bytes = 2.0 * (double)n * (double)real};
        snprintf(ba->name, sizeof ba->name, "bias_activation_layer%d", 2 * l + 1);
    }
    char *first[8];
    char list[256];
    snprintf(list, sizeof list, "%s", thread_list);
    bool have_first = false;
    for (char *item = strtok(list, ","); item; item = strtok(NULL, ",")) {
        const int threads = atoi(item);
        if (threads < 1 || ax_set_threads(threads) != AX_STATUS_OK)
            continue;
        for (int i = 0; i < count; i++) {
            pass *p = &passes[i];
            const double ms = best_ms(b, p);
            const size_t bytes = result_bytes(p, real);
            char *now = grab(bytes);
            copy_result(p, real, now);
            if (!have_first)
                first[i] = now;
            const bool same = memcmp(now, first[i], bytes) == 0;
            printf("pass %s threads %d ms %.4f gbs %.1f bits %s hash %016llx\n", p->name, threads,
                   ms, p->bytes / ms / 1e6, same ? "same" : "DIFFERENT",
                   (unsigned long long)fnv1a(now, bytes));
            if (now != first[i])
                free(now);
        }
        have_first = true;
    }
    b->ops->destroy(b);
    return 0;
}
