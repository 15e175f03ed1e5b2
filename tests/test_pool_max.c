/* test_pool_max.c: the CPU backend's max pooling (backend.h: pool_forward,
 * pool_backward with max) against its definition, written here a value at
 * a time in the plainest loops, bit for bit, in float32 and float64:
 * - forward: each window's largest value, a NaN winning (the last NaN in
 *   window order: NaN and -NaN are told apart);
 * - backward: each window's dy goes to the first position, in window order,
 *   that holds the window's maximum, where the maximum takes the first NaN
 *   if there is one (then the gradient goes to that first NaN); the
 *   contributions of overlapping windows add in window order, and a value
 *   that no window chose is +0;
 * over shapes that take the backend's unrolled 2x2 paths (2x2 windows of
 * stride 2 covering the image; 2x2 windows of other strides forward) with
 * channel counts on and off the vector width (1, 3, 16, 17, 32, 33, 64),
 * LeNet's two pooling shapes, and shapes that take the general loops
 * (3x3 windows, windows that do not cover the image, overlapping ones).
 * Values: a coarse grid (many ties, +0 and -0 in one window), and in every
 * other image also NaN, -NaN, +inf and -inf, so that some windows meet the
 * NaN rules and others run without them. Then the same on 1, 2 and 3
 * threads at sizes that run in parallel: the same bits. The same for
 * max_pool_backward_relu (backend.h, version 11): the backward pass's
 * gradient where x > 0, +0 elsewhere (NaN and -0 included). */
#include <stdint.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "test_util.h"

static uint64_t random_state = 5;
static uint64_t random_next(void)
{
    return test_random_next(&random_state);
}

/* A pooling input: grid values k / 2, k in [-3, 3] (ties), some -0; with
 * special values (NaN, -NaN, +inf, -inf) in odd images only. */
static double input_value(bool special)
{
    const uint64_t r = random_next() % 100;
    if (special && r < 4)
        return r < 2 ? (r == 0 ? NAN : -NAN) : (r == 2 ? INFINITY : -INFINITY);
    if (r < 12)
        return -0.0;
    return (double)((int64_t)(random_next() % 7) - 3) / 2;
}

/* A gradient value, never 0 (so +0 marks a value no window chose). */
static double gradient_value(void) { return (double)(random_next() % 1000 + 1) / 64 * (random_next() % 2 ? 1 : -1); }

static bool is_nan(double v) { return v != v; }

/* The window's forward maximum (the last NaN if any) and backward maximum
 * (the first NaN if any), by the definitions. */
static double forward_max(const double *window, int count)
{
    double m = window[0];
    for (int k = 0; k < count; k++)
        if (window[k] > m || is_nan(window[k]))
            m = window[k];
    return m;
}

static int first_maximum(const double *window, int count)
{
    double m = window[0];
    for (int k = 0; k < count; k++)
        if (window[k] > m || (is_nan(window[k]) && !is_nan(m)))
            m = window[k];
    for (int k = 0; k < count; k++)
        if (window[k] == m || (is_nan(window[k]) && is_nan(m)))
            return k;
    return -1; /* not reached: the maximum is one of the values */
}

typedef struct shape {
    int64_t images, height, width, channels, window, stride;
} shape;

static ax_window_geometry geometry_of(shape s)
{
    return (ax_window_geometry){s.height, s.width, s.channels, s.window, s.window, s.stride, 0,
                                (s.height - s.window) / s.stride + 1,
                                (s.width - s.window) / s.stride + 1};
}

