/* conv_test_shapes.h: a convolution layer's shape for the CPU weight
 * gradient's tests, the sizes of its tensors, and the operands and
 * comparisons those tests share. */
#ifndef AX_TESTS_CONV_TEST_SHAPES_H
#define AX_TESTS_CONV_TEST_SHAPES_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/bf16_round.h"
#include "test_util.h"

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

static inline shape make_shape(int64_t height, int64_t width, int64_t channels, int64_t kh,
                               int64_t kw, int64_t stride, int64_t padding, int64_t filters)
{
    return (shape){with_outputs((ax_window_geometry){height, width, channels, kh, kw, stride,
                                                      padding, 0, 0}),
                   filters};
}

/* n values uniform in [-1, 1) from *state */
static inline float *random_floats_from(uint64_t *state, int64_t n)
{
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)test_random_uniform(state, -1.0, 1.0);
    return v;
}

/* NaN and infinities among x (inputs values) and delta (outputs values) */
static inline void put_specials(float *x, int64_t inputs, float *delta, int64_t outputs,
                                int64_t filters)
{
    x[3] = NAN, x[inputs / 2] = INFINITY, delta[outputs - 1] = -INFINITY;
    delta[filters + 1] = NAN;
}

/* v rounded to bfloat16 (bf16_round.h), in a new array */
static inline float *rounded_copy(const float *v, int64_t n)
{
    float *r = malloc((size_t)n * sizeof *r);
    ax_bf16_round_values_serial(r, v, n);
    return r;
}

/* the same bits, or both NaN */
static inline bool same_values(const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a) != 0 && !(isnan(a[i]) && isnan(b[i])))
            return false;
    return true;
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
