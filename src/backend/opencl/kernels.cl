/* kernels.cl: the OpenCL backend's kernels (every operation of backend.h
 * but the GEMMs, which CLBlast does), compiled into the plugin as a string
 * and built once per context and precision with
 *   -DAX_F64        real is double (else float)
 *   -DAX_ACC_F64    reductions accumulate in double (the device has fp64)
 *   -DAX_GROUP=N    work-items per group of the reductions (a power of two)
 *   -DACT_*=N       axon.h's ax_activation values
 * Each array comes as a buffer and a byte offset into it (opencl_internal.h
 * says why). The arithmetic of each element is the CPU kernels'
 * (src/backend/cpu/cpu_*kernels.inc); reductions are per-group trees in
 * local memory whose partials the host adds in order: the same bits every
 * run. Contraction into FMAs is off, as in the CPU build (-std=c11). */
#pragma OPENCL FP_CONTRACT OFF

#if defined(AX_F64) || defined(AX_ACC_F64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#ifdef AX_F64
typedef double real;
#define LOG_FLOOR 2.2250738585072014e-308
#else
typedef float real;
#define LOG_FLOOR 1.1754943508222875e-38
#endif
#ifdef AX_ACC_F64
typedef double acc;
#else
typedef float acc;
#endif

#define AT(type, base, offset) ((__global type *)((__global char *)(base) + (offset)))

