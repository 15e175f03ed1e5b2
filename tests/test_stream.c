/* test_stream.c: batches:DIR streamed (src/data/stream.c) against the same
 * batches loaded whole (src/data/batches.c), on sets written here in axon
 * prep's layout (meta.json, batch_NNNNN.npy uint8 (k, S, S, C),
 * batch_NNNNN_labels.npy int32, mean.npy float32 (S, S, C)):
 *   - memory: training's peak resident size grows by less than one float32
 *     copy of the smaller set when the number of batch files grows tenfold
 *     (ru_maxrss of child processes, forked before any OpenMP thread);
 *   - the same weights bit for bit as the set loaded whole, unshuffled over
 *     three epochs (float32 and float64, a batch that spans files), and
 *     shuffled for one epoch against the whole set put in the stream's
 *     order; the test set's evaluation streamed equals the whole one's;
 *   - the shuffle: each pass is a permutation of all rows, drawn from the
 *     seed and the epoch (two runs of one seed give the same weights);
 *   - augmentation: a training row is a crop of its image at an offset in
 *     range, mirrored or not (about half are), the evaluation row the
 *     centre crop; the mean image is subtracted before the 1/255;
 *   - lighting noise (--lighting): a training row lit differs from the
 *     same row unlit by one (r, g, b) shift over all its pixels, whose
 *     coordinates along meta.json's colour components, over their stdevs
 *     and sigma, are standard normal draws (mean and spread over the rows);
 *     the same (seed, epoch) gives the same rows bit for bit, another epoch
 *     other shifts, evaluation rows none; refused without color_pca or on
 *     grey images;
 *   - bad files: a batch file missing, truncated or of another shape is
 *     refused at opening naming the file and its place in meta.json; one
 *     truncated during training stops it naming the file, the epoch
 *     checkpoints stay and PREFIX.interrupted is written, from which the run
 *     resumes once the file is mended to the uninterrupted run's weights. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "data/dataset.h"
#include "data/stream.h"
#include "test_util.h"

static char work[512];

static uint64_t random_state = 17;
static uint64_t next_random(void)
{
    return test_random_next(&random_state);
}

/* A .npy file of version 1.0: the header padded to a multiple of 64. */
static void write_npy(const char *path, const char *descr, const int64_t *shape, int dims,
                      const void *data, size_t bytes)
{
    char header[256], shape_text[128] = "";
    int at = 0;
    for (int d = 0; d < dims; d++)
        at += snprintf(shape_text + at, sizeof shape_text - (size_t)at, "%lld,%s",
                       (long long)shape[d], d + 1 < dims ? " " : "");
    if (dims > 1) /* (3,) keeps its comma, (2, 3) loses the last one */
        shape_text[at - 1] = '\0';
    int length = snprintf(header, sizeof header,
                          "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr,
                          shape_text);
    int total = 10 + length + 1;
    int padded = (total + 63) / 64 * 64;
    memset(header + length, ' ', (size_t)(padded - total));
    header[padded - 10 - 1] = '\n';
    FILE *file = fopen(path, "wb");
    CHECK(file != NULL);
    if (!file)
        return;
    const uint16_t header_length = (uint16_t)(padded - 10);
    fwrite("\x93NUMPY\x01\x00", 1, 8, file);
    fputc(header_length & 0xff, file);
    fputc(header_length >> 8, file);
    fwrite(header, 1, (size_t)header_length, file);
    fwrite(data, 1, bytes, file);
    fclose(file);
}

typedef struct set_shape {
    int files, per_file, side, channels, classes;
    bool color_pca; /* meta.json gets LIGHT_STDEVS and LIGHT_VECTORS */
} set_shape;

static const double LIGHT_STDEVS[3] = {40, 12, 3};
static const double LIGHT_VECTORS[3][3] = {{0.6, 0.8, 0}, {-0.8, 0.6, 0}, {0, 0, 1}};

/* Images whose first channel tells the class apart (the rest is noise):
 * what a small network can learn in a few epochs. */
