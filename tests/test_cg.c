/* test_cg.c: nonlinear CG and L-BFGS. On functions with known minima (a
 * badly scaled quadratic, the Rosenbrock function) both reach the minimum to
 * 1e-6 (and, started there, stop at once having moved nothing); a gradient that lies makes the line search fail with a reason; a
 * NaN cost stops the run with the last good point kept (the galaxy network
 * against scipy's fmin_cg is test_cg_galaxy.c). Line searches along a direction (propagate_along.c, which keeps X W^T and
 * X D^T instead of reading X at every trial step) give the plain path's
 * cost, slope and gradient to 1e-12 relative in float64, and CG takes the
 * same steps with either. */
#include <math.h>
#include <unistd.h>

#include "backend/backend.h"
#include "core/net.h"
#include "optim/line_search.h"
#include "optim/optimizer.h"
#include "test_util.h"
#include "test_datasets.h"

typedef enum { QUADRATIC, ROSENBROCK, LYING, NAN_WALL } problem_kind;

typedef struct problem {
    problem_kind kind;
    int64_t n;
    double *x, *g; /* the optimizer's arenas (CPU, float64) */
    int64_t calls;
} problem;

/* Quadratic: f = sum_i a_i e_i^2 / 2 + sum_i (e_i - e_{i+1})^2 / 2 with
 * e_i = x_i - c_i, a_i from 1 to 1000 (badly scaled), c_i = 1 - 2i/n. The
 * coupling term makes the Hessian non-diagonal but keeps the minimum, 0, at
 * x = c. */
static double quadratic_a(int64_t i, int64_t n) { return pow(1000.0, (double)i / (double)(n - 1)); }
static double quadratic_c(int64_t i, int64_t n) { return 1.0 - 2.0 * (double)i / (double)n; }

static ax_status evaluate(void *context, double *loss)
{
    problem *p = context;
    p->calls++;
    double f = 0.0;
    const double *x = p->x;
    double *g = p->g;
    switch (p->kind) {
    case QUADRATIC:
        for (int64_t i = 0; i < p->n; i++) {
            double e = x[i] - quadratic_c(i, p->n);
            f += 0.5 * quadratic_a(i, p->n) * e * e;
            g[i] = quadratic_a(i, p->n) * e;
        }
        for (int64_t i = 0; i + 1 < p->n; i++) {
            double e = (x[i] - quadratic_c(i, p->n)) - (x[i + 1] - quadratic_c(i + 1, p->n));
            f += 0.5 * e * e;
            g[i] += e;
            g[i + 1] -= e;
        }
        break;
    case ROSENBROCK: /* scipy.optimize.rosen: minimum 0 at all ones */
        for (int64_t i = 0; i < p->n; i++)
            g[i] = 0.0;
        for (int64_t i = 0; i + 1 < p->n; i++) {
            double t = x[i + 1] - x[i] * x[i], u = 1.0 - x[i];
            f += 100.0 * t * t + u * u;
            g[i] += -400.0 * x[i] * t - 2.0 * u;
            g[i + 1] += 200.0 * t;
        }
        break;
    case LYING: /* f = sum x^2 but the gradient claims the opposite slope */
        for (int64_t i = 0; i < p->n; i++) {
            f += x[i] * x[i];
            g[i] = -2.0 * x[i];
        }
        break;
    case NAN_WALL: /* f = -sum x, NaN beyond x_0 = 10 */
        for (int64_t i = 0; i < p->n; i++) {
            f -= x[i];
            g[i] = -1.0;
        }
        if (x[0] > 10.0)
            f = NAN;
        break;
    }
    *loss = f;
    return AX_STATUS_OK;
}

typedef struct run_result {
    ax_status status;
    int64_t steps;
    double loss;
    bool converged;
    const char *reason;
    int64_t evaluations;
} run_result;

