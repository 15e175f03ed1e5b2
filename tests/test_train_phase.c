/* test_train_phase.c: training phases in one run (issue 30; TMVA's training
 * strategy). A phase is one ax_train call with the settings its text
 * (ax_train_phase_parse) names over the run's, the optimizer state carried
 * from the phase before (ax_train_config.optimizer_state).
 * - the text sets what it names and nothing else; malformed texts are
 *   refused naming the key, the config untouched;
 * - two phases with the state carried equal one run whose step schedule
 *   changes the rate where the second phase starts (torch's StepLR leaves
 *   SGD's velocity and Adam's moments and step count as they are): bit for
 *   bit, the same kernels; without the carried state they differ;
 * - a checkpoint written in phase 2 (within it, and at its last epoch),
 *   resumed with an empty state to carry on, ends phase 2 and a third
 *   phase with the uninterrupted run's bits. */
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

enum { IN = 3, HID = 5, OUT = 2, ROWS = 12 };
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
    config.seed = 7;
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    return net;
}

static ax_train_config base_config(void)
{
    ax_train_config config = ax_train_defaults();
    config.batch_size = 4;
    config.shuffle = true;
    config.adapt_threads = false;
    config.learning_rate = 0.1;
    config.momentum = 0.9;
    config.epochs = 3;
    config.seed = 11;
    config.progress_interval = 1e300;
    return config;
}

static void check_parse(void)
{
    ax_train_config config = base_config();
    CHECK_OK(ax_train_phase_parse("lr=0.01,momentum=0.5,nesterov=true,batch=full,epochs=7,"
                                  "dropout=0.25,l1=1e-5,l2=1e-4,weight-decay=0.02,optimizer=adamw,"
                                  "lr_schedule=step:2:0.5,warmup=10,patience=3,clip_norm=1,"
                                  "clip_value=2",
                                  &config));
    CHECK(config.learning_rate == 0.01 && config.momentum == 0.5 && config.nesterov);
    CHECK(config.batch_size == 0 && config.epochs == 7 && config.dropout == 0.25);
    CHECK(config.l1 == 1e-5 && config.l2 == 1e-4 && config.weight_decay == 0.02);
    CHECK(config.optimizer == AX_OPTIMIZER_ADAMW && config.lr_schedule == AX_LR_SCHEDULE_STEP &&
          config.lr_step_every == 2 && config.lr_gamma == 0.5 && config.warmup_steps == 10);
    CHECK(config.early_stop == 3 && config.clip_norm == 1.0 && config.clip_value == 2.0);
    /* what it does not name stays */
    ax_train_config other = base_config();
    CHECK_OK(ax_train_phase_parse("batch=256", &other));
    ax_train_config expected = base_config();
    expected.batch_size = 256;
    CHECK(memcmp(&other, &expected, sizeof other) == 0);

    const ax_train_config before = base_config();
    struct {
        const char *text, *named;
    } bad[] = {
        {"lr=0.1,speed=3", "unknown key 'speed'"},
        {"momentum=1.5", "momentum=1.5"},
        {"lr=0", "lr=0"},
        {"lr=abc", "lr=abc"},
        {"epochs=0", "epochs=0"},
        {"epochs=2.5", "epochs=2.5"},
        {"batch=-1", "batch=-1"},
        {"dropout=1", "dropout=1"},
        {"optimizer=rmsprop", "optimizer=rmsprop"},
        {"lr_schedule=step:0:0.5", "lr_schedule=step:0:0.5"},
        {"nesterov=maybe", "nesterov=maybe"},
        {"lr", "'lr' is not KEY=VALUE"},
        {"lr=", "'lr=' is not KEY=VALUE"},
        {"=3", "'=3' is not KEY=VALUE"},
        {"lr=0.1,", "trailing comma"},
        {"", "empty phase"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ax_train_config c = base_config();
        CHECK_FAILS(ax_train_phase_parse(bad[i].text, &c), AX_STATUS_BAD_ARGUMENT, bad[i].named);
        CHECK(memcmp(&c, &before, sizeof c) == 0);
    }
}

/* Runs the phases (texts over base) on a fresh network; params out. With
 * carry false each phase starts its optimizer afresh. */
static void run_phases(ax_dataset *data, const ax_train_config *base, const char *const *phases,
                       int count, bool carry, double *params)
{
    ax_net *net = make_net();
    ax_optimizer_state *state = NULL;
    CHECK_OK(ax_optimizer_state_create(&state));
    ax_train_config config = *base;
    for (int p = 0; p < count && net; p++) {
        CHECK_OK(ax_train_phase_parse(phases[p], &config));
        config.optimizer_state = carry ? state : NULL;
        ax_train_summary summary = ax_train_summary_empty();
        CHECK_OK(ax_train(net, data, NULL, NULL, &config, &summary));
    }
    if (net)
        ax_net_parameters_get(net, params);
    ax_net_free(net);
    ax_optimizer_state_free(state);
}

static void check_phases_equal_schedule(ax_dataset *data, ax_optimizer_kind kind)
{
    enum { PARAMS = HID * IN + HID + OUT * HID + OUT };
    double phased[PARAMS], scheduled[PARAMS], restarted[PARAMS];
    ax_train_config base = base_config();
    base.optimizer = kind;
    base.learning_rate = kind == AX_OPTIMIZER_SGD ? 0.1 : 0.01;
    const char *phases[2] = {"epochs=3", kind == AX_OPTIMIZER_SGD ? "lr=0.05,epochs=3"
                                                                  : "lr=0.005,epochs=3"};
    run_phases(data, &base, phases, 2, true, phased);
    run_phases(data, &base, phases, 2, false, restarted);

    /* the carried state matters (mini-batches shuffled as in a real run) */
    CHECK(memcmp(phased, restarted, sizeof phased) != 0);

    /* One run of 6 epochs, the rate halved after 3: StepLR(3, 0.5). Its
     * epochs 3.. shuffle by their own index, a phase's by the phase's epoch
     * count, so the two are compared with shuffling off. */
    base.shuffle = false;
    run_phases(data, &base, phases, 2, true, phased);
    ax_train_config one = base;
    one.epochs = 6;
    CHECK_OK(ax_lr_schedule_parse("step:3:0.5", &one));
    ax_net *net = make_net();
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, data, NULL, NULL, &one, &summary));
    ax_net_parameters_get(net, scheduled);
    ax_net_free(net);
    CHECK(memcmp(phased, scheduled, sizeof phased) == 0);
}

