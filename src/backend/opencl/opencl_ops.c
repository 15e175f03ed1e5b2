/* opencl_ops.c: the table's operations that run as kernels of kernels.cl:
 * arguments in the kernel's order, the work size, and for reductions the
 * partial sums added on the host (opencl_backend.c). Every kernel walks its
 * elements with a stride of the global size, so any count fits any launch. */
#include <math.h>
#include <string.h>

#include "backend/opencl/opencl_internal.h"

void ax_ocl_bias_activation(ax_backend *backend, ax_activation activation, void *z,
                            const void *bias, int64_t rows, int64_t cols)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    if (rows <= 0 || cols <= 0)
        return;
    if (activation == AX_ACT_SOFTMAX) {
        ax_ocl_launch launch = ax_ocl_begin(ob, AX_OCL_SOFTMAX, "softmax");
        ax_ocl_arg_array(&launch, z);
        ax_ocl_arg_array(&launch, bias);
        ax_ocl_arg_long(&launch, rows);
        ax_ocl_arg_long(&launch, cols);
        ax_ocl_run(&launch, ax_ocl_elementwise_items(rows), 0);
        return;
    }
    ax_ocl_launch launch = ax_ocl_begin(ob, AX_OCL_BIAS_ACTIVATION, "bias_activation");
    ax_ocl_arg_int(&launch, (int)activation);
    ax_ocl_arg_array(&launch, z);
    ax_ocl_arg_array(&launch, bias);
    ax_ocl_arg_long(&launch, rows);
    ax_ocl_arg_long(&launch, cols);
    ax_ocl_run(&launch, ax_ocl_elementwise_items(rows * cols), 0);
}

/* Column sums of delta (rows, cols) into out (cols), after delta *=
 * act'(a * a_scale) when apply: chunks of rows summed by one work-item per
 * (chunk, column), then the chunks added in order per column. Enough chunks
 * to give the device about 64K work-items, as many as the partials hold. */
static void column_sums(ax_ocl_backend *ob, bool apply, ax_activation activation, void *delta,
                        const void *a, double a_scale, void *out, int64_t rows, int64_t cols)
{
    int64_t chunks = (65536 + cols - 1) / cols;
    const int64_t most_rows = (rows + 15) / 16; /* at least 16 rows a chunk */
    if (chunks > most_rows)
        chunks = most_rows;
    if (chunks > AX_OCL_COLUMN_PARTIALS / cols)
        chunks = AX_OCL_COLUMN_PARTIALS / cols;
    if (chunks < 1)
        chunks = 1;
    int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
    if (rows_per_chunk < 1)
        rows_per_chunk = 1; /* no rows: one chunk writes zeros */
    chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
    if (chunks < 1)
        chunks = 1;
    ax_ocl_launch launch = ax_ocl_begin(ob, AX_OCL_COLUMN_PARTIALS_KERNEL, "column_sums");
    ax_ocl_arg_int(&launch, apply);
    ax_ocl_arg_int(&launch, (int)activation);
    ax_ocl_arg_array(&launch, delta);
    ax_ocl_arg_array(&launch, a);
    ax_ocl_arg_real(&launch, a_scale);
    ax_ocl_arg_long(&launch, rows);
    ax_ocl_arg_long(&launch, cols);
    ax_ocl_arg_long(&launch, rows_per_chunk);
    ax_ocl_arg_long(&launch, chunks);
    ax_ocl_arg_buffer(&launch, ob->column_partials);
    ax_ocl_arg_array(&launch, out);
    ax_ocl_run(&launch, (size_t)(chunks * cols), ob->group < 64 ? ob->group : 64);
    if (chunks > 1) {
        ax_ocl_launch sum = ax_ocl_begin(ob, AX_OCL_SUM_CHUNKS, "column_sums (chunks)");
        ax_ocl_arg_buffer(&sum, ob->column_partials);
        ax_ocl_arg_long(&sum, chunks);
        ax_ocl_arg_long(&sum, cols);
        ax_ocl_arg_array(&sum, out);
        ax_ocl_run(&sum, ax_ocl_elementwise_items(cols), 0);
    }
}

