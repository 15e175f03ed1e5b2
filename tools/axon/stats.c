/* stats.c: `axon stats entropy-mi` and `axon stats tensor-mean`: statistics
 * of activations (entropy and mutual information of softmax outputs, the
 * third-order tensor mean; docs/stats.md) on float arrays given as
 * .npy files, or on the activations of chosen layers of a saved model over a
 * data set (what did a hidden layer learn?). Output as a table or JSON.
 * --device NAME[:N] computes the statistic on a device (the arrays are
 * read, and a model's activations computed, on the CPU). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "file_roles.h"
#include "data_source.h"
#include "metrics.h"
#include "options.h"

/* "cpu" or "NAME:N". */
static const char *device_name(ax_device device, char *text, size_t capacity)
{
    ax_device_format(device, text, capacity);
    return text;
}

/* The device, and where a device's time went, as JSON members. */
static void json_device(ax_device device, const ax_stats_timing *timing)
{
    char name[32];
    printf(",\"device\":");
    json_write_string(stdout, device_name(device, name, sizeof name));
    if (!ax_device_is_cpu(device)) {
        printf(",\"upload_seconds\":");
        json_write_number(stdout, timing->upload_seconds);
        printf(",\"kernel_seconds\":");
        json_write_number(stdout, timing->compute_seconds);
        printf(",\"download_seconds\":");
        json_write_number(stdout, timing->download_seconds);
    }
}

/* The table's device line. */
static void print_device(const char *label, ax_device device, const ax_stats_timing *timing)
{
    char name[32];
    if (ax_device_is_cpu(device))
        printf("%scpu, %d threads\n", label, ax_threads());
    else
        printf("%s%s: copies in %.3f ms, kernels %.3f ms, copy out %.3f ms\n", label,
               device_name(device, name, sizeof name), 1e3 * timing->upload_seconds,
               1e3 * timing->compute_seconds, 1e3 * timing->download_seconds);
}

/* ------------------------------------------------------------ entropy-mi */

static const cli_option entropy_options[] = {
    {"x", CLI_STRING, "FILE", NULL, ".npy logits X (rows, d)"},
    {"y", CLI_STRING, "FILE", NULL, ".npy logits Y (rows, d), the same shape as X"},
    {"model", CLI_STRING, "FILE", NULL, "a saved model: X and Y are activations of its layers"},
    {"data", CLI_STRING, "D", NULL,
     "with --model: the rows to run through it: fashion-mnist, an IDX\n"
     "folder (its t10k test files, as axon eval), FILE.csv, FILE.npy or synth:linear"},
    {"layer", CLI_INT, "L", NULL,
     "with --model: X = activations of layer L (0 = first hidden layer)"},
    {"layer-y", CLI_INT, "L", NULL, "with --model: Y = activations of layer L (default: --layer)"},
    PRECISION_OPTION,
    THREADS_OPTION,
    DEVICE_OPTION,
    {"json", CLI_FLAG, NULL, NULL, "print one JSON object"},
    {"seed", CLI_INT, "N", "1", "synth:linear: the seed of the data"},
    DATA_SOURCE_OPTIONS,
};

static const char entropy_usage[] =
    "axon stats entropy-mi --x X.npy --y Y.npy [--device NAME[:N]] [--json]\n"
    "       axon stats entropy-mi --model M.safetensors --data D --layer L [--layer-y L2]";
static const char entropy_description[] =
    "Entropy and mutual information of softmax outputs:\n"
    "P = softmax(X), Q = softmax(Y) row by row,\n"
    "  H  = -mean over rows of sum_i P_i^2\n"
    "  MI =  mean over rows of sum_{i,j} (P_i Q_j)^2 = mean of (sum P_i^2)(sum Q_j^2).\n"
    "--device NAME[:N] computes them on device N of backend NAME (axon info lists them).\n"
    "With --model, X and Y are the activated outputs of layers of a saved model over\n"
    "the rows of --data (hidden layers after ReLU/tanh: the softmax applies to those).\n"
    "\nexample:\n  axon stats entropy-mi --model fmnist.safetensors --data fashion-mnist "
    "--layer 0 --layer-y 1";

typedef struct named_array {
    const char *name; /* file name, or "layer 1 of M" */
    char label[512];
    float *values;
    int64_t rows, cols;
} named_array;

static int read_npy(const char *path, named_array *array)
{
    snprintf(array->label, sizeof array->label, "%s", path);
    array->name = array->label;
    ax_status status = ax_npy_read_f32(path, &array->values, &array->rows, &array->cols);
    return status == AX_STATUS_OK ? CLI_EXIT_OK : report_failure(status, path);
}

