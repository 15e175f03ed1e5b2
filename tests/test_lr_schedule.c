/* test_lr_schedule.c: learning-rate schedules and warmup (issue 30).
 * - The rate of each of 30 epochs (ax_progress.learning_rate of real runs)
 *   equals PyTorch's StepLR(7, 0.5), ExponentialLR(0.9) and
 *   CosineAnnealingLR(T_max 30, eta_min 0 and 0.001) to 1e-12
 *   (tests/data/strategy_reference.txt, scripts/make_strategy_reference.py:
 *   NumPy transcriptions of torch 1.13's schedulers);
 * - ReduceLROnPlateau(patience 2, factor 0.5) on the reference's loss
 *   sequence (improvements, stalls, and an improvement below the 1e-4
 *   relative threshold), through the schedule's step; and in a real run the
 *   rates follow the transcription below applied to the run's own
 *   validation losses;
 * - the rate reaches the steps: a scheduled run (and a warmup) equals runs
 *   chained at those constant rates, bit for bit (the same kernels);
 * - a run resumed from a checkpoint (plateau with its best loss and bad
 *   epochs; cosine) equals the uninterrupted one bit for bit, rates included;
 * - scikit-learn's adaptive schedule stops a run that cannot improve;
 * - the refusals (malformed texts, each with its reason and the config
 *   untouched; a schedule with a line search, scikit-learn's schedules with
 *   Adam, plateau without validation; fields set directly out of range);
 *   the optional numbers given and left out. */
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/lr_schedule.h"
#include "test_util.h"

#include "strategy_reference.h"

enum { EPOCHS = 30 };

/* A series of the reference, counted as a failure when it is missing. */
static const double *find(const char *name, int64_t count)
{
    const double *values = reference_find(name, count);
    if (!values)
        test_failures++;
    return values;
}

enum { IN = 3, HID = 4, OUT = 2, ROWS = 6, PARAMS = HID * IN + HID + OUT * HID + OUT };
static float features[ROWS * IN], targets[ROWS * OUT];

static ax_net *make_net(void)
{
    ax_layer_spec layers[2] = {ax_layer_dense(HID, AX_ACT_TANH), ax_layer_dense(OUT, AX_ACT_IDENTITY)};
    ax_net_config config = ax_net_defaults();
    config.input_width = IN;
    config.layer_count = 2;
    config.layers = layers;
    config.loss = AX_LOSS_MSE;
    config.precision = AX_PRECISION_F64;
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    if (net)
        ax_net_parameters_set(net, find("params0", PARAMS));
    return net;
}

/* The epoch lines' rates and validation losses. */
typedef struct recorded {
    int epochs;
    double rate[EPOCHS + 1], validation[EPOCHS + 1];
} recorded;

static bool record(const ax_progress *progress, void *user)
{
    recorded *r = user;
    if (progress->epoch_done && progress->epoch <= EPOCHS) {
        r->rate[progress->epoch - 1] = progress->learning_rate;
        r->validation[progress->epoch - 1] = progress->validation_loss;
        r->epochs = progress->epoch;
    }
    return true;
}

static ax_train_config base_config(void)
{
    ax_train_config config = ax_train_defaults();
    config.batch_size = 0;
    config.shuffle = false;
    config.adapt_threads = false;
    config.learning_rate = 0.1;
    config.momentum = 0.0;
    config.epochs = EPOCHS;
    config.progress = record;
    config.progress_interval = 1e300;
    return config;
}

static void train_recording(ax_dataset *data, ax_dataset *validation, ax_train_config config,
                            recorded *r, double *params)
{
    memset(r, 0, sizeof *r);
    config.progress_user = r;
    ax_net *net = make_net();
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, data, validation, NULL, &config, &summary));
    if (params)
        ax_net_parameters_get(net, params);
    ax_net_free(net);
}

