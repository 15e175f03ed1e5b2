/* test_opencl_runs.c: whole training runs on the OpenCL backend against the
 * CPU in float64, and its refusals.
 *
 * - SGD with momentum and dropout, and Adam: the running training loss at
 *   every step (progress after every batch) and the final weights within
 *   1e-9 relative of the CPU's; the dropout masks are the CPU's bit for bit,
 *   so any larger difference is a wrong kernel, not rounding.
 * - 20 CG and 20 L-BFGS iterations on the galaxy classifier (1024-8-3,
 *   sigmoid, binary cross-entropy, the full batch of 2700 rows): the cost
 *   after every iteration within 1e-9 relative (skipped without the data).
 * - A checkpoint written on one backend resumes on the other (both ways),
 *   ending within 1e-9 of the uninterrupted CPU run.
 * - Refusals: a device index past the list, an allocation larger than the
 *   device allows (the message names the size and the device's memory).
 *   (tests/opencl_cli.sh triggers the others from the command line: no fp64,
 *   a kernel build that fails with its log.)
 * - Data sets on the device (core/device_data.c): the same fixed-seed run
 *   (float32 and float64, SGD with dropout, shuffled batches, a test set
 *   evaluated each epoch; a regression net with targets) with the sets
 *   uploaded once, held in blocks of rows, and with AXON_DEVICE_DATA=off
 *   (batches packed on the host each step): the same kernels on the same
 *   values, so the final weights and test figures are equal bit for bit,
 *   and the batches were gathered on the device where they should be; the
 *   runs keep their losses on the device but the last (AXON_DEVICE_LOSS=off
 *   with it), and the epochs' training losses are the same bits too.
 * Without the OpenCL plugin or an OpenCL device the test says which and
 * exits 77. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/plugin.h"
#include "core/net.h"
#include "test_datasets.h"
#include "test_util.h"

#define TOLERANCE 1e-9

static const ax_device opencl = {.backend = "opencl", .index = 0};

typedef struct trace {
    double loss[2048];
    int count;
} trace;

static bool record(const ax_progress *progress, void *user)
{
    trace *t = user;
    if (t->count < 2048)
        t->loss[t->count++] = progress->train_loss;
    return true;
}

/* The input's image shape (height, width, channels) for the nets made
 * while it is set (the convolutional runs); NULL: a flat input. */
static const int64_t *image_shape = NULL;

static ax_net *make_net(const char *layers, int64_t input_width, ax_loss loss, ax_device device)
{
    ax_net_config config = ax_net_defaults();
    CHECK_OK(ax_layers_parse(layers, &config));
    config.input_width = input_width;
    if (image_shape)
        for (int i = 0; i < 3; i++)
            config.input_shape[i] = image_shape[i];
    config.precision = AX_PRECISION_F64;
    config.loss = loss;
    config.seed = 11;
    config.device = device;
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    return net;
}

static double *weights_of(const ax_net *net)
{
    double *w = malloc((size_t)ax_net_parameter_count(net) * sizeof *w);
    ax_net_parameters_get(net, w);
    return w;
}

static double relative_difference(const double *a, const double *b, int64_t count)
{
    double largest = 0.0, difference = 0.0;
    for (int64_t i = 0; i < count; i++) {
        largest = fmax(largest, fabs(a[i]));
        difference = fmax(difference, fabs(a[i] - b[i]));
    }
    return largest > 0.0 ? difference / largest : difference;
}

/* The two traces agree step by step; returns the largest relative difference. */
static double compare_traces(const char *what, const trace *cpu, const trace *dev)
{
    CHECK(cpu->count == dev->count && cpu->count > 0);
    double worst = 0.0;
    for (int i = 0; i < cpu->count && i < dev->count; i++) {
        const double d = fabs(cpu->loss[i] - dev->loss[i]) / fmax(fabs(cpu->loss[i]), 1e-300);
        if (!(d <= TOLERANCE)) {
            fprintf(stderr, "%s: step %d: cpu cost %.17g, opencl %.17g (relative %.3g > %g)\n",
                    what, i + 1, cpu->loss[i], dev->loss[i], d, TOLERANCE);
            test_failures++;
            return d;
        }
        worst = fmax(worst, d);
    }
    return worst;
}

