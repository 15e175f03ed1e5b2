/* plugin_fake.c: backend plugins for the tests, built as libaxon_fake.so:
 * - "fake" (tests/test_backend_plugin.c, tests/test_backend_ops.c): two
 *   devices, each the CPU backend (lent by the loader through
 *   ax_backend_host, as a real plugin gets ax_fail), so the CPU's own code
 *   runs behind the plugin loader and must equal the CPU bit for bit; with
 *   the entries of data sets on the device and of losses kept on the device
 *   (backend.h, version 5) added, written here over host memory, so that
 *   training takes the device paths (core/device_data.c, train.c's deferred
 *   losses) where the CPU gathers from the data set and reads each loss;
 * - "fake_broken" (test_backend_ops --expect-mismatch gemm): one device,
 *   the CPU backend with a wrong gemm (the first element of C off by about
 *   0.1%), which the parity test must catch;
 * - "fake_plain" (test_conv_backend.c): one device, the CPU backend without
 *   the optional image operations, as a backend that has not written them
 *   yet: a network of convolutions or pooling must be refused on it;
 * - "fake_newer": the "fake" devices behind a table of a later version
 *   than this axon's, with entries it does not know at the tail: accepted;
 * - "fake_v4" (plugin_fake_v4.c): as built against the headers of version
 *   3, without the version 5 entries: accepted, its missing entries
 *   refused by name;
 * - "fake" also counts its host reads (every entry whose result the host
 *   would wait for on a device), offered through get_proc_address as
 *   "fake_host_reads", and lets a test take its batched reduce away
 *   ("fake_batched_reads") to count the reads of separate calls;
 * - tables a loader must refuse: one from a plugin interface older than the
 *   oldest it takes, and one under another name. */
#include "backend/plugin.h"
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"

static int fake_device_count(void) { return 2; }

static ax_status fake_device_info(int index, char *text, size_t capacity)
{
    if (index < 0 || index >= 2)
        return ax_fail(AX_STATUS_UNSUPPORTED, "no fake device %d: there are 2 (0 and 1)", index);
    snprintf(text, capacity, "fake device %d (the CPU)", index);
    return AX_STATUS_OK;
}

/* Data sets "on the device": the device is host memory here. */
static void fake_write_bytes(ax_backend *backend, void *dst, const void *src, size_t bytes)
{
    (void)backend;
    if (bytes > 0)
        memcpy(dst, src, bytes);
}

static int64_t order_at(const void *order, int order_bytes, int64_t i)
{
    return order_bytes == 4 ? (int64_t)((const int32_t *)order)[i] : ((const int64_t *)order)[i];
}

static void fake_gather_rows_device(ax_backend *backend, void *dst, const float *block,
                                    int64_t width, int64_t block_first, int64_t block_rows,
                                    const void *order, int order_bytes, int64_t first,
                                    int64_t count)
{
    const bool f64 = backend->real_size == sizeof(double);
    for (int64_t r = 0; r < count; r++) {
        const int64_t row = order ? order_at(order, order_bytes, first + r) : first + r;
        if (row < block_first || row >= block_first + block_rows)
            continue;
        const float *from = block + (row - block_first) * width;
        for (int64_t c = 0; c < width; c++) {
            if (f64)
                ((double *)dst)[r * width + c] = (double)from[c];
            else
                ((float *)dst)[r * width + c] = from[c];
        }
    }
}

static void fake_gather_labels_device(ax_backend *backend, int32_t *dst, const int32_t *labels,
                                      const void *order, int order_bytes, int64_t first,
                                      int64_t count)
{
    (void)backend;
    for (int64_t r = 0; r < count; r++)
        dst[r] = labels[order ? order_at(order, order_bytes, first + r) : first + r];
}

/* Losses kept "on the device": the CPU's losses, their sums kept here
 * while deferral is on (one state per backend; the tests train one
 * network at a time). */
static const ax_backend_ops *fake_cpu_ops[2];
static struct fake_loss {
    ax_backend *backend;
    bool on;
    double last, total, bad_value;
    int64_t first_bad;
} fake_losses[16];

static struct fake_loss *loss_state(ax_backend *backend)
{
    for (int i = 0; i < 16; i++)
        if (fake_losses[i].backend == backend)
            return &fake_losses[i];
    for (int i = 0; i < 16; i++)
        if (!fake_losses[i].backend) {
            fake_losses[i] = (struct fake_loss){.backend = backend, .first_bad = -1};
            return &fake_losses[i];
        }
    return &fake_losses[0]; /* more than the tests make */
}

