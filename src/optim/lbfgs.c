/* lbfgs.c: full-batch limited-memory BFGS (Nocedal & Wright algorithm 7.4):
 * the two-loop recursion over the last m pairs s = x1 - x0, y = g1 - g0 with
 * the initial Hessian guess (s.y / y.y) I, the strong-Wolfe line search of
 * line_search.c (c1 = 1e-4, c2 = 0.9 as for quasi-Newton methods), trial
 * step 1 (the first iteration, without curvature yet, starts as fmin_cg
 * does). Pairs with s.y <= 0 would break positive definiteness and are
 * skipped; a direction that fails to descend resets the memory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "optim/line_search.h"

#define LBFGS_C1 1e-4
#define LBFGS_C2 0.9

typedef struct lbfgs_state {
    int memory;        /* m */
    int pairs;         /* pairs held, <= m */
    int newest;        /* index of the newest pair */
    void **s, **y;     /* m arenas each */
    double *rho;       /* 1 / (y.s) per pair */
    double *alpha;     /* two-loop coefficients */
    double gamma;      /* s.y / y.y of the newest pair */
    void *x, *g, *d;   /* x_k, gradient at x_k, direction (arenas) */
    double *scratch;   /* count host doubles for the inf-norm */
    bool started;
    double f, f_previous;
    /* |g|_inf of x_k, known after a step (NAN: not yet, e.g. on a resume):
     * the end of one step and the start of the next read the same g. */
    double g_largest;
} lbfgs_state;

/* d = -H g by the two-loop recursion. */
static void two_loop(ax_optimizer *o, lbfgs_state *st)
{
    ax_backend *b = o->backend;
    const ax_backend_ops *ops = b->ops;
    ops->copy(b, st->d, st->g, o->count);
    for (int k = 0; k < st->pairs; k++) {
        int i = (st->newest - k + st->memory) % st->memory;
        st->alpha[i] = st->rho[i] * ops->dot(b, o->count, st->s[i], st->d);
        ops->axpy(b, o->count, -st->alpha[i], st->y[i], st->d);
    }
    if (st->pairs > 0)
        ops->scale(b, o->count, st->gamma, st->d);
    for (int k = st->pairs - 1; k >= 0; k--) {
        int i = (st->newest - k + st->memory) % st->memory;
        double beta = st->rho[i] * ops->dot(b, o->count, st->y[i], st->d);
        ops->axpy(b, o->count, st->alpha[i] - beta, st->s[i], st->d);
    }
    ops->scale(b, o->count, -1.0, st->d);
}

static ax_status lbfgs_start(ax_optimizer *o, const ax_objective *objective)
{
    lbfgs_state *st = o->kind_state;
    const ax_backend_ops *ops = o->backend->ops;
    AX_TRY(objective->evaluate(objective->context, &st->f));
    o->counters.evaluations++;
    o->counters.gradient_evaluations++;
    if (!isfinite(st->f) || !ops->all_finite(o->backend, o->count, o->gradients))
        return ax_fail(AX_STATUS_DIVERGED,
                       "the cost or its gradient at the initial weights is NaN or infinite (cost %g)",
                       st->f);
    ops->copy(o->backend, st->g, o->gradients, o->count);
    st->f_previous = st->f + 0.5 * sqrt(ops->dot(o->backend, o->count, st->g, st->g));
    st->started = true;
    st->g_largest = NAN;
    return AX_STATUS_OK;
}

/* Keeps the pair of the step just taken (parameters now at x_{k+1},
 * gradient arena at g_{k+1}). */
static void remember_pair(ax_optimizer *o, lbfgs_state *st)
{
    ax_backend *b = o->backend;
    const ax_backend_ops *ops = b->ops;
    int slot = (st->newest + 1) % st->memory;
    ops->copy(b, st->s[slot], o->parameters, o->count);
    ops->axpy(b, o->count, -1.0, st->x, st->s[slot]);
    ops->copy(b, st->y[slot], o->gradients, o->count);
    ops->axpy(b, o->count, -1.0, st->g, st->y[slot]);
    ax_reduction reads[2] = {
        {.kind = AX_REDUCTION_DOT, .count = o->count, .x = st->y[slot], .y = st->s[slot]},
        {.kind = AX_REDUCTION_DOT, .count = o->count, .x = st->y[slot], .y = st->y[slot]},
    };
    ax_backend_reduce(b, 2, reads);
    const double ys = reads[0].value, yy = reads[1].value;
    if (!(ys > 0.0) || !(yy > 0.0) || !isfinite(ys) || !isfinite(yy)) {
        /* With the memory full, slot held the oldest pair, now overwritten:
         * it leaves the memory rather than pair its old rho with these s, y. */
        if (st->pairs == st->memory)
            st->pairs--;
        return;
    }
    st->rho[slot] = 1.0 / ys;
    st->gamma = ys / yy;
    st->newest = slot;
    if (st->pairs < st->memory)
        st->pairs++;
}

