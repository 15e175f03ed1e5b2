/* test_keep_best.c: ax_train_config.keep_best. On a small set whose labels
 * are noise the network overfits, so the test (or validation) loss falls,
 * then rises: after training, the weights left in the network have the
 * lowest loss of all epochs on the set watched (the minimum of the per-epoch
 * losses the progress callback saw), summary.best_epoch is that epoch, and
 * training still ran every epoch. Without keep_best the last weights stay.
 * Bad combinations (no set to watch; early stopping with the test set) fail
 * with a message. */
#include "test_util.h"
#include "test_datasets.h"

typedef struct loss_log {
    int count;
    double test[200], validation[200];
} loss_log;

static bool record(const ax_progress *progress, void *user)
{
    loss_log *log = user;
    if (progress->epoch_done && log->count < 200) {
        log->test[log->count] = progress->test_loss;
        log->validation[log->count] = progress->validation_loss;
        log->count++;
    }
    return true;
}

static ax_net *make_net(void)
{
    ax_net_config config = ax_net_defaults();
    CHECK_OK(ax_layers_parse("32:tanh,3:softmax", &config));
    config.input_width = 20;
    config.precision = AX_PRECISION_F64;
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    return net;
}

/* Trains with keep_best and checks the weights left behind. */
static void check_kept(ax_optimizer_kind optimizer, ax_keep_best keep, int epochs)
{
    ax_dataset *train = test_uniform_dataset(60, 20, 1, true);
    ax_dataset *validation = test_uniform_dataset(200, 20, 2, true);
    ax_dataset *test = test_uniform_dataset(200, 20, 3, true);
    ax_net *net = make_net();
    if (!train || !validation || !test || !net)
        goto done;
    ax_train_config config = ax_train_defaults();
    config.optimizer = optimizer;
    config.learning_rate = 0.01;
    config.batch_size = optimizer == AX_OPTIMIZER_ADAM ? 20 : 0;
    config.epochs = epochs;
    config.keep_best = keep;
    static loss_log log;
    log.count = 0;
    config.progress = record;
    config.progress_user = &log;
    config.progress_interval = 1e9;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, train, validation, test, &config, &summary));
    CHECK(summary.epochs_run == epochs && log.count == epochs);

    const double *watched = keep == AX_KEEP_BEST_TEST ? log.test : log.validation;
    int best = 0;
    for (int e = 1; e < log.count; e++)
        if (watched[e] < watched[best])
            best = e;
    /* the set overfits: the best epoch is neither the first nor the last */
    CHECK(best > 0 && best < epochs - 1);
    CHECK(watched[epochs - 1] > watched[best] * 1.01);

    ax_evaluation evaluation = ax_evaluation_empty();
    CHECK_OK(ax_net_evaluate(net, keep == AX_KEEP_BEST_TEST ? test : validation, &evaluation));
    printf("%s keep best %s: epoch %d of %d, loss %.6f (minimum of the epochs %.6f, last %.6f)\n",
           ax_optimizer_name(optimizer), keep == AX_KEEP_BEST_TEST ? "test" : "validation",
           summary.best_epoch, epochs, evaluation.loss, watched[best], watched[epochs - 1]);
    CHECK_NEAR(evaluation.loss, watched[best], 1e-12);
    CHECK(summary.best_epoch == best + 1);
    ax_evaluation_free(&evaluation);
    CHECK_OK(ax_net_evaluate(net, test, &evaluation));
    CHECK_NEAR(summary.final_test_accuracy, evaluation.accuracy, 1e-15);
    ax_evaluation_free(&evaluation);
done:
    ax_net_free(net);
    ax_dataset_free(train);
    ax_dataset_free(validation);
    ax_dataset_free(test);
}

/* Without keep_best the last epoch's weights stay. */
static void check_last_kept(void)
{
    ax_dataset *train = test_uniform_dataset(60, 20, 1, true);
    ax_dataset *test = test_uniform_dataset(200, 20, 3, true);
    ax_net *net = make_net();
    if (!train || !test || !net)
        goto done;
    ax_train_config config = ax_train_defaults();
    config.optimizer = AX_OPTIMIZER_CG;
    config.batch_size = 0;
    config.epochs = 40;
    static loss_log log;
    log.count = 0;
    config.progress = record;
    config.progress_user = &log;
    config.progress_interval = 1e9;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, train, NULL, test, &config, &summary));
    ax_evaluation evaluation = ax_evaluation_empty();
    CHECK_OK(ax_net_evaluate(net, test, &evaluation));
    CHECK(log.count == 40);
    CHECK_NEAR(evaluation.loss, log.test[log.count - 1], 1e-12);
    CHECK(summary.best_epoch == 40);
    ax_evaluation_free(&evaluation);
done:
    ax_net_free(net);
    ax_dataset_free(train);
    ax_dataset_free(test);
}

static void check_refused(void)
{
    ax_dataset *train = test_uniform_dataset(60, 20, 1, true);
    ax_dataset *other = test_uniform_dataset(50, 20, 2, true);
    ax_net *net = make_net();
    if (!train || !other || !net)
        goto done;
    ax_train_config config = ax_train_defaults();
    config.epochs = 2;
    ax_train_summary summary = ax_train_summary_empty();
    config.keep_best = AX_KEEP_BEST_TEST;
    CHECK_FAILS(ax_train(net, train, other, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "needs a test set");
    config.keep_best = AX_KEEP_BEST_VALIDATION;
    CHECK_FAILS(ax_train(net, train, NULL, other, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "needs a validation set");
    config.keep_best = AX_KEEP_BEST_TEST;
    config.early_stop = 3;
    CHECK_FAILS(ax_train(net, train, other, other, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "early stopping");
    config.early_stop = 0;
    config.keep_best = (ax_keep_best)7;
    CHECK_FAILS(ax_train(net, train, other, other, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "keep_best must be");
done:
    ax_net_free(net);
    ax_dataset_free(train);
    ax_dataset_free(other);
}

int main(void)
{
    check_kept(AX_OPTIMIZER_CG, AX_KEEP_BEST_TEST, 40);
    check_kept(AX_OPTIMIZER_LBFGS, AX_KEEP_BEST_VALIDATION, 40);
    check_kept(AX_OPTIMIZER_ADAM, AX_KEEP_BEST_TEST, 40);
    check_last_kept();
    check_refused();
    return test_finish("test_keep_best");
}