static void write_batch(const char *dir, int b, const set_shape *shape, int side, int images)
{
    const int64_t pixels = (int64_t)side * side * shape->channels;
    unsigned char *data = malloc((size_t)(images * pixels) + 1);
    int32_t *labels = malloc((size_t)images * sizeof *labels + 1);
    for (int i = 0; i < images; i++) {
        labels[i] = (int32_t)(next_random() % (uint64_t)shape->classes);
        for (int64_t p = 0; p < pixels; p++) {
            unsigned value = (unsigned)(next_random() % 96);
            if (p % shape->channels == 0)
                value += 60u * (unsigned)labels[i];
            data[i * pixels + p] = (unsigned char)(value > 255 ? 255 : value);
        }
    }
    char path[2048];
    const int64_t data_shape[4] = {images, side, side, shape->channels};
    snprintf(path, sizeof path, "%s/batch_%05d.npy", dir, b);
    write_npy(path, "|u1", data_shape, 4, data, (size_t)(images * pixels));
    snprintf(path, sizeof path, "%s/batch_%05d_labels.npy", dir, b);
    const int64_t label_shape[1] = {images};
    write_npy(path, "<i4", label_shape, 1, labels, (size_t)images * sizeof *labels);
    free(data);
    free(labels);
}

static void make_set(const char *dir, const set_shape *shape)
{
    mkdir(dir, 0755);
    char path[2048];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    FILE *meta = fopen(path, "w");
    CHECK(meta != NULL);
    if (!meta)
        return;
    fprintf(meta, "{\n  \"format\": \"axon-prep\",\n  \"version\": 1,\n  \"image_size\": %d,\n"
                  "  \"channels\": %d,\n  \"mean\": \"mean.npy\",\n",
            shape->side, shape->channels);
    if (shape->color_pca)
        fprintf(meta, "  \"color_pca\": {\"stdevs\": [%g, %g, %g], \"eigenvectors\": [[%g, %g, %g], "
                      "[%g, %g, %g], [%g, %g, %g]]},\n", LIGHT_STDEVS[0], LIGHT_STDEVS[1],
                LIGHT_STDEVS[2], LIGHT_VECTORS[0][0], LIGHT_VECTORS[0][1], LIGHT_VECTORS[0][2],
                LIGHT_VECTORS[1][0], LIGHT_VECTORS[1][1], LIGHT_VECTORS[1][2],
                LIGHT_VECTORS[2][0], LIGHT_VECTORS[2][1], LIGHT_VECTORS[2][2]);
    fprintf(meta, "  \"labels\": [");
    for (int c = 0; c < shape->classes; c++)
        fprintf(meta, "%s\"class%d\"", c ? ", " : "", c);
    fprintf(meta, "],\n  \"batches\": [");
    for (int b = 0; b < shape->files; b++) {
        fprintf(meta, "%s\n    {\"data\": \"batch_%05d.npy\", \"labels\": \"batch_%05d_labels.npy\", "
                      "\"images\": %d}", b ? "," : "", b, b, shape->per_file);
        write_batch(dir, b, shape, shape->side, shape->per_file);
    }
    fprintf(meta, "\n  ]\n}\n");
    fclose(meta);
    const int64_t pixels = (int64_t)shape->side * shape->side * shape->channels;
    float *mean = malloc((size_t)pixels * sizeof *mean);
    for (int64_t p = 0; p < pixels; p++)
        mean[p] = (float)(next_random() % 25500) / 100.0f;
    const int64_t mean_shape[3] = {shape->side, shape->side, shape->channels};
    snprintf(path, sizeof path, "%s/mean.npy", dir);
    write_npy(path, "<f4", mean_shape, 3, mean, (size_t)pixels * sizeof *mean);
    free(mean);
}

static ax_dataset *open_set(const char *dir, bool stream, int64_t crop, bool mirror,
                            const char *mean)
{
    char spec[2048];
    snprintf(spec, sizeof spec, "batches:%s", dir);
    ax_data_options options = ax_data_options_defaults();
    options.stream = stream;
    options.crop = crop;
    options.mirror = mirror;
    options.mean = mean;
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_open(spec, &options, &data));
    return data;
}

static ax_net *make_net(int64_t features, int64_t classes, ax_precision precision)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = features;
    config.precision = precision;
    config.seed = 5;
    char layers[64];
    snprintf(layers, sizeof layers, "8:tanh,%lld:softmax", (long long)classes);
    CHECK_OK(ax_layers_parse(layers, &config));
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    return net;
}

static ax_train_config train_config(int epochs, bool shuffle, uint64_t seed)
{
    ax_train_config config = ax_train_defaults();
    config.optimizer = AX_OPTIMIZER_SGD;
    config.batch_size = 10;
    config.epochs = epochs;
    config.learning_rate = 0.05;
    config.momentum = 0.9;
    config.shuffle = shuffle;
    config.seed = seed;
    return config;
}