static run_result run(ax_optimizer_kind kind, problem_kind pk, int64_t n, const double *start,
                      double *x_out, int max_steps)
{
    run_result r = {.status = AX_STATUS_OK};
    ax_backend *backend = ax_backend_cpu_create(AX_PRECISION_F64);
    double *x = backend->ops->alloc(backend, (size_t)n * sizeof(double));
    double *g = backend->ops->alloc(backend, (size_t)n * sizeof(double));
    for (int64_t i = 0; i < n; i++)
        x[i] = start[i];
    problem p = {.kind = pk, .n = n, .x = x, .g = g};
    ax_train_config config = ax_train_defaults();
    config.optimizer = kind;
    config.gtol = 1e-9;
    ax_optimizer *optimizer = NULL;
    CHECK_OK(ax_optimizer_create(&config, backend, x, g, n, &optimizer));
    ax_objective objective = {.evaluate = evaluate, .context = &p};
    for (int s = 0; optimizer && s < max_steps && !optimizer->converged; s++) {
        r.status = optimizer->kind->step(optimizer, &objective, &r.loss);
        if (r.status != AX_STATUS_OK)
            break;
    }
    if (optimizer) {
        r.steps = optimizer->counters.steps;
        r.converged = optimizer->converged;
        r.reason = optimizer->stop_reason;
        r.evaluations = optimizer->counters.evaluations;
        CHECK(r.evaluations == p.calls);
        CHECK(optimizer->counters.gradient_evaluations <= r.evaluations && optimizer->counters.gradient_evaluations > 0);
    }
    for (int64_t i = 0; i < n; i++)
        x_out[i] = x[i];
    ax_optimizer_free(optimizer);
    backend->ops->free(backend, x);
    backend->ops->free(backend, g);
    backend->ops->destroy(backend);
    return r;
}

static void test_quadratic(ax_optimizer_kind kind)
{
    enum { N = 50 };
    double start[N], x[N];
    for (int i = 0; i < N; i++)
        start[i] = 0.5 * sin(1.0 + i);
    run_result r = run(kind, QUADRATIC, N, start, x, 2000);
    CHECK_OK(r.status);
    CHECK(r.converged);
    CHECK(r.reason && strstr(r.reason, "converged"));
    double worst = 0.0;
    for (int i = 0; i < N; i++)
        worst = fmax(worst, fabs(x[i] - quadratic_c(i, N)));
    printf("%s quadratic (n %d, condition 1000): %lld iterations, %lld evaluations, "
           "max error %.2e, %s\n", ax_optimizer_name(kind), N, (long long)r.steps,
           (long long)r.evaluations, worst, r.reason ? r.reason : "?");
    CHECK(worst < 1e-6);
    CHECK(r.loss < 1e-12);
}

/* Started at the quadratic's minimum (gradient exactly 0): the first
 * step evaluates once, says it converged and moves nothing. */
static void test_start_at_minimum(ax_optimizer_kind kind)
{
    enum { N = 8 };
    double start[N], x[N];
    for (int i = 0; i < N; i++)
        start[i] = quadratic_c(i, N);
    run_result r = run(kind, QUADRATIC, N, start, x, 5);
    CHECK_OK(r.status);
    CHECK(r.converged && r.evaluations == 1 && r.loss == 0.0);
    CHECK(r.reason && strcmp(r.reason, "converged: gradient norm below gtol") == 0);
    CHECK(memcmp(start, x, sizeof x) == 0);
}

static void test_rosenbrock(ax_optimizer_kind kind, int64_t n)
{
    double start[10], x[10];
    for (int64_t i = 0; i < n; i++)
        start[i] = i % 2 ? 1.0 : -1.2; /* the classic start (-1.2, 1) */
    run_result r = run(kind, ROSENBROCK, n, start, x, 20000);
    CHECK_OK(r.status);
    CHECK(r.converged);
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(x[i] - 1.0));
    printf("%s Rosenbrock (n %lld): %lld iterations, %lld evaluations, max error %.2e, %s\n",
           ax_optimizer_name(kind), (long long)n, (long long)r.steps, (long long)r.evaluations,
           worst, r.reason ? r.reason : "?");
    CHECK(worst < 1e-6);
}

