/* device_data.c: the training run's data sets in backend memory
 * (device_data.h). Each host array (a set's float32 rows, its labels, its
 * regression targets) gets a device copy, found again by the host array's
 * address; rows stay float32 there (half of float64's bytes) and are
 * converted as they are gathered, as the host gather converts them, so the
 * gathered batch has the same bits either way. A set too large for one
 * allocation (an OpenCL device's largest buffer, say) is held in blocks of
 * rows, each gathered from in turn. When the sets do not fit at all, or
 * would leave too little memory for the rest of the run, everything
 * uploaded is freed and the run gathers from host memory. */
#include "core/device_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/net.h"
#include "data/dataset.h"

enum { MAX_ARRAYS = 9, MAX_BLOCKS = 64 };

typedef struct device_array {
    const void *host;     /* the host array this copies */
    int64_t rows, width;  /* (rows, width) floats, or (rows) int32 labels (width 0) */
    int64_t block_rows;   /* rows per block (the last may hold fewer) */
    int blocks;
    void *block[MAX_BLOCKS];
} device_array;

struct ax_device_data {
    ax_backend *backend;
    device_array arrays[MAX_ARRAYS];
    int count;
    /* The epoch's order: the host array it mirrors and its device copy. */
    const int64_t *order_host;
    void *order;
    int order_bytes;
    int64_t order_rows;
    void *order_stage; /* host (order_rows) int32 for the conversion */
};

static void free_array(ax_backend *backend, device_array *array)
{
    for (int b = 0; b < array->blocks; b++)
        backend->ops->free(backend, array->block[b]);
    array->blocks = 0;
}

/* Copies `rows` rows of `row_bytes` bytes into blocks of at most
 * max_rows rows, halving the block while an allocation fails (a device
 * whose largest allocation is smaller than its memory); false when even
 * MAX_BLOCKS blocks do not fit. */
static bool upload_array(ax_backend *backend, device_array *array, const void *host, int64_t rows,
                         int64_t width, size_t row_bytes, int64_t max_rows)
{
    *array = (device_array){.host = host, .rows = rows, .width = width};
    int64_t block_rows = rows < max_rows ? rows : max_rows;
    while (block_rows > 0) {
        const int64_t blocks = (rows + block_rows - 1) / block_rows;
        bool placed = blocks <= MAX_BLOCKS;
        for (int64_t b = 0; placed && b < blocks; b++) {
            const int64_t first = b * block_rows;
            const int64_t n = rows - first < block_rows ? rows - first : block_rows;
            void *block = NULL;
            placed = ax_backend_alloc(backend, (size_t)n * row_bytes, "a block of a data set",
                                      &block) == AX_STATUS_OK;
            if (placed) {
                array->block[array->blocks++] = block;
                backend->ops->write_bytes(backend, block,
                                          (const char *)host + (size_t)first * row_bytes,
                                          (size_t)n * row_bytes);
            }
        }
        if (placed) {
            array->block_rows = block_rows;
            return true;
        }
        free_array(backend, array);
        if (blocks > MAX_BLOCKS)
            return false;
        block_rows = (block_rows + 1) / 2;
        if ((rows + block_rows - 1) / block_rows > MAX_BLOCKS)
            return false;
    }
    return false;
}

static const device_array *find(const ax_device_data *data, const void *host)
{
    for (int i = 0; data && i < data->count; i++)
        if (data->arrays[i].host == host)
            return &data->arrays[i];
    return NULL;
}

void ax_device_data_free(ax_device_data *data)
{
    if (!data)
        return;
    for (int i = 0; i < data->count; i++)
        free_array(data->backend, &data->arrays[i]);
    data->backend->ops->free(data->backend, data->order);
    free(data->order_stage);
    free(data);
}

