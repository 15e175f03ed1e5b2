/* conv_bias_reference.h: a convolution's bias gradient as the CPU's
 * weight-gradient kernels add it (conv_one_channel.c, conv_weight_direct.c;
 * backend.h: conv_backward_weights_bias), for their tests. */
#ifndef AX_TESTS_CONV_BIAS_REFERENCE_H
#define AX_TESTS_CONV_BIAS_REFERENCE_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/cpu/conv_weight_gradient.h"

/* bias (filters) against the sums of delta over the positions added in
 * the kernels' order (a chain of additions from 0 in position order in
 * each slice of ax_cpu_conv_weight_slices' cut, the slices left to right),
 * bit for bit, and against float64's within gamma_K sum |delta| */
static inline bool bias_matches(const ax_window_geometry *g, int64_t filters, int64_t images,
                         const float *delta, const float *bias)
{
    const int64_t places = g->out_height * g->out_width;
    const int64_t slices = ax_cpu_conv_weight_slices(g, images);
    const double k = (double)(images * places), gamma = k * 0x1p-24 / (1.0 - k * 0x1p-24);
    bool ok = true;
    for (int64_t f = 0; f < filters; f++) {
        float total = 0.0f;
        double exact = 0.0, magnitude = 0.0;
        for (int64_t slice = 0; slice < slices; slice++) {
            float part = 0.0f;
            for (int64_t q = slice * images / slices * places;
                 q < (slice + 1) * images / slices * places; q++) {
                part += delta[q * filters + f];
                exact += delta[q * filters + f];
                magnitude += fabs(delta[q * filters + f]);
            }
            total = slice == 0 ? part : total + part;
        }
        ok = ok && memcmp(&total, &bias[f], sizeof total) == 0 &&
             fabs(total - exact) <= gamma * magnitude;
    }
    if (!ok)
        fprintf(stderr, "bias gradient of %lld images: not the slices' sums\n", (long long)images);
    return ok;
}

#endif
