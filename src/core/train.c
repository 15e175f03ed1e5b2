/* train.c: the training loop: epochs of (shuffled) batches handed to the
 * optimizer as an objective, validation and test evaluation after each
 * epoch, early stopping with the best weights kept (TMVA's
 * ConvergenceSteps), divergence detection, progress and FLOP accounting,
 * and checkpoints: written at epoch boundaries and on interruption, and
 * resumed from (checkpoint.c holds the file format, train_state.c the
 * snapshot and restore). One loop for a process alone and for one replica
 * of several: what differs is the reducer it is given (reducer.h). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/memory.h"
#include "base/random.h"
#include "core/checkpoint.h"
#include "core/device_data.h"
#include "core/lr_schedule.h"
#include "core/net.h"
#include "core/optimizer_state.h"
#include "core/reducer.h"
#include "core/subnormals.h"
#include "core/thread_governor.h"
#include "core/train_state.h"
#include "data/dataset.h"
#include "data/fingerprint.h"
#include "data/stream.h"
#include "optim/optimizer.h"

void ax_train_config_init(ax_train_config *config, size_t size)
{
    ax_train_config defaults;
    memset(&defaults, 0, sizeof defaults);
#define AX_TRAIN_SETTING(type, field, key, default_value, low, high, check, resume) \
    defaults.field = default_value;
#include "core/train_settings.def"
#undef AX_TRAIN_SETTING
    defaults.adapt_threads = true;
    ax_sized_fill(config, size, &defaults, sizeof defaults);
}

/* Full batches of more rows than this are computed a chunk at a time: the
 * workspace then holds one chunk (8 MB for the Fashion-MNIST MLP
 * 784-128-128-10) instead of the whole data set (128 MB for it),
 * which also keeps each chunk's activations in cache between
 * its GEMMs and elementwise passes. */
enum { FULL_BATCH_CHUNK_ROWS = 4096 };

/* The rows of a full batch's chunk: on a device, whose memory is no cache
 * and where a chunk costs a dozen launches, the inference chunk's rows
 * there (AX_DEVICE_CHUNK_BYTES of workspace). */
static int64_t full_batch_chunk_rows(const ax_net *net, int64_t rows)
{
    return net->backend->host_memory ? FULL_BATCH_CHUNK_ROWS : ax_net_inference_rows(net, rows);
}

typedef struct step_context {
    ax_net *net;
    int64_t rows;
    /* A chunked full batch: the data set, computed chunk_rows at a time
     * with the gradient summed in accumulator (NULL otherwise). */
    const ax_dataset *chunked_data;
    int64_t chunk_rows;
    void *accumulator;
    ax_regularization regularization;
    double evaluate_seconds; /* time in evaluations during this step, when profiling */
    int64_t plain_evaluations; /* evaluate calls during this step (the line cache counts its own) */
    ax_reducer *reducer;     /* sums over the replicas (reducer.h); alone, it does nothing */
    bool overlap;            /* mini-batches: the backward pass may begin the sums */
    ax_line_cache *line;     /* CG and L-BFGS on one unchunked full batch: trial steps along
                                a direction reuse X W^T and X D^T (propagate_along.c); else NULL */
    double clip_norm, clip_value; /* gradient clipping (SGD, Adam, AdamW); 0 = off */
} step_context;

/* torch.nn.utils.clip_grad_value_, then clip_grad_norm_ (its 1e-6 and all),
 * on the whole batch's gradient: every replica holds the same sum by now,
 * so every one clips alike. */
static void clip_gradient(const step_context *step)
{
    ax_net *net = step->net;
    const ax_backend_ops *ops = net->backend->ops;
    if (step->clip_value > 0.0)
        ops->clamp(net->backend, net->parameter_count, step->clip_value, net->gradients);
    if (step->clip_norm > 0.0) {
        const double norm = sqrt(ops->dot(net->backend, net->parameter_count, net->gradients,
                                          net->gradients));
        const double coefficient = step->clip_norm / (norm + 1e-6);
        if (coefficient < 1.0)
            ops->scale(net->backend, net->parameter_count, coefficient, net->gradients);
    }
}

/* The objective the optimizer evaluates: the loaded batch at the current weights. */
static ax_status evaluate_loaded_batch(void *context, double *loss)
{
    step_context *step = context;
    double start = step->net->run.profile ? ax_seconds_now() : 0.0;
    if (step->line) /* the weights may have moved other than along a search */
        ax_line_cache_invalidate(step->line);
    step->plain_evaluations++;
    if (step->chunked_data) {
        *loss = ax_net_chunked_loss_gradient(step->net, step->chunked_data, step->chunk_rows,
                                             &step->regularization, step->accumulator);
    } else if (step->rows > 0) {
        if (step->overlap)
            ax_reducer_arm(step->reducer, step->net, step->rows);
        AX_TRY(ax_net_forward(step->net, step->rows, &step->regularization));
        *loss = ax_net_backward(step->net, step->rows, &step->regularization, true);
    } else {
        *loss = 0.0; /* a rank without rows in this batch adds nothing to the sums */
        if (step->overlap) /* but begins the same sums as the others */
            ax_reducer_arm(step->reducer, step->net, 0);
    }
    AX_TRY(ax_reducer_reduce(step->reducer, step->net, step->rows, loss));
    if (step->clip_norm > 0.0 || step->clip_value > 0.0)
        clip_gradient(step);
    if (step->net->run.profile)
        step->evaluate_seconds += ax_seconds_now() - start;
    return AX_STATUS_OK;
}

/* The objective along a search direction (optimizer.h): the same cost and
 * gradient, with the passes over the inputs taken out of the trial steps. */
static ax_status begin_along(void *context, const void *direction)
{
    step_context *step = context;
    double start = step->net->run.profile ? ax_seconds_now() : 0.0;
    ax_net_line_begin(step->net, step->line, direction);
    if (step->net->run.profile)
        step->evaluate_seconds += ax_seconds_now() - start;
    return AX_STATUS_OK;
}

static ax_status evaluate_along(void *context, double alpha, bool with_gradient, double *loss,
                                double *slope)
{
    step_context *step = context;
    double start = step->net->run.profile ? ax_seconds_now() : 0.0;
    *loss = ax_net_line_evaluate(step->net, step->line, alpha, with_gradient, &step->regularization,
                                 slope);
    if (step->net->run.profile)
        step->evaluate_seconds += ax_seconds_now() - start;
    return AX_STATUS_OK;
}

static void end_along(void *context, double alpha)
{
    step_context *step = context;
    ax_net_line_end(step->net, step->line, alpha);
}

/* Whether the run drops per layer (config->dropout_layers not all zero). */
static bool drops_per_layer(const ax_train_config *config)
{
    for (int l = 0; l < AX_MAX_LAYERS; l++)
        if (config->dropout_layers[l] != 0.0)
            return true;
    return false;
}

/* CG and L-BFGS: one epoch is one iteration (of a line search). */
static bool is_full_batch(const ax_train_config *config)
{
    return ax_optimizer_is_full_batch(config->optimizer);
}

