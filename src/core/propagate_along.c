/* propagate_along.c: the network's cost along a search direction, for the
 * line searches of nonlinear CG and L-BFGS on the full batch. A plain
 * evaluation reads the inputs X twice (X W^T forward, X^T delta for the
 * first layer's weight gradient); on a wide input such as the galaxy
 * classifier's 2700 x 1024 images those two passes are nearly all the work.
 * Along
 * a direction d the first layer's pre-activations are affine in the step:
 * X (W + a D)^T = X W^T + a X D^T. With both (rows, width) products kept, a
 * trial step's loss and slope cost no pass over X; only the gradient at the
 * point a search accepts does, plus X D^T once per new direction. X W^T at
 * the accepted point follows as X W^T + a X D^T, recomputed from X every
 * BASE_REFRESH searches so that rounding cannot pile up. The first layer
 * need not be dense: any kind that declares its outputs linear in its
 * weights (ax_layer_ops.linear_product and bias_activation) will do. */
#include <math.h>
#include <stdio.h>
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
    double flops; /* done since ax_line_cache_take_flops, by TMVA's FLOP count */
};

bool ax_net_line_cache_fits(const ax_net *net)
{
    const ax_layer_ops *ops = net->layers[0].ops;
    return ops->linear_product && ops->bias_activation;
}

ax_status ax_line_cache_create(ax_net *net, int64_t rows, ax_line_cache **out)
{
    *out = NULL;
    if (!ax_net_line_cache_fits(net))
        return ax_fail(AX_STATUS_UNSUPPORTED,
                       "a line-search cache needs a first layer whose outputs are linear in its "
                       "weights; a %s layer's are not", net->layers[0].ops->name);
    if (rows < 1 || rows > net->workspace.capacity)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "a line-search cache for %lld rows needs a workspace that large (it has %lld)",
                       (long long)rows, (long long)net->workspace.capacity);
    ax_line_cache *cache = calloc(1, sizeof *cache);
    if (!cache)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for the line-search cache");
    cache->backend = net->backend;
    cache->rows = rows;
    cache->width = net->layers[0].out;
    size_t bytes = (size_t)rows * (size_t)cache->width * net->backend->real_size;
    char what[128];
    snprintf(what, sizeof what, "the line-search cache (2 x %lld x %lld values)", (long long)rows,
             (long long)cache->width);
    ax_status status = ax_backend_alloc(net->backend, bytes, what, &cache->base);
    if (status == AX_STATUS_OK)
        status = ax_backend_alloc(net->backend, bytes, what, &cache->along);
    if (status != AX_STATUS_OK) {
        ax_line_cache_free(cache);
        return status;
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

/* out (rows, width) = X M^T for the first layer's weights M (width, in) of an arena. */
static void first_layer_product(ax_net *net, ax_line_cache *cache, const void *arena, void *out)
{
    const ax_layer *layer = &net->layers[0];
    cache->flops += layer->ops->flops(layer, cache->rows, AX_LAYER_WORK_FORWARD_PRODUCT);
    layer->ops->linear_product(net, 0, net->workspace.current_input, arena, out, cache->rows);
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
    return net->workspace.delta[(net->layer_count - 1) % 2];
}

/* gradient . d, with the first layer's weight part as delta . X D^T plus the
 * L2 term l2 W . D (the gradient arena's first layer weights are not
 * computed): the rest of the arena is what lies before and after them.
 * *loss = data_loss plus the penalties, in ax_net_backward's order; the L2
 * penalty's dots are read with the slope's, one wait for all. */
static double slope_along(ax_net *net, ax_line_cache *cache,
                          const ax_regularization *regularization, double data_loss,
                          double *loss)
{
    const double l2 = regularization ? regularization->l2 : 0.0;
    const double l1 = regularization ? regularization->l1 : 0.0;
    const ax_layer *first = &net->layers[0];
    const int64_t weights = first->weight_count;
    const int64_t before = first->weight_offset, after = first->weight_offset + weights;
    const size_t real = net->backend->real_size;
    const char *g = net->gradients, *d = cache->direction;
    /* The dots read back with one wait, then added in this order. */
    ax_reduction dots[4 + AX_MAX_LAYERS];
    int n = 0;
    dots[n++] = (ax_reduction){AX_REDUCTION_DOT, net->parameter_count - after,
                               g + (size_t)after * real, d + (size_t)after * real, 0.0};
    if (before > 0)
        dots[n++] = (ax_reduction){AX_REDUCTION_DOT, before, g, d, 0.0};
    dots[n++] = (ax_reduction){AX_REDUCTION_DOT, cache->rows * cache->width, first_delta(net),
                               cache->along, 0.0};
    if (l2 > 0.0)
        dots[n++] = (ax_reduction){AX_REDUCTION_DOT, weights,
                                   ax_layer_weights(net, net->parameters, 0),
                                   ax_layer_weights(net, (void *)d, 0), 0.0};
    const int penalty_dots = l2 > 0.0 ? ax_net_l2_dots(net, dots + n) : 0;
    ax_backend_reduce(net->backend, n + penalty_dots, dots);
    double slope = dots[0].value;
    for (int i = 1; i < n; i++)
        slope += l2 > 0.0 && i == n - 1 ? l2 * dots[i].value : dots[i].value;
    *loss = data_loss;
    if (l2 > 0.0)
        *loss += ax_net_l2_from_dots(net, l2, dots + n);
    if (l1 > 0.0)
        *loss += ax_net_l1_penalty(net, l1);
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
        void *z = net->workspace.outputs[0];
        const double n = (double)rows * (double)first->out;
        AX_PROFILED(net, AX_PROFILE_BIAS_ACTIVATION, 0, 4.0 * n,
                    OPS->copy(net->backend, z, cache->base, rows * first->out);
                    OPS->axpy(net->backend, rows * first->out, alpha, cache->along, z);
                    first->ops->bias_activation(net, 0, z, rows));
        (void)ax_net_forward_from(net, rows, regularization, 1); /* past the inputs: no copy */
        const double data_loss = ax_net_backward_along(net, rows, regularization);
        cache->slope = slope_along(net, cache, regularization, data_loss, &cache->loss);
        cache->alpha = alpha;
        cache->evaluated = true;
        /* A full evaluation's count less the first layer's three products
         * (none runs: two would read X, the input gradient is never needed),
         * plus the axpy that stands in for the forward one. */
        cache->flops += ax_net_train_flops(net, rows) -
                        first->ops->flops(first, rows, AX_LAYER_WORK_PRODUCTS) + 2.0 * n;
        cache->gradient_done = false;
    }
    if (with_gradient && !cache->gradient_done) {
        /* dW = delta^T X + l2 W, the one pass over X the search needs */
        cache->flops += first->ops->flops(first, rows, AX_LAYER_WORK_WEIGHT_GRADIENT);
        first->ops->backward_weights(net, 0, first_delta(net), net->workspace.current_input, l2,
                                     rows);
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
