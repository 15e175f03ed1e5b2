/* train.c: the training loop: epochs of (shuffled) batches handed to the
 * optimizer as an objective, validation and test evaluation after each
 * epoch, early stopping with the best weights kept (TMVA's
 * ConvergenceSteps), divergence detection, progress and FLOP accounting,
 * and checkpoints: written at epoch boundaries and on interruption, and
 * resumed from (checkpoint.c holds the file format). */
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
#include "core/net.h"
#include "data/dataset.h"
#include "dist/replicas.h"
#include "optim/optimizer.h"

void ax_train_config_init(ax_train_config *config, size_t size)
{
    ax_train_config defaults;
    memset(&defaults, 0, sizeof defaults);
#define AX_TRAIN_SETTING(type, field, key, default_value, low, high, check, resume) \
    defaults.field = default_value;
#include "core/train_settings.def"
#undef AX_TRAIN_SETTING
    ax_sized_fill(config, size, &defaults, sizeof defaults);
}

/* Full batches of more rows than this are computed a chunk at a time: the
 * workspace then holds one chunk (8 MB for B1) instead of the whole data set
 * (B1: 128 MB), which also keeps each chunk's activations in cache between
 * its GEMMs and elementwise passes. */
enum { FULL_BATCH_CHUNK_ROWS = 4096 };

typedef struct step_context {
    ax_net *net;
    int64_t rows;
    /* A chunked full batch: the data set, computed FULL_BATCH_CHUNK_ROWS at
     * a time with the gradient summed in accumulator (NULL otherwise). */
    const ax_dataset *chunked_data;
    void *accumulator;
    ax_regularization regularization;
    double evaluate_seconds; /* time in evaluations during this step, when profiling */
    int64_t plain_evaluations; /* evaluate calls during this step (the line cache counts its own) */
    ax_replicas *replicas;   /* one of several ranks: sums over them; else NULL */
    bool overlap;            /* replicated mini-batches: the backward pass begins the sums */
    ax_line_cache *line;     /* CG and L-BFGS on one unchunked full batch: trial steps along
                                a direction reuse X W^T and X D^T (propagate_along.c); else NULL */
} step_context;

/* The objective the optimizer evaluates: the loaded batch at the current weights. */
static ax_status evaluate_loaded_batch(void *context, double *loss)
{
    step_context *step = context;
    double start = step->net->profile ? ax_seconds_now() : 0.0;
    if (step->line) /* the weights may have moved other than along a search */
        ax_line_cache_invalidate(step->line);
    step->plain_evaluations++;
    if (step->chunked_data) {
        *loss = ax_net_chunked_loss_gradient(step->net, step->chunked_data, FULL_BATCH_CHUNK_ROWS,
                                             &step->regularization, step->accumulator);
    } else if (step->rows > 0) {
        if (step->overlap)
            ax_replicas_arm(step->replicas, step->net, step->rows);
        ax_net_forward(step->net, step->rows, &step->regularization);
        *loss = ax_net_backward(step->net, step->rows, &step->regularization, true);
    } else {
        *loss = 0.0; /* a rank without rows in this batch adds nothing to the sums */
        if (step->overlap) /* but begins the same sums as the others */
            ax_replicas_arm(step->replicas, step->net, 0);
    }
    if (step->replicas)
        AX_TRY(ax_replicas_reduce(step->replicas, step->net, step->rows, loss));
    if (step->net->profile)
        step->evaluate_seconds += ax_seconds_now() - start;
    return AX_STATUS_OK;
}

/* The objective along a search direction (optimizer.h): the same cost and
 * gradient, with the passes over the inputs taken out of the trial steps. */
static ax_status begin_along(void *context, const void *direction)
{
    step_context *step = context;
    double start = step->net->profile ? ax_seconds_now() : 0.0;
    ax_net_line_begin(step->net, step->line, direction);
    if (step->net->profile)
        step->evaluate_seconds += ax_seconds_now() - start;
    return AX_STATUS_OK;
}