static ax_status check_config(const ax_net *net, const ax_train_config *config,
                              const ax_dataset *validation, int64_t rows)
{
    /* Each setting's own range (train_settings.def), as the type prints it. */
#define SETTING_VALUE_DOUBLE double
#define SETTING_VALUE_INT int
#define SETTING_VALUE_INT64 long long
#define VALID(valid, message)                                     \
    if (!(valid))                                                 \
        return ax_fail(AX_STATUS_BAD_ARGUMENT, message, value);
#define NO_CHECK
#define CHECK_DOUBLE(field, check) CHECK_VALUE(SETTING_VALUE_DOUBLE, field, check)
#define CHECK_ADDED_DOUBLE(field, check) CHECK_VALUE(SETTING_VALUE_DOUBLE, field, check)
#define CHECK_ADDED_INT(field, check) CHECK_VALUE(SETTING_VALUE_INT, field, check)
#define CHECK_ADDED_INT64(field, check) CHECK_VALUE(SETTING_VALUE_INT64, field, check)
#define CHECK_ADDED_LR_SCHEDULE(field, check)
#define CHECK_INT(field, check) CHECK_VALUE(SETTING_VALUE_INT, field, check)
#define CHECK_INT64(field, check) CHECK_VALUE(SETTING_VALUE_INT64, field, check)
#define CHECK_VALUE(type, field, check)           \
    {                                             \
        const type value = config->field;         \
        (void)value;                              \
        check                                     \
    }
#define CHECK_BOOL(field, check)
#define CHECK_ADDED_BOOL(field, check)
#define CHECK_U64(field, check)
#define CHECK_OPTIMIZER(field, check)
#define CHECK_KEEP_BEST(field, check)
#define CHECK_PATH(field, check)
#define AX_TRAIN_SETTING(type, field, key, default_value, low, high, check, resume) \
    CHECK_##type(field, check)
#include "core/train_settings.def"
#undef AX_TRAIN_SETTING
#undef CHECK_VALUE
#undef CHECK_DOUBLE
#undef CHECK_ADDED_DOUBLE
#undef CHECK_ADDED_INT
#undef CHECK_ADDED_INT64
#undef CHECK_ADDED_LR_SCHEDULE
#undef CHECK_INT
#undef CHECK_INT64
#undef CHECK_BOOL
#undef CHECK_ADDED_BOOL
#undef CHECK_U64
#undef CHECK_OPTIMIZER
#undef CHECK_KEEP_BEST
#undef CHECK_PATH
#undef NO_CHECK
#undef VALID
    /* The checks that involve other settings, the network or the data. */
    for (int l = 0; l < AX_MAX_LAYERS; l++) {
        const double rate = config->dropout_layers[l];
        if (!(rate >= 0.0 && rate < 1.0))
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "dropout_layers[%d] must be in [0, 1), not %g",
                           l, rate);
        if (rate > 0.0 && l >= net->layer_count)
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "dropout_layers[%d] is %g, but the network has %d layers: one rate per "
                           "layer's input, the network's inputs first",
                           l, rate, net->layer_count);
    }
    if (drops_per_layer(config) && config->dropout > 0.0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "give dropout (every hidden layer) or dropout_layers (per layer), not both");
    if (drops_per_layer(config) && is_full_batch(config))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s needs a deterministic cost: dropout must be 0",
                       ax_optimizer_name(config->optimizer));
    if (config->dropout > 0.0 && net->layer_count < 2)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "dropout applies to hidden layers; this network has none");
    if (config->early_stop > 0 && !validation)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "early stopping needs a validation set (e.g. --val-split 0.1)");
    if (is_full_batch(config)) {
        /* A line search compares losses of one fixed function: the full
         * training set, the same at every trial point. */
        if (config->batch_size > 0 && config->batch_size < rows)
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "%s works on the full batch: set the batch size to 0, not %lld",
                           ax_optimizer_name(config->optimizer), (long long)config->batch_size);
        if (config->dropout > 0.0)
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "%s needs a deterministic cost: dropout must be 0, not %g",
                           ax_optimizer_name(config->optimizer), config->dropout);
        /* Its sufficient-decrease test compares costs that differ by far
         * less than a bf16 rounding of the activations moves them. */
        if (net->config.precision == AX_PRECISION_BF16)
            return ax_fail(AX_STATUS_UNSUPPORTED,
                           "%s refuses bf16: its line search compares costs that differ in digits "
                           "beyond bfloat16's 8 bits, so trial steps would be judged by rounding "
                           "noise; use f32 (or f64), or sgd/adam for bf16",
                           ax_optimizer_name(config->optimizer));
    }
    const char *schedule_wrong = ax_lr_schedule_check_text(config);
    if (schedule_wrong)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "learning-rate schedule %s: %s",
                       ax_lr_schedule_name(config->lr_schedule), schedule_wrong);
    const bool scheduled = config->lr_schedule != AX_LR_SCHEDULE_CONSTANT;
    if (is_full_batch(config) && (scheduled || config->warmup_steps > 0))
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s chooses its own steps by line search: a learning-rate schedule or "
                       "warmup applies to sgd, adam and adamw",
                       ax_optimizer_name(config->optimizer));
    if ((config->lr_schedule == AX_LR_SCHEDULE_INVSCALING ||
         config->lr_schedule == AX_LR_SCHEDULE_ADAPTIVE) &&
        config->optimizer != AX_OPTIMIZER_SGD)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "the %s schedule is scikit-learn's for its sgd solver: use it with sgd, "
                       "not %s",
                       ax_lr_schedule_name(config->lr_schedule), ax_optimizer_name(config->optimizer));
    if (config->lr_schedule == AX_LR_SCHEDULE_PLATEAU && !validation)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "the plateau schedule watches the validation loss: it needs a validation "
                       "set (e.g. --val-split 0.1)");
    if (is_full_batch(config) && (config->clip_norm > 0.0 || config->clip_value > 0.0))
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s needs the true gradient for its line search: gradient clipping "
                       "(clip_norm, clip_value) applies to sgd, adam and adamw",
                       ax_optimizer_name(config->optimizer));
    AX_TRY(ax_net_check_l1(net, config->l1));
    if (config->clip_value > 0.0)
        AX_TRY(ax_backend_require(net->backend->ops, AX_BACKEND_FEATURE_STRATEGIES,
                                  "clipping gradients by value"));
    if (config->checkpoint_every < 0 || config->keep_checkpoints < 0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "checkpoint_every and keep_checkpoints must be >= 0, not %d and %d",
                       config->checkpoint_every, config->keep_checkpoints);
    if (config->checkpoint_every > 0 && !(config->checkpoint_prefix && *config->checkpoint_prefix))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "checkpoints every %d epochs need a file prefix",
                       config->checkpoint_every);
    return AX_STATUS_OK;
}

/* Early stopping keeps the best validation weights; keep_best keeps the best
 * weights by the loss it names, without stopping early. */
static bool keeps_best(const ax_train_config *config)
{
    return config->early_stop > 0 || config->keep_best != AX_KEEP_BEST_NONE;
}

