/* test_memory_limits.c: sizes that cannot fit are refused before anything
 * is allocated, with AX_STATUS_OUT_OF_MEMORY and a message giving the
 * sizes: a network of absurd widths (ax_net_create), a batch of absurd rows
 * (ax_net_reserve), and a checkpoint whose metadata claims a layout its
 * file does not hold (ax_checkpoint_load). Input dropout's copy of the
 * inputs, which no size check can foresee (it is made at the first
 * forward pass), is refused when its allocation fails: the backend's alloc
 * is replaced by one that fails for that size alone. Under AddressSanitizer an
 * attempt to allocate these sizes aborts the test (allocation-size-too-big),
 * so the sanitizer build also proves that nothing was tried. Ordinary sizes
 * must still work, so the checks cannot pass by refusing everything. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/random.h"
#include "core/net.h"
#include "io/safetensors.h"
#include "test_util.h"

static ax_net_config layout(int64_t input, const char *layers, ax_precision precision)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = input;
    config.precision = precision;
    if (ax_layers_parse(layers, &config) != AX_STATUS_OK)
        fprintf(stderr, "layout %s: %s\n", layers, ax_error_message());
    return config;
}

static void test_network(void)
{
    ax_net *net = (ax_net *)1;
    /* 2^20 x 2^20 weights: 4 TiB of float32 weights, as many of gradients, 8 TiB of initial values. */
    ax_net_config wide = layout(1 << 20, "1048576:relu,1", AX_PRECISION_F32);
    CHECK_FAILS(ax_net_create(&wide, &net), AX_STATUS_OUT_OF_MEMORY,
                "the network 1048576-1048576:relu-1:identity: 1099513724929 parameters "
                "(weights and gradients in float32, 4096.0 GiB each, and their initial values in "
                "float64, 8192.0 GiB) needs 16384.0 GiB but only");
    ax_net_config_release(&wide);
    CHECK(net == NULL);
    CHECK(strstr(ax_error_message(), "GiB of memory is available") != NULL);

    /* The widest layers allowed, 2^24 each: 2^48 weights, float64 arenas. */
    net = (ax_net *)1;
    ax_net_config widest = layout(1 << 24, "16777216:tanh,16777216:relu,1", AX_PRECISION_F64);
    CHECK_FAILS(ax_net_create(&widest, &net), AX_STATUS_OUT_OF_MEMORY,
                "562950003752961 parameters (weights and gradients in float64");
    ax_net_config_release(&widest);
    CHECK(net == NULL);

    /* A real network still fits. */
    ax_net_config small = layout(784, "128:relu,10:softmax", AX_PRECISION_F32);
    CHECK_OK(ax_net_create(&small, &net));
    ax_net_config_release(&small);
    CHECK(net && ax_net_parameter_count(net) == 784 * 128 + 128 + 128 * 10 + 10);
    ax_net_free(net);
}

static void test_batch(void)
{
    ax_net *net = NULL;
    ax_net_config config = layout(4, "8:relu,2:softmax", AX_PRECISION_F32);
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    if (!net)
        return;
    /* 2^40 rows of (4 inputs + 2 x 8 deltas + 1 label + 8 + 2 outputs) x 4 bytes: 124 TiB. */
    CHECK_FAILS(ax_net_reserve_shuffled(net, (int64_t)1 << 40, true), AX_STATUS_OUT_OF_MEMORY,
                "the workspace for a batch of 1099511627776 rows (124 bytes per row) needs 126976.0 "
                "GiB but only");
    /* 2^60 rows: past what the size arithmetic may hold; refused the same way. */
    CHECK_FAILS(ax_net_reserve(net, (int64_t)1 << 60), AX_STATUS_OUT_OF_MEMORY,
                "the workspace for a batch of 1152921504606846976 rows");
    CHECK(net->workspace.capacity == 0);
    CHECK_OK(ax_net_reserve_shuffled(net, 1000, true));
    CHECK(net->workspace.capacity == 1000);
    ax_net_free(net);
}

/* A checkpoint written by a real run, its metadata then edited to claim a
 * layout of 2^48 weights: refused on the file's own evidence, before the
 * network is created. */
