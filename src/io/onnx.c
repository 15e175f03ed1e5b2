/* onnx.c: an axon network as an ONNX ModelProto (see onnx.h), field
 * numbers from onnx.proto (ONNX 1.12). The graph is planned first as a list
 * of nodes (plan_graph), then encoded (write_model), so that the last
 * node's output can be the graph's "output".
 *
 * Layouts: axon holds an image as (row, column, channel) and a dense layer
 * after a feature map reads it flattened in that order; ONNX's Conv and
 * pooling want (N, C, H, W). The graph transposes the input to NCHW before
 * the first convolution or pooling, and back to NHWC before flattening for
 * a dense layer, so every weight goes into the file as axon holds it. */
#include "io/onnx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "base/error.h"
#include "io/protobuf.h"

enum {
    MOST_NODES = 5 * AX_MAX_LAYERS + 2, /* per layer: transpose, flatten, op, activation */
    MOST_ATTRIBUTES = 4,
    MOST_INTS = 4,
    NAME_SIZE = 48,
};

/* onnx.proto's enums and field numbers. */
enum {
    TENSOR_FLOAT = 1,
    ATTRIBUTE_INT = 2,
    ATTRIBUTE_INTS = 7,
};
enum { MODEL_IR_VERSION = 1, MODEL_PRODUCER_NAME = 2, MODEL_PRODUCER_VERSION = 3,
       MODEL_DOC_STRING = 6, MODEL_GRAPH = 7, MODEL_OPSET_IMPORT = 8, MODEL_METADATA = 14 };
enum { OPSET_DOMAIN = 1, OPSET_VERSION = 2 };
enum { ENTRY_KEY = 1, ENTRY_VALUE = 2 };
enum { GRAPH_NODE = 1, GRAPH_NAME = 2, GRAPH_INITIALIZER = 5, GRAPH_INPUT = 11,
       GRAPH_OUTPUT = 12 };
enum { NODE_INPUT = 1, NODE_OUTPUT = 2, NODE_NAME = 3, NODE_OP_TYPE = 4, NODE_ATTRIBUTE = 5 };
enum { ATTRIBUTE_NAME = 1, ATTRIBUTE_I = 3, ATTRIBUTE_INTS_FIELD = 8, ATTRIBUTE_TYPE = 20 };
enum { TENSOR_DIMS = 1, TENSOR_DATA_TYPE = 2, TENSOR_NAME = 8, TENSOR_RAW_DATA = 9 };
enum { VALUE_NAME = 1, VALUE_TYPE = 2 };
enum { TYPE_TENSOR = 1, TENSOR_TYPE_ELEM = 1, TENSOR_TYPE_SHAPE = 2 };
enum { SHAPE_DIM = 1, DIM_VALUE = 1, DIM_PARAM = 2 };

typedef struct attribute {
    const char *name;
    bool list;                 /* INTS, else INT */
    int count;
    int64_t values[MOST_INTS];
} attribute;

typedef struct node {
    const char *op;
    char inputs[3][NAME_SIZE];
    int input_count;
    char output[NAME_SIZE];
    attribute attributes[MOST_ATTRIBUTES];
    int attribute_count;
} node;

/* Where the tensor flowing through the graph stands. */
typedef enum layout { LAYOUT_FLAT, LAYOUT_NHWC, LAYOUT_NCHW } layout;

typedef struct plan {
    node nodes[MOST_NODES];
    int count;
    char current[NAME_SIZE]; /* the name of the tensor the next node reads */
    layout current_layout;
} plan;

static node *add_node(plan *graph, const char *op, const char *output)
{
    node *n = &graph->nodes[graph->count++];
    memset(n, 0, sizeof *n);
    n->op = op;
    snprintf(n->inputs[0], NAME_SIZE, "%s", graph->current);
    n->input_count = 1;
    snprintf(n->output, NAME_SIZE, "%s", output);
    snprintf(graph->current, NAME_SIZE, "%s", output);
    return n;
}

static void add_input(node *n, const char *name)
{
    snprintf(n->inputs[n->input_count++], NAME_SIZE, "%s", name);
}

