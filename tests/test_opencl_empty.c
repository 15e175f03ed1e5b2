/* test_opencl_empty.c: every operation of the OpenCL backend given nothing
 * to do (no rows, no columns, no images, no elements) is a no-op, as on the
 * CPU backend, the reference: what it returns is the CPU's (0 for sums and
 * losses, true for all_finite), the buffers it was handed are the CPU's
 * (their bytes kept, but a bias gradient of no rows: zeros),
 * nothing is launched that could fail, and the backend's status stays OK.
 * A caller may reach these with an empty batch or a layer of width 0.
 * Without an OpenCL device it exits 77. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "test_util.h"

enum { N = 8 };

typedef struct side {
    ax_backend *backend;
    void *a, *b, *c, *d;
    int32_t *labels;
} side;

static bool make_side(side *s, ax_device device)
{
    memset(s, 0, sizeof *s);
    CHECK_OK(ax_backend_create(AX_PRECISION_F64, device, &s->backend));
    if (!s->backend)
        return false;
    void **arrays[] = {&s->a, &s->b, &s->c, &s->d};
    double values[N];
    for (int i = 0; i < N; i++)
        values[i] = 0.5 + i;
    for (int i = 0; i < 4; i++) {
        CHECK_OK(ax_backend_alloc(s->backend, N * sizeof(double), "an array", arrays[i]));
        if (*arrays[i])
            s->backend->ops->upload_f64(s->backend, *arrays[i], values, N);
    }
    CHECK_OK(ax_backend_alloc(s->backend, N * sizeof(int32_t), "labels", (void **)&s->labels));
    return s->a && s->b && s->c && s->d && s->labels;
}

/* The empty calls on one side; the values they return, in order. */
static int empty_calls(side *s, double *returned)
{
    ax_backend *k = s->backend;
    const ax_backend_ops *ops = k->ops;
    int n = 0;
    ax_window_geometry g;
    memset(&g, 0, sizeof g);
    g.height = g.width = g.channels = 2;
    g.kernel_height = g.kernel_width = 1;
    g.out_height = g.out_width = 2;
    int32_t host_indices[1] = {-5};
    const float host_rows[4] = {1, 2, 3, 4};
    const int64_t order[1] = {0};
    const int32_t host_labels[1] = {0};

    ops->gemm(k, false, false, 0, 2, 2, 1.0, s->a, 2, s->b, 2, 0.0, s->c, 2);
    ops->gemm(k, false, false, 2, 2, 0, 1.0, s->a, 2, s->b, 2, 1.0, s->c, 2);
    ops->bias_activation(k, AX_ACT_RELU, s->c, s->d, 0, 4);
    ops->bias_activation(k, AX_ACT_SOFTMAX, s->c, s->d, 4, 0);
    ops->activation_backward(k, AX_ACT_SIGMOID, s->c, s->a, 1.0, s->d, 0, 4);
    ops->column_sums(k, s->c, s->d, 3, 0);
    returned[n++] = ops->cross_entropy(k, s->a, s->labels, s->c, 1.0, 0, 4);
    returned[n++] = ops->binary_cross_entropy(k, s->a, NULL, s->b, s->c, 1.0, 0, 4);
    returned[n++] = ops->squared_error(k, s->a, NULL, s->b, s->c, 1.0, 4, 0);
    ops->dropout(k, s->c, 0.5, 7, 0, 0, 4);
    ops->axpy(k, 0, 2.0, s->a, s->c);
    returned[n++] = ops->dot(k, 0, s->a, s->b);
    ops->scale(k, 0, 3.0, s->c);
    returned[n++] = ops->all_finite(k, 0, s->a);
    ops->sgd_update(k, 0, s->c, s->a, s->d, 0.1, 0.9, false);
    ops->adam_update(k, 0, s->c, s->a, s->d, s->b, 0.1, 0.9, 0.999, 1e-8, 1);
    ops->argmax_rows(k, s->a, host_indices, 0, 4);
    returned[n++] = host_indices[0];
    ops->im2col(k, &g, s->a, s->c, 0);
    ops->col2im(k, &g, s->a, s->c, 0);
    ops->pool_forward(k, true, &g, s->a, s->c, 0);
    ops->pool_backward(k, false, &g, s->a, s->b, s->c, 0);
    ops->transpose(k, s->a, s->c, 1, 0, 2);
    ops->gather_rows(k, s->c, host_rows, 2, order, 0, 0);
    ops->gather_labels(k, s->labels, host_labels, order, 0, 0);
    returned[n++] = ops->l1_penalty(k, 0, s->a, 0.5, s->c);
    ops->clamp(k, 0, 1.0, s->c);
    return n;
}

static void free_side(side *s)
{
    if (!s->backend)
        return;
    void *arrays[] = {s->a, s->b, s->c, s->d, s->labels};
    for (int i = 0; i < 5; i++)
        s->backend->ops->free(s->backend, arrays[i]);
    s->backend->ops->destroy(s->backend);
}

int main(void)
{
    if (ax_device_count("opencl") < 1)
        TEST_SKIP("no OpenCL device (the plugin or an ICD is missing: pocl-opencl-icd)");
    side cpu, device;
    const ax_device opencl = {.backend = "opencl", .index = 0};
    if (make_side(&cpu, ax_device_cpu()) && make_side(&device, opencl)) {
        double from_cpu[16], from_device[16];
        const int count = empty_calls(&cpu, from_cpu);
        CHECK(empty_calls(&device, from_device) == count);
        for (int i = 0; i < count; i++)
            if (!(from_cpu[i] == from_device[i])) {
                fprintf(stderr, "empty call %d: the CPU returned %g, OpenCL %g\n", i, from_cpu[i],
                        from_device[i]);
                test_failures++;
            }
        CHECK_OK(ax_backend_synchronize(device.backend));
        /* Every buffer as the CPU left it: untouched, but for the bias
         * gradient of no rows, the column sums of nothing (zeros). */
        void *on_device[] = {device.a, device.b, device.c, device.d};
        void *on_cpu[] = {cpu.a, cpu.b, cpu.c, cpu.d};
        for (int i = 0; i < 4; i++) {
            double back[N], expected[N];
            device.backend->ops->download_f64(device.backend, back, on_device[i], N);
            cpu.backend->ops->download_f64(cpu.backend, expected, on_cpu[i], N);
            for (int j = 0; j < N; j++)
                if (back[j] != expected[j] || (i < 3 && back[j] != 0.5 + j)) {
                    fprintf(stderr, "array %d, value %d: %g, the CPU's %g\n", i, j, back[j],
                            expected[j]);
                    test_failures++;
                }
        }
        CHECK_OK(device.backend->ops->status(device.backend));
    }
    free_side(&cpu);
    free_side(&device);
    return test_finish("test_opencl_empty");
}
