/* common.c: helpers shared by the subcommands (see common.h). */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int report_failure(ax_status status, const char *subject)
{
    const char *message = ax_error_message();
    fprintf(stderr, "axon: ");
    /* Library messages normally name their file already; add it only where
     * one does not, so that every message says what it is about. One that
     * starts with an environment variable (AXON_CPU_KERNELS='x' is ...) is
     * about that, not the subject. */
    if (subject && subject[0] && !strstr(message, subject) && strncmp(message, "AXON_", 5) != 0)
        fprintf(stderr, "%s: ", subject);
    if (message[0])
        fprintf(stderr, "%s\n", message);
    else
        fprintf(stderr, "%s\n", ax_status_name(status));
    return status == AX_STATUS_INTERRUPTED ? CLI_EXIT_INTERRUPTED : CLI_EXIT_RUNTIME;
}

bool cli_component_built(cli_component component)
{
    ax_build_info build = ax_build_info_get();
    return component == CLI_COMPONENT_PREP ? build.prep : build.stats;
}

int cli_refuse_unbuilt(const char *command, cli_component component)
{
    if (component == CLI_COMPONENT_PREP)
        fprintf(stderr, "axon %s: this build of axon has no image preparation (configured with "
                        "AXON_PREP=OFF, or AUTO without libarchive, libjpeg and libpng); rebuild "
                        "with it: apt-get install pkg-config libarchive-dev libjpeg62-turbo-dev "
                        "libpng-dev; cmake -DAXON_PREP=ON\n", command);
    else
        fprintf(stderr, "axon %s: this build of axon has no activation statistics (configured "
                        "with AXON_STATS=OFF); rebuild with them: cmake -DAXON_STATS=ON (no "
                        "further package needed)\n", command);
    return CLI_EXIT_RUNTIME;
}

int apply_threads(const cli_args *args)
{
    int64_t threads = 0;
    if (!cli_get_int64_or(args, "threads", "auto", 0, 0, 4096, &threads))
        return CLI_EXIT_USAGE;
    ax_status status = ax_set_threads((int)threads);
    if (status != AX_STATUS_OK)
        return report_failure(status, "--threads");
    return CLI_EXIT_OK;
}

bool threads_left_to_axon(const cli_args *args)
{
    const char *omp = getenv("OMP_NUM_THREADS");
    return strcmp(cli_text(args, "threads"), "auto") == 0 && !(omp && *omp);
}

bool read_precision(const cli_args *args, ax_precision *precision)
{
    /* The library's names, in the order of the enum's values. */
    const char *const names[] = {ax_precision_name(AX_PRECISION_F32), ax_precision_name(AX_PRECISION_F64),
                                 ax_precision_name(AX_PRECISION_BF16), NULL};
    int index = 0;
    if (!cli_get_choice(args, "precision", names, &index))
        return false;
    *precision = (ax_precision)index;
    /* Emulated bf16 computes the same roundings, so it runs rather than
     * refuses (results and tests carry over), but the user came for speed. */
    const char *device = cli_text(args, "device") ? cli_text(args, "device") : "cpu";
    if (*precision == AX_PRECISION_BF16 && !ax_bf16_native() && strncmp(device, "cuda", 4) != 0)
        fprintf(stderr, "axon: note: bf16 GEMMs %s; they run no faster than f32's\n",
                ax_bf16_support_get().reason);
    return true;
}

bool read_device(const cli_args *args, ax_device *device)
{
    const char *text = cli_text(args, "device");
    *device = ax_device_cpu();
    if (!text)
        return true;
    /* The backends --device offers are the library's (ax_backend_known): a
     * backend added to axon is offered here; one this build lacks is
     * refused where its device is used, saying how to build it. */
    ax_device parsed;
    if (ax_device_parse(text, &parsed) == AX_STATUS_OK &&
        ax_backend_known(ax_device_is_cpu(parsed) ? "cpu" : parsed.backend)) {
        *device = parsed;
        return true;
    }
    char offered[256] = "";
    const char *list = ax_backend_source_list();
    for (const char *p = list; *p;) {
        const size_t length = strcspn(p, " "), used = strlen(offered);
        snprintf(offered + used, sizeof offered - used, ", %.*s, %.*s:N", (int)length, p,
                 (int)length, p);
        p += length + (p[length] == ' ');
    }
    cli_error(args, "--device: expected cpu%s (N a device number), got '%s'", offered, text);
    return false;
}

int move_to_device(ax_net **net, ax_device device)
{
    if (ax_device_is_cpu(device))
        return CLI_EXIT_OK;
    ax_net_config config = *ax_net_config_get(*net);
    config.device = device;
    ax_net *moved = NULL;
    ax_status status = ax_net_create(&config, &moved);
    if (status != AX_STATUS_OK)
        return report_failure(status, "--device");
    int64_t count = ax_net_parameter_count(*net);
    double *values = malloc((size_t)count * sizeof(double));
    if (!values) {
        ax_net_free(moved);
        char name[64];
        ax_device_format(device, name, sizeof name);
        fprintf(stderr, "axon: out of memory moving the model to device %s\n", name);
        return CLI_EXIT_RUNTIME;
    }
    ax_net_parameters_get(*net, values);
    ax_net_parameters_set(moved, values);
    free(values);
    ax_net_free(*net);
    *net = moved;
    return CLI_EXIT_OK;
}

