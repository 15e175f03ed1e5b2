/* opencl_image.c: the optional image operations of backend.h (im2col,
 * col2im, pooling both ways, batched transposes) as kernels of image.cl:
 * arguments in the kernel's order and the work size. Every kernel walks its
 * outputs with a stride of the global size, so any count fits any launch. */
#include "backend/opencl/opencl_internal.h"

static void arg_geometry(ax_ocl_launch *launch, const ax_window_geometry *g)
{
    ax_ocl_arg_long(launch, g->height);
    ax_ocl_arg_long(launch, g->width);
    ax_ocl_arg_long(launch, g->channels);
    ax_ocl_arg_long(launch, g->kernel_height);
    ax_ocl_arg_long(launch, g->kernel_width);
    ax_ocl_arg_long(launch, g->stride);
    ax_ocl_arg_long(launch, g->padding);
    ax_ocl_arg_long(launch, g->out_height);
    ax_ocl_arg_long(launch, g->out_width);
}

/* 1 / (kh kw) rounded in the backend's precision, as the CPU's kernels
 * compute it (a float division, not a double one rounded to float). */
static double mean_factor(const ax_backend *backend, const ax_window_geometry *g)
{
    const int64_t window = g->kernel_height * g->kernel_width;
    if (backend->precision == AX_PRECISION_F32)
        return (double)(1.0f / (float)window);
    return 1.0 / (double)window;
}

void ax_ocl_im2col(ax_backend *backend, const ax_window_geometry *g, const void *x, void *columns,
                   int64_t images)
{
    const int64_t count =
        images * g->out_height * g->out_width * g->kernel_height * g->kernel_width * g->channels;
    if (count <= 0)
        return;
    ax_ocl_launch launch = ax_ocl_begin(ax_ocl(backend), AX_OCL_IM2COL, "im2col");
    arg_geometry(&launch, g);
    ax_ocl_arg_array(&launch, x);
    ax_ocl_arg_array(&launch, columns);
    ax_ocl_arg_long(&launch, images);
    ax_ocl_run(&launch, ax_ocl_elementwise_items(count), 0);
}

void ax_ocl_col2im(ax_backend *backend, const ax_window_geometry *g, const void *columns, void *x,
                   int64_t images)
{
    const int64_t count = images * g->height * g->width * g->channels;
    if (count <= 0)
        return;
    ax_ocl_launch launch = ax_ocl_begin(ax_ocl(backend), AX_OCL_COL2IM, "col2im");
    arg_geometry(&launch, g);
    ax_ocl_arg_array(&launch, columns);
    ax_ocl_arg_array(&launch, x);
    ax_ocl_arg_long(&launch, images);
    ax_ocl_run(&launch, ax_ocl_elementwise_items(count), 0);
}

void ax_ocl_pool_forward(ax_backend *backend, bool max, const ax_window_geometry *g, const void *x,
                         void *y, int64_t images)
{
    const int64_t count = images * g->out_height * g->out_width * g->channels;
    if (count <= 0)
        return;
    ax_ocl_launch launch = ax_ocl_begin(ax_ocl(backend), AX_OCL_POOL_FORWARD, "pool_forward");
    ax_ocl_arg_int(&launch, max);
    ax_ocl_arg_real(&launch, mean_factor(backend, g));
    arg_geometry(&launch, g);
    ax_ocl_arg_array(&launch, x);
    ax_ocl_arg_array(&launch, y);
    ax_ocl_arg_long(&launch, images);
    ax_ocl_run(&launch, ax_ocl_elementwise_items(count), 0);
}

void ax_ocl_pool_backward(ax_backend *backend, bool max, const ax_window_geometry *g,
                          const void *x, const void *dy, void *dx, int64_t images)
{
    const int64_t count = images * g->height * g->width * g->channels;
    if (count <= 0)
        return;
    ax_ocl_launch launch = ax_ocl_begin(ax_ocl(backend), AX_OCL_POOL_BACKWARD, "pool_backward");
    ax_ocl_arg_int(&launch, max);
    ax_ocl_arg_real(&launch, mean_factor(backend, g));
    arg_geometry(&launch, g);
    ax_ocl_arg_array(&launch, x);
    ax_ocl_arg_array(&launch, dy);
    ax_ocl_arg_array(&launch, dx);
    ax_ocl_arg_long(&launch, images);
    ax_ocl_run(&launch, ax_ocl_elementwise_items(count), 0);
}

void ax_ocl_transpose(ax_backend *backend, const void *src, void *dst, int64_t batches,
                      int64_t rows, int64_t cols)
{
    const int64_t count = batches * rows * cols;
    if (count <= 0)
        return;
    ax_ocl_launch launch = ax_ocl_begin(ax_ocl(backend), AX_OCL_TRANSPOSE, "transpose");
    ax_ocl_arg_array(&launch, src);
    ax_ocl_arg_array(&launch, dst);
    ax_ocl_arg_long(&launch, batches);
    ax_ocl_arg_long(&launch, rows);
    ax_ocl_arg_long(&launch, cols);
    ax_ocl_run(&launch, ax_ocl_elementwise_items(count), 0);
}
