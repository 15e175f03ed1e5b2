/* test_line_search.c: the two line searches of CG and L-BFGS
 * (src/optim/more_thuente.c, line_search.c) driven step by step on
 * functions built to reach each of their branches, one dimension at a time
 * (x0 = 0, d = 1, so the parameter is the step itself).
 *
 * - Moré-Thuente on Moré and Thuente's six test functions from the paper's
 *   four starting steps (ACM TOMS 20, 1994, tables 1 to 6): the number of
 *   evaluations and the final step are the paper's, and every trial step is
 *   the one MINPACK-2's dcsrch takes in SciPy (tests/data/
 *   line_search_reference.txt, scripts/make_line_search_reference.py) to
 *   1e-9 relative. These runs take the stage-1 modified function psi
 *   (f1 from 1000, f4 and f5 from 10) and all four cases of dcstep; a
 *   change to either moves a trial step.
 * - Nocedal-Wright (the fallback) against SciPy's scalar_search_wolfe2 on
 *   the cases where both choose alike, step for step: among them zooms whose
 *   steps meet sufficient decrease with the slope still steeply negative,
 *   which only the strong Wolfe test |phi'| <= c2 |phi'(0)| turns down
 *   (f3 from 0.1, f6 from 0.1, 0.3, 100); and a zoom that runs out (f3 from
 *   100). Every point found meets the strong Wolfe conditions.
 * - Moré-Thuente with an infinite cost beyond a wall (axon's own branch:
 *   dcsrch cannot interpolate through +inf): the steps halve toward the best
 *   step, exactly 10, 5, 2.5, 1.25, then the search converges below the
 *   wall; and with every step beyond the best one infinite it halves
 *   toward it (0.5 + 4 / 2^i exactly) until the interval is below xtol and
 *   ends saying so, the parameters back at x0.
 * - Nocedal-Wright's bracketing on a line falling forever: it doubles the
 *   step to its largest step or through its 10 doublings and ends saying
 *   which; uphill it refuses before evaluating anything. */
#include <math.h>

#include "backend/backend.h"
#include "optim/line_search_internal.h"
#include "optim/optimizer.h"
#include "test_util.h"

/* ------------------------------------------------ the test functions */

typedef struct value {
    double phi, derphi;
} value;
typedef value (*function)(double a);

static value f1(double a)
{
    const double beta = 2.0, q = a * a + beta;
    return (value){-a / q, (a * a - beta) / (q * q)};
}

static value f2(double a)
{
    const double b = a + 0.004;
    return (value){pow(b, 5) - 2.0 * pow(b, 4), 5.0 * pow(b, 4) - 8.0 * pow(b, 3)};
}

static value f3(double a)
{
    const double beta = 0.01, l = 39.0, pi = 3.14159265358979323846;
    double p0, d0;
    if (a <= 1.0 - beta) {
        p0 = 1.0 - a;
        d0 = -1.0;
    } else if (a >= 1.0 + beta) {
        p0 = a - 1.0;
        d0 = 1.0;
    } else {
        p0 = (a - 1.0) * (a - 1.0) / (2.0 * beta) + beta / 2.0;
        d0 = (a - 1.0) / beta;
    }
    return (value){p0 + 2.0 * (1.0 - beta) / (l * pi) * sin(l * pi * a / 2.0),
                   d0 + (1.0 - beta) * cos(l * pi * a / 2.0)};
}

/* Yanai, Ozawa and Kaneko's functions (the paper's f4 to f6). */
static value yok(double a, double b1, double b2)
{
    const double g1 = sqrt(1.0 + b1 * b1) - b1, g2 = sqrt(1.0 + b2 * b2) - b2;
    const double s1 = sqrt((1.0 - a) * (1.0 - a) + b2 * b2), s2 = sqrt(a * a + b1 * b1);
    return (value){g1 * s1 + g2 * s2, -g1 * (1.0 - a) / s1 + g2 * a / s2};
}
static value f4(double a) { return yok(a, 0.001, 0.001); }
static value f5(double a) { return yok(a, 0.01, 0.001); }
static value f6(double a) { return yok(a, 0.001, 0.01); }