static ax_status check_keep_best(const ax_train_config *config, const ax_dataset *validation,
                                 const ax_dataset *test)
{
    switch (config->keep_best) {
    case AX_KEEP_BEST_NONE:
        return AX_STATUS_OK;
    case AX_KEEP_BEST_VALIDATION:
        if (!validation)
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "keeping the best validation weights needs a validation set "
                           "(e.g. --val-split 0.1)");
        return AX_STATUS_OK;
    case AX_KEEP_BEST_TEST:
        if (!test)
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "keeping the best test weights needs a test set (e.g. --test FILE)");
        if (config->early_stop > 0)
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "early stopping watches the validation loss; it cannot keep the best "
                           "test weights (use one or the other)");
        return AX_STATUS_OK;
    }
    return ax_fail(AX_STATUS_BAD_ARGUMENT, "keep_best must be none, validation or test, not %d",
                   (int)config->keep_best);
}

/* The options that shape the trajectory must be those of the checkpoint
 * (train_settings.def's RESUME column; the first that differs is named). */
static ax_status check_resume_config(const ax_train_config *c, const ax_train_state *state)
{
    const ax_train_config *r = &state->config;
    const char *changed = NULL;
#define AX_TRAIN_SETTING(type, field, key, default_value, low, high, check, resume) \
    if (!changed && (resume) && c->field != r->field)                              \
        changed = (resume);
#include "core/train_settings.def"
#undef AX_TRAIN_SETTING
    if (!changed && memcmp(c->dropout_layers, r->dropout_layers, sizeof c->dropout_layers) != 0)
        changed = "dropout per layer";
    if (changed)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s differs from the checkpoint's; a resumed run must keep the recorded options",
                       changed);
    if (c->epochs < state->trainer.epoch || (c->epochs == state->trainer.epoch && state->trainer.batch > 0))
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "the checkpoint is at epoch %d; epochs must be at least that, not %d",
                       state->trainer.epoch + (state->trainer.batch > 0), c->epochs);
    return AX_STATUS_OK;
}

/* The network and the data must be those the checkpoint was made with.
 * Replicated, rows and hashes are those of the whole sets (the snapshot's),
 * so the number of ranks may differ from the checkpoint's run. */
static ax_status check_resume_data(const ax_net *net, const ax_train_state *state,
                                   const ax_dataset *train, const ax_dataset *validation,
                                   const ax_train_state *now, bool replicated)
{
    const ax_net_config *a = &net->config, *b = &state->net_config;
    bool same_net = a->input_width == b->input_width && a->layer_count == b->layer_count &&
                    a->loss == b->loss && a->precision == b->precision &&
                    net->parameter_count == state->parameter_count;
    if (same_net) { /* every kind's settings, as its text gives them */
        char layout_a[AX_MAX_LAYERS * 32], layout_b[AX_MAX_LAYERS * 32];
        ax_layout_text(a, true, layout_a, sizeof layout_a); /* with the input's shape */
        ax_layout_text(b, true, layout_b, sizeof layout_b);
        same_net = strcmp(layout_a, layout_b) == 0;
    }
    if (!same_net)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "the network is not the checkpoint's (layout, loss or precision differ); "
                       "use the one ax_checkpoint_load made");
    if (now->rows != state->rows || train->features != state->features ||
        train->classes != state->classes || train->targets != state->targets)
        return ax_fail(AX_STATUS_BAD_DATA,
                       "%s: the training data has %lld rows%s, %lld features, %lld classes, %lld "
                       "targets; the checkpoint was made with %lld, %lld, %lld, %lld",
                       train->source, (long long)now->rows, replicated ? " (all ranks)" : "",
                       (long long)train->features,
                       (long long)train->classes, (long long)train->targets, (long long)state->rows,
                       (long long)state->features, (long long)state->classes, (long long)state->targets);
    uint64_t train_hash = now->train_hash, validation_hash = now->validation_hash;
    if (state->fingerprint == 1) { /* a checkpoint of an older axon */
        if (replicated)
            return ax_fail(AX_STATUS_UNSUPPORTED,
                           "the checkpoint was written by an axon whose data fingerprint cannot be "
                           "computed from shards; resume it in one process (without mpirun)");
        train_hash = ax_dataset_fingerprint_v1(train);
        validation_hash = validation ? ax_dataset_fingerprint_v1(validation) : 0;
    }
    if (train_hash != state->train_hash)
        return ax_fail(AX_STATUS_BAD_DATA,
                       "%s: the training data has the checkpoint's shape but not its values%s",
                       train->source,
                       replicated ? " (the fingerprint of all ranks' rows, in rank order, differs)"
                       : train->stream ? " (a streamed set is its meta.json with its crop, mirroring "
                                         "and mean image: give the run's own)"
                                  : "");
    if (now->validation_rows != state->validation_rows ||
        (validation && validation_hash != state->validation_hash))
        return ax_fail(AX_STATUS_BAD_DATA,
                       "the validation set differs from the checkpoint's (%lld rows then, %lld now)",
                       (long long)state->validation_rows, (long long)now->validation_rows);
    return AX_STATUS_OK;
}

/* A backend operation that failed (a CUDA error) leaves NaN behind it, so
 * the backend's own failure is asked for before anything non-finite is
 * called divergence: the user then reads the device's error, not "try a
 * lower learning rate". */
static ax_status backend_status(ax_net *net) { return net->backend->ops->status(net->backend); }

/* Names the first layer whose weights or biases are no longer finite, or
 * the backend's failure during the epoch (one that left finite values too). */
static ax_status check_parameters_finite(ax_net *net, int epoch)
{
    AX_TRY(backend_status(net));
    /* Every layer checked with one host wait; the first bad one named. */
    ax_reduction checks[AX_MAX_LAYERS];
    for (int l = 0; l < net->layer_count; l++)
        checks[l] = (ax_reduction){AX_REDUCTION_NONFINITE, net->layers[l].parameter_count,
                                   ax_layer_block(net, net->parameters, l), NULL, 0.0};
    ax_backend_reduce(net->backend, net->layer_count, checks);
    for (int l = 0; l < net->layer_count; l++) {
        if (checks[l].value != 0.0)
            return ax_fail(AX_STATUS_DIVERGED,
                           "training diverged in epoch %d: layer %d's weights are NaN or infinite; "
                           "try a lower learning rate",
                           epoch, l + 1);
    }
    return AX_STATUS_OK;
}

