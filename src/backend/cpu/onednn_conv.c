/* onednn_conv.c: the CPU backend's float32 convolution forward pass and
 * input gradient through oneDNN 2.x's primitives (onednn_conv.h), and the
 * primitives that bf16's (onednn_conv_bf16.c) run: float32 ones on operands
 * rounded to bfloat16, or bf16 ones (bf16 images or deltas and weights,
 * float32 out; the data type is part of the key). oneDNN
 * picks its kernels (brgconv / jit:avx512_core on AVX-512 CPUs) and its
 * weight layout (format "any"); images stay NHWC, which its direct kernels
 * take as they are, so only the weights are reordered, in each call. A
 * primitive is created once per (pass, geometry, filters, images, threads)
 * and kept: creating one costs milliseconds, running LeNet's a few. The
 * thread count is part of the key because a primitive keeps the thread
 * count it was created under, and axon's thread governor changes it
 * between steps. Scratchpads are the primitives' own (user mode, allocated
 * with them), so a training step allocates nothing.
 *
 * Neither pass sums over threads: each output value is one thread's
 * product, so the bits do not depend on the thread count
 * (tests/test_conv_onednn.c checks it). oneDNN's weight gradient does sum
 * over threads: onednn_conv_weights.c runs it in slices of the batch, one
 * thread each. */
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/onednn_conv.h"
#include "backend/cpu/onednn_conv_internal.h"

/* Shapes kept: LeNet trains two convolutions, and evaluation adds its
 * chunk sizes; the least recently used goes when a new one comes. */
enum { ENTRIES = 16 };

typedef struct conv_key {
    int pass, type, threads; /* ax_onednn_conv_pass, ax_onednn_conv_type */
    ax_window_geometry geometry;
    int64_t filters, images;
} conv_key;

/* One shape's primitive and its memories (images bound to the caller's
 * buffers at each call). */
typedef struct conv_entry {
    conv_key key;
    uint64_t last_used; /* 0: empty */
    dnnl_primitive_t convolution, weights_reorder; /* reorder NULL: oihw as is */
    dnnl_memory_t in, out, weights_user, weights_inner, scratchpad;
} conv_entry;

struct ax_onednn_convs {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    uint64_t clock;
    conv_entry entries[ENTRIES];
    void *staging; /* the callers' converted operands (ax_onednn_convs_staging) */
    size_t staging_bytes;
    /* onednn_conv_weights.c's primitives, and how to free them (a pointer:
     * this file does not call that one, which calls this one) */
    ax_onednn_weight_primitives *weight_primitives;
    void (*weight_primitives_free)(ax_onednn_weight_primitives *);
};

static void entry_release(conv_entry *e)
{
    if (e->convolution)
        dnnl_primitive_destroy(e->convolution);
    if (e->weights_reorder) {
        dnnl_primitive_destroy(e->weights_reorder);
        dnnl_memory_destroy(e->weights_inner);
    }
    dnnl_memory_t memories[] = {e->in, e->out, e->weights_user, e->scratchpad};
    for (size_t i = 0; i < sizeof memories / sizeof *memories; i++)
        if (memories[i])
            dnnl_memory_destroy(memories[i]);
    memset(e, 0, sizeof *e);
}

void ax_onednn_convs_free(ax_onednn_convs *convs)
{
    if (!convs)
        return;
    for (int i = 0; i < ENTRIES; i++)
        entry_release(&convs->entries[i]);
    if (convs->weight_primitives)
        convs->weight_primitives_free(convs->weight_primitives);
    if (convs->stream)
        dnnl_stream_destroy(convs->stream);
    if (convs->engine)
        dnnl_engine_destroy(convs->engine);
    free(convs->staging);
    free(convs);
}

bool ax_onednn_conv_enabled(void)
{
    const char *asked = getenv("AXON_ONEDNN_CONV");
    return !(asked && strcmp(asked, "off") == 0);
}

static ax_onednn_convs *convs_open(ax_onednn_convs **convs)
{
    if (*convs)
        return *convs;
    ax_onednn_convs *created = calloc(1, sizeof *created);
    if (!created)
        return NULL;
    if (dnnl_engine_create(&created->engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&created->stream, created->engine, dnnl_stream_default_flags) !=
            dnnl_success) {
        ax_onednn_convs_free(created);
        return NULL;
    }
    *convs = created;
    return created;
}

dnnl_engine_t ax_onednn_convs_engine(ax_onednn_convs **convs_slot,
                                     ax_onednn_weight_primitives ***weight_primitives,
                                     void (*weight_primitives_free)(ax_onednn_weight_primitives *))
{
    ax_onednn_convs *convs = convs_open(convs_slot);
    if (!convs)
        return NULL;
    *weight_primitives = &convs->weight_primitives;
    convs->weight_primitives_free = weight_primitives_free;
    return convs->engine;
}