void ax_ocl_activation_backward(ax_backend *backend, ax_activation activation, void *delta,
                                const void *a, double a_scale, void *bias_gradient, int64_t rows,
                                int64_t cols)
{
    if (cols <= 0)
        return;
    const bool apply = activation != AX_ACT_IDENTITY && activation != AX_ACT_SOFTMAX;
    column_sums(ax_ocl(backend), apply, activation, delta, apply ? a : NULL, a_scale,
                bias_gradient, rows, cols);
}

void ax_ocl_column_sums(ax_backend *backend, const void *delta, void *bias_gradient,
                        int64_t rows, int64_t cols)
{
    if (cols <= 0)
        return;
    column_sums(ax_ocl(backend), false, AX_ACT_IDENTITY, (void *)delta, NULL, 1.0, bias_gradient,
                rows, cols);
}

/* The losses: one launch of ax_ocl_reduce_groups groups, partials summed. */
static double loss(ax_ocl_backend *ob, ax_ocl_kernel_id id, const char *name, const void *outputs,
                   const int32_t *labels, const void *targets, void *delta, double scale,
                   int64_t rows, int64_t cols)
{
    const int groups = ax_ocl_reduce_groups(ob, rows * cols);
    ax_ocl_launch launch = ax_ocl_begin(ob, id, name);
    ax_ocl_arg_array(&launch, outputs);
    ax_ocl_arg_array(&launch, labels);
    if (id == AX_OCL_CROSS_ENTROPY) {
        ax_ocl_arg_array(&launch, delta);
        ax_ocl_arg_int(&launch, delta != NULL);
        ax_ocl_arg_real(&launch, scale);
    } else {
        ax_ocl_arg_int(&launch, labels != NULL);
        ax_ocl_arg_array(&launch, targets);
        ax_ocl_arg_array(&launch, delta);
        ax_ocl_arg_int(&launch, delta != NULL);
        ax_ocl_arg_acc(&launch, scale);
    }
    ax_ocl_arg_long(&launch, rows);
    ax_ocl_arg_long(&launch, cols);
    ax_ocl_arg_buffer(&launch, ob->partials);
    ax_ocl_run(&launch, (size_t)groups * ob->group, ob->group);
    if (ob->defer_losses) { /* the sum stays on the device: no wait */
        ax_ocl_launch finish = ax_ocl_begin(ob, AX_OCL_LOSS_FINISH, "loss (deferred sum)");
        ax_ocl_arg_buffer(&finish, ob->partials);
        ax_ocl_arg_int(&finish, groups);
        ax_ocl_arg_buffer(&finish, ob->loss_state);
        ax_ocl_run(&finish, 1, 1);
        return 0.0;
    }
    return ax_ocl_finish_sum(ob, groups);
}

double ax_ocl_cross_entropy(ax_backend *backend, const void *outputs, const int32_t *labels,
                            void *delta, double scale, int64_t rows, int64_t cols)
{
    return loss(ax_ocl(backend), AX_OCL_CROSS_ENTROPY, "cross_entropy", outputs, labels, NULL,
                delta, scale, rows, cols);
}

double ax_ocl_binary_cross_entropy(ax_backend *backend, const void *outputs,
                                   const int32_t *labels, const void *targets, void *delta,
                                   double scale, int64_t rows, int64_t cols)
{
    return loss(ax_ocl(backend), AX_OCL_BINARY_CROSS_ENTROPY, "binary_cross_entropy", outputs,
                labels, labels ? NULL : targets, delta, scale, rows, cols);
}

double ax_ocl_squared_error(ax_backend *backend, const void *outputs, const int32_t *labels,
                            const void *targets, void *delta, double scale, int64_t rows,
                            int64_t cols)
{
    return loss(ax_ocl(backend), AX_OCL_SQUARED_ERROR, "squared_error", outputs, labels,
                labels ? NULL : targets, delta, scale, rows, cols);
}

