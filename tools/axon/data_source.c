/* data_source.c: a --data / --test argument opened through the library's
 * ax_dataset_open (src/data/open.c, which knows the kinds of data): here are
 * only the options that fill ax_data_options, the option named in messages,
 * and the exit status each failure gives. */
#define _POSIX_C_SOURCE 200809L
#include "data_source.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

bool data_settings_read(const cli_args *args, data_settings *settings)
{
    memset(settings, 0, sizeof *settings);
    settings->csv = ax_csv_defaults();
    settings->scale = 1.0;
    settings->synth_rows = 500000;
    settings->synth_features = 20;
    settings->seed = 1;
    int64_t label_column = 0, seed = 1;
    const char *delimiter = ",";
    bool ok = cli_get_int64_or(args, "label-column", "last", -1, -1, 1000000000, &label_column) &&
              cli_get_flag(args, "header", &settings->csv.header) &&
              cli_get_flag(args, "regression", &settings->csv.regression) &&
              cli_get_nonempty(args, "delimiter", &delimiter) &&
              cli_get_double(args, "scale", 0.0, INFINITY, CLI_MIN_OPEN, &settings->scale) &&
              cli_get_nonempty(args, "labels", &settings->labels) &&
              cli_get_nonempty(args, "test-labels", &settings->test_labels) &&
              cli_get_int64(args, "rows", 1, 100000000000LL, &settings->synth_rows) &&
              cli_get_int64(args, "features", 1, 1000000, &settings->synth_features) &&
              cli_get_int64(args, "seed", 0, INT64_MAX, &seed);
    if (!ok)
        return false;
    if (strcmp(delimiter, "tab") == 0 || strcmp(delimiter, "\\t") == 0)
        delimiter = "\t";
    if (strlen(delimiter) != 1 || strchr("0123456789.-+eE\n\r\"", delimiter[0])) {
        cli_error(args, "--delimiter: expected one character that cannot be part of a number, "
                        "or 'tab', got '%s'", delimiter);
        return false;
    }
    settings->csv.delimiter = delimiter[0];
    settings->csv.label_column = label_column;
    settings->seed = (uint64_t)seed;
    return true;
}

bool data_views_read(const cli_args *args, data_settings *settings)
{
    int views = 1;
    if (!cli_get_int(args, "views", 1, 10, &views))
        return false;
    if (views != 1 && views != 10) {
        cli_error(args, "--views is 1 (the centre crop) or 10 (corners and centre, mirrored)");
        return false;
    }
    if (views == 10 && (settings->crop <= 0 || settings->stream_mode == STREAM_OFF)) {
        cli_error(args, "--views 10 takes crops of streamed batches: give --crop N with "
                        "--data batches:DIR");
        return false;
    }
    settings->views = views;
    return true;
}

bool data_stream_settings_read(const cli_args *args, const char *spec, data_settings *settings)
{
    static const char *const modes[] = {"auto", "on", "off", NULL}; /* stream_mode */
    int mode = 0;
    const char *mean_file = NULL;
    if (!(cli_get_choice(args, "stream", modes, &mode) &&
          cli_get_nonempty(args, "mean", &mean_file) &&
          cli_get_int64(args, "crop", 0, 1000000, &settings->crop) &&
          cli_get_flag(args, "mirror", &settings->mirror) &&
          cli_get_double(args, "lighting", 0.0, 1e6, CLI_CLOSED, &settings->lighting) &&
          cli_get_flag(args, "subtract-mean", &settings->subtract_mean)))
        return false;
    settings->stream_mode = (stream_mode)mode;
    if (mean_file && settings->subtract_mean) {
        cli_error(args, "--mean FILE and --subtract-mean both name a mean image: give one");
        return false;
    }
    const bool subtract = settings->subtract_mean || mean_file;
    const bool batches = spec && strncmp(spec, "batches:", 8) == 0;
    const bool augment = settings->crop > 0 || settings->mirror || settings->lighting > 0 || subtract;
    if (!batches && (settings->stream_mode == STREAM_ON || augment)) {
        cli_error(args, "--stream on, --crop, --mirror, --lighting, --subtract-mean and --mean are "
                        "for --data batches:DIR (axon prep's output)");
        return false;
    }
    if (settings->stream_mode == STREAM_OFF && augment) {
        cli_error(args, "--crop, --mirror, --lighting, --subtract-mean and --mean are made as "
                        "batches are streamed: leave out --stream off");
        return false;
    }
    settings->mean[0] = '\0';
    if (settings->subtract_mean &&
        snprintf(settings->mean, sizeof settings->mean, "%s/mean.npy", spec + 8) >=
            (int)sizeof settings->mean) {
        cli_error(args, "--data %s: the folder name is too long", spec);
        return false;
    }
    if (mean_file && snprintf(settings->mean, sizeof settings->mean, "%s", mean_file) >=
                         (int)sizeof settings->mean) {
        cli_error(args, "--mean %s: the file name is too long", mean_file);
        return false;
    }
    return true;
}

