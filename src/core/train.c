/* train.c: the training loop: epochs of (shuffled) batches handed to the
 * optimizer as an objective, validation and test evaluation after each
 * epoch, early stopping with the best weights kept (TMVA's
 * ConvergenceSteps), divergence detection, progress and FLOP accounting. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/net.h"
#include "core/random.h"
#include "data/dataset.h"
#include "optim/optimizer.h"

ax_train_config ax_train_defaults(void)
{
    ax_train_config config;
    memset(&config, 0, sizeof config);
    config.optimizer = AX_OPTIMIZER_SGD;
    config.learning_rate = 0.1;
    config.momentum = 0.9;
    config.beta1 = 0.9;
    config.beta2 = 0.999;
    config.epsilon = 1e-8;
    config.batch_size = 128;
    config.epochs = 10;
    config.seed = 1;
    config.shuffle = true;
    config.progress_interval = 0.2;
    config.gtol = 1e-5;
    config.lbfgs_memory = 10;
    config.line_search_max_evaluations = 100;
    return config;
}

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct step_context {
    ax_net *net;
    int64_t rows;
    ax_regularization regularization;
    double evaluate_seconds; /* time in evaluations during this step, when profiling */
} step_context;

/* The objective the optimizer evaluates: the loaded batch at the current weights. */
static ax_status evaluate_loaded_batch(void *context, double *loss)
{
    step_context *step = context;
    double start = step->net->profile ? ax_seconds_now() : 0.0;
    ax_net_forward(step->net, step->rows, &step->regularization);
    *loss = ax_net_backward(step->net, step->rows, &step->regularization, true);
    if (step->net->profile)
        step->evaluate_seconds += ax_seconds_now() - start;
    return AX_STATUS_OK;
}

/* CG and L-BFGS: one epoch is one iteration of a line search. */
static bool is_line_search(const ax_train_config *config)
{
    return config->optimizer == AX_OPTIMIZER_CG || config->optimizer == AX_OPTIMIZER_LBFGS;
}

static ax_status check_config(const ax_net *net, const ax_train_config *config,
                              const ax_dataset *validation, int64_t rows)
{
    if (config->epochs < 1 || config->epochs > 100000000)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "epochs must be from 1 to 100000000, not %d", config->epochs);
    if (config->batch_size < 0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "the batch size must be positive (or 0 for full batch), not %lld",
                       (long long)config->batch_size);
    if (!(config->l2 >= 0.0 && isfinite(config->l2)))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "l2 must be a finite number >= 0, not %g", config->l2);
    if (!(config->dropout >= 0.0 && config->dropout < 1.0))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "dropout must be in [0, 1), not %g", config->dropout);
    if (config->dropout > 0.0 && net->layer_count < 2)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "dropout applies to hidden layers; this network has none");
    if (config->early_stop < 0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "early stopping patience must be >= 0, not %d", config->early_stop);
    if (config->early_stop > 0 && !validation)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "early stopping needs a validation set (e.g. --val-split 0.1)");
    if (is_line_search(config)) {
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
    return AX_STATUS_OK;
}

