/* test_config_size.c: the versioned structs (axon.h, "versioned structs";
 * docs/design.md, "The ABI rule"). _init fills exactly the bytes it is
 * given (a larger caller's tail zeroed, a smaller one's end untouched); a
 * size from a newer header or below the first version is refused with a
 * message naming the _defaults() function. (Sizes below this first
 * version's are refused too: older headers with a size field do not exist
 * yet; when a field is added, a test that the previous size trains as the
 * defaults do belongs here.) The results the library writes (train and
 * prep summaries, evaluations) follow the rule the other way round: no byte
 * written past the caller's size, whatever it is. */
#include <stddef.h>

#include "test_util.h"
#include "test_datasets.h"

static void check_init_bounds(void)
{
    unsigned char bytes[sizeof(ax_train_config) + 16];
    memset(bytes, 0xab, sizeof bytes);
    const size_t short_size = offsetof(ax_train_config, keep_checkpoints);
    ax_train_config_init((ax_train_config *)bytes, short_size);
    ax_train_config shorter;
    memcpy(&shorter, bytes, sizeof shorter);
    CHECK(shorter.size == short_size);
    CHECK(shorter.learning_rate == 0.1 && shorter.epochs == 10);
    CHECK(bytes[short_size] == 0xab); /* nothing written past the caller's size */

    memset(bytes, 0xab, sizeof bytes);
    ax_train_config_init((ax_train_config *)bytes, sizeof bytes);
    CHECK(bytes[sizeof bytes - 1] == 0); /* a newer caller's tail: zero */
}

static void check_refused(void)
{
    ax_dataset *train = test_uniform_dataset(40, 4, 1, true);
    ax_net_config net_config = ax_net_defaults();
    CHECK_OK(ax_layers_parse("3:softmax", &net_config));
    net_config.input_width = 4;
    ax_net *net = NULL;
    net_config.size = sizeof net_config + 8;
    CHECK_FAILS(ax_net_create(&net_config, &net), AX_STATUS_BAD_ARGUMENT,
                "fill it with ax_net_defaults()");
    net_config.size = 0;
    CHECK_FAILS(ax_net_create(&net_config, &net), AX_STATUS_BAD_ARGUMENT, "a network config of 0 bytes");
    net_config.size = sizeof net_config;
    CHECK_OK(ax_net_create(&net_config, &net));
    ax_train_config config = ax_train_defaults();
    config.size = sizeof config + 8;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_FAILS(ax_train(net, train, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "fill it with ax_train_defaults()");
    ax_prep_options prep = ax_prep_defaults();
    prep.size = 1;
    CHECK_FAILS(ax_prep_run(&prep, NULL, NULL, NULL), AX_STATUS_BAD_ARGUMENT,
                "fill it with ax_prep_defaults()");
    ax_net_free(net);
    ax_net_config_release(&net_config);
    ax_dataset_free(train);
}

/* The results the library writes into the caller's memory (issue 25: ax_train
 * zeroed sizeof (ax_train_summary) bytes of whatever the caller passed). A
 * caller built against an older, shorter struct stands here as a buffer of
 * 0xab bytes whose size ends before the last fields: the library fills the
 * fields inside it and not one byte after. */
enum { GUARD = 0xab };

static bool untouched(const unsigned char *bytes, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (bytes[i] != GUARD)
            return false;
    return true;
}

static void check_results_sized(void)
{
    ax_dataset *train = test_uniform_dataset(40, 4, 1, false);
    ax_net_config net_config = ax_net_defaults();
    CHECK_OK(ax_layers_parse("3:softmax", &net_config));
    net_config.input_width = 4;
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&net_config, &net));
    ax_train_config config = ax_train_defaults();
    config.epochs = 2;
    config.batch_size = 8;

    unsigned char bytes[sizeof(ax_train_summary) + 64];
    memset(bytes, GUARD, sizeof bytes);
    const size_t older = offsetof(ax_train_summary, stop_reason);
    memcpy(bytes, &older, sizeof older);
    CHECK_OK(ax_train(net, train, NULL, NULL, &config, (ax_train_summary *)bytes));
    ax_train_summary got;
    memcpy(&got, bytes, older);
    CHECK(got.size == older && got.epochs_run == 2 && got.final_train_loss > 0 && got.gflop > 0);
    CHECK(untouched(bytes, older, sizeof bytes));

    /* Sizes from no header: refused, nothing written. */
    for (size_t size = 0; size < 2; size++) {
        const size_t refused = size ? sizeof(ax_train_summary) + 8 : 0;
        memset(bytes, GUARD, sizeof bytes);
        memcpy(bytes, &refused, sizeof refused);
        CHECK_FAILS(ax_train(net, train, NULL, NULL, &config, (ax_train_summary *)bytes),
                    AX_STATUS_BAD_ARGUMENT, "start it from ax_train_summary_empty()");
        CHECK(untouched(bytes, sizeof refused, sizeof bytes));
    }

    /* An evaluation without room for the confusion matrix: the library
     * frees the one it made (the leak checkers of the sanitizer and
     * valgrind runs would see it otherwise). */
    unsigned char evaluation_bytes[sizeof(ax_evaluation) + 64];
    memset(evaluation_bytes, GUARD, sizeof evaluation_bytes);
    const size_t no_confusion = offsetof(ax_evaluation, confusion);
    memcpy(evaluation_bytes, &no_confusion, sizeof no_confusion);
    CHECK_OK(ax_net_evaluate(net, train, (ax_evaluation *)evaluation_bytes));
    ax_evaluation evaluation;
    memcpy(&evaluation, evaluation_bytes, no_confusion);
    CHECK(evaluation.rows == 40 && evaluation.classes == 3 && evaluation.loss > 0);
    CHECK(untouched(evaluation_bytes, no_confusion, sizeof evaluation_bytes));
    ax_evaluation_free((ax_evaluation *)evaluation_bytes); /* reads no pointer it lacks */
    CHECK(untouched(evaluation_bytes, no_confusion, sizeof evaluation_bytes));
    ax_evaluation whole = ax_evaluation_empty();
    CHECK_OK(ax_net_evaluate(net, train, &whole));
    CHECK(whole.size == sizeof whole && whole.confusion && whole.rows == 40);
    ax_evaluation_free(&whole);

    /* A prep run that fails at once still fills its summary, within the size. */
    unsigned char prep_bytes[sizeof(ax_prep_summary) + 64];
    memset(prep_bytes, GUARD, sizeof prep_bytes);
    const size_t no_warnings = offsetof(ax_prep_summary, warnings);
    memcpy(prep_bytes, &no_warnings, sizeof no_warnings);
    ax_prep_options prep = ax_prep_defaults();
    prep.input = "/nonexistent/axon-test-config-size";
    prep.output = "/nonexistent/axon-test-config-size-out";
    CHECK(ax_prep_run(&prep, NULL, NULL, (ax_prep_summary *)prep_bytes) != AX_STATUS_OK);
    CHECK(untouched(prep_bytes, no_warnings, sizeof prep_bytes));
    ax_prep_summary prep_summary;
    memcpy(&prep_summary, prep_bytes, no_warnings);
    CHECK(prep_summary.size == no_warnings && prep_summary.images_written == 0);

    ax_net_free(net);
    ax_net_config_release(&net_config);
    ax_dataset_free(train);
}