/* One run of `config` from the same initial weights on the CPU and on
 * OpenCL device 0: every step's cost and the final weights. */
static void compare_run(const char *what, const char *layers, int64_t input_width, ax_loss loss,
                        const ax_dataset *data, ax_train_config config)
{
    ax_net *cpu = make_net(layers, input_width, loss, ax_device_cpu());
    ax_net *dev = make_net(layers, input_width, loss, opencl);
    if (!cpu || !dev) {
        ax_net_free(cpu);
        ax_net_free(dev);
        return;
    }
    static trace cpu_trace, dev_trace;
    cpu_trace.count = dev_trace.count = 0;
    config.progress = record;
    config.progress_interval = 0.0; /* every batch */
    config.progress_user = &cpu_trace;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(cpu, data, NULL, NULL, &config, &summary));
    config.progress_user = &dev_trace;
    CHECK_OK(ax_train(dev, data, NULL, NULL, &config, &summary));
    const double steps = compare_traces(what, &cpu_trace, &dev_trace);
    double *a = weights_of(cpu), *b = weights_of(dev);
    const double weights = relative_difference(a, b, ax_net_parameter_count(cpu));
    CHECK(weights <= TOLERANCE);
    printf("%s: %d steps, costs within %.3g relative, final weights within %.3g\n", what,
           cpu_trace.count, steps, weights);
    free(a);
    free(b);
    ax_net_free(cpu);
    ax_net_free(dev);
}

static void test_minibatch_runs(void)
{
    ax_dataset *data = test_uniform_dataset(640, 24, 5, false);
    if (!data)
        return;
    ax_train_config config = ax_train_defaults();
    config.optimizer = AX_OPTIMIZER_SGD;
    config.learning_rate = 0.05;
    config.momentum = 0.9;
    config.dropout = 0.2;
    config.batch_size = 64;
    config.epochs = 3;
    config.l2 = 1e-4;
    compare_run("sgd (momentum 0.9, dropout 0.2)", "40:relu,30:tanh,3:softmax", 24,
                AX_LOSS_CROSS_ENTROPY, data, config);
    config.nesterov = true;
    compare_run("sgd (nesterov, dropout 0.2)", "40:relu,30:tanh,3:softmax", 24,
                AX_LOSS_CROSS_ENTROPY, data, config);
    config = ax_train_defaults();
    config.optimizer = AX_OPTIMIZER_ADAM;
    config.learning_rate = 1e-3;
    config.batch_size = 50; /* a ragged last batch */
    config.epochs = 3;
    compare_run("adam", "40:sigmoid,3:sigmoid", 24, AX_LOSS_BINARY_CROSS_ENTROPY, data, config);
    ax_dataset_free(data);
}

/* A small convolutional net on 11x10x2 images (odd sizes, padding, stride
 * 2, overlapping max-pool windows, mean pooling, then dense layers): SGD
 * with momentum and dropout for a few steps, every step's cost and the final weights
 * within 1e-9 of the CPU's (each image operation gives the CPU's bits; the
 * GEMMs are CLBlast's). */
static void test_conv_runs(void)
{
    static const int64_t shape[3] = {11, 10, 2};
    ax_dataset *data = test_uniform_dataset(96, 11 * 10 * 2, 9, false);
    if (!data)
        return;
    ax_train_config config = ax_train_defaults();
    config.optimizer = AX_OPTIMIZER_SGD;
    config.learning_rate = 0.05;
    config.momentum = 0.9;
    config.batch_size = 32;
    config.epochs = 2;
    config.dropout = 0.1;
    image_shape = shape;
    compare_run("conv net, sgd (momentum 0.9, dropout 0.1)",
                "conv:4x3x3/p1:relu,maxpool:3/s2,conv:6x3x3/s2/p1:tanh,avgpool:2/s1,12:relu,"
                "3:softmax",
                11 * 10 * 2, AX_LOSS_CROSS_ENTROPY, data, config);
    image_shape = NULL;
    ax_dataset_free(data);
}

