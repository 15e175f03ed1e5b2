/* test_backend_status.c: proves that a failing backend operation reaches
 * the caller as that failure (AX_STATUS_DEVICE with the backend's message),
 * not as "training diverged, try a lower learning rate", on every path
 * where the trainer meets non-finite values: the mini-batch loss (SGD,
 * Adam), the line searches (CG, L-BFGS), and the end-of-epoch check of the
 * weights (a failure that left finite values behind); also that
 * evaluation, prediction, gradients and saving refuse a failed device's
 * results. The failing device is a test-only table: the CPU backend's
 * operations with a gemm that fails on its Nth call and then behaves as
 * the CUDA backend after a failure (reductions NaN, all_finite false). A
 * control run with the same fault but a status that hides it must still
 * end as divergence, so the checks distinguish the two. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/error.h"
#include "core/net.h"
#include "test_util.h"

/* How the fake device behaves after its failure. */
typedef enum after_failure {
    AFTER_NAN,    /* as the CUDA backend: reductions NaN, all_finite false */
    AFTER_FINITE, /* nothing visible in the numbers: only status tells */
} after_failure;

static struct {
    const ax_backend_ops *cpu;
    ax_backend_ops ops;
    long gemms_before_failure; /* gemm calls that succeed; then it fails */
    after_failure after;
    bool report; /* false: status says OK even after the failure (control) */
    bool failed;
} fake;

static void fake_gemm(ax_backend *backend, bool trans_a, bool trans_b, int64_t m, int64_t n,
                      int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                      int64_t ldb, double beta, void *c, int64_t ldc)
{
    if (!fake.failed && fake.gemms_before_failure-- <= 0)
        fake.failed = true;
    if (fake.failed) /* a failed launch computes nothing */
        return;
    fake.cpu->gemm(backend, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static bool void_results(void) { return fake.failed && fake.after == AFTER_NAN; }

static double fake_squared_error(ax_backend *backend, const void *outputs, const int32_t *labels,
                                 const void *targets, void *delta, double scale, int64_t rows,
                                 int64_t cols)
{
    double loss = fake.cpu->squared_error(backend, outputs, labels, targets, delta, scale, rows,
                                          cols);
    return void_results() ? NAN : loss;
}

static double fake_dot(ax_backend *backend, int64_t count, const void *x, const void *y)
{
    double dot = fake.cpu->dot(backend, count, x, y);
    return void_results() ? NAN : dot;
}

static bool fake_all_finite(ax_backend *backend, int64_t count, const void *x)
{
    return !void_results() && fake.cpu->all_finite(backend, count, x);
}

static ax_status fake_status(ax_backend *backend)
{
    (void)backend;
    if (!fake.failed || !fake.report)
        return AX_STATUS_OK;
    return ax_fail(AX_STATUS_DEVICE, "fake device: gemm failed: FAKE_LAUNCH_FAILURE (719)");
}

/* Puts the fake table under a CPU network: gemm number `succeeding` + 1
 * fails. The CPU backend's memory is host memory, so the fake shares it. */
static void install_fake(ax_net *net, long succeeding, after_failure after, bool report)
{
    fake.cpu = net->backend->ops;
    fake.ops = *fake.cpu;
    fake.ops.gemm = fake_gemm;
    fake.ops.squared_error = fake_squared_error;
    fake.ops.dot = fake_dot;
    fake.ops.all_finite = fake_all_finite;
    fake.ops.status = fake_status;
    fake.gemms_before_failure = succeeding;
    fake.after = after;
    fake.report = report;
    fake.failed = false;
    net->backend->ops = &fake.ops;
}

static ax_net *make_net(void)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = 5;
    CHECK_OK(ax_layers_parse("8:tanh,1", &config));
    config.precision = AX_PRECISION_F64;
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config); /* the network keeps its own copy of the layers */
    return net;
}

static ax_train_config train_config(ax_optimizer_kind optimizer)
{
    ax_train_config config = ax_train_defaults();
    config.optimizer = optimizer;
    config.learning_rate = optimizer == AX_OPTIMIZER_ADAM ? 1e-3 : 0.01;
    config.batch_size = optimizer == AX_OPTIMIZER_CG || optimizer == AX_OPTIMIZER_LBFGS ? 0 : 32;
    config.epochs = 10;
    return config;
}

static const char *optimizer_name(ax_optimizer_kind optimizer)
{
    return optimizer == AX_OPTIMIZER_SGD    ? "sgd"
           : optimizer == AX_OPTIMIZER_ADAM ? "adam"
           : optimizer == AX_OPTIMIZER_CG   ? "cg"
                                            : "lbfgs";
}

