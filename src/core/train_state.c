/* train_state.c: a checkpoint's snapshot of a running trainer, and its
 * restore (train_state.h). The trainer's own state is copied whole; what
 * is spelt out here is the arrays: the weights, the optimizer's state
 * arenas and its own saved state, the line-search cache's X W^T, the best
 * weights and the row order of an interrupted epoch. */
#include "core/train_state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/checkpoint.h"

ax_trainer_state ax_trainer_state_start(uint64_t seed)
{
    ax_trainer_state state = {.best_loss = INFINITY, .final_test_accuracy = NAN};
    ax_rng_seed(&state.rng, seed);
    return state;
}

ax_status ax_train_state_take(ax_train_state *s, double **line_base, const ax_trainer_state *trainer,
                              const ax_trainer_parts *parts)
{
    const int64_t n = parts->net->parameter_count;
    if (!s->parameters) {
        s->parameters = malloc((size_t)n * sizeof(double));
        if (!s->parameters)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for a checkpoint");
        for (int i = 0; i < 2; i++)
            if (parts->optimizer->state[i]) {
                s->optimizer_state[i] = malloc((size_t)n * sizeof(double));
                if (!s->optimizer_state[i])
                    return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for a checkpoint");
            }
    }
    s->net_config = parts->net->config;
    s->config = *parts->config;
    s->config.resume = NULL;
    s->config.progress = NULL;
    s->config.progress_user = NULL;
    s->note = (char *)parts->config->checkpoint_note; /* borrowed: the snapshot is never freed whole */
    s->trainer = *trainer;
    s->trainer.optimizer = parts->optimizer->counters;
    s->order = trainer->batch > 0 ? parts->order : NULL; /* borrowed */
    s->parameter_count = n;
    ax_net_parameters_get(parts->net, s->parameters);
    for (int i = 0; i < 2; i++)
        if (s->optimizer_state[i])
            ax_optimizer_state_get(parts->optimizer, i, s->optimizer_state[i]);
    s->best_parameters = trainer->best_epoch > 0 ? parts->best_parameters : NULL; /* borrowed */
    /* CG and L-BFGS: their own state, and the cache's X W^T as the searches
     * left it (a resume that recomputed it from X would differ by rounding). */
    ax_optimizer_saved_free(&s->optimizer_saved);
    AX_TRY(ax_optimizer_save(parts->optimizer, &s->optimizer_saved));
    s->line_base = NULL;
    s->line_base_count = parts->line ? ax_line_cache_save(parts->line, NULL, NULL) : 0;
    if (s->line_base_count > 0) {
        if (!*line_base) {
            *line_base = malloc((size_t)s->line_base_count * sizeof(double));
            if (!*line_base)
                return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for a checkpoint");
        }
        ax_line_cache_save(parts->line, *line_base, &s->line_searches);
        s->line_base = *line_base; /* borrowed */
    }
    return AX_STATUS_OK;
}

void ax_train_state_release_taken(ax_train_state *s, double *line_base)
{
    free(s->parameters);
    free(s->optimizer_state[0]);
    free(s->optimizer_state[1]);
    ax_optimizer_saved_free(&s->optimizer_saved);
    free(line_base);
}

ax_status ax_train_state_restore(const ax_train_state *s, const ax_trainer_parts *parts,
                                 ax_trainer_state *trainer)
{
    ax_optimizer *optimizer = parts->optimizer;
    ax_net_parameters_set(parts->net, s->parameters);
    for (int i = 0; i < 2; i++) {
        if (s->optimizer_state[i])
            AX_TRY(ax_optimizer_state_set(optimizer, i, s->optimizer_state[i]));
        else if (optimizer->state[i])
            return ax_fail(AX_STATUS_BAD_FILE, "the checkpoint lacks the %s optimizer's state array %d",
                           optimizer->kind->name, i);
    }
    AX_TRY(ax_optimizer_restore(optimizer, &s->optimizer_saved));
    /* Without a cache here (several ranks now) the saved base is not
     * needed; without one saved, the first search computes it from X. */
    if (parts->line && s->line_base)
        AX_TRY(ax_line_cache_restore(parts->line, s->line_base, s->line_base_count, s->line_searches));
    if (s->trainer.best_epoch > 0 && parts->best_parameters) {
        if (!s->best_parameters)
            return ax_fail(AX_STATUS_BAD_FILE, "the checkpoint lacks the best weights of epoch %d",
                           s->trainer.best_epoch);
        memcpy(parts->best_parameters, s->best_parameters,
               (size_t)parts->net->parameter_count * sizeof(double));
    }
    if (s->trainer.batch > 0) {
        if (!parts->order || !s->order || s->trainer.batch >= parts->batches)
            return ax_fail(AX_STATUS_BAD_FILE,
                           "the checkpoint stopped at batch %lld, which this batch size (%lld batches) "
                           "does not have",
                           (long long)s->trainer.batch, (long long)parts->batches);
        memcpy(parts->order, s->order, (size_t)parts->rows * sizeof *parts->order);
    }
    *trainer = s->trainer;
    optimizer->counters = trainer->optimizer;
    return AX_STATUS_OK;
}

void ax_train_state_free(ax_train_state *state)
{
    if (!state)
        return;
    free(state->prefix);
    free(state->note);
    free(state->order);
    free(state->parameters);
    free(state->optimizer_state[0]);
    free(state->optimizer_state[1]);
    free(state->best_parameters);
    ax_optimizer_saved_free(&state->optimizer_saved);
    free(state->line_base);
    ax_net_config_release(&state->net_config); /* parsed by ax_checkpoint_load; else the net's */
    free(state);
}

int ax_train_state_epochs_done(const ax_train_state *state) { return state->trainer.epoch; }

const char *ax_train_state_note(const ax_train_state *state)
{
    return state->note ? state->note : "";
}