static void check_rates(const char *what, const double *got, const double *expected, int n)
{
    if (!expected)
        return;
    for (int e = 0; e < n; e++)
        if (!(fabs(got[e] - expected[e]) <= 1e-12 * fabs(expected[e]))) {
            fprintf(stderr, "%s: epoch %d's rate is %.17g, torch's %.17g\n", what, e + 1, got[e],
                    expected[e]);
            test_failures++;
            return;
        }
}

static void check_torch_sequences(ax_dataset *data)
{
    static const struct {
        const char *text, *reference;
    } cases[] = {{"step:7:0.5", "lr_step_7_0.5"},
                 {"exp:0.9", "lr_exp_0.9"},
                 {"cosine", "lr_cosine_0"},
                 {"cosine:0.001", "lr_cosine_0.001"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ax_train_config config = base_config();
        CHECK_OK(ax_lr_schedule_parse(cases[i].text, &config));
        char text[64];
        ax_lr_schedule_format(&config, text, sizeof text);
        ax_train_config again = base_config();
        CHECK_OK(ax_lr_schedule_parse(text, &again)); /* the format reads back the same */
        CHECK(again.lr_schedule == config.lr_schedule && again.lr_gamma == config.lr_gamma &&
              again.lr_min == config.lr_min && again.lr_step_every == config.lr_step_every);
        recorded r;
        train_recording(data, NULL, config, &r, NULL);
        CHECK(r.epochs == EPOCHS);
        check_rates(cases[i].text, r.rate, find(cases[i].reference, EPOCHS), EPOCHS);
    }
}

/* torch's ReduceLROnPlateau.step, transcribed for this test (mode min, rel
 * threshold 1e-4, cooldown 0, min_lr 0, eps 1e-8): the rate after each loss. */
static void plateau_reference(const double *losses, int n, double lr, int patience, double factor,
                              double *rates)
{
    double best = INFINITY;
    int bad = 0;
    rates[0] = lr;
    for (int e = 0; e + 1 < n; e++) {
        if (losses[e] < best * (1 - 1e-4)) {
            best = losses[e];
            bad = 0;
        } else {
            bad++;
        }
        if (bad > patience) {
            const double reduced = fmax(lr * factor, 0.0);
            if (lr - reduced > 1e-8)
                lr = reduced;
            bad = 0;
        }
        rates[e + 1] = lr;
    }
}

static void check_plateau(ax_dataset *data)
{
    /* The schedule's step on the reference's losses. */
    const double *losses = find("plateau_losses", EPOCHS);
    ax_train_config config = base_config();
    CHECK_OK(ax_lr_schedule_parse("plateau:2:0.5", &config));
    CHECK(config.lr_patience == 2 && config.lr_gamma == 0.5);
    double rates[EPOCHS];
    if (losses) {
        ax_lr_state state = ax_lr_state_start(&config);
        rates[0] = state.rate;
        for (int e = 1; e < EPOCHS; e++) {
            CHECK(!ax_lr_schedule_after_epoch(&config, &state, e, ROWS, 0.0, losses[e - 1]));
            rates[e] = state.rate;
        }
        check_rates("plateau:2:0.5", rates, find("lr_plateau_2_0.5", EPOCHS), EPOCHS);
    }

    /* A real run: its rates follow its own validation losses. A large rate
     * and a patience of 0 make it reduce several times. */
    config.learning_rate = 2.0;
    config.lr_patience = 0;
    recorded r;
    train_recording(data, data, config, &r, NULL);
    CHECK(r.epochs == EPOCHS);
    plateau_reference(r.validation, EPOCHS, 2.0, 0, 0.5, rates);
    check_rates("plateau:0:0.5 in a run", r.rate, rates, EPOCHS);
    CHECK(r.rate[EPOCHS - 1] < 2.0); /* it did reduce */
}

/* A scheduled run equals runs chained at its rates (momentum 0: no state to
 * carry), bit for bit; likewise the warmup's steps. */
static void check_rates_reach_steps(ax_dataset *data)
{
    enum { SHORT = 4 };
    double scheduled[PARAMS], chained[PARAMS];
    ax_train_config config = base_config();
    config.epochs = SHORT;
    config.progress = NULL;
    CHECK_OK(ax_lr_schedule_parse("exp:0.5", &config));
    config.warmup_steps = 3; /* steps 0, 1, 2 at 1/3, 2/3, 1 of the epoch's rate */
    ax_net *net = make_net();
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, data, NULL, NULL, &config, &summary));
    ax_net_parameters_get(net, scheduled);
    ax_net_free(net);

    const double rates[SHORT] = {0.1 * 1.0 / 3.0, 0.1 * 0.5 * 2.0 / 3.0, 0.1 * 0.5 * 0.5,
                                 0.1 * 0.5 * 0.5 * 0.5};
    net = make_net();
    for (int e = 0; e < SHORT; e++) {
        ax_train_config one = ax_train_defaults();
        one.batch_size = 0;
        one.shuffle = false;
        one.adapt_threads = false;
        one.momentum = 0.0;
        one.epochs = 1;
        one.learning_rate = rates[e];
        CHECK_OK(ax_train(net, data, NULL, NULL, &one, &summary));
    }
    ax_net_parameters_get(net, chained);
    ax_net_free(net);
    CHECK(memcmp(scheduled, chained, sizeof chained) == 0);
}

