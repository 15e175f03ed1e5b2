/* data_source.c: resolves a --data / --test argument (a data set name, an
 * IDX folder, a .csv or .npy file, or synth:linear) and loads it through the
 * library's loaders. The checks made here, before the library is called, are
 * the ones whose message can be better at this level: a missing file named
 * with the option that gave it, an uninstalled data set with the command that
 * installs it, an unknown extension with the formats that are known. */
#define _POSIX_C_SOURCE 200809L
#include "data_source.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common.h"

/* Where named data sets live: Debian's dataset-* packages install there.
 * AXON_DATASETS overrides it (a private copy, or a test of the hint below). */
static const char *datasets_dir(void)
{
    const char *dir = getenv("AXON_DATASETS");
    return dir && dir[0] ? dir : "/usr/share/datasets";
}

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
    settings->csv.scale = settings->scale;
    settings->seed = (uint64_t)seed;
    return true;
}

static bool is_directory(const char *path)
{
    struct stat info;
    return stat(path, &info) == 0 && S_ISDIR(info.st_mode);
}

static bool exists(const char *path)
{
    struct stat info;
    return stat(path, &info) == 0;
}

static bool ends_with(const char *text, const char *suffix)
{
    size_t length = strlen(text), suffix_length = strlen(suffix);
    return length >= suffix_length && strcasecmp(text + length - suffix_length, suffix) == 0;
}

/* The IDX images file of a part, with or without .gz. */
static bool idx_part_present(const char *dir, data_part part)
{
    const char *prefix = part == DATA_PART_TEST ? "t10k" : "train";
    char path[4096];
    /* Room is left for the ".gz" appended below. */
    if (snprintf(path, sizeof path - 3, "%s/%s-images-idx3-ubyte", dir, prefix) >= (int)sizeof path - 3)
        return false; /* a folder name this long cannot be opened anyway */
    if (exists(path))
        return true;
    strcat(path, ".gz");
    return exists(path);
}

/* Where a name like "fashion-mnist" lives, if it is a bare name. */
static bool installed_path(const char *spec, char *path, size_t capacity)
{
    if (strchr(spec, '/') || spec[0] == '.' || strlen(spec) > 200)
        return false;
    snprintf(path, capacity, "%s/%s", datasets_dir(), spec);
    return true;
}

/* Resolves spec to a path that exists, or prints why not. */
static int resolve(const char *option, const char *spec, char *path, size_t capacity)
{
    if (exists(spec)) {
        snprintf(path, capacity, "%s", spec);
        return CLI_EXIT_OK;
    }
    int saved_errno = errno;
    if (installed_path(spec, path, capacity)) {
        if (is_directory(path))
            return CLI_EXIT_OK;
        /* The one data set Debian packages (in /usr/share/datasets). */
        if (strcmp(spec, "fashion-mnist") == 0) {
            fprintf(stderr,
                    "axon: %s %s: the data set is not installed (no %s); install it with: "
                    "apt-get install dataset-fashion-mnist\n",
                    option, spec, path);
            return CLI_EXIT_RUNTIME;
        }
        /* Any other bare name: say which names are found, and how to give
         * MNIST itself (not packaged by Debian) or any IDX set. */
        if (saved_errno == ENOENT && !strchr(spec, '.') && !strchr(spec, ':')) {
            fprintf(stderr,
                    "axon: %s %s: no such file or directory, and no data set of that name in %s. "
                    "A bare name finds a folder there: fashion-mnist (apt-get install "
                    "dataset-fashion-mnist). For MNIST, which Debian does not package, or any "
                    "other set in MNIST's IDX format, give the folder holding its four files "
                    "(train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, "
                    "t10k-labels-idx1-ubyte, each optionally .gz): %s path/to/mnist\n",
                    option, spec, datasets_dir(), option);
            return CLI_EXIT_RUNTIME;
        }
    }
    fprintf(stderr, "axon: %s %s: %s\n", option, spec,
            saved_errno == ENOENT ? "no such file or directory" : strerror(saved_errno));
    return CLI_EXIT_RUNTIME;
}

/* synth:linear's test set: the rows that follow the training rows in the
 * same stream, so they share its weight vector w (a draw from another seed
 * would be another linear map). ax_dataset_synth_linear draws w first and
 * then the rows in order, so a longer draw extends a shorter one. */
static ax_status synth_test_part(const data_settings *settings, ax_dataset **out)
{
    int64_t train_rows = settings->synth_rows, features = settings->synth_features;
    int64_t test_rows = train_rows / 5 > 0 ? train_rows / 5 : 1;
    ax_dataset *all = NULL;
    ax_status status = ax_dataset_synth_linear(train_rows + test_rows, features, settings->seed, &all);
    if (status != AX_STATUS_OK)
        return status;
    status = ax_dataset_create(test_rows, features, 0, 1, out);
    if (status == AX_STATUS_OK) {
        memcpy(ax_dataset_features_data(*out), ax_dataset_features_data(all) + train_rows * features,
               (size_t)(test_rows * features) * sizeof(float));
        memcpy(ax_dataset_targets_data(*out), ax_dataset_targets_data(all) + train_rows,
               (size_t)test_rows * sizeof(float));
    }
    ax_dataset_free(all);
    return status;
}

