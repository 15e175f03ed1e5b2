/* test_optimizer_state.c: ax_train_config.optimizer_state, SGD's and Adam's
 * state carried from one ax_train call into the next (axon.h, "optimizer
 * state"). Proves, for SGD with momentum, SGD with Nesterov momentum and
 * Adam, in float32 and float64, without shuffling:
 * - two calls of 1 epoch with a state carried leave the weights of one call
 *   of 2 epochs, bit for bit, and the state counts every step; without the
 *   state they differ (so the comparison is not vacuous);
 * - a state copied out as arrays and assigned to a new one (what a Python
 *   pickle does) continues as the original: a third epoch gives the weights
 *   of 3 epochs in one call;
 * - a run interrupted by its progress callback leaves the state of the
 *   steps it took, and going on from it gives the uninterrupted weights;
 * - the second call may train on other rows of the same width: one epoch
 *   over rows 0..39 then one over rows 40..59 (batch 20) is one epoch over
 *   the 60 rows.
 * And every refusal, each naming what differs and leaving the state as it
 * was: another kind, another parameter count, another precision, SGD's
 * velocity without momentum, CG and L-BFGS, a resumed checkpoint, and
 * ax_optimizer_state_assign's and _copy_array's bad arguments. Also Adam's
 * epsilon_before_correction (scikit-learn's order): torch's update with a
 * rescaled epsilon, recorded in checkpoints. */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"
#include "test_datasets.h"
#include "test_files.h"

enum { ROWS = 60, FEATURES = 20 };

typedef struct run_kind {
    const char *name;
    ax_optimizer_kind optimizer;
    double momentum;
    bool nesterov;
} run_kind;

static const run_kind kinds[] = {
    {"sgd momentum", AX_OPTIMIZER_SGD, 0.9, false},
    {"sgd nesterov", AX_OPTIMIZER_SGD, 0.9, true},
    {"adam", AX_OPTIMIZER_ADAM, 0.0, false},
};

static ax_net *make_net(ax_precision precision, const char *layout)
{
    ax_net_config config = ax_net_defaults();
    CHECK_OK(ax_layers_parse(layout, &config));
    config.input_width = FEATURES;
    config.precision = precision;
    config.seed = 7;
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    return net;
}

static ax_train_config train_config(const run_kind *kind, int epochs)
{
    ax_train_config config = ax_train_defaults();
    config.optimizer = kind->optimizer;
    config.momentum = kind->momentum;
    config.nesterov = kind->nesterov;
    config.learning_rate = kind->optimizer == AX_OPTIMIZER_ADAM ? 0.01 : 0.05;
    config.batch_size = 16; /* 4 batches, the last of 12 rows */
    config.epochs = epochs;
    config.l2 = 1e-3;
    config.shuffle = false;
    config.adapt_threads = false;
    return config;
}

static double *weights_of(const ax_net *net)
{
    double *w = malloc((size_t)ax_net_parameter_count(net) * sizeof *w);
    CHECK(w != NULL);
    if (w)
        ax_net_parameters_get(net, w);
    return w;
}

static bool same_bits(const ax_net *a, const ax_net *b)
{
    double *wa = weights_of(a), *wb = weights_of(b);
    bool same = wa && wb &&
                memcmp(wa, wb, (size_t)ax_net_parameter_count(a) * sizeof *wa) == 0;
    free(wa);
    free(wb);
    return same;
}

/* A copy of a held state through its arrays, as a pickle carries it. */
static ax_optimizer_state *copy_through_arrays(const ax_optimizer_state *state)
{
    ax_optimizer_kind kind;
    ax_precision precision;
    int64_t parameters, steps;
    int arrays;
    CHECK(ax_optimizer_state_describe(state, &kind, &precision, &parameters, &arrays, &steps));
    double *values[2] = {NULL, NULL};
    for (int i = 0; i < arrays; i++) {
        values[i] = malloc((size_t)parameters * sizeof(double));
        CHECK_OK(ax_optimizer_state_copy_array(state, i, values[i]));
    }
    ax_optimizer_state *copy = NULL;
    CHECK_OK(ax_optimizer_state_create(&copy));
    CHECK_OK(ax_optimizer_state_assign(copy, kind, precision, parameters, arrays, steps,
                                       (const double *const *)values));
    free(values[0]);
    free(values[1]);
    return copy;
}