void ax_ocl_dropout(ax_backend *backend, void *a, double rate, uint64_t key, int64_t row_offset,
                    int64_t rows, int64_t cols)
{
    if (rows <= 0 || cols <= 0)
        return;
    /* The threshold and scale computed on the host, as the CPU does. */
    const uint64_t threshold = (uint64_t)(rate * 4294967296.0);
    ax_ocl_launch launch = ax_ocl_begin(ax_ocl(backend), AX_OCL_DROPOUT, "dropout");
    ax_ocl_arg_array(&launch, a);
    ax_ocl_arg_ulong(&launch, threshold);
    ax_ocl_arg_real(&launch, 1.0 / (1.0 - rate));
    ax_ocl_arg_ulong(&launch, key);
    ax_ocl_arg_long(&launch, row_offset);
    ax_ocl_arg_long(&launch, rows);
    ax_ocl_arg_long(&launch, cols);
    ax_ocl_run(&launch, ax_ocl_elementwise_items(rows * cols), 0);
}

void ax_ocl_axpy(ax_backend *backend, int64_t count, double alpha, const void *x, void *y)
{
    if (count <= 0)
        return;
    ax_ocl_launch launch = ax_ocl_begin(ax_ocl(backend), AX_OCL_AXPY, "axpy");
    ax_ocl_arg_long(&launch, count);
    ax_ocl_arg_real(&launch, alpha);
    ax_ocl_arg_array(&launch, x);
    ax_ocl_arg_array(&launch, y);
    ax_ocl_run(&launch, ax_ocl_elementwise_items(count), 0);
}

void ax_ocl_scale(ax_backend *backend, int64_t count, double alpha, void *x)
{
    if (count <= 0)
        return;
    ax_ocl_launch launch = ax_ocl_begin(ax_ocl(backend), AX_OCL_SCALE, "scale");
    ax_ocl_arg_long(&launch, count);
    ax_ocl_arg_real(&launch, alpha);
    ax_ocl_arg_array(&launch, x);
    ax_ocl_run(&launch, ax_ocl_elementwise_items(count), 0);
}

/* Queues the first pass of a dot (y non-NULL) or a count of the values
 * that are not finite into ob->partials; returns the groups it fills. */
static int queue_reduction(ax_ocl_backend *ob, int64_t count, const void *x, const void *y)
{
    const int groups = ax_ocl_reduce_groups(ob, count);
    ax_ocl_launch launch = y ? ax_ocl_begin(ob, AX_OCL_DOT, "dot")
                             : ax_ocl_begin(ob, AX_OCL_COUNT_NONFINITE, "all_finite");
    ax_ocl_arg_long(&launch, count);
    ax_ocl_arg_array(&launch, x);
    if (y)
        ax_ocl_arg_array(&launch, y);
    ax_ocl_arg_buffer(&launch, ob->partials);
    ax_ocl_run(&launch, (size_t)groups * ob->group, ob->group);
    return groups;
}

double ax_ocl_dot(ax_backend *backend, int64_t count, const void *x, const void *y)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    if (count <= 0)
        return ob->error ? NAN : 0.0;
    const int groups = queue_reduction(ob, count, x, y);
    if (ob->defer_losses) { /* the sum stays on the device: no wait */
        ax_ocl_launch finish = ax_ocl_begin(ob, AX_OCL_LOSS_FINISH, "loss (deferred sum)");
        ax_ocl_arg_buffer(&finish, ob->partials);
        ax_ocl_arg_int(&finish, groups);
        ax_ocl_arg_buffer(&finish, ob->loss_state);
        ax_ocl_run(&finish, 1, 1);
        return 0.0;
    }
    return ax_ocl_finish_sum(ob, groups);
}

