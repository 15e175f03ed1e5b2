/* open.c: a data spec opened as a dataset (ax_dataset_open and its forms):
 * which kind of data the spec names (a data set name, an IDX folder, a .csv
 * or .npy file, batches:DIR, synth:linear), read whole, as an MPI rank's
 * shard or as the span of a --val-split's shards through the row range
 * loaders, then scaled and checked for NaN, Inf and emptiness. This was the
 * command line's (tools/axon/data_source.c) and moved here so that every
 * program opens data as `axon` does; the messages keep its words. Checks
 * made before any loader runs give the messages that can only be good at
 * this level: a missing file named with the option that gave it, an
 * uninstalled data set with the command that installs it, an unknown
 * extension with the formats that are known. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/memory.h"
#include "data/dataset.h"
#include "data/stream.h"

typedef enum spec_kind { SPEC_BATCHES, SPEC_SYNTH, SPEC_IDX, SPEC_CSV, SPEC_NPY } spec_kind;

/* What a spec names: its kind and the path to read (batches: the folder;
 * a data set name: its folder under the data sets folder). */
typedef struct spec_target {
    spec_kind kind;
    char path[4096];
} spec_target;

/* A shard being opened: the rank and ranks, and the rows of the whole set
 * once counted. With fraction > 0 (a validation split), what is read is the
 * span of rows that holds the rank's shards of both parts of the split
 * (ax_dataset_split_span), and first records where it starts. */
typedef struct shard_request {
    int rank, size;
    double fraction;
    uint64_t seed;
    int64_t total, first;
} shard_request;

void ax_data_options_init(ax_data_options *options, size_t size)
{
    ax_data_options defaults;
    memset(&defaults, 0, sizeof defaults);
    defaults.part = AX_DATA_PART_TRAIN;
    defaults.csv = ax_csv_defaults();
    defaults.scale = 1.0;
    defaults.synth_rows = 500000;
    defaults.synth_features = 20;
    defaults.seed = 1;
    defaults.views = 1;
    ax_sized_fill(options, size, &defaults, sizeof defaults);
}

/* The caller's options over the defaults: a program built against an older
 * header passes a smaller struct, whose missing fields keep their defaults. */
static ax_status read_options(const ax_data_options *given, ax_data_options *options)
{
    *options = ax_data_options_defaults();
    if (!given)
        return AX_STATUS_OK;
    const size_t first_size = offsetof(ax_data_options, labels_name) + sizeof given->labels_name;
    if (given->size < first_size || given->size > sizeof *options)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "data options of %zu bytes: fill them with ax_data_options_defaults() "
                       "(this library takes %zu to %zu bytes)",
                       given->size, first_size, sizeof *options);
    memcpy(options, given, given->size);
    options->size = sizeof *options;
    return AX_STATUS_OK;
}

/* Fails naming the spec as the caller does: "NAME SPEC: text" (or "SPEC: text"). */
static ax_status spec_fail(ax_status status, const char *name, const char *spec,
                           const char *format, ...) AX_PRINTF(4, 5);