/* Names the first layer whose weights or biases are no longer finite. */
static ax_status check_parameters_finite(ax_net *net, int epoch)
{
    const ax_backend_ops *ops = net->backend->ops;
    for (int l = 0; l < net->layer_count; l++) {
        const ax_layer *layer = &net->layers[l];
        if (!ops->all_finite(net->backend, layer->in * layer->out + layer->out,
                             ax_layer_weights(net, net->parameters, l)))
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
    int64_t *order;       /* (rows) shuffled row order, NULL for full batch */
    int64_t batch_rows;
    int64_t batches;
    double *best_parameters;
    uint64_t step;
    int best_epoch;
} trainer;

static ax_status run_epoch(trainer *t, int epoch, ax_rng *rng, ax_progress *progress,
                           double *flops_done)
{
    const ax_train_config *config = t->config;
    const int64_t rows = t->train->rows;
    if (t->order && config->shuffle)
        AX_PROFILED(t->net, AX_PROFILE_SHUFFLE, -1, 0.0, ax_rng_permutation(rng, t->order, rows));
    ax_objective objective = {.evaluate = evaluate_loaded_batch};
    step_context step = {.net = t->net,
                         .regularization = {.l2 = config->l2, .dropout = config->dropout}};
    objective.context = &step;

    double start = now_seconds(), last_report = start, loss_sum = 0.0;
    for (int64_t b = 0; b < t->batches; b++) {
        ax_batch batch = {.data = t->train, .order = t->order, .first = b * t->batch_rows};
        batch.count = rows - batch.first < t->batch_rows ? rows - batch.first : t->batch_rows;
        ax_net_load_batch(t->net, &batch, true);
        step.rows = batch.count;
        step.regularization.dropout_key = ax_hash64(config->seed ^ ax_hash64(t->step));
        double loss;
        const int64_t evaluations_before = t->optimizer->evaluations;
        step.evaluate_seconds = 0.0;
        double step_start = t->net->profile ? ax_seconds_now() : 0.0;
        AX_TRY(t->optimizer->ops->step(t->optimizer, &objective, &loss));
        if (t->net->profile) /* the step's own work: the update and any line-search algebra */
            ax_profile_record_seconds(t->net->profile, AX_PROFILE_OPTIMIZER_UPDATE, -1,
                                      ax_seconds_now() - step_start - step.evaluate_seconds, 0.0);
        t->step++;
        /* A line search evaluates several times per step; SGD and Adam once. */
        const int64_t passes = t->optimizer->evaluations - evaluations_before;
        if (!isfinite(loss))
            return ax_fail(AX_STATUS_DIVERGED,
                           "training diverged in epoch %d, batch %lld: the loss is %s; "
                           "try a lower learning rate",
                           epoch, (long long)b + 1, isnan(loss) ? "NaN" : "infinite");
        loss_sum += loss * (double)batch.count;
        *flops_done += ax_net_train_flops(t->net, batch.count) * (double)(passes > 0 ? passes : 1);

        double now = now_seconds();
        if (config->progress && (now - last_report >= config->progress_interval) && b + 1 < t->batches) {
            last_report = now;
            double samples = (double)(batch.first + batch.count);
            progress->batch = b + 1;
            progress->train_loss = loss_sum / samples;
            progress->samples_per_second = samples / (now - start);
            progress->eta_seconds = (double)(rows - (int64_t)samples) / progress->samples_per_second +
                                    (double)(config->epochs - epoch) * (double)rows /
                                        progress->samples_per_second;
            progress->epoch_done = false;
            if (!config->progress(progress, config->progress_user))
                return ax_fail(AX_STATUS_INTERRUPTED, "training interrupted in epoch %d", epoch);
        }
    }
    progress->epoch_seconds = now_seconds() - start;
    progress->batch = t->batches;
    progress->train_loss = loss_sum / (double)rows;
    progress->samples_per_second = (double)rows / progress->epoch_seconds;
    return check_parameters_finite(t->net, epoch);
}

static ax_status evaluate_into(ax_net *net, const ax_dataset *data, double *loss, double *accuracy)
{
    *loss = *accuracy = NAN;
    if (!data)
        return AX_STATUS_OK;
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
    return AX_STATUS_OK;
}

static ax_status train_epochs(trainer *t, ax_train_summary *summary)
{
    const ax_train_config *config = t->config;
    ax_rng rng;
    ax_rng_seed(&rng, config->seed);
    double best_loss = INFINITY;
    int since_best = 0;
    ax_progress progress;
    memset(&progress, 0, sizeof progress);
    progress.epochs = config->epochs;
    progress.batches = t->batches;

    summary->stop_reason = is_line_search(config) ? "maximum iterations reached" : "all epochs run";
    for (int epoch = 1; epoch <= config->epochs; epoch++) {
        progress.epoch = epoch;
        double flops = 0.0;
        const int64_t steps_before = t->optimizer->steps;
        ax_status status = run_epoch(t, epoch, &rng, &progress, &flops);
        summary->evaluations = t->optimizer->evaluations;
        summary->gradient_evaluations = t->optimizer->gradient_evaluations;
        AX_TRY(status);
        summary->seconds += progress.epoch_seconds;
        /* A line-search optimizer that stopped without moving (converged at
         * the start, or no Wolfe point) made no iteration: as scipy's k,
         * the epoch is not counted. */
        if (t->optimizer->converged && t->optimizer->steps == steps_before) {
            summary->stop_reason = t->optimizer->stop_reason;
            if (epoch == 1) {
                summary->final_train_loss = progress.train_loss;
                AX_TRY(evaluate_into(t->net, t->test, &progress.test_loss, &progress.test_accuracy));
                summary->final_test_accuracy = progress.test_accuracy;
            }
            break;
        }
        summary->epochs_run = epoch;
        summary->gflop += flops * 1e-9;
        summary->final_train_loss = progress.train_loss;
        progress.gflops = flops * 1e-9 / progress.epoch_seconds;
        AX_TRY(evaluate_into(t->net, t->validation, &progress.validation_loss,
                             &progress.validation_accuracy));
        AX_TRY(evaluate_into(t->net, t->test, &progress.test_loss, &progress.test_accuracy));
        summary->final_test_accuracy = progress.test_accuracy;
        summary->best_epoch = epoch;
        progress.eta_seconds = (double)(config->epochs - epoch) * progress.epoch_seconds;
        progress.epoch_done = true;
        if (config->progress && !config->progress(&progress, config->progress_user))
            return ax_fail(AX_STATUS_INTERRUPTED, "training interrupted after epoch %d", epoch);
        if (config->early_stop > 0) {
            if (progress.validation_loss < best_loss) {
                best_loss = progress.validation_loss;
                since_best = 0;
                ax_net_parameters_get(t->net, t->best_parameters);
                t->best_epoch = epoch;
            } else if (++since_best >= config->early_stop) {
                summary->stop_reason = "early stopping: no validation improvement";
                break;
            }
        }
        if (t->optimizer->converged) {
            summary->stop_reason = t->optimizer->stop_reason;
            break;
        }
    }
    if (config->early_stop > 0 && t->best_epoch > 0) {
        ax_net_parameters_set(t->net, t->best_parameters);
        summary->best_epoch = t->best_epoch;
        if (t->test && t->best_epoch != summary->epochs_run) {
            double loss;
            AX_TRY(evaluate_into(t->net, t->test, &loss, &summary->final_test_accuracy));
        }
    }
    return AX_STATUS_OK;
}

ax_status ax_train(ax_net *net, const ax_dataset *train, const ax_dataset *validation,
                   const ax_dataset *test, const ax_train_config *config,
                   ax_train_summary *summary)
{
    memset(summary, 0, sizeof *summary);
    summary->final_test_accuracy = NAN;
    AX_TRY(check_config(net, config, validation, train->rows));
    AX_TRY(ax_net_check_data(net, train, "training"));
    if (validation)
        AX_TRY(ax_net_check_data(net, validation, "validation"));
    if (test)
        AX_TRY(ax_net_check_data(net, test, "test"));
    AX_TRY(ax_dataset_check_finite(train));

    trainer t = {.net = net, .train = train, .validation = validation, .test = test, .config = config};
    const int64_t rows = train->rows;
    const bool full_batch = config->batch_size == 0 || config->batch_size >= rows;
    t.batch_rows = full_batch ? rows : config->batch_size;
    t.batches = (rows + t.batch_rows - 1) / t.batch_rows;

    ax_status status = ax_net_reserve_shuffled(net, t.batch_rows, !full_batch);
    if (status == AX_STATUS_OK)
        status = ax_optimizer_create(config, net->backend, net->parameters, net->gradients,
                                     net->parameter_count, &t.optimizer);
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
    if (status == AX_STATUS_OK && config->early_stop > 0) {
        t.best_parameters = malloc((size_t)net->parameter_count * sizeof(double));
        if (!t.best_parameters)
            status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for the best weights");
    }
    if (status == AX_STATUS_OK)
        status = train_epochs(&t, summary);
    free(t.order);
    free(t.best_parameters);
    ax_optimizer_free(t.optimizer);
    return status;
}