static int layer_activations(ax_net *net, const ax_dataset *data, int layer, const char *model,
                             named_array *array)
{
    const ax_net_config *config = ax_net_config_get(net);
    if (layer < 0 || layer >= config->layer_count) {
        fprintf(stderr,
                "axon stats: layer %d does not exist in %s: it has %d layer%s, numbered 0 to %d "
                "(0 = the first hidden layer, %d = the output layer)\n",
                layer, model, config->layer_count, config->layer_count == 1 ? "" : "s",
                config->layer_count - 1, config->layer_count - 1);
        return CLI_EXIT_USAGE;
    }
    array->rows = ax_dataset_rows(data);
    array->cols = ax_net_layer_width(net, layer);
    ax_layer_kind kind = AX_LAYER_DENSE;
    ax_activation activation = AX_ACT_IDENTITY;
    int64_t shape[3] = {0, 0, 0};
    if (ax_net_layer_kind(net, layer, &kind) != AX_STATUS_OK ||
        ax_net_layer_activation(net, layer, &activation) != AX_STATUS_OK ||
        ax_net_layer_output_shape(net, layer, shape) != AX_STATUS_OK)
        return report_failure(AX_STATUS_BAD_ARGUMENT, model);
    /* Pooling applies no activation: its kind says what the values are. */
    const char *applied = kind == AX_LAYER_MAX_POOL || kind == AX_LAYER_AVERAGE_POOL
                              ? "no activation"
                              : ax_activation_name(activation);
    if (kind == AX_LAYER_DENSE)
        snprintf(array->label, sizeof array->label, "layer %d (dense, %lld wide, %s) of %s",
                 layer, (long long)array->cols, applied, model);
    else
        snprintf(array->label, sizeof array->label,
                 "layer %d (%s, %lldx%lldx%lld = %lld wide, %s) of %s", layer,
                 ax_layer_kind_name(kind), (long long)shape[0], (long long)shape[1],
                 (long long)shape[2], (long long)array->cols, applied, model);
    array->name = array->label;
    array->values = malloc((size_t)(array->rows * array->cols) * sizeof(float));
    if (!array->values) {
        fprintf(stderr, "axon stats: out of memory for %lld x %lld activations\n",
                (long long)array->rows, (long long)array->cols);
        return CLI_EXIT_RUNTIME;
    }
    ax_status status = ax_net_activations(net, data, layer, array->values);
    return status == AX_STATUS_OK ? CLI_EXIT_OK : report_failure(status, model);
}

/* Fills x and y from the model's layers over the data. */
static int model_arrays(const cli_args *args, const char *model_path, named_array *x,
                        named_array *y)
{
    const char *data_spec = NULL;
    ax_precision precision = AX_PRECISION_F32;
    data_settings settings;
    int layer = -1, layer_y = -1;
    if (!cli_get_nonempty(args, "data", &data_spec) || !read_precision(args, &precision) ||
        !data_settings_read(args, &settings) ||
        !cli_get_int(args, "layer", 0, AX_MAX_LAYERS - 1, &layer) ||
        !cli_get_int(args, "layer-y", 0, AX_MAX_LAYERS - 1, &layer_y))
        return CLI_EXIT_USAGE;
    if (!data_spec || layer < 0) {
        cli_error(args, "with --model, --data and --layer are required (see axon help stats)");
        return CLI_EXIT_USAGE;
    }
    if (layer_y < 0)
        layer_y = layer;
    ax_net *net = NULL;
    int result = load_model("--model", model_path, precision, &net);
    if (result != CLI_EXIT_OK)
        return result;
    ax_dataset *data = NULL;
    data_part part = strncmp(data_spec, "synth:", 6) == 0 ? DATA_PART_TRAIN : DATA_PART_TEST;
    result = data_source_load("--data", data_spec, settings.labels, part, &settings, &data);
    const ax_net_config *config = ax_net_config_get(net);
    if (result == CLI_EXIT_OK && ax_dataset_features(data) != config->input_width) {
        fprintf(stderr, "axon stats: %s has %lld features but %s takes %lld inputs\n", data_spec,
                (long long)ax_dataset_features(data), model_path, (long long)config->input_width);
        result = CLI_EXIT_RUNTIME;
    }
    if (result == CLI_EXIT_OK && layer < config->layer_count && layer_y < config->layer_count &&
        ax_net_layer_width(net, layer) != ax_net_layer_width(net, layer_y)) {
        fprintf(stderr,
                "axon stats: layers %d and %d of %s have different widths (%lld and %lld); "
                "entropy-mi needs X and Y of the same width\n",
                layer, layer_y, model_path, (long long)ax_net_layer_width(net, layer),
                (long long)ax_net_layer_width(net, layer_y));
        result = CLI_EXIT_USAGE;
    }
    if (result == CLI_EXIT_OK)
        result = layer_activations(net, data, layer, model_path, x);
    if (result == CLI_EXIT_OK)
        result = layer_activations(net, data, layer_y, model_path, y);
    ax_dataset_free(data);
    ax_net_free(net);
    return result;
}

