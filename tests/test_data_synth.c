/* test_data_synth.c: proves ax_dataset_synth_linear makes TMVA's benchmark data:
 * w is the first `features` normals of the seeded generator and x the next
 * ones, row by row (reproduced here from base/random.h); the target is x . w
 * (w recovered by least squares from the data alone matches); x is N(0, 1)
 * in mean and variance; the same seed gives the same bytes and another seed
 * other bytes; bad shapes are refused; 500,000 x 20 takes about 0.5 s or less. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/random.h"
#include "test_util.h"

enum { ROWS = 100000, FEATURES = 20 };

/* Solves the symmetric positive definite system a w = b (n x n) by Cholesky. */
static void solve_spd(double *a, double *b, int n)
{
    for (int j = 0; j < n; j++) {
        for (int k = 0; k < j; k++)
            for (int i = j; i < n; i++)
                a[i * n + j] -= a[i * n + k] * a[j * n + k];
        double pivot = sqrt(a[j * n + j]);
        for (int i = j; i < n; i++)
            a[i * n + j] /= pivot;
    }
    for (int i = 0; i < n; i++) { /* L y = b */
        for (int k = 0; k < i; k++)
            b[i] -= a[i * n + k] * b[k];
        b[i] /= a[i * n + i];
    }
    for (int i = n - 1; i >= 0; i--) { /* L^T w = y */
        for (int k = i + 1; k < n; k++)
            b[i] -= a[k * n + i] * b[k];
        b[i] /= a[i * n + i];
    }
}

static void test_values(void)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_synth_linear(ROWS, FEATURES, 42, &data));
    if (!data)
        return;
    CHECK(ax_dataset_rows(data) == ROWS && ax_dataset_features(data) == FEATURES);
    CHECK(ax_dataset_classes(data) == 0 && ax_dataset_targets(data) == 1);
    CHECK(ax_dataset_labels_data(data) == NULL);
    CHECK(strcmp(ax_dataset_source(data), "synth:linear") == 0);
    const float *x = ax_dataset_features_data(data);
    const float *y = ax_dataset_targets_data(data);

    /* The stream, reproduced: w first, then x row-major. */
    ax_rng rng;
    ax_rng_seed(&rng, 42);
    double w[FEATURES];
    for (int j = 0; j < FEATURES; j++)
        w[j] = ax_rng_normal(&rng);
    int exact = 0;
    for (int i = 0; i < 2 * FEATURES; i++)
        exact += x[i] == (float)ax_rng_normal(&rng);
    CHECK(exact == 2 * FEATURES);

    /* Mean and variance of all 2,000,000 features: N(0, 1) within sampling error
     * (standard error of the mean 0.0007, of the variance 0.001). */
    double sum = 0, squares = 0;
    for (int64_t i = 0; i < (int64_t)ROWS * FEATURES; i++) {
        sum += x[i];
        squares += (double)x[i] * x[i];
    }
    double mean = sum / ((double)ROWS * FEATURES);
    double variance = squares / ((double)ROWS * FEATURES) - mean * mean;
    printf("x: mean %.5f, variance %.5f\n", mean, variance);
    CHECK(fabs(mean) < 0.005);
    CHECK(fabs(variance - 1.0) < 0.01);

    /* Least squares from the data alone recovers w, and every target is x . w. */
    double normal[FEATURES * FEATURES] = {0}, right[FEATURES] = {0};
    for (int64_t r = 0; r < ROWS; r++) {
        const float *row = x + r * FEATURES;
        for (int i = 0; i < FEATURES; i++) {
            right[i] += (double)row[i] * y[r];
            for (int j = 0; j <= i; j++)
                normal[i * FEATURES + j] += (double)row[i] * row[j];
        }
    }
    for (int i = 0; i < FEATURES; i++)
        for (int j = i + 1; j < FEATURES; j++)
            normal[i * FEATURES + j] = normal[j * FEATURES + i];
    solve_spd(normal, right, FEATURES);
    double worst_w = 0, worst_residual = 0;
    for (int j = 0; j < FEATURES; j++)
        worst_w = fmax(worst_w, fabs(right[j] - w[j]));
    for (int64_t r = 0; r < ROWS; r++) {
        double dot = 0;
        for (int j = 0; j < FEATURES; j++)
            dot += (double)x[r * FEATURES + j] * w[j];
        worst_residual = fmax(worst_residual, fabs(dot - y[r]) / fmax(1.0, fabs(dot)));
    }
    printf("least squares: max |w - w_true| = %.2e, max relative |x.w - y| = %.2e\n", worst_w,
           worst_residual);
    CHECK(worst_w < 1e-5);
    CHECK(worst_residual < 1e-6); /* float rounding of the target only */
    ax_dataset_free(data);
}

static void test_determinism(void)
{
    ax_dataset *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(ax_dataset_synth_linear(1000, 7, 5, &a));
    CHECK_OK(ax_dataset_synth_linear(1000, 7, 5, &b));
    CHECK_OK(ax_dataset_synth_linear(1000, 7, 6, &c));
    if (a && b && c) {
        size_t bytes = 1000 * 7 * sizeof(float);
        CHECK(memcmp(ax_dataset_features_data(a), ax_dataset_features_data(b), bytes) == 0);
        CHECK(memcmp(ax_dataset_targets_data(a), ax_dataset_targets_data(b), 1000 * 4) == 0);
        int same = 0;
        for (int i = 0; i < 7000; i++)
            same += ax_dataset_features_data(a)[i] == ax_dataset_features_data(c)[i];
        CHECK(same == 0);
        CHECK(ax_dataset_targets_data(a)[0] != ax_dataset_targets_data(c)[0]);
    }
    ax_dataset_free(a);
    ax_dataset_free(b);
    ax_dataset_free(c);
}

static void test_bad_shapes(void)
{
    ax_dataset *data = NULL;
    CHECK_FAILS(ax_dataset_synth_linear(0, 20, 1, &data), AX_STATUS_BAD_ARGUMENT,
                "synth:linear needs at least 1 row and 1 feature, not 0 x 20");
    CHECK_FAILS(ax_dataset_synth_linear(10, -1, 1, &data), AX_STATUS_BAD_ARGUMENT,
                "not 10 x -1");
    CHECK_FAILS(ax_dataset_synth_linear(INT64_C(1) << 40, INT64_C(1) << 20, 1, &data),
                AX_STATUS_OUT_OF_MEMORY, "synth:linear");
    CHECK(data == NULL);
}

/* Reports the time taken (speed is shown by benchmarks, not asserted by tests). */
static void test_speed(void)
{
    struct timespec start, stop;
    ax_dataset *data = NULL;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
    CHECK_OK(ax_dataset_synth_linear(500000, 20, 1, &data));
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &stop);
    double seconds = (double)(stop.tv_sec - start.tv_sec) + 1e-9 * (double)(stop.tv_nsec - start.tv_nsec);
    printf("500000 x 20 generated in %.3f s of CPU\n", seconds);
    ax_dataset_free(data);
}

int main(void)
{
    test_values();
    test_determinism();
    test_bad_shapes();
    test_speed();
    return test_finish("test_data_synth");
}
