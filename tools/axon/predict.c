/* predict.c: `axon predict`: runs a saved model over a data set and writes
 * its outputs as CSV, a header line then one row per input row:
 *   classification (softmax or sigmoid output): predicted,p0,p1,...
 *   regression:                                  y  (or y0,y1,... for several)
 * Rows go through the network in chunks so that the outputs of a large set
 * never need to be held at once.
 *
 * A CSV or .npy file (without --labels) may hold features only or features
 * and their label column: its column count against the model's inputs says
 * which (read_features_only), before the file is loaded. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "data_source.h"
#include "file_roles.h"
#include "output_stream.h"
#include "options.h"

static const cli_option predict_options[] = {
    {"model", CLI_STRING, "FILE", NULL, "the model (required), from axon train --out"},
    {"data", CLI_STRING, "D", NULL,
     "the inputs (required): an IDX folder (its t10k files), FILE.csv or\n"
     "FILE.npy (features only, or with a label column, which is ignored: told\n"
     "apart by the model's inputs) or synth:linear"},
    {"no-labels", CLI_FLAG, NULL, NULL,
     "CSV/.npy: every column is a feature (the default when the file has as\n"
     "many columns as the model has inputs); refuses a file with one more"},
    {"out", CLI_STRING, "FILE", NULL, "write the CSV there instead of to stdout"},
    PRECISION_OPTION,
    DEVICE_OPTION,
    THREADS_OPTION,
    {"seed", CLI_INT, "N", "1", "synth:linear: seed of the data"},
    DATA_SOURCE_OPTIONS,
    DATA_STREAM_OPTIONS,
    {"views", CLI_INT, "1|10", "1",
     "streamed batches with --crop: 1 = the centre crop; 10 = cuda-convnet2's\n"
     "multiview test: the 4 corner crops and the centre, each mirrored, their\n"
     "softmax outputs averaged into one row per image (as axon eval --views)"},
};

static const char predict_usage[] = "axon predict --model FILE --data D [--out FILE.csv] [options]";
static const char predict_description[] =
    "Writes the model's outputs for every row of D as CSV with a header line:\n"
    "\"predicted,p0,p1,...\" (the class and its probabilities) for a softmax or\n"
    "sigmoid output, the predicted values \"y\" (or y0,y1,...) otherwise.\n"
    "batches:DIR is streamed when --crop, --subtract-mean, --mean, --views or\n"
    "--stream on asks for it (loaded whole otherwise), in the order of its files.\n"
    "\nexample:\n  axon predict --model fmnist.safetensors --data fashion-mnist --out p.csv\n"
    "  axon predict --model m.safetensors --data batches:val --crop 56 --subtract-mean --views 10";

/* Rows per call of ax_net_predict: bounded output memory (16 MiB of floats). */
static int64_t chunk_rows(int64_t width)
{
    int64_t rows = (int64_t)(4 << 20) / (width > 0 ? width : 1);
    return rows > 0 ? rows : 1;
}

static void write_header(FILE *stream, bool classification, int64_t width)
{
    if (classification) {
        fputs("predicted", stream);
        if (width == 1)
            fputs(",p1", stream);
        else
            for (int64_t k = 0; k < width; k++)
                fprintf(stream, ",p%lld", (long long)k);
    } else if (width == 1) {
        fputs("y", stream);
    } else {
        for (int64_t k = 0; k < width; k++)
            fprintf(stream, "%sy%lld", k ? "," : "", (long long)k);
    }
    fputc('\n', stream);
}

static void write_row(FILE *stream, bool classification, const float *outputs, int64_t width)
{
    if (classification) {
        /* One sigmoid unit is the probability of class 1. */
        int64_t predicted = 0;
        if (width == 1) {
            predicted = outputs[0] >= 0.5f;
        } else {
            for (int64_t k = 1; k < width; k++)
                if (outputs[k] > outputs[predicted])
                    predicted = k;
        }
        fprintf(stream, "%lld", (long long)predicted);
        for (int64_t k = 0; k < width; k++)
            fprintf(stream, ",%.6g", outputs[k]);
    } else {
        for (int64_t k = 0; k < width; k++)
            fprintf(stream, "%s%.9g", k ? "," : "", outputs[k]);
    }
    fputc('\n', stream);
}

typedef struct streamed_rows {
    output_stream *output;
    bool classification;
    int64_t width;
} streamed_rows;

static bool on_rows(int64_t first, int64_t count, const float *outputs, void *user)
{
    (void)first;
    streamed_rows *rows = user;
    for (int64_t row = 0; row < count; row++)
        write_row(rows->output->stream, rows->classification, outputs + row * rows->width,
                  rows->width);
    return !output_stream_failed(rows->output); /* output_stream_close says why */
}