static void test_line_search_failure(ax_optimizer_kind kind)
{
    double start[3] = {1.0, -2.0, 0.5}, x[3];
    run_result r = run(kind, LYING, 3, start, x, 100);
    CHECK_OK(r.status);
    CHECK(r.converged);
    CHECK(r.steps == 0);
    CHECK(r.reason && strstr(r.reason, "line search failed"));
    /* the weights stay where the failed search started */
    CHECK(x[0] == 1.0 && x[1] == -2.0 && x[2] == 0.5);
}

static void test_nan_stops(ax_optimizer_kind kind)
{
    double start[2] = {0.0, 0.0}, x[2];
    run_result r = run(kind, NAN_WALL, 2, start, x, 100);
    CHECK(r.status == AX_STATUS_DIVERGED);
    CHECK(strstr(ax_error_message(), "NaN") && strstr(ax_error_message(), "kept"));
    /* the last accepted point: finite and before the wall */
    CHECK(isfinite(x[0]) && x[0] <= 10.0 && x[0] == x[1]);
}

/* The Nocedal-Wright fallback: a caller's extra condition rejects the point
 * the Moré-Thuente search finds, so the fallback must find a strong-Wolfe
 * point of f(x) = (x - target)^2 from x = 0 along d = 1: by doubling
 * (target 3) and by zooming (target 0.3, where the first step overshoots). */
typedef struct one_d {
    double *x, *g;
    double target;
    int accept_calls;
} one_d;

static ax_status one_d_evaluate(void *context, double *loss)
{
    one_d *p = context;
    double e = p->x[0] - p->target;
    *loss = e * e;
    p->g[0] = 2.0 * e;
    return AX_STATUS_OK;
}

static bool reject_first(void *user, double alpha, double phi, double derphi)
{
    (void)alpha;
    (void)phi;
    (void)derphi;
    one_d *p = user;
    return ++p->accept_calls > 1;
}

static void test_fallback_search(double target)
{
    ax_backend *backend = ax_backend_cpu_create(AX_PRECISION_F64);
    double *x = backend->ops->alloc(backend, sizeof(double));
    double *g = backend->ops->alloc(backend, sizeof(double));
    double *x0 = backend->ops->alloc(backend, sizeof(double));
    double *d = backend->ops->alloc(backend, sizeof(double));
    d[0] = 1.0;
    ax_train_config config = ax_train_defaults();
    config.optimizer = AX_OPTIMIZER_CG;
    ax_optimizer *optimizer = NULL;
    CHECK_OK(ax_optimizer_create(&config, backend, x, g, 1, &optimizer));
    one_d p = {.x = x, .g = g, .target = target};
    ax_objective objective = {.evaluate = one_d_evaluate, .context = &p};
    ax_line_search search = {.optimizer = optimizer, .objective = &objective, .x0 = x0,
                             .direction = d, .c1 = 1e-4, .c2 = 0.4, .amin = 1e-100,
                             .amax = 1e100, .max_evaluations = 100, .accept = reject_first,
                             .accept_user = &p};
    const double phi0 = target * target, derphi0 = -2.0 * target;
    ax_line_search_result result;
    CHECK_OK(ax_line_search_wolfe(&search, phi0, derphi0, 1.0, &result));
    CHECK(p.accept_calls == 2); /* Moré-Thuente's point rejected, the fallback's kept */
    CHECK(result.found);
    CHECK(result.phi <= phi0 + 1e-4 * result.alpha * derphi0);
    CHECK(fabs(result.derphi) <= -0.4 * derphi0);
    /* the arenas hold the accepted point */
    CHECK(x[0] == result.alpha && g[0] == 2.0 * (result.alpha - target));
    CHECK(result.gradient_evaluations <= result.evaluations);
    printf("fallback line search to %g: step %g after %d evaluations\n", target, result.alpha,
           result.evaluations);
    ax_optimizer_free(optimizer);
    backend->ops->free(backend, x);
    backend->ops->free(backend, g);
    backend->ops->free(backend, x0);
    backend->ops->free(backend, d);
    backend->ops->destroy(backend);
}

