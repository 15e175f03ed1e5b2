/* propagate.c: forward and backward passes through the sequence of layers,
 * each through its kind's table (core/layer.h; a dense layer is one GEMM
 * forward, two backward, one fused pass for bias and activation, one fused
 * pass for the derivative and the bias gradient),
 * dropout between layers, the loss at the output, and the public calls built
 * on them (predict, evaluate, loss and gradient). */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/memory.h"
#include "base/random.h"
#include "core/net.h"
#include "data/dataset.h"
#include "data/stream.h"

#define OPS (net->backend->ops)

/* Distinct masks per layer from one key per step. */
static uint64_t layer_key(const ax_regularization *regularization, int layer)
{
    return ax_hash64(regularization->dropout_key ^ ((uint64_t)(layer + 1) << 56));
}

/* The probability of dropping each input of layer l (l == layer_count: none). */
static double dropout_before(const ax_net *net, const ax_regularization *regularization, int l)
{
    if (!regularization || l >= net->layer_count)
        return 0.0;
    if (regularization->dropout_layers)
        return regularization->dropout_layers[l];
    return l > 0 ? regularization->dropout : 0.0;
}

ax_status ax_net_forward(ax_net *net, int64_t rows, const ax_regularization *regularization)
{
    return ax_net_forward_from(net, rows, regularization, 0);
}

ax_status ax_net_forward_from(ax_net *net, int64_t rows, const ax_regularization *regularization,
                              int first)
{
    const double input_rate = first == 0 ? dropout_before(net, regularization, 0) : 0.0;
    if (input_rate > 0.0) {
        /* Without the copy the inputs would go through undropped: a
         * different model, trained without a word. */
        if (!ax_net_side_input_holds(net, rows))
            return ax_fail(AX_STATUS_OUT_OF_MEMORY,
                           "out of memory for the copy of %lld input rows (%lld values each) "
                           "that input dropout (%g) drops",
                           (long long)rows, (long long)net->config.input_width, input_rate);
        /* The inputs' dropout on a copy: the rows may be the data set's own
         * (a float32 batch in order) or a batch kept for the next step. */
        OPS->copy(net->backend, net->workspace.side_input, net->workspace.current_input,
                  rows * net->config.input_width);
        AX_PROFILED(net, AX_PROFILE_DROPOUT, -1, 0.0,
                    OPS->dropout(net->backend, net->workspace.side_input, input_rate,
                                 layer_key(regularization, -1), regularization->dropout_first_row,
                                 rows, net->config.input_width));
        net->workspace.current_input = net->workspace.side_input;
        net->workspace.loaded_valid = false;
    }
    const void *x = first > 0 ? net->workspace.outputs[first - 1] : net->workspace.current_input;
    for (int l = first; l < net->layer_count; l++) {
        const ax_layer *layer = &net->layers[l];
        void *z = net->workspace.outputs[l];
        /* A first layer and the max pooling over it in one pass, where the
         * backend has it and no dropout comes between them */
        if (l == 0 && net->layer_count > 1 && layer->ops->forward_max_pool &&
            dropout_before(net, regularization, 1) == 0.0 &&
            layer->ops->forward_max_pool(net, 0, 1, x, rows)) {
            l = 1;
            layer = &net->layers[1];
            z = net->workspace.outputs[1];
        } else {
            layer->ops->forward(net, l, x, z, rows);
        }
        const double rate = dropout_before(net, regularization, l + 1);
        if (rate > 0.0)
            AX_PROFILED(net, AX_PROFILE_DROPOUT, l, 0.0,
                        OPS->dropout(net->backend, z, rate, layer_key(regularization, l),
                                     regularization->dropout_first_row, rows, layer->out));
        x = z;
    }
    return AX_STATUS_OK;
}

/* Summed loss over rows; with delta, writes the gradient of loss * scale at
 * the output (pre-activation for the fused losses, output for MSE). */
static double output_loss(ax_net *net, int64_t rows, void *delta, double scale)
{
    int64_t cols = net->layers[net->layer_count - 1].out;
    const void *y = net->workspace.outputs[net->layer_count - 1];
    const int32_t *labels = net->workspace.batch_has_labels ? net->workspace.labels : NULL;
    switch (net->config.loss) {
    case AX_LOSS_CROSS_ENTROPY:
        return OPS->cross_entropy(net->backend, y, net->workspace.labels, delta, scale, rows, cols);
    case AX_LOSS_BINARY_CROSS_ENTROPY:
        return OPS->binary_cross_entropy(net->backend, y, labels, net->workspace.targets, delta,
                                         scale, rows, cols);
    default:
        return OPS->squared_error(net->backend, y, labels, net->workspace.targets, delta, scale,
                                  rows, cols);
    }
}