static bool stop_after_first_epoch(const ax_progress *progress, void *user)
{
    (void)user;
    return !(progress->epoch_done && progress->epoch == 1);
}

static void check_carried(const run_kind *kind, ax_precision precision, const ax_dataset *train)
{
    const char *layout = "12:tanh,3:softmax";
    ax_net *straight = make_net(precision, layout), *carried = make_net(precision, layout),
           *fresh = make_net(precision, layout);
    ax_optimizer_state *state = NULL;
    CHECK_OK(ax_optimizer_state_create(&state));
    CHECK(!ax_optimizer_state_describe(state, NULL, NULL, NULL, NULL, NULL));
    ax_train_summary summary = ax_train_summary_empty();

    ax_train_config config = train_config(kind, 2);
    CHECK_OK(ax_train(straight, train, NULL, NULL, &config, &summary));
    config.epochs = 1;
    CHECK_OK(ax_train(fresh, train, NULL, NULL, &config, &summary)); /* no state: restarts */
    CHECK_OK(ax_train(fresh, train, NULL, NULL, &config, &summary));
    config.optimizer_state = state;
    CHECK_OK(ax_train(carried, train, NULL, NULL, &config, &summary));
    CHECK_OK(ax_train(carried, train, NULL, NULL, &config, &summary));
    CHECK(same_bits(straight, carried));
    CHECK(!same_bits(straight, fresh));

    ax_optimizer_kind held_kind;
    ax_precision held_precision;
    int64_t parameters, steps;
    int arrays;
    CHECK(ax_optimizer_state_describe(state, &held_kind, &held_precision, &parameters, &arrays, &steps));
    CHECK(held_kind == kind->optimizer && held_precision == precision);
    CHECK(parameters == ax_net_parameter_count(carried) && steps == 8);
    CHECK(arrays == (kind->optimizer == AX_OPTIMIZER_ADAM ? 2 : 1));

    /* Through its arrays, as a pickle: a third epoch is the third of three. */
    ax_optimizer_state *copy = copy_through_arrays(state);
    config.optimizer_state = copy;
    CHECK_OK(ax_train(carried, train, NULL, NULL, &config, &summary));
    ax_train_config three = train_config(kind, 3);
    ax_net *straight3 = make_net(precision, layout);
    CHECK_OK(ax_train(straight3, train, NULL, NULL, &three, &summary));
    CHECK(same_bits(straight3, carried));

    /* Interrupted after its first epoch of three: the state of 4 steps. */
    ax_net *interrupted = make_net(precision, layout);
    ax_optimizer_state *stopped = NULL;
    CHECK_OK(ax_optimizer_state_create(&stopped));
    three.optimizer_state = stopped;
    three.progress = stop_after_first_epoch;
    CHECK_FAILS(ax_train(interrupted, train, NULL, NULL, &three, &summary), AX_STATUS_INTERRUPTED,
                "interrupted");
    CHECK(ax_optimizer_state_describe(stopped, NULL, NULL, NULL, NULL, &steps) && steps == 4);
    three.progress = NULL;
    three.epochs = 2;
    CHECK_OK(ax_train(interrupted, train, NULL, NULL, &three, &summary));
    CHECK(same_bits(straight3, interrupted));

    printf("%s %s: 1 + 1 epochs with the state = 2 epochs bit for bit; through its arrays and "
           "after an interruption = 3 epochs\n",
           kind->name, precision == AX_PRECISION_F64 ? "f64" : "f32");
    ax_optimizer_state_free(stopped);
    ax_optimizer_state_free(copy);
    ax_optimizer_state_free(state);
    ax_net_free(interrupted);
    ax_net_free(straight3);
    ax_net_free(straight);
    ax_net_free(carried);
    ax_net_free(fresh);
}

/* rows [first, first + count) of data, as a set of their own. */
static ax_dataset *rows_of(ax_dataset *data, int64_t first, int64_t count)
{
    ax_dataset *part = NULL;
    CHECK_OK(ax_dataset_create(count, FEATURES, 3, 0, &part));
    if (!part)
        return NULL;
    memcpy(ax_dataset_features_data(part), ax_dataset_features_data(data) + first * FEATURES,
           (size_t)(count * FEATURES) * sizeof(float));
    memcpy(ax_dataset_labels_data(part), ax_dataset_labels_data(data) + first,
           (size_t)count * sizeof(int32_t));
    return part;
}

