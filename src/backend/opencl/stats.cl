/* stats.cl: the activation statistics on an OpenCL device (the CPU
 * versions are src/stats/entropy.c and tensor_mean.c; the host side is
 * opencl_stats.c). Built in one program after kernels.cl, whose helpers
 * (acc, group_sum) it uses; float inputs whatever the program's `real`. */

/* Per row of x and y (rows, d), one work-item each: sum P^2 and sum Q^2 of
 * the row's softmax, with exponentials and partial sums in float over
 * chunks of 512 values whose sums are added in double (entropy.c's
 * precision). Per group: partials[group] = sum over its rows of P2,
 * [groups + group] of P2 * Q2, [2 groups + group] the rows holding NaN or
 * Inf (left out of the sums), added to what is there when accumulate. */
static void row_p2(__global const float *row, long d, acc *p2, int *finite)
{
    float m = row[0];
    for (long i = 0; i < d; i++) {
        *finite &= isfinite(row[i]);
        m = fmax(m, row[i]);
    }
    acc s = 0, s2 = 0;
    for (long first = 0; first < d; first += 512) {
        const long last = first + 512 < d ? first + 512 : d;
        float cs = 0.0f, cs2 = 0.0f;
        for (long i = first; i < last; i++) {
            const float e = exp(row[i] - m);
            cs += e;
            cs2 += e * e;
        }
        s += (acc)cs;
        s2 += (acc)cs2;
    }
    *p2 = s2 / (s * s);
}

__kernel void ax_entropy_rows(__global const float *x, __global const float *y, long rows, long d,
                              __global acc *partials, int accumulate)
{
    __local acc sums[AX_GROUP];
    acc p2_sum = 0, p2q2_sum = 0, bad = 0;
    for (long r = get_global_id(0); r < rows; r += get_global_size(0)) {
        acc p2, q2;
        int finite = 1;
        row_p2(x + r * d, d, &p2, &finite);
        row_p2(y + r * d, d, &q2, &finite);
        if (finite) {
            p2_sum += p2;
            p2q2_sum += p2 * q2;
        } else {
            bad += 1;
        }
    }
    const size_t groups = get_num_groups(0), group = get_group_id(0);
    const acc values[3] = {group_sum(sums, p2_sum), group_sum(sums, p2q2_sum),
                           group_sum(sums, bad)};
    if (get_local_id(0) == 0)
        for (int s = 0; s < 3; s++)
            partials[s * groups + group] = accumulate ? partials[s * groups + group] + values[s]
                                                      : values[s];
}

/* k (rows, d*d) = the row-wise Khatri-Rao product of fx and fy (rows, d):
 * k[r, i*d + j] = fx[r,i] fy[r,j]; CLBlast's SGEMM then adds k^T fz / n. */
__kernel void ax_khatri_rao(__global const float *fx, __global const float *fy, long rows, long d,
                            __global float *k)
{
    const long dd = d * d, count = rows * dd;
    for (long e = get_global_id(0); e < count; e += get_global_size(0)) {
        const long r = e / dd, c = e - r * dd, i = c / d, j = c - i * d;
        k[e] = fx[r * d + i] * fy[r * d + j];
    }
}