/* A parabola with its minimum at 1 behind a wall at 2: +inf beyond. */
static value walled(double a)
{
    if (a >= 2.0)
        return (value){INFINITY, NAN};
    return (value){(a - 1.0) * (a - 1.0) - 1.0, 2.0 * (a - 1.0)};
}

/* The slope -1 up to 0.5 and +inf at every step beyond: from 0.5 (not a
 * Wolfe point), every step the search extrapolates or shrinks to is
 * infinite, so it can only halve toward 0.5 until the interval is below
 * xtol. */
static value cliff(double a)
{
    if (a > 0.5)
        return (value){INFINITY, NAN};
    return (value){-a, -1.0};
}

static const struct {
    const char *name;
    function fn;
} functions[] = {{"f1", f1}, {"f2", f2}, {"f3", f3}, {"f4", f4}, {"f5", f5}, {"f6", f6}};

static function function_named(const char *name)
{
    for (size_t i = 0; i < sizeof functions / sizeof *functions; i++)
        if (strcmp(functions[i].name, name) == 0)
            return functions[i].fn;
    return NULL;
}

/* ------------------------------------------------ one line search */

enum { MAX_TRIALS = 128 };

typedef struct run {
    function fn;
    double *x, *g; /* the optimizer's arenas: one float64 each */
    double trials[MAX_TRIALS];
    int count;
} run;

static ax_status evaluate(void *context, double *loss)
{
    run *r = context;
    const value v = r->fn(r->x[0]);
    if (r->count < MAX_TRIALS)
        r->trials[r->count] = r->x[0];
    r->count++;
    *loss = v.phi;
    r->g[0] = v.derphi;
    return AX_STATUS_OK;
}

typedef enum { SEARCH_BOTH, SEARCH_MORE_THUENTE, SEARCH_NOCEDAL_WRIGHT } which_search;

/* The largest step a search may take: the tests of the bracketing's end lower it. */
static double search_amax = 1e100;

/* Runs one search of fn from x0 = 0 along d = 1 with first step alpha1;
 * the trials land in r. */
static ax_status search(which_search which, function fn, double alpha1, double c1, double c2,
                        run *r, ax_line_search_result *result)
{
    ax_backend *backend = ax_backend_cpu_create(AX_PRECISION_F64);
    double *x = backend->ops->alloc(backend, sizeof(double));
    double *g = backend->ops->alloc(backend, sizeof(double));
    double *x0 = backend->ops->alloc(backend, sizeof(double));
    double *d = backend->ops->alloc(backend, sizeof(double));
    x0[0] = 0.0;
    d[0] = 1.0;
    ax_train_config config = ax_train_defaults();
    config.optimizer = AX_OPTIMIZER_CG;
    ax_optimizer *optimizer = NULL;
    CHECK_OK(ax_optimizer_create(&config, backend, x, g, 1, &optimizer));
    *r = (run){.fn = fn, .x = x, .g = g};
    ax_objective objective = {.evaluate = evaluate, .context = r};
    ax_line_search s = {.optimizer = optimizer, .objective = &objective, .x0 = x0,
                        .direction = d, .c1 = c1, .c2 = c2, .amin = 1e-100, .amax = search_amax,
                        .max_evaluations = 100};
    const value start = fn(0.0);
    ax_status status;
    *result = (ax_line_search_result){.found = false};
    if (which == SEARCH_BOTH) {
        status = ax_line_search_wolfe(&s, start.phi, start.derphi, alpha1, result);
    } else {
        ax_line_probe probe = {.search = &s, .result = result, .last_alpha = NAN};
        status = which == SEARCH_MORE_THUENTE
                     ? ax_line_search_more_thuente(&probe, start.phi, start.derphi, alpha1)
                     : ax_line_search_nocedal_wright(&probe, start.phi, start.derphi, alpha1);
    }
    if (status == AX_STATUS_OK && result->found) {
        /* the arenas hold the accepted point and its gradient */
        CHECK(x[0] == result->alpha && g[0] == fn(result->alpha).derphi);
    } else if (status == AX_STATUS_OK) {
        CHECK(x[0] == 0.0); /* reset to x0 */
    }
    ax_optimizer_free(optimizer);
    backend->ops->free(backend, x);
    backend->ops->free(backend, g);
    backend->ops->free(backend, x0);
    backend->ops->free(backend, d);
    backend->ops->destroy(backend);
    return status;
}