void ax_onednn_descriptions_free(const dnnl_primitive_desc_t *descriptions, int count,
                                 dnnl_primitive_attr_t attr)
{
    for (int i = 0; i < count; i++)
        if (descriptions[i])
            dnnl_primitive_desc_destroy(descriptions[i]);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
}

dnnl_status_t ax_onednn_conv_describe(const ax_window_geometry *g, int64_t filters,
                                      int64_t images, dnnl_data_type_t operand,
                                      dnnl_data_type_t output, dnnl_memory_desc_t *image_md,
                                      dnnl_memory_desc_t *outputs, dnnl_memory_desc_t *weights_any,
                                      dnnl_memory_desc_t *weights_user,
                                      dnnl_convolution_desc_t *forward)
{
    const dnnl_dims_t image_dims = {images, g->channels, g->height, g->width};
    const dnnl_dims_t output_dims = {images, filters, g->out_height, g->out_width};
    const dnnl_dims_t weight_dims = {filters, g->channels, g->kernel_height, g->kernel_width};
    /* The same padding on both sides: oneDNN's output size is then axon's,
     * (in + 2 padding - kernel) / stride + 1 rounded down. */
    const dnnl_dims_t strides = {g->stride, g->stride}, padding = {g->padding, g->padding};
    dnnl_status_t s = dnnl_memory_desc_init_by_tag(image_md, 4, image_dims, operand, dnnl_nhwc);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(outputs, 4, output_dims, output, dnnl_nhwc);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(weights_any, 4, weight_dims, operand,
                                         dnnl_format_tag_any);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(weights_user, 4, weight_dims, operand, dnnl_oihw);
    if (s == dnnl_success)
        s = dnnl_convolution_forward_desc_init(forward, dnnl_forward_training,
                                               dnnl_convolution_direct, image_md, weights_any, NULL,
                                               outputs, strides, padding, padding);
    return s;
}

/* Creates the entry's primitive, memories and weight reorder for its key.
 * bf16: the forward pass takes bf16 images and weights and gives float32
 * outputs; the input gradient takes bf16 deltas and weights and gives a
 * float32 gradient (its forward hint is bf16 throughout, a combination
 * oneDNN has). oneDNN's bf16 kernels multiply bf16 values exactly and sum
 * in float32, as axon's bf16 GEMM does. */
static dnnl_status_t entry_create(ax_onednn_convs *convs, conv_entry *e)
{
    const bool input_gradient = e->key.pass == AX_ONEDNN_CONV_INPUT_GRADIENT;
    const dnnl_data_type_t operand = e->key.type == AX_ONEDNN_CONV_BF16 ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_t images, outputs, weights_any, weights_user, gradients;
    dnnl_convolution_desc_t forward, backward;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t forward_pd = NULL, pd = NULL, reorder_pd = NULL;
    dnnl_status_t s = ax_onednn_conv_describe(&e->key.geometry, e->key.filters, e->key.images,
                                              operand, input_gradient ? operand : dnnl_f32,
                                              &images, &outputs, &weights_any, &weights_user,
                                              &forward);
    if (s == dnnl_success) /* the input gradient's own (float32) memory */
        s = dnnl_memory_desc_init_by_tag(&gradients, 4, images.dims, dnnl_f32, dnnl_nhwc);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success)
        s = dnnl_primitive_desc_create(&forward_pd, &forward, attr, convs->engine, NULL);
    if (s == dnnl_success && input_gradient) {
        s = dnnl_convolution_backward_data_desc_init(&backward, dnnl_convolution_direct, &gradients,
                                                     &weights_any, &outputs, forward.strides,
                                                     forward.padding[0], forward.padding[1]);
        if (s == dnnl_success)
            s = dnnl_primitive_desc_create(&pd, &backward, attr, convs->engine, forward_pd);
    } else if (s == dnnl_success) {
        pd = forward_pd;
        forward_pd = NULL;
    }
    if (s == dnnl_success)
        s = dnnl_primitive_create(&e->convolution, pd);
    const dnnl_memory_desc_t *weights_inner =
        s == dnnl_success ? dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0) : NULL;
    const dnnl_memory_desc_t *scratchpad =
        s == dnnl_success ? dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0) : NULL;
    if (s == dnnl_success)
        s = dnnl_memory_create(&e->in, input_gradient ? &outputs : &images, convs->engine,
                               DNNL_MEMORY_NONE);
    if (s == dnnl_success)
        s = dnnl_memory_create(&e->out, input_gradient ? &gradients : &outputs, convs->engine,
                               DNNL_MEMORY_NONE);
    if (s == dnnl_success)
        s = dnnl_memory_create(&e->weights_user, &weights_user, convs->engine, DNNL_MEMORY_NONE);
    if (s == dnnl_success)
        s = dnnl_memory_create(&e->scratchpad, scratchpad, convs->engine, DNNL_MEMORY_ALLOCATE);
    if (s == dnnl_success && !dnnl_memory_desc_equal(weights_inner, &weights_user)) {
        s = dnnl_memory_create(&e->weights_inner, weights_inner, convs->engine,
                               DNNL_MEMORY_ALLOCATE);
        if (s == dnnl_success)
            s = dnnl_reorder_primitive_desc_create(&reorder_pd, &weights_user, convs->engine,
                                                   weights_inner, convs->engine, NULL);
        if (s == dnnl_success)
            s = dnnl_primitive_create(&e->weights_reorder, reorder_pd);
        else if (e->weights_inner) {
            dnnl_memory_destroy(e->weights_inner); /* entry_release frees it with the reorder */
            e->weights_inner = NULL;
        }
    }
    const dnnl_primitive_desc_t descriptions[] = {forward_pd, pd, reorder_pd};
    ax_onednn_descriptions_free(descriptions, 3, attr);
    return s;
}

