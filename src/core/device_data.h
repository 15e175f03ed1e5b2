/* device_data.h: a training run's data sets held in backend memory, so that
 * a batch is gathered on the device from an order uploaded once per epoch,
 * not packed on the host and sent over the bus at every step (issue 26,
 * item 1). Used where the backend has the optional entries of
 * AX_BACKEND_FEATURE_DEVICE_DATA (backend.h); the CPU has none and reads
 * its batches from host memory. */
#ifndef AX_CORE_DEVICE_DATA_H
#define AX_CORE_DEVICE_DATA_H

#include <stdbool.h>
#include <stdint.h>

#include "axon.h"
#include "backend/backend.h"

typedef struct ax_device_data ax_device_data;

/* Copies of the sets' rows (float32, as the host holds them), labels and
 * targets into backend memory, each set in as few blocks as the device's
 * allocations allow (the whole set in one, else in row blocks). NULL sets,
 * streamed sets and empty ones are left in host memory. *out stays NULL,
 * and the status OK, when the backend lacks the entries, when
 * $AXON_DEVICE_DATA is "off", or when the sets do not fit the device's
 * memory (then batches are gathered from host memory as before); `why`
 * (may be NULL) gets a line saying where the data sets are and why.
 * $AXON_DEVICE_DATA=rows:N (for tests) makes blocks of at most N rows. */
ax_status ax_device_data_create(ax_backend *backend, const ax_dataset *const *sets, int count,
                                ax_device_data **out, char *why, size_t capacity);
void ax_device_data_free(ax_device_data *data);

/* Uploads the epoch's row order (rows of int64 on the host) as int32 (or
 * int64 beyond 2^31 rows); batches whose order is this array are then
 * gathered on the device. */
void ax_device_data_set_order(ax_device_data *data, const int64_t *order, int64_t rows);

/* dst (count, width) in backend memory = the rows of host matrix `host`
 * (order[first + r], or first + r when order is NULL), gathered from its
 * device copy: false (nothing done) when host is not held on the device or
 * order is not the uploaded one. */
bool ax_device_data_gather_rows(ax_device_data *data, void *dst, const float *host, int64_t width,
                                const int64_t *order, int64_t first, int64_t count);
/* The same for a set's labels into dst (count) int32 backend memory. */
bool ax_device_data_gather_labels(ax_device_data *data, int32_t *dst, const int32_t *host,
                                  const int64_t *order, int64_t first, int64_t count);

#endif