static void test_checkpoint(void)
{
    char folder[128], prefix[160], path[192], edited[192];
    /* a new folder of its own: a pid's name can be left from an earlier run */
    snprintf(folder, sizeof folder, "/tmp/axon_test_memory_XXXXXX");
    CHECK(mkdtemp(folder) != NULL);
    snprintf(prefix, sizeof prefix, "%s/run", folder);
    snprintf(path, sizeof path, "%s.epoch-000001.safetensors", prefix);
    snprintf(edited, sizeof edited, "%s/edited.safetensors", folder);

    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_create(40, 3, 2, 0, &data));
    if (!data)
        return;
    float *x = ax_dataset_features_data(data);
    int32_t *labels = ax_dataset_labels_data(data);
    ax_rng rng;
    ax_rng_seed(&rng, 5);
    for (int r = 0; r < 40; r++) {
        for (int c = 0; c < 3; c++)
            x[r * 3 + c] = (float)ax_rng_normal(&rng);
        labels[r] = x[r * 3] > 0;
    }
    ax_net *net = NULL;
    ax_net_config config = layout(3, "4:relu,2:softmax", AX_PRECISION_F32);
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    ax_train_config train = ax_train_defaults();
    train.epochs = 1;
    train.batch_size = 8;
    train.checkpoint_every = 1;
    train.checkpoint_prefix = prefix;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, data, NULL, NULL, &train, &summary));
    ax_net_free(net);
    ax_dataset_free(data);

    /* The same file with "4:relu,2:softmax" replaced in the "net" metadata. */
    ax_safetensors_file *file = NULL;
    CHECK_OK(ax_safetensors_read(path, &file));
    if (!file)
        return;
    enum { MAX = 16 };
    ax_safetensors_tensor tensors[MAX];
    const char *keys[MAX], *values[MAX];
    char net_text[1024] = "";
    int count = ax_safetensors_count(file), metadata = ax_safetensors_metadata_count(file);
    CHECK(count <= MAX && metadata <= MAX);
    for (int i = 0; i < count && i < MAX; i++)
        tensors[i] = *ax_safetensors_tensor_at(file, i);
    for (int i = 0; i < metadata && i < MAX; i++) {
        keys[i] = ax_safetensors_metadata_key(file, i);
        values[i] = ax_safetensors_metadata(file, keys[i]);
        if (strcmp(keys[i], "net") == 0) {
            const char *at = strstr(values[i], "4:relu,2:softmax");
            CHECK(at != NULL);
            if (at)
                snprintf(net_text, sizeof net_text, "%.*s16777216:relu,16777216:relu,2:softmax%s",
                         (int)(at - values[i]), values[i], at + strlen("4:relu,2:softmax"));
            values[i] = net_text;
        }
    }
    CHECK_OK(ax_safetensors_write(edited, tensors, count, keys, values, metadata));
    ax_safetensors_free(file);

    ax_net *loaded = (ax_net *)1;
    ax_train_state *state = (ax_train_state *)1;
    ax_train_config resumed;
    CHECK_FAILS(ax_checkpoint_load(edited, &loaded, &resumed, &state), AX_STATUS_BAD_FILE,
                "edited.safetensors: the layout in checkpoint metadata \"net\" has 281475094151170 "
                "parameters but tensor \"parameters\" holds 26");
    CHECK(loaded == NULL && state == NULL);
    /* The file as written loads. */
    CHECK_OK(ax_checkpoint_load(path, &loaded, &resumed, &state));
    CHECK(loaded && ax_net_parameter_count(loaded) == 26);
    ax_net_free(loaded);
    ax_train_state_free(state);

    char command[256];
    snprintf(command, sizeof command, "rm -rf '%s'", folder);
    if (system(command) != 0)
        fprintf(stderr, "could not remove %s\n", folder);
}

/* The CPU backend's table with allocations that fail for failing_bytes:
 * alloc_status, which the library calls (ax_backend_alloc), and alloc,
 * which it calls for a plugin older than version 6 (old_plugin: the table
 * then has no alloc_status). */
static size_t failing_bytes;
static ax_backend_ops failing_ops;
static void *(*real_alloc)(ax_backend *, size_t);
static ax_status (*real_alloc_status)(ax_backend *, size_t, void **);
static void *alloc_or_fail(ax_backend *backend, size_t bytes)
{
    return bytes == failing_bytes ? NULL : real_alloc(backend, bytes);
}
static ax_status alloc_status_or_fail(ax_backend *backend, size_t bytes, void **memory)
{
    if (bytes != failing_bytes)
        return real_alloc_status(backend, bytes, memory);
    *memory = NULL;
    return ax_fail(AX_STATUS_OUT_OF_MEMORY, "no room for %zu bytes (a test's failure)", bytes);
}

