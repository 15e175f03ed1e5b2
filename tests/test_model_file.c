/* test_model_file.c: models survive a save and load exactly (float32 and
 * float64), and a model file that does not match its own metadata is
 * refused with a message naming the file and the tensor. Also the training
 * entry point's refusals: data that does not fit the network, impossible
 * options, and divergence. */
#include "test_util.h"

#include <unistd.h>

#include "io/safetensors.h"

static char folder[] = "/tmp/axon_model_test_XXXXXX";

static ax_dataset *blobs(int64_t rows, int64_t features, int64_t classes, uint64_t seed)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_create(rows, features, classes, 0, &data));
    float *x = ax_dataset_features_data(data);
    int32_t *labels = ax_dataset_labels_data(data);
    uint64_t state = seed * 2654435761u + 1;
    for (int64_t r = 0; r < rows; r++) {
        labels[r] = (int32_t)(r % classes);
        for (int64_t c = 0; c < features; c++) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            double noise = (double)(state >> 11) / 9007199254740992.0 - 0.5;
            x[r * features + c] = (float)(noise + (c % classes == labels[r] ? 1.0 : 0.0));
        }
    }
    return data;
}

static ax_net *make_net(ax_precision precision, const char *layout, int64_t inputs)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = inputs;
    config.precision = precision;
    config.seed = 3;
    CHECK_OK(ax_layers_parse(layout, &config));
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    return net;
}

static void test_round_trip(ax_precision precision)
{
    ax_dataset *data = blobs(64, 6, 3, 1);
    ax_net *net = make_net(precision, "7:tanh,5:sigmoid,3:softmax", 6);
    ax_train_config training = ax_train_defaults();
    training.epochs = 2;
    training.batch_size = 16;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, data, NULL, NULL, &training, &summary));

    char path[256];
    snprintf(path, sizeof path, "%s/model_%d.safetensors", folder, (int)precision);
    CHECK_OK(ax_net_save(net, path));
    ax_net *loaded = NULL;
    CHECK_OK(ax_net_load(path, precision, &loaded));
    if (loaded) {
        const ax_net_config *a = ax_net_config_get(net), *b = ax_net_config_get(loaded);
        CHECK(a->layer_count == b->layer_count && a->input_width == b->input_width);
        CHECK(a->loss == b->loss);
        for (int l = 0; l < a->layer_count; l++)
            CHECK(a->layers[l].kind == b->layers[l].kind &&
                  a->layers[l].dense.units == b->layers[l].dense.units &&
                  a->layers[l].dense.activation == b->layers[l].dense.activation);
        float before[64 * 3], after[64 * 3];
        CHECK_OK(ax_net_predict(net, ax_dataset_features_data(data), 64, before));
        CHECK_OK(ax_net_predict(loaded, ax_dataset_features_data(data), 64, after));
        CHECK(memcmp(before, after, sizeof before) == 0);
    }
    /* The file is plain safetensors with PyTorch's names and shapes. */
    ax_safetensors_file *file = NULL;
    CHECK_OK(ax_safetensors_read(path, &file));
    if (file) {
        const ax_safetensors_tensor *w = ax_safetensors_find(file, "layers.0.weight");
        CHECK(w && w->rank == 2 && w->shape[0] == 7 && w->shape[1] == 6);
        CHECK(w && w->dtype == (precision == AX_PRECISION_F64 ? AX_SAFETENSORS_F64 : AX_SAFETENSORS_F32));
        CHECK(ax_safetensors_metadata(file, "layers") &&
              strcmp(ax_safetensors_metadata(file, "layers"), "7:tanh,5:sigmoid,3:softmax") == 0);
        CHECK(ax_safetensors_metadata(file, "format_version") &&
              strcmp(ax_safetensors_metadata(file, "format_version"), "1") == 0);
        ax_safetensors_free(file);
    }
    ax_net_free(loaded);
    ax_net_free(net);
    ax_dataset_free(data);
}