/* A tree sum over the group, in an order fixed by the work-items' indices. */
static acc group_sum(__local acc *sums, acc v)
{
    const size_t lid = get_local_id(0);
    sums[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t width = AX_GROUP / 2; width > 0; width >>= 1) {
        if (lid < width)
            sums[lid] += sums[lid + width];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const acc total = sums[0];
    barrier(CLK_LOCAL_MEM_FENCE); /* sums may be reused by a later call */
    return total;
}

static real activate(int activation, real v)
{
    if (activation == ACT_SIGMOID)
        return (real)1 / ((real)1 + exp(-v));
    if (activation == ACT_TANH)
        return tanh(v);
    if (activation == ACT_RELU)
        return v > 0 ? v : (v == v ? (real)0 : v); /* NaN stays visible, as on the CPU */
    return v;
}

/* z (rows, cols) = act(z + bias (cols)), elementwise activations. */
__kernel void ax_bias_activation(int activation, __global real *z_, ulong z_offset,
                              __global const real *bias_, ulong bias_offset, long rows, long cols)
{
    __global real *z = AT(real, z_, z_offset);
    __global const real *bias = AT(const real, bias_, bias_offset);
    const long count = rows * cols;
    for (long i = get_global_id(0); i < count; i += get_global_size(0))
        z[i] = activate(activation, z[i] + bias[i % cols]);
}

/* Row-wise softmax of z + bias, one work-item per row. */
__kernel void ax_softmax(__global real *z_, ulong z_offset, __global const real *bias_,
                      ulong bias_offset, long rows, long cols)
{
    __global real *z = AT(real, z_, z_offset);
    __global const real *bias = AT(const real, bias_, bias_offset);
    for (long r = get_global_id(0); r < rows; r += get_global_size(0)) {
        __global real *row = z + r * cols;
        real largest = row[0] + bias[0];
        for (long c = 0; c < cols; c++) {
            row[c] += bias[c];
            largest = row[c] > largest ? row[c] : largest;
        }
        real sum = 0;
        for (long c = 0; c < cols; c++) {
            row[c] = exp(row[c] - largest);
            sum += row[c];
        }
        const real inverse = (real)1 / sum;
        for (long c = 0; c < cols; c++)
            row[c] *= inverse;
    }
}

static real derivative(int activation, real d, real y, real s)
{
    if (activation == ACT_SIGMOID)
        return d * (s * y * ((real)1 - s * y));
    if (activation == ACT_TANH)
        return d * ((real)1 - s * s * y * y);
    if (activation == ACT_RELU)
        return y > 0 ? d : (real)0;
    return d;
}

/* Column sums of delta (rows, cols) by chunks of rows: work-item (chunk, c)
 * sums rows [chunk * rows_per_chunk, ..) of column c into
 * partials[chunk * cols + c], or straight into out when there is one chunk.
 * With apply, delta is first multiplied by act'(a * a_scale). */
__kernel void ax_column_partials(int apply, int activation, __global real *delta_,
                              ulong delta_offset, __global const real *a_, ulong a_offset,
                              real a_scale, long rows, long cols, long rows_per_chunk,
                              long chunks, __global acc *partials, __global real *out_,
                              ulong out_offset)
{
    __global real *delta = AT(real, delta_, delta_offset);
    __global const real *a = AT(const real, a_, a_offset);
    __global real *out = AT(real, out_, out_offset);
    const long i = get_global_id(0);
    if (i >= chunks * cols)
        return;
    const long chunk = i / cols, c = i - chunk * cols;
    const long first = chunk * rows_per_chunk;
    const long last = first + rows_per_chunk < rows ? first + rows_per_chunk : rows;
    acc sum = 0;
    for (long r = first; r < last; r++) {
        real d = delta[r * cols + c];
        if (apply) {
            d = derivative(activation, d, a[r * cols + c], a_scale);
            delta[r * cols + c] = d;
        }
        sum += (acc)d;
    }
    if (chunks == 1)
        out[c] = (real)sum;
    else
        partials[i] = sum;
}

__kernel void ax_sum_chunks(__global const acc *partials, long chunks, long cols,
                         __global real *out_, ulong out_offset)
{
    __global real *out = AT(real, out_, out_offset);
    for (long c = get_global_id(0); c < cols; c += get_global_size(0)) {
        acc total = 0;
        for (long k = 0; k < chunks; k++)
            total += partials[k * cols + c];
        out[c] = (real)total;
    }
}

/* log of a probability, floored at the smallest normal value (as the CPU's
 * losses), so that a probability of 0 costs a large finite amount. */
static acc floored_log(acc q) { return log(q > (acc)LOG_FLOOR ? q : (acc)LOG_FLOOR); }

/* The losses: each group writes its partial sum of the loss; delta is
 * written when has_delta. */
__kernel void ax_cross_entropy(__global const real *p_, ulong p_offset, __global const int *labels_,
                            ulong labels_offset, __global real *delta_, ulong delta_offset,
                            int has_delta, real scale, long rows, long cols,
                            __global acc *partials)
{
    __local acc sums[AX_GROUP];
    __global const real *p = AT(const real, p_, p_offset);
    __global const int *labels = AT(const int, labels_, labels_offset);
    __global real *delta = AT(real, delta_, delta_offset);
    acc loss = 0;
    const long count = rows * cols;
    for (long i = get_global_id(0); i < count; i += get_global_size(0)) {
        const long r = i / cols, c = i - r * cols;
        const bool is_label = labels[r] == c;
        if (is_label) {
            const acc probability = (acc)p[i];
            loss -= floored_log(probability);
        }
        if (has_delta) {
            const real d = scale * p[i];
            delta[i] = is_label ? d - scale : d;
        }
    }
    loss = group_sum(sums, loss);
    if (get_local_id(0) == 0)
        partials[get_group_id(0)] = loss;
}

/* With labels (has_labels), the answers are the one-hot rows of labels. */
__kernel void ax_binary_cross_entropy(__global const real *p_, ulong p_offset,
                                   __global const int *labels_, ulong labels_offset,
                                   int has_labels, __global const real *targets_,
                                   ulong targets_offset, __global real *delta_,
                                   ulong delta_offset, int has_delta, acc scale, long rows,
                                   long cols, __global acc *partials)
{
    __local acc sums[AX_GROUP];
    __global const real *p = AT(const real, p_, p_offset);
    __global const int *labels = AT(const int, labels_, labels_offset);
    __global const real *targets = AT(const real, targets_, targets_offset);
    __global real *delta = AT(real, delta_, delta_offset);
    acc loss = 0;
    const long count = rows * cols;
    for (long i = get_global_id(0); i < count; i += get_global_size(0)) {
        const long r = i / cols, c = i - r * cols;
        const acc y = has_labels ? (labels[r] == c ? (acc)1 : (acc)0) : (acc)targets[i];
        const acc q = (acc)p[i], q1 = (acc)1 - q;
        if (has_labels)
            loss -= floored_log(y != 0 ? q : q1);
        else
            loss -= y * floored_log(q) + ((acc)1 - y) * floored_log(q1);
        if (has_delta)
            delta[i] = (real)(scale * (q - y));
    }
    loss = group_sum(sums, loss);
    if (get_local_id(0) == 0)
        partials[get_group_id(0)] = loss;
}

__kernel void ax_squared_error(__global const real *p_, ulong p_offset, __global const int *labels_,
                            ulong labels_offset, int has_labels, __global const real *targets_,
                            ulong targets_offset, __global real *delta_, ulong delta_offset,
                            int has_delta, acc scale, long rows, long cols,
                            __global acc *partials)
{
    __local acc sums[AX_GROUP];
    __global const real *p = AT(const real, p_, p_offset);
    __global const int *labels = AT(const int, labels_, labels_offset);
    __global const real *targets = AT(const real, targets_, targets_offset);
    __global real *delta = AT(real, delta_, delta_offset);
    acc loss = 0;
    const long count = rows * cols;
    for (long i = get_global_id(0); i < count; i += get_global_size(0)) {
        const long r = i / cols, c = i - r * cols;
        const acc y = has_labels ? (labels[r] == c ? (acc)1 : (acc)0) : (acc)targets[i];
        const acc difference = (acc)p[i] - y;
        loss += difference * difference;
        if (has_delta)
            delta[i] = (real)((acc)2 * scale * difference);
    }
    loss = group_sum(sums, loss);
    if (get_local_id(0) == 0)
        partials[get_group_id(0)] = loss;
}

/* splitmix64's finaliser, base/random.h's ax_hash64: the same bits. */
static ulong hash64(ulong x)
{
    x += 0x9e3779b97f4a7c15UL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9UL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebUL;
    return x ^ (x >> 31);
}

/* Inverted dropout with the CPU's mask (cpu_kernels.inc): element (r, c)
 * is kept when the high 32 bits of its hash reach the threshold. */
__kernel void ax_dropout(__global real *a_, ulong a_offset, ulong threshold, real keep_scale,
                      ulong key, long row_offset, long rows, long cols)
{
    __global real *a = AT(real, a_, a_offset);
    const long count = rows * cols;
    for (long i = get_global_id(0); i < count; i += get_global_size(0)) {
        const long r = i / cols, c = i - r * cols;
        const ulong row_key = hash64(key ^ ((ulong)(row_offset + r) * 0xd1b54a32d192ed03UL));
        const ulong bits = hash64(row_key + (ulong)c) >> 32;
        a[i] = bits >= threshold ? a[i] * keep_scale : (real)0;
    }
}

__kernel void ax_axpy(long count, real alpha, __global const real *x_, ulong x_offset,
                   __global real *y_, ulong y_offset)
{
    __global const real *x = AT(const real, x_, x_offset);
    __global real *y = AT(real, y_, y_offset);
    for (long i = get_global_id(0); i < count; i += get_global_size(0))
        y[i] += alpha * x[i];
}

__kernel void ax_scale(long count, real alpha, __global real *x_, ulong x_offset)
{
    __global real *x = AT(real, x_, x_offset);
    for (long i = get_global_id(0); i < count; i += get_global_size(0))
        x[i] *= alpha;
}

__kernel void ax_dot(long count, __global const real *x_, ulong x_offset, __global const real *y_,
                  ulong y_offset, __global acc *partials)
{
    __local acc sums[AX_GROUP];
    __global const real *x = AT(const real, x_, x_offset);
    __global const real *y = AT(const real, y_, y_offset);
    acc sum = 0;
    for (long i = get_global_id(0); i < count; i += get_global_size(0))
        sum += (acc)x[i] * (acc)y[i];
    sum = group_sum(sums, sum);
    if (get_local_id(0) == 0)
        partials[get_group_id(0)] = sum;
}

/* sum |x| into partials; with has_y, y += alpha sign(x) (sign(0) = 0). */
__kernel void ax_l1(long count, __global const real *x_, ulong x_offset, __global real *y_,
                 ulong y_offset, real alpha, int has_y, __global acc *partials)
{
    __local acc sums[AX_GROUP];
    __global const real *x = AT(const real, x_, x_offset);
    __global real *y = AT(real, y_, y_offset);
    acc sum = 0;
    for (long i = get_global_id(0); i < count; i += get_global_size(0)) {
        const real v = x[i];
        sum += (acc)fabs(v);
        if (has_y)
            y[i] += alpha * (real)((v > 0) - (v < 0));
    }
    sum = group_sum(sums, sum);
    if (get_local_id(0) == 0)
        partials[get_group_id(0)] = sum;
}

__kernel void ax_clamp(long count, real limit, __global real *x_, ulong x_offset)
{
    __global real *x = AT(real, x_, x_offset);
    for (long i = get_global_id(0); i < count; i += get_global_size(0))
        x[i] = x[i] > limit ? limit : x[i] < -limit ? -limit : x[i];
}

/* Counts the values that are NaN or infinite (x - x is NaN for both). */
__kernel void ax_count_nonfinite(long count, __global const real *x_, ulong x_offset,
                              __global acc *partials)
{
    __local acc sums[AX_GROUP];
    __global const real *x = AT(const real, x_, x_offset);
    acc bad = 0;
    for (long i = get_global_id(0); i < count; i += get_global_size(0))
        bad += !(x[i] - x[i] == 0) ? (acc)1 : (acc)0;
    bad = group_sum(sums, bad);
    if (get_local_id(0) == 0)
        partials[get_group_id(0)] = bad;
}

/* mode 0: plain SGD, 1: momentum, 2: Nesterov momentum (PyTorch's). */
__kernel void ax_sgd(long count, __global real *p_, ulong p_offset, __global const real *g_,
                  ulong g_offset, __global real *v_, ulong v_offset, real lr, real mu, int mode)
{
    __global real *p = AT(real, p_, p_offset);
    __global const real *g = AT(const real, g_, g_offset);
    __global real *v = AT(real, v_, v_offset);
    for (long i = get_global_id(0); i < count; i += get_global_size(0)) {
        if (mode == 0) {
            p[i] -= lr * g[i];
        } else {
            const real velocity = mu * v[i] + g[i];
            v[i] = velocity;
            p[i] -= mode == 2 ? lr * (g[i] + mu * velocity) : lr * velocity;
        }
    }
}

__kernel void ax_adam(long count, __global real *p_, ulong p_offset, __global const real *g_,
                   ulong g_offset, __global real *m_, ulong m_offset, __global real *v_,
                   ulong v_offset, real step_size, real inverse_sqrt_c2, real b1, real b2,
                   real eps)
{
    __global real *p = AT(real, p_, p_offset);
    __global const real *g = AT(const real, g_, g_offset);
    __global real *m = AT(real, m_, m_offset);
    __global real *v = AT(real, v_, v_offset);
    for (long i = get_global_id(0); i < count; i += get_global_size(0)) {
        const real gi = g[i];
        const real mi = b1 * m[i] + ((real)1 - b1) * gi;
        const real vi = b2 * v[i] + ((real)1 - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] -= step_size * mi / (sqrt(vi) * inverse_sqrt_c2 + eps);
    }
}

/* The first index of each row's largest value (NaN never wins). */
__kernel void ax_argmax(__global const real *outputs_, ulong outputs_offset, __global int *indices,
                     long rows, long cols)
{
    __global const real *outputs = AT(const real, outputs_, outputs_offset);
    for (long r = get_global_id(0); r < rows; r += get_global_size(0)) {
        __global const real *row = outputs + r * cols;
        int best = 0;
        real best_value = row[0];
        for (long c = 1; c < cols; c++)
            if (row[c] > best_value) {
                best_value = row[c];
                best = (int)c;
            }
        indices[r] = best;
    }
}

/* Data sets on the device (backend.h, version 4): a batch gathered from a
 * float32 block of a set's rows by the epoch's order (int32 or int64 a
 * row), converted to real as the host gather converts. */
static long order_at(__global const char *order, int order_bytes, long i)
{
    return order_bytes == 4 ? (long)((__global const int *)order)[i]
                            : ((__global const long *)order)[i];
}

/* A work-group per batch row (strided), its work-items along the row's
 * columns: reads of a row are contiguous (coalesced on a GPU, vectorised
 * by PoCL), and no division per element. */
__kernel void ax_gather_rows(__global real *dst_, ulong dst_offset, __global const float *block_,
                             ulong block_offset, long width, long block_first, long block_rows,
                             __global const char *order_, ulong order_offset, int has_order,
                             int order_bytes, long first, long count)
{
    __global real *dst = AT(real, dst_, dst_offset);
    __global const float *block = AT(const float, block_, block_offset);
    __global const char *order = order_ + order_offset;
    for (long r = get_group_id(0); r < count; r += get_num_groups(0)) {
        const long row = has_order ? order_at(order, order_bytes, first + r) : first + r;
        if (row < block_first || row >= block_first + block_rows)
            continue;
        __global const float *from = block + (row - block_first) * width;
        __global real *to = dst + r * width;
        for (long c = get_local_id(0); c < width; c += get_local_size(0))
            to[c] = (real)from[c];
    }
}

__kernel void ax_gather_labels(__global int *dst_, ulong dst_offset, __global const int *labels_,
                               ulong labels_offset, __global const char *order_,
                               ulong order_offset, int has_order, int order_bytes, long first,
                               long count)
{
    __global int *dst = AT(int, dst_, dst_offset);
    __global const int *labels = AT(const int, labels_, labels_offset);
    __global const char *order = order_ + order_offset;
    for (long r = get_global_id(0); r < count; r += get_global_size(0))
        dst[r] = labels[has_order ? order_at(order, order_bytes, first + r) : first + r];
}

#ifdef AX_ACC_F64
/* Losses kept on the device (backend.h, version 4): state = [the last
 * deferred sum, the running total, the first bad step or -1, its loss],
 * float64. The
 * sum adds the partials in the order the host adds them (ax_ocl_finish_sum),
 * and the total takes the host's arithmetic: the same bits. */
__kernel void ax_loss_finish(__global const acc *partials, int groups, __global double *state)
{
    if (get_global_id(0) != 0)
        return;
    double sum = 0.0;
    for (int i = 0; i < groups; i++)
        sum += (double)partials[i];
    state[0] = sum;
}

__kernel void ax_loss_accumulate(__global double *state, double scale, double weight, double step)
{
    if (get_global_id(0) != 0)
        return;
    const double v = state[0] * scale;
    state[1] += v * weight;
    if (!isfinite(v) && state[2] < 0.0) {
        state[2] = step;
        state[3] = v;
    }
}

__kernel void ax_loss_reset(__global double *state, double start)
{
    if (get_global_id(0) != 0)
        return;
    state[1] = start;
    state[2] = -1.0;
}
#endif