/* partial_fit's use: each call on new rows. */
static void check_other_rows(ax_dataset *train)
{
    ax_dataset *head = rows_of(train, 0, 40), *tail = rows_of(train, 40, 20);
    const char *layout = "12:relu,3:softmax";
    ax_net *whole = make_net(AX_PRECISION_F32, layout), *parts = make_net(AX_PRECISION_F32, layout);
    ax_optimizer_state *state = NULL;
    CHECK_OK(ax_optimizer_state_create(&state));
    ax_train_config config = train_config(&kinds[2], 1);
    config.batch_size = 20;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(whole, train, NULL, NULL, &config, &summary));
    config.optimizer_state = state;
    CHECK_OK(ax_train(parts, head, NULL, NULL, &config, &summary));
    CHECK_OK(ax_train(parts, tail, NULL, NULL, &config, &summary));
    CHECK(same_bits(whole, parts));
    printf("adam f32: an epoch over rows 0..39 then one over 40..59 = one epoch over 0..59\n");
    ax_optimizer_state_free(state);
    ax_net_free(whole);
    ax_net_free(parts);
    ax_dataset_free(head);
    ax_dataset_free(tail);
}

static void check_refusals(const ax_dataset *train)
{
    ax_net *net = make_net(AX_PRECISION_F32, "12:tanh,3:softmax");
    ax_net *smaller = make_net(AX_PRECISION_F32, "8:tanh,3:softmax");
    ax_net *wider = make_net(AX_PRECISION_F64, "12:tanh,3:softmax");
    ax_optimizer_state *state = NULL;
    CHECK_OK(ax_optimizer_state_create(&state));
    ax_train_summary summary = ax_train_summary_empty();
    ax_train_config adam = train_config(&kinds[2], 1);
    adam.optimizer_state = state;
    CHECK_OK(ax_train(net, train, NULL, NULL, &adam, &summary)); /* holds Adam's, 4 steps */
    double *before = weights_of(net);

    ax_train_config sgd = train_config(&kinds[0], 1);
    sgd.optimizer_state = state;
    CHECK_FAILS(ax_train(net, train, NULL, NULL, &sgd, &summary), AX_STATUS_BAD_ARGUMENT,
                "the optimizer state was left by adam; this run trains with sgd");
    CHECK_FAILS(ax_train(smaller, train, NULL, NULL, &adam, &summary), AX_STATUS_BAD_ARGUMENT,
                "the optimizer state is for 291 parameters; this network has 195");
    CHECK_FAILS(ax_train(wider, train, NULL, NULL, &adam, &summary), AX_STATUS_BAD_ARGUMENT,
                "the optimizer state is in precision f32; this network is f64");
    ax_train_config cg = train_config(&kinds[0], 1);
    cg.optimizer = AX_OPTIMIZER_CG;
    cg.batch_size = 0;
    cg.momentum = 0.0;
    cg.optimizer_state = state;
    CHECK_FAILS(ax_train(net, train, NULL, NULL, &cg, &summary), AX_STATUS_UNSUPPORTED,
                "cg cannot carry an optimizer state");
    cg.optimizer = AX_OPTIMIZER_LBFGS;
    CHECK_FAILS(ax_train(net, train, NULL, NULL, &cg, &summary), AX_STATUS_UNSUPPORTED,
                "lbfgs cannot carry an optimizer state");
    /* The kinds that can, as the registry lists them. */
    CHECK(strstr(ax_error_message(), "only sgd, adam and adamw take optimizer_state") != NULL);
    /* refused before anything changed: the weights and the state are as they were */
    double *after = weights_of(net);
    CHECK(before && after &&
          memcmp(before, after, (size_t)ax_net_parameter_count(net) * sizeof *before) == 0);
    int64_t steps;
    ax_optimizer_kind kind;
    CHECK(ax_optimizer_state_describe(state, &kind, NULL, NULL, NULL, &steps));
    CHECK(kind == AX_OPTIMIZER_ADAM && steps == 4);

    /* SGD: a velocity with momentum, none without */
    ax_optimizer_state *velocity = NULL;
    CHECK_OK(ax_optimizer_state_create(&velocity));
    sgd.optimizer_state = velocity;
    CHECK_OK(ax_train(net, train, NULL, NULL, &sgd, &summary));
    sgd.momentum = 0.0;
    CHECK_FAILS(ax_train(net, train, NULL, NULL, &sgd, &summary), AX_STATUS_BAD_ARGUMENT,
                "the sgd optimizer state holds 1 array; this run keeps 0 (momentum 0: no velocity)");

    /* A checkpoint holds its own optimizer state. */
    if (test_work_dir_make("axon-optimizer-state")) {
        ax_train_config written = train_config(&kinds[2], 1);
        written.checkpoint_every = 1;
        written.checkpoint_prefix = in_work("run");
        written.epsilon_before_correction = true;
        ax_net *checkpointed = make_net(AX_PRECISION_F32, "12:tanh,3:softmax");
        CHECK_OK(ax_train(checkpointed, train, NULL, NULL, &written, &summary));
        ax_net *resumed = NULL;
        ax_train_config config;
        ax_train_state *saved = NULL;
        CHECK_OK(ax_checkpoint_load(in_work("run.epoch-000001.safetensors"), &resumed, &config,
                                    &saved));
        if (resumed && saved) {
            CHECK(config.epsilon_before_correction); /* recorded and read back */
            config.epochs = 2;
            config.checkpoint_every = 0;
            config.optimizer_state = state;
            CHECK_FAILS(ax_train(resumed, train, NULL, NULL, &config, &summary),
                        AX_STATUS_BAD_ARGUMENT,
                        "a run resumes from a checkpoint or starts from a carried optimizer state");
        }
        ax_train_state_free(saved);
        ax_net_free(resumed);
        ax_net_free(checkpointed);
        test_work_dir_remove();
    }

    /* ax_optimizer_state_assign and _copy_array */
    double ok[4] = {0.5, -1.0, 0.25, 0.0}, square[4] = {0.5, 1.0, 0.25, 0.0};
    double not_finite[4] = {0.5, NAN, 0.25, 0.0};
    const double *pair[2] = {ok, ok}, *one[1] = {not_finite};
    ax_optimizer_state *assigned = NULL;
    CHECK_OK(ax_optimizer_state_create(&assigned));
    CHECK_FAILS(ax_optimizer_state_copy_array(assigned, 0, ok), AX_STATUS_BAD_ARGUMENT,
                "the optimizer state is empty");
    CHECK_FAILS(ax_optimizer_state_assign(assigned, AX_OPTIMIZER_CG, AX_PRECISION_F32, 4, 0, 0, NULL),
                AX_STATUS_BAD_ARGUMENT, "an optimizer state is sgd's, adam's or adamw's, not cg");
    CHECK_FAILS(ax_optimizer_state_assign(assigned, AX_OPTIMIZER_ADAM, (ax_precision)7, 4, 2, 1, pair),
                AX_STATUS_BAD_ARGUMENT, "unknown precision 7");
    CHECK_FAILS(ax_optimizer_state_assign(assigned, AX_OPTIMIZER_ADAM, AX_PRECISION_F32, 0, 2, 1, pair),
                AX_STATUS_BAD_ARGUMENT, "a parameter count above 0");
    CHECK_FAILS(ax_optimizer_state_assign(assigned, AX_OPTIMIZER_ADAM, AX_PRECISION_F32, 4, 2, -1, pair),
                AX_STATUS_BAD_ARGUMENT, "step count must be >= 0");
    CHECK_FAILS(ax_optimizer_state_assign(assigned, AX_OPTIMIZER_ADAM, AX_PRECISION_F32, 4, 1, 1, pair),
                AX_STATUS_BAD_ARGUMENT, "a adam optimizer state holds 2 (m and v) arrays, not 1");
    CHECK_FAILS(ax_optimizer_state_assign(assigned, AX_OPTIMIZER_SGD, AX_PRECISION_F32, 4, 2, 1, pair),
                AX_STATUS_BAD_ARGUMENT, "0 or 1 (the velocity)");
    CHECK_FAILS(ax_optimizer_state_assign(assigned, AX_OPTIMIZER_ADAM, AX_PRECISION_F32, 4, 2, 1, pair),
                AX_STATUS_BAD_ARGUMENT,
                "holds -1 at 1; its values must be finite and >= 0 (second moments)");
    /* AdamW's moments are Adam's: the same counts and checks. */
    CHECK_FAILS(ax_optimizer_state_assign(assigned, AX_OPTIMIZER_ADAMW, AX_PRECISION_F32, 4, 2, 1, pair),
                AX_STATUS_BAD_ARGUMENT, "array 1 of the adamw optimizer state holds -1 at 1");
    CHECK_FAILS(ax_optimizer_state_assign(assigned, AX_OPTIMIZER_ADAMW, AX_PRECISION_F32, 4, 1, 1, pair),
                AX_STATUS_BAD_ARGUMENT, "a adamw optimizer state holds 2 (m and v) arrays, not 1");
    CHECK_FAILS(ax_optimizer_state_assign(assigned, AX_OPTIMIZER_SGD, AX_PRECISION_F64, 4, 1, 1, one),
                AX_STATUS_BAD_ARGUMENT, "array 0 of the sgd optimizer state holds nan at 1");
    CHECK_FAILS(ax_optimizer_state_assign(assigned, AX_OPTIMIZER_SGD, AX_PRECISION_F64, 4, 1, 1, NULL),
                AX_STATUS_BAD_ARGUMENT, "array 0 of the optimizer state is missing");
    CHECK(!ax_optimizer_state_describe(assigned, NULL, NULL, NULL, NULL, NULL)); /* still empty */
    /* SGD's first array may be negative (a velocity). */
    const double *velocity_values[1] = {ok};
    CHECK_OK(ax_optimizer_state_assign(assigned, AX_OPTIMIZER_SGD, AX_PRECISION_F32, 4, 1, 1,
                                       velocity_values));
    pair[1] = square;
    CHECK_OK(ax_optimizer_state_assign(assigned, AX_OPTIMIZER_ADAM, AX_PRECISION_F32, 4, 2, 3, pair));
    double back[4];
    CHECK_OK(ax_optimizer_state_copy_array(assigned, 1, back));
    CHECK(memcmp(back, square, sizeof square) == 0);
    CHECK_FAILS(ax_optimizer_state_copy_array(assigned, 2, back), AX_STATUS_BAD_ARGUMENT,
                "holds 2 arrays; there is no array 2");
    ax_optimizer_state_free(NULL);

    ax_optimizer_state_free(assigned);
    ax_optimizer_state_free(velocity);
    ax_optimizer_state_free(state);
    free(before);
    free(after);
    ax_net_free(net);
    ax_net_free(smaller);
    ax_net_free(wider);
}