/* A streamed set (batches:DIR with crops, the mean, or 10 views): its rows
 * as the library reads them, written as each chunk is done. */
static int write_streamed_predictions(ax_net *net, ax_dataset *data, output_stream *output)
{
    const ax_net_config *config = ax_net_config_get(net);
    streamed_rows rows = {.output = output, .classification = output_is_classification(config),
                          .width = ax_net_layer_width(net, config->layer_count - 1)};
    write_header(output->stream, rows.classification, rows.width);
    ax_status status = ax_net_predict_dataset(net, data, on_rows, &rows);
    if (status == AX_STATUS_INTERRUPTED && output_stream_failed(output))
        return CLI_EXIT_RUNTIME;
    return status == AX_STATUS_OK ? CLI_EXIT_OK : report_failure(status, ax_dataset_source(data));
}

static int write_predictions(ax_net *net, ax_dataset *data, output_stream *output)
{
    if (ax_dataset_is_streamed(data))
        return write_streamed_predictions(net, data, output);
    const ax_net_config *config = ax_net_config_get(net);
    int64_t width = ax_net_layer_width(net, config->layer_count - 1);
    int64_t inputs = config->input_width;
    bool classification = output_is_classification(config);
    int64_t rows = ax_dataset_rows(data), chunk = chunk_rows(width);
    if (chunk > rows)
        chunk = rows;
    float *outputs = malloc((size_t)(chunk > 0 ? chunk : 1) * (size_t)width * sizeof *outputs);
    if (!outputs) {
        fprintf(stderr, "axon: out of memory for the outputs of %lld rows\n", (long long)chunk);
        return CLI_EXIT_RUNTIME;
    }
    const float *features = ax_dataset_features_data(data);
    FILE *stream = output->stream;
    write_header(stream, classification, width);
    int result = CLI_EXIT_OK;
    for (int64_t first = 0; first < rows && result == CLI_EXIT_OK; first += chunk) {
        int64_t count = rows - first < chunk ? rows - first : chunk;
        ax_status status = ax_net_predict(net, features + first * inputs, count, outputs);
        if (status != AX_STATUS_OK) {
            result = report_failure(status, ax_dataset_source(data));
            break;
        }
        for (int64_t row = 0; row < count; row++)
            write_row(stream, classification, outputs + row * width, width);
        if (output_stream_failed(output)) /* output_stream_close says why */
            result = CLI_EXIT_RUNTIME;
    }
    free(outputs);
    return result;
}

/* Whether spec (a CSV, or .npy without --labels) holds features only: it
 * does when its columns are the model's inputs; one more column is the label
 * column, which predict ignores. Any other count, --no-labels on a file with a
 * label column, or --label-column on a file without one is refused, as the
 * reading would be a guess. */
static int read_features_only(const cli_args *args, const char *spec, const char *model_path,
                              int64_t inputs, data_settings *settings)
{
    const bool no_labels = settings->unlabeled;
    settings->unlabeled = false;
    if (settings->labels) {
        if (!no_labels)
            return CLI_EXIT_OK; /* the features file holds features only already */
        cli_error(args, "--no-labels and --labels FILE do not go together: with a labels file "
                        "every column of --data is a feature already");
        return CLI_EXIT_USAGE;
    }
    int64_t columns = 0;
    int result = data_source_count_columns("--data", spec, settings, &columns);
    if (result != CLI_EXIT_OK)
        return result;
    if (columns == 0) { /* IDX, batches:DIR, synth:linear: their labels are apart */
        if (!no_labels)
            return CLI_EXIT_OK;
        cli_error(args, "--no-labels is for a .csv or .npy file (--data %s keeps its labels "
                        "apart from its features)", spec);
        return CLI_EXIT_USAGE;
    }
    const long long have = (long long)columns, want = (long long)inputs;
    if (columns == inputs) {
        if (cli_given(args, "label-column")) {
            fprintf(stderr,
                    "axon: --data %s has %lld columns, as many as %s has inputs, so it holds "
                    "features only, but --label-column names a label column in it: leave "
                    "--label-column out, or give the file its label column\n",
                    spec, have, model_path);
            return CLI_EXIT_RUNTIME;
        }
        settings->unlabeled = true;
        return CLI_EXIT_OK;
    }
    if (columns == inputs + 1 && !no_labels)
        return CLI_EXIT_OK; /* with its label column */
    if (no_labels)
        fprintf(stderr,
                "axon: --data %s has %lld columns but %s takes %lld inputs: --no-labels reads "
                "every column as a feature, so the file needs exactly %lld\n",
                spec, have, model_path, want, want);
    else
        fprintf(stderr,
                "axon: --data %s has %lld columns but %s takes %lld inputs: give %lld columns "
                "(features only) or %lld (with a label column, which predict ignores)\n",
                spec, have, model_path, want, want, want + 1);
    return CLI_EXIT_RUNTIME;
}