/* Losses are means: over rows (cross-entropies) or over all elements (MSE). */
double ax_net_loss_scale(const ax_net *net, int64_t rows)
{
    int64_t cols = net->layers[net->layer_count - 1].out;
    return net->config.loss == AX_LOSS_MSE ? 1.0 / ((double)rows * (double)cols) : 1.0 / (double)rows;
}

double ax_net_data_loss(ax_net *net, int64_t rows)
{
    return output_loss(net, rows, NULL, 1.0) * ax_net_loss_scale(net, rows);
}

int ax_net_l2_dots(const ax_net *net, ax_reduction *dots)
{
    for (int l = 0; l < net->layer_count; l++) {
        const void *w = ax_layer_weights(net, net->parameters, l);
        dots[l] = (ax_reduction){.kind = AX_REDUCTION_DOT, .count = net->layers[l].weight_count,
                                 .x = w, .y = w};
    }
    return net->layer_count;
}

/* The layers' w.w added in layer order. */
double ax_net_l2_from_dots(const ax_net *net, double l2, const ax_reduction *dots)
{
    double sum = 0.0;
    for (int l = 0; l < net->layer_count; l++)
        sum += dots[l].value;
    return 0.5 * l2 * sum;
}

double ax_net_l2_penalty(ax_net *net, double l2)
{
    /* Every layer's w.w read back with one wait. */
    ax_reduction dots[AX_MAX_LAYERS];
    ax_backend_reduce(net->backend, ax_net_l2_dots(net, dots), dots);
    return ax_net_l2_from_dots(net, l2, dots);
}

double ax_net_l1_penalty(ax_net *net, double l1)
{
    double sum = 0.0;
    for (int l = 0; l < net->layer_count; l++)
        sum += OPS->l1_penalty(net->backend, net->layers[l].weight_count,
                               ax_layer_weights(net, net->parameters, l), 0.0, NULL);
    return l1 * sum;
}

/* Layer l's L1 subgradient, l1 sign(W), added to its weight gradient. */
static void add_l1_gradient(ax_net *net, int l, double l1)
{
    OPS->l1_penalty(net->backend, net->layers[l].weight_count,
                    ax_layer_weights(net, net->parameters, l), l1,
                    ax_layer_weights(net, net->gradients, l));
}

/* first_weights false leaves out the first layer's weight gradient, the
 * one pass over the inputs a backward pass makes (see ax_net_backward_along). */
