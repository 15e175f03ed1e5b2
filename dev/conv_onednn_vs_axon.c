/* conv_onednn_vs_axon.c: issue 28's measurement before any integration:
 * axon's CPU convolution (the layer's own passes: im2col + GEMM, col2im,
 * the weight reorders, called through the layer table as
 * src/core/conv_rate.c does) against oneDNN 2.6's convolution primitives
 * (Debian's libdnnl-dev), at LeNet's shapes, batch 128, float32:
 *   conv1 28x28x1 -> 32 filters 5x5 -> 24x24 (no padding, as
 *         "conv:32x5x5:relu" of `axon bench lenet`),
 *   conv2 12x12x32 -> 64 filters 5x5 -> 8x8.
 * Passes: forward (oneDNN's convolution followed by axon's own bias and
 * ReLU pass, backend op bias_activation, as an integration would run it;
 * axon's forward applies the same after its GEMM), weight gradient (no bias gradient on either
 * side: axon sums it in the activation's backward pass) and input gradient
 * (conv2 only: training never needs conv1's).
 * oneDNN twice, each *including* the reorders from and to axon's layouts
 * (images NHWC, weights torch's OIHW in the arena):
 *   any   src, weights and dst in the layouts oneDNN prefers (format any),
 *         reorders of images in and out and of the weights;
 *   nhwc  images left in NHWC, weights in the layout it prefers: only the
 *         weights (forward, input gradient) or their gradient are reordered.
 * Rounds alternate the contenders (the machine is shared); each round times
 * the mean of CALLS calls per contender; the figure is the median over the
 * rounds of the per-round ratio axon / oneDNN (> 1: oneDNN faster). Results
 * are checked against axon's: max |a - b| / max |a| per pass, and whether
 * oneDNN's bits on 2 threads equal those on 1.
 *
 * build and run (after building axon_static in build/): dev/conv_onednn_vs_axon.sh */
#include <dnnl.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axon.h"
#include "core/net.h"
#include "bench_median.h"

enum { BATCH = 128, ROUNDS = 7, CALLS = 10, PASSES = 3, VARIANTS = 2 };
static const char *PASS_NAME[PASSES] = {"forward", "weight gradient", "input gradient"};
static const char *VARIANT_NAME[VARIANTS] = {"any", "nhwc"};

#define DNNL_OK(call)                                                                  \
    do {                                                                               \
        dnnl_status_t s_ = (call);                                                     \
        if (s_ != dnnl_success) {                                                      \
            fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #call, s_); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static void fill(float *values, size_t count, unsigned seed)
{
    for (size_t i = 0; i < count; i++)
        values[i] = (float)((double)(((i + seed) * 2654435761u) % 2048u) / 1024.0 - 1.0);
}

/* max |a - b| / max |a|: the error against the scale of the result */
static double relative_difference(const float *a, const float *b, size_t count)
{
    double most = 0.0, worst = 0.0;
    for (size_t i = 0; i < count; i++) {
        most = fmax(most, fabs((double)a[i]));
        worst = fmax(worst, fabs((double)a[i] - (double)b[i]));
    }
    return most > 0.0 ? worst / most : worst;
}

/* ------------------------------------------------------------ oneDNN side */

static dnnl_engine_t engine;
static dnnl_stream_t stream;

/* A memory in a layout, and a reorder between it and a user's buffer in
 * another layout (NULL when the layouts are equal: the user's buffer is used). */
typedef struct placed {
    dnnl_memory_t user, inner;
    dnnl_primitive_t reorder; /* user -> inner for inputs, inner -> user for outputs */
    int output;
    float *user_buffer;
} placed;

static placed place(const dnnl_memory_desc_t *user_md, const dnnl_memory_desc_t *inner_md,
                    float *user_buffer, int output)
{
    placed p = {0};
    p.output = output;
    p.user_buffer = user_buffer;
    DNNL_OK(dnnl_memory_create(&p.user, user_md, engine, user_buffer));
    if (dnnl_memory_desc_equal(user_md, inner_md)) {
        p.inner = p.user;
        return p;
    }
    DNNL_OK(dnnl_memory_create(&p.inner, inner_md, engine, DNNL_MEMORY_ALLOCATE));
    dnnl_primitive_desc_t pd;
    DNNL_OK(output ? dnnl_reorder_primitive_desc_create(&pd, inner_md, engine, user_md, engine, NULL)
                   : dnnl_reorder_primitive_desc_create(&pd, user_md, engine, inner_md, engine, NULL));
    DNNL_OK(dnnl_primitive_create(&p.reorder, pd));
    dnnl_primitive_desc_destroy(pd);
    return p;
}

static void run_reorder(const placed *p)
{
    if (!p->reorder)
        return;
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, p->output ? p->inner : p->user},
                               {DNNL_ARG_TO, p->output ? p->user : p->inner}};
    DNNL_OK(dnnl_primitive_execute(p->reorder, stream, 2, args));
}