typedef struct trainer {
    ax_net *net;
    const ax_dataset *train, *validation, *test;
    const ax_train_config *config;
    ax_optimizer *optimizer;
    int64_t *order;       /* (global_rows) shuffled row order, NULL for full batch */
    int64_t global_rows;  /* training rows of all ranks (train's alone for one process) */
    ax_reducer *reducer;  /* the sums over the replicas (docs/mpi.md); alone, none */
    void *accumulator;    /* gradient-shaped, for a chunked full batch; else NULL */
    int64_t chunk_rows;   /* a chunked full batch's rows per chunk */
    ax_line_cache *line;  /* see step_context; else NULL */
    int64_t batch_rows;
    int64_t batches;
    double *best_parameters;
    ax_train_summary *summary;
    /* Where training stands, what a checkpoint records of it (train_state.h):
     * state.epoch epochs complete and state.batch batches of the next one. */
    ax_trainer_state state;
    /* Checkpoints: the state written, its arrays reused from one to the next;
     * line_base holds the line-search cache's base for it. */
    ax_train_state snapshot;
    double *line_base;
    ax_thread_governor threads; /* how many of its threads the run uses */
    /* Losses kept on the device (backend.h, AX_BACKEND_FEATURE_DEVICE_LOSS):
     * each step's loss is added to a total there, and the host reads it
     * (and the first non-finite step) at progress time and at the epoch's
     * end instead of waiting for every step's. */
    bool deferred_losses;
    /* A schedule or warmup sets the optimizer's rate before every step
     * (else it stays the config's, untouched). */
    bool scheduled;
} trainer;

/* The trainer's objects a snapshot copies and a restore fills. */
static ax_trainer_parts parts_of(const trainer *t)
{
    return (ax_trainer_parts){.net = t->net, .config = t->config, .optimizer = t->optimizer,
                              .line = t->line, .order = t->order, .rows = t->global_rows,
                              .batches = t->batches, .best_parameters = t->best_parameters};
}

/* Writes PREFIX.interrupted (interrupted) or PREFIX.epoch-NNNNNN of where
 * training stands (t->state). Replicated, rank 0 alone writes (the replicas
 * are identical) and every rank learns whether it could, so that none goes
 * on training alone. */
static ax_status write_checkpoint(trainer *t, bool interrupted_run)
{
    const ax_train_config *config = t->config;
    ax_status status = AX_STATUS_OK;
    if (t->reducer->rank == 0) {
        const ax_trainer_parts parts = parts_of(t);
        status = ax_train_state_take(&t->snapshot, &t->line_base, &t->state, &parts);
        if (status == AX_STATUS_OK)
            status = interrupted_run
                         ? ax_checkpoint_write_interrupted(&t->snapshot, config->checkpoint_prefix)
                         : ax_checkpoint_write_epoch(&t->snapshot, config->checkpoint_prefix,
                                                     config->keep_checkpoints);
    }
    return ax_reducer_share_outcome(t->reducer, status, "write the checkpoint");
}

/* On a stop asked for by the progress callback: PREFIX.interrupted. */
static ax_status interrupted(trainer *t, const char *where, int where_epoch)
{
    const char *prefix = t->config->checkpoint_prefix;
    const int64_t batch = t->state.batch;
    if (prefix)
        AX_TRY(write_checkpoint(t, true));
    /* Where it stopped, as the checkpoint records it: inside an epoch, the
     * batch (the progress line a program shows may be older). */
    char place[96] = "";
    if (batch > 0)
        snprintf(place, sizeof place, ", after batch %lld of %lld", (long long)batch,
                 (long long)t->batches);
    return ax_fail(AX_STATUS_INTERRUPTED, "training interrupted %s epoch %d of %d%s%s%s%s", where,
                   where_epoch, t->config->epochs, place, prefix ? "; checkpoint written to " : "",
                   prefix ? prefix : "", prefix ? ".interrupted.safetensors" : "");
}

/* Only rank 0 of a replicated run calls the progress callback. */
static bool reports_progress(const trainer *t)
{
    return t->config->progress && t->reducer->rank == 0;
}

/* The next count rows of a streamed training set into *local. A file that
 * cannot be read stops training where it stands, as an interruption does:
 * with a checkpoint prefix, PREFIX.interrupted records the batches done, to
 * resume from once the file is mended. */
static ax_status next_streamed(trainer *t, int epoch, int64_t b, int64_t count, ax_batch *local)
{
    ax_dataset *window = NULL;
    ax_status status = ax_batch_stream_next(t->train->stream, count, &window);
    if (status == AX_STATUS_OK) {
        *local = (ax_batch){.data = window, .order = NULL, .first = 0, .count = count};
        t->net->workspace.loaded_valid = false; /* new rows where the last batch's were */
        return AX_STATUS_OK;
    }
    ax_batch_stream_end(t->train->stream);
    char message[1200];
    snprintf(message, sizeof message, "%s", ax_error_message());
    const char *prefix = t->config->checkpoint_prefix;
    const bool written = prefix && write_checkpoint(t, true) == AX_STATUS_OK;
    const char *outcome = !prefix ? "" : written ? "; checkpoint written to "
                                                 : "; the checkpoint could not be written";
    return ax_fail(status, "%s; training stopped in epoch %d before batch %lld of %lld%s%s%s",
                   message, epoch, (long long)b + 1, (long long)t->batches, outcome,
                   written ? prefix : "", written ? ".interrupted.safetensors" : "");
}

/* The losses kept on the device so far: t->state.loss_sum becomes their
 * total; a step whose loss was NaN or infinite is reported as the step it
 * was, as the per-step check reports it. */
static ax_status read_deferred_losses(trainer *t, int epoch)
{
    ax_backend *backend = t->net->backend;
    double total, bad_value;
    int64_t first_bad;
    backend->ops->loss_read(backend, &total, &first_bad, &bad_value);
    AX_TRY(backend_status(t->net));
    t->state.loss_sum = total;
    if (first_bad >= 0)
        return ax_fail(AX_STATUS_DIVERGED,
                       "training diverged in epoch %d, batch %lld: the loss is %s; "
                       "try a lower learning rate",
                       epoch, (long long)first_bad, isnan(bad_value) ? "NaN" : "infinite");
    return AX_STATUS_OK;
}

