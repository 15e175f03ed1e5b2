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
#include "core/net.h"
#include "test_datasets.h"
#include "test_util.h"

/* Trains a 4-6-3 classifier on device (SGD, batches of 16, shuffled) and
 * returns its weights (malloc'ed) and in *device_batches the batches it
 * gathered on the device; *train_loss the last epoch's loss. */
static double train_loss;
static int64_t device_losses; /* steps whose loss stayed on the device */
static double *train_classifier(ax_device device, int64_t *device_batches)
{
    ax_dataset *data = test_uniform_dataset(300, 4, 5, false);
    ax_dataset *test = test_uniform_dataset(90, 4, 6, false);
    ax_net_config config = ax_net_defaults();
    config.input_width = 4;
    config.precision = AX_PRECISION_F64;
    config.device = device;
    CHECK_OK(ax_layers_parse("6:tanh,3:softmax", &config));
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    double *weights = NULL;
    *device_batches = -1;
    if (net && data && test) {
        ax_train_config training = ax_train_defaults();
        training.epochs = 3;
        training.batch_size = 16;
        ax_train_summary summary = ax_train_summary_empty();
        CHECK_OK(ax_train(net, data, NULL, test, &training, &summary));
        train_loss = summary.final_train_loss;
        weights = malloc((size_t)ax_net_parameter_count(net) * sizeof(double));
        ax_net_parameters_get(net, weights);
        *device_batches = net->run.device_batches;
        device_losses = net->run.device_losses;
    }
    ax_net_free(net);
    ax_dataset_free(data);
    ax_dataset_free(test);
    return weights;
}

/* A run that diverges (a linear regression, SGD at a learning rate of 1) is stopped naming
 * the step whose loss was first NaN or infinite: the same message whether
 * each step's loss is read (the CPU) or the losses stay on the device and
 * are read at the epoch's end (fake). */
static void test_divergence_step(void)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_synth_linear(300, 4, 9, &data));
    char messages[2][512] = {"", ""};
    const ax_device devices[2] = {ax_device_cpu(), {"fake", 0}};
    for (int d = 0; d < 2 && data; d++) {
        ax_net_config config = ax_net_defaults();
        config.input_width = 4;
        config.device = devices[d];
        CHECK_OK(ax_layers_parse("6,1", &config));
        ax_net *net = NULL;
        CHECK_OK(ax_net_create(&config, &net));
        ax_net_config_release(&config);
        if (!net)
            continue;
        ax_train_config training = ax_train_defaults();
        training.epochs = 2;
        training.batch_size = 16;
        training.learning_rate = 1.0;
        ax_train_summary summary = ax_train_summary_empty();
        CHECK(ax_train(net, data, NULL, NULL, &training, &summary) == AX_STATUS_DIVERGED);
        snprintf(messages[d], sizeof messages[d], "%s", ax_error_message());
        ax_net_free(net);
    }
    CHECK(strstr(messages[0], "training diverged in epoch 1, batch ") != NULL);
    if (strcmp(messages[0], messages[1]) != 0)
        fprintf(stderr, "cpu:  %s\nfake: %s\n", messages[0], messages[1]);
    CHECK(strcmp(messages[0], messages[1]) == 0);
    printf("diverged, on the CPU and with the losses on the fake device: %s\n", messages[1]);
    ax_dataset_free(data);
}

/* Full-batch runs of `kind` (20 iterations, L2 on) on device: the weights
 * (malloc'ed), and in *reads the fake devices' host reads during the run and
 * in *iterations the iterations it ran. */
typedef int64_t (*fake_host_reads_fn)(void);
static double *train_full_batch(ax_optimizer_kind kind, ax_device device, fake_host_reads_fn reads_now,
                                int64_t *reads, int *iterations)
{
    ax_dataset *data = test_uniform_dataset(300, 4, 11, false);
    ax_net_config config = ax_net_defaults();
    config.input_width = 4;
    config.precision = AX_PRECISION_F64;
    config.device = device;
    CHECK_OK(ax_layers_parse("6:tanh,3:softmax", &config));
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    double *weights = NULL;
    *reads = -1;
    if (net && data) {
        ax_train_config training = ax_train_defaults();
        training.optimizer = kind;
        training.batch_size = 0;
        training.epochs = 20;
        training.l2 = 1.0 / 300.0;
        ax_train_summary summary = ax_train_summary_empty();
        const int64_t before = reads_now();
        CHECK_OK(ax_train(net, data, NULL, NULL, &training, &summary));
        *reads = reads_now() - before;
        *iterations = summary.epochs_run;
        weights = malloc((size_t)ax_net_parameter_count(net) * sizeof(double));
        ax_net_parameters_get(net, weights);
    }
    ax_net_free(net);
    ax_dataset_free(data);
    return weights;
}