ax_status ax_device_data_create(ax_backend *backend, const ax_dataset *const *sets, int count,
                                ax_device_data **out, char *why, size_t capacity)
{
    *out = NULL;
    char scratch[8];
    if (!why || capacity == 0) {
        why = scratch;
        capacity = sizeof scratch;
    }
    const char *setting = getenv("AXON_DEVICE_DATA");
    int64_t max_rows = INT64_MAX;
    if (setting && strcmp(setting, "off") == 0) {
        snprintf(why, capacity, "data sets in host memory: AXON_DEVICE_DATA=off");
        return AX_STATUS_OK;
    }
    if (setting && setting[0]) {
        char *end = NULL;
        long long rows = strncmp(setting, "rows:", 5) == 0 ? strtoll(setting + 5, &end, 10) : 0;
        if (rows <= 0 || !end || *end != '\0')
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "AXON_DEVICE_DATA='%s' is not off or rows:N "
                           "(N > 0 rows a block, for tests)", setting);
        max_rows = rows;
    }
    char missing[160];
    if (!ax_backend_supports(backend->ops, AX_BACKEND_FEATURE_DEVICE_DATA, missing,
                             sizeof missing)) {
        if (backend->host_memory)
            snprintf(why, capacity, "data sets in host memory, where the %s backend reads them",
                     backend->ops->name);
        else
            snprintf(why, capacity, "data sets in host memory: the %s backend has no %s",
                     backend->ops->name, missing);
        return AX_STATUS_OK;
    }
    ax_device_data *data = calloc(1, sizeof *data);
    if (!data)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for the data sets' device copies");
    data->backend = backend;
    double bytes = 0.0;
    bool fits = true;
    for (int s = 0; s < count && fits; s++) {
        const ax_dataset *set = sets[s];
        if (!set || set->stream || set->rows <= 0 || !set->feature_values || find(data, set->feature_values))
            continue;
        const struct {
            const void *host;
            int64_t width;
            size_t row_bytes;
        } parts[3] = {
            {set->feature_values, set->features, (size_t)set->features * sizeof(float)},
            {set->labels, 0, sizeof(int32_t)},
            {set->target_values, set->targets, (size_t)set->targets * sizeof(float)},
        };
        for (int p = 0; p < 3 && fits; p++) {
            if (!parts[p].host || data->count == MAX_ARRAYS)
                continue;
            /* Labels in one block: their gather reads them through one pointer. */
            fits = upload_array(backend, &data->arrays[data->count], parts[p].host, set->rows,
                                parts[p].width, parts[p].row_bytes, p == 1 ? set->rows : max_rows);
            if (fits) {
                data->count++;
                bytes += (double)set->rows * (double)parts[p].row_bytes;
            } else {
                snprintf(why, capacity, "data sets in host memory: %s (%.0f MB with the sets before "
                         "it) does not fit the device's memory",
                         set->source, (bytes + (double)set->rows * (double)parts[p].row_bytes) / 1e6);
            }
        }
    }
    if (fits && backend->ops->status(backend) != AX_STATUS_OK) { /* a failed copy */
        ax_device_data_free(data);
        return backend->ops->status(backend);
    }
    /* Room must be left for what the run allocates later (an evaluation's
     * side buffer, a backend's scratch): 64 MiB and an eighth of the sets. */
    if (fits && data->count > 0) {
        const size_t headroom = ((size_t)64 << 20) + (size_t)(bytes / 8.0);
        void *spare = NULL;
        fits = ax_backend_alloc(backend, headroom, "the headroom", &spare) == AX_STATUS_OK;
        backend->ops->free(backend, spare);
        if (!fits)
            snprintf(why, capacity, "data sets in host memory: on the device (%.0f MB) they would "
                     "leave less than %.0f MB of its memory free", bytes / 1e6,
                     (double)headroom / 1e6);
    }
    if (!fits || data->count == 0) {
        if (fits)
            snprintf(why, capacity, "data sets in host memory: none is held whole in memory");
        ax_device_data_free(data);
        return AX_STATUS_OK;
    }
    snprintf(why, capacity, "data sets on the device: %.3g MB", bytes / 1e6);
    *out = data;
    return AX_STATUS_OK;
}

void ax_device_data_set_order(ax_device_data *data, const int64_t *order, int64_t rows)
{
    if (!data || !order || rows <= 0)
        return;
    ax_backend *backend = data->backend;
    if (!data->order || data->order_rows != rows) {
        backend->ops->free(backend, data->order);
        free(data->order_stage);
        data->order_bytes = rows <= INT32_MAX ? 4 : 8;
        data->order = NULL;
        (void)ax_backend_alloc(backend, (size_t)rows * (size_t)data->order_bytes, "the order",
                               &data->order); /* NULL on failure, handled below */
        data->order_stage = data->order_bytes == 4 ? malloc((size_t)rows * sizeof(int32_t)) : NULL;
        data->order_rows = rows;
        if (!data->order || (data->order_bytes == 4 && !data->order_stage)) {
            /* No room for the order: batches in it come from host memory. */
            backend->ops->free(backend, data->order);
            free(data->order_stage);
            data->order = data->order_stage = NULL;
            data->order_host = NULL;
            return;
        }
    }
    if (data->order_bytes == 4) {
        int32_t *narrow = data->order_stage;
        for (int64_t i = 0; i < rows; i++)
            narrow[i] = (int32_t)order[i];
        backend->ops->write_bytes(backend, data->order, narrow, (size_t)rows * sizeof(int32_t));
    } else {
        backend->ops->write_bytes(backend, data->order, order, (size_t)rows * sizeof(int64_t));
    }
    data->order_host = order;
}

/* The device order for a host order: NULL for none; false when order is
 * not the uploaded one. */
static bool device_order(const ax_device_data *data, const int64_t *order, const void **out)
{
    *out = NULL;
    if (!order)
        return true;
    if (order != data->order_host || !data->order)
        return false;
    *out = data->order;
    return true;
}

bool ax_device_data_gather_rows(ax_device_data *data, void *dst, const float *host, int64_t width,
                                const int64_t *order, int64_t first, int64_t count)
{
    const device_array *array = find(data, host);
    const void *on_device;
    if (!array || array->width != width || !device_order(data, order, &on_device))
        return false;
    ax_backend *backend = data->backend;
    for (int b = 0; b < array->blocks; b++) {
        const int64_t block_first = (int64_t)b * array->block_rows;
        const int64_t n = array->rows - block_first < array->block_rows ? array->rows - block_first
                                                                        : array->block_rows;
        /* Rows in order need only the blocks they lie in. */
        if (!order && (first >= block_first + n || first + count <= block_first))
            continue;
        backend->ops->gather_rows_device(backend, dst, array->block[b], width, block_first, n,
                                         on_device, data->order_bytes, first, count);
    }
    return true;
}

bool ax_device_data_gather_labels(ax_device_data *data, int32_t *dst, const int32_t *host,
                                  const int64_t *order, int64_t first, int64_t count)
{
    const device_array *array = find(data, host);
    const void *on_device;
    if (!array || array->width != 0 || array->blocks != 1 || !device_order(data, order, &on_device))
        return false;
    data->backend->ops->gather_labels_device(data->backend, dst, array->block[0], on_device,
                                             data->order_bytes, first, count);
    return true;
}

const char *ax_net_data_placement(const ax_net *net) { return net->run.data_placement; }