static ax_status lbfgs_step(ax_optimizer *o, const ax_objective *objective, double *loss)
{
    lbfgs_state *st = o->kind_state;
    const ax_backend_ops *ops = o->backend->ops;
    if (!st->started)
        AX_TRY(lbfgs_start(o, objective));
    *loss = st->f;
    if (isnan(st->g_largest))
        st->g_largest = ax_arena_max_abs(o, st->g, st->scratch);
    if (st->g_largest <= o->config.gtol) {
        o->converged = true;
        o->stop_reason = "converged: gradient norm below gtol";
        return AX_STATUS_OK;
    }
    two_loop(o, st);
    double derphi0 = ops->dot(o->backend, o->count, st->g, st->d);
    if (!(derphi0 < 0.0) && st->pairs > 0) {
        st->pairs = 0; /* the curvature pairs mislead; restart from -g */
        two_loop(o, st);
        derphi0 = ops->dot(o->backend, o->count, st->g, st->d);
    }
    double alpha1 = 1.0;
    if (st->pairs == 0 && derphi0 != 0.0) {
        alpha1 = fmin(1.0, 1.01 * 2.0 * (st->f - st->f_previous) / derphi0);
        if (alpha1 < 0.0)
            alpha1 = 1.0;
    }
    ops->copy(o->backend, st->x, o->parameters, o->count);
    ax_line_search search = {.optimizer = o, .objective = objective, .x0 = st->x,
                             .direction = st->d, .c1 = LBFGS_C1, .c2 = LBFGS_C2, .amin = 1e-100, .amax = 1e100,
                             .max_evaluations = o->config.line_search_max_evaluations,
                             .iteration = (int)o->counters.steps + 1};
    ax_line_search_result result;
    ax_status status = ax_line_search_wolfe(&search, st->f, derphi0, alpha1, &result);
    o->counters.evaluations += result.evaluations;
    o->counters.gradient_evaluations += result.gradient_evaluations;
    if (status != AX_STATUS_OK || !result.found) {
        ops->copy(o->backend, o->gradients, st->g, o->count);
        if (status != AX_STATUS_OK)
            return status;
        o->converged = true;
        o->stop_reason = result.reason;
        return AX_STATUS_OK;
    }
    remember_pair(o, st);
    ops->copy(o->backend, st->g, o->gradients, o->count);
    st->f_previous = st->f;
    st->f = result.phi;
    *loss = st->f;
    o->counters.steps++;
    st->g_largest = ax_arena_max_abs(o, st->g, st->scratch);
    if (st->g_largest <= o->config.gtol) {
        o->converged = true;
        o->stop_reason = "converged: gradient norm below gtol";
    }
    return AX_STATUS_OK;
}

static void lbfgs_destroy(ax_optimizer *o)
{
    lbfgs_state *st = o->kind_state;
    if (!st)
        return;
    ax_backend *b = o->backend;
    for (int i = 0; i < st->memory; i++) {
        if (st->s)
            b->ops->free(b, st->s[i]);
        if (st->y)
            b->ops->free(b, st->y[i]);
    }
    b->ops->free(b, st->x);
    b->ops->free(b, st->g);
    b->ops->free(b, st->d);
    free(st->s);
    free(st->y);
    free(st->rho);
    free(st->alpha);
    free(st->scratch);
    free(st);
    o->kind_state = NULL;
}

/* Checkpoints (optimizer.h): between iterations x_k is the parameters and
 * d, x, alpha, scratch are rebuilt at each step. The pairs are saved oldest
 * first as "s", "y" (pairs x count each) and "rho"; restored, they sit in
 * slots 0 .. pairs-1, which the two-loop recursion and the next pair's slot
 * see exactly as the ring they came from. */