/* The strong Wolfe conditions at a point found. */
static void check_wolfe(function fn, const ax_line_search_result *result, double c1, double c2,
                        const char *what)
{
    const value start = fn(0.0), at = fn(result->alpha);
    CHECK(result->phi == at.phi && result->derphi == at.derphi);
    if (!(at.phi <= start.phi + c1 * result->alpha * start.derphi &&
          fabs(at.derphi) <= c2 * fabs(start.derphi))) {
        fprintf(stderr, "%s: step %.17g is not a strong Wolfe point: phi %.17g (phi(0) %.17g), "
                "phi' %.17g (phi'(0) %.17g)\n", what, result->alpha, at.phi, start.phi,
                at.derphi, start.derphi);
        test_failures++;
    }
}

/* The trial steps against a reference's, to 1e-9 relative (the functions'
 * libm calls differ from NumPy's in the last bits, and interpolation
 * carries that along). */
static void check_trials(const run *r, const double *expected, int count, const char *what)
{
    if (r->count != count) {
        fprintf(stderr, "%s: %d evaluations, SciPy's search made %d\n", what, r->count, count);
        test_failures++;
    }
    for (int i = 0; i < count && i < r->count && i < MAX_TRIALS; i++)
        if (!(fabs(r->trials[i] - expected[i]) <= 1e-9 * fabs(expected[i]))) {
            fprintf(stderr, "%s: trial %d at step %.17g, SciPy's at %.17g\n", what, i + 1,
                    r->trials[i], expected[i]);
            test_failures++;
            break;
        }
}

/* ------------------------------------------------ the checks */

/* Moré and Thuente's tables 1 to 6: evaluations and final step (the
 * paper's figures, two significant digits) from each starting step. */
static const struct {
    const char *name;
    double alpha1;
    int evaluations;
    double step;
} published[] = {
    {"f1", 1e-3, 6, 1.4},     {"f1", 1e-1, 3, 1.4},     {"f1", 1e1, 1, 10},
    {"f1", 1e3, 4, 37},       {"f2", 1e-3, 12, 1.6},    {"f2", 1e-1, 8, 1.6},
    {"f2", 1e1, 8, 1.6},      {"f2", 1e3, 11, 1.6},     {"f3", 1e-3, 12, 1.0},
    {"f3", 1e-1, 12, 1.0},    {"f3", 1e1, 10, 1.0},     {"f3", 1e3, 13, 1.0},
    {"f4", 1e-3, 4, 0.085},   {"f4", 1e-1, 1, 0.10},    {"f4", 1e1, 3, 0.35},
    {"f4", 1e3, 4, 0.83},     {"f5", 1e-3, 6, 0.075},   {"f5", 1e-1, 3, 0.078},
    {"f5", 1e1, 7, 0.073},    {"f5", 1e3, 8, 0.076},    {"f6", 1e-3, 13, 0.93},
    {"f6", 1e-1, 11, 0.93},   {"f6", 1e1, 8, 0.92},     {"f6", 1e3, 11, 0.92},
};