static ax_status evaluate_along(void *context, double alpha, bool with_gradient, double *loss,
                                double *slope)
{
    step_context *step = context;
    double start = step->net->profile ? ax_seconds_now() : 0.0;
    *loss = ax_net_line_evaluate(step->net, step->line, alpha, with_gradient, &step->regularization,
                                 slope);
    if (step->net->profile)
        step->evaluate_seconds += ax_seconds_now() - start;
    return AX_STATUS_OK;
}

static void end_along(void *context, double alpha)
{
    step_context *step = context;
    ax_net_line_end(step->net, step->line, alpha);
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
#define CHECK_INT(field, check) CHECK_VALUE(SETTING_VALUE_INT, field, check)
#define CHECK_INT64(field, check) CHECK_VALUE(SETTING_VALUE_INT64, field, check)
#define CHECK_VALUE(type, field, check)           \
    {                                             \
        const type value = config->field;         \
        (void)value;                              \
        check                                     \
    }
#define CHECK_BOOL(field, check)
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
#undef CHECK_INT
#undef CHECK_INT64
#undef CHECK_BOOL
#undef CHECK_U64
#undef CHECK_OPTIMIZER
#undef CHECK_KEEP_BEST
#undef CHECK_PATH
#undef NO_CHECK
#undef VALID
    /* The checks that involve other settings, the network or the data. */
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
    }
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
    if (changed)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s differs from the checkpoint's; a resumed run must keep the recorded options",
                       changed);
    if (c->epochs < state->epoch || (c->epochs == state->epoch && state->batch > 0))
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "the checkpoint is at epoch %d; epochs must be at least that, not %d",
                       state->epoch + (state->batch > 0), c->epochs);
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
        ax_layout_text(a, false, layout_a, sizeof layout_a);
        ax_layout_text(b, false, layout_b, sizeof layout_b);
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
    const ax_backend_ops *ops = net->backend->ops;
    AX_TRY(backend_status(net));
    for (int l = 0; l < net->layer_count; l++) {
        const ax_layer *layer = &net->layers[l];
        if (!ops->all_finite(net->backend, layer->parameter_count,
                             ax_layer_block(net, net->parameters, l)))
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
    ax_replicas *replicas; /* one of several ranks (docs/mpi.md); else NULL */
    void *accumulator;    /* gradient-shaped, for a chunked full batch; else NULL */
    ax_line_cache *line;  /* see step_context; else NULL */
    int64_t batch_rows;
    int64_t batches;
    double *best_parameters;
    uint64_t step;
    int best_epoch;
    ax_rng rng;
    double best_loss;
    int since_best;
    ax_train_summary *summary;
    /* Resuming inside an epoch: where it starts and its loss so far. */
    int first_epoch;
    int64_t first_batch;
    double first_loss_sum;
    /* Checkpoints: the state written, its arrays reused from one to the next;
     * line_base holds the line-search cache's base for it. */
    ax_train_state snapshot;
    double *line_base;
} trainer;

/* Fills t->snapshot with where training stands: `epoch` epochs complete
 * and `batch` batches of the next one (with its loss so far). */