/* The failure comes after a few good evaluations (about 5 gemms each). */
enum { GOOD_GEMMS = 12 };

/* A fault that leaves NaN (as CUDA's does) is the device's failure on every
 * optimizer's path; hidden from status, the same fault is divergence. */
static void test_nan_failure_is_device(const ax_dataset *data)
{
    const ax_optimizer_kind optimizers[] = {AX_OPTIMIZER_SGD, AX_OPTIMIZER_ADAM, AX_OPTIMIZER_CG,
                                            AX_OPTIMIZER_LBFGS};
    for (size_t i = 0; i < sizeof optimizers / sizeof *optimizers; i++) {
        ax_train_config config = train_config(optimizers[i]);
        ax_train_summary summary = ax_train_summary_empty();
        ax_net *net = make_net();
        install_fake(net, GOOD_GEMMS, AFTER_NAN, true);
        ax_status status = ax_train(net, data, NULL, NULL, &config, &summary);
        if (status != AX_STATUS_DEVICE || !strstr(ax_error_message(), "FAKE_LAUNCH_FAILURE (719)")) {
            fprintf(stderr, "%s: expected the device's failure, got %s: %s\n",
                    optimizer_name(optimizers[i]), ax_status_name(status), ax_error_message());
            test_failures++;
        }
        CHECK(fake.failed);
        ax_net_free(net);

        net = make_net();
        install_fake(net, GOOD_GEMMS, AFTER_NAN, false);
        status = ax_train(net, data, NULL, NULL, &config, &summary);
        if (status != AX_STATUS_DIVERGED) {
            fprintf(stderr, "%s, failure hidden from status: expected divergence, got %s: %s\n",
                    optimizer_name(optimizers[i]), ax_status_name(status), ax_error_message());
            test_failures++;
        }
        ax_net_free(net);
    }
}

/* A fault the numbers do not show (finite results) is still reported, at
 * the end of the epoch it happened in, not trained past. */
static void test_finite_failure_is_device(const ax_dataset *data)
{
    ax_train_config config = train_config(AX_OPTIMIZER_SGD);
    ax_train_summary summary = ax_train_summary_empty();
    ax_net *net = make_net();
    install_fake(net, GOOD_GEMMS, AFTER_FINITE, true);
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &config, &summary), AX_STATUS_DEVICE,
                "fake device: gemm failed");
    ax_net_free(net);
}

/* After a failure, the calls that hand back results refuse them. */
static void test_results_refused(const ax_dataset *data)
{
    ax_net *net = make_net();
    install_fake(net, 0, AFTER_NAN, true);
    ax_evaluation evaluation = ax_evaluation_empty();
    CHECK_FAILS(ax_net_evaluate(net, data, &evaluation), AX_STATUS_DEVICE, "FAKE_LAUNCH_FAILURE");
    CHECK(evaluation.confusion == NULL);
    float outputs[4];
    CHECK_FAILS(ax_net_predict(net, ax_dataset_features_data((ax_dataset *)data), 4, outputs),
                AX_STATUS_DEVICE, "FAKE_LAUNCH_FAILURE");
    double loss, gradient[64];
    CHECK(ax_net_parameter_count(net) <= 64);
    CHECK_FAILS(ax_net_loss_gradient(net, data, 0, 10, NULL, &loss, gradient), AX_STATUS_DEVICE,
                "FAKE_LAUNCH_FAILURE");
    char path[] = "/tmp/axon_test_backend_status_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    unlink(path);
    CHECK_FAILS(ax_net_save(net, path), AX_STATUS_DEVICE, "FAKE_LAUNCH_FAILURE");
    CHECK(access(path, F_OK) != 0);
    ax_net_free(net);
}

/* The CPU backend reports no failure, and real divergence stays divergence. */
static void test_cpu(const ax_dataset *data)
{
    ax_net *net = make_net();
    CHECK(net->backend->ops->status(net->backend) == AX_STATUS_OK);
    ax_train_config config = train_config(AX_OPTIMIZER_SGD);
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, data, NULL, NULL, &config, &summary));
    config.learning_rate = 1e6;
    config.momentum = 0.0;
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &config, &summary), AX_STATUS_DIVERGED,
                "training diverged");
    CHECK(net->backend->ops->status(net->backend) == AX_STATUS_OK);
    CHECK(strcmp(ax_status_name(AX_STATUS_DEVICE), "device failure") == 0);
    ax_net_free(net);
}

int main(void)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_synth_linear(256, 5, 3, &data));
    if (!data)
        return test_finish("test_backend_status");
    test_nan_failure_is_device(data);
    test_finite_failure_is_device(data);
    test_results_refused(data);
    test_cpu(data);
    ax_dataset_free(data);
    return test_finish("test_backend_status");
}