static ax_status spec_fail(ax_status status, const char *name, const char *spec,
                           const char *format, ...)
{
    char text[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    return ax_fail(status, "%s%s%s: %s", name ? name : "", name ? " " : "", spec, text);
}

/* A loader's failure, its message prefixed with subject (a file) where it
 * does not name it already, so that every message says what it is about. */
static ax_status name_failure(ax_status status, const char *subject)
{
    if (status == AX_STATUS_OK)
        return status;
    const char *message = ax_error_message();
    if (!message[0])
        return ax_fail(status, "%s%s%s", subject ? subject : "", subject ? ": " : "",
                       ax_status_name(status));
    if (subject && subject[0] && !strstr(message, subject))
        return ax_fail_context(status, "%s", subject);
    return status;
}

/* Where named data sets live: Debian's dataset-* packages install there.
 * AXON_DATASETS overrides it (a private copy, or a test of the hint below). */
static const char *datasets_dir(void)
{
    const char *dir = getenv("AXON_DATASETS");
    return dir && dir[0] ? dir : "/usr/share/datasets";
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
static bool idx_part_present(const char *dir, ax_data_part part)
{
    const char *prefix = part == AX_DATA_PART_TEST ? "t10k" : "train";
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

/* Resolves spec to a path that exists, or fails saying why not. */
static ax_status resolve(const ax_data_options *options, const char *spec, char *path,
                         size_t capacity)
{
    const char *name = options->name;
    if (exists(spec)) {
        snprintf(path, capacity, "%s", spec);
        return AX_STATUS_OK;
    }
    int saved_errno = errno;
    if (installed_path(spec, path, capacity)) {
        if (is_directory(path))
            return AX_STATUS_OK;
        /* The one data set Debian packages (in /usr/share/datasets). */
        if (strcmp(spec, "fashion-mnist") == 0)
            return spec_fail(AX_STATUS_BAD_FILE, name, spec,
                             "the data set is not installed (no %s); install it with: "
                             "apt-get install dataset-fashion-mnist",
                             path);
        /* Any other bare name: say which names are found, and how to give
         * MNIST itself (not packaged by Debian) or any IDX set. */
        if (saved_errno == ENOENT && !strchr(spec, '.') && !strchr(spec, ':'))
            return spec_fail(AX_STATUS_BAD_FILE, name, spec,
                             "no such file or directory, and no data set of that name in %s. "
                             "A bare name finds a folder there: fashion-mnist (apt-get install "
                             "dataset-fashion-mnist). For MNIST, which Debian does not package, or "
                             "any other set in MNIST's IDX format, give the folder holding its four "
                             "files (train-images-idx3-ubyte, train-labels-idx1-ubyte, "
                             "t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, each optionally "
                             ".gz): %s%spath/to/mnist",
                             datasets_dir(), name ? name : "", name ? " " : "");
    }
    return spec_fail(saved_errno == ENOENT ? AX_STATUS_BAD_FILE : AX_STATUS_IO_ERROR, name, spec,
                     "%s", saved_errno == ENOENT ? "no such file or directory" : strerror(saved_errno));
}

/* Which kind of data spec names, and the path to read: everything that can
 * be said of a spec before a loader runs. */
static ax_status find_target(const char *spec, const ax_data_options *options, spec_target *target)
{
    const char *name = options->name;
    if (!spec || !spec[0])
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "no data spec given");
    if (strncmp(spec, "batches:", 8) == 0) {
        target->kind = SPEC_BATCHES;
        snprintf(target->path, sizeof target->path, "%s", spec + 8);
        return AX_STATUS_OK;
    }
    if (strncmp(spec, "synth:", 6) == 0) {
        if (strcmp(spec + 6, "linear") != 0)
            return spec_fail(AX_STATUS_BAD_ARGUMENT, name, spec,
                             "unknown synthetic data set (known: synth:linear)");
        target->kind = SPEC_SYNTH;
        snprintf(target->path, sizeof target->path, "%s", spec);
        return AX_STATUS_OK;
    }
    char *path = target->path;
    AX_TRY(resolve(options, spec, path, sizeof target->path));
    const char *labels = options->labels;
    if (labels && !ends_with(path, ".npy"))
        return spec_fail(AX_STATUS_BAD_ARGUMENT, name, spec,
                         "a separate labels file (%s) goes only with .npy data", labels);
    if (is_directory(path)) {
        if (!idx_part_present(path, options->part)) {
            const char *prefix = options->part == AX_DATA_PART_TEST ? "t10k" : "train";
            return spec_fail(AX_STATUS_BAD_FILE, name, spec,
                             "the folder has no %s-images-idx3-ubyte[.gz]; a folder must hold "
                             "MNIST-format IDX files (%s-images-idx3-ubyte and "
                             "%s-labels-idx1-ubyte, gzipped or not)",
                             prefix, prefix, prefix);
        }
        target->kind = SPEC_IDX;
    } else if (ends_with(path, ".csv")) {
        target->kind = SPEC_CSV;
    } else if (ends_with(path, ".npy")) {
        if (labels && !exists(labels))
            return spec_fail(AX_STATUS_BAD_FILE, options->labels_name, labels,
                             "no such file or directory");
        target->kind = SPEC_NPY;
    } else {
        return spec_fail(AX_STATUS_BAD_ARGUMENT, name, spec,
                         "unknown kind of data; expected a folder of IDX files, a .csv or .npy "
                         "file, a data set name such as fashion-mnist, batches:DIR (axon prep's "
                         "output), or synth:linear");
    }
    return AX_STATUS_OK;
}

/* The rows [*first, *first + *count) to read of a set of `rows` rows (the
 * rank's shard, or its split span), recorded in shard. */
static ax_status shard_range(shard_request *shard, int64_t rows, int64_t *first, int64_t *count)
{
    shard->total = rows;
    if (shard->fraction > 0) {
        ax_status status = ax_dataset_split_span(rows, shard->fraction, shard->seed, shard->rank,
                                                 shard->size, first, count);
        shard->first = *first;
        return status;
    }
    /* rows < 2^37 and size < 2^31 in practice: no overflow (docs/mpi.md). */
    *first = rows * shard->rank / shard->size;
    *count = rows * (shard->rank + 1) / shard->size - *first;
    shard->first = *first;
    return AX_STATUS_OK;
}

/* Replaces *dataset by a copy of its rows [first, first + count), freeing
 * the whole. The copy is "(in memory)", as the command line's cut was. */
static ax_status cut_rows(ax_dataset **dataset, int64_t first, int64_t count)
{
    ax_dataset *whole = *dataset, *part = NULL;
    const int64_t features = whole->features, targets = whole->targets;
    ax_status status = ax_dataset_create(count, features, whole->classes, targets, &part);
    if (status != AX_STATUS_OK)
        return name_failure(status, whole->source);
    memcpy(part->image_shape, whole->image_shape, sizeof part->image_shape);
    memcpy(part->feature_values, whole->feature_values + first * features,
           (size_t)(count * features) * sizeof(float));
    if (whole->labels)
        memcpy(part->labels, whole->labels + first, (size_t)count * sizeof(int32_t));
    if (targets > 0)
        memcpy(part->target_values, whole->target_values + first * targets,
               (size_t)(count * targets) * sizeof(float));
    ax_dataset_free(whole);
    *dataset = part;
    return AX_STATUS_OK;
}

static void scale_features(ax_dataset *dataset, double scale)
{
    if (scale == 1.0)
        return;
    float *values = dataset->feature_values;
    int64_t count = dataset->rows * dataset->features;
    for (int64_t i = 0; i < count; i++)
        values[i] = (float)(values[i] * scale);
}

/* synth:linear's rows of a part: the test part is the rows/5 (at least 1)
 * rows that follow the training rows in the same stream. */
static int64_t synth_part_rows(const ax_data_options *options)
{
    int64_t train_rows = options->synth_rows;
    if (options->part != AX_DATA_PART_TEST)
        return train_rows;
    return train_rows / 5 > 0 ? train_rows / 5 : 1;
}

/* synth:linear's test set: the rows that follow the training rows in the
 * same stream, so they share its weight vector w (a draw from another seed
 * would be another linear map). ax_dataset_synth_linear draws w first and
 * then the rows in order, so a longer draw extends a shorter one. */
static ax_status synth_test_part(const ax_data_options *options, ax_dataset **out)
{
    int64_t train_rows = options->synth_rows, features = options->synth_features;
    int64_t test_rows = synth_part_rows(options);
    ax_dataset *all = NULL;
    ax_status status = ax_dataset_synth_linear(train_rows + test_rows, features, options->seed, &all);
    if (status != AX_STATUS_OK)
        return status;
    status = ax_dataset_create(test_rows, features, 0, 1, out);
    if (status == AX_STATUS_OK) {
        memcpy((*out)->feature_values, all->feature_values + train_rows * features,
               (size_t)(test_rows * features) * sizeof(float));
        memcpy((*out)->target_values, all->target_values + train_rows,
               (size_t)test_rows * sizeof(float));
    }
    ax_dataset_free(all);
    return status;
}

/* synth:linear whole, or the shard's rows: the generator draws its rows in
 * order, so a shard of the training rows needs only the rows up to its end
 * (at least one is drawn); the test part is drawn whole and cut. A split
 * span is left uncut (it starts at row 0, and keeps the name synth:linear). */
static ax_status open_synth(const ax_data_options *options, shard_request *shard, ax_dataset **out)
{
    const bool test = options->part == AX_DATA_PART_TEST;
    int64_t draw = options->synth_rows, first = 0, count = 0;
    ax_status status = AX_STATUS_OK;
    if (shard && !test) {
        status = shard_range(shard, options->synth_rows, &first, &count);
        draw = first + count > 0 ? first + count : 1;
    }
    if (status == AX_STATUS_OK && test)
        status = synth_test_part(options, out);
    else if (status == AX_STATUS_OK)
        status = ax_dataset_synth_linear(draw, options->synth_features, options->seed, out);
    if (status != AX_STATUS_OK)
        return name_failure(status, "synth:linear");
    scale_features(*out, options->scale);
    if (shard && test)
        status = shard_range(shard, (*out)->rows, &first, &count);
    if (shard && shard->fraction > 0 && !test)
        shard->first = 0;
    else if (shard && status == AX_STATUS_OK)
        status = cut_rows(out, first, count);
    return status;
}

/* Reads target whole (shard NULL) or only the shard's rows. */
static ax_status read_target(const spec_target *target, const ax_data_options *options,
                             shard_request *shard, ax_dataset **out)
{
    const char *path = target->path;
    const bool test = options->part == AX_DATA_PART_TEST;
    ax_csv_options csv = options->csv;
    csv.scale = options->scale;
    if (options->unlabeled)
        csv.label_column = AX_CSV_NO_LABEL;
    int64_t rows = 0, first = 0, count = 0;
    ax_status status = AX_STATUS_OK;
    switch (target->kind) {
    case SPEC_SYNTH:
        return open_synth(options, shard, out);
    case SPEC_BATCHES: /* the output of axon prep: pixels are already scaled to [0, 1] */
        if (options->stream && shard)
            return ax_fail(AX_STATUS_UNSUPPORTED,
                           "%s: streamed batches are read by one process, whole: not as an MPI "
                           "rank's shard or a --val-split (load the set whole: --stream off)",
                           path);
        if (options->stream)
            return name_failure(ax_batch_stream_open(path, options->crop, options->mirror,
                                                     options->mean, 0, options->views,
                                                     options->lighting, out),
                                path);
        if (!shard)
            return name_failure(ax_dataset_load_batches(path, out), path);
        status = ax_dataset_count_batches(path, &rows);
        if (status == AX_STATUS_OK)
            status = shard_range(shard, rows, &first, &count);
        if (status == AX_STATUS_OK)
            status = ax_dataset_load_batches_rows(path, first, count, out);
        break;
    case SPEC_IDX:
        if (!shard) {
            status = ax_dataset_load_idx_dir(path, test, out);
        } else {
            status = ax_dataset_count_idx_dir(path, test, &rows);
            if (status == AX_STATUS_OK)
                status = shard_range(shard, rows, &first, &count);
            if (status == AX_STATUS_OK)
                status = ax_dataset_load_idx_dir_rows(path, test, first, count, out);
        }
        if (status == AX_STATUS_OK)
            scale_features(*out, options->scale);
        break;
    case SPEC_CSV:
        if (!shard)
            return name_failure(ax_dataset_load_csv(path, &csv, out), path);
        status = ax_dataset_count_csv(path, &csv, &rows);
        if (status == AX_STATUS_OK)
            status = shard_range(shard, rows, &first, &count);
        if (status == AX_STATUS_OK)
            status = ax_dataset_load_csv_rows(path, &csv, first, count, out);
        break;
    case SPEC_NPY:
        if (options->unlabeled && !shard)
            return name_failure(ax_npy_load_unlabeled(path, options->scale, NULL, out), path);
        if (!shard)
            return name_failure(ax_dataset_load_npy(path, options->labels, options->scale, out),
                                path);
        status = ax_dataset_count_npy(path, &rows);
        if (status == AX_STATUS_OK)
            status = shard_range(shard, rows, &first, &count);
        if (status == AX_STATUS_OK && options->unlabeled)
            status = ax_npy_load_unlabeled(path, options->scale, (int64_t[2]){first, count}, out);
        else if (status == AX_STATUS_OK)
            status = ax_dataset_load_npy_rows(path, options->labels, options->scale, first, count,
                                              out);
        break;
    }
    return status == AX_STATUS_OK ? status : name_failure(status, path);
}

/* options.unlabeled is for the files that can hold features only. */
static ax_status check_unlabeled(const char *spec, const ax_data_options *options,
                                 const spec_target *target)
{
    if (!options->unlabeled)
        return AX_STATUS_OK;
    if (target->kind != SPEC_CSV && target->kind != SPEC_NPY)
        return spec_fail(AX_STATUS_BAD_ARGUMENT, options->name, spec,
                         "only a .csv or .npy file can be read as features without labels");
    if (options->labels)
        return spec_fail(AX_STATUS_BAD_ARGUMENT, options->name, spec,
                         "features without labels, but a labels file (%s) is given",
                         options->labels);
    return AX_STATUS_OK;
}

/* The common path of the ax_dataset_open forms: find, read, check. */
static ax_status open_spec(const char *spec, const ax_data_options *given, shard_request *shard,
                           ax_dataset **out)
{
    *out = NULL;
    ax_data_options options;
    AX_TRY(read_options(given, &options));
    if (shard && (shard->size < 1 || shard->rank < 0 || shard->rank >= shard->size))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "rank %d of %d is not a rank (0 <= rank < size)",
                       shard->rank, shard->size);
    spec_target target;
    AX_TRY(find_target(spec, &options, &target));
    AX_TRY(check_unlabeled(spec, &options, &target));
    if (target.kind != SPEC_BATCHES && (options.stream || options.crop || options.mirror || options.mean))
        return spec_fail(AX_STATUS_BAD_ARGUMENT, options.name, spec,
                         "streaming, crops, mirroring and a mean image are for batches:DIR (axon "
                         "prep's output)");
    if (target.kind == SPEC_BATCHES && !options.stream &&
        (options.crop || options.mirror || options.mean))
        return spec_fail(AX_STATUS_BAD_ARGUMENT, options.name, spec,
                         "crops, mirroring and a mean image are made as batches are streamed; "
                         "they need the set streamed (ax_data_options.stream; axon train streams "
                         "for mini-batches in one process without --val-split)");
    ax_status status = read_target(&target, &options, shard, out);
    if (status != AX_STATUS_OK) {
        ax_dataset_free(*out);
        *out = NULL;
        return status;
    }
    status = ax_dataset_check_finite(*out);
    if (status == AX_STATUS_OK && (shard ? shard->total : (*out)->rows) == 0)
        status = spec_fail(AX_STATUS_BAD_DATA, options.name, spec, "no rows");
    else if (status != AX_STATUS_OK)
        status = name_failure(status, (*out)->source);
    if (status != AX_STATUS_OK) {
        ax_dataset_free(*out);
        *out = NULL;
    }
    return status;
}

ax_status ax_dataset_check_spec(const char *spec, const ax_data_options *options)
{
    ax_data_options resolved;
    AX_TRY(read_options(options, &resolved));
    spec_target target;
    AX_TRY(find_target(spec, &resolved, &target));
    return check_unlabeled(spec, &resolved, &target);
}

ax_status ax_dataset_count_columns(const char *spec, const ax_data_options *options,
                                   int64_t *columns)
{
    *columns = 0;
    ax_data_options resolved;
    AX_TRY(read_options(options, &resolved));
    spec_target target;
    AX_TRY(find_target(spec, &resolved, &target));
    if (target.kind == SPEC_CSV)
        return name_failure(ax_csv_count_columns(target.path, &resolved.csv, columns),
                            target.path);
    if (target.kind == SPEC_NPY)
        return name_failure(ax_npy_count_columns(target.path, columns), target.path);
    return spec_fail(AX_STATUS_UNSUPPORTED, resolved.name, spec,
                     "columns are counted in .csv and .npy files only");
}

ax_status ax_dataset_open(const char *spec, const ax_data_options *options, ax_dataset **out)
{
    return open_spec(spec, options, NULL, out);
}

ax_status ax_dataset_open_shard(const char *spec, const ax_data_options *options, int rank,
                                int size, ax_dataset **out, int64_t *total)
{
    shard_request shard = {.rank = rank, .size = size};
    ax_status status = open_spec(spec, options, &shard, out);
    *total = status == AX_STATUS_OK ? shard.total : 0;
    return status;
}

ax_status ax_dataset_open_split_shards(const char *spec, const ax_data_options *options,
                                       double fraction, uint64_t seed, int rank, int size,
                                       ax_dataset **train, ax_dataset **holdout, int64_t totals[2])
{
    *train = *holdout = NULL;
    totals[0] = totals[1] = 0;
    if (!(fraction > 0.0 && fraction < 1.0))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "the split fraction must be between 0 and 1, not %g",
                       fraction);
    ax_data_options resolved;
    AX_TRY(read_options(options, &resolved));
    resolved.part = AX_DATA_PART_TRAIN; /* a validation split is drawn from training data */
    shard_request shard = {.rank = rank, .size = size, .fraction = fraction, .seed = seed};
    ax_dataset *span = NULL;
    AX_TRY(open_spec(spec, &resolved, &shard, &span));
    ax_status status = ax_dataset_split_shards(span, shard.first, shard.total, fraction, seed,
                                               rank, size, train, holdout);
    ax_dataset_free(span);
    if (status != AX_STATUS_OK)
        return status;
    totals[1] = (int64_t)llround(fraction * (double)shard.total);
    totals[0] = shard.total - totals[1];
    return AX_STATUS_OK;
}