/* y and dx by the definitions, in double (every value is exact in float). */
static void reference(shape s, const double *x, const double *dy, double *y, double *dx)
{
    const ax_window_geometry g = geometry_of(s);
    const int64_t c = s.channels, in = s.images * s.height * s.width * c;
    for (int64_t i = 0; i < in; i++)
        dx[i] = 0.0;
    double window[64];
    int64_t places[64];
    for (int64_t n = 0; n < s.images; n++)
        for (int64_t oy = 0; oy < g.out_height; oy++)
            for (int64_t ox = 0; ox < g.out_width; ox++)
                for (int64_t ch = 0; ch < c; ch++) {
                    int count = 0;
                    for (int64_t i = 0; i < s.window; i++)
                        for (int64_t j = 0; j < s.window; j++) {
                            const int64_t yy = oy * s.stride + i, xx = ox * s.stride + j;
                            places[count] = ((n * s.height + yy) * s.width + xx) * c + ch;
                            window[count] = x[places[count]];
                            count++;
                        }
                    const int64_t out = ((n * g.out_height + oy) * g.out_width + ox) * c + ch;
                    y[out] = forward_max(window, count);
                    dx[places[first_maximum(window, count)]] += dy[out];
                }
}

static void store(ax_backend *b, void *to, int64_t i, double v)
{
    if (b->real_size == sizeof(double))
        ((double *)to)[i] = v;
    else
        ((float *)to)[i] = (float)v;
}

/* The bits of element i as a double (float widened keeps NaN's sign). */
static double load(ax_backend *b, const void *from, int64_t i)
{
    return b->real_size == sizeof(double) ? ((const double *)from)[i]
                                          : (double)((const float *)from)[i];
}

static bool same_bits(double a, double b)
{
    if (is_nan(a) || is_nan(b))
        return is_nan(a) && is_nan(b) && signbit(a) == signbit(b);
    return a == b && signbit(a) == signbit(b);
}

/* Runs the backend on s and compares with the reference; returns the
 * number of values that differ. Leaves the backend's outputs in y, dx. */
static int64_t check_shape(ax_backend *b, shape s, void *x, void *dy, void *y, void *dx,
                           double *xd, double *dyd, double *yd, double *dxd)
{
    const ax_window_geometry g = geometry_of(s);
    const int64_t in = s.images * s.height * s.width * s.channels;
    const int64_t out = s.images * g.out_height * g.out_width * s.channels;
    for (int64_t i = 0; i < in; i++) {
        const int64_t image = i / (s.height * s.width * s.channels);
        xd[i] = input_value(image % 2 == 1);
        store(b, x, i, xd[i]);
    }
    for (int64_t i = 0; i < out; i++) {
        dyd[i] = gradient_value();
        store(b, dy, i, dyd[i]);
    }
    reference(s, xd, dyd, yd, dxd);
    b->ops->pool_forward(b, true, &g, x, y, s.images);
    b->ops->pool_backward(b, true, &g, x, dy, dx, s.images);
    int64_t wrong = 0;
    for (int64_t i = 0; i < out; i++)
        wrong += !same_bits(load(b, y, i), yd[i]);
    for (int64_t i = 0; i < in; i++)
        wrong += !same_bits(load(b, dx, i), dxd[i]);
    /* with ReLU's derivative of the layer below: +0 where x is not > 0 */
    b->ops->max_pool_backward_relu(b, &g, x, dy, dx, s.images);
    for (int64_t i = 0; i < in; i++)
        wrong += !same_bits(load(b, dx, i), xd[i] > 0 ? dxd[i] : 0.0);
    return wrong;
}

static const shape shapes[] = {
    /* 2x2, stride 2, covering: the unrolled paths both ways */
    {3, 4, 6, 1, 2, 2},   {3, 4, 6, 3, 2, 2},   {3, 6, 4, 16, 2, 2},  {3, 4, 4, 17, 2, 2},
    {2, 4, 6, 32, 2, 2},  {2, 2, 4, 33, 2, 2},  {2, 4, 4, 64, 2, 2},  {4, 24, 24, 32, 2, 2},
    {4, 8, 8, 64, 2, 2},
    /* 2x2 not covering (an odd side), overlapping (stride 1), with gaps
     * (stride 3): the unrolled forward, the general backward */
    {3, 5, 7, 3, 2, 2},   {2, 5, 5, 17, 2, 1},  {2, 8, 8, 5, 2, 3},
    /* other windows: the general loops (3x3 of stride 3 covering the image,
     * 3x3 of stride 2 overlapping, 1x1) */
    {2, 6, 9, 4, 3, 3},   {2, 7, 7, 33, 3, 2},  {2, 3, 3, 2, 1, 1},
};