static ax_status run_epoch(trainer *t, int epoch, ax_progress *progress, double *flops_done)
{
    const ax_train_config *config = t->config;
    const int64_t rows = t->global_rows; /* every rank shuffles and counts globally */
    /* A run resumed inside an epoch has that epoch's order already. */
    const int64_t first_batch = t->state.batch;
    if (t->order && config->shuffle && first_batch == 0)
        AX_PROFILED(t->net, AX_PROFILE_SHUFFLE, -1, 0.0, ax_rng_permutation(&t->state.rng, t->order, rows));
    /* The epoch's order (drawn now, or restored from a checkpoint) goes to
     * the device once, where the batches are gathered by it. */
    if (t->order && t->net->run.device_data)
        AX_PROFILED(t->net, AX_PROFILE_BATCH_COPY, -1, 0.0,
                    ax_device_data_set_order(t->net->run.device_data, t->order, rows));
    ax_objective objective = {.evaluate = evaluate_loaded_batch};
    step_context step = {.net = t->net,
                         .chunked_data = t->accumulator ? t->train : NULL,
                         .chunk_rows = t->chunk_rows,
                         .accumulator = t->accumulator,
                         .regularization = {.size = sizeof(ax_regularization),
                                            .l2 = config->l2, .dropout = config->dropout,
                                            .l1 = config->l1,
                                            .dropout_layers = drops_per_layer(config)
                                                                  ? config->dropout_layers
                                                                  : NULL},
                         .clip_norm = config->clip_norm,
                         .clip_value = config->clip_value,
                         .reducer = t->reducer,
                         /* The same on every rank: mini-batches (a full batch may
                          * be chunked on some ranks only) */
                         .overlap = t->order != NULL};
    objective.context = &step;
    if (t->line) {
        step.line = t->line;
        objective.line_begin = begin_along;
        objective.evaluate_along = evaluate_along;
        objective.line_end = end_along;
    }

    progress->learning_rate = is_full_batch(config) ? NAN : t->state.lr.rate;
    ax_backend *backend = t->net->backend;
    const bool deferred = t->deferred_losses;
    if (deferred) /* the total goes on from where the epoch stands (a resumed one: its sum) */
        backend->ops->loss_reset(backend, t->state.loss_sum);
    double start = ax_seconds_now(), last_report = start;
    ax_batch_stream *stream = t->train->stream;
    const double waited_before = stream ? ax_batch_stream_wait_seconds(stream) : 0.0;
    if (stream) { /* its rows come in the pass's order, not t->order's */
        const ax_stream_pass pass = {.training = true, .shuffle = config->shuffle,
                                     .seed = config->seed, .epoch = epoch,
                                     .skip_rows = first_batch * t->batch_rows};
        AX_TRY(ax_batch_stream_begin(stream, &pass));
    }
    for (int64_t b = first_batch; b < t->batches; b++) {
        const double step_begin = ax_seconds_now();
        ax_batch batch = {.data = t->train, .order = t->order, .first = b * t->batch_rows};
        batch.count = rows - batch.first < t->batch_rows ? rows - batch.first : t->batch_rows;
        ax_batch local; /* this rank's rows of the global batch, as rows of its shard */
        if (stream) {
            AX_TRY(next_streamed(t, epoch, b, batch.count, &local));
        } else {
            ax_reducer_select(t->reducer, &batch, &local);
        }
        if (!t->accumulator && local.count > 0) /* a chunked full batch loads each chunk as it goes */
            ax_net_load_batch(t->net, &local, true);
        step.rows = local.count;
        step.regularization.dropout_key =
            ax_reducer_dropout_key(t->reducer, ax_hash64(config->seed ^ ax_hash64(t->state.step)));
        double loss;
        const int64_t evaluations_before = t->optimizer->counters.evaluations;
        step.evaluate_seconds = 0.0;
        step.plain_evaluations = 0;
        double step_start = t->net->run.profile ? ax_seconds_now() : 0.0;
        if (deferred)
            backend->ops->loss_defer(backend, true);
        if (t->scheduled)
            t->optimizer->config.learning_rate =
                t->state.lr.rate * ax_lr_warmup_factor(config, t->state.step);
        ax_status status = t->optimizer->kind->step(t->optimizer, &objective, &loss);
        if (deferred)
            backend->ops->loss_defer(backend, false);
        if (status != AX_STATUS_OK) { /* a line search's "diverged" may be the device's NaN */
            AX_TRY(backend_status(t->net));
            return status;
        }
        if (t->net->run.profile) /* the step's own work: the update and any line-search algebra */
            ax_profile_record_seconds(t->net->run.profile, AX_PROFILE_OPTIMIZER_UPDATE, -1,
                                      ax_seconds_now() - step_start - step.evaluate_seconds, 0.0);
        t->state.step++;
        /* A test's fault at this step (AXON_TEST_FAULT): the progress report
         * comes now, so that a stop it asks for lands after this very step. */
        if (ax_test_fault("step", (long long)t->state.step))
            last_report = -INFINITY;
        /* A line search evaluates several times per step; SGD and Adam once. */
        const int64_t passes = t->optimizer->counters.evaluations - evaluations_before;
        if (deferred) {
            /* The same arithmetic as below, on the device: loss is the
             * output loss's sum times its scale (no L2 term: l2 is 0 here). */
            backend->ops->loss_accumulate(backend, ax_net_loss_scale(t->net, local.count),
                                          (double)batch.count, b + 1);
            t->net->run.device_losses++;
        } else if (!isfinite(loss)) {
            AX_TRY(backend_status(t->net));
            /* Finite weights whose penalty overflows: the cause is the l2
             * given, and a lower learning rate would not help. */
            const double l2 = t->config->l2;
            if (l2 > 0 && !isfinite(ax_net_l2_penalty(t->net, l2)))
                return ax_fail(AX_STATUS_DIVERGED,
                               "training diverged in epoch %d, batch %lld: the L2 penalty "
                               "(l2 %g / 2 times the sum of squared weights) is %s; try a "
                               "smaller l2",
                               epoch, (long long)b + 1, l2,
                               isnan(ax_net_l2_penalty(t->net, l2)) ? "NaN" : "infinite");
            return ax_fail(AX_STATUS_DIVERGED,
                           "training diverged in epoch %d, batch %lld: the loss is %s; "
                           "try a lower learning rate",
                           epoch, (long long)b + 1, isnan(loss) ? "NaN" : "infinite");
        } else {
            t->state.loss_sum += loss * (double)batch.count;
        }
        t->state.batch = b + 1;
        double step_flops;
        if (step.line) /* trial steps along a direction skip the passes over X */
            step_flops = ax_net_train_flops(t->net, batch.count) * (double)step.plain_evaluations +
                         ax_line_cache_take_flops(step.line);
        else
            step_flops = ax_net_train_flops(t->net, batch.count) * (double)(passes > 0 ? passes : 1);
        *flops_done += step_flops;
        ax_thread_governor_step(&t->threads, ax_seconds_now() - step_begin);
        /* A rank voted to stop with this step's sum. After the epoch's last
         * step, the stop waits for the epoch's end (a checkpoint records
         * a stop inside an epoch before its last batch). */
        if (ax_reducer_stop_agreed(t->reducer) && b + 1 < t->batches)
            return interrupted(t, "in", epoch);

        double now = ax_seconds_now();
        if (reports_progress(t) && (now - last_report >= config->progress_interval) && b + 1 < t->batches) {
            last_report = now;
            if (deferred)
                AX_TRY(read_deferred_losses(t, epoch));
            double samples = (double)(batch.first + batch.count);
            progress->batch = b + 1;
            progress->train_loss = t->state.loss_sum / samples;
            progress->samples_per_second = (samples - (double)(first_batch * t->batch_rows)) / (now - start);
            progress->eta_seconds = (double)(rows - (int64_t)samples) / progress->samples_per_second +
                                    (double)(config->epochs - epoch) * (double)rows /
                                        progress->samples_per_second;
            progress->epoch_done = false;
            progress->threads = t->threads.threads;
            if (stream)
                progress->data_wait_seconds = ax_batch_stream_wait_seconds(stream) - waited_before;
            if (!config->progress(progress, config->progress_user) && ax_reducer_vote_stop(t->reducer))
                return interrupted(t, "in", epoch); /* else the others learn it with the next sum */
        }
    }
    if (stream)
        ax_batch_stream_end(stream);
    if (deferred)
        AX_TRY(read_deferred_losses(t, epoch));
    progress->epoch_seconds = ax_seconds_now() - start;
    progress->threads = t->threads.threads;
    progress->fewer_threads_seconds = t->threads.fewer_seconds;
    progress->data_wait_seconds =
        stream ? ax_batch_stream_wait_seconds(stream) - waited_before : 0.0;
    t->threads.fewer_seconds = 0.0;
    progress->batch = t->batches;
    progress->train_loss = t->state.loss_sum / (double)rows;
    /* The epoch's batches are done: train_epochs counts it (or not). */
    t->state.batch = 0;
    t->state.loss_sum = 0.0;
    progress->samples_per_second =
        (double)(rows - first_batch * t->batch_rows) / progress->epoch_seconds;
    return check_parameters_finite(t->net, epoch);
}