/* Host reads of the "fake" devices, all backends together. */
static int64_t fake_reads;

static double kept(ax_backend *backend, double sum)
{
    struct fake_loss *state = loss_state(backend);
    if (!state->on) {
        fake_reads++;
        return sum;
    }
    state->last = sum;
    return 0.0;
}

#define CPU_OPS_OF(backend) fake_cpu_ops[(backend)->real_size == sizeof(double)]

static double fake_cross_entropy(ax_backend *backend, const void *outputs, const int32_t *labels,
                                 void *delta, double scale, int64_t rows, int64_t cols)
{
    return kept(backend, CPU_OPS_OF(backend)->cross_entropy(backend, outputs, labels, delta, scale,
                                                             rows, cols));
}

static double fake_binary_cross_entropy(ax_backend *backend, const void *outputs,
                                        const int32_t *labels, const void *targets, void *delta,
                                        double scale, int64_t rows, int64_t cols)
{
    return kept(backend, CPU_OPS_OF(backend)->binary_cross_entropy(backend, outputs, labels,
                                                                    targets, delta, scale, rows,
                                                                    cols));
}

static double fake_squared_error(ax_backend *backend, const void *outputs, const int32_t *labels,
                                 const void *targets, void *delta, double scale, int64_t rows,
                                 int64_t cols)
{
    return kept(backend, CPU_OPS_OF(backend)->squared_error(backend, outputs, labels, targets,
                                                             delta, scale, rows, cols));
}

static bool fake_loss_defer(ax_backend *backend, bool on)
{
    loss_state(backend)->on = on;
    return on;
}

static void fake_loss_accumulate(ax_backend *backend, double scale, double weight, int64_t step)
{
    struct fake_loss *state = loss_state(backend);
    const double v = state->last * scale;
    state->total += v * weight;
    if (!isfinite(v) && state->first_bad < 0) {
        state->first_bad = step;
        state->bad_value = v;
    }
}

static void fake_loss_reset(ax_backend *backend, double start)
{
    struct fake_loss *state = loss_state(backend);
    state->total = start;
    state->first_bad = -1;
}

static void fake_loss_read(ax_backend *backend, double *total, int64_t *first_bad,
                           double *bad_value)
{
    fake_reads++;
    const struct fake_loss *state = loss_state(backend);
    *total = state->total;
    *first_bad = state->first_bad;
    *bad_value = state->bad_value;
}

static void fake_destroy(ax_backend *backend)
{
    struct fake_loss *state = loss_state(backend);
    state->backend = NULL;
    CPU_OPS_OF(backend)->destroy(backend);
}

/* The other entries a device backend's host waits for, counted. */
static void fake_download_f64(ax_backend *backend, double *dst, const void *src, int64_t count)
{
    fake_reads++;
    CPU_OPS_OF(backend)->download_f64(backend, dst, src, count);
}

static void fake_download_f32(ax_backend *backend, float *dst, const void *src, int64_t count)
{
    fake_reads++;
    CPU_OPS_OF(backend)->download_f32(backend, dst, src, count);
}

static double fake_dot(ax_backend *backend, int64_t count, const void *x, const void *y)
{
    fake_reads++;
    return CPU_OPS_OF(backend)->dot(backend, count, x, y);
}

static bool fake_all_finite(ax_backend *backend, int64_t count, const void *x)
{
    fake_reads++;
    return CPU_OPS_OF(backend)->all_finite(backend, count, x);
}

static double fake_l1_penalty(ax_backend *backend, int64_t count, const void *x, double alpha,
                              void *y)
{
    fake_reads++;
    return CPU_OPS_OF(backend)->l1_penalty(backend, count, x, alpha, y);
}

static void fake_argmax_rows(ax_backend *backend, const void *outputs, int32_t *host_indices,
                             int64_t rows, int64_t cols)
{
    fake_reads++;
    CPU_OPS_OF(backend)->argmax_rows(backend, outputs, host_indices, rows, cols);
}

static void fake_reduce(ax_backend *backend, int n, ax_reduction *reductions)
{
    fake_reads++; /* one wait for all n */
    CPU_OPS_OF(backend)->reduce(backend, n, reductions);
}

/* The CPU's tables with the version 5 entries, one per precision. */
static ax_backend_ops fake_ops[2];

typedef int64_t (*fake_host_reads_fn)(void);
typedef void (*fake_batched_reads_fn)(bool on);

static int64_t fake_host_reads(void) { return fake_reads; }

/* Off: reduce NULL, as in a plugin before version 9 (ax_backend_reduce
 * then makes one call per reduction); for backends created after. */
