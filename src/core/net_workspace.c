/* net_workspace.c: the network's workspace (net.h, ax_net_workspace), the
 * buffers a pass works in: sized once for the largest batch asked for, so
 * that training allocates nothing per step, and released with the net; and
 * the batches loaded into it, with the batch kept between the steps of a
 * full batch. */
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "base/memory.h"
#include "core/device_data.h"
#include "core/net.h"
#include "data/dataset.h"

void ax_net_workspace_release(ax_net *net)
{
    ax_backend *backend = net->backend;
    ax_net_workspace *work = &net->workspace;
    backend->ops->free(backend, work->input);
    backend->ops->free(backend, work->side_input);
    work->side_input = NULL;
    work->side_rows = 0;
    for (int l = 0; l < net->layer_count; l++) {
        backend->ops->free(backend, work->outputs[l]);
        work->outputs[l] = NULL;
    }
    backend->ops->free(backend, work->delta[0]);
    backend->ops->free(backend, work->delta[1]);
    backend->ops->free(backend, work->targets);
    backend->ops->free(backend, work->scratch);
    work->scratch = NULL;
    work->scratch_reals = 0;
    backend->ops->free(backend, work->labels);
    backend->ops->free(backend, work->pool_codes);
    work->pool_codes = NULL;
    work->pool_codes_rows = 0;
    work->pool_codes_valid = false;
    free(work->predicted);
    work->input = work->delta[0] = work->delta[1] = work->targets = NULL;
    work->labels = work->predicted = NULL;
    work->capacity = 0;
    work->loaded_valid = false;
}

/* float32 rows taken in order are read where they lie (ax_net_load_batch;
 * bf16 keeps its activations in float32 too),
 * so the copy of the input is only needed for shuffled batches or another
 * precision: a full-batch epoch then needs no second copy of the data set. */
static bool needs_input_copy(const ax_net *net, bool shuffled)
{
    return shuffled || net->config.precision == AX_PRECISION_F64 || !net->backend->host_memory;
}

ax_status ax_net_reserve(ax_net *net, int64_t rows)
{
    return ax_net_reserve_shuffled(net, rows, false);
}

/* Bytes of workspace per row, scratch aside (see ax_net_reserve_shuffled). */
static size_t workspace_row_bytes(const ax_net *net, bool copy_input)
{
    size_t real = net->backend->real_size;
    size_t row_bytes =
        (size_t)((copy_input ? net->config.input_width : 0) + 2 * net->max_width + 1) * real;
    for (int l = 0; l < net->layer_count; l++)
        row_bytes += (size_t)net->layers[l].out * real;
    return row_bytes;
}

int64_t ax_net_inference_rows(const ax_net *net, int64_t rows)
{
    const bool device = !net->backend->host_memory;
    int64_t chunk = (int64_t)((device ? AX_DEVICE_CHUNK_BYTES : AX_INFERENCE_BYTES) /
                              workspace_row_bytes(net, true));
    if (!device && chunk > AX_INFERENCE_ROWS)
        chunk = AX_INFERENCE_ROWS;
    if (chunk < 1)
        chunk = 1;
    return rows < chunk ? rows : chunk;
}

ax_status ax_net_reserve_shuffled(ax_net *net, int64_t rows, bool shuffled)
{
    ax_net_workspace *work = &net->workspace;
    /* A copy of the input, once made, stays: an evaluation that grows the
     * workspace in the middle of training (shuffled batches) must not take
     * away the buffer the next batch is gathered into. */
    bool copy_input = needs_input_copy(net, shuffled) || work->input != NULL;
    if (rows <= work->capacity && (!copy_input || work->input))
        return AX_STATUS_OK;
    if (rows < work->capacity)
        rows = work->capacity;
    ax_net_workspace_release(net);
    ax_backend *backend = net->backend;
    size_t real = backend->real_size;
    size_t row_bytes = workspace_row_bytes(net, copy_input);
    /* each layer its own part: a convolution keeps its columns from the
     * forward pass to the backward pass */
    int64_t scratch_reals = 0;
    for (int l = 0; l < net->layer_count; l++) {
        net->layers[l].scratch_offset = scratch_reals;
        net->layers[l].columns_input = NULL;
        if (net->layers[l].ops->scratch_reals)
            scratch_reals += net->layers[l].ops->scratch_reals(&net->layers[l], rows);
    }
    char what[200], scratch[64] = "";
    if (scratch_reals > 0)
        snprintf(scratch, sizeof scratch, ", %lld bytes of scratch",
                 (long long)((size_t)scratch_reals * real));
    snprintf(what, sizeof what, "the workspace for a batch of %lld rows (%lld bytes per row%s)",
             (long long)rows, (long long)row_bytes, scratch);
    const double bytes = (double)rows * (double)row_bytes + (double)scratch_reals * (double)real;
    if (bytes > 1e18)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s needs %.3g GiB", what, bytes / 1073741824.0);
    AX_TRY(ax_memory_check((size_t)bytes, what));

    int64_t output_width = net->layers[net->layer_count - 1].out;
    const size_t rows_bytes = (size_t)rows * real;
    ax_status status = AX_STATUS_OK;
    if (copy_input)
        status = ax_backend_alloc(backend, rows_bytes * (size_t)net->config.input_width, what,
                                  &work->input);
    for (int l = 0; l < net->layer_count && status == AX_STATUS_OK; l++)
        status = ax_backend_alloc(backend, rows_bytes * (size_t)net->layers[l].out, what,
                                  &work->outputs[l]);
    for (int i = 0; i < 2 && status == AX_STATUS_OK; i++)
        status = ax_backend_alloc(backend, rows_bytes * (size_t)net->max_width, what,
                                  &work->delta[i]);
    if (status == AX_STATUS_OK)
        status = ax_backend_alloc(backend, rows_bytes * (size_t)output_width, what, &work->targets);
    void *labels = NULL;
    if (status == AX_STATUS_OK)
        status = ax_backend_alloc(backend, (size_t)rows * sizeof(int32_t), what, &labels);
    work->labels = labels;
    if (status == AX_STATUS_OK && !(work->predicted = malloc((size_t)rows * sizeof(int32_t))))
        status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for %s", what);
    if (status == AX_STATUS_OK && scratch_reals > 0) {
        status = ax_backend_alloc(backend, (size_t)scratch_reals * real, what, &work->scratch);
        work->scratch_reals = scratch_reals;
    }
    if (status != AX_STATUS_OK) {
        ax_net_workspace_release(net);
        return status;
    }
    work->capacity = rows;
    return AX_STATUS_OK;
}

