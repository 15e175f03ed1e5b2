/* plugin_fake.c: backend plugins for the tests, built as libaxon_fake.so:
 * - "fake" (tests/test_backend_plugin.c, tests/test_backend_ops.c): two
 *   devices, each the CPU backend (lent by the loader through
 *   ax_backend_host, as a real plugin gets ax_fail), so the CPU's own code runs behind the plugin
 *   loader and must equal the CPU bit for bit;
 * - "fake_broken" (test_backend_ops --expect-mismatch gemm): one device,
 *   the CPU backend with a wrong gemm (the first element of C off by about
 *   0.1%), which the parity test must catch;
 * - "fake_plain" (test_conv_backend.c): one device, the CPU backend without
 *   the optional image operations, as a backend that has not written them
 *   yet: a network of convolutions or pooling must be refused on it;
 * - tables a loader must refuse: one from an older plugin interface and one
 *   under another name. */
#include "backend/plugin.h"
#include <stdio.h>

#include "base/error.h"

static int fake_device_count(void) { return 2; }

static ax_status fake_device_info(int index, char *text, size_t capacity)
{
    if (index < 0 || index >= 2)
        return ax_fail(AX_STATUS_UNSUPPORTED, "no fake device %d: there are 2 (0 and 1)", index);
    snprintf(text, capacity, "fake device %d (the CPU)", index);
    return AX_STATUS_OK;
}

static ax_status fake_create(ax_precision precision, int index, ax_backend **out)
{
    *out = NULL;
    AX_TRY(fake_device_info(index, (char[64]){0}, 64));
    *out = ax_backend_cpu_create(precision);
    return *out ? AX_STATUS_OK : ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory");
}

AX_PLUGIN_EXPORT const ax_backend_plugin ax_backend_plugin_fake = {
    .abi = AX_BACKEND_PLUGIN_ABI,
    .ops_size = sizeof(ax_backend_ops),
    .name = "fake",
    .device_count = fake_device_count,
    .device_info = fake_device_info,
    .create = fake_create,
    .init = ax_plugin_host_init,
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

/* As a plugin built against older headers would export it. */
AX_PLUGIN_EXPORT const ax_backend_plugin ax_backend_plugin_stale = {
    .abi = AX_BACKEND_PLUGIN_ABI - 1,
    .ops_size = sizeof(ax_backend_ops) - sizeof(void *),
    .name = "stale",
    .device_count = fake_device_count,
    .device_info = fake_device_info,
    .create = fake_create,
};
