/* cg.c: full-batch Polak-Ribiere nonlinear conjugate gradient with the
 * semantics of scipy.optimize.fmin_cg: beta = max(0, g1.(g1 - g0) / g0.g0)
 * (PR+, which restarts along the steepest descent when beta would be
 * negative), a strong-Wolfe line search with c1 = 1e-4, c2 = 0.4 whose
 * accepted point must also give a sufficient descent direction for the next
 * iteration (d1.g1 <= -0.01 g1.g1), the first trial step
 * min(1, 2.02 (f - f_previous) / slope), convergence when the gradient's
 * largest component is at most gtol. One step is one iteration. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "optim/line_search.h"

#define CG_C1 1e-4
#define CG_C2 0.4
#define CG_SIGMA3 0.01 /* scipy's sufficient-descent constant */

typedef struct cg_state {
    void *x;          /* x_k (arena) */
    void *g;          /* gradient at x_k (arena) */
    void *d;          /* search direction (arena) */
    double *scratch;  /* count host doubles for the inf-norm */
    bool started;
    double f, f_previous; /* loss at x_k and at x_{k-1} */
    double deltak;        /* g.g at x_k */
    /* The figures of the gradient the search last showed descent_condition,
     * at step `seen_alpha` (NAN: none in this search): the accepted point
     * needs the same three, so they are not computed twice. */
    double seen_alpha, seen_largest, seen_g1g1, seen_g0g1;
    /* |g|_inf of x_k, known after a step (NAN: not yet, e.g. on a resume) */
    double g_largest;
} cg_state;

/* The next direction's beta from g1.g1 and g0.g1 (g0: the kept g). */
static double polak_ribiere_beta(const cg_state *s, double g1g1, double g0g1)
{
    double beta = (g1g1 - g0g1) / s->deltak;
    return beta > 0.0 ? beta : 0.0;
}

/* |g1|_inf, g1.g1 and g0.g1 of the gradient arena (g1) at step alpha. */
static void look_at_gradient(ax_optimizer *o, cg_state *s, double alpha)
{
    if (s->seen_alpha == alpha)
        return;
    s->seen_largest = ax_arena_max_abs(o, o->gradients, s->scratch);
    ax_reduction reads[2] = {
        {.kind = AX_REDUCTION_DOT, .count = o->count, .x = o->gradients, .y = o->gradients},
        {.kind = AX_REDUCTION_DOT, .count = o->count, .x = s->g, .y = o->gradients},
    };
    ax_backend_reduce(o->backend, 2, reads);
    s->seen_g1g1 = reads[0].value;
    s->seen_g0g1 = reads[1].value;
    s->seen_alpha = alpha;
}

/* scipy's descent_condition: accept the Wolfe point only when the PR+
 * direction built there descends enough (or the gradient is already small). */
static bool descent_condition(void *user, double alpha, double phi, double derphi)
{
    (void)phi;
    ax_optimizer *o = user;
    cg_state *s = o->kind_state;
    look_at_gradient(o, s, alpha);
    if (s->seen_largest <= o->config.gtol)
        return true;
    const double g1g1 = s->seen_g1g1;
    /* d1.g1 = (-g1 + beta d).g1 = -g1.g1 + beta phi'(alpha) */
    return -g1g1 + polak_ribiere_beta(s, g1g1, s->seen_g0g1) * derphi <= -CG_SIGMA3 * g1g1;
}