/* The library's options for spec as the value of option ("--data" or
 * "--test"), whose labels file comes from --labels or --test-labels. */
static ax_data_options data_options(const char *option, const char *spec, const char *labels_path,
                                    data_part part, const data_settings *settings)
{
    ax_data_options options = ax_data_options_defaults();
    options.part = part == DATA_PART_TEST ? AX_DATA_PART_TEST : AX_DATA_PART_TRAIN;
    options.csv = settings->csv;
    options.scale = settings->scale;
    options.labels = labels_path;
    options.synth_rows = settings->synth_rows;
    options.synth_features = settings->synth_features;
    options.seed = settings->seed;
    options.name = option;
    options.labels_name = strcmp(option, "--test") == 0 ? "--test-labels" : "--labels";
    options.unlabeled = settings->unlabeled;
    if (strncmp(spec, "batches:", 8) == 0) { /* augmentation unstreamed is refused there */
        options.stream = settings->stream;
        options.crop = settings->crop;
        options.mirror = settings->mirror;
        options.lighting = settings->lighting;
        options.views = settings->views > 0 ? settings->views : 1;
        options.mean = settings->mean[0] ? settings->mean : NULL;
    }
    return options;
}

/* The spec's form first: a spec that names no kind of data is a usage
 * error (AX_STATUS_BAD_ARGUMENT here, exit 2); a missing file is not. The
 * loaders' own AX_STATUS_BAD_ARGUMENT (a CSV label column out of range)
 * stays a runtime error, so the two steps are told apart by when, not by
 * status alone. */
static int check_spec(const char *spec, const ax_data_options *options)
{
    ax_status status = ax_dataset_check_spec(spec, options);
    if (status == AX_STATUS_OK)
        return CLI_EXIT_OK;
    fprintf(stderr, "axon: %s\n", ax_error_message());
    return status == AX_STATUS_BAD_ARGUMENT ? CLI_EXIT_USAGE : CLI_EXIT_RUNTIME;
}

int data_source_load(const char *option, const char *spec, const char *labels_path,
                     data_part part, const data_settings *settings, ax_dataset **out)
{
    *out = NULL;
    ax_data_options options = data_options(option, spec, labels_path, part, settings);
    int result = check_spec(spec, &options);
    if (result != CLI_EXIT_OK)
        return result;
    ax_status status = ax_dataset_open(spec, &options, out);
    return status == AX_STATUS_OK ? CLI_EXIT_OK : report_failure(status, NULL);
}

int data_source_count_columns(const char *option, const char *spec, const data_settings *settings,
                              int64_t *columns)
{
    *columns = 0;
    ax_data_options options = data_options(option, spec, settings->labels, DATA_PART_TEST, settings);
    options.unlabeled = false; /* counted whatever the reading */
    int result = check_spec(spec, &options);
    if (result != CLI_EXIT_OK)
        return result;
    ax_status status = ax_dataset_count_columns(spec, &options, columns);
    if (status == AX_STATUS_UNSUPPORTED)
        return CLI_EXIT_OK;
    return status == AX_STATUS_OK ? CLI_EXIT_OK : report_failure(status, NULL);
}