static void scale_features(ax_dataset *dataset, double scale)
{
    if (scale == 1.0)
        return;
    float *values = ax_dataset_features_data(dataset);
    int64_t count = ax_dataset_rows(dataset) * ax_dataset_features(dataset);
    for (int64_t i = 0; i < count; i++)
        values[i] = (float)(values[i] * scale);
}

/* A shard being loaded: the rank and ranks, and the rows of the whole set
 * once counted. With split > 0 (a --val-split), what is loaded is the span
 * of rows that holds the rank's shards of both parts of the split
 * (ax_dataset_split_span), and first records where it starts. */
typedef struct shard_request {
    int rank, size;
    double split;
    uint64_t seed;
    int64_t total, first;
} shard_request;

/* The rows [*first, *first + *count) to load of a set of `rows` rows (the
 * rank's shard, or its split span), recorded in shard. */
static ax_status shard_range(shard_request *shard, int64_t rows, int64_t *first, int64_t *count)
{
    int64_t end = 0;
    shard->total = rows;
    if (shard->split > 0) {
        ax_status status = ax_dataset_split_span(rows, shard->split, shard->seed, shard->rank,
                                                 shard->size, first, count);
        shard->first = *first;
        return status;
    }
    data_shard_bounds(rows, shard->rank, shard->size, first, &end);
    *count = end - *first;
    shard->first = *first;
    return AX_STATUS_OK;
}

/* Loads spec whole (shard NULL) or only the shard's rows (the file formats;
 * synth:linear is drawn whole and cut here). */
static int load_any(const char *option, const char *spec, const char *labels_path, data_part part,
                    const data_settings *settings, shard_request *shard, ax_dataset **out)
{
    *out = NULL;
    ax_status status;
    char path[4096];
    int64_t rows = 0, first = 0, count = 0;
    if (strncmp(spec, "batches:", 8) == 0) {
        /* The output of axon prep: pixels are already scaled to [0, 1]. */
        if (!shard) {
            status = ax_dataset_load_batches(spec + 8, out);
        } else {
            status = ax_dataset_count_batches(spec + 8, &rows);
            if (status == AX_STATUS_OK)
                status = shard_range(shard, rows, &first, &count);
            if (status == AX_STATUS_OK)
                status = ax_dataset_load_batches_rows(spec + 8, first, count, out);
        }
        if (status != AX_STATUS_OK)
            return report_failure(status, spec + 8);
    } else if (strncmp(spec, "synth:", 6) == 0) {
        if (strcmp(spec + 6, "linear") != 0) {
            fprintf(stderr, "axon: %s %s: unknown synthetic data set (known: synth:linear)\n",
                    option, spec);
            return CLI_EXIT_USAGE;
        }
        /* The generator draws its rows in order: a shard of the training
         * rows needs only the rows up to its end (at least one is drawn). */
        int64_t draw = settings->synth_rows;
        status = AX_STATUS_OK;
        if (shard && part != DATA_PART_TEST) {
            status = shard_range(shard, settings->synth_rows, &first, &count);
            draw = first + count > 0 ? first + count : 1;
        }
        if (status == AX_STATUS_OK && part == DATA_PART_TEST)
            status = synth_test_part(settings, out);
        else if (status == AX_STATUS_OK)
            status = ax_dataset_synth_linear(draw, settings->synth_features, settings->seed, out);
        if (status != AX_STATUS_OK)
            return report_failure(status, spec);
        scale_features(*out, settings->scale);
        if (shard && part == DATA_PART_TEST) /* drawn whole: cut here */
            status = shard_range(shard, ax_dataset_rows(*out), &first, &count);
        if (shard && shard->split > 0 && part != DATA_PART_TEST) {
            shard->first = 0; /* the span is cut by the split: keep the name synth:linear */
        } else if (shard) {
            int result = data_shard(out, first, first + count);
            if (result != CLI_EXIT_OK)
                return result;
        }
    } else {
        int resolved = resolve(option, spec, path, sizeof path);
        if (resolved != CLI_EXIT_OK)
            return resolved;
        if (labels_path && !ends_with(path, ".npy")) {
            fprintf(stderr, "axon: %s %s: a separate labels file (%s) goes only with .npy data\n",
                    option, spec, labels_path);
            return CLI_EXIT_USAGE;
        }
        if (is_directory(path)) {
            if (!idx_part_present(path, part)) {
                const char *prefix = part == DATA_PART_TEST ? "t10k" : "train";
                fprintf(stderr,
                        "axon: %s %s: the folder has no %s-images-idx3-ubyte[.gz]; a folder "
                        "must hold MNIST-format IDX files (%s-images-idx3-ubyte and "
                        "%s-labels-idx1-ubyte, gzipped or not)\n",
                        option, spec, prefix, prefix, prefix);
                return CLI_EXIT_RUNTIME;
            }
            const bool test = part == DATA_PART_TEST;
            if (!shard) {
                status = ax_dataset_load_idx_dir(path, test, out);
            } else {
                status = ax_dataset_count_idx_dir(path, test, &rows);
                if (status == AX_STATUS_OK)
                    status = shard_range(shard, rows, &first, &count);
                if (status == AX_STATUS_OK)
                    status = ax_dataset_load_idx_dir_rows(path, test, first, count, out);
            }
            if (status != AX_STATUS_OK)
                return report_failure(status, path);
            scale_features(*out, settings->scale);
        } else if (ends_with(path, ".csv")) {
            if (!shard) {
                status = ax_dataset_load_csv(path, &settings->csv, out);
            } else {
                status = ax_dataset_count_csv(path, &settings->csv, &rows);
                if (status == AX_STATUS_OK)
                    status = shard_range(shard, rows, &first, &count);
                if (status == AX_STATUS_OK)
                    status = ax_dataset_load_csv_rows(path, &settings->csv, first, count, out);
            }
            if (status != AX_STATUS_OK)
                return report_failure(status, path);
        } else if (ends_with(path, ".npy")) {
            if (labels_path && !exists(labels_path)) {
                fprintf(stderr, "axon: %s %s: no such file or directory\n",
                        strcmp(option, "--test") == 0 ? "--test-labels" : "--labels", labels_path);
                return CLI_EXIT_RUNTIME;
            }
            if (!shard) {
                status = ax_dataset_load_npy(path, labels_path, settings->scale, out);
            } else {
                status = ax_dataset_count_npy(path, &rows);
                if (status == AX_STATUS_OK)
                    status = shard_range(shard, rows, &first, &count);
                if (status == AX_STATUS_OK)
                    status = ax_dataset_load_npy_rows(path, labels_path, settings->scale, first,
                                                      count, out);
            }
            if (status != AX_STATUS_OK)
                return report_failure(status, path);
        } else {
            fprintf(stderr,
                    "axon: %s %s: unknown kind of data; expected a folder of IDX files, a .csv "
                    "or .npy file, a data set name such as fashion-mnist, batches:DIR (axon prep's "
                    "output), or synth:linear\n",
                    option, spec);
            return CLI_EXIT_USAGE;
        }
    }
    status = ax_dataset_check_finite(*out);
    if (status != AX_STATUS_OK) {
        int result = report_failure(status, ax_dataset_source(*out));
        ax_dataset_free(*out);
        *out = NULL;
        return result;
    }
    if ((shard ? shard->total : ax_dataset_rows(*out)) == 0) {
        fprintf(stderr, "axon: %s %s: no rows\n", option, spec);
        ax_dataset_free(*out);
        *out = NULL;
        return CLI_EXIT_RUNTIME;
    }
    return CLI_EXIT_OK;
}