static const char *const LBFGS_SCALARS[] = {"started", "f", "f_previous", "pairs", "gamma", NULL};
static const char *const LBFGS_NOT_STARTED[] = {"started", NULL};
static const char *const LBFGS_ARRAYS[] = {"g", "s", "y", "rho", NULL};

static int slot_of(const lbfgs_state *st, int k) /* k = 0: the oldest pair */
{
    return (st->newest - (st->pairs - 1 - k) + st->memory) % st->memory;
}

static ax_status lbfgs_save(const ax_optimizer *o, ax_optimizer_saved *saved)
{
    const lbfgs_state *st = o->kind_state;
    ax_backend *b = o->backend;
    AX_TRY(ax_optimizer_saved_add_scalar(saved, "started", st->started ? 1.0 : 0.0));
    if (!st->started)
        return AX_STATUS_OK;
    AX_TRY(ax_optimizer_saved_add_scalar(saved, "f", st->f));
    AX_TRY(ax_optimizer_saved_add_scalar(saved, "f_previous", st->f_previous));
    AX_TRY(ax_optimizer_saved_add_scalar(saved, "pairs", st->pairs));
    AX_TRY(ax_optimizer_saved_add_scalar(saved, "gamma", st->gamma));
    double *g = ax_optimizer_saved_add_array(saved, "g", o->count);
    if (!g)
        return AX_STATUS_OUT_OF_MEMORY;
    b->ops->download_f64(b, g, st->g, o->count);
    if (st->pairs == 0)
        return AX_STATUS_OK;
    const int64_t length = (int64_t)st->pairs * o->count;
    double *s = ax_optimizer_saved_add_array(saved, "s", length);
    double *y = s ? ax_optimizer_saved_add_array(saved, "y", length) : NULL;
    double *rho = y ? ax_optimizer_saved_add_array(saved, "rho", st->pairs) : NULL;
    if (!rho)
        return AX_STATUS_OUT_OF_MEMORY;
    for (int k = 0; k < st->pairs; k++) {
        const int i = slot_of(st, k);
        b->ops->download_f64(b, s + (int64_t)k * o->count, st->s[i], o->count);
        b->ops->download_f64(b, y + (int64_t)k * o->count, st->y[i], o->count);
        rho[k] = st->rho[i];
    }
    return AX_STATUS_OK;
}

static ax_status lbfgs_check_saved(const ax_train_config *config, int64_t count,
                                   const ax_optimizer_saved *saved)
{
    double pairs = 0.0, gamma = 0.0;
    bool started = false;
    AX_TRY(ax_optimizer_saved_started(saved, "lbfgs", &started));
    if (!started)
        return ax_optimizer_saved_expect(saved, "lbfgs", NULL, NULL, LBFGS_NOT_STARTED);
    if (!ax_optimizer_saved_scalar(saved, "pairs", &pairs))
        return ax_fail(AX_STATUS_BAD_FILE, "lbfgs's optimizer state lacks the scalar \"pairs\"");
    if (!(pairs >= 0.0 && pairs <= (double)config->lbfgs_memory) || pairs != floor(pairs))
        return ax_fail(AX_STATUS_BAD_FILE,
                       "lbfgs's optimizer state scalar \"pairs\" is %g; it must be a whole number "
                       "from 0 to the memory size %d",
                       pairs, config->lbfgs_memory);
    const int64_t held = (int64_t)pairs;
    const int64_t lengths[] = {count, held * count, held * count, held};
    const char *const only_g[] = {"g", NULL};
    AX_TRY(ax_optimizer_saved_expect(saved, "lbfgs", held > 0 ? LBFGS_ARRAYS : only_g, lengths,
                                     LBFGS_SCALARS));
    ax_optimizer_saved_scalar(saved, "gamma", &gamma);
    if (held > 0 && !(gamma > 0.0))
        return ax_fail(AX_STATUS_BAD_FILE,
                       "lbfgs's optimizer state scalar \"gamma\" is %g; with pairs held it must be "
                       "positive (s.y / y.y)",
                       gamma);
    const double *rho = ax_optimizer_saved_array(saved, "rho", NULL);
    for (int64_t k = 0; k < held; k++)
        if (!(rho[k] > 0.0))
            return ax_fail(AX_STATUS_BAD_FILE,
                           "lbfgs's optimizer state \"rho\" is %g at index %lld; it must be positive "
                           "(1 / y.s of a kept pair)",
                           rho[k], (long long)k);
    return AX_STATUS_OK;
}

