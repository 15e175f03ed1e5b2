/* data_source.h: turning a --data or --test argument into a dataset through
 * the library's ax_dataset_open (the spec forms are listed in axon.h, "data
 * specs"):
 *
 *   fashion-mnist        /usr/share/datasets/fashion-mnist (any NAME there works;
 *                        $AXON_DATASETS replaces /usr/share/datasets)
 *   DIR                  a folder of MNIST-format IDX files: train-* for
 *                        training, t10k-* as the test set
 *   FILE.csv             one row per line, the label in column --label-column
 *   FILE.npy             NumPy features; labels from --labels FILE.npy (or
 *                        --test-labels for --test), else the first column
 *   batches:DIR          the output of axon prep: pixels / 255, labels from
 *                        its batches (docs/prep.md)
 *   synth:linear         TMVA's regression benchmark: --rows x --features from N(0,1),
 *                        target x . w; as a test set, the --rows/5 rows that
 *                        follow in the same stream (the same w)
 *
 * Every dataset is checked for NaN and Inf before it is used. */
#ifndef AXON_CLI_DATA_SOURCE_H
#define AXON_CLI_DATA_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "axon.h"
#include "options.h"

/* The option-table entries every subcommand that reads data includes. */
#define DATA_SOURCE_OPTIONS                                                                   \
    {"label-column", CLI_INT, "N", "0",                                                       \
     "CSV: 0-based column holding the label; -1 = the last column"},                          \
    {"header", CLI_FLAG, NULL, NULL, "CSV: the first line holds column names; skip it"},     \
    {"delimiter", CLI_STRING, "C", ",", "CSV: the field separator, one character or 'tab'"}, \
    {"regression", CLI_FLAG, NULL, NULL,                                                      \
     "CSV: the label column is a number to predict, not a class"},                            \
    {"scale", CLI_NUMBER, "X", "1",                                                           \
     "multiply every feature by X, e.g. 1/255 for 0..255 pixels\n"                            \
     "(IDX folders are already scaled to [0, 1])"},                                           \
    {"labels", CLI_STRING, "FILE", NULL, ".npy: labels (integers) or targets of --data"},     \
    {"test-labels", CLI_STRING, "FILE", NULL, ".npy: labels or targets of --test"},          \
    {"rows", CLI_INT, "N", "500000", "synth:linear: number of rows"},                        \
    {"features", CLI_INT, "N", "20", "synth:linear: number of features"}

/* batches:DIR streamed (axon train): docs/cli.md, "Streamed batches". */
#define DATA_STREAM_OPTIONS                                                                   \
    {"stream", CLI_STRING, "auto|on|off", "auto",                                             \
     "batches:DIR: read the batch files as training uses them (two files in\n"                \
     "memory at most) instead of loading the set whole; auto streams where it\n"             \
     "can (mini-batches, one process, no --val-split)"},                                    \
    {"crop", CLI_INT, "N", "0",                                                               \
     "streamed batches: train on random N x N crops, evaluate on the centre\n"                \
     "crop (cuda-convnet2's augmentation); 0 = whole images"},                               \
    {"mirror", CLI_FLAG, NULL, NULL,                                                          \
     "streamed batches: mirror training images left-right at random"},                       \
    {"lighting", CLI_NUMBER, "SIGMA", "0",                                                    \
     "streamed RGB batches: AlexNet's lighting noise, each training image's\n"               \
     "colours shifted along meta.json's color_pca by N(0, SIGMA) draws (0.1\n"               \
     "in the paper); 0 = none"},                                                             \
    {"subtract-mean", CLI_FLAG, NULL, NULL,                                                   \
     "streamed batches: subtract --data's mean.npy (axon prep's mean image)\n"               \
     "from every image, --test's too, before the scaling by 1/255"},                         \
    {"mean", CLI_STRING, "FILE", NULL,                                                        \
     "streamed batches: as --subtract-mean with the mean image FILE, e.g. the\n"             \
     "training set's mean.npy when evaluating another set"}

typedef enum stream_mode { STREAM_AUTO, STREAM_ON, STREAM_OFF } stream_mode;

typedef enum data_part {
    DATA_PART_TRAIN, /* an IDX folder's train-* files */
    DATA_PART_TEST,  /* an IDX folder's t10k-* files */
} data_part;