static double backward(ax_net *net, int64_t rows, const ax_regularization *regularization,
                       bool with_gradient, bool first_weights)
{
    const int last = net->layer_count - 1;
    const double scale = ax_net_loss_scale(net, rows);
    const double l2 = regularization ? regularization->l2 : 0.0;
    const double l1 = regularization ? regularization->l1 : 0.0;
    /* Along a direction the caller adds the penalties (net.h). */
    const bool penalties = first_weights;
    int current = 0;
    const ax_layer *output = &net->layers[last];
    const double nb = (double)rows, nout = (double)output->out;
    double loss = 0.0;
    /* TMVA's FLOP count counts derivative and Hadamard product:
     * the fused gradient does both. */
    AX_PROFILED(
        net, AX_PROFILE_LOSS, last, with_gradient ? 2.0 * nb * nout : 0.0,
        loss = output_loss(net, rows, with_gradient ? net->workspace.delta[current] : NULL, scale) *
               scale);
    if (l2 > 0.0 && penalties)
        AX_PROFILED(net, AX_PROFILE_L2, -1, 0.0, loss += ax_net_l2_penalty(net, l2));
    if (l1 > 0.0 && penalties)
        AX_PROFILED(net, AX_PROFILE_L2, -1, 0.0, loss += ax_net_l1_penalty(net, l1));
    if (!with_gradient)
        return loss;

    /* The fused losses give the output's pre-activation gradient; MSE the
     * output's, which the activation's derivative turns into it. */
    const bool pre_activation =
        !(net->config.loss == AX_LOSS_MSE && output->activation != AX_ACT_IDENTITY);
    output->ops->backward_activation(net, last, net->workspace.delta[current], 1.0, pre_activation,
                                     rows);

    /* the layer whose bias gradient waits for its weight gradient's pass */
    int bias_deferred = -1;
    bool first_made = false; /* the first layer's gradients made from the pooling's delta */
    for (int l = last; l >= 0; l--) {
        const ax_layer *layer = &net->layers[l];
        const void *x = l > 0 ? net->workspace.outputs[l - 1] : net->workspace.current_input;
        if (l == 0 && !first_weights)
            break;
        if (first_made)
            ; /* made at layer 1, below */
        else if (l == bias_deferred)
            layer->ops->backward_weights_bias(net, l, net->workspace.delta[current], x, l2, rows);
        else
            layer->ops->backward_weights(net, l, net->workspace.delta[current], x, l2, rows);
        if (l1 > 0.0)
            AX_PROFILED(net, AX_PROFILE_L2, l, 0.0, add_l1_gradient(net, l, l1));
        if (net->run.gradient_ready)
            net->run.gradient_ready(net->run.gradient_ready_user, l);
        if (l == 0)
            break;
        void *previous = net->workspace.delta[1 - current];
        const double rate = dropout_before(net, regularization, l);
        /* A first layer below a max pooling over its ReLU output: its
         * gradients straight from this layer's delta where the backend has
         * that pass (the pooling's input gradient is then never made) */
        const ax_layer *below = &net->layers[0];
        if (l == 1 && first_weights && rate == 0.0 && layer->ops->kind == AX_LAYER_MAX_POOL &&
            below->activation == AX_ACT_RELU && below->ops->backward_weights_bias_pooled &&
            below->ops->backward_weights_bias_pooled(net, 0, 1, net->workspace.delta[current],
                                                     net->workspace.current_input, l2, rows)) {
            first_made = true;
            continue;
        }
        /* ReLU's derivative in this layer's pass where it has one (max
         * pooling): the layer below then has only its bias gradient to make */
        const bool through_relu = rate == 0.0 && net->layers[l - 1].activation == AX_ACT_RELU &&
                                  layer->ops->backward_input_relu &&
                                  layer->ops->backward_input_relu(
                                      net, l, net->workspace.delta[current], previous, rows);
        if (!through_relu)
            layer->ops->backward_input(net, l, net->workspace.delta[current], previous, rows);
        double kept_scale = 1.0;
        if (rate > 0.0) {
            AX_PROFILED(net, AX_PROFILE_DROPOUT, l - 1, 0.0,
                        OPS->dropout(net->backend, previous, rate, layer_key(regularization, l - 1),
                                     regularization->dropout_first_row, rows, layer->in));
            kept_scale = 1.0 - rate;
        }
        /* A pre-activation delta leaves the layer below only its bias
         * gradient, which a layer that can makes in its weight gradient's
         * pass (when that pass runs: not the first layer's along a search) */
        if (through_relu && net->layers[l - 1].ops->backward_weights_bias &&
            (l - 1 > 0 || first_weights))
            bias_deferred = l - 1;
        else
            net->layers[l - 1].ops->backward_activation(net, l - 1, previous, kept_scale,
                                                        through_relu, rows);
        current = 1 - current;
    }
    return loss;
}

double ax_net_chunked_loss_gradient(ax_net *net, const ax_dataset *data, int64_t chunk,
                                    const ax_regularization *regularization, void *accumulator)
{
    const int64_t rows = data->rows;
    ax_regularization per_chunk = {.size = sizeof per_chunk};
    if (regularization)
        per_chunk = *regularization;
    const double l2 = per_chunk.l2, l1 = per_chunk.l1;
    per_chunk.l2 = per_chunk.l1 = 0.0; /* added once below, not once per chunk */
    double loss = 0.0;
    for (int64_t first = 0; first < rows; first += chunk) {
        const int64_t count = rows - first < chunk ? rows - first : chunk;
        ax_batch batch = {.data = data, .order = NULL, .first = first, .count = count};
        ax_net_load_batch(net, &batch, true);
        per_chunk.dropout_first_row = first;
        (void)ax_net_forward(net, count, &per_chunk); /* full batch: no dropout, no copy */
        /* Each chunk's loss and gradient are means over its rows: weighted by
         * its share of the rows, they sum to the means over all rows. */
        const double weight = (double)count / (double)rows;
        loss += weight * ax_net_backward(net, count, &per_chunk, true);
        if (first == 0) {
            OPS->copy(net->backend, accumulator, net->gradients, net->parameter_count);
            OPS->scale(net->backend, net->parameter_count, weight, accumulator);
        } else {
            OPS->axpy(net->backend, net->parameter_count, weight, net->gradients, accumulator);
        }
    }
    OPS->copy(net->backend, net->gradients, accumulator, net->parameter_count);
    if (l2 > 0.0) {
        loss += ax_net_l2_penalty(net, l2);
        for (int l = 0; l < net->layer_count; l++)
            OPS->axpy(net->backend, net->layers[l].weight_count, l2,
                      ax_layer_weights(net, net->parameters, l), ax_layer_weights(net, net->gradients, l));
    }
    if (l1 > 0.0) {
        loss += ax_net_l1_penalty(net, l1);
        for (int l = 0; l < net->layer_count; l++)
            add_l1_gradient(net, l, l1);
    }
    return loss;
}

