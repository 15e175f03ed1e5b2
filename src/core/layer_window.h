/* layer_window.h: what the convolution (layer_conv.c) and pooling
 * (layer_pool.c) layers share: parsing the numbers of their layout items
 * with the place a malformed item stops fitting, and the refusal of a
 * non-image input. */
#ifndef AX_CORE_LAYER_WINDOW_H
#define AX_CORE_LAYER_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "axon.h"
#include "backend/backend.h"
#include "core/layer.h"

/* Reads a whole number from *cursor into *value and moves *cursor past it;
 * false when there is none or it overflows. */
bool ax_window_read_number(const char **cursor, int64_t *value);
/* The refusal of a malformed item: names where, the item, the character
 * (1-based) and the text from which it stops fitting, and the form
 * expected. */
ax_status ax_window_syntax_error(const char *where, const char *item, const char *stop,
                                 const char *form);
/* Refuses an input that is no image for layer index (described by item, as
 * formatted), naming what it gets. */
ax_status ax_window_require_image(int index, const char *item, ax_layer_shape in);
/* The input of layer index for a backward pass: the previous layer's
 * outputs, or the loaded batch for the first layer. */
const void *ax_window_layer_input(const ax_net *net, int index);
/* A pooling layer's window geometry (its input and output images). */
ax_window_geometry ax_pool_layer_geometry(const ax_layer *layer);

#endif