/* The figures of a data set; replicated, of the set whose shards the ranks hold. */
static ax_status evaluate_into(ax_net *net, ax_reducer *reducer, const ax_dataset *data,
                               double *loss, double *accuracy)
{
    *loss = *accuracy = NAN;
    if (!data)
        return AX_STATUS_OK;
    if (data->rows == 0) /* a rank's empty shard (alone, the checks refused it) */
        return ax_reducer_sum_evaluation(reducer, 0, loss, accuracy);
    ax_evaluation evaluation = ax_evaluation_empty();
    /* Evaluation is timed as one entry, not mixed into the training passes. */
    ax_profile *profile = net->run.profile;
    net->run.profile = NULL;
    double start = ax_seconds_now();
    ax_status status = ax_net_evaluate(net, data, &evaluation);
    net->run.profile = profile;
    if (profile)
        ax_profile_record(profile, AX_PROFILE_EVALUATION, -1, start, 0.0);
    AX_TRY(status);
    *loss = evaluation.loss;
    *accuracy = evaluation.accuracy;
    ax_evaluation_free(&evaluation);
    return ax_reducer_sum_evaluation(reducer, data->rows, loss, accuracy);
}

/* The schedule's step at the end of an epoch (the progress line shows the
 * rate the epoch used; the checkpoint of the epoch records the next one).
 * scikit-learn's schedules rescale SGD's velocity at a change (axon.h,
 * ax_lr_schedule). True when the adaptive schedule ends training. */
static bool step_schedule(trainer *t, int epoch, const ax_progress *progress)
{
    const ax_train_config *config = t->config;
    const double before = t->state.lr.rate;
    const bool stop = ax_lr_schedule_after_epoch(config, &t->state.lr, epoch, t->global_rows,
                                                 progress->train_loss, progress->validation_loss);
    const bool holds_steps = config->lr_schedule == AX_LR_SCHEDULE_INVSCALING ||
                             config->lr_schedule == AX_LR_SCHEDULE_ADAPTIVE;
    if (holds_steps && t->state.lr.rate != before && config->optimizer == AX_OPTIMIZER_SGD &&
        config->momentum > 0.0 && t->optimizer->state[0]) {
        ax_backend *backend = t->net->backend;
        backend->ops->scale(backend, t->optimizer->count, before / t->state.lr.rate,
                            t->optimizer->state[0]);
    }
    return stop;
}

static ax_status train_epochs(trainer *t, ax_train_summary *summary)
{
    const ax_train_config *config = t->config;
    ax_progress progress;
    memset(&progress, 0, sizeof progress);
    progress.epochs = config->epochs;
    progress.batches = t->batches;

    summary->stop_reason = is_full_batch(config) ? "maximum iterations reached" : "all epochs run";
    /* A checkpoint written as early stopping ended its run resumes as ended. */
    const bool stopped = config->early_stop > 0 && t->state.since_best >= config->early_stop;
    if (stopped)
        summary->stop_reason = "early stopping: no validation improvement";
    for (int epoch = t->state.epoch + 1; !stopped && epoch <= config->epochs; epoch++) {
        progress.epoch = epoch;
        double flops = 0.0;
        const int64_t steps_before = t->optimizer->counters.steps;
        AX_TRY(run_epoch(t, epoch, &progress, &flops));
        t->state.seconds += progress.epoch_seconds;
        if (config->check_replicas)
            AX_TRY(ax_reducer_check(t->reducer, t->net, epoch));
        /* A line-search optimizer that stopped without moving (converged at
         * the start, or no Wolfe point) made no iteration: as scipy's k,
         * the epoch is not counted. */
        if (t->optimizer->converged && t->optimizer->counters.steps == steps_before) {
            summary->stop_reason = t->optimizer->stop_reason;
            if (epoch == 1) {
                t->state.final_train_loss = progress.train_loss;
                AX_TRY(evaluate_into(t->net, t->reducer, t->test, &progress.test_loss, &progress.test_accuracy));
                t->state.final_test_accuracy = progress.test_accuracy;
            }
            break;
        }
        t->state.epoch = epoch;
        t->state.gflop += flops * 1e-9;
        t->state.final_train_loss = progress.train_loss;
        progress.gflops = flops * 1e-9 / progress.epoch_seconds;
        AX_TRY(evaluate_into(t->net, t->reducer, t->validation, &progress.validation_loss,
                             &progress.validation_accuracy));
        AX_TRY(evaluate_into(t->net, t->reducer, t->test, &progress.test_loss, &progress.test_accuracy));
        t->state.final_test_accuracy = progress.test_accuracy;
        summary->best_epoch = epoch;
        progress.eta_seconds = (double)(config->epochs - epoch) * progress.epoch_seconds;
        progress.epoch_done = true;
        bool stop = step_schedule(t, epoch, &progress);
        if (stop)
            summary->stop_reason = "adaptive learning rate: no improvement with the rate at 1e-6 "
                                   "or below";
        if (keeps_best(config)) {
            const double watched = config->keep_best == AX_KEEP_BEST_TEST ? progress.test_loss
                                                                          : progress.validation_loss;
            if (watched < t->state.best_loss) {
                t->state.best_loss = watched;
                t->state.since_best = 0;
                ax_net_parameters_get(t->net, t->best_parameters);
                t->state.best_epoch = epoch;
            } else if (++t->state.since_best >= config->early_stop && config->early_stop > 0) {
                summary->stop_reason = "early stopping: no validation improvement";
                stop = true;
            }
        }
        if (!stop && t->optimizer->converged) {
            summary->stop_reason = t->optimizer->stop_reason;
            stop = true;
        }
        bool go_on = !reports_progress(t) || config->progress(&progress, config->progress_user);
        /* Rank 0's answer, or a vote still on its way, stops every rank. */
        bool stop_all = false;
        AX_TRY(ax_reducer_agree_stop(t->reducer, !go_on, &stop_all));
        go_on = !stop_all;
        /* A line-search optimizer that just converged ends the run here
         * anyway: it ends as run, not as interrupted. */
        if (!go_on && !t->optimizer->converged)
            return interrupted(t, "after", epoch);
        if (stop)
            break;
        if (config->checkpoint_every > 0 && epoch % config->checkpoint_every == 0)
            AX_TRY(write_checkpoint(t, false));
    }
    if (keeps_best(config) && t->state.best_epoch > 0) {
        ax_net_parameters_set(t->net, t->best_parameters);
        summary->best_epoch = t->state.best_epoch;
        if (t->test && t->state.best_epoch != t->state.epoch) {
            double loss;
            AX_TRY(evaluate_into(t->net, t->reducer, t->test, &loss, &t->state.final_test_accuracy));
        }
    }
    return AX_STATUS_OK;
}