static ax_status take_snapshot(trainer *t, int epoch, int64_t batch, double loss_sum)
{
    ax_train_state *s = &t->snapshot;
    const int64_t n = t->net->parameter_count;
    if (!s->parameters) {
        s->parameters = malloc((size_t)n * sizeof(double));
        if (!s->parameters)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for a checkpoint");
        for (int i = 0; i < 2; i++)
            if (t->optimizer->state[i]) {
                s->optimizer_state[i] = malloc((size_t)n * sizeof(double));
                if (!s->optimizer_state[i])
                    return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for a checkpoint");
            }
    }
    s->net_config = t->net->config;
    s->config = *t->config;
    s->config.resume = NULL;
    s->config.progress = NULL;
    s->config.progress_user = NULL;
    s->note = (char *)t->config->checkpoint_note; /* borrowed: the snapshot is never freed whole */
    s->epoch = epoch;
    s->batch = batch;
    s->step = t->step;
    s->optimizer_steps = t->optimizer->steps;
    s->evaluations = t->optimizer->evaluations;
    s->gradient_evaluations = t->optimizer->gradient_evaluations;
    s->rng = t->rng;
    s->order = batch > 0 ? t->order : NULL; /* borrowed */
    s->loss_sum = loss_sum;
    s->best_loss = t->best_loss;
    s->best_epoch = t->best_epoch;
    s->since_best = t->since_best;
    s->seconds = t->summary->seconds;
    s->gflop = t->summary->gflop;
    s->final_train_loss = t->summary->final_train_loss;
    s->final_test_accuracy = t->summary->final_test_accuracy;
    s->parameter_count = n;
    ax_net_parameters_get(t->net, s->parameters);
    for (int i = 0; i < 2; i++)
        if (s->optimizer_state[i])
            ax_optimizer_state_get(t->optimizer, i, s->optimizer_state[i]);
    s->best_parameters = t->best_epoch > 0 ? t->best_parameters : NULL; /* borrowed */
    /* CG and L-BFGS: their own state, and the cache's X W^T as the searches
     * left it (a resume that recomputed it from X would differ by rounding). */
    ax_optimizer_saved_free(&s->optimizer_saved);
    AX_TRY(ax_optimizer_save(t->optimizer, &s->optimizer_saved));
    s->line_base = NULL;
    s->line_base_count = t->line ? ax_line_cache_save(t->line, NULL, NULL) : 0;
    if (s->line_base_count > 0) {
        if (!t->line_base) {
            t->line_base = malloc((size_t)s->line_base_count * sizeof(double));
            if (!t->line_base)
                return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for a checkpoint");
        }
        ax_line_cache_save(t->line, t->line_base, &s->line_searches);
        s->line_base = t->line_base; /* borrowed */
    }
    return AX_STATUS_OK;
}

/* Writes PREFIX.interrupted (interrupted) or PREFIX.epoch-NNNNNN. Replicated,
 * rank 0 alone writes (the replicas are identical) and every rank learns
 * whether it could, so that none goes on training alone. */
static ax_status write_checkpoint(trainer *t, int epoch, int64_t batch, double loss_sum,
                                  bool interrupted_run)
{
    const ax_train_config *config = t->config;
    ax_status status = AX_STATUS_OK;
    if (!t->replicas || t->replicas->rank == 0) {
        status = take_snapshot(t, epoch, batch, loss_sum);
        if (status == AX_STATUS_OK)
            status = interrupted_run
                         ? ax_checkpoint_write_interrupted(&t->snapshot, config->checkpoint_prefix)
                         : ax_checkpoint_write_epoch(&t->snapshot, config->checkpoint_prefix,
                                                     config->keep_checkpoints);
    }
    if (t->replicas)
        status = ax_replicas_share_outcome(t->replicas, status, "write the checkpoint");
    return status;
}

/* On a stop asked for by the progress callback: PREFIX.interrupted. */
static ax_status interrupted(trainer *t, int epoch, int64_t batch, double loss_sum, const char *where,
                             int where_epoch)
{
    const char *prefix = t->config->checkpoint_prefix;
    if (prefix)
        AX_TRY(write_checkpoint(t, epoch, batch, loss_sum, true));
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
    return t->config->progress && (!t->replicas || t->replicas->rank == 0);
}