/* Writes a model file from parts, for the refusal tests; version NULL: no
 * "format_version" (a file from before the field). */
static void write_versioned_model(const char *path, const char *layers, int64_t rows,
                                  int64_t cols, bool with_bias, double fill, const char *version)
{
    double weights[64], bias[8];
    for (int i = 0; i < 64; i++)
        weights[i] = fill;
    for (int i = 0; i < 8; i++)
        bias[i] = 0.5;
    ax_safetensors_tensor tensors[2] = {
        {.name = "layers.0.weight", .dtype = AX_SAFETENSORS_F64, .rank = 2, .shape = {rows, cols}, .data = weights},
        {.name = "layers.0.bias", .dtype = AX_SAFETENSORS_F64, .rank = 1, .shape = {rows}, .data = bias},
    };
    const char *keys[] = {"input_width", "layers", "format_version"};
    const char *values[] = {"4", layers, version};
    CHECK_OK(ax_safetensors_write(path, tensors, with_bias ? 2 : 1, keys, values,
                                  layers ? (version ? 3 : 2) : 0));
}

static void write_model(const char *path, const char *layers, int64_t rows, int64_t cols,
                        bool with_bias, double fill)
{
    write_versioned_model(path, layers, rows, cols, with_bias, fill, NULL);
}

static void test_refusals(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/bad.safetensors", folder);
    ax_net *net = NULL;

    /* Without "format_version" (files from before it): version 1. */
    write_model(path, "3:softmax", 3, 4, true, 0.1);
    CHECK_OK(ax_net_load(path, AX_PRECISION_F32, &net));
    ax_net_free(net);
    net = NULL;
    write_versioned_model(path, "3:softmax", 3, 4, true, 0.1, "1");
    CHECK_OK(ax_net_load(path, AX_PRECISION_F32, &net));
    ax_net_free(net);
    net = NULL;
    write_versioned_model(path, "3:softmax", 3, 4, true, 0.1, "2");
    CHECK_OK(ax_net_load(path, AX_PRECISION_F32, &net)); /* 2 added images; dense is the same */
    ax_net_free(net);
    net = NULL;
    write_versioned_model(path, "3:softmax", 3, 4, true, 0.1, "3");
    CHECK_FAILS(ax_net_load(path, AX_PRECISION_F32, &net), AX_STATUS_BAD_FILE,
                "model format version 3 is newer than this axon reads (up to 2)");
    write_versioned_model(path, "3:softmax", 3, 4, true, 0.1, "one");
    CHECK_FAILS(ax_net_load(path, AX_PRECISION_F32, &net), AX_STATUS_BAD_FILE,
                "metadata format_version 'one' is not a positive integer");

    write_model(path, NULL, 3, 4, true, 0.1);
    CHECK_FAILS(ax_net_load(path, AX_PRECISION_F32, &net), AX_STATUS_BAD_FILE, "is this an axon model?");
    write_model(path, "3:softmax", 3, 5, true, 0.1);
    CHECK_FAILS(ax_net_load(path, AX_PRECISION_F32, &net), AX_STATUS_BAD_FILE,
                "\"layers.0.weight\" should have shape (3, 4)");
    write_model(path, "3:softmax", 3, 4, false, 0.1);
    CHECK_FAILS(ax_net_load(path, AX_PRECISION_F32, &net), AX_STATUS_BAD_FILE, "holds 1 tensors but its layout needs 2");
    write_model(path, "3:bogus", 3, 4, true, 0.1);
    CHECK_FAILS(ax_net_load(path, AX_PRECISION_F32, &net), AX_STATUS_BAD_FILE, "unknown activation 'bogus'");
    write_model(path, "3:softmax", 3, 4, true, NAN);
    CHECK_FAILS(ax_net_load(path, AX_PRECISION_F32, &net), AX_STATUS_BAD_FILE, "NaN or infinite");
    CHECK_FAILS(ax_net_load("/nonexistent/model.safetensors", AX_PRECISION_F32, &net), AX_STATUS_BAD_FILE,
                "/nonexistent/model.safetensors");
    CHECK(net == NULL);
}