static void add_ints(node *n, const char *name, int count, const int64_t *values)
{
    attribute *a = &n->attributes[n->attribute_count++];
    a->name = name;
    a->list = true;
    a->count = count;
    memcpy(a->values, values, (size_t)count * sizeof *values);
}

static void add_int(node *n, const char *name, int64_t value)
{
    add_ints(n, name, 1, &value);
    n->attributes[n->attribute_count - 1].list = false;
}

static void transpose(plan *graph, int layer, layout to)
{
    static const int64_t to_nchw[4] = {0, 3, 1, 2}, to_nhwc[4] = {0, 2, 3, 1};
    char name[NAME_SIZE];
    snprintf(name, sizeof name, "layers.%d.%s", layer, to == LAYOUT_NCHW ? "nchw" : "nhwc");
    add_ints(add_node(graph, "Transpose", name), "perm", 4, to == LAYOUT_NCHW ? to_nchw : to_nhwc);
    graph->current_layout = to;
}

/* A feature map as axon's flat rows: NHWC, then (N, H * W * C). */
static void flatten(plan *graph, int layer)
{
    if (graph->current_layout == LAYOUT_NCHW)
        transpose(graph, layer, LAYOUT_NHWC);
    if (graph->current_layout == LAYOUT_NHWC) {
        char name[NAME_SIZE];
        snprintf(name, sizeof name, "layers.%d.flatten", layer);
        add_int(add_node(graph, "Flatten", name), "axis", 1);
        graph->current_layout = LAYOUT_FLAT;
    }
}

static ax_status add_activation(plan *graph, int layer, ax_activation activation)
{
    static const char *const ops[] = {
        [AX_ACT_IDENTITY] = NULL, [AX_ACT_SIGMOID] = "Sigmoid", [AX_ACT_TANH] = "Tanh",
        [AX_ACT_RELU] = "Relu", [AX_ACT_SOFTMAX] = "Softmax"};
    if ((unsigned)activation >= sizeof ops / sizeof *ops)
        return ax_fail(AX_STATUS_UNSUPPORTED, "layer %d: activation %d has no ONNX operator here",
                       layer + 1, (int)activation);
    if (activation == AX_ACT_IDENTITY)
        return AX_STATUS_OK;
    if (activation == AX_ACT_SOFTMAX && graph->current_layout != LAYOUT_FLAT)
        return ax_fail(AX_STATUS_UNSUPPORTED, "layer %d: softmax over a feature map", layer + 1);
    char name[NAME_SIZE];
    snprintf(name, sizeof name, "layers.%d.%s", layer, ops[activation]);
    node *n = add_node(graph, ops[activation], name);
    if (activation == AX_ACT_SOFTMAX)
        add_int(n, "axis", 1); /* over each row's outputs, as axon's */
    return AX_STATUS_OK;
}

static void add_parameters(node *n, int layer)
{
    char name[NAME_SIZE];
    snprintf(name, sizeof name, "layers.%d.weight", layer);
    add_input(n, name);
    snprintf(name, sizeof name, "layers.%d.bias", layer);
    add_input(n, name);
}

