/* layer.h: the table of operations each kind of layer provides, and a layer
 * of a network: its kind, its settings and its view into the arenas. The
 * network (propagate.c) is a sequence of layers and calls only this table;
 * a kind of layer is one file, layer_<kind>.c, that fills it, calling the
 * backend table for its work (darknet's one file per layer kind, llm.c's
 * layers as views into one parameter allocation). */
#ifndef AX_CORE_LAYER_H
#define AX_CORE_LAYER_H

#include <stdbool.h>
#include <stddef.h>

#include "axon.h"
#include "base/random.h"

typedef struct ax_layer ax_layer;
typedef struct ax_layer_ops ax_layer_ops;
struct ax_backend_ops; /* backend/backend.h */

/* A tensor of a layer's block as a model file stores it, e.g. dense's
 * "weight" (out, in) at the block's start. */
enum { AX_LAYER_MAX_TENSORS = 4 };
typedef struct ax_layer_tensor {
    const char *name;  /* "weight": the file names it "layers.N.weight" */
    int rank;          /* 1 to 4 */
    int64_t shape[4];
    int64_t offset;    /* into the arena, in reals */
} ax_layer_tensor;

/* What a row holds between layers: an image (height, width, channels) in
 * (row, column, channel) order, or, when image is false, `channels` values
 * with height = width = 1 (a dense layer's outputs, or an input that is no
 * image). The values per row are height * width * channels. */
typedef struct ax_layer_shape {
    int64_t height, width, channels;
    bool image;
} ax_layer_shape;

/* Values per row of a shape. */
static inline int64_t ax_layer_shape_values(ax_layer_shape shape)
{
    return shape.height * shape.width * shape.channels;
}

/* The work a FLOP count covers, by TMVA's FLOP count (ax_net_train_flops). */
typedef enum ax_layer_work {
    AX_LAYER_WORK_TRAIN,    /* one forward and backward pass, TMVA's per-layer count */
    AX_LAYER_WORK_PRODUCTS, /* the part of that count for the products that read the layer's
                               input: forward, weight gradient and input gradient */
    AX_LAYER_WORK_FORWARD_PRODUCT, /* the forward product alone (what the profiler counts) */
    AX_LAYER_WORK_WEIGHT_GRADIENT, /* the weight-gradient product alone */
} ax_layer_work;

struct ax_layer {
    const ax_layer_ops *ops;
    ax_layer_spec spec;        /* the kind and its settings, as configured */
    ax_activation activation;  /* applied last (every kind so far ends in one) */
    int64_t in, out;           /* values per row in and out */
    ax_layer_shape in_shape, out_shape; /* the same as shapes */
    /* The layer's block of every arena (parameters, gradients, optimizer
     * state), in reals: [offset, offset + parameter_count). */
    int64_t offset, parameter_count;
    int64_t weight_offset, weight_count; /* the weights L2 decays, inside the block */
    int64_t bias_offset;                 /* the bias (out), inside the block */
    /* Its part of net->workspace.scratch (ops->scratch_reals reals from here), set by
     * ax_net_reserve; and what a kind keeps there between passes: the input
     * and rows whose convolution columns it holds (NULL: none), so that the
     * weight gradient reuses the forward pass's columns. */
    int64_t scratch_offset;
    const void *columns_input;
    int64_t columns_rows;
};

struct ax_layer_ops {
    ax_layer_kind kind;
    const char *name;