static void check_published(const char *name, double alpha1, const run *r,
                            const ax_line_search_result *result)
{
    for (size_t i = 0; i < sizeof published / sizeof *published; i++)
        if (strcmp(published[i].name, name) == 0 && published[i].alpha1 == alpha1) {
            const double step = published[i].step;
            /* two significant digits: within half a unit of the second */
            const double unit = pow(10.0, floor(log10(step)) - 1.0);
            if (r->count != published[i].evaluations ||
                !(fabs(result->alpha - step) <= 0.5 * unit + 1e-12)) {
                fprintf(stderr, "%s from %g: %d evaluations to step %.4g; the paper: %d to %g\n",
                        name, alpha1, r->count, result->alpha, published[i].evaluations, step);
                test_failures++;
            }
            return;
        }
    fprintf(stderr, "%s from %g: not in the paper's tables\n", name, alpha1);
    test_failures++;
}

static int check_reference(void)
{
    const char *path = AXON_TEST_DATA "/line_search_reference.txt";
    FILE *file = fopen(path, "r");
    if (!file) {
        fprintf(stderr, "cannot open %s\n", path);
        test_failures++;
        return 0;
    }
    char line[8192];
    int cases = 0, nw_found = 0, nw_failed = 0;
    while (fgets(line, sizeof line, file)) {
        if (line[0] == '#')
            continue;
        char kind[4], name[4];
        double alpha1, c1, c2, expected[MAX_TRIALS];
        int found = 1, count = 0, used = 0;
        char *p = line;
        if (sscanf(p, "%3s %3s %lf %lf %lf%n", kind, name, &alpha1, &c1, &c2, &used) != 5) {
            fprintf(stderr, "%s: unreadable line: %s", path, line);
            test_failures++;
            continue;
        }
        p += used;
        const bool nw = strcmp(kind, "nw") == 0;
        if (nw && sscanf(p, "%d%n", &found, &used) == 1)
            p += used;
        if (sscanf(p, "%d%n", &count, &used) != 1 || count < 1 || count > MAX_TRIALS) {
            fprintf(stderr, "%s: bad count: %s", path, line);
            test_failures++;
            continue;
        }
        p += used;
        for (int i = 0; i < count; i++) {
            if (sscanf(p, "%lf%n", &expected[i], &used) != 1) {
                fprintf(stderr, "%s: too few steps: %s", path, line);
                test_failures++;
                count = i;
                break;
            }
            p += used;
        }
        const function fn = function_named(name);
        if (!fn) {
            fprintf(stderr, "%s: unknown function %s\n", path, name);
            test_failures++;
            continue;
        }
        char what[64];
        snprintf(what, sizeof what, "%s %s from %g", nw ? "Nocedal-Wright" : "Moré-Thuente", name,
                 alpha1);
        run r;
        ax_line_search_result result;
        CHECK_OK(search(nw ? SEARCH_NOCEDAL_WRIGHT : SEARCH_BOTH, fn, alpha1, c1, c2, &r, &result));
        check_trials(&r, expected, count, what);
        if (!nw)
            check_published(name, alpha1, &r, &result);
        if (result.found != (found != 0)) {
            fprintf(stderr, "%s: %s, SciPy's search %s\n", what,
                    result.found ? "found a point" : result.reason, found ? "found one" : "did not");
            test_failures++;
        }
        if (result.found)
            check_wolfe(fn, &result, c1, c2, what);
        if (nw && !found) /* the zoom's 10 steps spent: f3 from 100 */
            CHECK(result.reason && strstr(result.reason, "zoom ran out of steps"));
        nw_found += nw && result.found;
        nw_failed += nw && !result.found;
        printf("%s: %d evaluations, %s %.6g\n", what, r.count,
               result.found ? "step" : "no step;", result.found ? result.alpha : 0.0);
        cases++;
    }
    fclose(file);
    CHECK(cases == 34 && nw_found == 9 && nw_failed == 1);
    return cases;
}

/* A wall of +inf: the steps halve toward the best step, then the search
 * interpolates as usual below the wall. */