static void release(placed *p)
{
    if (p->reorder) {
        dnnl_primitive_destroy(p->reorder);
        dnnl_memory_destroy(p->inner);
    }
    dnnl_memory_destroy(p->user);
}

/* One convolution pass of oneDNN: the primitive, its operands placed, the
 * kernel's name. */
typedef struct onednn_pass {
    dnnl_primitive_t primitive;
    placed operand[3]; /* inputs first, the output last */
    int operand_arg[3];
    float *bias; /* forward: axon's bias and ReLU pass after the convolution */
    int64_t outputs, filters;
    char implementation[64];
} onednn_pass;

/* The user's buffers (axon's layouts) of one layer. */
typedef struct layer_buffers {
    float *x, *weights, *bias, *z, *delta, *weight_gradient, *previous;
} layer_buffers;

typedef struct layer_shape {
    const char *name;
    int axon_index; /* the layer in axon's network */
    int height, width, channels, filters, kernel, out_height, out_width;
    int input_gradient; /* whether the input's gradient is measured */
} layer_shape;

static void describe(const onednn_pass *pass, const_dnnl_primitive_desc_t pd, onednn_pass *out)
{
    (void)pass;
    const char *name = "?";
    DNNL_OK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name));
    snprintf(out->implementation, sizeof out->implementation, "%s", name);
}