static void test_galaxy_runs(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/train.csv", AXON_GALAXY_DIR);
    if (access(path, R_OK) != 0) {
        printf("skipped the galaxy runs: %s is missing\n", path);
        return;
    }
    ax_csv_options options = ax_csv_defaults();
    options.scale = 1.0 / 255.0;
    ax_dataset *train = NULL;
    CHECK_OK(ax_dataset_load_csv(path, &options, &train));
    if (!train)
        return;
    static const ax_optimizer_kind kinds[] = {AX_OPTIMIZER_CG, AX_OPTIMIZER_LBFGS};
    for (int k = 0; k < 2; k++) {
        ax_train_config config = ax_train_defaults();
        config.optimizer = kinds[k];
        config.batch_size = 0;
        config.epochs = 20;
        config.l2 = 1.0 / (double)ax_dataset_rows(train);
        compare_run(k == 0 ? "galaxy cg, 20 iterations" : "galaxy l-bfgs, 20 iterations",
                    "8:sigmoid,3:sigmoid", 1024, AX_LOSS_BINARY_CROSS_ENTROPY, train, config);
    }
    ax_dataset_free(train);
}

/* Trains 2 of 4 epochs on `first` with a checkpoint per epoch, resumes the
 * checkpoint on `second` (the loaded network's weights moved there) and
 * compares the end with `straight`, the CPU's uninterrupted 4 epochs. */
static void resume_across(const char *folder, ax_device first, ax_device second,
                          const ax_dataset *data, ax_train_config config, const double *straight)
{
    char first_name[32], second_name[32], prefix[600], path[700];
    ax_device_format(first, first_name, sizeof first_name);
    ax_device_format(second, second_name, sizeof second_name);
    snprintf(prefix, sizeof prefix, "%s/from-%s", folder, first.backend);
    ax_net *net = make_net("40:relu,30:tanh,3:softmax", 24, AX_LOSS_CROSS_ENTROPY, first);
    if (!net)
        return;
    config.epochs = 2;
    config.checkpoint_every = 1;
    config.checkpoint_prefix = prefix;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, data, NULL, NULL, &config, &summary));
    const int64_t count = ax_net_parameter_count(net);
    ax_net_free(net);

    snprintf(path, sizeof path, "%s.epoch-000002.safetensors", prefix);
    ax_net *loaded = NULL, *moved = NULL;
    ax_train_state *state = NULL;
    ax_train_config resumed;
    CHECK_OK(ax_checkpoint_load(path, &loaded, &resumed, &state));
    if (!loaded)
        return;
    ax_net_config moved_config = *ax_net_config_get(loaded);
    CHECK(ax_device_is_cpu(first) ? ax_device_is_cpu(moved_config.device)
                                  : strcmp(moved_config.device.backend, first.backend) == 0);
    moved_config.device = second;
    CHECK_OK(ax_net_create(&moved_config, &moved));
    if (moved) {
        double *w = weights_of(loaded);
        ax_net_parameters_set(moved, w);
        free(w);
        resumed.epochs = 4;
        resumed.checkpoint_every = 0;
        CHECK_OK(ax_train(moved, data, NULL, NULL, &resumed, &summary));
        double *end = weights_of(moved);
        const double d = relative_difference(straight, end, count);
        printf("checkpoint of epoch 2 written on %s, resumed on %s to epoch 4: weights within "
               "%.3g of the CPU's uninterrupted run\n", first_name, second_name, d);
        CHECK(d <= TOLERANCE);
        free(end);
    }
    ax_net_free(moved);
    ax_net_free(loaded);
    ax_train_state_free(state);
    for (int k = 1; k <= 2; k++) {
        snprintf(path, sizeof path, "%s.epoch-%06d.safetensors", prefix, k);
        remove(path);
    }
}

