/* propagate_along.c: the network's cost along a search direction, for the
 * line searches of nonlinear CG and L-BFGS on the full batch. A plain
 * evaluation reads the inputs X twice (X W^T forward, X^T delta for the
 * first layer's weight gradient); on a wide input such as benchmark B3's
 * 2700 x 1024 galaxy images those two passes are nearly all the work. Along
 * a direction d the first layer's pre-activations are affine in the step:
 * X (W + a D)^T = X W^T + a X D^T. With both (rows, width) products kept, a
 * trial step's loss and slope cost no pass over X; only the gradient at the
 * point a search accepts does, plus X D^T once per new direction. X W^T at
 * the accepted point follows as X W^T + a X D^T, recomputed from X every
 * BASE_REFRESH searches so that rounding cannot pile up. */
#include <math.h>
#include <stdlib.h>

#include "base/error.h"
#include "core/net.h"

#define OPS (net->backend->ops)

/* Searches between fresh computations of X W^T. Each update adds one
 * rounding of the size of the GEMM's own; 16 keeps the drift below it. */
#define BASE_REFRESH AX_LINE_CACHE_REFRESH

struct ax_line_cache {
    ax_backend *backend;
    int64_t rows, width; /* batch rows; the first layer's width */
    void *base;          /* (rows, width) X W^T at the search's start */
    void *along;         /* (rows, width) X D^T */
    const void *direction;
    bool base_valid;
    int searches; /* since base was computed from X */
    /* The point the workspace holds: step, loss, slope, gradient complete. */
    double alpha, loss, slope;
    bool evaluated, gradient_done;
    double flops; /* done since ax_line_cache_take_flops, by seed 001's count */
};

ax_status ax_line_cache_create(ax_net *net, int64_t rows, ax_line_cache **out)
{
    *out = NULL;
    if (rows < 1 || rows > net->capacity)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "a line-search cache for %lld rows needs a workspace that large (it has %lld)",
                       (long long)rows, (long long)net->capacity);
    ax_line_cache *cache = calloc(1, sizeof *cache);
    if (!cache)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for the line-search cache");
    cache->backend = net->backend;
    cache->rows = rows;
    cache->width = net->layers[0].out;
    size_t bytes = (size_t)rows * (size_t)cache->width * net->backend->real_size;
    cache->base = OPS->alloc(net->backend, bytes);
    cache->along = OPS->alloc(net->backend, bytes);
    if (!cache->base || !cache->along) {
        ax_line_cache_free(cache);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY,
                       "out of memory for the line-search cache (2 x %lld x %lld values)",
                       (long long)rows, (long long)cache->width);
    }
    *out = cache;
    return AX_STATUS_OK;
}

void ax_line_cache_free(ax_line_cache *cache)
{
    if (!cache)
        return;
    cache->backend->ops->free(cache->backend, cache->base);
    cache->backend->ops->free(cache->backend, cache->along);
    free(cache);
}

void ax_line_cache_invalidate(ax_line_cache *cache)
{
    cache->base_valid = false;
    cache->evaluated = false;
}

/* out (rows, width) = X M^T for the first layer's block M (width, in) of an arena. */
static void first_layer_product(ax_net *net, ax_line_cache *cache, const void *arena, void *out)
{
    const ax_layer *layer = &net->layers[0];
    const double nb = (double)cache->rows, nl = (double)layer->out, nprev = (double)layer->in;
    cache->flops += nb * nl * (2.0 * nprev - 1.0);
    AX_PROFILED(net, AX_PROFILE_FORWARD_GEMM, 0, nb * nl * (2.0 * nprev - 1.0),
                OPS->gemm(net->backend, false, true, cache->rows, layer->out, layer->in, 1.0,
                          net->current_input, layer->in, ax_layer_weights(net, (void *)arena, 0),
                          layer->in, 0.0, out, layer->out));
}

void ax_net_line_begin(ax_net *net, ax_line_cache *cache, const void *direction)
{
    if (!cache->base_valid || cache->searches >= BASE_REFRESH) {
        first_layer_product(net, cache, net->parameters, cache->base);
        cache->base_valid = true;
        cache->searches = 0;
    }
    first_layer_product(net, cache, direction, cache->along);
    cache->direction = direction;
    cache->searches++;
    cache->evaluated = false;
}

/* The first layer's delta after ax_net_backward_along. */
static const void *first_delta(const ax_net *net)
{
    return net->delta[(net->layer_count - 1) % 2];
}

/* gradient . d, with the first layer's weight part as delta . X D^T plus the
 * L2 term l2 W . D (the gradient arena's first block is not computed). */
