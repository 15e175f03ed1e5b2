/* onednn_conv_internal.h: what onednn_conv.c shares with
 * onednn_conv_weights.c, in oneDNN's own types (so onednn_conv.h, which
 * the backend includes, stays free of them). */
#ifndef AX_BACKEND_CPU_ONEDNN_CONV_INTERNAL_H
#define AX_BACKEND_CPU_ONEDNN_CONV_INTERNAL_H

#include <oneapi/dnnl/dnnl.h>

#include "backend/cpu/onednn_conv.h"

/* onednn_conv_weights.c's primitives, kept in the backend's state. */
typedef struct ax_onednn_weight_primitives ax_onednn_weight_primitives;

/* The state's engine (the state created on first use), and where its
 * weight-gradient primitives are kept, which the state frees with
 * weight_primitives_free; NULL when out of memory. */
dnnl_engine_t ax_onednn_convs_engine(ax_onednn_convs **convs,
                                     ax_onednn_weight_primitives ***weight_primitives,
                                     void (*weight_primitives_free)(ax_onednn_weight_primitives *));

/* The forward description of a convolution of `images` images: images
 * NHWC of type operand, outputs NHWC of type output, weights of type
 * operand in the layout oneDNN prefers (weights_any) and as axon keeps
 * them (weights_user: oihw). */
dnnl_status_t ax_onednn_conv_describe(const ax_window_geometry *geometry, int64_t filters,
                                      int64_t images, dnnl_data_type_t operand,
                                      dnnl_data_type_t output, dnnl_memory_desc_t *image_md,
                                      dnnl_memory_desc_t *outputs, dnnl_memory_desc_t *weights_any,
                                      dnnl_memory_desc_t *weights_user,
                                      dnnl_convolution_desc_t *forward);

/* Destroys the count descriptions that are not NULL, and attr unless NULL. */
void ax_onednn_descriptions_free(const dnnl_primitive_desc_t *descriptions, int count,
                                 dnnl_primitive_attr_t attr);

#endif