static ax_status run_epoch(trainer *t, int epoch, ax_progress *progress, double *flops_done)
{
    const ax_train_config *config = t->config;
    const int64_t rows = t->global_rows; /* every rank shuffles and counts globally */
    /* A run resumed inside an epoch has that epoch's order already. */
    const int64_t first_batch = t->first_batch;
    double loss_sum = t->first_loss_sum;
    t->first_batch = 0;
    t->first_loss_sum = 0.0;
    if (t->order && config->shuffle && first_batch == 0)
        AX_PROFILED(t->net, AX_PROFILE_SHUFFLE, -1, 0.0, ax_rng_permutation(&t->rng, t->order, rows));
    ax_objective objective = {.evaluate = evaluate_loaded_batch};
    step_context step = {.net = t->net,
                         .chunked_data = t->accumulator ? t->train : NULL,
                         .accumulator = t->accumulator,
                         .regularization = {.l2 = config->l2, .dropout = config->dropout},
                         .replicas = t->replicas,
                         /* The same on every rank: mini-batches (a full batch may
                          * be chunked on some ranks only) */
                         .overlap = t->replicas && t->order != NULL};
    objective.context = &step;
    if (t->line) {
        step.line = t->line;
        objective.line_begin = begin_along;
        objective.evaluate_along = evaluate_along;
        objective.line_end = end_along;
    }

    double start = ax_seconds_now(), last_report = start;
    for (int64_t b = first_batch; b < t->batches; b++) {
        ax_batch batch = {.data = t->train, .order = t->order, .first = b * t->batch_rows};
        batch.count = rows - batch.first < t->batch_rows ? rows - batch.first : t->batch_rows;
        ax_batch local = batch;
        if (t->replicas) { /* this rank's rows of the global batch, as rows of its shard */
            local.count = ax_replicas_select(t->replicas, t->order, batch.first, batch.count);
            local.order = t->order ? t->replicas->local_order : NULL;
            local.first = 0;
        }
        if (!t->accumulator && local.count > 0) /* a chunked full batch loads each chunk as it goes */
            ax_net_load_batch(t->net, &local, true);
        step.rows = local.count;
        step.regularization.dropout_key = ax_hash64(config->seed ^ ax_hash64(t->step));
        if (t->replicas)
            step.regularization.dropout_key =
                ax_replicas_dropout_key(t->replicas, step.regularization.dropout_key);
        double loss;
        const int64_t evaluations_before = t->optimizer->evaluations;
        step.evaluate_seconds = 0.0;
        step.plain_evaluations = 0;
        double step_start = t->net->profile ? ax_seconds_now() : 0.0;
        ax_status status = t->optimizer->kind->step(t->optimizer, &objective, &loss);
        if (status != AX_STATUS_OK) { /* a line search's "diverged" may be the device's NaN */
            AX_TRY(backend_status(t->net));
            return status;
        }
        if (t->net->profile) /* the step's own work: the update and any line-search algebra */
            ax_profile_record_seconds(t->net->profile, AX_PROFILE_OPTIMIZER_UPDATE, -1,
                                      ax_seconds_now() - step_start - step.evaluate_seconds, 0.0);
        t->step++;
        /* A test's fault at this step (AXON_TEST_FAULT): the progress report
         * comes now, so that a stop it asks for lands after this very step. */
        if (ax_test_fault("step", (long long)t->step))
            last_report = -INFINITY;
        /* A line search evaluates several times per step; SGD and Adam once. */
        const int64_t passes = t->optimizer->evaluations - evaluations_before;
        if (!isfinite(loss)) {
            AX_TRY(backend_status(t->net));
            return ax_fail(AX_STATUS_DIVERGED,
                           "training diverged in epoch %d, batch %lld: the loss is %s; "
                           "try a lower learning rate",
                           epoch, (long long)b + 1, isnan(loss) ? "NaN" : "infinite");
        }
        loss_sum += loss * (double)batch.count;
        if (step.line) /* trial steps along a direction skip the passes over X */
            *flops_done += ax_net_train_flops(t->net, batch.count) * (double)step.plain_evaluations +
                           ax_line_cache_take_flops(step.line);
        else
            *flops_done += ax_net_train_flops(t->net, batch.count) * (double)(passes > 0 ? passes : 1);
        /* A rank voted to stop with this step's sum. After the epoch's last
         * step, the stop waits for the epoch's end (a checkpoint records
         * a stop inside an epoch before its last batch). */
        if (t->replicas && t->replicas->stop_agreed && b + 1 < t->batches)
            return interrupted(t, epoch - 1, b + 1, loss_sum, "in", epoch);

        double now = ax_seconds_now();
        if (reports_progress(t) && (now - last_report >= config->progress_interval) && b + 1 < t->batches) {
            last_report = now;
            double samples = (double)(batch.first + batch.count);
            progress->batch = b + 1;
            progress->train_loss = loss_sum / samples;
            progress->samples_per_second = (samples - (double)(first_batch * t->batch_rows)) / (now - start);
            progress->eta_seconds = (double)(rows - (int64_t)samples) / progress->samples_per_second +
                                    (double)(config->epochs - epoch) * (double)rows /
                                        progress->samples_per_second;
            progress->epoch_done = false;
            if (!config->progress(progress, config->progress_user)) {
                if (!t->replicas)
                    return interrupted(t, epoch - 1, b + 1, loss_sum, "in", epoch);
                t->replicas->stop_vote = 1.0; /* the other ranks learn it with the next sum */
            }
        }
    }
    progress->epoch_seconds = ax_seconds_now() - start;
    progress->batch = t->batches;
    progress->train_loss = loss_sum / (double)rows;
    progress->samples_per_second =
        (double)(rows - first_batch * t->batch_rows) / progress->epoch_seconds;
    return check_parameters_finite(t->net, epoch);
}