double ax_net_backward(ax_net *net, int64_t rows, const ax_regularization *regularization,
                       bool with_gradient)
{
    return backward(net, rows, regularization, with_gradient, true);
}

double ax_net_backward_along(ax_net *net, int64_t rows, const ax_regularization *regularization)
{
    return backward(net, rows, regularization, true, false);
}

void ax_regularization_init(ax_regularization *regularization, size_t size)
{
    const ax_regularization defaults = {.size = sizeof defaults};
    ax_sized_fill(regularization, size, &defaults, sizeof defaults);
}

static ax_status check_regularization(const ax_regularization *regularization)
{
    if (!regularization)
        return AX_STATUS_OK;
    if (!(regularization->l2 >= 0.0 && isfinite(regularization->l2)))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "l2 must be a finite number >= 0, not %g",
                       regularization->l2);
    if (!(regularization->dropout >= 0.0 && regularization->dropout < 1.0))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "dropout must be in [0, 1), not %g",
                       regularization->dropout);
    if (!(regularization->l1 >= 0.0 && isfinite(regularization->l1)))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "l1 must be a finite number >= 0, not %g",
                       regularization->l1);
    return AX_STATUS_OK;
}

ax_status ax_net_check_l1(const ax_net *net, double l1)
{
    if (l1 > 0.0)
        return ax_backend_require(net->backend->ops, AX_BACKEND_FEATURE_STRATEGIES,
                                  "an L1 penalty");
    return AX_STATUS_OK;
}

ax_status ax_net_loss_gradient(ax_net *net, const ax_dataset *data, int64_t first, int64_t rows,
                               const ax_regularization *regularization, double *loss,
                               double *gradient)
{
    if (data && data->stream)
        return ax_fail(AX_STATUS_UNSUPPORTED, "%s is streamed: its rows are not in memory for "
                       "ax_net_loss_gradient (open it whole)", data->source);
    /* The caller's bytes over the defaults: fields an older caller lacks stay
     * at theirs (ax_sized_read). */
    ax_regularization given;
    if (regularization) {
        ax_regularization_init(&given, sizeof given);
        AX_TRY(ax_sized_read(regularization, &given, sizeof given, sizeof given, "regularization",
                             "ax_regularization_defaults"));
        regularization = &given;
    }
    AX_TRY(check_regularization(regularization));
    if (regularization)
        AX_TRY(ax_net_check_l1(net, regularization->l1));
    for (int l = 0; regularization && regularization->dropout_layers && l < net->layer_count; l++)
        if (!(regularization->dropout_layers[l] >= 0.0 && regularization->dropout_layers[l] < 1.0))
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "dropout_layers[%d] must be in [0, 1), not %g", l,
                           regularization->dropout_layers[l]);
    AX_TRY(ax_net_check_data(net, data, "the"));
    if (first < 0 || rows < 1 || first + rows > data->rows)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "rows %lld to %lld are outside %s (%lld rows)",
                       (long long)first + 1, (long long)(first + rows), data->source,
                       (long long)data->rows);
    AX_TRY(ax_net_reserve_shuffled(net, rows, data->csr_values != NULL));
    ax_batch batch = {.data = data, .order = NULL, .first = first, .count = rows};
    ax_net_load_batch(net, &batch, true);
    AX_TRY(ax_net_forward(net, rows, regularization));
    *loss = ax_net_backward(net, rows, regularization, gradient != NULL);
    if (gradient)
        OPS->download_f64(net->backend, gradient, net->gradients, net->parameter_count);
    return OPS->status(net->backend);
}