/* Stopped after 3 epochs and resumed from the checkpoint: the same bits
 * and rates as the run that went straight through. */
static void check_resume(ax_dataset *data, const char *schedule)
{
    char folder[128], prefix[160], path[192];
    /* a new folder of its own: a pid's name can be left from an earlier run */
    snprintf(folder, sizeof folder, "/tmp/axon_test_lr_schedule_XXXXXX");
    CHECK(mkdtemp(folder) != NULL);
    snprintf(prefix, sizeof prefix, "%s/run", folder);
    snprintf(path, sizeof path, "%s.epoch-000003.safetensors", prefix);

    enum { RUN = 8 };
    ax_train_config config = base_config();
    config.epochs = RUN;
    config.learning_rate = 2.0;
    config.momentum = 0.9;
    config.batch_size = 2;
    config.shuffle = true;
    CHECK_OK(ax_lr_schedule_parse(schedule, &config));
    config.warmup_steps = 4;
    config.checkpoint_every = 1;
    config.keep_checkpoints = 0;
    config.checkpoint_prefix = prefix;
    recorded straight, resumed;
    double straight_params[PARAMS], resumed_params[PARAMS];
    train_recording(data, data, config, &straight, straight_params);

    ax_net *net = NULL;
    ax_train_state *state = NULL;
    ax_train_config loaded;
    CHECK_OK(ax_checkpoint_load(path, &net, &loaded, &state));
    if (net) {
        CHECK(loaded.lr_schedule == config.lr_schedule && loaded.lr_patience == config.lr_patience &&
              loaded.lr_gamma == config.lr_gamma && loaded.warmup_steps == 4);
        memset(&resumed, 0, sizeof resumed);
        loaded.progress = record;
        loaded.progress_user = &resumed;
        loaded.checkpoint_every = 0;
        ax_train_summary summary = ax_train_summary_empty();
        CHECK_OK(ax_train(net, data, data, NULL, &loaded, &summary));
        ax_net_parameters_get(net, resumed_params);
        CHECK(memcmp(straight_params, resumed_params, sizeof resumed_params) == 0);
        CHECK(resumed.epochs == RUN);
        for (int e = 3; e < RUN; e++)
            CHECK(resumed.rate[e] == straight.rate[e]);
        /* the schedule did change the rate within the resumed part */
        CHECK(straight.rate[RUN - 1] != straight.rate[3]);
        ax_net_free(net);
        ax_train_state_free(state);
    }
    char command[256];
    snprintf(command, sizeof command, "rm -rf '%s'", folder);
    if (system(command) != 0)
        fprintf(stderr, "could not remove %s\n", folder);
}

