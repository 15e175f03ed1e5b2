/* test_backend_plugin.c: proves the generic plugin loader (backend.c,
 * plugin.h) finds libaxon_<name>.so and uses it through its one table:
 * a test plugin (plugin_fake.c, named by $AXON_FAKE_PLUGIN) gives its
 * devices and backends; a name this build has no plugin for, a missing
 * file, a file without the named table, and a table from another plugin
 * interface are each refused with a message saying which, never called;
 * names that are not names are refused before any file is looked for.
 * Devices are {backend, index}: parsed and written as text, and a network
 * on device fake:1 trains through the public API alone, with the same
 * weights as on the CPU (the fake devices are the CPU backend). */
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
                "was built for plugin interface 3 (this axon has 4)");
    CHECK_FAILS(ax_backend_create_on("stale", 0, AX_PRECISION_F32, &backend),
                AX_STATUS_UNSUPPORTED, "plugin interface");
    CHECK_FAILS(ax_backend_plugin_get("../fake", &plugin), AX_STATUS_BAD_ARGUMENT,
                "not a backend name");
    CHECK_FAILS(ax_backend_plugin_get("", &plugin), AX_STATUS_BAD_ARGUMENT, "not a backend name");
    CHECK_FAILS(ax_backend_create_on("cpu", 1, AX_PRECISION_F32, &backend), AX_STATUS_BAD_ARGUMENT,
                "one CPU device");

    ax_device device;
    CHECK_OK(ax_device_parse("cpu", &device));
    CHECK(ax_device_is_cpu(device) && device.index == 0);
    CHECK_OK(ax_device_parse("cuda", &device));
    CHECK(strcmp(device.backend, "cuda") == 0 && device.index == 0);
    CHECK_OK(ax_device_parse("opencl:12", &device));
    CHECK(strcmp(device.backend, "opencl") == 0 && device.index == 12);
    ax_device_format(device, text, sizeof text);
    CHECK(strcmp(text, "opencl:12") == 0);
    ax_device_format(ax_device_cpu(), text, sizeof text);
    CHECK(strcmp(text, "cpu") == 0);
    const ax_device zeroed = {{0}, 0};
    CHECK(ax_device_is_cpu(zeroed));
    const char *bad[] = {"", "cuda:", "cuda:-1", "cuda:1024", "cuda:1x", ":1", "cpu:1", "a/b",
                         "averyveryverylongname", NULL};
    for (int i = 0; i < 10; i++)
        CHECK_FAILS(ax_device_parse(bad[i], &device), AX_STATUS_BAD_ARGUMENT, "is not a device");
    CHECK(ax_device_count("fake") == 2 && ax_device_count("cpu") == 1 &&
          ax_device_count("nosuch") == 0);
    CHECK_OK(ax_device_info((ax_device){"fake", 0}, text, sizeof text));
    CHECK(strcmp(text, "fake device 0 (the CPU)") == 0);

    /* A network on a plugin's device, through axon.h only. */
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_synth_linear(200, 4, 9, &data));
    ax_net_config config = ax_net_defaults();
    config.input_width = 4;
    CHECK_OK(ax_layers_parse("6:tanh,1", &config));
    ax_net *on_cpu = NULL, *on_fake = NULL;
    CHECK_OK(ax_net_create(&config, &on_cpu));
    config.device = (ax_device){"fake", 1};
    CHECK_OK(ax_net_create(&config, &on_fake));
    config.device = (ax_device){"fake", 7};
    ax_net *absent = NULL;
    CHECK_FAILS(ax_net_create(&config, &absent), AX_STATUS_UNSUPPORTED, "no fake device 7");
    ax_net_config_release(&config); /* each network keeps its own copy of the layers */
    if (data && on_cpu && on_fake) {
        ax_train_config training = ax_train_defaults();
        training.epochs = 2;
        ax_train_summary summary = ax_train_summary_empty();
        CHECK_OK(ax_train(on_cpu, data, NULL, NULL, &training, &summary));
        CHECK_OK(ax_train(on_fake, data, NULL, NULL, &training, &summary));
        double a[64], b[64];
        CHECK(ax_net_parameter_count(on_cpu) <= 64);
        ax_net_parameters_get(on_cpu, a);
        ax_net_parameters_get(on_fake, b);
        CHECK(memcmp(a, b, (size_t)ax_net_parameter_count(on_cpu) * sizeof(double)) == 0);
    }
    float x[4] = {1, 2, 3, 4};
    double h, mi;
    if (ax_build_info_get().stats)
        CHECK_FAILS(ax_stats_entropy_mi_on((ax_device){"fake", 0}, x, x, 1, 4, &h, &mi, NULL),
                    AX_STATUS_UNSUPPORTED, "libaxon_fake.so has no statistics kernels");
    else /* AXON_STATS=OFF: src/stats/absent.c refuses on every device */
        CHECK_FAILS(ax_stats_entropy_mi_on((ax_device){"fake", 0}, x, x, 1, 4, &h, &mi, NULL),
                    AX_STATUS_UNSUPPORTED, "cmake -DAXON_STATS=ON");
    ax_net_free(on_cpu);
    ax_net_free(on_fake);
    ax_dataset_free(data);
    return test_finish("test_backend_plugin");
}