static int entropy_mi(int argc, char **argv)
{
    cli_args args;
    int result = cli_parse("stats entropy-mi", entropy_options,
                           (int)(sizeof entropy_options / sizeof *entropy_options), argc, argv, 1,
                           &args);
    if (result != CLI_EXIT_OK)
        return result;
    if (args.help) {
        cli_print_help(&args, entropy_usage, entropy_description, stdout);
        return CLI_EXIT_OK;
    }
    if (!cli_component_built(CLI_COMPONENT_STATS))
        return cli_refuse_unbuilt("stats entropy-mi", CLI_COMPONENT_STATS);
    const char *x_path = NULL, *y_path = NULL, *model_path = NULL;
    bool json = false;
    ax_device device = ax_device_cpu();
    if (!cli_get_nonempty(&args, "x", &x_path) || !cli_get_nonempty(&args, "y", &y_path) ||
        !cli_get_nonempty(&args, "model", &model_path) || !cli_get_flag(&args, "json", &json) ||
        !read_device(&args, &device))
        return CLI_EXIT_USAGE;
    const bool arrays = x_path || y_path;
    if (arrays == (model_path != NULL) || (arrays && !(x_path && y_path))) {
        cli_error(&args, "give either --x and --y (.npy files) or --model with --data and "
                         "--layer (see axon help stats)");
        return CLI_EXIT_USAGE;
    }
    result = apply_threads(&args);
    if (result != CLI_EXIT_OK)
        return result;

    named_array x = {0}, y = {0};
    if (arrays) {
        result = read_npy(x_path, &x);
        if (result == CLI_EXIT_OK)
            result = read_npy(y_path, &y);
        if (result == CLI_EXIT_OK && (x.rows != y.rows || x.cols != y.cols)) {
            fprintf(stderr,
                    "axon stats: %s is (%lld, %lld) but %s is (%lld, %lld); X and Y must have "
                    "the same shape\n",
                    x_path, (long long)x.rows, (long long)x.cols, y_path, (long long)y.rows,
                    (long long)y.cols);
            result = CLI_EXIT_RUNTIME;
        }
    } else {
        result = model_arrays(&args, model_path, &x, &y);
    }
    if (result == CLI_EXIT_OK) {
        double entropy = 0.0, mi = 0.0;
        ax_stats_timing timing;
        double start = ax_seconds_now();
        ax_status status = ax_stats_entropy_mi_on(device, x.values, y.values, x.rows, x.cols,
                                                  &entropy, &mi, &timing);
        double seconds = ax_seconds_now() - start;
        if (status != AX_STATUS_OK) {
            result = report_failure(status, status == AX_STATUS_UNSUPPORTED && !ax_device_is_cpu(device)
                                                ? "--device"
                                                : arrays ? x_path : model_path);
        } else if (json) {
            printf("{\"x\":");
            json_write_string(stdout, x.name);
            printf(",\"y\":");
            json_write_string(stdout, y.name);
            printf(",\"rows\":%lld,\"d\":%lld,\"entropy\":", (long long)x.rows,
                   (long long)x.cols);
            json_write_number(stdout, entropy);
            printf(",\"mutual_information\":");
            json_write_number(stdout, mi);
            printf(",\"seconds\":");
            json_write_number(stdout, seconds);
            json_device(device, &timing);
            printf(",\"threads\":%d}\n", ax_threads());
        } else {
            printf("x                   %s: %lld rows x %lld\n", x.name, (long long)x.rows,
                   (long long)x.cols);
            printf("y                   %s\n", y.name);
            printf("entropy H           %.9g\n", entropy);
            printf("mutual information  %.9g\n", mi);
            printf("time                %.3f ms\n", 1e3 * seconds);
            print_device("device              ", device, &timing);
        }
    }
    free(x.values);
    free(y.values);
    if (result == CLI_EXIT_OK && fflush(stdout) != 0)
        result = CLI_EXIT_RUNTIME;
    return result;
}

/* ----------------------------------------------------------- tensor-mean */