/* L-BFGS's direction is the textbook one (Nocedal and Wright, algorithm
 * 7.4): from the pairs (s_i, y_i) and the gradient a checkpoint would save
 * between two iterations of the badly scaled quadratic, the test's own
 * two-loop recursion (rho_i = 1 / y_i.s_i, H0 = s.y / y.y of the newest
 * pair) gives d, and the next iteration moves along d: x_{k+1} - x_k =
 * alpha d with alpha > 0, to 1e-10 relative. */
static void test_lbfgs_direction(void)
{
    enum { N = 12, STEPS = 6 };
    ax_backend *backend = ax_backend_cpu_create(AX_PRECISION_F64);
    double *x = backend->ops->alloc(backend, N * sizeof(double));
    double *g = backend->ops->alloc(backend, N * sizeof(double));
    for (int i = 0; i < N; i++)
        x[i] = 0.5 * sin(1.0 + i);
    problem p = {.kind = QUADRATIC, .n = N, .x = x, .g = g};
    ax_train_config config = ax_train_defaults();
    config.optimizer = AX_OPTIMIZER_LBFGS;
    config.lbfgs_memory = 4; /* fewer than the steps: the oldest pairs drop out */
    config.gtol = 1e-12;
    ax_optimizer *optimizer = NULL;
    CHECK_OK(ax_optimizer_create(&config, backend, x, g, N, &optimizer));
    ax_objective objective = {.evaluate = evaluate, .context = &p};
    double loss;
    for (int step = 0; optimizer && step < STEPS; step++)
        CHECK_OK(optimizer->kind->step(optimizer, &objective, &loss));
    ax_optimizer_saved saved = {0};
    if (optimizer)
        CHECK_OK(ax_optimizer_save(optimizer, &saved));
    double pairs = 0.0;
    const double *gk = ax_optimizer_saved_array(&saved, "g", NULL);
    const double *sv = ax_optimizer_saved_array(&saved, "s", NULL);
    const double *yv = ax_optimizer_saved_array(&saved, "y", NULL);
    CHECK(ax_optimizer_saved_scalar(&saved, "pairs", &pairs) && pairs == 4.0);
    CHECK(gk && sv && yv && optimizer && !optimizer->converged);
    if (gk && sv && yv && pairs == 4.0 && optimizer) {
        double xk[N], d[N], alpha[4], rho[4];
        memcpy(xk, x, sizeof xk);
        memcpy(d, gk, sizeof d);
        for (int k = 3; k >= 0; k--) { /* newest (saved last) first */
            const double *si = sv + k * N, *yi = yv + k * N;
            double ys = 0.0, sd = 0.0;
            for (int i = 0; i < N; i++) {
                ys += yi[i] * si[i];
                sd += si[i] * d[i];
            }
            CHECK(ys > 0.0); /* the curvature condition of a Wolfe step */
            rho[k] = 1.0 / ys;
            alpha[k] = rho[k] * sd;
            for (int i = 0; i < N; i++)
                d[i] -= alpha[k] * yi[i];
        }
        double sy = 0.0, yy = 0.0;
        for (int i = 0; i < N; i++) {
            sy += sv[3 * N + i] * yv[3 * N + i];
            yy += yv[3 * N + i] * yv[3 * N + i];
        }
        for (int i = 0; i < N; i++)
            d[i] *= sy / yy;
        for (int k = 0; k < 4; k++) {
            const double *si = sv + k * N, *yi = yv + k * N;
            double yd = 0.0;
            for (int i = 0; i < N; i++)
                yd += yi[i] * d[i];
            const double beta = rho[k] * yd;
            for (int i = 0; i < N; i++)
                d[i] += (alpha[k] - beta) * si[i];
        }
        CHECK_OK(optimizer->kind->step(optimizer, &objective, &loss));
        /* the step against -d: parallel, the same way */
        double dd = 0.0, ss = 0.0, sd = 0.0;
        for (int i = 0; i < N; i++) {
            const double step = x[i] - xk[i];
            dd += d[i] * d[i];
            ss += step * step;
            sd -= step * d[i];
        }
        const double cosine = sd / sqrt(dd * ss);
        printf("lbfgs direction after %d iterations: cosine with the textbook two-loop's 1 - %.2e\n",
               STEPS, 1.0 - cosine);
        CHECK(ss > 0.0 && fabs(1.0 - cosine) <= 1e-10);
    }
    ax_optimizer_saved_free(&saved);
    ax_optimizer_free(optimizer);
    backend->ops->free(backend, x);
    backend->ops->free(backend, g);
    backend->ops->destroy(backend);
}

