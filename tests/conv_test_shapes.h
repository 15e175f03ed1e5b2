/* conv_test_shapes.h: a convolution layer's shape for the CPU weight
 * gradient's tests, and the sizes of its tensors. */
#ifndef AX_TESTS_CONV_TEST_SHAPES_H
#define AX_TESTS_CONV_TEST_SHAPES_H

#include <stdint.h>

#include "backend/backend.h"

typedef struct shape {
    ax_window_geometry g;
    int64_t filters;
} shape;

/* g with its output sides from its input, kernel, stride and padding */
static inline ax_window_geometry with_outputs(ax_window_geometry g)
{
    g.out_height = (g.height + 2 * g.padding - g.kernel_height) / g.stride + 1;
    g.out_width = (g.width + 2 * g.padding - g.kernel_width) / g.stride + 1;
    return g;
}

static inline int64_t inputs_of(const shape *s, int64_t images)
{
    return images * s->g.height * s->g.width * s->g.channels;
}

static inline int64_t outputs_of(const shape *s, int64_t images)
{
    return images * s->g.out_height * s->g.out_width * s->filters;
}

static inline int64_t weights_of(const shape *s)
{
    return s->filters * s->g.channels * s->g.kernel_height * s->g.kernel_width;
}

#endif