/* The figures of a data set; replicated, of the set whose shards the ranks hold. */
static ax_status evaluate_into(ax_net *net, ax_replicas *replicas, const ax_dataset *data,
                               double *loss, double *accuracy)
{
    *loss = *accuracy = NAN;
    if (!data)
        return AX_STATUS_OK;
    if (replicas && data->rows == 0)
        return ax_replicas_sum_evaluation(replicas, 0, loss, accuracy);
    ax_evaluation evaluation;
    /* Evaluation is timed as one entry, not mixed into the training passes. */
    ax_profile *profile = net->profile;
    net->profile = NULL;
    double start = ax_seconds_now();
    ax_status status = ax_net_evaluate(net, data, &evaluation);
    net->profile = profile;
    if (profile)
        ax_profile_record(profile, AX_PROFILE_EVALUATION, -1, start, 0.0);
    AX_TRY(status);
    *loss = evaluation.loss;
    *accuracy = evaluation.accuracy;
    ax_evaluation_free(&evaluation);
    if (replicas)
        return ax_replicas_sum_evaluation(replicas, data->rows, loss, accuracy);
    return AX_STATUS_OK;
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
    const bool stopped = config->early_stop > 0 && t->since_best >= config->early_stop;
    if (stopped)
        summary->stop_reason = "early stopping: no validation improvement";
    for (int epoch = t->first_epoch; !stopped && epoch <= config->epochs; epoch++) {
        progress.epoch = epoch;
        double flops = 0.0;
        const int64_t steps_before = t->optimizer->steps;
        ax_status status = run_epoch(t, epoch, &progress, &flops);
        summary->evaluations = t->optimizer->evaluations;
        summary->gradient_evaluations = t->optimizer->gradient_evaluations;
        AX_TRY(status);
        summary->seconds += progress.epoch_seconds;
        if (t->replicas && config->check_replicas)
            AX_TRY(ax_replicas_check(t->replicas, t->net, epoch));
        /* A line-search optimizer that stopped without moving (converged at
         * the start, or no Wolfe point) made no iteration: as scipy's k,
         * the epoch is not counted. */
        if (t->optimizer->converged && t->optimizer->steps == steps_before) {
            summary->stop_reason = t->optimizer->stop_reason;
            if (epoch == 1) {
                summary->final_train_loss = progress.train_loss;
                AX_TRY(evaluate_into(t->net, t->replicas, t->test, &progress.test_loss, &progress.test_accuracy));
                summary->final_test_accuracy = progress.test_accuracy;
            }
            break;
        }
        summary->epochs_run = epoch;
        summary->gflop += flops * 1e-9;
        summary->final_train_loss = progress.train_loss;
        progress.gflops = flops * 1e-9 / progress.epoch_seconds;
        AX_TRY(evaluate_into(t->net, t->replicas, t->validation, &progress.validation_loss,
                             &progress.validation_accuracy));
        AX_TRY(evaluate_into(t->net, t->replicas, t->test, &progress.test_loss, &progress.test_accuracy));
        summary->final_test_accuracy = progress.test_accuracy;
        summary->best_epoch = epoch;
        progress.eta_seconds = (double)(config->epochs - epoch) * progress.epoch_seconds;
        progress.epoch_done = true;
        bool stop = false;
        if (keeps_best(config)) {
            const double watched = config->keep_best == AX_KEEP_BEST_TEST ? progress.test_loss
                                                                          : progress.validation_loss;
            if (watched < t->best_loss) {
                t->best_loss = watched;
                t->since_best = 0;
                ax_net_parameters_get(t->net, t->best_parameters);
                t->best_epoch = epoch;
            } else if (++t->since_best >= config->early_stop && config->early_stop > 0) {
                summary->stop_reason = "early stopping: no validation improvement";
                stop = true;
            }
        }
        if (!stop && t->optimizer->converged) {
            summary->stop_reason = t->optimizer->stop_reason;
            stop = true;
        }
        bool go_on = !reports_progress(t) || config->progress(&progress, config->progress_user);
        if (t->replicas) { /* rank 0's answer, or a vote still on its way, stops every rank */
            bool stop_all = false;
            AX_TRY(ax_replicas_agree_stop(t->replicas, !go_on, &stop_all));
            go_on = !stop_all;
        }
        /* A line-search optimizer that just converged ends the run here
         * anyway: it ends as run, not as interrupted. */
        if (!go_on && !t->optimizer->converged)
            return interrupted(t, epoch, 0, 0.0, "after", epoch);
        if (stop)
            break;
        if (config->checkpoint_every > 0 && epoch % config->checkpoint_every == 0)
            AX_TRY(write_checkpoint(t, epoch, 0, 0.0, false));
    }
    if (keeps_best(config) && t->best_epoch > 0) {
        ax_net_parameters_set(t->net, t->best_parameters);
        summary->best_epoch = t->best_epoch;
        if (t->test && t->best_epoch != summary->epochs_run) {
            double loss;
            AX_TRY(evaluate_into(t->net, t->replicas, t->test, &loss, &summary->final_test_accuracy));
        }
    }
    return AX_STATUS_OK;
}