static const cli_option tensor_options[] = {
    {"fx", CLI_STRING, "FILE", NULL, ".npy features f(x) (n, d)"},
    {"fy", CLI_STRING, "FILE", NULL, ".npy features f(y) (n, d)"},
    {"fz", CLI_STRING, "FILE", NULL, ".npy features f(z) (n, d)"},
    {"out", CLI_STRING, "FILE", NULL, "write the tensor A (d, d, d) as float32 .npy"},
    THREADS_OPTION,
    DEVICE_OPTION,
    {"json", CLI_FLAG, NULL, NULL, "print one JSON object (with every element when d <= 16)"},
};

static const char tensor_usage[] =
    "axon stats tensor-mean --fx A.npy --fy B.npy --fz C.npy [--out T.npy] [--device NAME[:N]] "
    "[--json]";
static const char tensor_description[] =
    "Third-order tensor mean: A[i,j,k] = (1/n) sum_r fx[r,i] fy[r,j] fz[r,k],\n"
    "computed as one GEMM of the row-wise Khatri-Rao product of fx and fy with fz\n"
    "(--device NAME[:N]: on a device, with its BLAS).\n"
    "Prints a summary of A; --out saves it whole.";

/* Largest d whose tensor is listed in --json. */
enum { JSON_MAX_D = 16 };

static int tensor_mean(int argc, char **argv)
{
    cli_args args;
    int result = cli_parse("stats tensor-mean", tensor_options,
                           (int)(sizeof tensor_options / sizeof *tensor_options), argc, argv, 1,
                           &args);
    if (result != CLI_EXIT_OK)
        return result;
    if (args.help) {
        cli_print_help(&args, tensor_usage, tensor_description, stdout);
        return CLI_EXIT_OK;
    }
    if (!cli_component_built(CLI_COMPONENT_STATS))
        return cli_refuse_unbuilt("stats tensor-mean", CLI_COMPONENT_STATS);
    const char *paths[3] = {NULL, NULL, NULL}, *names[3] = {"fx", "fy", "fz"};
    const char *out_path = NULL;
    bool json = false;
    ax_device device = ax_device_cpu();
    for (int a = 0; a < 3; a++)
        if (!cli_get_nonempty(&args, names[a], &paths[a]))
            return CLI_EXIT_USAGE;
    if (!cli_get_nonempty(&args, "out", &out_path) || !cli_get_flag(&args, "json", &json) ||
        !read_device(&args, &device))
        return CLI_EXIT_USAGE;
    for (int a = 0; a < 3; a++)
        if (!paths[a]) {
            cli_error(&args, "--fx, --fy and --fz are required (see axon help stats)");
            return CLI_EXIT_USAGE;
        }
    result = apply_threads(&args);
    if (result != CLI_EXIT_OK)
        return result;
    /* --out against the three inputs and its folder, before the work. */
    file_roles roles = {0};
    static const char *const options[] = {"--fx", "--fy", "--fz"};
    for (int a = 0; a < 3; a++)
        file_roles_input(&roles, options[a], paths[a], "an input of the tensor");
    file_roles_output(&roles, "--out", out_path);
    result = file_roles_check(&roles);
    if (result != CLI_EXIT_OK)
        return result;

    named_array f[3] = {{0}, {0}, {0}};
    for (int a = 0; a < 3 && result == CLI_EXIT_OK; a++) {
        result = read_npy(paths[a], &f[a]);
        if (result == CLI_EXIT_OK && a > 0 && (f[a].rows != f[0].rows || f[a].cols != f[0].cols)) {
            fprintf(stderr,
                    "axon stats: %s is (%lld, %lld) but %s is (%lld, %lld); fx, fy and fz must "
                    "have the same shape\n",
                    paths[0], (long long)f[0].rows, (long long)f[0].cols, paths[a],
                    (long long)f[a].rows, (long long)f[a].cols);
            result = CLI_EXIT_RUNTIME;
        }
    }
    float *tensor = NULL;
    const int64_t n = f[0].rows, d = f[0].cols;
    if (result == CLI_EXIT_OK && d > 0 && d <= 1290) {
        tensor = malloc((size_t)(d * d * d) * sizeof(float));
        if (!tensor) {
            fprintf(stderr, "axon stats: out of memory for a %lld^3 tensor\n", (long long)d);
            result = CLI_EXIT_RUNTIME;
        }
    }
    double seconds = 0.0;
    ax_stats_timing timing = {0.0, 0.0, 0.0};
    if (result == CLI_EXIT_OK) {
        double start = ax_seconds_now();
        ax_status status = ax_stats_tensor_mean_on(device, f[0].values, f[1].values, f[2].values,
                                                   n, d, tensor, &timing);
        seconds = ax_seconds_now() - start;
        if (status != AX_STATUS_OK)
            result = report_failure(status, status == AX_STATUS_UNSUPPORTED && !ax_device_is_cpu(device)
                                                ? "--device"
                                                : paths[0]);
    }
    if (result == CLI_EXIT_OK && out_path) {
        int64_t shape[3] = {d, d, d};
        ax_status status = ax_npy_write_f32(out_path, tensor, 3, shape);
        if (status != AX_STATUS_OK)
            result = report_failure(status, out_path);
    }
    if (result == CLI_EXIT_OK) {
        const int64_t count = d * d * d;
        double sum = 0.0, squares = 0.0, low = INFINITY, high = -INFINITY;
        for (int64_t i = 0; i < count; i++) {
            double v = tensor[i];
            sum += v;
            squares += v * v;
            low = v < low ? v : low;
            high = v > high ? v : high;
        }
        const double gflops = 2.0 * (double)n * (double)(d * d * d) * 1e-9;
        if (json) {
            printf("{\"fx\":");
            json_write_string(stdout, paths[0]);
            printf(",\"fy\":");
            json_write_string(stdout, paths[1]);
            printf(",\"fz\":");
            json_write_string(stdout, paths[2]);
            printf(",\"n\":%lld,\"d\":%lld,\"out\":", (long long)n, (long long)d);
            if (out_path)
                json_write_string(stdout, out_path);
            else
                printf("null");
            printf(",\"mean\":");
            json_write_number(stdout, sum / (double)count);
            printf(",\"min\":");
            json_write_number(stdout, low);
            printf(",\"max\":");
            json_write_number(stdout, high);
            printf(",\"frobenius\":");
            json_write_number(stdout, sqrt(squares));
            printf(",\"seconds\":");
            json_write_number(stdout, seconds);
            printf(",\"gflops\":");
            json_write_number(stdout, seconds > 0 ? gflops / seconds : NAN);
            json_device(device, &timing);
            printf(",\"values\":");
            if (d <= JSON_MAX_D) {
                printf("[");
                for (int64_t i = 0; i < count; i++) {
                    printf("%s", i ? "," : "");
                    json_write_number(stdout, tensor[i]);
                }
                printf("]");
            } else {
                printf("null");
            }
            printf("}\n");
        } else {
            printf("inputs      %s, %s, %s: %lld rows x %lld\n", paths[0], paths[1], paths[2],
                   (long long)n, (long long)d);
            printf("tensor A    (%lld, %lld, %lld)%s%s\n", (long long)d, (long long)d,
                   (long long)d, out_path ? " written to " : "", out_path ? out_path : "");
            printf("A[0,0,0]    %.9g\n", tensor[0]);
            printf("mean        %.9g\n", sum / (double)count);
            printf("min, max    %.9g, %.9g\n", low, high);
            printf("frobenius   %.9g\n", sqrt(squares));
            printf("time        %.3f ms, %.1f GFLOP/s\n", 1e3 * seconds,
                   seconds > 0 ? gflops / seconds : 0.0);
            print_device("device      ", device, &timing);
        }
    }
    free(tensor);
    for (int a = 0; a < 3; a++)
        free(f[a].values);
    if (result == CLI_EXIT_OK && fflush(stdout) != 0)
        result = CLI_EXIT_RUNTIME;
    return result;
}