typedef struct data_settings {
    ax_csv_options csv;
    double scale;
    const char *labels;       /* --labels, or NULL */
    const char *test_labels;  /* --test-labels, or NULL */
    int64_t synth_rows;
    int64_t synth_features;
    uint64_t seed;            /* synth:linear draws from this */
    /* DATA_STREAM_OPTIONS (data_stream_settings_read); stream is decided by
     * the subcommand from stream_mode. */
    stream_mode stream_mode;
    bool stream;
    int64_t crop;
    bool mirror;
    double lighting; /* --lighting SIGMA, 0: none */
    int views; /* --views of eval and predict: 1 or 10 (0 counts as 1) */
    bool subtract_mean;
    char mean[4200];          /* --data's mean.npy with --subtract-mean, else "" */
    bool unlabeled;           /* CSV/.npy: every column a feature, no labels (axon predict) */
} data_settings;

/* Reads DATA_STREAM_OPTIONS (after data_settings_read) for --data spec;
 * false after printing an error. */
bool data_stream_settings_read(const cli_args *args, const char *spec, data_settings *settings);

/* Reads --views of eval and predict into settings->views (after
 * data_stream_settings_read): 1, or 10 with --crop of streamed batches;
 * false after printing an error. */
bool data_views_read(const cli_args *args, data_settings *settings);

/* Reads the DATA_SOURCE_OPTIONS (and --seed) from args; false after printing
 * a usage message. */
bool data_settings_read(const cli_args *args, data_settings *settings);

/* Loads spec (the value of `option`, "--data" or "--test") into *out:
 * labels_path is the .npy labels file (or NULL), part picks an IDX folder's
 * train or t10k files, and synth:linear as a test set (part TEST) is the
 * --rows/5 rows drawn after the training rows. Returns CLI_EXIT_OK or, after
 * printing "axon: ..." to stderr, CLI_EXIT_RUNTIME (unreadable or bad data) or
 * CLI_EXIT_USAGE (a spec that names no known kind of data). */
int data_source_load(const char *option, const char *spec, const char *labels_path,
                     data_part part, const data_settings *settings, ax_dataset **out);

/* The columns of a .csv or .npy spec (label column included), reading only its first
 * line or header: CLI_EXIT_OK with *columns, CLI_EXIT_OK with *columns = 0 for a kind of
 * data that has no columns to count (an IDX folder, batches:DIR, synth:linear), or an
 * exit status after printing why (a missing or damaged file). */
int data_source_count_columns(const char *option, const char *spec, const data_settings *settings,
                              int64_t *columns);

/* data_source_load for rank (of size ranks): only rows [⌊rank N/size⌋,
 * ⌊(rank+1) N/size⌋) of the N rows of spec, read through the library's row
 * range loaders so that the other rows are never held (synth:linear is drawn
 * whole, then cut); *total gets N. The dataset keeps the whole set's classes. */
int data_source_load_shard(const char *option, const char *spec, const char *labels_path,
                           data_part part, const data_settings *settings, int rank, int size,
                           ax_dataset **out, int64_t *total);

/* A --val-split under mpirun: rank's shards of both parts of
 * ax_dataset_split(whole set of spec, fraction, seed), the same rows as
 * splitting the whole set and sharding each part, read through the row range
 * loaders: only the span of rows that holds the two shards (about N/size
 * rows) is read and held. totals gets the rows of the whole parts. */
int data_source_load_split_shards(const char *option, const char *spec, const char *labels_path,
                                  const data_settings *settings, int rank, int size,
                                  double fraction, uint64_t seed, ax_dataset **train,
                                  ax_dataset **holdout, int64_t totals[2]);

/* The shard of rank (of size ranks) in rows rows: [*first, *end), contiguous
 * and in rank order, sizes differing by at most one (docs/mpi.md). */
void data_shard_bounds(int64_t rows, int rank, int size, int64_t *first, int64_t *end);
/* Replaces *dataset by a copy of its rows [first, end) (possibly none),
 * freeing the whole; returns CLI_EXIT_OK or CLI_EXIT_RUNTIME after printing
 * why (out of memory). */
int data_shard(ax_dataset **dataset, int64_t first, int64_t end);

/* True when spec is an IDX folder that also holds the t10k test files. */
bool data_source_has_test_part(const char *spec);

/* Where dataset came from for messages: its source, or spec for a set the
 * command line assembled itself (synth:linear's test rows). */
const char *data_name(const ax_dataset *dataset, const char *spec);

/* "60000 rows, 784 features, 10 classes" */
void data_describe(const ax_dataset *dataset, char *text, size_t capacity);

#endif