/* epsilon_before_correction is torch's update with epsilon / sqrt(1 - beta2^t):
 * scikit-learn's order (its steps themselves: python/tests/test_sklearn.py). */
static void check_epsilon_before_correction(const ax_dataset *train)
{
    ax_net *sklearn_order = make_net(AX_PRECISION_F64, "12:tanh,3:softmax");
    ax_net *torch_order = make_net(AX_PRECISION_F64, "12:tanh,3:softmax");
    ax_train_config config = train_config(&kinds[2], 1);
    config.batch_size = 0; /* one step: t = 1 */
    config.epsilon = 1e-3;
    config.epsilon_before_correction = true;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(sklearn_order, train, NULL, NULL, &config, &summary));
    config.epsilon_before_correction = false;
    config.epsilon = 1e-3 / sqrt(1.0 - pow(config.beta2, 1.0));
    CHECK_OK(ax_train(torch_order, train, NULL, NULL, &config, &summary));
    CHECK(same_bits(sklearn_order, torch_order));
    ax_net *plain = make_net(AX_PRECISION_F64, "12:tanh,3:softmax");
    config.epsilon = 1e-3; /* the same epsilon after the correction: another step */
    CHECK_OK(ax_train(plain, train, NULL, NULL, &config, &summary));
    CHECK(!same_bits(sklearn_order, plain));
    ax_net_free(plain);
    ax_net_free(sklearn_order);
    ax_net_free(torch_order);
}

int main(void)
{
    ax_dataset *train = test_uniform_dataset(ROWS, FEATURES, 11, false);
    if (!train)
        return test_finish("test_optimizer_state");
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        check_carried(&kinds[k], AX_PRECISION_F32, train);
        check_carried(&kinds[k], AX_PRECISION_F64, train);
    }
    check_other_rows(train);
    check_epsilon_before_correction(train);
    check_refusals(train);
    ax_dataset_free(train);
    return test_finish("test_optimizer_state");
}