double ax_ocl_l1_penalty(ax_backend *backend, int64_t count, const void *x, double alpha, void *y)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    if (count <= 0)
        return ob->error ? NAN : 0.0;
    const int groups = ax_ocl_reduce_groups(ob, count);
    ax_ocl_launch launch = ax_ocl_begin(ob, AX_OCL_L1, "l1_penalty");
    ax_ocl_arg_long(&launch, count);
    ax_ocl_arg_array(&launch, x);
    ax_ocl_arg_array(&launch, y);
    ax_ocl_arg_real(&launch, alpha);
    ax_ocl_arg_int(&launch, y != NULL);
    ax_ocl_arg_buffer(&launch, ob->partials);
    ax_ocl_run(&launch, (size_t)groups * ob->group, ob->group);
    return ax_ocl_finish_sum(ob, groups);
}

void ax_ocl_clamp(ax_backend *backend, int64_t count, double limit, void *x)
{
    if (count <= 0)
        return;
    ax_ocl_launch launch = ax_ocl_begin(ax_ocl(backend), AX_OCL_CLAMP, "clamp");
    ax_ocl_arg_long(&launch, count);
    ax_ocl_arg_real(&launch, limit);
    ax_ocl_arg_array(&launch, x);
    ax_ocl_run(&launch, ax_ocl_elementwise_items(count), 0);
}

bool ax_ocl_all_finite(ax_backend *backend, int64_t count, const void *x)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    if (count <= 0)
        return !ob->error;
    const int groups = queue_reduction(ob, count, x, NULL);
    return ax_ocl_finish_sum(ob, groups) == 0.0; /* NaN after a failure: not finite */
}

/* Each reduction's partials are copied aside on the device (the queue is
 * in order), then all are read with one blocking read and added on the host
 * in the order dot and all_finite add them: the same bits, one wait. The
 * losses' deferral does not apply: these are the optimizers' reads. */
void ax_ocl_reduce(ax_backend *backend, int n, ax_reduction *reductions)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    const size_t acc_size = ob->acc_f64 ? sizeof(double) : sizeof(float);
    const size_t stride = AX_OCL_REDUCE_GROUPS * acc_size;
    int groups[AX_BACKEND_REDUCE_MAX] = {0};
    int used = 0; /* slots up to the last reduction with elements */
    for (int i = 0; i < n && !ob->error; i++) {
        const ax_reduction *r = &reductions[i];
        if (r->count <= 0)
            continue;
        groups[i] = queue_reduction(ob, r->count, r->x,
                                    r->kind == AX_REDUCTION_DOT ? r->y : NULL);
        AX_OCL_CHECK(ob, clEnqueueCopyBuffer(ob->queue, ob->partials, ob->batch_partials, 0,
                                             (size_t)i * stride, (size_t)groups[i] * acc_size, 0,
                                             NULL, NULL));
        used = i + 1;
    }
    double partials[AX_BACKEND_REDUCE_MAX * AX_OCL_REDUCE_GROUPS]; /* room for either kind */
    if (!ob->error && used > 0)
        AX_OCL_CHECK(ob, clEnqueueReadBuffer(ob->queue, ob->batch_partials, CL_TRUE, 0,
                                             (size_t)used * stride, partials, 0, NULL, NULL));
    for (int i = 0; i < n; i++) {
        /* no elements: dot 0, nothing non-finite (as the separate calls) */
        reductions[i].value = ob->error ? NAN
                              : groups[i] == 0
                                  ? 0.0
                                  : ax_ocl_add_partials(ob, (const char *)partials + i * stride,
                                                        groups[i]);
    }
}

