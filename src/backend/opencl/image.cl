/* image.cl: the OpenCL backend's image operations (backend.h: im2col,
 * col2im, max and mean pooling both ways, batched transposes), built into
 * the same program as kernels.cl (which defines real, AT and the options).
 *
 * Each work-item computes whole output values (grid-stride loops), so no
 * two work-items write the same value and no atomics are needed: col2im and
 * pool_backward gather, for each input value, the entries that the CPU
 * kernels (src/backend/cpu/cpu_image_kernels.inc) scatter to it, in the
 * CPU's order (kernel row, then kernel column; windows by output row, then
 * column), starting from 0: the same sums, so the same bits. Windows of a
 * geometry: (height, width, channels) images, (kh, kw) windows moved by
 * `stride`, `padding` zeros around; columns in (kh, kw, channel) order. */

#define GEOMETRY long height, long width, long channels, long kh, long kw, long stride, \
                 long padding, long oh, long ow

/* columns (images * oh * ow, kh * kw * channels) from x (images, height,
 * width, channels); one work-item per column entry. */
__kernel void ax_im2col(GEOMETRY, __global const real *x_, ulong x_offset, __global real *cols_,
                        ulong cols_offset, long images)
{
    __global const real *x = AT(const real, x_, x_offset);
    __global real *cols = AT(real, cols_, cols_offset);
    const long patch = kh * kw * channels, run = kw * channels;
    const long count = images * oh * ow * patch;
    for (long e = get_global_id(0); e < count; e += get_global_size(0)) {
        const long row = e / patch, v = e - row * patch;
        const long i = v / run, rest = v - i * run;
        const long j = rest / channels, ch = rest - j * channels;
        const long n = row / (oh * ow), position = row - n * (oh * ow);
        const long oy = position / ow, ox = position - oy * ow;
        const long y = oy * stride - padding + i, xx = ox * stride - padding + j;
        const bool inside = y >= 0 && y < height && xx >= 0 && xx < width;
        cols[e] = inside ? x[((n * height + y) * width + xx) * channels + ch] : (real)0;
    }
}

/* x (images, height, width, channels) = for each value, the sum of the
 * column entries im2col copies it to; one work-item per value of x. */
__kernel void ax_col2im(GEOMETRY, __global const real *cols_, ulong cols_offset,
                        __global real *x_, ulong x_offset, long images)
{
    __global const real *cols = AT(const real, cols_, cols_offset);
    __global real *x = AT(real, x_, x_offset);
    const long patch = kh * kw * channels;
    const long count = images * height * width * channels;
    for (long e = get_global_id(0); e < count; e += get_global_size(0)) {
        const long pixel = e / channels, ch = e - pixel * channels;
        const long nrow = pixel / width, xx = pixel - nrow * width;
        const long n = nrow / height, y = nrow - n * height;
        real sum = 0;
        for (long i = 0; i < kh; i++) {
            const long ty = y + padding - i;
            if (ty < 0 || ty % stride != 0 || ty / stride >= oh)
                continue;
            __global const real *band = cols + (n * oh + ty / stride) * ow * patch + i * kw * channels;
            for (long j = 0; j < kw; j++) {
                const long tx = xx + padding - j;
                if (tx < 0 || tx % stride != 0 || tx / stride >= ow)
                    continue;
                sum += band[(tx / stride) * patch + j * channels + ch];
            }
        }
        x[e] = sum;
    }
}

/* y (images, oh, ow, channels) = each window's largest value (is_max; a NaN
 * wins, as on the CPU) or its mean (sum times `mean`, 1 / (kh kw) rounded
 * on the host as the CPU rounds it); padding is 0. */
