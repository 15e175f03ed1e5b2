/* test_subnormals.c: ax_train flushes subnormal floats to zero while it
 * trains (core/subnormals.h), on the calling thread and on OpenMP's, and
 * gives every thread its own mode back; keep_subnormals keeps them; a
 * checkpoint records the choice, and a resume that changes it is refused.
 * "Flushed" is checked by what arithmetic gives, not only by the bits of
 * the control register: 1e-20f * 1e-20f is 0 when results flush, and a
 * subnormal operand counts as 0 when operands do. */
#include "core/subnormals.h"

#include <omp.h>

#include "test_datasets.h"
#include "test_util.h"
#include "test_files.h"

/* What one thread's arithmetic does with subnormals now: 1 if both results
 * and operands flush, 0 if neither, -1 if only one does. */
static int thread_flushes(void)
{
    volatile float tiny = 1e-20f, subnormal = 1e-40f, one = 1.0f;
    const bool results = tiny * tiny == 0.0f;
    const bool operands = subnormal * one == 0.0f;
    return results && operands ? 1 : !results && !operands ? 0 : -1;
}

/* 1 if the calling thread and every thread of a team of `threads` flush,
 * 0 if none does, -1 if they disagree. */
static int team_flushes(int threads)
{
    int flushing = 0, keeping = 0;
#pragma omp parallel num_threads(threads) reduction(+ : flushing, keeping)
    {
        const int mode = thread_flushes();
        flushing += mode == 1;
        keeping += mode == 0;
    }
    const int own = thread_flushes();
    if (own == 1 && keeping == 0)
        return 1;
    if (own == 0 && flushing == 0)
        return 0;
    return -1;
}

typedef struct seen {
    int calls, flushed, kept, mixed;
} seen;

static bool record(const ax_progress *progress, void *user)
{
    (void)progress;
    seen *s = user;
    const int mode = team_flushes(ax_threads());
    s->calls++;
    s->flushed += mode == 1;
    s->kept += mode == 0;
    s->mixed += mode == -1;
    return true;
}

static ax_net *small_net(void)
{
    ax_net_config config = ax_net_defaults();
    config.seed = 3;
    config.input_width = 40;
    ax_net *net = NULL;
    CHECK_OK(ax_layers_parse("16:relu,3:softmax", &config));
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    return net;
}

/* Trains 2 epochs, a progress call every step; returns what the calls saw. */
static seen train_seeing(const ax_dataset *data, bool keep, const char *checkpoints)
{
    seen s = {0};
    ax_net *net = small_net();
    if (!net)
        return s;
    ax_train_config train = ax_train_defaults();
    train.epochs = 2;
    train.batch_size = 50;
    train.keep_subnormals = keep;
    train.progress = record;
    train.progress_user = &s;
    train.progress_interval = 0.0;
    if (checkpoints) {
        train.checkpoint_every = 1;
        train.checkpoint_prefix = checkpoints;
    }
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, data, NULL, NULL, &train, &summary));
    ax_net_free(net);
    return s;
}

int main(void)
{
#if !defined(__x86_64__)
    printf("test_subnormals: not an x86-64 build; axon changes no floating-point mode here\n");
    return 77;
#endif
    CHECK_OK(ax_set_threads(2));
    const int threads = ax_threads();
    CHECK(team_flushes(threads) == 0); /* a C program starts with IEEE's subnormals */
    ax_dataset *data = test_uniform_dataset(600, 40, 99, false);
    if (!data)
        return test_finish("test_subnormals");

    /* Flushed on every thread throughout, and given back after. */
    const seen flushing = train_seeing(data, false, NULL);
    printf("flushing: %d progress calls, %d flushed on all %d threads, %d kept, %d mixed\n",
           flushing.calls, flushing.flushed, threads, flushing.kept, flushing.mixed);
    CHECK(flushing.calls >= 24);
    CHECK(flushing.flushed == flushing.calls);
    CHECK(team_flushes(threads) == 0);

    /* keep_subnormals: never flushed. */
    const seen keeping = train_seeing(data, true, NULL);
    CHECK(keeping.calls >= 24);
    CHECK(keeping.kept == keeping.calls);
    CHECK(team_flushes(threads) == 0);

    /* Nested begins: only the outermost end gives the mode back. */
    ax_subnormals_flush_begin(threads);
    ax_subnormals_flush_begin(threads);
    CHECK(ax_subnormals_flushed() && team_flushes(threads) == 1);
    ax_subnormals_flush_end(threads);
    CHECK(team_flushes(threads) == 1);
    ax_subnormals_flush_end(threads);
    CHECK(!ax_subnormals_flushed() && team_flushes(threads) == 0);

    /* The checkpoint records the choice; a resume that changes it is refused. */
    CHECK(test_work_dir_make("axon_subnormals"));
    train_seeing(data, true, in_work("run"));
    ax_net *resumed = NULL;
    ax_train_config config;
    ax_train_state *state = NULL;
    CHECK_OK(ax_checkpoint_load(in_work("run.epoch-000001.safetensors"), &resumed, &config, &state));
    if (resumed && state) {
        CHECK(config.keep_subnormals);
        config.checkpoint_every = 0;
        config.keep_subnormals = false;
        ax_train_summary summary = ax_train_summary_empty();
        CHECK_FAILS(ax_train(resumed, data, NULL, NULL, &config, &summary),
                    AX_STATUS_BAD_ARGUMENT, "subnormal");
        config.keep_subnormals = true;
        CHECK_OK(ax_train(resumed, data, NULL, NULL, &config, &summary));
    }
    ax_net_free(resumed);
    ax_train_state_free(state);
    test_work_dir_remove();
    ax_dataset_free(data);
    return test_finish("test_subnormals");
}