static ax_net *small_net(const char *layers, ax_loss loss, int64_t features)
{
    ax_net_config config = ax_net_defaults();
    CHECK_OK(ax_layers_parse(layers, &config));
    config.input_width = features;
    config.loss = loss;
    config.precision = AX_PRECISION_F64;
    config.init = AX_INIT_UNIFORM;
    config.init_range = 0.5;
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    return net;
}

static double relative_gap(double a, double b)
{
    return fabs(a - b) / fmax(fabs(b), 1e-300);
}

/* The cost, slope and gradient at x0 + alpha d along a direction equal the
 * plain forward and backward pass there; after a search ends at alpha, the
 * next one starts from x0 + alpha d with X W^T updated, not recomputed. */
static void test_along_matches_plain(const char *layers, ax_loss loss)
{
    const int64_t rows = 300, features = 40;
    ax_dataset *data = test_uniform_dataset(rows, features, 5, false);
    ax_net *net = small_net(layers, loss, features);
    if (!data || !net) {
        ax_net_free(net);
        ax_dataset_free(data);
        return;
    }
    const int64_t n = ax_net_parameter_count(net);
    double *x0 = malloc((size_t)n * sizeof *x0), *d = malloc((size_t)n * sizeof *d);
    double *x = malloc((size_t)n * sizeof *x), *plain = malloc((size_t)n * sizeof *plain);
    double *along = malloc((size_t)n * sizeof *along);
    ax_net_parameters_get(net, x0);
    for (int64_t i = 0; i < n; i++)
        d[i] = 0.3 * sin(0.7 * (double)i + 1.0);
    ax_backend *backend = net->backend;
    void *direction = backend->ops->alloc(backend, (size_t)n * sizeof(double));
    backend->ops->upload_f64(backend, direction, d, n);
    ax_regularization regularization = {.size = sizeof(ax_regularization), .l2 = 0.01};
    CHECK_OK(ax_net_reserve(net, rows));
    ax_line_cache *cache = NULL;
    CHECK_OK(ax_line_cache_create(net, rows, &cache));
    ax_batch batch = {.data = data, .first = 0, .count = rows};
    double worst_loss = 0.0, worst_slope = 0.0, worst_gradient = 0.0;
    const double steps[] = {0.0, 1e-3, 0.25, 1.0, 3.0};
    double origin_shift = 0.0; /* x0 of the current search is x0 + origin_shift d */
    for (int search = 0; cache && search < 2; search++) {
        for (int64_t i = 0; i < n; i++)
            x[i] = x0[i] + origin_shift * d[i];
        ax_net_parameters_set(net, x);
        ax_net_load_batch(net, &batch, true);
        ax_net_line_begin(net, cache, direction);
        for (size_t k = 0; k < sizeof steps / sizeof *steps; k++) {
            const double alpha = steps[k];
            for (int64_t i = 0; i < n; i++)
                x[i] = (x0[i] + origin_shift * d[i]) + alpha * d[i];
            ax_net_parameters_set(net, x);
            double slope_cost_only = NAN, slope = NAN;
            double cost_cost_only = ax_net_line_evaluate(net, cache, alpha, false, &regularization,
                                                         &slope_cost_only);
            double cost = ax_net_line_evaluate(net, cache, alpha, true, &regularization, &slope);
            CHECK(cost == cost_cost_only && slope == slope_cost_only);
            backend->ops->download_f64(backend, along, net->gradients, n);
            double plain_cost = NAN;
            CHECK_OK(ax_net_loss_gradient(net, data, 0, rows, &regularization, &plain_cost, plain));
            double plain_slope = 0.0, largest = 0.0, gap = 0.0;
            for (int64_t i = 0; i < n; i++) {
                plain_slope += plain[i] * d[i];
                largest = fmax(largest, fabs(plain[i]));
                gap = fmax(gap, fabs(plain[i] - along[i]));
            }
            worst_loss = fmax(worst_loss, relative_gap(cost, plain_cost));
            worst_slope = fmax(worst_slope, relative_gap(slope, plain_slope));
            worst_gradient = fmax(worst_gradient, gap / largest);
            /* the plain pass used the workspace: load the batch again */
            ax_net_load_batch(net, &batch, true);
        }
        /* the search "accepts" 0.25: the next starts there */
        ax_net_line_end(net, cache, 0.25);
        origin_shift += 0.25;
    }
    printf("along d (%s): cost, slope, gradient within %.1e, %.1e, %.1e of the plain pass\n",
           layers, worst_loss, worst_slope, worst_gradient);
    CHECK(worst_loss <= 1e-12);
    CHECK(worst_slope <= 1e-12);
    CHECK(worst_gradient <= 1e-12);
    ax_line_cache_free(cache);
    backend->ops->free(backend, direction);
    free(x0);
    free(d);
    free(x);
    free(plain);
    free(along);
    ax_net_free(net);
    ax_dataset_free(data);
}