ax_status ax_net_predict(ax_net *net, const float *inputs, int64_t rows, float *outputs)
{
    if (rows < 0 || (rows > 0 && (!inputs || !outputs)))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "predict needs inputs and outputs for %lld rows",
                       (long long)rows);
    if (rows == 0)
        return AX_STATUS_OK;
    int64_t chunk = ax_net_inference_rows(net, rows);
    AX_TRY(ax_net_reserve(net, chunk));
    int64_t width = net->layers[net->layer_count - 1].out;
    for (int64_t first = 0; first < rows; first += chunk) {
        int64_t count = rows - first < chunk ? rows - first : chunk;
        ax_net_load_inputs(net, inputs, NULL, NULL, first, count);
        (void)ax_net_forward(net, count, NULL); /* no dropout: cannot fail */
        OPS->download_f32(net->backend, outputs + first * width,
                          net->workspace.outputs[net->layer_count - 1], count * width);
    }
    return OPS->status(net->backend);
}

/* Passes over a streamed set of `views` views per image (cuda-convnet2's
 * multiview test), shared by evaluate and predict: the views of an image
 * are consecutive rows, and their softmax outputs are averaged. */

/* Refuses views on a network whose outputs are not probabilities; else
 * reserves the workspace for the images of a chunk, *per_chunk of them. */
static ax_status begin_view_chunks(ax_net *net, int64_t images, int views, bool sparse,
                                   int64_t *per_chunk)
{
    if (views > 1 && net->config.loss != AX_LOSS_CROSS_ENTROPY)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%d views are averaged softmax outputs: the "
                       "network's loss must be cross-entropy (softmax output), not %s", views,
                       ax_loss_name(net->config.loss));
    *per_chunk = ax_net_inference_rows(net, images * views) / views;
    if (*per_chunk < 1)
        *per_chunk = 1;
    /* A sparse set's rows are made dense in the input buffer. */
    return ax_net_reserve_shuffled(net, *per_chunk * views, sparse);
}

/* The batch's rows through the network (with its answers loaded or not),
 * their outputs (rows, output width) copied into outputs. */
static ax_status forward_batch(ax_net *net, const ax_batch *batch, bool with_answers,
                               float *outputs)
{
    net->workspace.loaded_valid = false;
    ax_net_load_batch(net, batch, with_answers);
    ax_net_forward(net, batch->count, NULL);
    OPS->download_f32(net->backend, outputs, net->workspace.outputs[net->layer_count - 1],
                      batch->count * net->layers[net->layer_count - 1].out);
    return OPS->status(net->backend);
}

/* The next `rows` rows of the stream (*window, the stream's) through the
 * network, their outputs (rows, output width) copied into outputs. */
static ax_status forward_stream_rows(ax_net *net, ax_batch_stream *stream, int64_t rows,
                                     float *outputs, ax_dataset **window)
{
    AX_TRY(ax_batch_stream_next(stream, rows, window));
    ax_batch batch = {.data = *window, .order = NULL, .first = 0, .count = rows};
    return forward_batch(net, &batch, true, outputs);
}

/* The mean of output c over image i's views (summed in view order in double). */
static double view_mean(const float *outputs, int64_t i, int views, int64_t width, int64_t c)
{
    double sum = 0.0;
    for (int v = 0; v < views; v++)
        sum += (double)outputs[(i * views + v) * width + c];
    return sum / views;
}

/* The multiview test: the loss is -log of the true class's mean
 * probability and the prediction its argmax (the first of equal ones). */