/* scikit-learn's adaptive: a rate far too small to improve the loss by tol
 * is divided by 5 after patience + 1 bad epochs, until it is 1e-6 or less,
 * and then training stops. */
static void check_adaptive_stops(ax_dataset *data)
{
    ax_train_config config = base_config();
    config.learning_rate = 1e-5;
    CHECK_OK(ax_lr_schedule_parse("adaptive:1:1", &config)); /* tol 1: nothing improves */
    config.epochs = 100;
    recorded r;
    memset(&r, 0, sizeof r);
    config.progress_user = &r;
    ax_net *net = make_net();
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, data, NULL, NULL, &config, &summary));
    /* Epoch 1 improves on no loss at all; epochs 2 and 3 are bad, so 4 and
     * 5 run at 2e-6, 6 and 7 at 4e-7, and after 7 the rate is below 1e-6:
     * stop. */
    CHECK(strstr(summary.stop_reason, "adaptive") != NULL);
    CHECK(summary.epochs_run == 7);
    CHECK(r.rate[0] == 1e-5 && r.rate[3] == 1e-5 / 5.0 && r.rate[5] == 1e-5 / 5.0 / 5.0);
    ax_net_free(net);
}

static void check_refusals(ax_dataset *data)
{
    ax_train_config config = base_config();
    /* Each text refused with its reason, the config untouched. */
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"bogus", "'bogus': not one of constant, step:EVERY:GAMMA"},
        {"stepx:2:0.5", "'stepx:2:0.5': not one of"},
        {"step:0:0.5", "EVERY must be a whole number of epochs >= 1"},
        {"step:1.5:0.5", "EVERY must be a whole number of epochs >= 1"},
        {"step:2", "wrong count of numbers after the name"},
        {"step:", "wrong count of numbers after the name"},
        {"step:2:0.5x", "wrong count of numbers after the name"},
        {"exp:1.5", "GAMMA must be in (0, 1]"},
        {"exp:0", "GAMMA must be in (0, 1]"},
        {"exp:0.5:1", "wrong count of numbers after the name"},
        {"plateau:2:1", "FACTOR must be below 1 (ReduceLROnPlateau's rule)"},
        {"plateau:2:0", "FACTOR must be in (0, 1]"},
        {"plateau:1.5:0.5", "PATIENCE must be a whole number of epochs >= 0"},
        {"cosine:-1", "MIN (lr_min) must be a finite number >= 0"},
        {"cosine:nan", "wrong count of numbers after the name"},
        {"cosine:1:2", "wrong count of numbers after the name"},
        {"invscaling:-0.5", "POWER (lr_power) must be a finite number >= 0"},
        {"adaptive:-1", "PATIENCE must be a whole number of epochs >= 0"},
        {"adaptive:3:-0.1", "TOL (lr_tol) must be a finite number >= 0"},
        {"adaptive:3:0.1:7", "wrong count of numbers after the name"},
        {"constant:1", "wrong count of numbers after the name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ax_train_config before = config;
        CHECK_FAILS(ax_lr_schedule_parse(bad[i].text, &config), AX_STATUS_BAD_ARGUMENT, bad[i].why);
        CHECK(strstr(ax_error_message(), "learning-rate schedule '") != NULL);
        CHECK(memcmp(&before, &config, sizeof config) == 0);
    }
    CHECK_FAILS(ax_lr_schedule_parse(NULL, &config), AX_STATUS_BAD_ARGUMENT,
                "no learning-rate schedule given: constant, step:EVERY:GAMMA");
    /* The optional numbers, given and left out. */
    ax_train_config parsed = config;
    CHECK_OK(ax_lr_schedule_parse("adaptive:4:0.01", &parsed));
    CHECK(parsed.lr_schedule == AX_LR_SCHEDULE_ADAPTIVE && parsed.lr_patience == 4 &&
          parsed.lr_tol == 0.01);
    CHECK_OK(ax_lr_schedule_parse("adaptive:6", &parsed));
    CHECK(parsed.lr_patience == 6 && parsed.lr_tol == 0.01);
    CHECK_OK(ax_lr_schedule_parse("invscaling:0.25", &parsed));
    CHECK(parsed.lr_schedule == AX_LR_SCHEDULE_INVSCALING && parsed.lr_power == 0.25);
    CHECK_OK(ax_lr_schedule_parse("cosine", &parsed));
    CHECK(parsed.lr_schedule == AX_LR_SCHEDULE_COSINE && parsed.lr_min == 0.0);
    ax_net *net = make_net();
    ax_train_summary summary = ax_train_summary_empty();
    config.progress = NULL;
    CHECK_OK(ax_lr_schedule_parse("plateau:2:0.5", &config));
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "needs a validation set");
    CHECK_OK(ax_lr_schedule_parse("cosine", &config));
    config.optimizer = AX_OPTIMIZER_LBFGS;
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "chooses its own steps");
    config.lr_schedule = AX_LR_SCHEDULE_CONSTANT;
    config.warmup_steps = 5;
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "schedule or warmup");
    config.warmup_steps = 0;
    config.optimizer = AX_OPTIMIZER_ADAM;
    CHECK_OK(ax_lr_schedule_parse("invscaling", &config));
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "scikit-learn's for its sgd solver");
    config.lr_schedule = AX_LR_SCHEDULE_STEP;
    config.lr_step_every = 0;
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "lr_step_every");
    /* The fields set directly, as a binding does, are checked as the text is. */
    const ax_train_config valid = base_config();
    config = valid;
    config.progress = NULL;
    config.lr_schedule = (ax_lr_schedule)99;
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "lr_schedule is not a schedule this library has");
    config = valid;
    config.progress = NULL;
    config.lr_schedule = AX_LR_SCHEDULE_ADAPTIVE;
    config.lr_tol = NAN;
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "TOL (lr_tol) must be a finite number >= 0");
    config.lr_tol = 0.0;
    config.lr_patience = -1;
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "PATIENCE (lr_patience) must be >= 0");
    config = valid;
    config.progress = NULL;
    config.lr_schedule = AX_LR_SCHEDULE_INVSCALING;
    config.lr_power = INFINITY;
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "POWER (lr_power) must be a finite number >= 0");
    config = valid;
    config.progress = NULL;
    config.warmup_steps = -1;
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "warmup_steps must be >= 0");
    ax_net_free(net);
    CHECK(strcmp(ax_lr_schedule_name(AX_LR_SCHEDULE_PLATEAU), "plateau") == 0);
    CHECK(strcmp(ax_lr_schedule_name((ax_lr_schedule)99), "unknown") == 0);
}

int main(void)
{
    if (!read_reference()) {
        fprintf(stderr, "the reference could not be read\n");
        return 1;
    }
    const double *x = find("inputs", ROWS * IN), *y = find("targets", ROWS * OUT);
    if (!x || !y || !find("params0", PARAMS))
        return 1;
    for (int i = 0; i < ROWS * IN; i++)
        features[i] = (float)x[i];
    for (int i = 0; i < ROWS * OUT; i++)
        targets[i] = (float)y[i];
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_wrap(ROWS, IN, 0, OUT, features, NULL, targets, "reference rows", &data));
    if (!data)
        return test_finish("test_lr_schedule");
    check_torch_sequences(data);
    check_plateau(data);
    check_rates_reach_steps(data);
    check_resume(data, "plateau:0:0.5");
    check_resume(data, "cosine:0.01");
    check_adaptive_stops(data);
    check_refusals(data);
    ax_dataset_free(data);
    for (int i = 0; i < series_count; i++)
        free(all[i].values);
    return test_finish("test_lr_schedule");
}