int data_source_load(const char *option, const char *spec, const char *labels_path,
                     data_part part, const data_settings *settings, ax_dataset **out)
{
    return load_any(option, spec, labels_path, part, settings, NULL, out);
}

int data_source_load_shard(const char *option, const char *spec, const char *labels_path,
                           data_part part, const data_settings *settings, int rank, int size,
                           ax_dataset **out, int64_t *total)
{
    shard_request shard = {.rank = rank, .size = size};
    int result = load_any(option, spec, labels_path, part, settings, &shard, out);
    *total = result == CLI_EXIT_OK ? shard.total : 0;
    return result;
}

int data_source_load_split_shards(const char *option, const char *spec, const char *labels_path,
                                  const data_settings *settings, int rank, int size,
                                  double fraction, uint64_t seed, ax_dataset **train,
                                  ax_dataset **holdout, int64_t totals[2])
{
    *train = *holdout = NULL;
    totals[0] = totals[1] = 0;
    shard_request shard = {.rank = rank, .size = size, .split = fraction, .seed = seed};
    ax_dataset *span = NULL;
    int result = load_any(option, spec, labels_path, DATA_PART_TRAIN, settings, &shard, &span);
    if (result != CLI_EXIT_OK)
        return result;
    ax_status status = ax_dataset_split_shards(span, shard.first, shard.total, fraction, seed,
                                               rank, size, train, holdout);
    ax_dataset_free(span);
    if (status != AX_STATUS_OK)
        return report_failure(status, "--val-split");
    totals[1] = (int64_t)llround(fraction * (double)shard.total);
    totals[0] = shard.total - totals[1];
    return CLI_EXIT_OK;
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
    char path[4096];
    if (strncmp(spec, "synth:", 6) == 0)
        return false;
    if (exists(spec))
        snprintf(path, sizeof path, "%s", spec);
    else if (!installed_path(spec, path, sizeof path))
        return false;
    return is_directory(path) && idx_part_present(path, DATA_PART_TEST);
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