static ax_status plan_layer(plan *graph, int index, const ax_onnx_layer *layer)
{
    const ax_layer_spec *spec = &layer->spec;
    char name[NAME_SIZE];
    const bool image_kind = spec->kind == AX_LAYER_CONV || spec->kind == AX_LAYER_MAX_POOL ||
                            spec->kind == AX_LAYER_AVERAGE_POOL;
    const bool weighted = spec->kind == AX_LAYER_DENSE || spec->kind == AX_LAYER_CONV;
    if (weighted && (!layer->weight || !layer->bias))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "layer %d: no weights given", index + 1);
    if (image_kind) {
        if (graph->current_layout == LAYOUT_FLAT)
            return ax_fail(AX_STATUS_UNSUPPORTED, "layer %d (%s) has no image input", index + 1,
                           spec->kind == AX_LAYER_CONV ? "a convolution" : "a pooling");
        if (graph->current_layout == LAYOUT_NHWC)
            transpose(graph, index, LAYOUT_NCHW);
    }
    switch (spec->kind) {
    case AX_LAYER_DENSE: {
        flatten(graph, index);
        snprintf(name, sizeof name, "layers.%d.Gemm", index);
        node *n = add_node(graph, "Gemm", name); /* x W^T + b, W (units, in) as axon's */
        add_parameters(n, index);
        add_int(n, "transB", 1);
        break;
    }
    case AX_LAYER_CONV: {
        snprintf(name, sizeof name, "layers.%d.Conv", index);
        node *n = add_node(graph, "Conv", name);
        add_parameters(n, index);
        const int64_t kernel[2] = {spec->conv.kernel_height, spec->conv.kernel_width};
        const int64_t strides[2] = {spec->conv.stride, spec->conv.stride};
        const int64_t p = spec->conv.padding, pads[4] = {p, p, p, p};
        add_ints(n, "kernel_shape", 2, kernel);
        add_ints(n, "strides", 2, strides);
        add_ints(n, "pads", 4, pads);
        break;
    }
    case AX_LAYER_MAX_POOL:
    case AX_LAYER_AVERAGE_POOL: {
        const bool max = spec->kind == AX_LAYER_MAX_POOL;
        snprintf(name, sizeof name, "layers.%d.%s", index, max ? "MaxPool" : "AveragePool");
        node *n = add_node(graph, max ? "MaxPool" : "AveragePool", name);
        /* No padding and ceil_mode 0: floor((in - window) / stride) + 1, as axon's. */
        const int64_t kernel[2] = {spec->pool.window, spec->pool.window};
        const int64_t strides[2] = {spec->pool.stride, spec->pool.stride};
        add_ints(n, "kernel_shape", 2, kernel);
        add_ints(n, "strides", 2, strides);
        break;
    }
    default:
        return ax_fail(AX_STATUS_UNSUPPORTED, "layer %d: a kind of layer (%d) ONNX export does not "
                       "know", index + 1, (int)spec->kind);
    }
    return add_activation(graph, index, layer->activation);
}

static ax_status plan_graph(const ax_onnx_model *model, plan *graph)
{
    if (model->layer_count < 1 || model->layer_count > AX_MAX_LAYERS)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%d layers: 1 to %d can be exported",
                       model->layer_count, AX_MAX_LAYERS);
    graph->count = 0;
    snprintf(graph->current, NAME_SIZE, "input");
    graph->current_layout = model->image ? LAYOUT_NHWC : LAYOUT_FLAT;
    for (int l = 0; l < model->layer_count; l++)
        AX_TRY(plan_layer(graph, l, &model->layers[l]));
    flatten(graph, model->layer_count); /* a network ending in a feature map gives flat rows */
    /* The last node writes the graph's output. */
    snprintf(graph->nodes[graph->count - 1].output, NAME_SIZE, "output");
    return AX_STATUS_OK;
}

/* ------------------------------------------------------------ encoding */

static void write_attribute(ax_pb_buffer *out, const attribute *a)
{
    ax_pb_mark mark = ax_pb_begin(out, NODE_ATTRIBUTE);
    ax_pb_string(out, ATTRIBUTE_NAME, a->name);
    if (a->list)
        for (int i = 0; i < a->count; i++)
            ax_pb_varint(out, ATTRIBUTE_INTS_FIELD, (uint64_t)a->values[i]);
    else
        ax_pb_varint(out, ATTRIBUTE_I, (uint64_t)a->values[0]);
    ax_pb_varint(out, ATTRIBUTE_TYPE, a->list ? ATTRIBUTE_INTS : ATTRIBUTE_INT);
    ax_pb_end(out, mark);
}

static void write_node(ax_pb_buffer *out, const node *n)
{
    ax_pb_mark mark = ax_pb_begin(out, GRAPH_NODE);
    for (int i = 0; i < n->input_count; i++)
        ax_pb_string(out, NODE_INPUT, n->inputs[i]);
    ax_pb_string(out, NODE_OUTPUT, n->output);
    ax_pb_string(out, NODE_NAME, n->output);
    ax_pb_string(out, NODE_OP_TYPE, n->op);
    for (int i = 0; i < n->attribute_count; i++)
        write_attribute(out, &n->attributes[i]);
    ax_pb_end(out, mark);
}