/* Puts the trainer, the optimizer and the weights where the checkpoint left them. */
static ax_status restore(trainer *t, const ax_train_state *s)
{
    const ax_trainer_parts parts = parts_of(t);
    AX_TRY(ax_train_state_restore(s, &parts, &t->state));
    t->summary->best_epoch = s->trainer.best_epoch > 0 ? s->trainer.best_epoch : s->trainer.epoch;
    return AX_STATUS_OK;
}

/* The summary's figures, from where training stands. */
static void summarize(const trainer *t, ax_train_summary *summary)
{
    summary->epochs_run = t->state.epoch;
    summary->seconds = t->state.seconds;
    summary->gflop = t->state.gflop;
    summary->final_train_loss = t->state.final_train_loss;
    summary->final_test_accuracy = t->state.final_test_accuracy;
    summary->evaluations = t->optimizer->counters.evaluations;
    summary->gradient_evaluations = t->optimizer->counters.gradient_evaluations;
}

/* What the snapshot records of the data: replicated, of the whole sets. */
static ax_status describe_data(trainer *t)
{
    ax_train_state *s = &t->snapshot;
    const ax_dataset *train = t->train, *validation = t->validation;
    s->features = train->features;
    s->classes = train->classes;
    s->targets = train->targets;
    s->fingerprint = AX_FINGERPRINT_VERSION;
    s->rows = t->reducer->train_rows;
    s->validation_rows = t->reducer->validation_rows;
    return ax_reducer_fingerprints(t->reducer, train, validation, &s->train_hash, &s->validation_hash);
}

/* Whether the run keeps its losses on the device ($AXON_DEVICE_LOSS=off:
 * never, to compare and for tests). */
static bool defers_losses(ax_net *net, const ax_train_config *config, bool sharded,
                          bool full_batch)
{
    const char *setting = getenv("AXON_DEVICE_LOSS");
    ax_backend *backend = net->backend;
    if ((setting && strcmp(setting, "off") == 0) || sharded || full_batch ||
        is_full_batch(config) || config->l2 != 0.0 || config->l1 != 0.0 ||
        !ax_backend_supports(backend->ops, AX_BACKEND_FEATURE_DEVICE_LOSS, NULL, 0))
        return false;
    const bool on = backend->ops->loss_defer(backend, true); /* the backend may decline */
    backend->ops->loss_defer(backend, false);
    return on;
}

/* The optimizer's weight spans (AdamW decays them, not the biases). */
static void name_weights(const ax_net *net, ax_optimizer *optimizer)
{
    optimizer->weight_spans = 0;
    for (int l = 0; l < net->layer_count && l < AX_MAX_LAYERS; l++) {
        if (net->layers[l].weight_count == 0)
            continue;
        optimizer->weight_offset[optimizer->weight_spans] = net->layers[l].weight_offset;
        optimizer->weight_length[optimizer->weight_spans] = net->layers[l].weight_count;
        optimizer->weight_spans++;
    }
}