static void lbfgs_restore(ax_optimizer *o, const ax_optimizer_saved *saved)
{
    lbfgs_state *st = o->kind_state;
    ax_backend *b = o->backend;
    double started = 0.0, pairs = 0.0;
    ax_optimizer_saved_scalar(saved, "started", &started);
    st->started = started == 1.0;
    st->g_largest = NAN;
    st->pairs = 0;
    st->newest = st->memory - 1;
    if (!st->started)
        return;
    ax_optimizer_saved_scalar(saved, "f", &st->f);
    ax_optimizer_saved_scalar(saved, "f_previous", &st->f_previous);
    ax_optimizer_saved_scalar(saved, "pairs", &pairs);
    ax_optimizer_saved_scalar(saved, "gamma", &st->gamma);
    b->ops->upload_f64(b, st->g, ax_optimizer_saved_array(saved, "g", NULL), o->count);
    st->pairs = (int)pairs;
    if (st->pairs == 0)
        return;
    const double *s = ax_optimizer_saved_array(saved, "s", NULL);
    const double *y = ax_optimizer_saved_array(saved, "y", NULL);
    const double *rho = ax_optimizer_saved_array(saved, "rho", NULL);
    for (int k = 0; k < st->pairs; k++) {
        b->ops->upload_f64(b, st->s[k], s + (int64_t)k * o->count, o->count);
        b->ops->upload_f64(b, st->y[k], y + (int64_t)k * o->count, o->count);
        st->rho[k] = rho[k];
    }
    st->newest = st->pairs - 1;
}

static ax_status lbfgs_check_config(const ax_train_config *config)
{
    AX_TRY(ax_line_search_check_config(config));
    if (config->lbfgs_memory < 1 || config->lbfgs_memory > 1000)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "the L-BFGS memory must be from 1 to 1000, not %d",
                       config->lbfgs_memory);
    return AX_STATUS_OK;
}

static ax_status lbfgs_init(ax_optimizer *o)
{
    lbfgs_state *st = calloc(1, sizeof *st);
    if (!st)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for the L-BFGS state");
    o->kind_state = st;
    ax_backend *b = o->backend;
    const int m = o->config.lbfgs_memory;
    size_t bytes = (size_t)o->count * b->real_size;
    st->memory = m;
    st->newest = m - 1;
    st->g_largest = NAN;
    st->s = calloc((size_t)m, sizeof *st->s);
    st->y = calloc((size_t)m, sizeof *st->y);
    st->rho = calloc((size_t)m, sizeof *st->rho);
    st->alpha = calloc((size_t)m, sizeof *st->alpha);
    st->scratch = malloc((size_t)o->count * sizeof *st->scratch);
    char what[128];
    snprintf(what, sizeof what, "the L-BFGS state (%d pairs of %lld parameters)", m,
             (long long)o->count);
    if (!st->s || !st->y || !st->rho || !st->alpha || !st->scratch)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory for %s", what);
    void **arenas[] = {&st->x, &st->g, &st->d};
    for (int i = 0; i < 3; i++)
        AX_TRY(ax_backend_alloc(b, bytes, what, arenas[i]));
    for (int i = 0; i < m; i++) {
        AX_TRY(ax_backend_alloc(b, bytes, what, &st->s[i]));
        AX_TRY(ax_backend_alloc(b, bytes, what, &st->y[i]));
    }
    return AX_STATUS_OK;
}

const ax_optimizer_descriptor ax_optimizer_lbfgs = {
    .name = "lbfgs",
    .full_batch = true,
    .settings = AX_OPTIMIZER_SETTING_LINE_SEARCH | AX_OPTIMIZER_SETTING_LBFGS_MEMORY,
    .check_config = lbfgs_check_config,
    .init = lbfgs_init,
    .step = lbfgs_step,
    .destroy = lbfgs_destroy,
    .save = lbfgs_save,
    .check_saved = lbfgs_check_saved,
    .restore = lbfgs_restore,
};