static void make_passes(const layer_shape *s, int variant, layer_buffers *b,
                        onednn_pass passes[PASSES])
{
    const dnnl_dims_t src_dims = {BATCH, s->channels, s->height, s->width};
    const dnnl_dims_t wei_dims = {s->filters, s->channels, s->kernel, s->kernel};
    const dnnl_dims_t dst_dims = {BATCH, s->filters, s->out_height, s->out_width};
    const dnnl_dims_t strides = {1, 1}, padding = {0, 0};
    dnnl_memory_desc_t src_user, wei_user, dst_user, src_any, wei_any, dst_any;
    DNNL_OK(dnnl_memory_desc_init_by_tag(&src_user, 4, src_dims, dnnl_f32, dnnl_nhwc));
    DNNL_OK(dnnl_memory_desc_init_by_tag(&dst_user, 4, dst_dims, dnnl_f32, dnnl_nhwc));
    DNNL_OK(dnnl_memory_desc_init_by_tag(&wei_user, 4, wei_dims, dnnl_f32, dnnl_oihw));
    const dnnl_format_tag_t image_tag = variant == 0 ? dnnl_format_tag_any : dnnl_nhwc;
    DNNL_OK(dnnl_memory_desc_init_by_tag(&src_any, 4, src_dims, dnnl_f32, image_tag));
    DNNL_OK(dnnl_memory_desc_init_by_tag(&dst_any, 4, dst_dims, dnnl_f32, image_tag));
    DNNL_OK(dnnl_memory_desc_init_by_tag(&wei_any, 4, wei_dims, dnnl_f32, dnnl_format_tag_any));

    /* forward without bias: axon's bias_activation follows (run_onednn) */
    dnnl_convolution_desc_t forward_desc;
    DNNL_OK(dnnl_convolution_forward_desc_init(&forward_desc, dnnl_forward_training,
                                               dnnl_convolution_direct, &src_any, &wei_any,
                                               NULL, &dst_any, strides, padding, padding));
    dnnl_primitive_desc_t forward_pd;
    DNNL_OK(dnnl_primitive_desc_create(&forward_pd, &forward_desc, NULL, engine, NULL));
    onednn_pass *f = &passes[0];
    describe(f, forward_pd, f);
    DNNL_OK(dnnl_primitive_create(&f->primitive, forward_pd));
    f->operand[0] = place(&src_user, dnnl_primitive_desc_query_md(forward_pd, dnnl_query_src_md, 0), b->x, 0);
    f->operand[1] = place(&wei_user, dnnl_primitive_desc_query_md(forward_pd, dnnl_query_weights_md, 0), b->weights, 0);
    f->operand[2] = place(&dst_user, dnnl_primitive_desc_query_md(forward_pd, dnnl_query_dst_md, 0), b->z, 1);
    f->operand_arg[0] = DNNL_ARG_SRC;
    f->operand_arg[1] = DNNL_ARG_WEIGHTS;
    f->operand_arg[2] = DNNL_ARG_DST;
    f->bias = b->bias;
    f->outputs = (int64_t)BATCH * s->out_height * s->out_width;
    f->filters = s->filters;

    /* weight gradient, no bias gradient (as axon's weight pass) */
    dnnl_convolution_desc_t weights_desc;
    DNNL_OK(dnnl_convolution_backward_weights_desc_init(&weights_desc, dnnl_convolution_direct,
                                                        &src_any, &wei_any, NULL, &dst_any,
                                                        strides, padding, padding));
    dnnl_primitive_desc_t weights_pd;
    DNNL_OK(dnnl_primitive_desc_create(&weights_pd, &weights_desc, NULL, engine, forward_pd));
    onednn_pass *w = &passes[1];
    describe(w, weights_pd, w);
    DNNL_OK(dnnl_primitive_create(&w->primitive, weights_pd));
    w->operand[0] = place(&src_user, dnnl_primitive_desc_query_md(weights_pd, dnnl_query_src_md, 0), b->x, 0);
    w->operand[1] = place(&dst_user, dnnl_primitive_desc_query_md(weights_pd, dnnl_query_diff_dst_md, 0), b->delta, 0);
    w->operand[2] = place(&wei_user, dnnl_primitive_desc_query_md(weights_pd, dnnl_query_diff_weights_md, 0), b->weight_gradient, 1);
    w->operand_arg[0] = DNNL_ARG_SRC;
    w->operand_arg[1] = DNNL_ARG_DIFF_DST;
    w->operand_arg[2] = DNNL_ARG_DIFF_WEIGHTS;

    /* input gradient */
    onednn_pass *d = &passes[2];
    if (s->input_gradient) {
        dnnl_convolution_desc_t data_desc;
        DNNL_OK(dnnl_convolution_backward_data_desc_init(&data_desc, dnnl_convolution_direct,
                                                         &src_any, &wei_any, &dst_any, strides,
                                                         padding, padding));
        dnnl_primitive_desc_t data_pd;
        DNNL_OK(dnnl_primitive_desc_create(&data_pd, &data_desc, NULL, engine, forward_pd));
        describe(d, data_pd, d);
        DNNL_OK(dnnl_primitive_create(&d->primitive, data_pd));
        d->operand[0] = place(&dst_user, dnnl_primitive_desc_query_md(data_pd, dnnl_query_diff_dst_md, 0), b->delta, 0);
        d->operand[1] = place(&wei_user, dnnl_primitive_desc_query_md(data_pd, dnnl_query_weights_md, 0), b->weights, 0);
        d->operand[2] = place(&src_user, dnnl_primitive_desc_query_md(data_pd, dnnl_query_diff_src_md, 0), b->previous, 1);
        d->operand_arg[0] = DNNL_ARG_DIFF_DST;
        d->operand_arg[1] = DNNL_ARG_WEIGHTS;
        d->operand_arg[2] = DNNL_ARG_DIFF_SRC;
        dnnl_primitive_desc_destroy(data_pd);
    }
    dnnl_primitive_desc_destroy(weights_pd);
    dnnl_primitive_desc_destroy(forward_pd);
}

static ax_backend *axon_backend; /* the network's, for the forward epilogue */

/* One call of a oneDNN pass: the reorders in, the primitive, the reorder
 * out (and the forward pass's bias and ReLU, axon's). */
static void run_onednn(const onednn_pass *p)
{
    run_reorder(&p->operand[0]);
    run_reorder(&p->operand[1]);
    dnnl_exec_arg_t args[3];
    for (int i = 0; i < 3; i++)
        args[i] = (dnnl_exec_arg_t){p->operand_arg[i], p->operand[i].inner};
    DNNL_OK(dnnl_primitive_execute(p->primitive, stream, 3, args));
    run_reorder(&p->operand[2]);
    DNNL_OK(dnnl_stream_wait(stream));
    if (p->bias)
        axon_backend->ops->bias_activation(axon_backend, AX_ACT_RELU,
                                           p->operand[2].user_buffer, p->bias, p->outputs,
                                           p->filters);
}