/* Phases 1 to 3, phase 2 checkpointed every epoch: resuming its epoch-2
 * checkpoint (and running phase 3 after it) gives the same bits. */
static void check_resume_in_phase_two(ax_dataset *data)
{
    enum { PARAMS = HID * IN + HID + OUT * HID + OUT };
    char folder[128], prefix[160], path[200];
    /* a new folder of its own: a pid's name can be left from an earlier run */
    snprintf(folder, sizeof folder, "/tmp/axon_test_train_phase_XXXXXX");
    CHECK(mkdtemp(folder) != NULL);
    snprintf(prefix, sizeof prefix, "%s/phase-2", folder);
    const char *phases[3] = {"lr=0.1,momentum=0.9,batch=4,epochs=3",
                             "lr=0.03,batch=6,epochs=5,l2=1e-3", "lr=0.01,epochs=2"};
    double straight[PARAMS], resumed[PARAMS];

    ax_train_config base = base_config();
    ax_net *net = make_net();
    ax_optimizer_state *state = NULL;
    CHECK_OK(ax_optimizer_state_create(&state));
    ax_train_config config = base;
    for (int p = 0; p < 3 && net; p++) {
        CHECK_OK(ax_train_phase_parse(phases[p], &config));
        config.optimizer_state = state;
        config.checkpoint_every = p == 1 ? 1 : 0;
        config.keep_checkpoints = 0;
        config.checkpoint_prefix = p == 1 ? prefix : NULL;
        ax_train_summary summary = ax_train_summary_empty();
        CHECK_OK(ax_train(net, data, NULL, NULL, &config, &summary));
    }
    if (net)
        ax_net_parameters_get(net, straight);
    ax_net_free(net);
    ax_optimizer_state_free(state);

    for (int at = 2; at <= 5; at += 3) { /* within phase 2, and at its end */
    snprintf(path, sizeof path, "%s.epoch-%06d.safetensors", prefix, at);
    net = NULL;
    ax_train_state *checkpoint = NULL;
    ax_train_config loaded;
    CHECK_OK(ax_checkpoint_load(path, &net, &loaded, &checkpoint));
    if (net) {
        CHECK(ax_train_state_epochs_done(checkpoint) == at);
        CHECK(loaded.learning_rate == 0.03 && loaded.batch_size == 6 && loaded.l2 == 1e-3);
        state = NULL;
        CHECK_OK(ax_optimizer_state_create(&state));
        loaded.optimizer_state = state;
        loaded.checkpoint_every = 0;
        loaded.checkpoint_prefix = NULL;
        ax_train_summary summary = ax_train_summary_empty();
        CHECK_OK(ax_train(net, data, NULL, NULL, &loaded, &summary));
        loaded.resume = NULL;
        CHECK(ax_optimizer_state_describe(state, NULL, NULL, NULL, NULL, NULL));
        CHECK_OK(ax_train_phase_parse(phases[2], &loaded));
        CHECK_OK(ax_train(net, data, NULL, NULL, &loaded, &summary));
        ax_net_parameters_get(net, resumed);
        CHECK(memcmp(straight, resumed, sizeof resumed) == 0);
        ax_net_free(net);
        ax_optimizer_state_free(state);
        ax_train_state_free(checkpoint);
    }
    }
    char command[256];
    snprintf(command, sizeof command, "rm -rf '%s'", folder);
    if (system(command) != 0)
        fprintf(stderr, "could not remove %s\n", folder);
}

int main(void)
{
    for (int r = 0; r < ROWS; r++) {
        for (int i = 0; i < IN; i++)
            features[r * IN + i] = (float)(0.25 * ((r * 7 + i * 3) % 11) - 1.0);
        targets[r * OUT] = (float)(0.5 * features[r * IN] - 0.25 * features[r * IN + 2]);
        targets[r * OUT + 1] = (float)(features[r * IN + 1] * features[r * IN + 1] - 0.5);
    }
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_wrap(ROWS, IN, 0, OUT, features, NULL, targets, "phase rows", &data));
    if (!data)
        return test_finish("test_train_phase");
    check_parse();
    check_phases_equal_schedule(data, AX_OPTIMIZER_SGD);
    check_phases_equal_schedule(data, AX_OPTIMIZER_ADAM);
    check_resume_in_phase_two(data);
    ax_dataset_free(data);
    return test_finish("test_train_phase");
}