/* Evaluates at the starting weights: loss, gradient, first direction -g. */
static ax_status cg_start(ax_optimizer *o, const ax_objective *objective)
{
    cg_state *s = o->kind_state;
    const ax_backend_ops *ops = o->backend->ops;
    AX_TRY(objective->evaluate(objective->context, &s->f));
    o->counters.evaluations++;
    o->counters.gradient_evaluations++;
    if (!isfinite(s->f) || !ops->all_finite(o->backend, o->count, o->gradients))
        return ax_fail(AX_STATUS_DIVERGED,
                       "the cost or its gradient at the initial weights is NaN or infinite (cost %g)",
                       s->f);
    ops->copy(o->backend, s->g, o->gradients, o->count);
    ops->copy(o->backend, s->d, o->gradients, o->count);
    ops->scale(o->backend, o->count, -1.0, s->d);
    /* scipy starts with old_old_fval = f + |g|_2 / 2, which makes the first
     * trial step 1.01 |g|_2 / |g|_2^2 long. */
    s->f_previous = s->f + 0.5 * sqrt(ops->dot(o->backend, o->count, s->g, s->g));
    s->started = true;
    s->g_largest = NAN;
    return AX_STATUS_OK;
}

static ax_status cg_step(ax_optimizer *o, const ax_objective *objective, double *loss)
{
    cg_state *s = o->kind_state;
    const ax_backend_ops *ops = o->backend->ops;
    if (!s->started)
        AX_TRY(cg_start(o, objective));
    *loss = s->f;
    if (isnan(s->g_largest))
        s->g_largest = ax_arena_max_abs(o, s->g, s->scratch);
    if (s->g_largest <= o->config.gtol) {
        o->converged = true;
        o->stop_reason = "converged: gradient norm below gtol";
        return AX_STATUS_OK;
    }
    ax_reduction reads[2] = {
        {.kind = AX_REDUCTION_DOT, .count = o->count, .x = s->g, .y = s->g},
        {.kind = AX_REDUCTION_DOT, .count = o->count, .x = s->g, .y = s->d},
    };
    ax_backend_reduce(o->backend, 2, reads);
    s->deltak = reads[0].value;
    s->seen_alpha = NAN;
    ops->copy(o->backend, s->x, o->parameters, o->count);
    double derphi0 = reads[1].value;
    double alpha1 = 1.0;
    if (derphi0 != 0.0) {
        alpha1 = fmin(1.0, 1.01 * 2.0 * (s->f - s->f_previous) / derphi0);
        if (alpha1 < 0.0)
            alpha1 = 1.0;
    }
    ax_line_search search = {.optimizer = o, .objective = objective, .x0 = s->x, .direction = s->d,
                             .c1 = CG_C1, .c2 = CG_C2, .amin = 1e-100, .amax = 1e100,
                             .max_evaluations = o->config.line_search_max_evaluations,
                             .accept = descent_condition, .accept_user = o,
                             .iteration = (int)o->counters.steps + 1};
    ax_line_search_result result;
    ax_status status = ax_line_search_wolfe(&search, s->f, derphi0, alpha1, &result);
    o->counters.evaluations += result.evaluations;
    o->counters.gradient_evaluations += result.gradient_evaluations;
    if (status != AX_STATUS_OK || !result.found) {
        /* The parameters are back at x_k; so is the gradient arena. */
        ops->copy(o->backend, o->gradients, s->g, o->count);
        if (status != AX_STATUS_OK)
            return status;
        o->converged = true;
        o->stop_reason = result.reason;
        return AX_STATUS_OK;
    }
    /* d = -g1 + beta d, then g = g1 (beta needs the old g). */
    look_at_gradient(o, s, result.alpha);
    double beta = polak_ribiere_beta(s, s->seen_g1g1, s->seen_g0g1);
    ops->scale(o->backend, o->count, beta, s->d);
    ops->axpy(o->backend, o->count, -1.0, o->gradients, s->d);
    ops->copy(o->backend, s->g, o->gradients, o->count);
    s->f_previous = s->f;
    s->f = result.phi;
    *loss = s->f;
    o->counters.steps++;
    s->g_largest = s->seen_largest;
    if (s->g_largest <= o->config.gtol) {
        o->converged = true;
        o->stop_reason = "converged: gradient norm below gtol";
    }
    return AX_STATUS_OK;
}

static void cg_destroy(ax_optimizer *o)
{
    cg_state *s = o->kind_state;
    if (!s)
        return;
    o->backend->ops->free(o->backend, s->x);
    o->backend->ops->free(o->backend, s->g);
    o->backend->ops->free(o->backend, s->d);
    free(s->scratch);
    free(s);
    o->kind_state = NULL;
}

