/* thread_invariance.c: whether this process's GEMMs give the same bits on
 * one thread as on all of them (thread_governor.h), checked by computing
 * a few awkward shapes both ways through the CPU backend's own gemm (and
 * its whole convolutions, where it has them: oneDNN's, and its weight
 * gradient over slices of the batch).
 *
 * Whether they do depends on the BLAS's kernels, not only on axon: on
 * this project's machines OpenBLAS 0.3.21's SkylakeX/Cooperlake float32
 * kernels did at every shape tried, its Haswell kernels (which it uses on
 * AMD Zen before Zen 4, among others) did not (thousands of elements of a
 * 100 x 64 product differ in the last bit), and its SkylakeX float64 kernels
 * did not for products 10 columns wide and 2048 rows or more. So this is
 * measured, once per precision and process, rather than assumed. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/thread_governor.h"

/* (trans_a, trans_b, m, n, k): an output layer's forward product and
 * weight gradient, a hidden layer's, edges that are not multiples of any
 * kernel's tile, a k split into GEMM_K_BLOCK blocks, and the tall narrow
 * product where the float64 kernels differ. */
static const struct { bool trans_a, trans_b; int64_t m, n, k; } shapes[] = {
    {false, true, 100, 10, 64},  {true, false, 64, 10, 100}, {false, true, 100, 64, 44},
    {true, false, 300, 64, 100}, {false, false, 100, 300, 64}, {false, true, 257, 129, 300},
    {false, true, 4096, 10, 16},
};

/* Fills count reals with a fixed pattern in (-0.5, 0.5). */
static void fill(ax_backend *backend, void *memory, int64_t count)
{
    uint64_t state = 88172645463325252u;
    for (int64_t i = 0; i < count; i++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        const double value = (double)(state >> 11) / 9007199254740992.0 - 0.5;
        if (backend->real_size == sizeof(double))
            ((double *)memory)[i] = value;
        else
            ((float *)memory)[i] = (float)value;
    }
}

static bool shape_invariant(ax_backend *backend, int threads, int s)
{
    const bool ta = shapes[s].trans_a, tb = shapes[s].trans_b;
    const int64_t m = shapes[s].m, n = shapes[s].n, k = shapes[s].k;
    const size_t real = backend->real_size;
    char *a = malloc((size_t)(m * k) * real), *b = malloc((size_t)(k * n) * real);
    char *c1 = calloc((size_t)(m * n), real), *c2 = calloc((size_t)(m * n), real);
    bool same = false;
    if (a && b && c1 && c2) {
        fill(backend, a, m * k);
        fill(backend, b, k * n);
        const int64_t lda = ta ? m : k, ldb = tb ? k : n;
        ax_threads_run_on(1);
        backend->ops->gemm(backend, ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c1, n);
        ax_threads_run_on(threads);
        backend->ops->gemm(backend, ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c2, n);
        same = memcmp(c1, c2, (size_t)(m * n) * real) == 0;
    }
    ax_threads_run_on(threads);
    free(a), free(b), free(c1), free(c2);
    return same;
}

/* The backend's whole convolutions (oneDNN's on the CPU in float32, where
 * built; axon's direct and AMX kernels), at LeNet's two shapes over a few
 * images, both entries: their kernels split the work by output, so they
 * should agree; measured here as the GEMMs are. True when the backend has
 * none; an entry that declines a shape is not compared there. */
/* LeNet's two convolutions, which both checks below run. */
static const ax_window_geometry lenet_geometries[] = {{28, 28, 1, 5, 5, 1, 0, 24, 24},
                                                      {12, 12, 32, 5, 5, 1, 0, 8, 8}};
static const int64_t lenet_filters[] = {32, 64};

/* Values of a convolution's images, outputs and weights over images. */
typedef struct conv_sizes {
    int64_t in, out, weights;
} conv_sizes;

static conv_sizes sizes_of(const ax_window_geometry *g, int64_t filters, int64_t images)
{
    return (conv_sizes){images * g->height * g->width * g->channels,
                        images * g->out_height * g->out_width * filters,
                        filters * g->channels * g->kernel_height * g->kernel_width};
}