static void write_tensor(ax_pb_buffer *out, const char *name, int rank, const int64_t *dims,
                         const float *values)
{
    int64_t count = 1;
    ax_pb_mark mark = ax_pb_begin(out, GRAPH_INITIALIZER);
    for (int d = 0; d < rank; d++) {
        ax_pb_varint(out, TENSOR_DIMS, (uint64_t)dims[d]);
        count *= dims[d];
    }
    ax_pb_varint(out, TENSOR_DATA_TYPE, TENSOR_FLOAT);
    ax_pb_string(out, TENSOR_NAME, name);
    ax_pb_float_bytes(out, TENSOR_RAW_DATA, values, (size_t)count);
    ax_pb_end(out, mark);
}

static void write_layer_tensors(ax_pb_buffer *out, int index, const ax_onnx_layer *layer)
{
    const ax_layer_spec *spec = &layer->spec;
    char name[NAME_SIZE];
    int64_t dims[4], outputs;
    int rank;
    if (spec->kind == AX_LAYER_DENSE) {
        outputs = spec->dense.units;
        dims[0] = outputs;
        dims[1] = layer->in_shape[0] * layer->in_shape[1] * layer->in_shape[2];
        rank = 2;
    } else if (spec->kind == AX_LAYER_CONV) {
        outputs = spec->conv.filters;
        dims[0] = outputs;
        dims[1] = layer->in_shape[2];
        dims[2] = spec->conv.kernel_height;
        dims[3] = spec->conv.kernel_width;
        rank = 4;
    } else {
        return; /* pooling: no parameters */
    }
    snprintf(name, sizeof name, "layers.%d.weight", index);
    write_tensor(out, name, rank, dims, layer->weight);
    snprintf(name, sizeof name, "layers.%d.bias", index);
    write_tensor(out, name, 1, &outputs, layer->bias);
}

/* A float tensor's type with its dims; a dim of 0 is the free batch "N". */
static void write_value_info(ax_pb_buffer *out, int field, const char *name, int rank,
                             const int64_t *dims)
{
    ax_pb_mark value = ax_pb_begin(out, field);
    ax_pb_string(out, VALUE_NAME, name);
    ax_pb_mark type = ax_pb_begin(out, VALUE_TYPE);
    ax_pb_mark tensor = ax_pb_begin(out, TYPE_TENSOR);
    ax_pb_varint(out, TENSOR_TYPE_ELEM, TENSOR_FLOAT);
    ax_pb_mark shape = ax_pb_begin(out, TENSOR_TYPE_SHAPE);
    for (int d = 0; d < rank; d++) {
        ax_pb_mark dim = ax_pb_begin(out, SHAPE_DIM);
        if (dims[d] > 0)
            ax_pb_varint(out, DIM_VALUE, (uint64_t)dims[d]);
        else
            ax_pb_string(out, DIM_PARAM, "N");
        ax_pb_end(out, dim);
    }
    ax_pb_end(out, shape);
    ax_pb_end(out, tensor);
    ax_pb_end(out, type);
    ax_pb_end(out, value);
}

static void write_graph(ax_pb_buffer *out, const ax_onnx_model *model, const plan *graph)
{
    ax_pb_mark mark = ax_pb_begin(out, MODEL_GRAPH);
    for (int i = 0; i < graph->count; i++)
        write_node(out, &graph->nodes[i]);
    ax_pb_string(out, GRAPH_NAME, "axon");
    for (int l = 0; l < model->layer_count; l++)
        write_layer_tensors(out, l, &model->layers[l]);
    const int64_t image[4] = {0, model->input_shape[0], model->input_shape[1],
                              model->input_shape[2]};
    const int64_t features[2] = {
        0, model->input_shape[0] * model->input_shape[1] * model->input_shape[2]};
    if (model->image)
        write_value_info(out, GRAPH_INPUT, "input", 4, image);
    else
        write_value_info(out, GRAPH_INPUT, "input", 2, features);
    const int64_t outputs[2] = {0, model->output_width};
    write_value_info(out, GRAPH_OUTPUT, "output", 2, outputs);
    ax_pb_end(out, mark);
}