int command_predict(int argc, char **argv)
{
    cli_args args;
    int result = cli_parse("predict", predict_options,
                           (int)(sizeof predict_options / sizeof *predict_options), argc, argv, 1,
                           &args);
    if (result != CLI_EXIT_OK)
        return result;
    if (args.help) {
        cli_print_help(&args, predict_usage, predict_description, stdout);
        return CLI_EXIT_OK;
    }
    const char *model_path = NULL, *data_spec = NULL, *out_path = NULL;
    ax_precision precision = AX_PRECISION_F32;
    ax_device device = ax_device_cpu();
    data_settings settings;
    if (!cli_get_nonempty(&args, "model", &model_path) ||
        !cli_get_nonempty(&args, "data", &data_spec) ||
        !cli_get_nonempty(&args, "out", &out_path) || !read_precision(&args, &precision) || !read_device(&args, &device) ||
        !data_settings_read(&args, &settings) ||
        !data_stream_settings_read(&args, data_spec, &settings) ||
        !cli_get_flag(&args, "no-labels", &settings.unlabeled))
        return CLI_EXIT_USAGE;
    if (!data_views_read(&args, &settings))
        return CLI_EXIT_USAGE;
    if (settings.mirror) {
        cli_error(&args, "--mirror is training's random mirroring; predict mirrors with --views 10");
        return CLI_EXIT_USAGE;
    }
    if (settings.lighting > 0) {
        cli_error(&args, "--lighting is training's colour noise; predict takes the images as they are");
        return CLI_EXIT_USAGE;
    }
    /* Streamed only where asked: a set loaded whole gives the rows as before. */
    settings.stream = settings.stream_mode == STREAM_ON || settings.crop > 0 || settings.views > 1 ||
                      settings.mean[0] != '\0';
    if (!model_path || !data_spec) {
        cli_error(&args, "--%s is required (see axon predict --help)", model_path ? "data" : "model");
        return CLI_EXIT_USAGE;
    }
    result = apply_threads(&args);
    if (result != CLI_EXIT_OK)
        return result;
    file_roles roles = {0};
    file_roles_input(&roles, "--model", model_path, "the model");
    file_roles_data(&roles, "--data", data_spec, "the input data");
    file_roles_input(&roles, "--labels", settings.labels, "the labels");
    file_roles_input(&roles, "--mean", settings.mean[0] ? settings.mean : NULL, "the mean image");
    file_roles_output(&roles, "--out", out_path);
    result = file_roles_check(&roles);
    if (result != CLI_EXIT_OK)
        return result;

    ax_net *net = NULL;
    result = load_model_on_device("--model", model_path, precision, device, &net);
    if (result != CLI_EXIT_OK)
        return result;
    const ax_net_config *config = ax_net_config_get(net);
    result = read_features_only(&args, data_spec, model_path, config->input_width, &settings);
    if (result != CLI_EXIT_OK) {
        ax_net_free(net);
        return result;
    }
    data_part part = strncmp(data_spec, "synth:", 6) == 0 ? DATA_PART_TRAIN : DATA_PART_TEST;
    ax_dataset *data = NULL;
    result = data_source_load("--data", data_spec, settings.labels, part, &settings, &data);
    if (result == CLI_EXIT_OK && ax_dataset_features(data) != config->input_width) {
        fprintf(stderr, "axon: %s has %lld features per row but %s takes %lld inputs\n",
                ax_dataset_source(data), (long long)ax_dataset_features(data), model_path,
                (long long)config->input_width);
        result = CLI_EXIT_RUNTIME;
    }
    if (result == CLI_EXIT_OK)
        result = check_image_shape(config, data, model_path);
    if (result == CLI_EXIT_OK) {
        output_stream output;
        result = output_stream_open(&output, "--out", out_path);
        if (result == CLI_EXIT_OK) {
            result = write_predictions(net, data, &output);
            int closed = output_stream_close(&output, result == CLI_EXIT_OK);
            if (result == CLI_EXIT_OK)
                result = closed;
        }
    }
    ax_dataset_free(data);
    ax_net_free(net);
    return result;
}