/* Trains a fresh network; returns its weights (malloc), *count of them. */
static double *train_weights(const ax_dataset *train, const ax_dataset *test,
                             const ax_train_config *config, ax_precision precision,
                             int64_t *count, ax_evaluation *evaluation)
{
    ax_net *net = make_net(ax_dataset_features(train), ax_dataset_classes(train), precision);
    if (!net)
        return NULL;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, train, NULL, test, config, &summary));
    *count = ax_net_parameter_count(net);
    double *weights = malloc((size_t)*count * sizeof *weights);
    ax_net_parameters_get(net, weights);
    if (evaluation && test)
        CHECK_OK(ax_net_evaluate(net, test, evaluation));
    ax_net_free(net);
    return weights;
}

static bool same_weights(const double *a, const double *b, int64_t count)
{
    return a && b && memcmp(a, b, (size_t)count * sizeof *a) == 0;
}

/* --------------------------------------------------------------- memory */

/* Peak resident KiB of a child that opens dir (streamed or whole) and
 * trains one epoch on it. */
static long child_peak_kib(const char *dir, bool stream)
{
    int pipe_ends[2];
    if (pipe(pipe_ends) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(pipe_ends[0]);
        long peak = -1;
        ax_dataset *data = open_set(dir, stream, 0, false, NULL);
        if (data && test_failures == 0) {
            ax_train_config config = train_config(1, true, 3);
            config.batch_size = 64;
            int64_t count = 0;
            double *weights = train_weights(data, NULL, &config, AX_PRECISION_F32, &count, NULL);
            free(weights);
            struct rusage usage;
            if (test_failures == 0 && getrusage(RUSAGE_SELF, &usage) == 0)
                peak = usage.ru_maxrss;
        }
        ax_dataset_free(data);
        if (write(pipe_ends[1], &peak, sizeof peak) != (ssize_t)sizeof peak)
            _exit(1);
        _exit(0);
    }
    close(pipe_ends[1]);
    long peak = -1;
    if (pid < 0 || read(pipe_ends[0], &peak, sizeof peak) != (ssize_t)sizeof peak)
        peak = -1;
    close(pipe_ends[0]);
    int wait_status = 0;
    if (pid > 0)
        waitpid(pid, &wait_status, 0);
    return peak;
}

static void test_memory_bounded(void)
{
    /* 64 images of 32 x 32 x 3 a file: 8 files are 1.5 MiB of pixels, 6 MiB as
     * float32; 80 files 15 MiB and 60 MiB. */
    const set_shape small = {.files = 8, .per_file = 64, .side = 32, .channels = 3, .classes = 3};
    set_shape large = small;
    large.files = 80;
    char small_dir[1024], large_dir[1024];
    snprintf(small_dir, sizeof small_dir, "%s/memory_8", work);
    snprintf(large_dir, sizeof large_dir, "%s/memory_80", work);
    make_set(small_dir, &small);
    make_set(large_dir, &large);
    const long streamed_small = child_peak_kib(small_dir, true);
    const long streamed_large = child_peak_kib(large_dir, true);
    const long whole_large = child_peak_kib(large_dir, false);
    CHECK(streamed_small > 0 && streamed_large > 0 && whole_large > 0);
    const long float_copy_small_kib = 8L * 64 * 32 * 32 * 3 * 4 / 1024; /* 6144 */
    printf("memory: peak RSS streamed 8 files %ld KiB, 80 files %ld KiB (+%ld); loaded whole, "
           "80 files %ld KiB\n",
           streamed_small, streamed_large, streamed_large - streamed_small, whole_large);
    /* Tenfold files: the streamed peak grows by less than the smaller set's
     * float32 copy (the row order, 8 bytes a row, is all that grows), while
     * the whole set's grows by its 60 MiB. Under AddressSanitizer freed
     * blocks are quarantined, not reused, so each file's fopen buffers add
     * to the peak: there the bound is not checked (the figures are shown). */
#if defined(__SANITIZE_ADDRESS__)
    printf("memory: AddressSanitizer build: the streamed bound is not checked\n");
#else
    CHECK(streamed_large - streamed_small < float_copy_small_kib);
#endif
    CHECK(whole_large - streamed_large > 5 * float_copy_small_kib);
}

/* ---------------------------------------------------- same as loaded whole */