static void write_entry(ax_pb_buffer *out, const char *key, const char *value)
{
    ax_pb_mark mark = ax_pb_begin(out, MODEL_METADATA);
    ax_pb_string(out, ENTRY_KEY, key);
    ax_pb_string(out, ENTRY_VALUE, value);
    ax_pb_end(out, mark);
}

static void write_model(ax_pb_buffer *out, const ax_onnx_model *model, const plan *graph)
{
    ax_pb_varint(out, MODEL_IR_VERSION, AX_ONNX_IR_VERSION);
    ax_pb_string(out, MODEL_PRODUCER_NAME, "axon");
    ax_pb_string(out, MODEL_PRODUCER_VERSION, AX_VERSION);
    if (model->description)
        ax_pb_string(out, MODEL_DOC_STRING, model->description);
    write_graph(out, model, graph);
    ax_pb_mark opset = ax_pb_begin(out, MODEL_OPSET_IMPORT);
    ax_pb_string(out, OPSET_DOMAIN, "");
    ax_pb_varint(out, OPSET_VERSION, AX_ONNX_OPSET);
    ax_pb_end(out, opset);
    write_entry(out, "input_layout", model->image ? "NHWC" : "NC");
}

/* Parameters of the model in bytes, in double so that no count overflows. */
static double parameter_bytes(const ax_onnx_model *model)
{
    double bytes = 0;
    for (int l = 0; l < model->layer_count; l++) {
        const ax_onnx_layer *layer = &model->layers[l];
        const double in = (double)layer->in_shape[0] * (double)layer->in_shape[1] *
                          (double)layer->in_shape[2];
        if (layer->spec.kind == AX_LAYER_DENSE)
            bytes += 4.0 * (double)layer->spec.dense.units * (in + 1);
        else if (layer->spec.kind == AX_LAYER_CONV)
            bytes += 4.0 * (double)layer->spec.conv.filters *
                     ((double)layer->in_shape[2] * (double)layer->spec.conv.kernel_height *
                          (double)layer->spec.conv.kernel_width + 1);
    }
    return bytes;
}

ax_status ax_onnx_write(const char *path, const ax_onnx_model *model)
{
    /* protobuf parsers refuse a message of 2 GiB or more; ONNX then wants
     * the weights in external files, which this writer does not make. */
    if (parameter_bytes(model) > 2147483647.0 - 1048576.0)
        return ax_fail(AX_STATUS_UNSUPPORTED, "%s: the weights take %.0f MB, more than an ONNX "
                       "file holds (2 GiB) without external data, which axon does not write",
                       path, parameter_bytes(model) / 1e6);
    plan *nodes = malloc(sizeof *nodes); /* ~130 KB: off the stack */
    if (!nodes)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory planning the ONNX graph", path);
    ax_status status = plan_graph(model, nodes);
    if (status != AX_STATUS_OK) {
        free(nodes);
        return ax_fail_context(status, "%s", path);
    }
    ax_pb_buffer out = ax_pb_init();
    write_model(&out, model, nodes);
    free(nodes);
    if (ax_pb_failed(&out)) {
        ax_pb_free(&out);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory building the ONNX model", path);
    }
    const void *parts[1] = {out.bytes};
    const size_t sizes[1] = {out.size};
    ax_atomic_file file;
    status = ax_file_write_atomic(path, parts, sizes, 1, &file);
    ax_pb_free(&out);
    if (file.failed == AX_ATOMIC_STEP_CREATE)
        return ax_fail(status, "%s: cannot create %s: %s", path, file.temporary,
                       strerror(file.error));
    if (file.failed == AX_ATOMIC_STEP_WRITE || file.failed == AX_ATOMIC_STEP_RENAME)
        return ax_fail(status, "%s: cannot write: %s", path, strerror(file.error));
    return status;
}
