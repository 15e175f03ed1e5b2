/* plugin_fake_v4.c: the "fake_v4" test plugin, part of libaxon_fake.so
 * (plugin_fake.c), compiled as a plugin built against the headers of
 * table version 4 would have been (AX_BACKEND_HEADERS_AS_OF, backend.h):
 * its ax_backend_ops ends at `destroy`, without the version 5 entries of
 * data sets on the device, and it says so (abi 4, its table's size). One
 * device, the CPU backend under a table of that size. The loader must take
 * it (tests/test_backend_plugin.c), give its backends the version 4
 * entries as NULL, and training on it must gather from host memory. */
#define AX_BACKEND_HEADERS_AS_OF 4
#include "backend/plugin.h"
#include <stdio.h>

#include "base/error.h"

/* The CPU's table cut to version 4's entries (this file's
 * ax_backend_ops), one per precision. */
static ax_backend_ops v4_ops[2];

static int v4_device_count(void) { return 1; }

static ax_status v4_device_info(int index, char *text, size_t capacity)
{
    if (index != 0)
        return ax_fail(AX_STATUS_UNSUPPORTED, "no fake_v4 device %d: there is 1 (0)", index);
    snprintf(text, capacity, "fake_v4 device 0 (the CPU, behind a table of version 4)");
    return AX_STATUS_OK;
}

static ax_status v4_create(ax_precision precision, int index, ax_backend **out)
{
    *out = NULL;
    AX_TRY(v4_device_info(index, (char[80]){0}, 80));
    ax_backend *backend = ax_backend_cpu_create(precision);
    if (!backend)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory");
    const int slot = backend->real_size == sizeof(double);
    if (!v4_ops[slot].name)
        v4_ops[slot] = *backend->ops; /* version 4's entries: the first sizeof v4_ops bytes */
    backend->ops = &v4_ops[slot];
    *out = backend;
    return AX_STATUS_OK;
}

AX_PLUGIN_EXPORT const ax_backend_plugin ax_backend_plugin_fake_v4 = {
    .abi = AX_BACKEND_PLUGIN_ABI,
    .ops_size = sizeof(ax_backend_ops),
    .name = "fake_v4",
    .device_count = v4_device_count,
    .device_info = v4_device_info,
    .create = v4_create,
    .init = ax_plugin_host_init,
};