static void test_same_as_whole(const char *dir, const char *test_dir)
{
    ax_dataset *whole = open_set(dir, false, 0, false, NULL);
    ax_dataset *streamed = open_set(dir, true, 0, false, NULL);
    ax_dataset *test_whole = open_set(test_dir, false, 0, false, NULL);
    ax_dataset *test_streamed = open_set(test_dir, true, 0, false, NULL);
    if (!whole || !streamed || !test_whole || !test_streamed)
        return;
    CHECK(ax_dataset_is_streamed(streamed) && !ax_dataset_is_streamed(whole));
    CHECK(ax_dataset_rows(streamed) == ax_dataset_rows(whole));
    CHECK(ax_dataset_features_data(streamed) == NULL);
    for (int p = 0; p < 2; p++) {
        const ax_precision precision = p ? AX_PRECISION_F64 : AX_PRECISION_F32;
        const ax_train_config config = train_config(3, false, 9);
        int64_t count = 0;
        ax_evaluation a = ax_evaluation_empty(), b = ax_evaluation_empty();
        double *from_whole = train_weights(whole, test_whole, &config, precision, &count, &a);
        double *from_stream = train_weights(streamed, test_streamed, &config, precision, &count, &b);
        CHECK(same_weights(from_whole, from_stream, count));
        CHECK(a.loss == b.loss && a.accuracy == b.accuracy && a.rows == b.rows);
        CHECK(a.accuracy > 0.9); /* it learned: the comparison is not of two untrained nets */
        ax_evaluation_free(&a);
        ax_evaluation_free(&b);
        free(from_whole);
        free(from_stream);
    }

    /* Shuffled: the whole set put in the order the stream's first epoch
     * takes, trained unshuffled. */
    const int64_t rows = ax_dataset_rows(whole), features = ax_dataset_features(whole);
    int64_t *order = malloc((size_t)rows * sizeof *order);
    const ax_stream_pass pass = {.training = true, .shuffle = true, .seed = 4, .epoch = 1};
    CHECK_OK(ax_batch_stream_order(streamed->stream, &pass, order));
    ax_dataset *reordered = NULL;
    CHECK_OK(ax_dataset_create(rows, features, ax_dataset_classes(whole), 0, &reordered));
    bool permutation = true;
    char *seen = calloc((size_t)rows, 1);
    int64_t in_place = 0;
    for (int64_t r = 0; r < rows; r++) {
        const int64_t from = order[r];
        permutation = permutation && from >= 0 && from < rows && !seen[from];
        if (!permutation)
            break;
        seen[from] = 1;
        in_place += from == r;
        memcpy(ax_dataset_features_data(reordered) + r * features,
               ax_dataset_features_data(whole) + from * features, (size_t)features * sizeof(float));
        ax_dataset_labels_data(reordered)[r] = ax_dataset_labels_data(whole)[from];
    }
    CHECK(permutation);
    CHECK(in_place < rows / 4); /* shuffled, not meta.json's order */
    const ax_stream_pass second = {.training = true, .shuffle = true, .seed = 4, .epoch = 2};
    int64_t *order2 = malloc((size_t)rows * sizeof *order2);
    CHECK_OK(ax_batch_stream_order(streamed->stream, &second, order2));
    CHECK(memcmp(order, order2, (size_t)rows * sizeof *order) != 0); /* each epoch its own */
    if (permutation) {
        int64_t count = 0;
        ax_train_config config = train_config(1, false, 4);
        double *expected = train_weights(reordered, NULL, &config, AX_PRECISION_F32, &count, NULL);
        config.shuffle = true;
        double *got = train_weights(streamed, NULL, &config, AX_PRECISION_F32, &count, NULL);
        CHECK(same_weights(expected, got, count));
        /* Determinism: the same seed twice, two epochs; another seed differs. */
        config.epochs = 2;
        double *first = train_weights(streamed, NULL, &config, AX_PRECISION_F32, &count, NULL);
        double *again = train_weights(streamed, NULL, &config, AX_PRECISION_F32, &count, NULL);
        config.seed = 5;
        double *other = train_weights(streamed, NULL, &config, AX_PRECISION_F32, &count, NULL);
        CHECK(same_weights(first, again, count));
        CHECK(!same_weights(first, other, count));
        free(expected);
        free(got);
        free(first);
        free(again);
        free(other);
    }
    free(seen);
    free(order);
    free(order2);
    ax_dataset_free(reordered);
    ax_dataset_free(whole);
    ax_dataset_free(streamed);
    ax_dataset_free(test_whole);
    ax_dataset_free(test_streamed);
}