static void test_checkpoints_across(void)
{
    char folder[] = "/tmp/axon_opencl_runs_XXXXXX";
    if (!mkdtemp(folder)) {
        CHECK(!"mkdtemp");
        return;
    }
    ax_dataset *data = test_uniform_dataset(640, 24, 5, false);
    ax_train_config config = ax_train_defaults();
    config.optimizer = AX_OPTIMIZER_SGD;
    config.learning_rate = 0.05;
    config.momentum = 0.9;
    config.dropout = 0.2;
    config.batch_size = 64;
    config.epochs = 4;
    ax_net *net = make_net("40:relu,30:tanh,3:softmax", 24, AX_LOSS_CROSS_ENTROPY, ax_device_cpu());
    if (data && net) {
        ax_train_summary summary = ax_train_summary_empty();
        CHECK_OK(ax_train(net, data, NULL, NULL, &config, &summary));
        double *straight = weights_of(net);
        resume_across(folder, ax_device_cpu(), opencl, data, config, straight);
        resume_across(folder, opencl, ax_device_cpu(), data, config, straight);
        free(straight);
    }
    ax_net_free(net);
    ax_dataset_free(data);
    rmdir(folder);
}

static void test_refusals(void)
{
    const int devices = ax_device_count("opencl");
    ax_device missing = {.backend = "opencl", .index = devices + 4};
    ax_backend *backend = NULL;
    char text[64];
    snprintf(text, sizeof text, "no OpenCL device %d: this machine has %d", devices + 4, devices);
    CHECK_FAILS(ax_backend_create(AX_PRECISION_F32, missing, &backend), AX_STATUS_UNSUPPORTED,
                text);
    CHECK(backend == NULL);

    /* An allocation past what the device allows: refused, named, not sticky. */
    CHECK_OK(ax_backend_create(AX_PRECISION_F32, opencl, &backend));
    if (!backend)
        return;
    const size_t huge = (size_t)1 << 46; /* 64 TiB */
    static int value_of_nothing;
    void *memory = backend->ops->alloc(backend, huge);
    CHECK(memory == NULL);
    CHECK(strstr(ax_error_message(), "70368744177664 bytes") != NULL);
    CHECK(strstr(ax_error_message(), "GiB") != NULL);
    printf("refused: %s\n", ax_error_message());
    CHECK_OK(backend->ops->status(backend));
    /* The same through alloc_status, as the library allocates (ax_backend_alloc):
     * out of memory, named with the buffer, and not sticky either. */
    memory = &value_of_nothing;
    CHECK_FAILS(ax_backend_alloc(backend, huge, "a huge buffer", &memory), AX_STATUS_OUT_OF_MEMORY,
                "a huge buffer: ");
    CHECK(memory == NULL);
    CHECK(strstr(ax_error_message(), "70368744177664 bytes") != NULL);
    CHECK_OK(ax_backend_synchronize(backend));
    /* A pointer the backend did not hand out: a sticky device failure. */
    double value = 1.0;
    backend->ops->upload_f64(backend, &value, &value, 1);
    CHECK_FAILS(backend->ops->status(backend), AX_STATUS_DEVICE, "no buffer of this backend");
    CHECK(isnan(backend->ops->dot(backend, 0, NULL, NULL)));
    backend->ops->destroy(backend);
}

/* One fixed-seed run on OpenCL device 0 with AXON_DEVICE_DATA = setting
 * (NULL: unset): its weights (malloc'ed), test loss and accuracy, and the
 * batches it gathered on the device. */
typedef struct device_run {
    double *weights;
    double test_loss, test_accuracy;
    ax_train_summary summary; /* the last epoch's training loss and test accuracy */
    int64_t device_batches, device_losses;
} device_run;