ax_status ax_dataset_count(const char *spec, const ax_data_options *options, int64_t *rows)
{
    *rows = 0;
    ax_data_options resolved;
    AX_TRY(read_options(options, &resolved));
    spec_target target;
    AX_TRY(find_target(spec, &resolved, &target));
    const char *path = target.path;
    ax_csv_options csv = resolved.csv;
    csv.scale = resolved.scale;
    ax_status status = AX_STATUS_OK;
    switch (target.kind) {
    case SPEC_SYNTH:
        *rows = synth_part_rows(&resolved);
        return AX_STATUS_OK;
    case SPEC_BATCHES:
        status = ax_dataset_count_batches(path, rows);
        break;
    case SPEC_IDX:
        status = ax_dataset_count_idx_dir(path, resolved.part == AX_DATA_PART_TEST, rows);
        break;
    case SPEC_CSV:
        status = ax_dataset_count_csv(path, &csv, rows);
        break;
    case SPEC_NPY:
        status = ax_dataset_count_npy(path, rows);
        break;
    }
    return status == AX_STATUS_OK ? status : name_failure(status, path);
}

bool ax_dataset_spec_has_test_part(const char *spec)
{
    char path[4096];
    if (!spec || !spec[0] || strncmp(spec, "synth:", 6) == 0)
        return false;
    if (exists(spec))
        snprintf(path, sizeof path, "%s", spec);
    else if (!installed_path(spec, path, sizeof path))
        return false;
    return is_directory(path) && idx_part_present(path, AX_DATA_PART_TEST);
}