/* --------------------------------------------------------- augmentation */

static void test_augmentation(const char *dir, const set_shape *shape)
{
    const int side = shape->side, channels = shape->channels, crop = side - 2;
    char mean_path[2048];
    snprintf(mean_path, sizeof mean_path, "%s/mean.npy", dir);
    ax_dataset *whole = open_set(dir, false, 0, false, NULL);
    ax_dataset *streamed = open_set(dir, true, crop, true, mean_path);
    if (!whole || !streamed)
        return;
    CHECK(ax_dataset_features(streamed) == (int64_t)crop * crop * channels);
    /* The mean image as the stream read it. */
    FILE *file = fopen(mean_path, "rb");
    const int64_t pixels = (int64_t)side * side * channels;
    float *mean = malloc((size_t)pixels * sizeof *mean);
    unsigned char start[10] = {0};
    CHECK(file && fread(start, 1, 10, file) == 10 &&
          fseek(file, 10 + (start[8] | start[9] << 8), SEEK_SET) == 0 &&
          fread(mean, sizeof *mean, (size_t)pixels, file) == (size_t)pixels);
    if (file)
        fclose(file);
    const int64_t rows = ax_dataset_rows(whole);
    int64_t *order = malloc((size_t)rows * sizeof *order);
    const float *images = ax_dataset_features_data(whole); /* p / 255 */
    for (int training = 0; training < 2; training++) {
        const ax_stream_pass pass = {.training = training, .shuffle = training, .seed = 8,
                                     .epoch = 3};
        CHECK_OK(ax_batch_stream_order(streamed->stream, &pass, order));
        CHECK_OK(ax_batch_stream_begin(streamed->stream, &pass));
        int64_t flipped = 0, matched = 0;
        for (int64_t r = 0; r < rows; r += 16) {
            const int64_t count = rows - r < 16 ? rows - r : 16;
            ax_dataset *window = NULL;
            CHECK_OK(ax_batch_stream_next(streamed->stream, count, &window));
            if (!window)
                break;
            for (int64_t i = 0; i < count; i++) {
                const int64_t source = order[r + i];
                const float *image = images + source * pixels, *got = window->feature_values +
                                                                      i * window->features;
                CHECK(window->labels[i] == ax_dataset_labels_data(whole)[source]);
                /* Which offset and flip give this row: exactly one must. */
                int found = 0;
                for (int top = 0; top <= side - crop; top++)
                    for (int left = 0; left <= side - crop; left++)
                        for (int flip = 0; flip < 2; flip++) {
                            bool same = true;
                            for (int y = 0; y < crop && same; y++)
                                for (int x = 0; x < crop && same; x++)
                                    for (int c = 0; c < channels && same; c++) {
                                        const int64_t at = ((int64_t)(top + y) * side + left +
                                                            (flip ? crop - 1 - x : x)) * channels + c;
                                        const float pixel = (float)(int)(image[at] * 255.0f + 0.5f);
                                        const float want = (pixel - mean[at]) * (1.0f / 255.0f);
                                        same = got[((int64_t)y * crop + x) * channels + c] == want;
                                    }
                            if (same) {
                                found++;
                                flipped += flip;
                                if (!training)
                                    CHECK(top == 1 && left == 1 && !flip); /* the centre */
                            }
                        }
                CHECK(found >= 1);
                matched += found >= 1;
            }
        }
        ax_batch_stream_end(streamed->stream);
        CHECK(matched == rows);
        if (training) /* about half mirrored (a symmetric crop would count twice: none here) */
            CHECK(flipped > rows / 4 && flipped < 3 * rows / 4);
    }
    free(order);
    free(mean);
    ax_dataset_free(whole);
    ax_dataset_free(streamed);
}

/* All rows of one pass of streamed into rows (rows, features). */
static void read_pass(ax_dataset *streamed, int training, int64_t epoch, float *rows)
{
    const ax_stream_pass pass = {.training = training, .shuffle = true, .seed = 8, .epoch = epoch};
    CHECK_OK(ax_batch_stream_begin(streamed->stream, &pass));
    const int64_t total = ax_dataset_rows(streamed), features = ax_dataset_features(streamed);
    for (int64_t r = 0; r < total; r += 16) {
        const int64_t count = total - r < 16 ? total - r : 16;
        ax_dataset *window = NULL;
        CHECK_OK(ax_batch_stream_next(streamed->stream, count, &window));
        if (!window)
            break;
        memcpy(rows + r * features, window->feature_values,
               (size_t)(count * features) * sizeof *rows);
    }
    ax_batch_stream_end(streamed->stream);
}