static void test_training_refusals(void)
{
    ax_dataset *data = blobs(40, 6, 3, 2);
    ax_net *narrow = make_net(AX_PRECISION_F32, "2:softmax", 6);
    ax_net *wide = make_net(AX_PRECISION_F32, "3:softmax", 5);
    ax_net *net = make_net(AX_PRECISION_F32, "8:relu,3:softmax", 6);
    ax_train_config training = ax_train_defaults();
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_FAILS(ax_train(narrow, data, NULL, NULL, &training, &summary), AX_STATUS_BAD_DATA,
                "has label 2 but the output layer has 2 units");
    CHECK_FAILS(ax_train(wide, data, NULL, NULL, &training, &summary), AX_STATUS_BAD_DATA,
                "6 features per row but the network's input width is 5");
    training.early_stop = 3;
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &training, &summary), AX_STATUS_BAD_ARGUMENT,
                "early stopping needs a validation set");
    training = ax_train_defaults();
    training.learning_rate = -1;
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &training, &summary), AX_STATUS_BAD_ARGUMENT,
                "learning rate must be positive");
    training = ax_train_defaults();
    training.dropout = 1.0;
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &training, &summary), AX_STATUS_BAD_ARGUMENT, "dropout");

    /* NaN in the data is named by row and column before any work. */
    ax_dataset_features_data(data)[13 * 6 + 4] = NAN;
    training = ax_train_defaults();
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &training, &summary), AX_STATUS_BAD_DATA,
                "row 14, feature 5 is NaN");
    ax_dataset_features_data(data)[13 * 6 + 4] = 0.0f;

    /* A learning rate far too large diverges and says so. */
    for (int64_t i = 0; i < 40 * 6; i++)
        ax_dataset_features_data(data)[i] *= 1e6f;
    training.learning_rate = 1e6;
    training.momentum = 0.0;
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &training, &summary), AX_STATUS_DIVERGED,
                "training diverged in epoch");
    ax_net_free(narrow);
    ax_net_free(wide);
    ax_net_free(net);
    ax_dataset_free(data);
}

static void test_split(void)
{
    ax_dataset *data = blobs(100, 4, 2, 3), *train = NULL, *holdout = NULL;
    CHECK_OK(ax_dataset_split(data, 0.2, 5, &train, &holdout));
    if (train && holdout) {
        CHECK(ax_dataset_rows(train) == 80 && ax_dataset_rows(holdout) == 20);
        /* Every source row lands in exactly one part (rows are distinct here). */
        double total = 0, parts = 0;
        for (int64_t i = 0; i < 100 * 4; i++)
            total += ax_dataset_features_data(data)[i];
        for (int64_t i = 0; i < 80 * 4; i++)
            parts += ax_dataset_features_data(train)[i];
        for (int64_t i = 0; i < 20 * 4; i++)
            parts += ax_dataset_features_data(holdout)[i];
        CHECK_NEAR(total, parts, 1e-9);
    }
    ax_dataset_free(train);
    ax_dataset_free(holdout);
    CHECK_FAILS(ax_dataset_split(data, 1.5, 5, &train, &holdout), AX_STATUS_BAD_ARGUMENT,
                "between 0 and 1");
    ax_dataset_free(data);
}

int main(void)
{
    if (!mkdtemp(folder)) {
        perror("mkdtemp");
        return 1;
    }
    test_round_trip(AX_PRECISION_F32);
    test_round_trip(AX_PRECISION_F64);
    test_refusals();
    test_training_refusals();
    test_split();
    char command[512];
    snprintf(command, sizeof command, "rm -rf '%s'", folder);
    if (system(command) != 0)
        fprintf(stderr, "could not remove %s\n", folder);
    return test_finish("test_model_file");
}