    /* --- the layout text and the settings --------------------------------- */
    /* Whether item (one comma-separated part of a layout) is in this kind's
     * syntax, e.g. "128:relu" for dense. */
    bool (*claims)(const char *item);
    /* Parses item into spec; output: the network's last layer; messages
     * start with where ("layout '...': layer 2"). */
    ax_status (*parse)(const char *item, bool output, const char *where, ax_layer_spec *spec);
    /* Writes spec as it is parsed ("128:relu"); snprintf's return value. */
    int (*format)(const ax_layer_spec *spec, char *text, size_t capacity);
    /* Refuses settings out of range; index counts from 0, output: the last layer. */
    ax_status (*check)(const ax_layer_spec *spec, int index, bool output);
    /* The activation the layer ends in. */
    ax_activation (*activation)(const ax_layer_spec *spec);
    /* Refuses an input shape the layer cannot take (a kernel larger than
     * its padded input, an image layer after a dense one), naming layer
     * index + 1 and the shapes; NULL when every shape fits. */
    ax_status (*check_input)(const ax_layer_spec *spec, int index, ax_layer_shape in);
    /* The shape out of the layer for shape `in` in (one that passed
     * check_input, or any shape for parameters' sake). */
    ax_layer_shape (*output_shape)(const ax_layer_spec *spec, ax_layer_shape in);
    /* Parameters of the layer for shape `in` in; in double, so that a
     * layout claimed by a file cannot overflow before it is refused. */
    double (*parameters)(const ax_layer_spec *spec, ax_layer_shape in);
    /* Fills layer's shapes, widths and its view, the block starting at
     * layer->offset (set by the caller): parameter_count, weights, bias. */
    void (*lay_out)(ax_layer *layer, ax_layer_shape in);
    /* Reals of scratch memory (net->workspace.scratch) its passes need for `rows`
     * rows; NULL for none. */
    int64_t (*scratch_reals)(const ax_layer *layer, int64_t rows);
    /* The backend operations the kind needs that ops lacks (their names,
     * e.g. "im2col and col2im"), or NULL when it has them all; NULL for a
     * kind that needs only the mandatory ones. */
    const char *(*missing_operations)(const struct ax_backend_ops *ops);

    /* --- parameters --------------------------------------------------------- */
    /* The layer's tensors as model files name and shape them (at most
     * AX_LAYER_MAX_TENSORS); returns how many. */
    int (*tensors)(const ax_layer *layer, ax_layer_tensor *tensors);
    /* Draws the initial values of the layer's block in values (the whole
     * arena, float64), in an order fixed by the seed alone. */
    void (*init)(const ax_layer *layer, ax_init init, double init_range, ax_rng *rng,
                 double *values);
    /* FLOPs of one kind of work over `rows` rows. */
    double (*flops)(const ax_layer *layer, int64_t rows, ax_layer_work work);

    /* --- passes (index: the layer's place in net->layers; timed there) ------- */
    /* z (rows, out) = the layer's activated outputs for x (rows, in). */
    void (*forward)(ax_net *net, int index, const void *x, void *z, int64_t rows);
    /* delta (rows, out) holds d loss / d outputs (d loss / d pre-activations
     * when pre_activation): makes it d loss / d pre-activations, in place,
     * scaled by kept_scale (dropout's), and writes the bias gradient. */
    void (*backward_activation)(ax_net *net, int index, void *delta, double kept_scale,
                                bool pre_activation, int64_t rows);
    /* The weight gradient from delta (rows, out), pre-activation, and the
     * layer's input x (rows, in), plus l2 W. */
    void (*backward_weights)(ax_net *net, int index, const void *delta, const void *x,
                             double l2, int64_t rows);
    /* previous (rows, in) = d loss / d x for delta (rows, out), pre-activation. */
    void (*backward_input)(ax_net *net, int index, const void *delta, void *previous,
                           int64_t rows);
    /* Optional (NULL: none): backward_input's previous with the ReLU
     * derivative of the layer below (whose output x is) applied, making it
     * d loss / d that layer's pre-activations in the same pass; false, with
     * nothing written, when the backend cannot (the caller then runs
     * backward_input and the derivative). */
    bool (*backward_input_relu)(ax_net *net, int index, const void *delta, void *previous,
                                int64_t rows);
    /* Optional (NULL: none): backward_weights and the bias gradient of a
     * delta that is already pre-activation (backward_input_relu made it so),
     * in one pass over delta where the backend has one: the caller then
     * skips backward_activation, whose only work would be that gradient. */
    void (*backward_weights_bias)(ax_net *net, int index, const void *delta, const void *x,
                                  double l2, int64_t rows);
    /* Optional (NULL: none): for a first layer below a max pooling
     * (pool_index) over its ReLU output, backward_weights_bias straight
     * from the pooling's delta (pool_delta), the pooling's input gradient
     * never made whole, where the backend has the pass (backend.h:
     * conv_backward_weights_bias_pooled); false, with nothing done, where
     * it does not: the caller then runs the two layers' passes. */
    bool (*backward_weights_bias_pooled)(ax_net *net, int index, int pool_index,
                                         const void *pool_delta, const void *x, double l2,
                                         int64_t rows);
    /* Optional (NULL: none): for a first layer with ReLU below a 2x2 max
     * pooling (pool_index), the forward passes of both in one where the
     * backend has it (backend.h: conv_forward_relu_max_pool), the window
     * codes kept for backward_weights_bias_pooled, which then reads them
     * instead of this layer's output; false, with nothing done, where it
     * does not: the caller then runs the two layers' forward passes. */
    bool (*forward_max_pool)(ax_net *net, int index, int pool_index, const void *x, int64_t rows);