static ax_status open_lit(const char *dir, double lighting, const char *mean, ax_dataset **out)
{
    char spec[2048];
    snprintf(spec, sizeof spec, "batches:%s", dir);
    ax_data_options options = ax_data_options_defaults();
    options.stream = true;
    options.crop = 3;
    options.mirror = true;
    options.mean = mean;
    options.lighting = lighting;
    return ax_dataset_open(spec, &options, out);
}

/* The (r, g, b) shift of row r: lit - plain in pixel units, the same at
 * every pixel; false when it is not. */
static bool row_shift(const float *lit, const float *plain, int64_t features, double shift[3])
{
    for (int c = 0; c < 3; c++)
        shift[c] = ((double)lit[c] - plain[c]) * 255;
    for (int64_t k = 0; k < features; k++)
        if (fabs(((double)lit[k] - plain[k]) * 255 - shift[k % 3]) > 1e-3)
            return false;
    return true;
}

static void test_lighting(const char *dir, const char *grey_dir, const char *plain_dir)
{
    char mean_path[2048];
    snprintf(mean_path, sizeof mean_path, "%s/mean.npy", dir);
    const double sigma = 0.1;
    ax_dataset *plain = NULL, *lit = NULL;
    CHECK_OK(open_lit(dir, 0, mean_path, &plain));
    CHECK_OK(open_lit(dir, sigma, mean_path, &lit));
    if (!plain || !lit)
        return;
    const int64_t rows = ax_dataset_rows(lit), features = ax_dataset_features(lit);
    const size_t bytes = (size_t)(rows * features) * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes), *again = malloc(bytes), *other = malloc(bytes);
    read_pass(plain, 1, 3, a);
    read_pass(lit, 1, 3, b);
    read_pass(lit, 1, 3, again);
    read_pass(lit, 1, 4, other);
    CHECK(memcmp(b, again, bytes) == 0); /* (seed, epoch) decide it */
    double sum = 0, square = 0;
    int64_t constant = 0;
    for (int64_t r = 0; r < rows; r++) {
        double shift[3];
        constant += row_shift(b + r * features, a + r * features, features, shift);
        for (int i = 0; i < 3; i++) { /* the draw behind component i */
            double along = 0;
            for (int c = 0; c < 3; c++)
                along += LIGHT_VECTORS[i][c] * shift[c];
            const double z = along / (LIGHT_STDEVS[i] * sigma);
            sum += z;
            square += z * z;
        }
    }
    CHECK(constant == rows);
    const double n = 3.0 * (double)rows, mean = sum / n, spread = sqrt(square / n - mean * mean);
    /* 483 standard normal draws: mean within 4.4 of its 0.045 standard error */
    CHECK(fabs(mean) < 0.2 && spread > 0.8 && spread < 1.2);
    printf("lighting: %lld rows, draws' mean %.3f and spread %.3f\n", (long long)rows, mean, spread);
    /* Another epoch: other shifts (its rows come in another order too). */
    int64_t same = 0;
    for (int64_t r = 0; r < rows; r++)
        same += memcmp(other + r * features, b + r * features, (size_t)features * sizeof *b) == 0;
    CHECK(same == 0);
    /* Evaluation rows are not lit. */
    read_pass(plain, 0, 3, a);
    read_pass(lit, 0, 3, b);
    CHECK(memcmp(a, b, bytes) == 0);
    free(a);
    free(b);
    free(again);
    free(other);
    ax_dataset_free(plain);
    ax_dataset_free(lit);
    ax_dataset *refused = NULL;
    CHECK(open_lit(plain_dir, sigma, NULL, &refused) == AX_STATUS_BAD_ARGUMENT && !refused &&
          strstr(ax_error_message(), "no \"color_pca\""));
    CHECK(open_lit(grey_dir, sigma, NULL, &refused) == AX_STATUS_BAD_ARGUMENT && !refused &&
          strstr(ax_error_message(), "grey images"));
    CHECK(open_lit(dir, -1, NULL, &refused) == AX_STATUS_BAD_ARGUMENT && !refused);
}

/* ------------------------------------------------------------ bad files */

static void copy_set(const char *from, const char *to)
{
    char command[8192];
    snprintf(command, sizeof command, "rm -rf '%s' && cp -r '%s' '%s'", to, from, to);
    CHECK(system(command) == 0);
}

