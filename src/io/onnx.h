/* onnx.h: writes a network as an ONNX model (https://onnx.ai, onnx.proto,
 * IR version 7, operator set 13) from a description that knows nothing of
 * the network object: each layer's kind and settings (axon.h's public
 * ax_layer_spec), the shape of its input, and its weights as float32. The
 * core (src/core/model_onnx.c) fills the description from a network, so
 * this file stays below the core in the layering.
 *
 * Why a hand-written protobuf writer (src/io/protobuf.c) and not the onnx
 * Python package: `axon export` runs where Python does not, and a model is
 * a handful of message types whose field numbers onnx.proto fixes. */
#ifndef AX_IO_ONNX_H
#define AX_IO_ONNX_H

#include <stdbool.h>
#include <stdint.h>

#include "axon.h"

#define AX_ONNX_IR_VERSION 7 /* ONNX 1.8, the first with operator set 13 */
#define AX_ONNX_OPSET 13

/* One layer, input to output. */
typedef struct ax_onnx_layer {
    ax_layer_spec spec;        /* the kind and its settings, as the layout gives them */
    ax_activation activation;  /* applied last; AX_ACT_IDENTITY for pooling */
    int64_t in_shape[3];       /* (height, width, channels) of the layer's input; (1, 1, in)
                                  for plain features */
    bool in_image;             /* the input is an image (a feature map), not plain features */
    const float *weight;       /* conv (filters, channels, kernel_height, kernel_width); dense
                                  (units, in), in taken in (row, column, channel) order; NULL
                                  for pooling */
    const float *bias;         /* (filters) or (units); NULL for pooling */
} ax_onnx_layer;

typedef struct ax_onnx_model {
    int64_t input_shape[3];        /* (height, width, channels), or (1, 1, features) */
    bool image;                    /* the graph takes (N, height, width, channels), else
                                      (N, features) */
    int64_t output_width;          /* values per row out of the last layer */
    const ax_onnx_layer *layers;
    int layer_count;
    const char *description;       /* the model's doc_string, e.g. the layout */
} ax_onnx_model;

/* Writes model to path as one ONNX file: the input "input" is (N, H, W, C)
 * for images, as axon holds pixels, or (N, features), N free; the output
 * "output" is (N, outputs) as ax_net_predict gives them. Convolution and
 * pooling run in ONNX's (N, C, H, W) between Transpose nodes; weights are
 * initializers named as in axon's model files ("layers.N.weight"). The file
 * is replaced atomically (base/atomic_file.h): a failure leaves path as it
 * was. A kind of layer or activation ONNX cannot be given here is
 * AX_STATUS_UNSUPPORTED, naming the layer; a write failure
 * AX_STATUS_IO_ERROR naming path. */
AX_NODISCARD ax_status ax_onnx_write(const char *path, const ax_onnx_model *model);

#endif