/* The network objective both ways, for the optimizer itself. */
typedef struct net_problem {
    ax_net *net;
    ax_line_cache *cache;
    int64_t rows;
    ax_regularization regularization;
} net_problem;

/* GEMMs that read X (the first layer's forward and weight gradient), from
 * the network's profile. */
static int64_t passes_over_inputs(const ax_net *net)
{
    ax_profile_entry entries[64];
    int count = ax_net_profile_get(net, entries, 64);
    int64_t passes = 0;
    for (int i = 0; i < count && i < 64; i++)
        if (strcmp(entries[i].name, "layer 1 forward GEMM") == 0 ||
            strcmp(entries[i].name, "layer 1 weight-gradient GEMM") == 0)
            passes += entries[i].count;
    return passes;
}

static ax_status net_evaluate(void *context, double *loss)
{
    net_problem *p = context;
    if (p->cache)
        ax_line_cache_invalidate(p->cache);
    const ax_status status = ax_net_forward(p->net, p->rows, &p->regularization);
    if (status != AX_STATUS_OK)
        return status;
    *loss = ax_net_backward(p->net, p->rows, &p->regularization, true);
    return AX_STATUS_OK;
}

static ax_status net_begin(void *context, const void *direction)
{
    net_problem *p = context;
    ax_net_line_begin(p->net, p->cache, direction);
    return AX_STATUS_OK;
}

static ax_status net_along(void *context, double alpha, bool with_gradient, double *loss,
                           double *slope)
{
    net_problem *p = context;
    *loss = ax_net_line_evaluate(p->net, p->cache, alpha, with_gradient, &p->regularization, slope);
    return AX_STATUS_OK;
}