static ax_status evaluate_views(ax_net *net, const ax_dataset *data, int views,
                                ax_evaluation *out)
{
    const int64_t images = data->rows, classes = net->layers[net->layer_count - 1].out;
    int64_t per_chunk = 0;
    AX_TRY(begin_view_chunks(net, images, views, false, &per_chunk));
    out->confusion = calloc((size_t)(classes * classes), sizeof(int64_t));
    float *outputs = malloc((size_t)(per_chunk * views * classes) * sizeof *outputs);
    double *mean = malloc((size_t)classes * sizeof *mean);
    if (!out->confusion || !outputs || !mean) {
        free(outputs);
        free(mean);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for a %d-view evaluation", views);
    }
    const ax_stream_pass pass = {.training = false};
    ax_status status = ax_batch_stream_begin(data->stream, &pass);
    double loss_sum = 0.0;
    int64_t correct = 0;
    for (int64_t first = 0; first < images && status == AX_STATUS_OK; first += per_chunk) {
        const int64_t count = images - first < per_chunk ? images - first : per_chunk;
        ax_dataset *window = NULL;
        status = forward_stream_rows(net, data->stream, count * views, outputs, &window);
        if (status != AX_STATUS_OK)
            break;
        for (int64_t i = 0; i < count; i++) {
            for (int64_t c = 0; c < classes; c++)
                mean[c] = view_mean(outputs, i, views, classes, c);
            int64_t guess = 0;
            for (int64_t c = 1; c < classes; c++)
                if (mean[c] > mean[guess])
                    guess = c;
            const int32_t truth = window->labels[i * views];
            loss_sum += -log(mean[truth] > 1e-300 ? mean[truth] : 1e-300);
            out->confusion[truth * classes + guess]++;
            correct += truth == guess;
        }
    }
    ax_batch_stream_end(data->stream);
    free(outputs);
    free(mean);
    if (status != AX_STATUS_OK) {
        ax_evaluation_free(out);
        return status;
    }
    out->rows = images;
    out->classes = classes;
    out->loss = loss_sum / (double)images;
    out->accuracy = (double)correct / (double)images;
    return AX_STATUS_OK;
}

ax_status ax_net_predict_dataset(ax_net *net, const ax_dataset *data, ax_predict_rows_fn on_rows,
                                 void *user)
{
    if (!net || !data || !on_rows)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "predict needs a network, data and a callback");
    if (data->rows < 1 || data->features != net->config.input_width)
        return ax_fail(AX_STATUS_BAD_DATA, "%s has %lld rows of %lld features; the network takes "
                       "%lld inputs", data->source, (long long)data->rows,
                       (long long)data->features, (long long)net->config.input_width);
    const int views = data->stream ? ax_batch_stream_views(data->stream) : 1;
    const int64_t images = data->rows, width = net->layers[net->layer_count - 1].out;
    int64_t per_chunk = 0;
    AX_TRY(ax_net_check_sparse(net, data, "the"));
    AX_TRY(begin_view_chunks(net, images, views, data->csr_values != NULL, &per_chunk));
    float *outputs = malloc((size_t)(per_chunk * views * width) * sizeof *outputs);
    float *mean = views > 1 ? malloc((size_t)(per_chunk * width) * sizeof *mean) : NULL;
    if (!outputs || (views > 1 && !mean)) {
        free(outputs);
        free(mean);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for the outputs of %lld rows",
                       (long long)per_chunk);
    }
    ax_status status = AX_STATUS_OK;
    if (data->stream) {
        const ax_stream_pass pass = {.training = false};
        status = ax_batch_stream_begin(data->stream, &pass);
    }
    for (int64_t first = 0; first < images && status == AX_STATUS_OK; first += per_chunk) {
        const int64_t count = images - first < per_chunk ? images - first : per_chunk;
        if (data->stream) {
            ax_dataset *window = NULL;
            status = forward_stream_rows(net, data->stream, count * views, outputs, &window);
        } else if (data->csr_values) { /* sparse: the rows made dense into the input buffer */
            ax_batch batch = {.data = data, .order = NULL, .first = first, .count = count};
            status = forward_batch(net, &batch, false, outputs);
        } else {
            status = ax_net_predict(net, data->feature_values + first * data->features, count,
                                    outputs);
        }
        if (status != AX_STATUS_OK)
            break;
        for (int64_t i = 0; views > 1 && i < count; i++)
            for (int64_t c = 0; c < width; c++)
                mean[i * width + c] = (float)view_mean(outputs, i, views, width, c);
        if (!on_rows(first, count, views > 1 ? mean : outputs, user))
            status = ax_fail(AX_STATUS_INTERRUPTED, "prediction stopped by its caller after %lld "
                             "rows", (long long)first);
    }
    if (data->stream)
        ax_batch_stream_end(data->stream);
    free(outputs);
    free(mean);
    return status;
}