static bool conv_invariant(ax_backend *backend, int threads)
{
    if (!backend->ops->conv_forward || !backend->ops->conv_backward_input)
        return true;
    static const int64_t images = 6;
    const int64_t *filters = lenet_filters;
    bool same = true;
    for (int g = 0; same && g < 2; g++) {
        const ax_window_geometry *geometry = &lenet_geometries[g];
        const conv_sizes n = sizes_of(geometry, filters[g], images);
        const int64_t in = n.in, out = n.out, weights = n.weights;
        const size_t real = backend->real_size;
        char *x = malloc((size_t)in * real), *w = malloc((size_t)weights * real);
        char *z[2] = {calloc((size_t)out, real), calloc((size_t)out, real)};
        char *back[2] = {calloc((size_t)in, real), calloc((size_t)in, real)};
        same = x && w && z[0] && z[1] && back[0] && back[1];
        if (same) {
            fill(backend, x, in);
            fill(backend, w, weights);
            /* an entry may decline a layer (the layer's own path then
             * runs): nothing of it to compare, but it must decline alike */
            bool forward[2], input[2];
            for (int run = 0; run < 2; run++) {
                ax_threads_run_on(run == 0 ? 1 : threads);
                forward[run] = backend->ops->conv_forward(backend, geometry, filters[g], x, w,
                                                          z[run], images);
                if (!forward[run])
                    fill(backend, z[run], out); /* a delta for the input gradient */
                input[run] = backend->ops->conv_backward_input(backend, geometry, filters[g],
                                                               z[run], w, back[run], images);
            }
            same = forward[0] == forward[1] && input[0] == input[1] &&
                   (!forward[0] || memcmp(z[0], z[1], (size_t)out * real) == 0) &&
                   (!input[0] || memcmp(back[0], back[1], (size_t)in * real) == 0);
        }
        ax_threads_run_on(threads);
        free(x), free(w), free(z[0]), free(z[1]), free(back[0]), free(back[1]);
    }
    return same;
}

/* The backend's whole weight gradient (the CPU's slices of the batch,
 * conv_weight_gradient.c) at the same shapes, over fewer images than its
 * slices and more: its sums follow the batch, not the threads, so it
 * should agree. True when the backend has none. */
static bool weight_gradient_invariant(ax_backend *backend, int threads)
{
    if (!backend->ops->conv_backward_weights)
        return true;
    static const int64_t images = 37;
    const int64_t *filters = lenet_filters;
    bool same = true;
    for (int g = 0; same && g < 2; g++) {
        const ax_window_geometry *geometry = &lenet_geometries[g];
        const conv_sizes n = sizes_of(geometry, filters[g], images);
        const int64_t in = n.in, out = n.out, weights = n.weights;
        const size_t real = backend->real_size;
        char *x = malloc((size_t)in * real), *delta = malloc((size_t)out * real);
        char *dw[2] = {calloc((size_t)weights, real), calloc((size_t)weights, real)};
        same = x && delta && dw[0] && dw[1];
        if (same) {
            fill(backend, x, in);
            fill(backend, delta, out);
            for (int run = 0; run < 2 && same; run++) {
                ax_threads_run_on(run == 0 ? 1 : threads);
                same = backend->ops->conv_backward_weights(backend, geometry, filters[g], delta,
                                                           x, NULL, dw[run], images);
            }
            same = same && memcmp(dw[0], dw[1], (size_t)weights * real) == 0;
        }
        ax_threads_run_on(threads);
        free(x), free(delta), free(dw[0]), free(dw[1]);
    }
    return same;
}

static bool check(ax_precision precision, int threads)
{
    ax_backend *backend = ax_backend_cpu_create(precision);
    if (!backend)
        return false;
    bool same = true;
    for (int s = 0; same && s < (int)(sizeof shapes / sizeof shapes[0]); s++)
        same = shape_invariant(backend, threads, s);
    same = same && conv_invariant(backend, threads) && weight_gradient_invariant(backend, threads);
    backend->ops->destroy(backend);
    return same;
}

bool ax_gemm_thread_invariant(ax_precision precision, int threads)
{
    /* Answers per precision for the largest thread count asked so far. */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static int checked_threads[3];
    static bool answer[3];
    if (threads <= 1 || (int)precision < 0 || (int)precision > 2)
        return threads <= 1;
    pthread_mutex_lock(&lock);
    if (checked_threads[precision] != threads) {
        answer[precision] = check(precision, threads);
        checked_threads[precision] = threads;
    }
    const bool same = answer[precision];
    pthread_mutex_unlock(&lock);
    return same;
}
