/* conv_rate.c: the rate of a network's convolution layers at a batch
 * (ax_net_conv_rate), each pass timed through the layer's own code as
 * training runs it (im2col, the GEMMs, col2im and the weight reorders
 * included), so that `axon info --peak` and `--profile` can set the
 * convolutions against the machine's peak as gemm_rate.c does the dense
 * products. */
#include <math.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/error.h"
#include "core/net.h"

enum { PASSES = 3, ROUNDS = 3 };
static const double LEAST_SECONDS = 0.02; /* per round of one pass */

typedef struct conv_buffers {
    void *x, *z, *delta, *previous; /* (batch, widest) each, backend memory */
} conv_buffers;

/* Runs pass p of layer index once on the buffers. */
static void run_pass(ax_net *net, int index, int pass, const conv_buffers *b, int64_t batch)
{
    const ax_layer *layer = &net->layers[index];
    if (pass == 0)
        layer->ops->forward(net, index, b->x, b->z, batch);
    else if (pass == 1)
        layer->ops->backward_weights(net, index, b->delta, b->x, 0.0, batch);
    else
        layer->ops->backward_input(net, index, b->delta, b->previous, batch);
    (void)ax_backend_synchronize(net->backend); /* a failure stays in the backend's status */
}

/* Best seconds per call of one pass over ROUNDS rounds. The forward pass
 * runs before each call of the weight gradient, untimed, so that the
 * weight gradient finds the columns the forward pass leaves, as in training. */
static double time_pass(ax_net *net, int index, int pass, const conv_buffers *b, int64_t batch)
{
    double best = INFINITY;
    for (int round = 0; round < ROUNDS; round++) {
        double spent = 0.0;
        int calls = 0;
        do {
            if (pass == 1)
                run_pass(net, index, 0, b, batch);
            const double start = ax_seconds_now();
            run_pass(net, index, pass, b, batch);
            spent += ax_seconds_now() - start;
            calls++;
        } while (spent < LEAST_SECONDS);
        best = fmin(best, spent / calls);
    }
    return best;
}

/* TMVA's count of pass p at the batch: forward product, weight-gradient
 * product, and the input-gradient product (the rest of the three). */
static double pass_flops(const ax_layer *layer, int pass, int64_t batch)
{
    const double forward = layer->ops->flops(layer, batch, AX_LAYER_WORK_FORWARD_PRODUCT);
    const double weight = layer->ops->flops(layer, batch, AX_LAYER_WORK_WEIGHT_GRADIENT);
    if (pass == 0)
        return forward;
    if (pass == 1)
        return weight;
    return layer->ops->flops(layer, batch, AX_LAYER_WORK_PRODUCTS) - forward - weight;
}

ax_status ax_net_conv_rate(ax_net *net, int64_t batch, double *gflops, double passes[3])
{
    *gflops = 0.0;
    if (passes)
        passes[0] = passes[1] = passes[2] = 0.0;
    if (batch < 1)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "the batch for the convolution rate must be positive");
    int64_t widest = 0;
    int convolutions = 0;
    for (int l = 0; l < net->layer_count; l++)
        if (net->layers[l].spec.kind == AX_LAYER_CONV) {
            convolutions++;
            widest = net->layers[l].in > widest ? net->layers[l].in : widest;
            widest = net->layers[l].out > widest ? net->layers[l].out : widest;
        }
    if (convolutions == 0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "the network has no convolution layer to measure the rate of");
    AX_TRY(ax_net_reserve(net, batch));
    ax_backend *backend = net->backend;
    const size_t count = (size_t)batch * (size_t)widest;
    /* Inputs in [-1, 1): like activations, nothing subnormal. */
    float *host = malloc(count * sizeof *host);
    conv_buffers b = {0};
    void **all[4] = {&b.x, &b.z, &b.delta, &b.previous};
    ax_status status = host ? AX_STATUS_OK
                            : ax_fail(AX_STATUS_OUT_OF_MEMORY,
                                      "out of memory measuring the convolution rate");
    for (int i = 0; i < 4 && status == AX_STATUS_OK; i++)
        status = ax_backend_alloc(backend, count * backend->real_size,
                                  "the buffers measuring the convolution rate", all[i]);
    if (status == AX_STATUS_OK) {
        for (size_t i = 0; i < count; i++)
            host[i] = (float)((double)((i * 2654435761u) % 2048u) / 1024.0 - 1.0);
        backend->ops->gather_rows(backend, b.x, host, widest, NULL, 0, batch);
        backend->ops->gather_rows(backend, b.delta, host, widest, NULL, 0, batch);
        double flops[PASSES] = {0}, seconds[PASSES] = {0};
        for (int l = 0; l < net->layer_count; l++) {
            const ax_layer *layer = &net->layers[l];
            if (layer->spec.kind != AX_LAYER_CONV)
                continue;
            for (int p = 0; p < PASSES; p++) {
                if (p == 2 && l == 0)
                    continue; /* training never needs the input's gradient */
                flops[p] += pass_flops(layer, p, batch);
                seconds[p] += time_pass(net, l, p, &b, batch);
            }
        }
        double flops_all = 0.0, seconds_all = 0.0;
        for (int p = 0; p < PASSES; p++) {
            if (passes && seconds[p] > 0.0)
                passes[p] = flops[p] / seconds[p] * 1e-9;
            flops_all += flops[p];
            seconds_all += seconds[p];
        }
        *gflops = flops_all / seconds_all * 1e-9;
        status = backend->ops->status(backend);
    }
    free(host);
    for (int i = 0; i < 4; i++)
        backend->ops->free(backend, *all[i]);
    return status;
}