/* ax_regularization (issue 30 gave it a size): _init fills exactly the
 * bytes it is given; ax_net_loss_gradient reads the caller's size, refuses
 * one from no header, and takes the settings of one it accepts. (Its first
 * sized version is this one, so no shorter size is accepted yet.) */
static void check_regularization_sized(void)
{
    unsigned char bytes[sizeof(ax_regularization) + 16];
    memset(bytes, GUARD, sizeof bytes);
    const size_t short_size = offsetof(ax_regularization, l1);
    ax_regularization_init((ax_regularization *)bytes, short_size);
    ax_regularization shorter;
    memcpy(&shorter, bytes, short_size);
    CHECK(shorter.size == short_size && shorter.l2 == 0.0 && shorter.dropout == 0.0);
    CHECK(untouched(bytes, short_size, sizeof bytes));
    memset(bytes, GUARD, sizeof bytes);
    ax_regularization_init((ax_regularization *)bytes, sizeof bytes);
    CHECK(bytes[sizeof bytes - 1] == 0); /* a newer caller's tail: zero */
    const ax_regularization defaults = ax_regularization_defaults();
    CHECK(defaults.size == sizeof defaults && defaults.l1 == 0.0 && !defaults.dropout_layers);

    ax_dataset *train = test_uniform_dataset(40, 4, 1, true);
    ax_net_config net_config = ax_net_defaults();
    CHECK_OK(ax_layers_parse("5:tanh,3:softmax", &net_config));
    net_config.input_width = 4;
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&net_config, &net));
    double plain = 0.0, penalised = 0.0, loss = 0.0;
    CHECK_OK(ax_net_loss_gradient(net, train, 0, 40, NULL, &plain, NULL));
    ax_regularization l2 = ax_regularization_defaults();
    l2.l2 = 0.5;
    CHECK_OK(ax_net_loss_gradient(net, train, 0, 40, &l2, &penalised, NULL));
    CHECK(penalised > plain);
    for (int refused = 0; refused < 3; refused++) {
        ax_regularization bad = l2;
        bad.size = refused == 0 ? 0 : refused == 1 ? short_size : sizeof bad + 8;
        loss = -1.0;
        CHECK_FAILS(ax_net_loss_gradient(net, train, 0, 40, &bad, &loss, NULL),
                    AX_STATUS_BAD_ARGUMENT, "fill it with ax_regularization_defaults()");
        CHECK(loss == -1.0);
    }
    ax_net_free(net);
    ax_net_config_release(&net_config);
    ax_dataset_free(train);
}

int main(void)
{
    check_init_bounds();
    check_refused();
    check_results_sized();
    check_regularization_sized();
    return test_finish("test_config_size");
}
