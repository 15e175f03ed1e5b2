/* onednn_conv_weights.c: the convolution weight gradient through oneDNN's
 * backward-weights primitive, run in conv_weight_gradient.c's slices of
 * the batch (onednn_conv.h). oneDNN sums a whole batch across threads
 * (its bits then follow the thread count), so each slice's primitive is
 * created as if one thread were all there is and runs on the thread that
 * takes the slice: the slices' partial sums, in oneDNN's weight layout,
 * are then added in slice order and reordered into torch's, once. The
 * bits depend on the batch and the layer's shape, never on the thread
 * count. Measured on LeNet's shapes (docs/notes/conv.md) at 1.2-1.25x the
 * GEMM product on the same slices, which it replaces in float32 and bf16.
 *
 * A slice's primitive is created once per (type, geometry, filters,
 * images) and kept: a batch needs at most two slice sizes, a training run
 * a few shapes. Each execution makes its own memory objects around the
 * caller's buffers and runs on the thread's own stream, so threads share
 * nothing but the primitive, which oneDNN lets threads execute at once
 * with user scratchpads. */
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/bf16_round.h"
#include "backend/cpu/conv_weight_gradient.h"
#include "backend/cpu/onednn_conv_internal.h"
#include "backend/cpu/onednn_streams.h"

/* Slice shapes kept; the oldest goes when a new one comes. */
enum { KEPT = 12 };

typedef struct slice_key {
    int type; /* ax_onednn_conv_type */
    ax_window_geometry geometry;
    int64_t filters, images;
} slice_key;

typedef struct slice_primitive {
    slice_key key;
    bool made;
    dnnl_primitive_t gradient, reorder; /* reorder: the partials' layout to oihw */
    dnnl_memory_desc_t images, deltas, partial, ordered, scratchpad;
    size_t scratchpad_bytes;
} slice_primitive;

struct ax_onednn_weight_primitives {
    slice_primitive kept[KEPT];
    int next; /* replaced next when all are in use */
    ax_onednn_streams streams; /* one per thread */
};

static void slice_release(slice_primitive *p)
{
    if (p->gradient)
        dnnl_primitive_destroy(p->gradient);
    if (p->reorder)
        dnnl_primitive_destroy(p->reorder);
    memset(p, 0, sizeof *p);
}

static void primitives_free(ax_onednn_weight_primitives *primitives)
{
    for (int i = 0; i < KEPT; i++)
        slice_release(&primitives->kept[i]);
    ax_onednn_streams_free(&primitives->streams);
    free(primitives);
}

/* The backward-weights primitive of p->key, created under one thread so
 * that it runs on one (and its sum order cannot follow the threads), and
 * the reorder of its gradient into float32 oihw. bf16: bf16 images and
 * deltas, float32 gradient. */
static dnnl_status_t slice_create(dnnl_engine_t engine, slice_primitive *p)
{
    const slice_key *k = &p->key;
    const ax_window_geometry *g = &k->geometry;
    const dnnl_data_type_t operand = k->type == AX_ONEDNN_CONV_BF16 ? dnnl_bf16 : dnnl_f32;
    const dnnl_dims_t weight_dims = {k->filters, g->channels, g->kernel_height, g->kernel_width};
    dnnl_memory_desc_t weights_any, weights_user, gradient_any;
    dnnl_convolution_desc_t forward, backward;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t forward_pd = NULL, pd = NULL, reorder_pd = NULL;
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1); /* what oneDNN's kernels plan their split for */
    dnnl_status_t s = ax_onednn_conv_describe(g, k->filters, k->images, operand, operand,
                                              &p->images, &p->deltas, &weights_any,
                                              &weights_user, &forward);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&gradient_any, 4, weight_dims, dnnl_f32,
                                         dnnl_format_tag_any);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&p->ordered, 4, weight_dims, dnnl_f32, dnnl_oihw);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success)
        s = dnnl_primitive_desc_create(&forward_pd, &forward, attr, engine, NULL);
    if (s == dnnl_success)
        s = dnnl_convolution_backward_weights_desc_init(
            &backward, dnnl_convolution_direct, &p->images, &gradient_any, NULL, &p->deltas,
            forward.strides, forward.padding[0], forward.padding[1]);
    if (s == dnnl_success)
        s = dnnl_primitive_desc_create(&pd, &backward, attr, engine, forward_pd);
    if (s == dnnl_success)
        s = dnnl_primitive_create(&p->gradient, pd);
    if (s == dnnl_success) {
        p->partial = *dnnl_primitive_desc_query_md(pd, dnnl_query_diff_weights_md, 0);
        p->scratchpad = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        p->scratchpad_bytes = dnnl_memory_desc_get_size(&p->scratchpad);
        s = dnnl_reorder_primitive_desc_create(&reorder_pd, &p->partial, engine, &p->ordered,
                                               engine, NULL);
    }
    if (s == dnnl_success)
        s = dnnl_primitive_create(&p->reorder, reorder_pd);
    omp_set_num_threads(threads);
    const dnnl_primitive_desc_t descriptions[] = {forward_pd, pd, reorder_pd};
    ax_onednn_descriptions_free(descriptions, 3, attr);
    return s;
}