/* CG and L-BFGS read their scalars through reduce (backend.h, version 9):
 * several dots and finiteness checks per host wait. The fake device counts
 * its host reads; with its reduce taken away (as in a plugin before version
 * 9), or under AXON_BATCHED_READS=off, the same runs make one read per
 * reduction. All give the CPU's weights bit for bit, and the batched runs
 * read the device fewer times. */
static void test_batched_reads(void)
{
    const ax_backend_plugin *plugin = NULL;
    CHECK_OK(ax_backend_plugin_get("fake", &plugin));
    if (!plugin)
        return;
    fake_host_reads_fn reads_now =
        (fake_host_reads_fn)ax_backend_plugin_extension(plugin, "fake_host_reads");
    void (*batched)(bool) =
        (void (*)(bool))ax_backend_plugin_extension(plugin, "fake_batched_reads");
    CHECK(reads_now && batched);
    if (!reads_now || !batched)
        return;
    static const ax_optimizer_kind kinds[] = {AX_OPTIMIZER_CG, AX_OPTIMIZER_LBFGS};
    static const char *const names[] = {"cg", "lbfgs"};
    const size_t bytes = (size_t)(4 * 6 + 6 + 6 * 3 + 3) * sizeof(double);
    for (int k = 0; k < 2; k++) {
        int64_t reads_cpu, reads_on, reads_off;
        int iterations_cpu = 0, iterations_on = 0, iterations_off = 0;
        double *cpu = train_full_batch(kinds[k], ax_device_cpu(), reads_now, &reads_cpu,
                                       &iterations_cpu);
        batched(true);
        double *on = train_full_batch(kinds[k], (ax_device){"fake", 0}, reads_now, &reads_on,
                                      &iterations_on);
        batched(false);
        double *off = train_full_batch(kinds[k], (ax_device){"fake", 0}, reads_now, &reads_off,
                                       &iterations_off);
        batched(true);
        /* AXON_BATCHED_READS=off: the same as a table without reduce */
        int64_t reads_setting;
        int iterations_setting = 0;
        setenv("AXON_BATCHED_READS", "off", 1);
        double *setting = train_full_batch(kinds[k], (ax_device){"fake", 0}, reads_now,
                                           &reads_setting, &iterations_setting);
        unsetenv("AXON_BATCHED_READS");
        CHECK(reads_setting == reads_off && iterations_setting == iterations_cpu);
        if (cpu && setting)
            CHECK(memcmp(cpu, setting, bytes) == 0);
        free(setting);
        CHECK(reads_cpu == 0); /* the CPU's own backend is not the fake's */
        CHECK(iterations_on == iterations_cpu && iterations_off == iterations_cpu &&
              iterations_cpu > 0);
        if (cpu && on && off) {
            CHECK(memcmp(cpu, on, bytes) == 0);
            CHECK(memcmp(cpu, off, bytes) == 0);
        }
        CHECK(reads_on > 0 && reads_on < reads_off);
        printf("%s, %d iterations: %lld host reads batched (%.1f per iteration), %lld one per "
               "reduction (%.1f per iteration)\n",
               names[k], iterations_on, (long long)reads_on,
               (double)reads_on / iterations_on, (long long)reads_off,
               (double)reads_off / iterations_off);
        free(cpu);
        free(on);
        free(off);
    }
}

/* The tables grow at their tails (plugin.h): a plugin built against the
 * headers of version 4 is taken, its backends lack the version 5 entries
 * (asked for by name: refused naming each) and the later optional ones
 * (whole convolutions, reduce: NULL, the layers' own paths), and it trains, gathering
 * from host memory; a plugin of a later version is taken too. The "fake"
 * plugin's data sets on the device (its version 5 entries over host
 * memory) give the CPU's weights bit for bit, held whole or in blocks of
 * rows, and so does the run with them turned off. */