/* ------------------------------------------------------------- dispatch */

static void print_stats_help(FILE *stream)
{
    fprintf(stream,
            "usage: axon stats entropy-mi [options]    entropy and mutual information\n"
            "       axon stats tensor-mean [options]   third-order tensor mean\n"
            "\nStatistics of activations, on .npy arrays or (entropy-mi) on the\n"
            "activations of layers of a saved model. The options of each:\n"
            "  axon stats entropy-mi --help\n  axon stats tensor-mean --help\n");
}

int command_stats(int argc, char **argv)
{
    if (argc < 2) {
        print_stats_help(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *what = argv[1];
    if (strcmp(what, "--help") == 0 || strcmp(what, "-h") == 0 || strcmp(what, "help") == 0) {
        print_stats_help(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(what, "entropy-mi") == 0)
        return entropy_mi(argc - 1, argv + 1);
    if (strcmp(what, "tensor-mean") == 0)
        return tensor_mean(argc - 1, argv + 1);
    fprintf(stderr, "axon stats: unknown statistic '%s'; entropy-mi or tensor-mean (see axon "
                    "stats --help)\n", what);
    const char *names[2] = {"entropy-mi", "tensor-mean"};
    const char *near = cli_closest(what, strlen(what), names, 2);
    if (near)
        fprintf(stderr, "axon stats: did you mean '%s'?\n", near);
    return CLI_EXIT_USAGE;
}
