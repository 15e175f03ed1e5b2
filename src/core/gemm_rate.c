/* gemm_rate.c: the GEMM rate at a network's own shapes with the backend in
 * use (ax_net_gemm_rate), the measured counterpart of perf/peak.c's machine
 * peak; beside the network because it times the network's products. */
#include <math.h>
#include <stdbool.h>

#include "base/clock.h"
#include "base/error.h"
#include "core/net.h"

/* Median-free but repeat-until-long-enough timing of one GEMM shape:
 * *rate in GFLOP/s, or the backend's failure. */
static ax_status time_gemm(ax_net *net, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                           void *a, void *b, void *c, double *rate)
{
    const ax_backend_ops *ops = net->backend->ops;
    int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n;
    ops->gemm(net->backend, trans_a, trans_b, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, n);
    AX_TRY(ax_backend_synchronize(net->backend));
    double best = INFINITY;
    for (int round = 0; round < 5; round++) {
        int repeats = 0;
        double start = ax_seconds_now(), elapsed;
        do {
            ops->gemm(net->backend, trans_a, trans_b, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, n);
            AX_TRY(ax_backend_synchronize(net->backend));
            repeats++;
            elapsed = ax_seconds_now() - start;
        } while (elapsed < 0.02);
        double per_call = elapsed / repeats;
        best = per_call < best ? per_call : best;
    }
    *rate = 2.0 * (double)m * (double)n * (double)k / best * 1e-9;
    return AX_STATUS_OK;
}

/* The shape of a layer's products at a batch: forward (m, n) = (m, k)
 * (n, k)^T. A dense layer: (batch, out, in); a convolution: (batch
 * positions, filters, kh kw channels), its im2col product; pooling has
 * none (false). */
static bool product_shape(const ax_layer *layer, int64_t batch, int64_t *m, int64_t *n, int64_t *k)
{
    if (layer->spec.kind == AX_LAYER_CONV) {
        *m = batch * layer->out_shape.height * layer->out_shape.width;
        *n = layer->spec.conv.filters;
        *k = layer->in_shape.channels * layer->spec.conv.kernel_height * layer->spec.conv.kernel_width;
        return true;
    }
    if (layer->spec.kind == AX_LAYER_MAX_POOL || layer->spec.kind == AX_LAYER_AVERAGE_POOL)
        return false;
    *m = batch, *n = layer->out, *k = layer->in;
    return true;
}

ax_status ax_net_gemm_rate(ax_net *net, int64_t batch, double *gflops)
{
    *gflops = 0.0;
    if (batch < 1)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "the batch for the GEMM rate must be positive");
    int64_t most_x = 1, most_y = 1, most_w = 1, m, n, k;
    for (int l = 0; l < net->layer_count; l++)
        if (product_shape(&net->layers[l], batch, &m, &n, &k)) {
            most_x = m * k > most_x ? m * k : most_x;
            most_y = m * n > most_y ? m * n : most_y;
            most_w = n * k > most_w ? n * k : most_w;
        }
    const size_t real = net->backend->real_size;
    ax_backend *backend = net->backend;
    void *x = NULL, *y = NULL, *w = NULL;
    const char *what = "the buffers measuring the GEMM rate";
    ax_status status = ax_backend_alloc(backend, (size_t)most_x * real, what, &x);
    if (status == AX_STATUS_OK)
        status = ax_backend_alloc(backend, (size_t)most_y * real, what, &y);
    if (status == AX_STATUS_OK)
        status = ax_backend_alloc(backend, (size_t)most_w * real, what, &w);
    /* The same three products as training, weighted by their FLOPs. */
    double flops = 0.0, seconds = 0.0;
    for (int l = 0; l < net->layer_count && status == AX_STATUS_OK; l++) {
        if (!product_shape(&net->layers[l], batch, &m, &n, &k))
            continue;
        double f = 2.0 * (double)m * (double)n * (double)k;
        double forward = 0.0, weight = 0.0, input = 0.0;
        status = time_gemm(net, false, true, m, n, k, x, w, y, &forward);
        if (status == AX_STATUS_OK)
            status = time_gemm(net, true, false, n, k, m, y, x, w, &weight);
        flops += 2.0 * f;
        seconds += f / (forward * 1e9) + f / (weight * 1e9);
        if (l > 0 && status == AX_STATUS_OK) {
            status = time_gemm(net, false, false, m, k, n, y, w, x, &input);
            flops += f;
            seconds += f / (input * 1e9);
        }
    }
    if (status == AX_STATUS_OK)
        *gflops = seconds > 0.0 ? flops / seconds * 1e-9 : 0.0;
    backend->ops->free(backend, x);
    backend->ops->free(backend, y);
    backend->ops->free(backend, w);
    return status;
}