static void test_table_versions(void)
{
    const ax_backend_plugin *plugin = NULL;
    CHECK_OK(ax_backend_plugin_get("fake_v4", &plugin));
    CHECK(plugin && plugin->abi == 4 && plugin->ops_size < sizeof(ax_backend_ops));
    CHECK(plugin && ax_backend_plugin_has(plugin, 4) && !ax_backend_plugin_has(plugin, 5));
    ax_backend *old = NULL;
    CHECK_OK(ax_backend_create_on("fake_v4", 0, AX_PRECISION_F32, &old));
    if (old) {
        char missing[160];
        CHECK(!ax_backend_supports(old->ops, AX_BACKEND_FEATURE_DEVICE_DATA, missing,
                                   sizeof missing));
        CHECK(strcmp(missing, "write_bytes, gather_rows_device and gather_labels_device") == 0);
        CHECK(old->ops->write_bytes == NULL && old->ops->gather_rows_device == NULL);
        /* and the entries of versions 8 to 11: the layers' own paths */
        CHECK(old->ops->conv_forward == NULL && old->ops->reduce == NULL &&
              old->ops->conv_backward_weights == NULL && old->ops->max_pool_backward_relu == NULL);
        /* alloc and synchronize with a status, over version 4's entries. */
        CHECK(old->ops->alloc_status == NULL && old->ops->synchronize_status == NULL);
        void *memory = NULL;
        CHECK_OK(ax_backend_alloc(old, 64, "a test buffer", &memory));
        CHECK(memory != NULL);
        old->ops->free(old, memory);
        CHECK_OK(ax_backend_synchronize(old));
        CHECK(ax_backend_supports(old->ops, AX_BACKEND_FEATURE_IMAGES, missing, sizeof missing));
        CHECK_FAILS(ax_backend_require(old->ops, AX_BACKEND_FEATURE_DEVICE_DATA,
                                       "data sets on the device"),
                    AX_STATUS_UNSUPPORTED,
                    "data sets on the device: the cpu backend's table has no write_bytes, "
                    "gather_rows_device and gather_labels_device");
        old->ops->destroy(old);
    }
    ax_backend *newer = NULL;
    CHECK_OK(ax_backend_plugin_get("fake_newer", &plugin));
    CHECK(plugin && plugin->abi == AX_BACKEND_PLUGIN_ABI + 1);
    CHECK_OK(ax_backend_create_on("fake_newer", 1, AX_PRECISION_F64, &newer));
    if (newer) {
        CHECK(ax_backend_supports(newer->ops, AX_BACKEND_FEATURE_DEVICE_DATA, NULL, 0));
        /* this version's last entry, the CPU's behind it */
        CHECK(newer->ops->max_pool_backward_relu != NULL);
        newer->ops->destroy(newer);
    }

    int64_t batches_cpu, batches_v4, batches_fake, batches_blocks, batches_off, batches_newer;
    const int64_t count = 4 * 6 + 6 + 6 * 3 + 3;
    double *cpu = train_classifier(ax_device_cpu(), &batches_cpu);
    const double cpu_loss = train_loss;
    double *v4 = train_classifier((ax_device){"fake_v4", 0}, &batches_v4);
    double *fake = train_classifier((ax_device){"fake", 0}, &batches_fake);
    /* its losses kept "on the device" (the fake's version 5 entries): the
     * same total, bit for bit */
    CHECK(memcmp(&cpu_loss, &train_loss, sizeof(double)) == 0 && device_losses == 3 * 19);
    setenv("AXON_DEVICE_DATA", "rows:37", 1);
    double *blocks = train_classifier((ax_device){"fake", 0}, &batches_blocks);
    setenv("AXON_DEVICE_DATA", "off", 1);
    double *off = train_classifier((ax_device){"fake", 0}, &batches_off);
    unsetenv("AXON_DEVICE_DATA");
    double *newer_weights = train_classifier((ax_device){"fake_newer", 0}, &batches_newer);
    /* 3 epochs of 19 batches, and the test set evaluated after each */
    CHECK(batches_cpu == 0 && batches_v4 == 0 && batches_off == 0);
    CHECK(batches_fake >= 3 * 19 + 3 && batches_blocks == batches_fake &&
          batches_newer == batches_fake);
    if (cpu && v4 && fake && blocks && off && newer_weights) {
        const size_t bytes = (size_t)count * sizeof(double);
        CHECK(memcmp(cpu, v4, bytes) == 0);
        CHECK(memcmp(cpu, fake, bytes) == 0);
        CHECK(memcmp(cpu, blocks, bytes) == 0);
        CHECK(memcmp(cpu, off, bytes) == 0);
        CHECK(memcmp(cpu, newer_weights, bytes) == 0);
    }
    free(cpu);
    free(v4);
    free(fake);
    free(blocks);
    free(off);
    free(newer_weights);
    test_divergence_step();
    test_batched_reads();
}

