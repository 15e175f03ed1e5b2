/* plugins_private_libaxon.c: backend plugins load into a libaxon that the
 * program opened privately, as Python's ctypes opens it (dlopen with
 * RTLD_LOCAL, so no symbol of libaxon is visible to a plugin). This program
 * is not linked against libaxon: it finds the public functions with dlsym.
 * On f404a17 every plugin failed to load there ("undefined symbol:
 * ax_fail"): they resolved libaxon's functions as symbols; now the loader
 * lends them (src/backend/plugin.h, ax_backend_host).
 *
 * Usage: plugins_private_libaxon LIBAXON_SO FAKE_PLUGIN_SO [BACKEND...]
 * Checks, with libaxon private:
 *   - the test plugin's devices, and a network on fake:1 trained to the
 *     CPU's weights bit for bit (the fake device runs the CPU's code);
 *   - a plugin's failure read back through ax_error_message: the plugin's
 *     ax_fail reached this copy of libaxon;
 *   - each device plugin this build made (BACKEND: cuda, opencl) loads and
 *     answers for a device it does not have with its own message, not the
 *     loader's;
 *   - one libaxon in the process afterwards (a plugin pulled in no second
 *     copy with state of its own). */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axon.h"

static int failures;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                               \
        }                                                                             \
    } while (0)

/* The public functions used, looked up in the private libaxon. */
#define API_FUNCTIONS(X)                                                              \
    X(ax_error_message) X(ax_device_count) X(ax_device_info) X(ax_dataset_synth_linear) \
    X(ax_dataset_free) X(ax_net_config_init) X(ax_layers_parse) X(ax_net_create)      \
    X(ax_net_config_release) X(ax_net_free) X(ax_train_config_init) X(ax_train)       \
    X(ax_net_parameter_count) X(ax_net_parameters_get)
#define DECLARE(name) static __typeof__(&name) p_##name;
API_FUNCTIONS(DECLARE)

/* Checks a call through the private library succeeds, printing its message if not. */
#define CHECK_OK(call)                                                                \
    do {                                                                              \
        ax_status check_status_ = (call);                                             \
        if (check_status_ != AX_STATUS_OK) {                                          \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,      \
                    p_ax_error_message());                                            \
            failures++;                                                               \
        }                                                                             \
    } while (0)

/* Checks that device `index` of `backend` is refused with a message holding `text`. */
static void check_refused(const char *backend, int index, const char *text)
{
    char info[256];
    ax_device device = {.index = index};
    snprintf(device.backend, sizeof device.backend, "%s", backend);
    ax_status status = p_ax_device_info(device, info, sizeof info);
    if (status != AX_STATUS_UNSUPPORTED || !strcasestr(p_ax_error_message(), text)) {
        fprintf(stderr, "device %s:%d: status %d, message \"%s\", expected one holding \"%s\"\n",
                backend, index, (int)status, p_ax_error_message(), text);
        failures++;
    }
}

/* Trains a small network on `backend`:`index` and returns its parameters (NULL on failure). */
static double *train_on(const char *backend, int index, const ax_dataset *data, int64_t *count)
{
    ax_net_config config; /* ax_net_defaults(), through the private library */
    p_ax_net_config_init(&config, sizeof config);
    config.input_width = 4;
    snprintf(config.device.backend, sizeof config.device.backend, "%s", backend);
    config.device.index = index;
    ax_net *net = NULL;
    double *weights = NULL;
    CHECK_OK(p_ax_layers_parse("6:tanh,1", &config));
    CHECK_OK(p_ax_net_create(&config, &net));
    p_ax_net_config_release(&config);
    if (net) {
        ax_train_config training;
        p_ax_train_config_init(&training, sizeof training);
        training.epochs = 2;
        ax_train_summary summary = ax_train_summary_empty();
        CHECK_OK(p_ax_train(net, data, NULL, NULL, &training, &summary));
        *count = p_ax_net_parameter_count(net);
        weights = malloc((size_t)*count * sizeof *weights);
        if (weights)
            p_ax_net_parameters_get(net, weights);
    }
    p_ax_net_free(net);
    return weights;
}

static int count_libaxon(struct dl_phdr_info *info, size_t size, void *counter)
{
    const char *slash = strrchr(info->dlpi_name, '/');
    const char *name = slash ? slash + 1 : info->dlpi_name;
    if (strncmp(name, "libaxon.so", 10) == 0)
        ++*(int *)counter;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s LIBAXON_SO FAKE_PLUGIN_SO [BACKEND...]\n", argv[0]);
        return 2;
    }
    setenv("AXON_FAKE_PLUGIN", argv[2], 1);
    void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
#define LOOK_UP(name)                                                  \
    if (!(*(void **)&p_##name = dlsym(library, #name))) {              \
        fprintf(stderr, "%s exports no %s\n", argv[1], #name);         \
        return 1;                                                      \
    }
    API_FUNCTIONS(LOOK_UP)
    /* What makes this test mean anything: the program sees no libaxon
     * symbol without the handle, and neither does a plugin. */
    CHECK(dlsym(RTLD_DEFAULT, "ax_fail") == NULL);
    CHECK(dlsym(RTLD_DEFAULT, "ax_error_message") == NULL);

    CHECK(p_ax_device_count("fake") == 2);
    char info[64];
    CHECK_OK(p_ax_device_info((ax_device){"fake", 1}, info, sizeof info));
    CHECK(strcmp(info, "fake device 1 (the CPU)") == 0);
    check_refused("fake", 5, "no fake device 5: there are 2");

    ax_dataset *data = NULL;
    CHECK_OK(p_ax_dataset_synth_linear(200, 4, 9, &data));
    int64_t count_cpu = 0, count_fake = 0;
    double *on_cpu = data ? train_on("cpu", 0, data, &count_cpu) : NULL;
    double *on_fake = data ? train_on("fake", 1, data, &count_fake) : NULL;
    CHECK(on_cpu && on_fake && count_cpu == count_fake && count_cpu > 0);
    if (on_cpu && on_fake && count_cpu == count_fake)
        CHECK(memcmp(on_cpu, on_fake, (size_t)count_cpu * sizeof(double)) == 0);
    free(on_cpu);
    free(on_fake);
    p_ax_dataset_free(data);

    /* "no OpenCL device 99", "no CUDA device 99": the plugin's own words,
     * whether or not the machine has devices. */
    for (int i = 3; i < argc; i++) {
        char expected[64];
        snprintf(expected, sizeof expected, "no %s device 99", argv[i]);
        check_refused(argv[i], 99, expected);
        printf("plugins_private_libaxon: %s loaded, %d device(s)\n", argv[i],
               p_ax_device_count(argv[i]));
    }

    int libraries = 0;
    dl_iterate_phdr(count_libaxon, &libraries);
    CHECK(libraries == 1);

    if (failures) {
        fprintf(stderr, "plugins_private_libaxon: %d check(s) failed\n", failures);
        return 1;
    }
    printf("plugins_private_libaxon: all checks passed\n");
    return 0;
}