static void free_passes(onednn_pass passes[PASSES])
{
    for (int p = 0; p < PASSES; p++) {
        if (!passes[p].primitive)
            continue;
        dnnl_primitive_destroy(passes[p].primitive);
        for (int i = 0; i < 3; i++)
            release(&passes[p].operand[i]);
    }
    memset(passes, 0, PASSES * sizeof *passes);
}

/* -------------------------------------------------------------- axon side */

/* axon's buffers of a layer (its own layouts); weights are the network's. */
typedef struct axon_buffers {
    float *x, *z, *delta, *previous;
} axon_buffers;

static void run_axon(ax_net *net, int index, int pass, const axon_buffers *b)
{
    const ax_layer *layer = &net->layers[index];
    if (pass == 0) {
        layer->ops->forward(net, index, b->x, b->z, BATCH);
    } else if (pass == 1) {
        layer->ops->backward_weights(net, index, b->delta, b->x, 0.0, BATCH);
    } else {
        layer->ops->backward_input(net, index, b->delta, b->previous, BATCH);
    }
}

/* Seconds per call, the mean of CALLS calls. The weight gradient reuses
 * the forward pass's columns in training, so axon's forward runs untimed
 * before each of its weight-gradient calls. */
static double time_axon(ax_net *net, int index, int pass, const axon_buffers *b)
{
    double spent = 0.0;
    for (int c = 0; c < CALLS; c++) {
        if (pass == 1)
            run_axon(net, index, 0, b);
        const double start = ax_seconds_now();
        run_axon(net, index, pass, b);
        spent += ax_seconds_now() - start;
    }
    return spent / CALLS;
}

static double time_onednn(const onednn_pass *p)
{
    const double start = ax_seconds_now();
    for (int c = 0; c < CALLS; c++)
        run_onednn(p);
    return (ax_seconds_now() - start) / CALLS;
}

/* ------------------------------------------------------------------ main */

