/* plugin_fake.c: a backend plugin for tests/test_backend_plugin.c, built as
 * libaxon_fake.so: two "fake" devices, each the CPU backend (resolved from
 * the test program, which exports its symbols), plus tables a loader must
 * refuse: one from an older plugin interface and one under another name. */
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

const ax_backend_plugin ax_backend_plugin_fake = {
    .abi = AX_BACKEND_PLUGIN_ABI,
    .ops_size = sizeof(ax_backend_ops),
    .name = "fake",
    .device_count = fake_device_count,
    .device_info = fake_device_info,
    .create = fake_create,
};

/* As a plugin built against older headers would export it. */
const ax_backend_plugin ax_backend_plugin_stale = {
    .abi = AX_BACKEND_PLUGIN_ABI - 1,
    .ops_size = sizeof(ax_backend_ops) - sizeof(void *),
    .name = "stale",
    .device_count = fake_device_count,
    .device_info = fake_device_info,
    .create = fake_create,
};