/* ------------------------------------------------------ loading batches */

#define OPS (net->backend->ops)

bool ax_net_side_input_holds(ax_net *net, int64_t count)
{
    if (count <= net->workspace.side_rows)
        return true;
    void *grown = NULL;
    if (ax_backend_alloc(net->backend,
                         (size_t)count * (size_t)net->config.input_width * net->backend->real_size,
                         "the side input", &grown) != AX_STATUS_OK)
        return false;
    OPS->free(net->backend, net->workspace.side_input);
    net->workspace.side_input = grown;
    net->workspace.side_rows = count;
    return true;
}

/* dst (count, input_width) = the rows, gathered on the device from the
 * run's copy of the set when there is one (device_data.h), else from
 * host memory. */
static void gather_inputs(ax_net *net, void *dst, const float *features, const ax_dataset *sparse,
                          int64_t width, const int64_t *order, int64_t first, int64_t count)
{
    if (sparse) { /* host float32 (ax_net_check_sparse): the rows made dense there */
        ax_dataset_densify_rows(sparse, dst, order, first, count);
        return;
    }
    if (ax_device_data_gather_rows(net->run.device_data, dst, features, width, order, first, count))
        net->run.device_batches++;
    else
        OPS->gather_rows(net->backend, dst, features, width, order, first, count);
}

void ax_net_load_inputs(ax_net *net, const float *features, const ax_dataset *sparse,
                        const int64_t *order, int64_t first, int64_t count)
{
    int64_t width = net->config.input_width;
    /* float32 rows in order are used where they lie: no copy (full batch, predict). */
    if (!order && net->backend->host_memory && net->config.precision != AX_PRECISION_F64 &&
        !sparse) {
        net->workspace.current_input = features + first * width;
        return;
    }
    const bool keeping = !order && net->workspace.reuse_loaded && net->workspace.loaded_valid;
    if (keeping && net->workspace.loaded_features == features &&
        net->workspace.loaded_first == first && net->workspace.loaded_count == count) {
        /* the rows are there from the step before */
        net->workspace.current_input = net->workspace.input;
        return;
    }
    if (keeping && ax_net_side_input_holds(net, count)) {
        /* Other rows in order (an evaluation): the kept batch stays. */
        gather_inputs(net, net->workspace.side_input, features, sparse, width, NULL, first, count);
        net->workspace.current_input = net->workspace.side_input;
        return;
    }
    gather_inputs(net, net->workspace.input, features, sparse, width, order, first, count);
    net->workspace.current_input = net->workspace.input;
    /* A shuffled order changes between epochs at the same address: not kept. */
    net->workspace.loaded_valid = order == NULL;
    net->workspace.loaded_features = features;
    net->workspace.loaded_first = first;
    net->workspace.loaded_count = count;
}

static void load_batch(ax_net *net, const ax_batch *batch, bool with_answers)
{
    const ax_dataset *data = batch->data;
    const bool sparse = data->csr_values != NULL;
    ax_net_load_inputs(net, sparse ? data->csr_values : data->feature_values, sparse ? data : NULL,
                       batch->order, batch->first, batch->count);
    if (!with_answers)
        return;
    net->workspace.batch_has_labels = data->labels != NULL;
    if (data->labels) {
        if (!ax_device_data_gather_labels(net->run.device_data, net->workspace.labels, data->labels,
                                          batch->order, batch->first, batch->count))
            OPS->gather_labels(net->backend, net->workspace.labels, data->labels, batch->order,
                               batch->first, batch->count);
    } else if (!ax_device_data_gather_rows(net->run.device_data, net->workspace.targets,
                                           data->target_values, data->targets, batch->order,
                                           batch->first, batch->count)) {
        OPS->gather_rows(net->backend, net->workspace.targets, data->target_values, data->targets,
                         batch->order, batch->first, batch->count);
    }
}

void ax_net_keep_loaded_batch(ax_net *net, bool keep)
{
    net->workspace.reuse_loaded = keep;
    net->workspace.loaded_valid = false;
    if (!keep) {
        OPS->free(net->backend, net->workspace.side_input);
        net->workspace.side_input = NULL;
        net->workspace.side_rows = 0;
    }
}

void ax_net_load_batch(ax_net *net, const ax_batch *batch, bool with_answers)
{
    AX_PROFILED(net, AX_PROFILE_BATCH_COPY, -1, 0.0, load_batch(net, batch, with_answers));
}