static void net_end(void *context, double alpha)
{
    net_problem *p = context;
    ax_net_line_end(p->net, p->cache, alpha);
}

/* CG and L-BFGS from the same start, plain and along: the same iterates to
 * rounding (the costs of 15 iterations agree to 1e-9) and the same counts,
 * with fewer passes over X along d (about 2 per iteration instead of 2 per
 * evaluation). */
static void test_optimizer_along(ax_optimizer_kind kind)
{
    const int64_t rows = 300, features = 40;
    ax_dataset *data = test_uniform_dataset(rows, features, 9, false);
    double costs[2][15];
    int64_t evaluations[2] = {0, 0}, passes[2] = {0, 0};
    for (int way = 0; way < 2 && data; way++) {
        ax_net *net = small_net("8:sigmoid,3:sigmoid", AX_LOSS_BINARY_CROSS_ENTROPY, features);
        if (!net)
            break;
        net_problem p = {.net = net, .rows = rows,
                         .regularization = {.size = sizeof(ax_regularization),
                                            .l2 = 1.0 / (double)rows}};
        CHECK_OK(ax_net_reserve(net, rows));
        ax_batch batch = {.data = data, .first = 0, .count = rows};
        ax_net_load_batch(net, &batch, true);
        ax_net_profile_enable(net, true);
        ax_objective objective = {.evaluate = net_evaluate, .context = &p};
        if (way == 1) {
            CHECK_OK(ax_line_cache_create(net, rows, &p.cache));
            objective.line_begin = net_begin;
            objective.evaluate_along = net_along;
            objective.line_end = net_end;
        }
        ax_train_config config = ax_train_defaults();
        config.optimizer = kind;
        ax_optimizer *optimizer = NULL;
        CHECK_OK(ax_optimizer_create(&config, net->backend, net->parameters, net->gradients,
                                     net->parameter_count, &optimizer));
        for (int s = 0; optimizer && s < 15; s++) {
            costs[way][s] = NAN;
            CHECK_OK(optimizer->kind->step(optimizer, &objective, &costs[way][s]));
        }
        if (optimizer)
            evaluations[way] = optimizer->counters.evaluations;
        passes[way] = passes_over_inputs(net);
        printf("%s on the network, %s: %lld evaluations, %lld passes over X, cost %.12f\n",
               ax_optimizer_name(kind), way ? "along d" : "plain", (long long)evaluations[way],
               (long long)passes[way], costs[way][14]);
        ax_optimizer_free(optimizer);
        ax_line_cache_free(p.cache);
        ax_net_free(net);
    }
    if (data) {
        double worst = 0.0;
        for (int s = 0; s < 15; s++)
            worst = fmax(worst, relative_gap(costs[1][s], costs[0][s]));
        printf("%s: plain and along-d costs of 15 iterations within %.1e\n", ax_optimizer_name(kind),
               worst);
        CHECK(worst <= 1e-9);
        CHECK(evaluations[0] == evaluations[1] && evaluations[0] > 15);
        CHECK(passes[0] == 2 * evaluations[0]);
        CHECK(passes[1] <= 2 * 15 + 2 + 15 / 16 + 1);
    }
    ax_dataset_free(data);
}

/* The registry of optimizer kinds answers what the trainer and the command
 * line used to test kinds for: each name parses back to its value, CG and
 * L-BFGS alone are full batch, and the kinds reading an option are listed
 * as the CLI's notes print them. */
