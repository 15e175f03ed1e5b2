/* narrow_kernels.c: times the CPU backend's elementwise kernels at the
 * galaxy classifier's narrow shapes (1024-8-3: 2700 x 8 and 2700 x 3) and
 * at wide ones (the Fashion-MNIST MLP's and the regression benchmark's:
 * 1024 x 128, 1024 x 256), best of many calls, through the private
 * backend table (src/backend/backend.h). Link it against two builds of
 * libaxon.a to compare kernels before and after a change.
 *
 * build (from the repository root, after building build-narrow/):
 *   gcc -std=c11 -O2 -fopenmp -Iinclude -Isrc dev/narrow_kernels.c build-narrow/libaxon.a \
 *       /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0 \
 *       $(pkg-config --libs libarchive libjpeg libpng) -lz -lm -o /tmp/narrow_kernels
 * usage: env -u OPENBLAS_CORETYPE /tmp/narrow_kernels [threads] [f32|f64] [only]
 *   prints microseconds per call and nanoseconds per element; with `only`,
 *   just the lines that contain it (e.g. "1024 x 256")
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef enum { OP_BIAS_ACTIVATION, OP_BACKWARD, OP_COLUMN_SUMS, OP_BCE } op_kind;

static const char *act_name(ax_activation a)
{
    switch (a) {
    case AX_ACT_IDENTITY: return "identity";
    case AX_ACT_SIGMOID: return "sigmoid";
    case AX_ACT_TANH: return "tanh";
    case AX_ACT_RELU: return "relu";
    default: return "softmax";
    }
}

static const char *only; /* print and time only lines containing this */

/* Best over rounds of the mean time of a batch of calls, in seconds. */
static void time_op(ax_backend *backend, op_kind op, ax_activation act, int64_t rows, int64_t cols)
{
    static const char *names[] = {"bias_activation", "activation_backward", "column_sums",
                                  "binary_cross_entropy"};
    char label[128];
    snprintf(label, sizeof label, "%-21s %-8s %5lld x %-5lld", names[op],
             op == OP_COLUMN_SUMS || op == OP_BCE ? "-" : act_name(act), (long long)rows,
             (long long)cols);
    if (only && !strstr(label, only))
        return;
    const size_t size = backend->real_size, count = (size_t)(rows * cols);
    void *z = backend->ops->alloc(backend, count * size);
    void *a = backend->ops->alloc(backend, count * size);
    void *bias = backend->ops->alloc(backend, (size_t)cols * size);
    void *out = backend->ops->alloc(backend, (size_t)cols * size);
    int32_t *labels = malloc((size_t)rows * sizeof(int32_t));
    double *host = malloc(count * sizeof(double));
    for (size_t i = 0; i < count; i++)
        host[i] = 0.05 + 0.9 * (double)((i * 2654435761u) % 1000) / 1000.0;
    backend->ops->upload_f64(backend, a, host, (int64_t)count);
    for (size_t i = 0; i < count; i++)
        host[i] = 4.0 * host[i] - 2.0;
    backend->ops->upload_f64(backend, z, host, (int64_t)count);
    backend->ops->upload_f64(backend, bias, host, cols);
    for (int64_t r = 0; r < rows; r++)
        labels[r] = (int32_t)(r % cols);
    const int batch = (int)(2e6 / (double)count) + 1;
    double best = 1e30;
    for (int round = 0; round < 30; round++) {
        double start = now();
        for (int i = 0; i < batch; i++) {
            switch (op) {
            case OP_BIAS_ACTIVATION:
                backend->ops->bias_activation(backend, act, z, bias, rows, cols);
                break;
            case OP_BACKWARD:
                backend->ops->activation_backward(backend, act, z, a, 1.0, out, rows, cols);
                break;
            case OP_COLUMN_SUMS:
                backend->ops->column_sums(backend, z, out, rows, cols);
                break;
            case OP_BCE:
                backend->ops->binary_cross_entropy(backend, a, labels, NULL, z, 1.0 / (double)rows,
                                                   rows, cols);
                break;
            }
        }
        double t = (now() - start) / batch;
        best = t < best ? t : best;
    }
    printf("%s %9.2f us %7.3f ns/element\n", label, best * 1e6, best * 1e9 / (double)count);
    backend->ops->free(backend, z);
    backend->ops->free(backend, a);
    backend->ops->free(backend, bias);
    backend->ops->free(backend, out);
    free(labels);
    free(host);
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    ax_precision precision = argc > 2 && strcmp(argv[2], "f64") == 0 ? AX_PRECISION_F64
                                                                      : AX_PRECISION_F32;
    only = argc > 3 ? argv[3] : NULL;
    omp_set_num_threads(threads);
    ax_backend *backend = ax_backend_cpu_create(precision);
    if (!backend)
        return 1;
    printf("%d thread(s), %s\n", threads, precision == AX_PRECISION_F64 ? "f64" : "f32");
    const int64_t narrow[][2] = {{2700, 8}, {2700, 3}};
    for (int s = 0; s < 2; s++) {
        time_op(backend, OP_BIAS_ACTIVATION, AX_ACT_SIGMOID, narrow[s][0], narrow[s][1]);
        time_op(backend, OP_BACKWARD, AX_ACT_SIGMOID, narrow[s][0], narrow[s][1]);
        time_op(backend, OP_COLUMN_SUMS, AX_ACT_IDENTITY, narrow[s][0], narrow[s][1]);
    }
    time_op(backend, OP_BCE, AX_ACT_SIGMOID, 2700, 3);
    time_op(backend, OP_BIAS_ACTIVATION, AX_ACT_RELU, 2700, 8);
    time_op(backend, OP_BIAS_ACTIVATION, AX_ACT_TANH, 2700, 8);
    time_op(backend, OP_BIAS_ACTIVATION, AX_ACT_SOFTMAX, 2700, 10);
    time_op(backend, OP_BACKWARD, AX_ACT_RELU, 2700, 8);
    time_op(backend, OP_BIAS_ACTIVATION, AX_ACT_SIGMOID, 60000, 10);
    time_op(backend, OP_COLUMN_SUMS, AX_ACT_IDENTITY, 60000, 10);
    const int64_t wide[][2] = {{1024, 256}, {1024, 128}};
    const ax_activation acts[] = {AX_ACT_SIGMOID, AX_ACT_RELU, AX_ACT_TANH};
    for (int s = 0; s < 2; s++) {
        for (int k = 0; k < 3; k++) {
            time_op(backend, OP_BIAS_ACTIVATION, acts[k], wide[s][0], wide[s][1]);
            time_op(backend, OP_BACKWARD, acts[k], wide[s][0], wide[s][1]);
        }
        time_op(backend, OP_COLUMN_SUMS, AX_ACT_IDENTITY, wide[s][0], wide[s][1]);
    }
    time_op(backend, OP_BIAS_ACTIVATION, AX_ACT_SOFTMAX, 1024, 10);
    backend->ops->destroy(backend);
    return 0;
}