static device_run run_on_device(const char *setting, const char *layers, int64_t width,
                                ax_loss loss, ax_precision precision, const ax_dataset *train,
                                const ax_dataset *test)
{
    device_run run = {.device_batches = -1, .summary = ax_train_summary_empty()};
    if (setting)
        setenv("AXON_DEVICE_DATA", setting, 1);
    else
        unsetenv("AXON_DEVICE_DATA");
    /* off: the run as before both, each step's loss read by the host */
    if (setting && strcmp(setting, "off") == 0)
        setenv("AXON_DEVICE_LOSS", "off", 1);
    ax_net_config config = ax_net_defaults();
    CHECK_OK(ax_layers_parse(layers, &config));
    config.input_width = width;
    config.precision = precision;
    config.loss = loss;
    config.seed = 23;
    config.device = opencl;
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    if (net) {
        ax_train_config training = ax_train_defaults();
        training.optimizer = AX_OPTIMIZER_SGD;
        training.learning_rate = 0.05;
        training.momentum = 0.9;
        training.dropout = 0.1;
        training.batch_size = 50; /* a ragged last batch */
        training.epochs = 3;
        CHECK_OK(ax_train(net, train, NULL, test, &training, &run.summary));
        run.weights = weights_of(net);
        run.device_batches = net->run.device_batches;
        run.device_losses = net->run.device_losses;
        ax_evaluation evaluation = ax_evaluation_empty();
        CHECK_OK(ax_net_evaluate(net, test, &evaluation));
        run.test_loss = evaluation.loss;
        run.test_accuracy = evaluation.accuracy;
        ax_evaluation_free(&evaluation);
    }
    unsetenv("AXON_DEVICE_DATA");
    unsetenv("AXON_DEVICE_LOSS");
    ax_net_free(net);
    return run;
}

/* A run that diverges (a linear regression, SGD at a learning rate of 1)
 * is stopped naming the step whose loss was first infinite, the same
 * whether each step's loss is read or the losses stay on the device until
 * the epoch's end. */
static void test_device_loss_divergence(void)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_synth_linear(300, 4, 9, &data));
    char messages[2][512] = {"", ""};
    for (int off = 0; off < 2 && data; off++) {
        if (off)
            setenv("AXON_DEVICE_LOSS", "off", 1);
        ax_net_config config = ax_net_defaults();
        config.input_width = 4;
        config.device = opencl;
        CHECK_OK(ax_layers_parse("6,1", &config));
        ax_net *net = NULL;
        CHECK_OK(ax_net_create(&config, &net));
        ax_net_config_release(&config);
        if (net) {
            ax_train_config training = ax_train_defaults();
            training.epochs = 2;
            training.batch_size = 16;
            training.learning_rate = 1.0;
            ax_train_summary summary = ax_train_summary_empty();
            CHECK(ax_train(net, data, NULL, NULL, &training, &summary) == AX_STATUS_DIVERGED);
            snprintf(messages[off], sizeof messages[off], "%s", ax_error_message());
        }
        ax_net_free(net);
        unsetenv("AXON_DEVICE_LOSS");
    }
    CHECK(strstr(messages[0], "training diverged in epoch 1, batch ") != NULL);
    CHECK(strcmp(messages[0], messages[1]) == 0);
    printf("losses on the device: %s (as when each step's loss is read)\n", messages[0]);
    ax_dataset_free(data);
}