void ax_ocl_sgd_update(ax_backend *backend, int64_t count, void *params, const void *grads,
                       void *velocity, double learning_rate, double momentum, bool nesterov)
{
    if (count <= 0)
        return;
    const int mode = momentum == 0.0 ? 0 : nesterov ? 2 : 1;
    ax_ocl_launch launch = ax_ocl_begin(ax_ocl(backend), AX_OCL_SGD, "sgd_update");
    ax_ocl_arg_long(&launch, count);
    ax_ocl_arg_array(&launch, params);
    ax_ocl_arg_array(&launch, grads);
    ax_ocl_arg_array(&launch, mode == 0 ? NULL : velocity);
    ax_ocl_arg_real(&launch, learning_rate);
    ax_ocl_arg_real(&launch, momentum);
    ax_ocl_arg_int(&launch, mode);
    ax_ocl_run(&launch, ax_ocl_elementwise_items(count), 0);
}

void ax_ocl_adam_update(ax_backend *backend, int64_t count, void *params, const void *grads,
                        void *first_moment, void *second_moment, double learning_rate,
                        double beta1, double beta2, double epsilon, int64_t step)
{
    if (count <= 0)
        return;
    /* torch.optim.Adam: p -= lr / (1 - b1^t) * m / (sqrt(v / (1 - b2^t)) + eps),
     * the corrections computed on the host in double as the CPU does. */
    const double correction1 = 1.0 - pow(beta1, (double)step);
    const double correction2 = 1.0 - pow(beta2, (double)step);
    ax_ocl_launch launch = ax_ocl_begin(ax_ocl(backend), AX_OCL_ADAM, "adam_update");
    ax_ocl_arg_long(&launch, count);
    ax_ocl_arg_array(&launch, params);
    ax_ocl_arg_array(&launch, grads);
    ax_ocl_arg_array(&launch, first_moment);
    ax_ocl_arg_array(&launch, second_moment);
    ax_ocl_arg_real(&launch, learning_rate / correction1);
    ax_ocl_arg_real(&launch, 1.0 / sqrt(correction2));
    ax_ocl_arg_real(&launch, beta1);
    ax_ocl_arg_real(&launch, beta2);
    ax_ocl_arg_real(&launch, epsilon);
    ax_ocl_run(&launch, ax_ocl_elementwise_items(count), 0);
}

void ax_ocl_argmax_rows(ax_backend *backend, const void *outputs, int32_t *host_indices,
                        int64_t rows, int64_t cols)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    if (rows <= 0)
        return;
    const size_t bytes = (size_t)rows * sizeof(int32_t);
    if (bytes > ob->indices_capacity) {
        if (ob->indices)
            clReleaseMemObject(ob->indices);
        cl_int code = CL_SUCCESS;
        ob->indices = clCreateBuffer(ob->context, CL_MEM_READ_WRITE, bytes, NULL, &code);
        if (ax_ocl_check(ob, code, "clCreateBuffer")) {
            ob->indices = NULL;
            ob->indices_capacity = 0;
        } else {
            ob->indices_capacity = bytes;
        }
    }
    bool ok = ob->indices != NULL;
    if (ok) {
        ax_ocl_launch launch = ax_ocl_begin(ob, AX_OCL_ARGMAX, "argmax_rows");
        ax_ocl_arg_array(&launch, outputs);
        ax_ocl_arg_buffer(&launch, ob->indices);
        ax_ocl_arg_long(&launch, rows);
        ax_ocl_arg_long(&launch, cols);
        ax_ocl_run(&launch, ax_ocl_elementwise_items(rows), 0);
        ok = !ob->error && !AX_OCL_CHECK(ob, clEnqueueReadBuffer(ob->queue, ob->indices, CL_TRUE,
                                                                 0, bytes, host_indices, 0, NULL,
                                                                 NULL));
    }
    if (!ok)
        memset(host_indices, 0, bytes);
}

/* ------------------------------------------- data sets on the device */

/* The arguments both gather kernels end with (kernels.cl): the order
 * (NULL: a dummy, not read, and the rows are first + r), the bytes of its
 * indices, and the rows [first, first + count) of it. */
static void arg_rows_in_order(ax_ocl_launch *launch, const void *order, int order_bytes,
                              int64_t first, int64_t count)
{
    ax_ocl_arg_array(launch, order);
    ax_ocl_arg_int(launch, order != NULL);
    ax_ocl_arg_int(launch, order_bytes);
    ax_ocl_arg_long(launch, first);
    ax_ocl_arg_long(launch, count);
}