int main(void)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = 28 * 28;
    config.input_shape[0] = 28;
    config.input_shape[1] = 28;
    config.input_shape[2] = 1;
    if (ax_layers_parse("conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,maxpool:2,1024:relu,10:softmax",
                        &config) != AX_STATUS_OK) {
        fprintf(stderr, "layers: %s\n", ax_error_message());
        return 1;
    }
    ax_net *net = NULL;
    if (ax_net_create(&config, &net) != AX_STATUS_OK || ax_net_reserve(net, BATCH) != AX_STATUS_OK) {
        fprintf(stderr, "network: %s\n", ax_error_message());
        return 1;
    }
    axon_backend = net->backend;
    DNNL_OK(dnnl_engine_create(&engine, dnnl_cpu, 0));
    DNNL_OK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
    const layer_shape shapes[2] = {
        {"conv1 28x28x1 -> 24x24x32", 0, 28, 28, 1, 32, 5, 24, 24, 0},
        {"conv2 12x12x32 -> 8x8x64", 2, 12, 12, 32, 64, 5, 8, 8, 1},
    };
    printf("oneDNN %d.%d.%d, batch %d, float32, %d rounds of %d calls per contender, "
           "alternating\n", dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch,
           BATCH, ROUNDS, CALLS);
    fflush(stdout);
    (void)system("uptime");
    for (int l = 0; l < 2; l++) {
        const layer_shape *s = &shapes[l];
        const ax_layer *layer = &net->layers[s->axon_index];
        const size_t in = (size_t)BATCH * (size_t)layer->in, out = (size_t)BATCH * (size_t)layer->out;
        const size_t weight_count = (size_t)layer->weight_count;
        axon_buffers a = {aligned_alloc(64, in * 4), aligned_alloc(64, out * 4), aligned_alloc(64, out * 4), aligned_alloc(64, in * 4)};
        layer_buffers d = {a.x,          malloc(weight_count * 4), malloc((size_t)s->filters * 4),
                           aligned_alloc(64, out * 4), a.delta, malloc(weight_count * 4), aligned_alloc(64, in * 4)};
        float *first_bits[VARIANTS][PASSES] = {{0}};
        fill(a.x, in, 1);
        fill(a.delta, out, 7);
        float *axon_weights = ax_layer_weights(net, net->parameters, s->axon_index);
        float *axon_bias = ax_layer_bias(net, net->parameters, s->axon_index);
        /* a nonzero bias, so that the bias is checked too */
        for (int i = 0; i < s->filters; i++)
            axon_bias[i] = 0.01f * (float)(i % 7) - 0.03f;
        memcpy(d.weights, axon_weights, weight_count * 4);
        memcpy(d.bias, axon_bias, (size_t)s->filters * 4);
        const float *axon_weight_gradient = ax_layer_weights(net, net->gradients, s->axon_index);
        for (int threads = 1; threads <= 2; threads++) {
            if (ax_set_threads(threads) != AX_STATUS_OK)
                return 1;
            printf("\n%s, %d thread%s\n", s->name, threads, threads > 1 ? "s" : "");
            onednn_pass passes[VARIANTS][PASSES];
            memset(passes, 0, sizeof passes);
            for (int v = 0; v < VARIANTS; v++)
                make_passes(s, v, &d, passes[v]);
            for (int p = 0; p < PASSES; p++) {
                if (p == 2 && !s->input_gradient)
                    continue;
                double axon_seconds[ROUNDS], onednn_seconds[VARIANTS][ROUNDS],
                    ratio[VARIANTS][ROUNDS];
                for (int v = 0; v < VARIANTS; v++)
                    run_onednn(&passes[v][p]); /* warm-up */
                run_axon(net, s->axon_index, 0, &a);
                run_axon(net, s->axon_index, p, &a);
                for (int r = 0; r < ROUNDS; r++) {
                    axon_seconds[r] = time_axon(net, s->axon_index, p, &a);
                    for (int v = 0; v < VARIANTS; v++) {
                        onednn_seconds[v][r] = time_onednn(&passes[v][p]);
                        ratio[v][r] = axon_seconds[r] / onednn_seconds[v][r];
                    }
                }
                /* results: axon's, then each variant's against them */
                run_axon(net, s->axon_index, 0, &a);
                run_axon(net, s->axon_index, p, &a);
                const float *expected = p == 0 ? a.z : p == 1 ? axon_weight_gradient : a.previous;
                const size_t count = p == 0 ? out : p == 1 ? weight_count : in;
                float *axon_copy = malloc(count * 4);
                memcpy(axon_copy, expected, count * 4);
                printf("  %-16s axon %7.3f ms (median)\n", PASS_NAME[p], bench_median(axon_seconds, ROUNDS) * 1e3);
                for (int v = 0; v < VARIANTS; v++) {
                    run_onednn(&passes[v][p]);
                    const float *got = p == 0 ? d.z : p == 1 ? d.weight_gradient : d.previous;
                    const double difference = relative_difference(axon_copy, got, count);
                    const char *bits = "";
                    if (threads == 1) {
                        first_bits[v][p] = malloc(count * 4);
                        memcpy(first_bits[v][p], got, count * 4);
                    } else {
                        bits = memcmp(first_bits[v][p], got, count * 4) == 0
                                   ? ", bits = 1 thread's"
                                   : ", bits DIFFER from 1 thread's";
                    }
                    double sorted[ROUNDS];
                    memcpy(sorted, ratio[v], sizeof sorted);
                    const double middle = bench_median(sorted, ROUNDS);
                    printf("  %-16s oneDNN/%-4s %7.3f ms (median), axon/oneDNN median %.2f "
                           "(%.2f-%.2f), max rel diff %.1e%s [%s]\n",
                           "", VARIANT_NAME[v], bench_median(onednn_seconds[v], ROUNDS) * 1e3, middle,
                           sorted[0], sorted[ROUNDS - 1], difference, bits,
                           passes[v][p].implementation);
                }
                free(axon_copy);
                fflush(stdout);
            }
            for (int v = 0; v < VARIANTS; v++)
                free_passes(passes[v]);
        }
        for (int v = 0; v < VARIANTS; v++)
            for (int p = 0; p < PASSES; p++)
                free(first_bits[v][p]);
        free(a.x), free(a.z), free(a.delta), free(a.previous);
        free(d.weights), free(d.bias), free(d.z), free(d.weight_gradient), free(d.previous);
    }
    (void)system("uptime");
    dnnl_stream_destroy(stream);
    dnnl_engine_destroy(engine);
    ax_net_free(net);
    ax_net_config_release(&config);
    return 0;
}