/* Puts the trainer, the optimizer and the weights where the checkpoint left them. */
static ax_status restore(trainer *t, const ax_train_state *s)
{
    ax_net_parameters_set(t->net, s->parameters);
    for (int i = 0; i < 2; i++) {
        if (s->optimizer_state[i])
            AX_TRY(ax_optimizer_state_set(t->optimizer, i, s->optimizer_state[i]));
        else if (t->optimizer->state[i])
            return ax_fail(AX_STATUS_BAD_FILE, "the checkpoint lacks the %s optimizer's state array %d",
                           t->optimizer->kind->name, i);
    }
    AX_TRY(ax_optimizer_restore(t->optimizer, &s->optimizer_saved));
    /* Without a cache here (several ranks now) the saved base is not
     * needed; without one saved, the first search computes it from X. */
    if (t->line && s->line_base)
        AX_TRY(ax_line_cache_restore(t->line, s->line_base, s->line_base_count, s->line_searches));
    t->optimizer->steps = s->optimizer_steps;
    t->optimizer->evaluations = s->evaluations;
    t->optimizer->gradient_evaluations = s->gradient_evaluations;
    t->step = s->step;
    t->rng = s->rng;
    t->best_loss = s->best_loss;
    t->best_epoch = s->best_epoch;
    t->since_best = s->since_best;
    if (t->best_epoch > 0 && t->best_parameters) {
        if (!s->best_parameters)
            return ax_fail(AX_STATUS_BAD_FILE, "the checkpoint lacks the best weights of epoch %d",
                           s->best_epoch);
        memcpy(t->best_parameters, s->best_parameters,
               (size_t)t->net->parameter_count * sizeof(double));
    }
    t->first_epoch = s->epoch + 1;
    t->first_batch = s->batch;
    t->first_loss_sum = s->loss_sum;
    if (s->batch > 0) {
        if (!t->order || !s->order || s->batch >= t->batches)
            return ax_fail(AX_STATUS_BAD_FILE,
                           "the checkpoint stopped at batch %lld, which this batch size (%lld batches) "
                           "does not have",
                           (long long)s->batch, (long long)t->batches);
        memcpy(t->order, s->order, (size_t)t->global_rows * sizeof *t->order);
    }
    ax_train_summary *summary = t->summary;
    summary->epochs_run = s->epoch;
    summary->best_epoch = s->best_epoch > 0 ? s->best_epoch : s->epoch;
    summary->seconds = s->seconds;
    summary->gflop = s->gflop;
    summary->final_train_loss = s->final_train_loss;
    summary->final_test_accuracy = s->final_test_accuracy;
    summary->evaluations = s->evaluations;
    summary->gradient_evaluations = s->gradient_evaluations;
    return AX_STATUS_OK;
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
    if (t->replicas) {
        s->rows = t->replicas->global_rows;
        s->validation_rows = t->replicas->validation_rows;
        return ax_replicas_fingerprints(t->replicas, train, validation, &s->train_hash,
                                        &s->validation_hash);
    }
    s->rows = train->rows;
    s->validation_rows = validation ? validation->rows : -1;
    s->train_hash = ax_dataset_fingerprint(train);
    s->validation_hash = validation ? ax_dataset_fingerprint(validation) : 0;
    return AX_STATUS_OK;
}