static bool fake_batching = true;
static void fake_batched_reads(bool on) { fake_batching = on; }

static ax_backend_proc fake_get_proc_address(const char *name)
{
    if (strcmp(name, "fake_host_reads") == 0)
        return (ax_backend_proc)fake_host_reads;
    if (strcmp(name, "fake_batched_reads") == 0)
        return (ax_backend_proc)fake_batched_reads;
    return NULL;
}

static ax_status fake_create(ax_precision precision, int index, ax_backend **out)
{
    *out = NULL;
    AX_TRY(fake_device_info(index, (char[64]){0}, 64));
    ax_backend *backend = ax_backend_cpu_create(precision);
    if (!backend)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory");
    const int slot = backend->real_size == sizeof(double);
    if (!fake_ops[slot].name) {
        fake_ops[slot] = *backend->ops;
        fake_ops[slot].write_bytes = fake_write_bytes;
        fake_ops[slot].gather_rows_device = fake_gather_rows_device;
        fake_ops[slot].gather_labels_device = fake_gather_labels_device;
        fake_cpu_ops[slot] = backend->ops;
        fake_ops[slot].cross_entropy = fake_cross_entropy;
        fake_ops[slot].binary_cross_entropy = fake_binary_cross_entropy;
        fake_ops[slot].squared_error = fake_squared_error;
        fake_ops[slot].loss_defer = fake_loss_defer;
        fake_ops[slot].loss_accumulate = fake_loss_accumulate;
        fake_ops[slot].loss_reset = fake_loss_reset;
        fake_ops[slot].loss_read = fake_loss_read;
        fake_ops[slot].destroy = fake_destroy;
        fake_ops[slot].download_f64 = fake_download_f64;
        fake_ops[slot].download_f32 = fake_download_f32;
        fake_ops[slot].dot = fake_dot;
        fake_ops[slot].all_finite = fake_all_finite;
        fake_ops[slot].l1_penalty = fake_l1_penalty;
        fake_ops[slot].argmax_rows = fake_argmax_rows;
    }
    fake_ops[slot].reduce = fake_batching ? fake_reduce : NULL;
    backend->ops = &fake_ops[slot];
    *out = backend;
    return AX_STATUS_OK;
}

AX_PLUGIN_EXPORT const ax_backend_plugin ax_backend_plugin_fake = {
    .abi = AX_BACKEND_PLUGIN_ABI,
    .ops_size = sizeof(ax_backend_ops),
    .name = "fake",
    .device_count = fake_device_count,
    .device_info = fake_device_info,
    .create = fake_create,
    .init = ax_plugin_host_init,
    .get_proc_address = fake_get_proc_address,
};

/* The CPU's tables with gemm replaced, one per precision (index: a real of
 * 8 bytes), filled on first use; the CPU's own gemm is kept to call. */
static ax_backend_ops broken_ops[2];
static const ax_backend_ops *cpu_ops[2];