static double slope_along(ax_net *net, ax_line_cache *cache, double l2)
{
    const ax_layer *first = &net->layers[0];
    const int64_t weights = first->in * first->out;
    void *d = (void *)cache->direction;
    double slope = OPS->dot(net->backend, net->parameter_count - weights,
                            ax_layer_bias(net, net->gradients, 0), ax_layer_bias(net, d, 0));
    slope += OPS->dot(net->backend, cache->rows * cache->width, first_delta(net), cache->along);
    if (l2 > 0.0)
        slope += l2 * OPS->dot(net->backend, weights, ax_layer_weights(net, net->parameters, 0),
                               ax_layer_weights(net, d, 0));
    return slope;
}

double ax_net_line_evaluate(ax_net *net, ax_line_cache *cache, double alpha, bool with_gradient,
                            const ax_regularization *regularization, double *slope)
{
    const int64_t rows = cache->rows;
    const ax_layer *first = &net->layers[0];
    const double l2 = regularization ? regularization->l2 : 0.0;
    if (!cache->evaluated || alpha != cache->alpha) {
        /* z = X W^T + alpha X D^T, then bias and activation: the forward GEMM's
         * work without its pass over X (timed with the bias and activation). */
        void *z = net->outputs[0];
        const double n = (double)rows * (double)first->out;
        AX_PROFILED(net, AX_PROFILE_BIAS_ACTIVATION, 0, 4.0 * n,
                    OPS->copy(net->backend, z, cache->base, rows * first->out);
                    OPS->axpy(net->backend, rows * first->out, alpha, cache->along, z);
                    OPS->bias_activation(net->backend, first->activation, z,
                                         ax_layer_bias(net, net->parameters, 0), rows, first->out));
        ax_net_forward_from(net, rows, regularization, 1);
        cache->loss = ax_net_backward_along(net, rows, regularization);
        cache->slope = slope_along(net, cache, l2);
        cache->alpha = alpha;
        cache->evaluated = true;
        /* A full evaluation's count less the first layer's three GEMMs (none
         * runs: two would read X, the input gradient is never needed), plus
         * the axpy that stands in for the forward one. */
        const double nb = (double)rows, nl = (double)first->out, nprev = (double)first->in;
        cache->flops += ax_net_train_flops(net, rows) - 6.0 * nb * nl * nprev + 2.0 * n;
        cache->gradient_done = false;
    }
    if (with_gradient && !cache->gradient_done) {
        /* dW (out, in) = delta^T (out, rows) X (rows, in) + l2 W */
        const double nb = (double)rows, nl = (double)first->out, nprev = (double)first->in;
        cache->flops += nl * nprev * (2.0 * nb - 1.0);
        void *weight_gradient = ax_layer_weights(net, net->gradients, 0);
        const void *w = ax_layer_weights(net, net->parameters, 0);
        AX_PROFILED(net, AX_PROFILE_WEIGHT_GRADIENT_GEMM, 0, nl * nprev * (2.0 * nb - 1.0),
                    OPS->gemm(net->backend, true, false, first->out, first->in, rows, 1.0,
                              first_delta(net), first->out, net->current_input, first->in, 0.0,
                              weight_gradient, first->in));
        if (l2 > 0.0)
            AX_PROFILED(net, AX_PROFILE_L2, 0, 2.0 * nl * nprev,
                        OPS->axpy(net->backend, first->in * first->out, l2, w, weight_gradient));
        cache->gradient_done = true;
    }
    *slope = cache->slope;
    return cache->loss;
}

double ax_line_cache_take_flops(ax_line_cache *cache)
{
    double flops = cache->flops;
    cache->flops = 0.0;
    return flops;
}

void ax_net_line_end(ax_net *net, ax_line_cache *cache, double alpha)
{
    /* The parameters now are x0 + alpha d: so is X W^T, up to rounding. */
    if (alpha != 0.0 && cache->base_valid)
        OPS->axpy(net->backend, cache->rows * cache->width, alpha, cache->along, cache->base);
    cache->evaluated = false;
}

int64_t ax_line_cache_save(const ax_line_cache *cache, double *base, int *searches)
{
    if (!cache->base_valid)
        return 0;
    const int64_t count = cache->rows * cache->width;
    if (base) {
        cache->backend->ops->download_f64(cache->backend, base, cache->base, count);
        *searches = cache->searches;
    }
    return count;
}

ax_status ax_line_cache_restore(ax_line_cache *cache, const double *base, int64_t count,
                                int searches)
{
    if (count != cache->rows * cache->width)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "the saved line-search cache holds %lld values; this run's holds %lld x %lld",
                       (long long)count, (long long)cache->rows, (long long)cache->width);
    if (searches < 0 || searches > BASE_REFRESH)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "the saved line-search cache counts %d searches; it must be from 0 to %d",
                       searches, BASE_REFRESH);
    cache->backend->ops->upload_f64(cache->backend, cache->base, base, count);
    cache->searches = searches;
    cache->base_valid = true;
    cache->evaluated = false;
    return AX_STATUS_OK;
}