static void check_infinite_cost(void)
{
    run r;
    ax_line_search_result result;
    CHECK_OK(search(SEARCH_BOTH, walled, 10.0, 1e-4, 0.1, &r, &result));
    CHECK(r.count >= 5 && r.trials[0] == 10.0 && r.trials[1] == 5.0 && r.trials[2] == 2.5 &&
          r.trials[3] == 1.25);
    CHECK(result.found);
    if (result.found) {
        check_wolfe(walled, &result, 1e-4, 0.1, "the walled parabola");
        CHECK(result.alpha < 2.0 && fabs(result.alpha - 1.0) <= 0.05);
    }
    printf("walled parabola from 10: %d evaluations (10, 5, 2.5, 1.25, ...), step %.6g\n", r.count,
           result.alpha);

    /* Everything beyond 0.5 infinite: dcstep extrapolates from 0.5 to
     * 2.5, and every step after is the midpoint toward 0.5, 0.5 + 4 / 2^i
     * exactly, until the interval is below xtol (1e-14 of the step): then
     * the search ends saying why, the weights back at x0. */
    CHECK_OK(search(SEARCH_MORE_THUENTE, cliff, 0.5, 1e-4, 0.1, &r, &result));
    CHECK(!result.found && result.reason &&
          strstr(result.reason, "the cost is infinite at every step tried"));
    CHECK(r.count > 40 && r.count < 60 && r.trials[0] == 0.5);
    for (int i = 1; i < r.count && i < MAX_TRIALS; i++)
        if (r.trials[i] != 0.5 + 4.0 / ldexp(1.0, i)) {
            fprintf(stderr, "cliff: trial %d at %.17g, not 0.5 + 4 / 2^%d\n", i + 1, r.trials[i], i);
            test_failures++;
            break;
        }
    printf("cliff from 0.5: %d evaluations halving toward 0.5, %s\n", r.count,
           result.reason ? result.reason : "?");
}

/* A line along which the cost falls forever (phi = -a): Nocedal-Wright's
 * bracketing doubles the step, 1, 2, 4, ..., and ends at its largest step
 * or after its 10 doublings, saying which; a first step beyond the largest
 * is cut to it, one that is not a positive number starts at 1. Uphill
 * (phi = a) it stops before any evaluation: not a descent direction. */
static value downhill(double a) { return (value){-a, -1.0}; }
static value uphill(double a) { return (value){a, 1.0}; }

static void check_bracketing_ends(void)
{
    run r;
    ax_line_search_result result;
    search_amax = 4.0;
    CHECK_OK(search(SEARCH_NOCEDAL_WRIGHT, downhill, 1.0, 1e-4, 0.9, &r, &result));
    CHECK(!result.found && result.reason &&
          strstr(result.reason, "failed to find a Wolfe point below its largest step"));
    CHECK(r.count == 3 && r.trials[0] == 1.0 && r.trials[1] == 2.0 && r.trials[2] == 4.0);
    CHECK_OK(search(SEARCH_NOCEDAL_WRIGHT, downhill, 100.0, 1e-4, 0.9, &r, &result));
    CHECK(!result.found && r.count == 1 && r.trials[0] == 4.0);
    search_amax = 1e100;
    CHECK_OK(search(SEARCH_NOCEDAL_WRIGHT, downhill, NAN, 1e-4, 0.9, &r, &result));
    CHECK(!result.found && result.reason &&
          strstr(result.reason, "its bracketing ran out of steps"));
    CHECK(r.count == 11 && r.trials[0] == 1.0 && r.trials[10] == 1024.0);
    CHECK_OK(search(SEARCH_NOCEDAL_WRIGHT, downhill, -3.0, 1e-4, 0.9, &r, &result));
    CHECK(r.count == 11 && r.trials[0] == 1.0);
    CHECK_OK(search(SEARCH_NOCEDAL_WRIGHT, uphill, 1.0, 1e-4, 0.9, &r, &result));
    CHECK(!result.found && r.count == 0 && result.reason &&
          strstr(result.reason, "the search direction is not a descent direction"));
}

int main(void)
{
    check_reference();
    check_infinite_cost();
    check_bracketing_ends();
    return test_finish("test_line_search");
}