static void truncate_file(const char *path, long keep)
{
    CHECK(truncate(path, keep) == 0);
}

static void check_open_fails(const char *dir, const char *file_text, const char *place)
{
    char spec[2048];
    snprintf(spec, sizeof spec, "batches:%s", dir);
    ax_data_options options = ax_data_options_defaults();
    options.stream = true;
    ax_dataset *data = NULL;
    CHECK(ax_dataset_open(spec, &options, &data) == AX_STATUS_BAD_FILE);
    CHECK(data == NULL);
    const char *message = ax_error_message();
    if (!strstr(message, file_text) || !strstr(message, place)) {
        fprintf(stderr, "message lacks '%s' or '%s': %s\n", file_text, place, message);
        test_failures++;
    }
}

typedef struct truncator {
    char path[2048];
    int at_epoch;
} truncator;

static bool truncate_after_epoch(const ax_progress *progress, void *user)
{
    truncator *t = user;
    if (progress->epoch_done && progress->epoch == t->at_epoch)
        truncate_file(t->path, 200);
    return true;
}

static void test_bad_files(const char *dir, const set_shape *shape)
{
    char bad[1024], path[2048];
    snprintf(bad, sizeof bad, "%s/bad", work);

    copy_set(dir, bad);
    snprintf(path, sizeof path, "%s/batch_00003.npy", bad);
    CHECK(remove(path) == 0);
    check_open_fails(bad, "batch_00003.npy", "batch 4 of");

    copy_set(dir, bad);
    snprintf(path, sizeof path, "%s/batch_00005.npy", bad);
    truncate_file(path, 300);
    check_open_fails(bad, "batch_00005.npy", "batch 6 of");

    copy_set(dir, bad);
    snprintf(path, sizeof path, "%s/batch_00002_labels.npy", bad);
    truncate_file(path, 100);
    check_open_fails(bad, "batch_00002_labels.npy", "batch 3 of");

    copy_set(dir, bad); /* another image size in one file */
    write_batch(bad, 1, shape, shape->side + 1, shape->per_file);
    check_open_fails(bad, "batch_00001.npy", "batch 2 of");

    /* A file truncated while training runs: the epoch checkpoints stay,
     * PREFIX.interrupted records the batches done; mended, the run resumes
     * to the weights of a run that never stopped. */
    copy_set(dir, bad);
    ax_dataset *streamed = open_set(bad, true, 0, false, NULL);
    if (!streamed)
        return;
    char prefix[2048];
    snprintf(prefix, sizeof prefix, "%s/bad_run", work);
    ax_train_config config = train_config(3, true, 6);
    config.checkpoint_prefix = prefix;
    config.checkpoint_every = 1;
    truncator cut = {.at_epoch = 1};
    snprintf(cut.path, sizeof cut.path, "%s/batch_00004.npy", bad);
    config.progress = truncate_after_epoch;
    config.progress_user = &cut;
    config.progress_interval = 1e9;
    ax_net *net = make_net(ax_dataset_features(streamed), ax_dataset_classes(streamed),
                           AX_PRECISION_F32);
    ax_train_summary summary = ax_train_summary_empty();
    const ax_status status = ax_train(net, streamed, NULL, NULL, &config, &summary);
    CHECK(status == AX_STATUS_IO_ERROR || status == AX_STATUS_BAD_FILE);
    const char *message = ax_error_message();
    if (!strstr(message, "batch_00004.npy") || !strstr(message, "batch 5 of") ||
        !strstr(message, "epoch 2") || !strstr(message, ".interrupted.safetensors")) {
        fprintf(stderr, "unexpected message: %s\n", message);
        test_failures++;
    }
    ax_net_free(net);
    ax_dataset_free(streamed);

    char checkpoint[3072];
    snprintf(checkpoint, sizeof checkpoint, "%s.epoch-000001.safetensors", prefix);
    ax_net *saved = NULL;
    ax_train_config saved_config;
    ax_train_state *state = NULL;
    CHECK_OK(ax_checkpoint_load(checkpoint, &saved, &saved_config, &state));
    ax_net_free(saved);
    ax_train_state_free(state);
    state = NULL;
    saved = NULL;

    copy_set(dir, bad); /* mended */
    streamed = open_set(bad, true, 0, false, NULL);
    snprintf(checkpoint, sizeof checkpoint, "%s.interrupted.safetensors", prefix);
    CHECK_OK(ax_checkpoint_load(checkpoint, &saved, &saved_config, &state));
    if (saved && streamed) {
        saved_config.checkpoint_prefix = NULL;
        saved_config.checkpoint_every = 0;
        saved_config.progress = NULL;
        CHECK_OK(ax_train(saved, streamed, NULL, NULL, &saved_config, &summary));
        const int64_t count = ax_net_parameter_count(saved);
        double *resumed = malloc((size_t)count * sizeof *resumed);
        ax_net_parameters_get(saved, resumed);
        ax_train_config plain = train_config(3, true, 6);
        int64_t plain_count = 0;
        double *expected = train_weights(streamed, NULL, &plain, AX_PRECISION_F32, &plain_count,
                                         NULL);
        CHECK(plain_count == count && same_weights(expected, resumed, count));
        free(resumed);
        free(expected);
    }
    ax_net_free(saved);
    ax_train_state_free(state);
    ax_dataset_free(streamed);

    /* What cannot be streamed is refused, saying so. */
    streamed = open_set(dir, true, 0, false, NULL);
    if (streamed) {
        ax_net *cg_net = make_net(ax_dataset_features(streamed), ax_dataset_classes(streamed),
                                  AX_PRECISION_F32);
        ax_train_config cg = train_config(1, true, 1);
        cg.optimizer = AX_OPTIMIZER_CG;
        cg.batch_size = 0;
        CHECK_FAILS(ax_train(cg_net, streamed, NULL, NULL, &cg, &summary), AX_STATUS_UNSUPPORTED,
                    "full batch");
        ax_dataset *part = NULL, *rest = NULL;
        CHECK_FAILS(ax_dataset_split(streamed, 0.1, 1, &part, &rest), AX_STATUS_UNSUPPORTED,
                    "streamed");
        double loss = 0.0;
        CHECK_FAILS(ax_net_loss_gradient(cg_net, streamed, 0, 1, NULL, &loss, NULL),
                    AX_STATUS_UNSUPPORTED, "streamed");
        ax_net_free(cg_net);
    }
    ax_dataset_free(streamed);
    char spec[2048];
    snprintf(spec, sizeof spec, "batches:%s", dir);
    ax_data_options options = ax_data_options_defaults();
    options.crop = 3;
    ax_dataset *data = NULL;
    CHECK_FAILS(ax_dataset_open(spec, &options, &data), AX_STATUS_BAD_ARGUMENT, "streamed");
    options.stream = true;
    options.crop = shape->side + 1;
    CHECK_FAILS(ax_dataset_open(spec, &options, &data), AX_STATUS_BAD_ARGUMENT, "does not fit");
}