void ax_ocl_gather_rows_device(ax_backend *backend, void *dst, const float *block, int64_t width,
                               int64_t block_first, int64_t block_rows, const void *order,
                               int order_bytes, int64_t first, int64_t count)
{
    if (count <= 0 || width <= 0 || block_rows <= 0)
        return;
    ax_ocl_launch launch = ax_ocl_begin(ax_ocl(backend), AX_OCL_GATHER_ROWS, "gather_rows_device");
    ax_ocl_arg_array(&launch, dst);
    ax_ocl_arg_array(&launch, block);
    ax_ocl_arg_long(&launch, width);
    ax_ocl_arg_long(&launch, block_first);
    ax_ocl_arg_long(&launch, block_rows);
    arg_rows_in_order(&launch, order, order_bytes, first, count);
    /* A group of up to 64 work-items per row, at most 4096 groups. */
    const size_t local = ax_ocl(backend)->group < 64 ? ax_ocl(backend)->group : 64;
    const int64_t groups = count < 4096 ? count : 4096;
    ax_ocl_run(&launch, (size_t)groups * local, local);
}

void ax_ocl_gather_labels_device(ax_backend *backend, int32_t *dst, const int32_t *labels,
                                 const void *order, int order_bytes, int64_t first, int64_t count)
{
    if (count <= 0)
        return;
    ax_ocl_launch launch = ax_ocl_begin(ax_ocl(backend), AX_OCL_GATHER_LABELS,
                                        "gather_labels_device");
    ax_ocl_arg_array(&launch, dst);
    ax_ocl_arg_array(&launch, labels);
    arg_rows_in_order(&launch, order, order_bytes, first, count);
    ax_ocl_run(&launch, ax_ocl_elementwise_items(count), 0);
}

/* --------------------------------------- losses kept on the device */

bool ax_ocl_loss_defer(ax_backend *backend, bool on)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    ob->defer_losses = on && ob->acc_f64 && ob->loss_state;
    return ob->defer_losses;
}

void ax_ocl_loss_accumulate(ax_backend *backend, double scale, double weight, int64_t step)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    if (!ob->loss_state)
        return;
    ax_ocl_launch launch = ax_ocl_begin(ob, AX_OCL_LOSS_ACCUMULATE, "loss_accumulate");
    ax_ocl_arg_buffer(&launch, ob->loss_state);
    ax_ocl_arg_acc(&launch, scale); /* acc is double where loss_state exists */
    ax_ocl_arg_acc(&launch, weight);
    ax_ocl_arg_acc(&launch, (double)step);
    ax_ocl_run(&launch, 1, 1);
}

void ax_ocl_loss_reset(ax_backend *backend, double start)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    if (!ob->loss_state)
        return;
    ax_ocl_launch launch = ax_ocl_begin(ob, AX_OCL_LOSS_RESET, "loss_reset");
    ax_ocl_arg_buffer(&launch, ob->loss_state);
    ax_ocl_arg_acc(&launch, start);
    ax_ocl_run(&launch, 1, 1);
}

void ax_ocl_loss_read(ax_backend *backend, double *total, int64_t *first_bad, double *bad_value)
{
    ax_ocl_backend *ob = ax_ocl(backend);
    double state[4] = {NAN, NAN, -1.0, NAN};
    if (!ob->loss_state || ob->error ||
        AX_OCL_CHECK(ob, clEnqueueReadBuffer(ob->queue, ob->loss_state, CL_TRUE, 0, sizeof state,
                                             state, 0, NULL, NULL))) {
        state[1] = NAN; /* the failure is the backend's status, asked before divergence */
        state[2] = -1.0;
    }
    *total = state[1];
    *first_bad = (int64_t)state[2];
    *bad_value = state[3];
}