const char *precision_description(ax_precision precision, ax_device device)
{
    if (precision == AX_PRECISION_BF16 && !ax_device_is_cpu(device))
        return "bf16 (bfloat16 tensor-core GEMMs with float32 sums, float32 elsewhere)";
    return precision == AX_PRECISION_F64    ? "f64 (double)"
           : precision == AX_PRECISION_BF16 ? (ax_bf16_native() ? "bf16 (native bfloat16 GEMMs, float32 elsewhere)"
                                                                 : "bf16 (emulated bfloat16 GEMMs, float32 elsewhere)")
                                            : "f32 (float)";
}

int load_model(const char *option, const char *path, ax_precision precision, ax_net **out)
{
    *out = NULL;
    struct stat info;
    if (stat(path, &info) != 0) {
        fprintf(stderr, "axon: %s %s: %s\n", option, path,
                errno == ENOENT ? "no such file" : strerror(errno));
        return CLI_EXIT_RUNTIME;
    }
    if (S_ISDIR(info.st_mode)) {
        fprintf(stderr, "axon: %s %s: is a folder, not a model file\n", option, path);
        return CLI_EXIT_RUNTIME;
    }
    ax_status status = ax_net_load(path, precision, out);
    if (status != AX_STATUS_OK)
        return report_failure(status, path);
    return CLI_EXIT_OK;
}

/* The output layer's activation. A layout read or loaded ends with a dense
 * layer (ax_layers_parse and ax_net_create refuse others); the union is read
 * only for that kind all the same. */
static ax_activation output_activation(const ax_net_config *config)
{
    const ax_layer_spec *last = &config->layers[config->layer_count - 1];
    return last->kind == AX_LAYER_DENSE ? last->dense.activation : AX_ACT_IDENTITY;
}

bool output_is_classification(const ax_net_config *config)
{
    if (config->layer_count < 1)
        return false;
    ax_activation last = output_activation(config);
    return last == AX_ACT_SOFTMAX || last == AX_ACT_SIGMOID;
}

int check_image_shape(const ax_net_config *config, const ax_dataset *data, const char *model_name)
{
    int64_t shape[3];
    const int64_t *expected = config->input_shape;
    if (!ax_dataset_image_shape(data, shape) || !expected[0] ||
        (shape[0] == expected[0] && shape[1] == expected[1] && shape[2] == expected[2]))
        return CLI_EXIT_OK;
    fprintf(stderr,
            "axon: %s holds %lldx%lldx%lld images but %s takes %lldx%lldx%lld (height x width x "
            "channels)\n",
            ax_dataset_source(data), (long long)shape[0], (long long)shape[1], (long long)shape[2],
            model_name, (long long)expected[0], (long long)expected[1], (long long)expected[2]);
    return CLI_EXIT_RUNTIME;
}

int check_data_fits(const ax_net_config *config, const ax_dataset *data, const char *model_name)
{
    const char *source = ax_dataset_source(data);
    int64_t features = ax_dataset_features(data);
    if (features != config->input_width) {
        fprintf(stderr, "axon: %s has %lld features per row but %s takes %lld inputs\n", source,
                (long long)features, model_name, (long long)config->input_width);
        return CLI_EXIT_RUNTIME;
    }
    if (check_image_shape(config, data, model_name) != CLI_EXIT_OK)
        return CLI_EXIT_RUNTIME;
    if (config->layer_count < 1)
        return CLI_EXIT_OK;
    const ax_activation activation = output_activation(config);
    const int64_t width = ax_net_config_output_width(config);
    int64_t classes = ax_dataset_classes(data), targets = ax_dataset_targets(data);
    if (classes > 0 && activation == AX_ACT_SOFTMAX && classes > width) {
        fprintf(stderr,
                "axon: %s has labels up to %lld (%lld classes) but the output layer of %s has "
                "%lld unit%s; the last layer needs one unit per class\n",
                ax_dataset_labels_source(data), (long long)classes - 1, (long long)classes, model_name,
                (long long)width, width == 1 ? "" : "s");
        return CLI_EXIT_RUNTIME;
    }
    if (targets > 0 && activation == AX_ACT_SOFTMAX) {
        fprintf(stderr, "axon: %s holds numbers to predict (regression) but %s ends in softmax, "
                        "which needs class labels\n", source, model_name);
        return CLI_EXIT_RUNTIME;
    }
    if (targets > 0 && targets != width) {
        fprintf(stderr, "axon: %s has %lld target%s per row but the output layer of %s has %lld "
                        "unit%s\n",
                source, (long long)targets, targets == 1 ? "" : "s", model_name,
                (long long)width, width == 1 ? "" : "s");
        return CLI_EXIT_RUNTIME;
    }
    return CLI_EXIT_OK;
}

int load_model_on_device(const char *option, const char *path, ax_precision precision,
                         ax_device device, ax_net **out)
{
    int result = load_model(option, path, precision, out);
    if (result != CLI_EXIT_OK)
        return result;
    result = move_to_device(out, device);
    if (result != CLI_EXIT_OK) {
        ax_net_free(*out);
        *out = NULL;
    }
    return result;
}