int main(int argc, char **argv)
{
    snprintf(work, sizeof work, "%s", argc > 1 ? argv[1] : "stream_work");
    char command[2048];
    snprintf(command, sizeof command, "rm -rf '%s' && mkdir -p '%s'", work, work);
    if (system(command) != 0) {
        fprintf(stderr, "cannot make %s\n", work);
        return 1;
    }
    /* First, before this process starts any OpenMP thread: forks. */
    test_memory_bounded();

    /* 23 files of 7 images: a batch of 10 spans two or three files. */
    const set_shape shape = {.files = 23, .per_file = 7, .side = 5, .channels = 3, .classes = 3};
    const set_shape test_shape = {.files = 3, .per_file = 11, .side = 5, .channels = 3,
                                  .classes = 3};
    char dir[1024], test_dir[1024];
    snprintf(dir, sizeof dir, "%s/set", work);
    snprintf(test_dir, sizeof test_dir, "%s/test_set", work);
    make_set(dir, &shape);
    make_set(test_dir, &test_shape);
    test_same_as_whole(dir, test_dir);
    test_augmentation(dir, &shape);
    set_shape lit_shape = shape, grey_shape = shape;
    lit_shape.color_pca = true;
    grey_shape.channels = 1;
    grey_shape.color_pca = true;
    char lit_dir[1024], grey_dir[1024];
    snprintf(lit_dir, sizeof lit_dir, "%s/lit_set", work);
    snprintf(grey_dir, sizeof grey_dir, "%s/grey_set", work);
    make_set(lit_dir, &lit_shape);
    make_set(grey_dir, &grey_shape);
    test_lighting(lit_dir, grey_dir, dir);
    test_bad_files(dir, &shape);
    return test_finish("test_stream");
}