    /* --- capability: outputs linear in the weights ------------------------- */
    /* Kinds whose pre-activations are a product of the input and the
     * weights, x M(W)^T, plus the bias, fill these; NULL otherwise. Then
     * along a search direction D the pre-activations are x W^T + a x D^T, and
     * the line searches keep both products instead of reading x at each
     * trial step (propagate_along.c). */
    /* out (rows, out) = the product of x (rows, in) and the weights block of
     * arena (the parameters, or a direction in their layout). Timed there. */
    void (*linear_product)(ax_net *net, int index, const void *x, const void *arena, void *out,
                           int64_t rows);
    /* z (rows, out) holds pre-activations without the bias: adds the bias and
     * applies the activation, in place. Not timed (the caller times it). */
    void (*bias_activation)(ax_net *net, int index, void *z, int64_t rows);
};

/* The table of a kind; NULL for a kind that does not exist. */
const ax_layer_ops *ax_layer_ops_of(ax_layer_kind kind);

/* Fills a layer's weights and biases (its block of values) for init (AUTO:
 * He before ReLU, else Xavier) with the fans of its weights: He draws
 * N(0, 2 / fan_in), Xavier U(+-sqrt(6 / (fan_in + fan_out))), both with zero
 * biases; UNIFORM draws weights then biases from U(+-init_range). */
void ax_layer_init_weights(const ax_layer *layer, ax_init init, double init_range, double fan_in,
                           double fan_out, int64_t biases, ax_rng *rng, double *values);

/* Layouts (layer.c) */
/* Checks every layer of config (kind, settings, count). */
ax_status ax_layout_check(const ax_net_config *config);
/* Values per row out of layer `layer` of a layout that passed the check. */
int64_t ax_layout_width(const ax_net_config *config, int layer);
/* The shape of config's input: its image shape, or input_width values. */
ax_layer_shape ax_layout_input_shape(const ax_net_config *config);
/* Writes config->input_shape as "HxWxC" (model files, checkpoints); false,
 * writing "", when the input is no image. */
bool ax_layout_input_shape_text(const ax_net_config *config, char *text, size_t capacity);
/* Reads "HxWxC" into config->input_shape (each 1 to 2^24); the layout
 * check judges whether it fits input_width. */
ax_status ax_layout_input_shape_parse(const char *text, ax_net_config *config);
/* Parameters of a layout that may not have passed the check, in double (0
 * for a layer of an unknown kind). */
double ax_layout_parameters(const ax_net_config *config);
/* Writes the layers as parsed ("128:relu,10:softmax", separator ","), or
 * with the input width first ("784-128:relu-10:softmax", separator "-"). */
void ax_layout_text(const ax_net_config *config, bool with_input, char *text, size_t capacity);

extern const ax_layer_ops ax_layer_dense_ops;
extern const ax_layer_ops ax_layer_conv_ops;
extern const ax_layer_ops ax_layer_max_pool_ops;
extern const ax_layer_ops ax_layer_average_pool_ops;

#endif