int data_source_load_shard(const char *option, const char *spec, const char *labels_path,
                           data_part part, const data_settings *settings, int rank, int size,
                           ax_dataset **out, int64_t *total)
{
    *out = NULL;
    *total = 0;
    ax_data_options options = data_options(option, spec, labels_path, part, settings);
    int result = check_spec(spec, &options);
    if (result != CLI_EXIT_OK)
        return result;
    ax_status status = ax_dataset_open_shard(spec, &options, rank, size, out, total);
    return status == AX_STATUS_OK ? CLI_EXIT_OK : report_failure(status, NULL);
}

int data_source_load_split_shards(const char *option, const char *spec, const char *labels_path,
                                  const data_settings *settings, int rank, int size,
                                  double fraction, uint64_t seed, ax_dataset **train,
                                  ax_dataset **holdout, int64_t totals[2])
{
    *train = *holdout = NULL;
    totals[0] = totals[1] = 0;
    ax_data_options options = data_options(option, spec, labels_path, DATA_PART_TRAIN, settings);
    int result = check_spec(spec, &options);
    if (result != CLI_EXIT_OK)
        return result;
    ax_status status = ax_dataset_open_split_shards(spec, &options, fraction, seed, rank, size,
                                                    train, holdout, totals);
    return status == AX_STATUS_OK ? CLI_EXIT_OK : report_failure(status, NULL);
}

void data_shard_bounds(int64_t rows, int rank, int size, int64_t *first, int64_t *end)
{
    /* rows < 2^37 and size < 2^31 (the option and MPI limits): no overflow. */
    *first = rows * rank / size;
    *end = rows * (rank + 1) / size;
}

int data_shard(ax_dataset **dataset, int64_t first, int64_t end)
{
    ax_dataset *whole = *dataset, *shard = NULL;
    const int64_t features = ax_dataset_features(whole), targets = ax_dataset_targets(whole);
    ax_status status = ax_dataset_create(end - first, features, ax_dataset_classes(whole), targets,
                                         &shard);
    if (status != AX_STATUS_OK)
        return report_failure(status, ax_dataset_source(whole));
    memcpy(ax_dataset_features_data(shard), ax_dataset_features_data(whole) + first * features,
           (size_t)((end - first) * features) * sizeof(float));
    if (ax_dataset_labels_data(whole))
        memcpy(ax_dataset_labels_data(shard), ax_dataset_labels_data(whole) + first,
               (size_t)(end - first) * sizeof(int32_t));
    if (targets > 0)
        memcpy(ax_dataset_targets_data(shard), ax_dataset_targets_data(whole) + first * targets,
               (size_t)((end - first) * targets) * sizeof(float));
    ax_dataset_free(whole);
    *dataset = shard;
    return CLI_EXIT_OK;
}

bool data_source_has_test_part(const char *spec)
{
    return ax_dataset_spec_has_test_part(spec);
}

const char *data_name(const ax_dataset *dataset, const char *spec)
{
    const char *source = ax_dataset_source(dataset);
    return strcmp(source, "(in memory)") == 0 ? spec : source;
}

void data_describe(const ax_dataset *dataset, char *text, size_t capacity)
{
    int64_t classes = ax_dataset_classes(dataset), targets = ax_dataset_targets(dataset);
    int written = snprintf(text, capacity, "%lld rows, %lld features",
                           (long long)ax_dataset_rows(dataset),
                           (long long)ax_dataset_features(dataset));
    if (written < 0 || (size_t)written >= capacity)
        return;
    if (classes > 0)
        snprintf(text + written, capacity - (size_t)written, ", %lld classes", (long long)classes);
    else if (targets > 0)
        snprintf(text + written, capacity - (size_t)written, ", %lld target%s",
                 (long long)targets, targets == 1 ? "" : "s");
}
