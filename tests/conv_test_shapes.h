/* conv_test_shapes.h: a convolution layer's shape for the CPU kernels'
 * tests, the sizes of its tensors, and the operands, comparisons, checks
 * and AMX mode setting those tests share. */
#ifndef AX_TESTS_CONV_TEST_SHAPES_H
#define AX_TESTS_CONV_TEST_SHAPES_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
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

/* AXON_CONV_AMX set to mode ("emulate", "off"), or unset for NULL (the
 * tiles where the CPU has them): the AMX kernels read it at each call */
static inline void use_amx_mode(const char *mode)
{
    if (mode)
        setenv("AXON_CONV_AMX", mode, 1);
    else
        unsetenv("AXON_CONV_AMX");
}

/* A failed check of a shape's kernel run, named on stderr and counted. */
static inline void describe_failure(const shape *s, int64_t images, const char *mode,
                                    int threads, const char *what)
{
    const ax_window_geometry *g = &s->g;
    fprintf(stderr, "%s: %lldx%lldx%lld kernel %lldx%lld padding %lld, %lld filters, %lld images, "
                    "%d threads: %s\n",
            mode, (long long)g->height, (long long)g->width, (long long)g->channels,
            (long long)g->kernel_height, (long long)g->kernel_width, (long long)g->padding,
            (long long)s->filters, (long long)images, threads, what);
    test_failures++;
}

/* got within gamma_k sum |terms| of float64's sums (k products a value;
 * Higham 3.1), NaN and infinities (with their signs) where float64's are */
static inline bool within_float64_bound(const float *got, const double *sums,
                                        const double *magnitudes, int64_t count, double k)
{
    const double gamma = k * 0x1p-24 / (1.0 - k * 0x1p-24);
    for (int64_t i = 0; i < count; i++) {
        if (isnan(sums[i]) || isinf(sums[i])) {
            if (isnan(sums[i]) != isnan(got[i]) || isinf(sums[i]) != isinf(got[i]) ||
                (isinf(sums[i]) && (sums[i] > 0) != (got[i] > 0)))
                return false;
        } else if (!(fabs(got[i] - sums[i]) <= gamma * magnitudes[i]))
            return false;
    }
    return true;
}

/* An input-gradient kernel (conv_input_direct.h, conv_input_amx.h) and its
 * test of a layer's shape */
typedef bool (*input_gradient_kernel)(const ax_window_geometry *, int64_t, const float *,
                                      const float *, float *, int64_t);
typedef bool (*input_gradient_takes)(const ax_window_geometry *, int64_t);

/* The kernel declines the layer (takes says so too) with nothing written. */
static inline void check_input_gradient_declined(const shape *s, input_gradient_takes takes,
                                                 input_gradient_kernel kernel, uint64_t *state)
{
    const int64_t images = 2, inputs = inputs_of(s, images);
    float *delta = random_floats_from(state, outputs_of(s, images));
    float *w = random_floats_from(state, weights_of(s));
    float *previous = malloc((size_t)inputs * sizeof *previous);
    for (int64_t i = 0; i < inputs; i++)
        previous[i] = 7.0f;
    CHECK(!takes(&s->g, s->filters));
    CHECK(!kernel(&s->g, s->filters, delta, w, previous, images));
    int64_t changed = 0;
    for (int64_t i = 0; i < inputs; i++)
        changed += previous[i] != 7.0f;
    CHECK(changed == 0);
    free(delta), free(w), free(previous);
}

#endif