/* ax_net_evaluate into a whole evaluation of this library's size. */
static ax_status evaluate(ax_net *net, const ax_dataset *data, ax_evaluation *out)
{
    AX_TRY(ax_net_check_data(net, data, "the"));
    const int views = data->stream ? ax_batch_stream_views(data->stream) : 1;
    if (views > 1)
        return evaluate_views(net, data, views, out);
    int64_t rows = data->rows;
    int64_t chunk = ax_net_inference_rows(net, rows);
    AX_TRY(ax_net_reserve_shuffled(net, chunk, data->csr_values != NULL));
    const bool streamed = data->stream != NULL;
    int64_t classes = data->labels || streamed ? net->layers[net->layer_count - 1].out : 0;
    if (classes > 0) {
        out->confusion = calloc((size_t)(classes * classes), sizeof(int64_t));
        if (!out->confusion)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for a confusion matrix");
    }
    /* A streamed set is read in its order, centre-cropped, a chunk at a time. */
    const ax_stream_pass pass = {.training = false};
    ax_status status = streamed ? ax_batch_stream_begin(data->stream, &pass) : AX_STATUS_OK;
    double loss_sum = 0.0;
    int64_t correct = 0;
    for (int64_t first = 0; first < rows && status == AX_STATUS_OK; first += chunk) {
        int64_t count = rows - first < chunk ? rows - first : chunk;
        ax_batch batch = {.data = data, .order = NULL, .first = first, .count = count};
        if (streamed) {
            ax_dataset *window = NULL;
            status = ax_batch_stream_next(data->stream, count, &window);
            if (status != AX_STATUS_OK)
                break;
            batch = (ax_batch){.data = window, .order = NULL, .first = 0, .count = count};
            net->workspace.loaded_valid = false; /* new rows where the last ones were */
        }
        ax_net_load_batch(net, &batch, true);
        (void)ax_net_forward(net, count, NULL); /* no dropout: cannot fail */
        loss_sum += ax_net_data_loss(net, count) * (double)count;
        if (classes > 0) {
            OPS->argmax_rows(net->backend, net->workspace.outputs[net->layer_count - 1],
                             net->workspace.predicted, count, classes);
            for (int64_t r = 0; r < count; r++) {
                int32_t truth = batch.data->labels[batch.first + r],
                        guess = net->workspace.predicted[r];
                out->confusion[truth * classes + guess]++;
                correct += truth == guess;
            }
        }
    }
    if (streamed)
        ax_batch_stream_end(data->stream);
    if (status != AX_STATUS_OK) {
        ax_evaluation_free(out);
        return status;
    }
    /* A failed device's outputs are void: its loss is NaN, not divergence. */
    status = OPS->status(net->backend);
    if (status != AX_STATUS_OK) {
        ax_evaluation_free(out);
        return status;
    }
    out->rows = rows;
    out->classes = classes;
    out->loss = loss_sum / (double)rows;
    out->accuracy = classes > 0 ? (double)correct / (double)rows : NAN;
    return AX_STATUS_OK;
}

/* The caller's evaluation holds the confusion pointer (an older, shorter one may not). */
static bool holds_confusion(const ax_evaluation *evaluation)
{
    return ax_sized_output_holds(evaluation, offsetof(ax_evaluation, confusion) +
                                                 sizeof evaluation->confusion);
}

ax_status ax_net_evaluate(ax_net *net, const ax_dataset *data, ax_evaluation *out)
{
    AX_TRY(ax_sized_output_check(out, sizeof *out, "an evaluation", "ax_evaluation_empty"));
    ax_evaluation whole = ax_evaluation_empty();
    ax_status status = evaluate(net, data, &whole);
    if (!holds_confusion(out))
        ax_evaluation_free(&whole); /* the caller could never free it */
    ax_sized_output_write(out, &whole, sizeof whole);
    return status;
}

void ax_evaluation_free(ax_evaluation *evaluation)
{
    if (!evaluation || !holds_confusion(evaluation))
        return;
    free(evaluation->confusion);
    evaluation->confusion = NULL;
}

double ax_net_train_flops(const ax_net *net, int64_t rows)
{
    /* TMVA's FLOP count, layer by layer (a dense layer's: 6 nb nl nl-1 + 4 nl nb
     * - nl (nl-1 + 1) - nb nl-1). */
    double total = 0.0;
    for (int l = 0; l < net->layer_count; l++)
        total += net->layers[l].ops->flops(&net->layers[l], rows, AX_LAYER_WORK_TRAIN);
    return total;
}