/* ax_train, for one process (replicas NULL) or as one rank of several. */
static ax_status train_replicated(ax_net *net, const ax_dataset *train, const ax_dataset *validation,
                                  const ax_dataset *test, const ax_train_config *config,
                                  ax_train_summary *summary, ax_replicas *replicas)
{
    const int64_t global_rows = replicas ? replicas->global_rows : train->rows;
    AX_TRY(ax_test_fault_check());
    AX_TRY(check_config(net, config, validation, global_rows));
    AX_TRY(check_keep_best(config, validation, test));
    /* A rank's shard may hold no rows; the sets as a whole have some. */
    if (!replicas || train->rows > 0)
        AX_TRY(ax_net_check_data(net, train, "training"));
    if (validation && (!replicas || validation->rows > 0))
        AX_TRY(ax_net_check_data(net, validation, "validation"));
    if (test && (!replicas || test->rows > 0))
        AX_TRY(ax_net_check_data(net, test, "test"));
    AX_TRY(ax_dataset_check_finite(train));

    const ax_train_state *resume = config->resume;
    if (resume)
        AX_TRY(check_resume_config(config, resume));
    trainer t = {.net = net, .train = train, .validation = validation, .test = test, .config = config,
                 .summary = summary, .best_loss = INFINITY, .first_epoch = 1,
                 .global_rows = global_rows, .replicas = replicas};
    ax_rng_seed(&t.rng, config->seed);
    /* Batches are global (all ranks' rows); a rank computes its part of one. */
    const int64_t rows = global_rows, local_rows = train->rows;
    const bool full_batch = config->batch_size == 0 || config->batch_size >= rows;
    t.batch_rows = full_batch ? rows : config->batch_size;
    t.batches = (rows + t.batch_rows - 1) / t.batch_rows;

    const bool chunked = full_batch && local_rows > FULL_BATCH_CHUNK_ROWS;
    const int64_t local_batch = t.batch_rows < local_rows ? t.batch_rows : local_rows > 0 ? local_rows : 1;
    ax_status status = ax_net_reserve_shuffled(net, chunked ? FULL_BATCH_CHUNK_ROWS : local_batch,
                                               !full_batch);
    if (status == AX_STATUS_OK && chunked) {
        t.accumulator = net->backend->ops->alloc(net->backend,
                                                 (size_t)net->parameter_count * net->backend->real_size);
        if (!t.accumulator)
            status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for the full-batch gradient sum");
    }
    if (status == AX_STATUS_OK)
        status = ax_optimizer_create(config, net->backend, net->parameters, net->gradients,
                                     net->parameter_count, &t.optimizer);
    if (status == AX_STATUS_OK && ax_optimizer_uses(config->optimizer, AX_OPTIMIZER_SETTING_LINE_SEARCH) &&
        full_batch && !chunked && !replicas && ax_net_line_cache_fits(net))
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
    if (status == AX_STATUS_OK)
        status = replicas ? ax_replicas_agree_ready(replicas, AX_STATUS_OK) : AX_STATUS_OK;
    /* After the agreement: replicated, the fingerprints are sums over the
     * ranks, which every rank must reach. */
    if (status == AX_STATUS_OK && (config->checkpoint_prefix || resume))
        status = describe_data(&t);
    if (status == AX_STATUS_OK && resume)
        status = check_resume_data(net, resume, train, validation, &t.snapshot, replicas != NULL);
    if (status == AX_STATUS_OK && resume)
        status = restore(&t, resume);
    if (status == AX_STATUS_OK)
        status = train_epochs(&t, summary);
    free(t.snapshot.parameters);
    free(t.snapshot.optimizer_state[0]);
    free(t.snapshot.optimizer_state[1]);
    ax_optimizer_saved_free(&t.snapshot.optimizer_saved);
    free(t.line_base);
    free(t.order);
    free(t.best_parameters);
    if (t.accumulator)
        net->backend->ops->free(net->backend, t.accumulator);
    ax_line_cache_free(t.line);
    ax_optimizer_free(t.optimizer);
    return status;
}