/* The entry of key, created when new (replacing the least recently used);
 * NULL when oneDNN cannot create it. */
static conv_entry *entry_for(ax_onednn_convs *convs, const conv_key *key)
{
    conv_entry *oldest = &convs->entries[0];
    for (int i = 0; i < ENTRIES; i++) {
        conv_entry *e = &convs->entries[i];
        if (e->last_used && memcmp(&e->key, key, sizeof *key) == 0) {
            e->last_used = ++convs->clock;
            return e;
        }
        if (e->last_used < oldest->last_used)
            oldest = e;
    }
    entry_release(oldest);
    oldest->key = *key;
    if (entry_create(convs, oldest) != dnnl_success) {
        entry_release(oldest);
        return NULL;
    }
    oldest->last_used = ++convs->clock;
    return oldest;
}

void *ax_onednn_convs_staging(ax_onednn_convs **convs_slot, size_t bytes)
{
    ax_onednn_convs *convs = convs_open(convs_slot);
    if (!convs)
        return NULL;
    if (bytes > convs->staging_bytes) {
        const size_t rounded = (bytes + 4095) & ~(size_t)4095;
        void *memory = aligned_alloc(64, rounded);
        if (!memory)
            return NULL;
        free(convs->staging);
        convs->staging = memory;
        convs->staging_bytes = rounded;
    }
    return convs->staging;
}

bool ax_onednn_conv_run(ax_onednn_convs **convs_slot, ax_onednn_conv_pass pass,
                        ax_onednn_conv_type type, const ax_window_geometry *geometry,
                        int64_t filters, const void *in, const void *weights, float *out,
                        int64_t images)
{
    ax_onednn_convs *convs = convs_open(convs_slot);
    if (!convs)
        return false;
    conv_key key;
    memset(&key, 0, sizeof key); /* the key is compared with memcmp */
    key.pass = pass;
    key.type = type;
    key.threads = omp_get_max_threads();
    key.geometry = *geometry;
    key.filters = filters;
    key.images = images;
    conv_entry *e = entry_for(convs, &key);
    if (!e)
        return false;
    /* oneDNN takes non-const handles; it only reads the inputs */
    if (dnnl_memory_set_data_handle(e->in, (void *)in) != dnnl_success ||
        dnnl_memory_set_data_handle(e->out, out) != dnnl_success ||
        dnnl_memory_set_data_handle(e->weights_user, (void *)weights) != dnnl_success)
        return false;
    if (e->weights_reorder) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, e->weights_user},
                                   {DNNL_ARG_TO, e->weights_inner}};
        if (dnnl_primitive_execute(e->weights_reorder, convs->stream, 2, args) != dnnl_success)
            return false;
    }
    dnnl_memory_t weights_used = e->weights_reorder ? e->weights_inner : e->weights_user;
    dnnl_exec_arg_t args[4] = {
        {pass == AX_ONEDNN_CONV_FORWARD ? DNNL_ARG_SRC : DNNL_ARG_DIFF_DST, e->in},
        {DNNL_ARG_WEIGHTS, weights_used},
        {pass == AX_ONEDNN_CONV_FORWARD ? DNNL_ARG_DST : DNNL_ARG_DIFF_SRC, e->out},
        {DNNL_ARG_SCRATCHPAD, e->scratchpad},
    };
    return dnnl_primitive_execute(e->convolution, convs->stream, 4, args) == dnnl_success &&
           dnnl_stream_wait(convs->stream) == dnnl_success;
}

bool ax_onednn_conv_forward(ax_onednn_convs **convs, const ax_window_geometry *geometry,
                            int64_t filters, const float *x, const float *weights, float *z,
                            int64_t images)
{
    return ax_onednn_conv_run(convs, AX_ONEDNN_CONV_FORWARD, AX_ONEDNN_CONV_F32, geometry,
                              filters, x, weights, z, images);
}

bool ax_onednn_conv_backward_input(ax_onednn_convs **convs, const ax_window_geometry *geometry,
                                   int64_t filters, const float *delta, const float *weights,
                                   float *previous, int64_t images)
{
    return ax_onednn_conv_run(convs, AX_ONEDNN_CONV_INPUT_GRADIENT, AX_ONEDNN_CONV_F32, geometry,
                              filters, delta, weights, previous, images);
}