static void test_device_data_bits(void)
{
    ax_dataset *train = test_uniform_dataset(1030, 24, 8, false);
    ax_dataset *test = test_uniform_dataset(170, 24, 9, false);
    ax_dataset *regression = NULL, *regression_test = NULL;
    CHECK_OK(ax_dataset_synth_linear(700, 12, 4, &regression));
    CHECK_OK(ax_dataset_synth_linear(130, 12, 5, &regression_test));
    if (!train || !test || !regression || !regression_test)
        return;
    for (int f64 = 0; f64 < 2; f64++) {
        const ax_precision precision = f64 ? AX_PRECISION_F64 : AX_PRECISION_F32;
        for (int kind = 0; kind < 2; kind++) {
            const char *layers = kind == 0 ? "40:relu,30:tanh,3:softmax" : "20:tanh,1";
            const ax_dataset *a = kind == 0 ? train : regression;
            const ax_dataset *b = kind == 0 ? test : regression_test;
            const int64_t width = kind == 0 ? 24 : 12;
            const ax_loss loss = kind == 0 ? AX_LOSS_CROSS_ENTROPY : AX_LOSS_MSE;
            device_run whole = run_on_device(NULL, layers, width, loss, precision, a, b);
            device_run blocks = run_on_device("rows:97", layers, width, loss, precision, a, b);
            device_run host = run_on_device("off", layers, width, loss, precision, a, b);
            const int64_t count = 24 * 40 + 40 + 40 * 30 + 30 + 30 * 3 + 3;
            const int64_t parameters = kind == 0 ? count : 12 * 20 + 20 + 20 + 1;
            /* 3 epochs of 21 (14) batches, and the test set evaluated after each */
            CHECK(whole.device_batches >= 3 * (kind == 0 ? 21 : 14) &&
                  blocks.device_batches == whole.device_batches);
            CHECK(host.device_batches == 0 && host.device_losses == 0);
            CHECK(whole.device_losses == 3 * (kind == 0 ? 21 : 14) &&
                  blocks.device_losses == whole.device_losses);
            if (whole.weights && blocks.weights && host.weights) {
                const size_t bytes = (size_t)parameters * sizeof(double);
                CHECK(memcmp(whole.weights, host.weights, bytes) == 0);
                CHECK(memcmp(blocks.weights, host.weights, bytes) == 0);
                CHECK(memcmp(&whole.test_loss, &host.test_loss, sizeof(double)) == 0);
                CHECK(memcmp(&blocks.test_loss, &host.test_loss, sizeof(double)) == 0);
                CHECK(kind == 1 || whole.test_accuracy == host.test_accuracy);
                CHECK(memcmp(&whole.summary.final_train_loss, &host.summary.final_train_loss,
                             sizeof(double)) == 0);
                CHECK(kind == 1 || whole.summary.final_test_accuracy ==
                                       host.summary.final_test_accuracy);
            }
            printf("data sets on the device (%s, %s): %lld batches gathered there, weights and "
                   "test loss %.9g equal bit for bit to the host gather's\n",
                   f64 ? "f64" : "f32", kind == 0 ? "classifier" : "regression",
                   (long long)whole.device_batches, host.test_loss);
            free(whole.weights);
            free(blocks.weights);
            free(host.weights);
        }
    }
    ax_dataset_free(train);
    ax_dataset_free(test);
    ax_dataset_free(regression);
    ax_dataset_free(regression_test);
}

int main(void)
{
    const ax_backend_plugin *plugin = NULL;
    if (ax_backend_plugin_get("opencl", &plugin) != AX_STATUS_OK)
        TEST_SKIP("opencl: %s", ax_error_message());
    if (ax_device_count("opencl") < 1)
        TEST_SKIP("opencl: the plugin found no OpenCL device (no platform or ICD installed, "
                  "e.g. pocl-opencl-icd): CPU/OpenCL runs not compared");
    char info[512];
    CHECK_OK(ax_device_info(opencl, info, sizeof info));
    printf("opencl:0: %s\n", info);
    if (!strstr(info, ", fp64"))
        TEST_SKIP("opencl:0 has no float64 (%s): the runs are compared in float64", info);
    test_refusals();
    test_device_data_bits();
    test_device_loss_divergence();
    test_minibatch_runs();
    test_conv_runs();
    test_galaxy_runs();
    test_checkpoints_across();
    return test_finish("test_opencl_runs");
}