/* Checkpoints (optimizer.h): between iterations x_k is the parameters;
 * deltak is recomputed from g at each step and x, scratch are scratch. */
static const char *const CG_ARRAYS[] = {"g", "d", NULL};
static const char *const CG_SCALARS[] = {"started", "f", "f_previous", NULL};
static const char *const CG_NOT_STARTED[] = {"started", NULL};

static ax_status cg_save(const ax_optimizer *o, ax_optimizer_saved *saved)
{
    const cg_state *s = o->kind_state;
    AX_TRY(ax_optimizer_saved_add_scalar(saved, "started", s->started ? 1.0 : 0.0));
    if (!s->started) /* g and d hold nothing yet */
        return AX_STATUS_OK;
    AX_TRY(ax_optimizer_saved_add_scalar(saved, "f", s->f));
    AX_TRY(ax_optimizer_saved_add_scalar(saved, "f_previous", s->f_previous));
    const void *arenas[] = {s->g, s->d};
    for (int i = 0; i < 2; i++) {
        double *values = ax_optimizer_saved_add_array(saved, CG_ARRAYS[i], o->count);
        if (!values)
            return AX_STATUS_OUT_OF_MEMORY;
        o->backend->ops->download_f64(o->backend, values, arenas[i], o->count);
    }
    return AX_STATUS_OK;
}

static ax_status cg_check_saved(const ax_train_config *config, int64_t count,
                                const ax_optimizer_saved *saved)
{
    (void)config;
    bool started = false;
    AX_TRY(ax_optimizer_saved_started(saved, "cg", &started));
    if (!started)
        return ax_optimizer_saved_expect(saved, "cg", NULL, NULL, CG_NOT_STARTED);
    const int64_t lengths[] = {count, count};
    return ax_optimizer_saved_expect(saved, "cg", CG_ARRAYS, lengths, CG_SCALARS);
}

static void cg_restore(ax_optimizer *o, const ax_optimizer_saved *saved)
{
    cg_state *s = o->kind_state;
    double started = 0.0;
    ax_optimizer_saved_scalar(saved, "started", &started);
    s->started = started == 1.0;
    s->g_largest = NAN;
    if (!s->started)
        return;
    ax_optimizer_saved_scalar(saved, "f", &s->f);
    ax_optimizer_saved_scalar(saved, "f_previous", &s->f_previous);
    void *arenas[] = {s->g, s->d};
    for (int i = 0; i < 2; i++)
        o->backend->ops->upload_f64(o->backend, arenas[i],
                                    ax_optimizer_saved_array(saved, CG_ARRAYS[i], NULL), o->count);
}

static ax_status cg_init(ax_optimizer *o)
{
    cg_state *s = calloc(1, sizeof *s);
    if (!s)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for the CG state");
    o->kind_state = s;
    s->g_largest = s->seen_alpha = NAN;
    size_t bytes = (size_t)o->count * o->backend->real_size;
    char what[96];
    snprintf(what, sizeof what, "the CG state (%lld parameters)", (long long)o->count);
    void **arenas[] = {&s->x, &s->g, &s->d};
    for (int i = 0; i < 3; i++)
        AX_TRY(ax_backend_alloc(o->backend, bytes, what, arenas[i]));
    s->scratch = malloc((size_t)o->count * sizeof *s->scratch);
    if (!s->scratch)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for %s", what);
    return AX_STATUS_OK;
}

const ax_optimizer_descriptor ax_optimizer_cg = {
    .name = "cg",
    .full_batch = true,
    .settings = AX_OPTIMIZER_SETTING_LINE_SEARCH,
    .check_config = ax_line_search_check_config,
    .init = cg_init,
    .step = cg_step,
    .destroy = cg_destroy,
    .save = cg_save,
    .check_saved = cg_check_saved,
    .restore = cg_restore,
};