__kernel void ax_pool_forward(int is_max, real mean, GEOMETRY, __global const real *x_,
                              ulong x_offset, __global real *y_, ulong y_offset, long images)
{
    __global const real *x = AT(const real, x_, x_offset);
    __global real *y = AT(real, y_, y_offset);
    (void)padding;
    const long count = images * oh * ow * channels;
    for (long e = get_global_id(0); e < count; e += get_global_size(0)) {
        const long position = e / channels, ch = e - position * channels;
        const long nrow = position / ow, ox = position - nrow * ow;
        const long n = nrow / oh, oy = nrow - n * oh;
        __global const real *corner =
            x + ((n * height + oy * stride) * width + ox * stride) * channels + ch;
        real out = is_max ? corner[0] : (real)0;
        for (long i = 0; i < kh; i++)
            for (long j = 0; j < kw; j++) {
                const real v = corner[(i * width + j) * channels];
                if (is_max)
                    out = v > out || v != v ? v : out;
                else
                    out += v;
            }
        y[e] = is_max ? out : out * mean;
    }
}

/* dx (images, height, width, channels) = d loss / dx for dy (images, oh, ow,
 * channels): for each value of x, the windows that hold it in the CPU's
 * order; a max window gives its gradient to the first position (in window
 * order) equal to its largest value (the CPU's rule, NaN included), a mean
 * window dy times `mean` to each. A value is its window's chosen position
 * when, the window read once and left at the first value that rules it out,
 * no value before it is as large and none after it larger, and no value is
 * NaN (a NaN value: no NaN before it), which is the CPU's rule without
 * finding the maximum first. */
__kernel void ax_pool_backward(int is_max, real mean, GEOMETRY, __global const real *x_,
                               ulong x_offset, __global const real *dy_, ulong dy_offset,
                               __global real *dx_, ulong dx_offset, long images)
{
    __global const real *x = AT(const real, x_, x_offset);
    __global const real *dy = AT(const real, dy_, dy_offset);
    __global real *dx = AT(real, dx_, dx_offset);
    (void)padding;
    const long count = images * height * width * channels;
    for (long e = get_global_id(0); e < count; e += get_global_size(0)) {
        const long pixel = e / channels, ch = e - pixel * channels;
        const long nrow = pixel / width, xx = pixel - nrow * width;
        const long n = nrow / height, y = nrow - n * height;
        /* windows oy with oy stride <= y < oy stride + kh, likewise ox */
        const long oy_first = y >= kh ? (y - kh) / stride + 1 : 0;
        const long ox_first = xx >= kw ? (xx - kw) / stride + 1 : 0;
        const long oy_last = min(y / stride, oh - 1), ox_last = min(xx / stride, ow - 1);
        __global const real *image = x + n * height * width * channels + ch;
        const real mine = image[(y * width + xx) * channels];
        real sum = 0;
        for (long oy = oy_first; oy <= oy_last; oy++)
            for (long ox = ox_first; ox <= ox_last; ox++) {
                const real top = dy[((n * oh + oy) * ow + ox) * channels + ch];
                if (!is_max) {
                    sum += top * mean;
                    continue;
                }
                __global const real *origin = image + (oy * stride * width + ox * stride) * channels;
                const long here = (y - oy * stride) * kw + (xx - ox * stride);
                bool hit = true;
                for (long i = 0; i < kh && hit; i++)
                    for (long j = 0; j < kw && hit; j++) {
                        const long k = i * kw + j;
                        const real v = origin[(i * width + j) * channels];
                        hit = k == here || !(mine != mine ? k < here && v != v
                                                          : v != v || v > mine ||
                                                                (k < here && v == mine));
                    }
                if (hit)
                    sum += top;
            }
        dx[e] = sum;
    }
}

/* dst (batches, cols, rows) = each (rows, cols) matrix of src transposed;
 * one work-item per value of dst. */
__kernel void ax_transpose(__global const real *src_, ulong src_offset, __global real *dst_,
                           ulong dst_offset, long batches, long rows, long cols)
{
    __global const real *src = AT(const real, src_, src_offset);
    __global real *dst = AT(real, dst_, dst_offset);
    const long count = batches * rows * cols;
    for (long e = get_global_id(0); e < count; e += get_global_size(0)) {
        const long bc = e / rows, r = e - bc * rows;
        const long b = bc / cols, col = bc - b * cols;
        dst[e] = src[(b * rows + r) * cols + col];
    }
}
