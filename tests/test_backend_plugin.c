/* test_backend_plugin.c: proves the generic plugin loader (backend.c,
 * plugin.h) finds libaxon_<name>.so and uses it through its one table:
 * a test plugin (plugin_fake.c, named by $AXON_FAKE_PLUGIN) gives its
 * devices and backends; a name this build has no plugin for, a missing
 * file, a file without the named table, and a table from another plugin
 * interface are each refused with a message saying which, never called;
 * names that are not names are refused before any file is looked for. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "backend/plugin.h"
#include "test_util.h"

int main(void)
{
    /* Each name is opened once per process: every case has its own. */
    setenv("AXON_FAKE_PLUGIN", AXON_TEST_PLUGIN, 1);
    setenv("AXON_STALE_PLUGIN", AXON_TEST_PLUGIN, 1);
    setenv("AXON_UNNAMED_PLUGIN", AXON_TEST_PLUGIN, 1);
    setenv("AXON_MISSING_PLUGIN", "/nonexistent/libaxon_missing.so", 1);

    const ax_backend_plugin *plugin = NULL;
    CHECK_OK(ax_backend_plugin_get("fake", &plugin));
    CHECK(plugin && strcmp(plugin->name, "fake") == 0);
    CHECK(ax_backend_device_count("fake") == 2);
    CHECK(ax_backend_device_count("cpu") == 1);
    char text[64];
    CHECK_OK(plugin->device_info(1, text, sizeof text));
    CHECK(strcmp(text, "fake device 1 (the CPU)") == 0);
    ax_backend *backend = NULL;
    CHECK_OK(ax_backend_create_on("fake", 1, AX_PRECISION_F64, &backend));
    CHECK(backend && backend->precision == AX_PRECISION_F64 && backend->ops->status(backend) == 0);
    if (backend)
        backend->ops->destroy(backend);
    CHECK_FAILS(ax_backend_create_on("fake", 2, AX_PRECISION_F32, &backend), AX_STATUS_UNSUPPORTED,
                "no fake device 2");
    CHECK(backend == NULL);
    /* The same table again, without opening the file again. */
    const ax_backend_plugin *again = NULL;
    CHECK_OK(ax_backend_plugin_get("fake", &again));
    CHECK(again == plugin);

    CHECK_FAILS(ax_backend_plugin_get("nosuch", &plugin), AX_STATUS_UNSUPPORTED,
                "this build has no NOSUCH backend (libaxon_nosuch.so)");
    CHECK(plugin == NULL);
    CHECK(ax_backend_device_count("nosuch") == 0);
    CHECK_FAILS(ax_backend_plugin_get("missing", &plugin), AX_STATUS_UNSUPPORTED,
                "/nonexistent/libaxon_missing.so: no such file");
    CHECK_FAILS(ax_backend_plugin_get("unnamed", &plugin), AX_STATUS_UNSUPPORTED,
                "exports no ax_backend_plugin_unnamed");
    CHECK_FAILS(ax_backend_plugin_get("stale", &plugin), AX_STATUS_UNSUPPORTED,
                "was built for plugin interface 1 (this axon has 2)");
    CHECK_FAILS(ax_backend_create_on("stale", 0, AX_PRECISION_F32, &backend),
                AX_STATUS_UNSUPPORTED, "plugin interface");
    CHECK_FAILS(ax_backend_plugin_get("../fake", &plugin), AX_STATUS_BAD_ARGUMENT,
                "not a backend name");
    CHECK_FAILS(ax_backend_plugin_get("", &plugin), AX_STATUS_BAD_ARGUMENT, "not a backend name");
    CHECK_FAILS(ax_backend_create_on("cpu", 1, AX_PRECISION_F32, &backend), AX_STATUS_BAD_ARGUMENT,
                "one CPU device");
    return test_finish("test_backend_plugin");
}