ax_status ax_train(ax_net *net, const ax_dataset *train, const ax_dataset *validation,
                   const ax_dataset *test, const ax_train_config *config,
                   ax_train_summary *summary)
{
    memset(summary, 0, sizeof *summary);
    summary->final_test_accuracy = NAN;
    /* A program built against an older header passes a shorter config:
     * the fields it lacks keep their defaults. */
    ax_train_config full = ax_train_defaults();
    AX_TRY(ax_sized_read(config, &full,
                         offsetof(ax_train_config, check_replicas) + sizeof config->check_replicas,
                         sizeof full, "a training config", "ax_train_defaults"));
    config = &full;
    /* With several ranks, every one learns the others' row counts first. */
    ax_replicas *replicas = NULL;
    AX_TRY(ax_replicas_create(config->communicator, net, train, validation, test, &replicas));
    /* The data sets stay put while training runs: a full batch loaded into
     * the workspace stays valid from step to step (propagate.c). */
    ax_net_keep_loaded_batch(net, true);
    ax_status status = train_replicated(net, train, validation, test, config, summary, replicas);
    ax_net_keep_loaded_batch(net, false);
    /* A rank that failed before training tells the others, which wait for it. */
    if (replicas && !replicas->ready_agreed)
        status = ax_replicas_agree_ready(replicas, status);
    if (replicas)
        summary->communication_seconds = replicas->seconds;
    ax_replicas_free(replicas);
    return status;
}