int main(void)
{
    /* Each name is opened once per process: every case has its own. */
    setenv("AXON_FAKE_PLUGIN", AXON_TEST_PLUGIN, 1);
    setenv("AXON_STALE_PLUGIN", AXON_TEST_PLUGIN, 1);
    setenv("AXON_UNNAMED_PLUGIN", AXON_TEST_PLUGIN, 1);
    setenv("AXON_MISSING_PLUGIN", "/nonexistent/libaxon_missing.so", 1);
    setenv("AXON_FAKE_V4_PLUGIN", AXON_TEST_PLUGIN, 1);
    setenv("AXON_FAKE_NEWER_PLUGIN", AXON_TEST_PLUGIN, 1);
    unsetenv("AXON_DEVICE_DATA");

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
                "this build has no NOSUCH backend (libaxon_nosuch.so is in none");
    CHECK(plugin == NULL);
    CHECK(ax_backend_device_count("nosuch") == 0);
    CHECK_FAILS(ax_backend_plugin_get("missing", &plugin), AX_STATUS_UNSUPPORTED,
                "/nonexistent/libaxon_missing.so: no such file");
    CHECK_FAILS(ax_backend_plugin_get("unnamed", &plugin), AX_STATUS_UNSUPPORTED,
                "exports no ax_backend_plugin_unnamed");
    char stale_message[120]; /* the version of these headers, whichever it is now */
    snprintf(stale_message, sizeof stale_message,
             "was built for plugin interface 3 (this axon has %d and takes plugins of 4 and "
             "later)", AX_BACKEND_PLUGIN_ABI);
    CHECK_FAILS(ax_backend_plugin_get("stale", &plugin), AX_STATUS_UNSUPPORTED, stale_message);
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

    /* The enumeration: the CPU first, its properties structured; a plugin
     * without device_properties (the fake one) described by its line; the
     * statistics reached by name, absent from plugins that have none. */
    CHECK(ax_backend_count() >= 1 && strcmp(ax_backend_name(0), "cpu") == 0);
    CHECK(ax_backend_name(ax_backend_count()) == NULL && ax_backend_name(-1) == NULL);
    CHECK(ax_backend_known("cpu") && !ax_backend_known("gpu"));
    ax_device_properties properties;
    CHECK_OK(ax_device_properties_get(ax_device_cpu(), &properties));
    CHECK(properties.kind == AX_DEVICE_KIND_CPU && properties.compute_units >= 1 &&
          properties.memory_bytes > 0 && (properties.capabilities & AX_DEVICE_CAPABILITY_F64) &&
          properties.description[0] != '\0');
    CHECK_OK(ax_device_properties_get((ax_device){"fake", 1}, &properties));
    CHECK(strcmp(properties.description, "fake device 1 (the CPU)") == 0 &&
          strcmp(properties.device.backend, "fake") == 0 && properties.device.index == 1 &&
          !(properties.capabilities & AX_DEVICE_CAPABILITY_STATS));
    CHECK_FAILS(ax_device_properties_get((ax_device){"fake", 2}, &properties),
                AX_STATUS_UNSUPPORTED, "no fake device 2");
    CHECK(strcmp(ax_backend_runtime("fake"), "") == 0 && strcmp(ax_backend_runtime("cpu"), "") == 0);
    const ax_backend_plugin *fake_table = NULL;
    CHECK_OK(ax_backend_plugin_get("fake", &fake_table));
    CHECK(fake_table && !ax_backend_plugin_extension(fake_table, AX_BACKEND_EXTENSION_STATS_ENTROPY_MI));

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
    test_table_versions();
    return test_finish("test_backend_plugin");
}