static void fail_allocations_of(ax_net *net, size_t bytes, bool old_plugin)
{
    failing_ops = *net->backend->ops;
    real_alloc = failing_ops.alloc;
    real_alloc_status = failing_ops.alloc_status;
    failing_ops.alloc = alloc_or_fail;
    failing_ops.alloc_status = old_plugin ? NULL : alloc_status_or_fail;
    failing_bytes = bytes;
    net->backend->ops = &failing_ops;
}

/* Before, a failed copy left the inputs undropped and the call succeeded. */
static void test_input_dropout_copy(void)
{
    enum { ROWS = 10, WIDTH = 7 };
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_create(ROWS, WIDTH, 2, 0, &data));
    if (!data)
        return;
    float *x = ax_dataset_features_data(data);
    int32_t *labels = ax_dataset_labels_data(data);
    for (int r = 0; r < ROWS; r++) {
        for (int c = 0; c < WIDTH; c++)
            x[r * WIDTH + c] = (float)((r * 7 + c * 3) % 11) / 11.0f - 0.5f;
        labels[r] = r % 2;
    }
    const size_t copy_bytes = (size_t)ROWS * WIDTH * sizeof(float);
    const double rates[2] = {0.5, 0.0};
    const ax_regularization dropping = {.size = sizeof(ax_regularization),
                                        .dropout_layers = rates, .dropout_key = 3};

    /* ax_net_loss_gradient: its workspace fits, the copy does not; through
     * alloc_status, and through alloc as for a plugin of before it. */
    ax_net *net = NULL;
    ax_net_config config = layout(WIDTH, "5:relu,2:softmax", AX_PRECISION_F32);
    const ax_backend_ops *ops = NULL;
    for (int old_plugin = 0; old_plugin < 2; old_plugin++) {
        CHECK_OK(ax_net_create(&config, &net));
        if (!net)
            break;
        CHECK_OK(ax_net_reserve(net, ROWS));
        ops = net->backend->ops;
        fail_allocations_of(net, copy_bytes, old_plugin);
        double loss = 0.0, undropped = 0.0, dropped = 0.0;
        CHECK_FAILS(ax_net_loss_gradient(net, data, 0, ROWS, &dropping, &loss, NULL),
                    AX_STATUS_OUT_OF_MEMORY,
                    "out of memory for the copy of 10 input rows (7 values each) that input dropout "
                    "(0.5) drops");
        net->backend->ops = ops;
        /* With memory, the same call drops the inputs: another loss than none. */
        CHECK_OK(ax_net_loss_gradient(net, data, 0, ROWS, NULL, &undropped, NULL));
        CHECK_OK(ax_net_loss_gradient(net, data, 0, ROWS, &dropping, &dropped, NULL));
        CHECK(dropped != undropped);
        ax_net_free(net);

        /* A workspace that does not fit: refused naming it and the backend's
         * reason (the first layer's outputs, 10 rows of 5 floats, fail). */
        CHECK_OK(ax_net_create(&config, &net));
        if (!net)
            break;
        ops = net->backend->ops;
        fail_allocations_of(net, (size_t)ROWS * 5 * sizeof(float), old_plugin);
        CHECK_FAILS(ax_net_reserve(net, ROWS), AX_STATUS_OUT_OF_MEMORY,
                    "the workspace for a batch of 10 rows");
        CHECK(strstr(ax_error_message(), old_plugin ? "memory for 200 bytes"
                                                    : "no room for 200 bytes (a test's failure)"));
        net->backend->ops = ops;
        CHECK_OK(ax_net_reserve(net, ROWS));
        ax_net_free(net);
    }

    /* ax_train (SGD on the full batch in order: no other buffer of that size). */
    net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    CHECK_OK(ax_net_reserve(net, ROWS));
    ops = net->backend->ops;
    fail_allocations_of(net, copy_bytes, false);
    ax_train_config train = ax_train_defaults();
    train.epochs = 1;
    train.batch_size = 0;
    train.shuffle = false;
    train.dropout_layers[0] = 0.5;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &train, &summary), AX_STATUS_OUT_OF_MEMORY,
                "out of memory for the copy of 10 input rows");
    net->backend->ops = ops;
    CHECK_OK(ax_train(net, data, NULL, NULL, &train, &summary));
    ax_net_free(net);
    ax_dataset_free(data);
}

int main(void)
{
    CHECK_OK(ax_set_threads(1));
    test_network();
    test_batch();
    test_checkpoint();
    test_input_dropout_copy();
    return test_finish("test_memory_limits");
}