/* The primitive of key, made when new in a slot other than keep's (the
 * call's other primitive, still to be used); NULL when oneDNN cannot make
 * it. */
static slice_primitive *slice_for(ax_onednn_weight_primitives *primitives, dnnl_engine_t engine,
                                  const slice_key *key, const slice_primitive *keep)
{
    for (int i = 0; i < KEPT; i++)
        if (primitives->kept[i].made && memcmp(&primitives->kept[i].key, key, sizeof *key) == 0)
            return &primitives->kept[i];
    if (&primitives->kept[primitives->next] == keep)
        primitives->next = (primitives->next + 1) % KEPT;
    slice_primitive *p = &primitives->kept[primitives->next];
    primitives->next = (primitives->next + 1) % KEPT;
    slice_release(p);
    p->key = *key;
    if (slice_create(engine, p) != dnnl_success) {
        slice_release(p);
        return NULL;
    }
    p->made = true;
    return p;
}

/* One call's slices: their primitives (the widest slice's and, when the
 * batch does not divide evenly, the one-image-shorter one's), operands and
 * the layout of a thread's scratch: oneDNN's scratchpad, then in bf16 the
 * slice's images and deltas converted. */
typedef struct weight_call {
    dnnl_engine_t engine;
    ax_onednn_weight_primitives *primitives;
    const slice_primitive *widest, *shorter;
    int64_t widest_images;
    const float *x, *delta;
    int64_t image_values, delta_values; /* per image */
    ax_onednn_bf16_mode bf16;           /* OFF: float32 operands as they are */
    size_t scratchpad_bytes;            /* 64-byte multiple */
    size_t staged_image_bytes;          /* the widest slice's converted images */
} weight_call;

/* count values of from in the primitive's type at to, on this thread:
 * packed bfloat16 (NATIVE) or float32 holding bfloat16 values (ROUNDED). */
static void stage(ax_onednn_bf16_mode bf16, const float *from, int64_t count, void *to)
{
    if (bf16 == AX_ONEDNN_BF16_NATIVE)
        ax_bf16_pack_values_serial(to, from, count);
    else
        ax_bf16_round_values_serial(to, from, count);
}

static bool weight_slice(void *context, int64_t first, int64_t count, void *own, void *partial)
{
    const weight_call *c = context;
    const slice_primitive *p = count == c->widest_images ? c->widest : c->shorter;
    const void *images = c->x + first * c->image_values;
    const void *deltas = c->delta + first * c->delta_values;
    if (c->bf16 != AX_ONEDNN_BF16_OFF) {
        char *staged = (char *)own + c->scratchpad_bytes;
        stage(c->bf16, images, count * c->image_values, staged);
        stage(c->bf16, deltas, count * c->delta_values, staged + c->staged_image_bytes);
        images = staged;
        deltas = staged + c->staged_image_bytes;
    }
    const dnnl_memory_desc_t *descriptions[4] = {&p->images, &p->deltas, &p->partial,
                                                 &p->scratchpad};
    /* oneDNN takes non-const handles; it only reads the operands */
    void *handles[4] = {(void *)images, (void *)deltas, partial, own};
    const int used = p->scratchpad_bytes ? 4 : 3;
    dnnl_memory_t memories[4] = {NULL, NULL, NULL, NULL};
    bool ok = true;
    for (int i = 0; i < used && ok; i++)
        ok = dnnl_memory_create(&memories[i], descriptions[i], c->engine, handles[i]) ==
             dnnl_success;
    if (ok) {
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, memories[0]},
                                   {DNNL_ARG_DIFF_DST, memories[1]},
                                   {DNNL_ARG_DIFF_WEIGHTS, memories[2]},
                                   {DNNL_ARG_SCRATCHPAD, memories[3]}};
        dnnl_stream_t stream = c->primitives->streams.streams[omp_get_thread_num()];
        ok = dnnl_primitive_execute(p->gradient, stream, used, args) == dnnl_success &&
             dnnl_stream_wait(stream) == dnnl_success;
    }
    for (int i = 0; i < 4; i++)
        if (memories[i])
            dnnl_memory_destroy(memories[i]);
    return ok;
}