static void test_registry(void)
{
    CHECK(ax_optimizer_count() >= 4);
    for (int i = 0; i <= AX_OPTIMIZER_LBFGS; i++) {
        ax_optimizer_kind parsed;
        CHECK_OK(ax_optimizer_parse(ax_optimizer_name((ax_optimizer_kind)i), &parsed));
        CHECK((int)parsed == i);
        const bool searches = i == AX_OPTIMIZER_CG || i == AX_OPTIMIZER_LBFGS;
        CHECK(ax_optimizer_is_full_batch((ax_optimizer_kind)i) == searches);
        CHECK(ax_optimizer_uses((ax_optimizer_kind)i, AX_OPTIMIZER_SETTING_LINE_SEARCH) == searches);
        CHECK(ax_optimizer_uses((ax_optimizer_kind)i, AX_OPTIMIZER_SETTING_LEARNING_RATE) == !searches);
    }
    const ax_optimizer_kind none = (ax_optimizer_kind)ax_optimizer_count();
    CHECK(strcmp(ax_optimizer_name(none), "unknown") == 0);
    CHECK(!ax_optimizer_is_full_batch((ax_optimizer_kind)-1));
    CHECK(!ax_optimizer_uses(none, AX_OPTIMIZER_SETTING_MOMENTUM));
    CHECK(ax_optimizer_default_learning_rate(AX_OPTIMIZER_ADAM) == 0.001);
    CHECK(ax_optimizer_default_learning_rate(AX_OPTIMIZER_SGD) == 0.1);
    CHECK(ax_optimizer_default_learning_rate(AX_OPTIMIZER_CG) == 0.1);
    char names[64];
    ax_optimizer_names_using(AX_OPTIMIZER_SETTING_LINE_SEARCH, names, sizeof names);
    CHECK(strcmp(names, "cg and lbfgs") == 0);
    ax_optimizer_names_using(AX_OPTIMIZER_SETTING_MOMENTUM, names, sizeof names);
    CHECK(strcmp(names, "sgd") == 0);
    ax_optimizer_names_using(AX_OPTIMIZER_SETTING_LBFGS_MEMORY, names, sizeof names);
    CHECK(strcmp(names, "lbfgs") == 0);
    ax_optimizer_names_using(AX_OPTIMIZER_SETTING_LEARNING_RATE | AX_OPTIMIZER_SETTING_LINE_SEARCH,
                             names, sizeof names);
    CHECK(strncmp(names, "sgd, adam, cg", 13) == 0 && strstr(names, " and ") != NULL);
    ax_optimizer_names_using(AX_OPTIMIZER_SETTING_LINE_SEARCH, names, 4);
    CHECK(strcmp(names, "cg ") == 0);
}

int main(void)
{
    test_registry();
    const ax_optimizer_kind kinds[2] = {AX_OPTIMIZER_CG, AX_OPTIMIZER_LBFGS};
    for (int k = 0; k < 2; k++) {
        test_quadratic(kinds[k]);
        test_start_at_minimum(kinds[k]);
        test_rosenbrock(kinds[k], 2);
        test_rosenbrock(kinds[k], 10);
        test_line_search_failure(kinds[k]);
        test_nan_stops(kinds[k]);
    }
    test_fallback_search(3.0);
    test_fallback_search(0.3);
    test_lbfgs_direction();
    ax_optimizer_kind parsed;
    CHECK_OK(ax_optimizer_parse("cg", &parsed));
    CHECK(parsed == AX_OPTIMIZER_CG);
    CHECK_OK(ax_optimizer_parse("lbfgs", &parsed));
    CHECK(parsed == AX_OPTIMIZER_LBFGS);
    CHECK(strcmp(ax_optimizer_name(AX_OPTIMIZER_LBFGS), "lbfgs") == 0);
    test_along_matches_plain("8:sigmoid,3:sigmoid", AX_LOSS_BINARY_CROSS_ENTROPY);
    test_along_matches_plain("16:tanh,8:relu,3:softmax", AX_LOSS_CROSS_ENTROPY);
    test_along_matches_plain("5:identity", AX_LOSS_MSE);
    test_optimizer_along(AX_OPTIMIZER_CG);
    test_optimizer_along(AX_OPTIMIZER_LBFGS);
    return test_finish("test_cg");
}