static void broken_gemm(ax_backend *backend, bool trans_a, bool trans_b, int64_t m, int64_t n,
                        int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                        int64_t ldb, double beta, void *c, int64_t ldc)
{
    const ax_backend_ops *cpu = cpu_ops[backend->real_size == sizeof(double)];
    cpu->gemm(backend, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    double first;
    cpu->download_f64(backend, &first, c, 1);
    first += 1e-3 * (1.0 + (first < 0 ? -first : first));
    cpu->upload_f64(backend, c, &first, 1);
}

static int broken_device_count(void) { return 1; }

static ax_status broken_device_info(int index, char *text, size_t capacity)
{
    if (index != 0)
        return ax_fail(AX_STATUS_UNSUPPORTED, "no fake_broken device %d: there is 1 (0)", index);
    snprintf(text, capacity, "fake_broken device 0 (the CPU, with a wrong gemm)");
    return AX_STATUS_OK;
}

static ax_status broken_create(ax_precision precision, int index, ax_backend **out)
{
    *out = NULL;
    AX_TRY(broken_device_info(index, (char[80]){0}, 80));
    ax_backend *backend = ax_backend_cpu_create(precision);
    if (!backend)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory");
    const int slot = backend->real_size == sizeof(double);
    if (!cpu_ops[slot]) {
        cpu_ops[slot] = backend->ops;
        broken_ops[slot] = *backend->ops;
        broken_ops[slot].gemm = broken_gemm;
    }
    backend->ops = &broken_ops[slot];
    *out = backend;
    return AX_STATUS_OK;
}

AX_PLUGIN_EXPORT const ax_backend_plugin ax_backend_plugin_fake_broken = {
    .abi = AX_BACKEND_PLUGIN_ABI,
    .ops_size = sizeof(ax_backend_ops),
    .name = "fake_broken",
    .device_count = broken_device_count,
    .device_info = broken_device_info,
    .create = broken_create,
    .init = ax_plugin_host_init,
};

/* The CPU's tables without the optional operations, one per precision. */
static ax_backend_ops plain_ops[2];

static int plain_device_count(void) { return 1; }

static ax_status plain_device_info(int index, char *text, size_t capacity)
{
    if (index != 0)
        return ax_fail(AX_STATUS_UNSUPPORTED, "no fake_plain device %d: there is 1 (0)", index);
    snprintf(text, capacity, "fake_plain device 0 (the CPU, without image operations)");
    return AX_STATUS_OK;
}

static ax_status plain_create(ax_precision precision, int index, ax_backend **out)
{
    *out = NULL;
    AX_TRY(plain_device_info(index, (char[80]){0}, 80));
    ax_backend *backend = ax_backend_cpu_create(precision);
    if (!backend)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory");
    const int slot = backend->real_size == sizeof(double);
    if (!plain_ops[slot].name) {
        plain_ops[slot] = *backend->ops;
        plain_ops[slot].im2col = NULL;
        plain_ops[slot].col2im = NULL;
        plain_ops[slot].pool_forward = NULL;
        plain_ops[slot].pool_backward = NULL;
        plain_ops[slot].transpose = NULL;
    }
    backend->ops = &plain_ops[slot];
    *out = backend;
    return AX_STATUS_OK;
}

AX_PLUGIN_EXPORT const ax_backend_plugin ax_backend_plugin_fake_plain = {
    .abi = AX_BACKEND_PLUGIN_ABI,
    .ops_size = sizeof(ax_backend_ops),
    .name = "fake_plain",
    .device_count = plain_device_count,
    .device_info = plain_device_info,
    .create = plain_create,
    .init = ax_plugin_host_init,
};

/* A plugin of a version after this axon's: its table (and the plugin
 * table) have entries at their tails that this axon does not know. */
typedef struct newer_ops {
    ax_backend_ops known;
    void (*later[2])(void); /* entries of a version to come */
} newer_ops;
static newer_ops newer_tables[2];

static ax_status newer_create(ax_precision precision, int index, ax_backend **out)
{
    AX_TRY(fake_create(precision, index, out));
    const int slot = (*out)->real_size == sizeof(double);
    if (!newer_tables[slot].known.name)
        newer_tables[slot].known = *(*out)->ops;
    (*out)->ops = &newer_tables[slot].known;
    return AX_STATUS_OK;
}

typedef struct newer_plugin {
    ax_backend_plugin known;
    int (*later_entry)(int index); /* an entry of a version to come */
} newer_plugin;

static int later_entry(int index) { return index; }

AX_PLUGIN_EXPORT const newer_plugin ax_backend_plugin_fake_newer = {
    .known = {.abi = AX_BACKEND_PLUGIN_ABI + 1,
              .ops_size = sizeof(newer_ops),
              .name = "fake_newer",
              .device_count = fake_device_count,
              .device_info = fake_device_info,
              .create = newer_create,
              .init = ax_plugin_host_init},
    .later_entry = later_entry,
};

/* As a plugin built before the tables could grow would export it. */
AX_PLUGIN_EXPORT const ax_backend_plugin ax_backend_plugin_stale = {
    .abi = AX_BACKEND_PLUGIN_ABI_OLDEST - 1,
    .ops_size = offsetof(ax_backend_ops, im2col),
    .name = "stale",
    .device_count = fake_device_count,
    .device_info = fake_device_info,
    .create = fake_create,
};

/* Tables the loader must refuse (test_device_refusals): one that names
 * itself otherwise than its file and symbol, one without its create. */
AX_PLUGIN_EXPORT const ax_backend_plugin ax_backend_plugin_misnamed = {
    .abi = AX_BACKEND_PLUGIN_ABI,
    .ops_size = sizeof(ax_backend_ops),
    .name = "someone_else",
    .device_count = fake_device_count,
    .device_info = fake_device_info,
    .create = fake_create,
    .init = ax_plugin_host_init,
};

AX_PLUGIN_EXPORT const ax_backend_plugin ax_backend_plugin_headless = {
    .abi = AX_BACKEND_PLUGIN_ABI,
    .ops_size = sizeof(ax_backend_ops),
    .name = "headless",
    .device_count = fake_device_count,
    .device_info = fake_device_info,
    .init = ax_plugin_host_init,
};