/* The partials' sum, in oneDNN's layout, reordered into oihw: a copy. */
static bool weight_finish(void *context, const void *sum, void *weight_gradient)
{
    const weight_call *c = context;
    const slice_primitive *p = c->widest;
    dnnl_memory_t from = NULL, to = NULL;
    bool ok = dnnl_memory_create(&from, &p->partial, c->engine, (void *)sum) == dnnl_success &&
              dnnl_memory_create(&to, &p->ordered, c->engine, weight_gradient) == dnnl_success;
    if (ok) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
        ok = dnnl_primitive_execute(p->reorder, c->primitives->streams.streams[0], 2, args) ==
                 dnnl_success &&
             dnnl_stream_wait(c->primitives->streams.streams[0]) == dnnl_success;
    }
    if (from)
        dnnl_memory_destroy(from);
    if (to)
        dnnl_memory_destroy(to);
    return ok;
}

static bool sliced_gradient(ax_onednn_convs **convs, ax_conv_weight_scratch *scratch,
                            ax_onednn_bf16_mode bf16, const ax_window_geometry *geometry,
                            int64_t filters, const float *delta, const float *x,
                            float *gradient, int64_t images)
{
    ax_onednn_weight_primitives **slot = NULL;
    weight_call c = {.engine = ax_onednn_convs_engine(convs, &slot, primitives_free),
                     .x = x, .delta = delta, .bf16 = bf16};
    if (!c.engine)
        return false;
    if (!*slot && !(*slot = calloc(1, sizeof **slot)))
        return false;
    c.primitives = *slot;
    const int64_t weights =
        filters * geometry->channels * geometry->kernel_height * geometry->kernel_width;
    const int64_t slices = ax_cpu_conv_weight_slices(geometry, images);
    if (slices == 0) {
        memset(gradient, 0, (size_t)weights * sizeof(float));
        return true;
    }
    c.widest_images = (images + slices - 1) / slices;
    slice_key key;
    memset(&key, 0, sizeof key); /* compared with memcmp */
    key.type = bf16 == AX_ONEDNN_BF16_NATIVE ? AX_ONEDNN_CONV_BF16 : AX_ONEDNN_CONV_F32;
    key.geometry = *geometry;
    key.filters = filters;
    key.images = c.widest_images;
    c.widest = c.shorter = slice_for(c.primitives, c.engine, &key, NULL);
    if (c.widest && images % slices != 0 && c.widest_images > 1) {
        key.images = c.widest_images - 1;
        c.shorter = slice_for(c.primitives, c.engine, &key, c.widest);
        /* finish reorders the widest's layout: the shorter's must be the same */
        if (c.shorter && !dnnl_memory_desc_equal(&c.shorter->partial, &c.widest->partial))
            c.shorter = NULL;
    }
    if (!c.widest || !c.shorter || !ax_onednn_streams_reserve(&c.primitives->streams, c.engine, omp_get_max_threads()))
        return false;
    const size_t largest = c.widest->scratchpad_bytes > c.shorter->scratchpad_bytes
                               ? c.widest->scratchpad_bytes
                               : c.shorter->scratchpad_bytes;
    c.scratchpad_bytes = (largest + 63) & ~(size_t)63;
    c.image_values = geometry->height * geometry->width * geometry->channels;
    c.delta_values = geometry->out_height * geometry->out_width * filters;
    const size_t value = bf16 == AX_ONEDNN_BF16_NATIVE ? sizeof(uint16_t) : sizeof(float);
    size_t staged = 0;
    if (bf16 != AX_ONEDNN_BF16_OFF) {
        c.staged_image_bytes = ((size_t)(c.widest_images * c.image_values) * value + 63) &
                               ~(size_t)63;
        staged = c.staged_image_bytes + (size_t)(c.widest_images * c.delta_values) * value;
    }
    const ax_conv_slice_product product = {
        .context = &c,
        .weights = weights,
        .partial_reals = (int64_t)(dnnl_memory_desc_get_size(&c.widest->partial) / sizeof(float)),
        .thread_bytes = c.scratchpad_bytes + staged,
        .slice = weight_slice,
        .finish = weight_finish,
    };
    return ax_cpu_conv_weight_slices_sum(scratch, sizeof(float), geometry, images, &product,
                                         gradient);
}

bool ax_onednn_conv_backward_weights(ax_onednn_convs **convs, ax_conv_weight_scratch *scratch,
                                     const ax_window_geometry *geometry, int64_t filters,
                                     const float *delta, const float *x, float *weight_gradient,
                                     int64_t images)
{
    return sliced_gradient(convs, scratch, AX_ONEDNN_BF16_OFF, geometry, filters, delta, x,
                           weight_gradient, images);
}

bool ax_onednn_conv_backward_weights_bf16(ax_onednn_convs **convs,
                                          ax_conv_weight_scratch *scratch,
                                          ax_onednn_bf16_mode mode,
                                          const ax_window_geometry *geometry, int64_t filters,
                                          const float *delta, const float *x,
                                          float *weight_gradient, int64_t images)
{
    return mode != AX_ONEDNN_BF16_OFF &&
           sliced_gradient(convs, scratch, mode, geometry, filters, delta, x, weight_gradient,
                           images);
}