/* Threads: the same bits on 1, 2 and 3 threads, at sizes that run in
 * parallel (LeNet's first pooling, a general one). */
static void check_threads(ax_backend *b, shape s)
{
    const ax_window_geometry g = geometry_of(s);
    const int64_t in = s.images * s.height * s.width * s.channels;
    const int64_t out = s.images * g.out_height * g.out_width * s.channels;
    const size_t real = b->real_size;
    char *x = malloc((size_t)in * real), *dy = malloc((size_t)out * real);
    char *y[3], *dx[3], *masked[3];
    for (int t = 0; t < 3; t++)
        y[t] = malloc((size_t)out * real), dx[t] = malloc((size_t)in * real),
        masked[t] = malloc((size_t)in * real);
    for (int64_t i = 0; i < in; i++)
        store(b, x, i, input_value(i / (s.height * s.width * s.channels) % 2 == 1));
    for (int64_t i = 0; i < out; i++)
        store(b, dy, i, gradient_value());
    for (int t = 0; t < 3; t++) {
        CHECK_OK(ax_set_threads(t + 1));
        b->ops->pool_forward(b, true, &g, x, y[t], s.images);
        b->ops->pool_backward(b, true, &g, x, dy, dx[t], s.images);
        b->ops->max_pool_backward_relu(b, &g, x, dy, masked[t], s.images);
    }
    for (int t = 1; t < 3; t++) {
        CHECK(memcmp(y[t], y[0], (size_t)out * real) == 0);
        CHECK(memcmp(dx[t], dx[0], (size_t)in * real) == 0);
        CHECK(memcmp(masked[t], masked[0], (size_t)in * real) == 0);
    }
    CHECK_OK(ax_set_threads(1));
    free(x), free(dy);
    for (int t = 0; t < 3; t++)
        free(y[t]), free(dx[t]), free(masked[t]);
}

int main(void)
{
    const ax_precision precisions[2] = {AX_PRECISION_F32, AX_PRECISION_F64};
    for (int p = 0; p < 2; p++) {
        ax_backend *b = ax_backend_cpu_create(precisions[p]);
        CHECK(b && b->ops->pool_forward && b->ops->pool_backward && b->ops->max_pool_backward_relu);
        if (!b)
            continue;
        for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
            const shape s = shapes[k];
            const ax_window_geometry g = geometry_of(s);
            const int64_t in = s.images * s.height * s.width * s.channels;
            const int64_t out = s.images * g.out_height * g.out_width * s.channels;
            void *x = malloc((size_t)in * b->real_size), *dx = malloc((size_t)in * b->real_size);
            void *dy = malloc((size_t)out * b->real_size), *y = malloc((size_t)out * b->real_size);
            double *xd = malloc((size_t)in * sizeof *xd), *dxd = malloc((size_t)in * sizeof *dxd);
            double *dyd = malloc((size_t)out * sizeof *dyd), *yd = malloc((size_t)out * sizeof *yd);
            CHECK(x && dx && dy && y && xd && dxd && dyd && yd);
            if (x && dx && dy && y && xd && dxd && dyd && yd) {
                const int64_t wrong = check_shape(b, s, x, dy, y, dx, xd, dyd, yd, dxd);
                if (wrong)
                    fprintf(stderr, "%s: %lld values differ from the definition at %lldx%lldx%lldx%lld, "
                            "window %lld, stride %lld\n",
                            p ? "float64" : "float32", (long long)wrong, (long long)s.images,
                            (long long)s.height, (long long)s.width, (long long)s.channels,
                            (long long)s.window, (long long)s.stride);
                CHECK(wrong == 0);
            }
            free(x), free(dx), free(dy), free(y), free(xd), free(dxd), free(dyd), free(yd);
        }
        check_threads(b, (shape){16, 24, 24, 32, 2, 2});
        check_threads(b, (shape){16, 13, 13, 20, 3, 2});
        b->ops->destroy(b);
    }
    return test_finish("test_pool_max");
}
