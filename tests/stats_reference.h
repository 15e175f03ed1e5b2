/* stats_reference.h: the float64 references of the activation statistics that
 * test_stats and test_cuda_stats compare the library with: the softmax
 * stored, MI as the full double sum over (i, j) (naive_mi) or the
 * factorised product, the tensor mean as the direct loop over (n, i, j, k). */
#ifndef AX_TESTS_STATS_REFERENCE_H
#define AX_TESTS_STATS_REFERENCE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static void reference_entropy_mi(const float *x, const float *y, int64_t rows, int64_t d,
                                 bool naive_mi, double *entropy, double *mi)
{
    double *p = malloc((size_t)d * sizeof *p), *q = malloc((size_t)d * sizeof *q);
    CHECK(p && q);
    double h_sum = 0.0, mi_sum = 0.0;
    for (int64_t r = 0; r < rows; r++) {
        double p2 = 0.0, q2 = 0.0;
        for (int a = 0; a < 2; a++) {
            const float *row = (a == 0 ? x : y) + r * d;
            double *out = a == 0 ? p : q;
            double m = row[0], s = 0.0;
            for (int64_t i = 1; i < d; i++)
                m = fmax(m, row[i]);
            for (int64_t i = 0; i < d; i++)
                s += out[i] = exp((double)row[i] - m);
            for (int64_t i = 0; i < d; i++)
                out[i] /= s;
        }
        for (int64_t i = 0; i < d; i++) {
            p2 += p[i] * p[i];
            q2 += q[i] * q[i];
        }
        h_sum += p2;
        if (naive_mi) { /* the definition's double sum, not the factorised form */
            for (int64_t i = 0; i < d; i++)
                for (int64_t j = 0; j < d; j++) {
                    double v = p[i] * q[j];
                    mi_sum += v * v;
                }
        } else {
            mi_sum += p2 * q2;
        }
    }
    *entropy = -h_sum / (double)rows;
    *mi = mi_sum / (double)rows;
    free(p);
    free(q);
}

static void reference_tensor_mean(const float *fx, const float *fy, const float *fz, int64_t n,
                                  int64_t d, double *out)
{
    memset(out, 0, (size_t)(d * d * d) * sizeof *out);
    for (int64_t r = 0; r < n; r++)
        for (int64_t i = 0; i < d; i++)
            for (int64_t j = 0; j < d; j++) {
                double xy = (double)fx[r * d + i] * fy[r * d + j];
                for (int64_t k = 0; k < d; k++)
                    out[(i * d + j) * d + k] += xy * fz[r * d + k];
            }
    for (int64_t i = 0; i < d * d * d; i++)
        out[i] /= (double)n;
}

#endif