/* ax_train, for one process or as one rank of several: the reducer says. */
static ax_status train_reduced(ax_net *net, const ax_dataset *train, const ax_dataset *validation,
                               const ax_dataset *test, const ax_train_config *config,
                               ax_train_summary *summary, ax_reducer *reducer)
{
    const double setup_start = ax_seconds_now();
    const int64_t global_rows = reducer->train_rows;
    const bool sharded = reducer->ranks > 1;
    AX_TRY(ax_test_fault_check());
    AX_TRY(check_config(net, config, validation, global_rows));
    AX_TRY(check_keep_best(config, validation, test));
    AX_TRY(ax_optimizer_state_check_kind(config->optimizer_state, config->optimizer));
    if (config->resume && ax_optimizer_state_describe(config->optimizer_state, NULL, NULL, NULL,
                                                      NULL, NULL))
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "a run resumes from a checkpoint or starts from a carried optimizer state, "
                       "not both: the checkpoint holds its own optimizer state (name an empty one "
                       "to carry the run's state on)");
    /* A rank's shard may hold no rows; the sets as a whole have some. */
    if (!sharded || train->rows > 0)
        AX_TRY(ax_net_check_data(net, train, "training"));
    if (validation && (!sharded || validation->rows > 0))
        AX_TRY(ax_net_check_data(net, validation, "validation"));
    if (test && (!sharded || test->rows > 0))
        AX_TRY(ax_net_check_data(net, test, "test"));
    AX_TRY(ax_dataset_check_finite(train));
    const bool sparse = ax_dataset_is_sparse(train) || (validation && ax_dataset_is_sparse(validation)) ||
                        (test && ax_dataset_is_sparse(test));
    if (sparse && (config->checkpoint_prefix || config->resume))
        return ax_fail(AX_STATUS_UNSUPPORTED,
                       "checkpoints fingerprint their data row by row, which a sparse set does not "
                       "hold: train on sparse data without checkpoints, or on dense data");

    const ax_train_state *resume = config->resume;
    if (resume)
        AX_TRY(check_resume_config(config, resume));
    trainer t = {.net = net, .train = train, .validation = validation, .test = test, .config = config,
                 .summary = summary, .state = ax_trainer_state_start(config->seed),
                 .global_rows = global_rows, .reducer = reducer,
                 .scheduled = config->lr_schedule != AX_LR_SCHEDULE_CONSTANT ||
                              config->warmup_steps > 0};
    t.state.lr = ax_lr_state_start(config);
    /* Batches are global (all ranks' rows); a rank computes its part of one. */
    const int64_t rows = global_rows, local_rows = train->rows;
    const bool full_batch = config->batch_size == 0 || config->batch_size >= rows;
    t.batch_rows = full_batch ? rows : config->batch_size;
    t.batches = (rows + t.batch_rows - 1) / t.batch_rows;

    if (train->stream && (full_batch || sharded))
        return ax_fail(AX_STATUS_UNSUPPORTED,
                       "%s is streamed from disk, which serves mini-batches in one process; %s "
                       "needs the whole set in memory (load it whole: --stream off)",
                       train->source,
                       sharded ? "training on several ranks" : "a full batch (CG, L-BFGS, --batch 0 or a batch of every row)");
    const int64_t chunk_rows = full_batch_chunk_rows(net, local_rows);
    const bool chunked = full_batch && local_rows > chunk_rows;
    t.chunk_rows = chunk_rows;
    const int64_t local_batch = t.batch_rows < local_rows ? t.batch_rows : local_rows > 0 ? local_rows : 1;
    /* Shuffled or sparse rows are gathered into an input buffer of their own. */
    ax_status status = ax_net_reserve_shuffled(net, chunked ? chunk_rows : local_batch,
                                               !full_batch || sparse);
    if (status == AX_STATUS_OK && chunked) {
        status = ax_backend_alloc(net->backend, (size_t)net->parameter_count * net->backend->real_size,
                                  "the full-batch gradient sum", &t.accumulator);
    }
    if (status == AX_STATUS_OK)
        status = ax_optimizer_create(config, net->backend, net->parameters, net->gradients,
                                     net->parameter_count, &t.optimizer);
    if (status == AX_STATUS_OK)
        name_weights(net, t.optimizer);
    if (status == AX_STATUS_OK)
        status = ax_optimizer_state_start(config->optimizer_state, t.optimizer, net->config.precision);
    /* |w| is not linear along a direction: with L1 the searches evaluate plainly. */
    if (status == AX_STATUS_OK && ax_optimizer_uses(config->optimizer, AX_OPTIMIZER_SETTING_LINE_SEARCH) &&
        full_batch && !chunked && !sharded && config->l1 == 0.0 && ax_net_line_cache_fits(net))
        status = ax_line_cache_create(net, local_batch, &t.line);
    /* A full batch is a sum over all rows: order does not matter, so rows are
     * used where they lie. */
    if (status == AX_STATUS_OK && !full_batch) {
        t.order = malloc((size_t)rows * sizeof *t.order);
        if (!t.order)
            status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for the row order");
        else
            for (int64_t i = 0; i < rows; i++)
                t.order[i] = i;
    }
    if (status == AX_STATUS_OK && keeps_best(config)) {
        t.best_parameters = malloc((size_t)net->parameter_count * sizeof(double));
        if (!t.best_parameters)
            status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for the best weights");
    }
    /* One process: the sets go to the device once for the run, where its
     * backend can hold them (replicas gather their shards' rows by orders
     * of their own, from host memory). */
    if (status == AX_STATUS_OK && !sharded) {
        const ax_dataset *sets[3] = {train, validation, test};
        status = ax_device_data_create(net->backend, sets, 3, &net->run.device_data,
                                       net->run.data_placement, sizeof net->run.data_placement);
    } else if (sharded) {
        snprintf(net->run.data_placement, sizeof net->run.data_placement,
                 "data sets in host memory: each replica gathers its shard's rows there");
    }
    /* SGD and Adam alone, without L2 (whose penalty is a dot product read
     * back): each step's loss stays on the device (backend.h); a line
     * search reads its losses, and replicas sum theirs on the host. */
    /* The upload is queued: the setup's time ends when it is done. */
    if (status == AX_STATUS_OK && net->run.device_data)
        status = ax_backend_synchronize(net->backend);
    summary->setup_seconds = ax_seconds_now() - setup_start;
    if (status == AX_STATUS_OK)
        t.deferred_losses = defers_losses(net, config, sharded, full_batch);
    if (status == AX_STATUS_OK)
        status = ax_reducer_agree_ready(reducer, AX_STATUS_OK);
    /* After the agreement: replicated, the fingerprints are sums over the
     * ranks, which every rank must reach. */
    if (status == AX_STATUS_OK && (config->checkpoint_prefix || resume))
        status = describe_data(&t);
    if (status == AX_STATUS_OK && resume)
        status = check_resume_data(net, resume, train, validation, &t.snapshot, sharded);
    if (status == AX_STATUS_OK && resume)
        status = restore(&t, resume);
    if (status == AX_STATUS_OK) {
        /* Where other thread counts would give other bits, the count stays. */
        ax_thread_governor_start(&t.threads, config->adapt_threads && !sharded &&
                                                 net->backend->host_memory &&
                                                 ax_gemm_thread_invariant(net->backend->precision,
                                                                          ax_threads()));
        const int64_t steps_before = t.optimizer->counters.steps;
        const int flush_threads = config->keep_subnormals ? 0 : ax_threads();
        if (flush_threads)
            ax_subnormals_flush_begin(flush_threads);
        status = train_epochs(&t, summary);
        if (flush_threads)
            ax_subnormals_flush_end(flush_threads);
        ax_thread_governor_finish(&t.threads);
        summarize(&t, summary);
        /* Whatever ended the run, the state goes with the weights it left;
         * a resumed run's is the checkpoint's even with no epoch left to run
         * (a phase resumed at its last epoch hands it to the next). */
        if (t.optimizer->counters.steps != steps_before || resume) {
            const ax_status kept = ax_optimizer_state_keep(config->optimizer_state, t.optimizer,
                                                           net->config.precision);
            if (status == AX_STATUS_OK)
                status = kept;
        }
    }
    ax_train_state_release_taken(&t.snapshot, t.line_base);
    ax_device_data_free(net->run.device_data);
    net->run.device_data = NULL;
    free(t.order);
    free(t.best_parameters);
    if (t.accumulator)
        net->backend->ops->free(net->backend, t.accumulator);
    ax_line_cache_free(t.line);
    ax_optimizer_free(t.optimizer);
    return status;
}

ax_status ax_train_reduced(ax_net *net, const ax_dataset *train, const ax_dataset *validation,
                           const ax_dataset *test, const ax_train_config *config,
                           ax_train_summary *summary, ax_reducer *reducer)
{
    /* The data sets stay put while training runs: a full batch loaded into
     * the workspace stays valid from step to step (propagate.c). */
    ax_net_keep_loaded_batch(net, true);
    ax_status status = train_reduced(net, train, validation, test, config, summary, reducer);
    ax_net_keep_loaded_batch(net, false);
    return status;
}

/* ax_train with the caller's config read and a whole summary. */
static ax_status train_sized(ax_net *net, const ax_dataset *train, const ax_dataset *validation,
                             const ax_dataset *test, const ax_train_config *config,
                             ax_train_summary *summary)
{
    /* A program built against an older header passes a shorter config:
     * the fields it lacks keep their defaults. */
    ax_train_config full = ax_train_defaults();
    AX_TRY(ax_sized_read(config, &full,
                         offsetof(ax_train_config, check_replicas) + sizeof config->check_replicas,
                         sizeof full, "a training config", "ax_train_defaults"));
    config = &full;
    ax_reducer reducer;
    AX_TRY(ax_reducer_create(config->communicator, net, train, validation, test, &reducer));
    ax_status status = ax_train_reduced(net, train, validation, test, config, summary, &reducer);
    return ax_reducer_finish(&reducer, status, &summary->communication_seconds);
}

ax_status ax_train(ax_net *net, const ax_dataset *train, const ax_dataset *validation,
                   const ax_dataset *test, const ax_train_config *config,
                   ax_train_summary *caller_summary)
{
    /* The caller's summary may be shorter than ours (an older header): the
     * run fills a whole one, and only the caller's size is copied out. */
    AX_TRY(ax_sized_output_check(caller_summary, sizeof(ax_train_summary), "a training summary",
                                 "ax_train_summary_empty"));
    ax_train_summary summary = ax_train_summary_empty();
    summary.final_test_accuracy = NAN;
    ax_status status = train_sized(net, train, validation, test, config, &summary);
    ax_sized_output_write(caller_summary, &summary, sizeof summary);
    return status;
}
