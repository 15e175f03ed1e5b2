/* line_search.c: the strong-Wolfe line search as scipy.optimize's fmin_cg
 * and fmin_bfgs run it (_line_search_wolfe12): first the Moré-Thuente search
 * (more_thuente.c, scipy's line_search_wolfe1); when that fails, or its point
 * fails the caller's extra condition, Nocedal & Wright's algorithms 3.5
 * and 3.6 with scipy.optimize.line_search_wolfe2's choices: the bracketing
 * phase doubles the step (at most 10 times), the zoom phase tries the cubic
 * through (a_lo, a_hi, the previous a_hi) unless it falls within 20 % of an
 * end of the interval, then the quadratic (10 %), then bisection, at most 10
 * zoom steps. A trial with loss +inf (a step so long the outputs saturate)
 * counts as failing sufficient decrease, so the search backs off; a NaN loss
 * or a non-finite gradient cannot be searched past and stops the run. */
#include "optim/line_search_internal.h"

#include <math.h>

/* Why a search failed: the stop reasons users see. */
static const char ROUNDING[] =
    "line search failed to find a Wolfe point: rounding errors prevent it from converging";
static const char CAPPED[] =
    "line search failed to find a Wolfe point within its maximum number of evaluations";
static const char ZOOM_SPENT[] =
    "line search failed to find a Wolfe point: its zoom ran out of steps";
static const char NOT_DESCENT[] =
    "line search failed: the search direction is not a descent direction";
static const char AT_AMAX[] =
    "line search failed to find a Wolfe point below its largest step";
static const char BRACKET_SPENT[] =
    "line search failed to find a Wolfe point: its bracketing ran out of steps";

#define BRACKET_STEPS 10
#define ZOOM_STEPS 10

typedef ax_line_probe probe;

/* Minimiser of the cubic through (a, fa) with slope fpa, (b, fb), (c, fc);
 * false when it does not exist (scipy's _cubicmin). */
static bool cubic_min(double a, double fa, double fpa, double b, double fb, double c, double fc,
                      double *xmin)
{
    double db = b - a, dc = c - a;
    double denom = (db * dc) * (db * dc) * (db - dc);
    if (denom == 0.0)
        return false;
    double rb = fb - fa - fpa * db, rc = fc - fa - fpa * dc;
    double A = (dc * dc * rb - db * db * rc) / denom;
    double B = (-dc * dc * dc * rb + db * db * db * rc) / denom;
    double radical = B * B - 3.0 * A * fpa;
    if (radical < 0.0 || A == 0.0)
        return false;
    *xmin = a + (-B + sqrt(radical)) / (3.0 * A);
    return isfinite(*xmin);
}

/* Minimiser of the quadratic through (a, fa) with slope fpa and (b, fb). */
static bool quadratic_min(double a, double fa, double fpa, double b, double fb, double *xmin)
{
    double db = b - a;
    if (db == 0.0)
        return false;
    double B = (fb - fa - fpa * db) / (db * db);
    if (B == 0.0)
        return false;
    *xmin = a - fpa / (2.0 * B);
    return isfinite(*xmin);
}

/* The caller's extra condition at the point just evaluated, which sees the
 * gradient there. */
static ax_status accepted(probe *p, double alpha, double value, double derphi, bool *ok)
{
    const ax_line_search *s = p->search;
    *ok = true;
    if (!s->accept)
        return AX_STATUS_OK;
    AX_TRY(ax_line_probe_gradient(p));
    *ok = s->accept(s->accept_user, alpha, value, derphi);
    return AX_STATUS_OK;
}


/* Algorithm 3.6: [a_lo, a_hi] brackets a Wolfe point; a_lo has the lowest
 * loss seen that satisfies sufficient decrease. */
static ax_status zoom(probe *p, double a_lo, double a_hi, double phi_lo, double phi_hi,
                      double derphi_lo, double phi0, double derphi0)
{
    const double c1 = p->search->c1, c2 = p->search->c2;
    double phi_rec = phi0, a_rec = 0.0;
    for (int i = 0;; i++) {
        double dalpha = a_hi - a_lo;
        double a = dalpha < 0 ? a_hi : a_lo, b = dalpha < 0 ? a_lo : a_hi;
        double width = fabs(dalpha), a_j = 0.0;
        bool ok = false;
        if (i > 0 && isfinite(phi_hi) && isfinite(phi_rec)) {
            double cchk = 0.2 * width;
            ok = cubic_min(a_lo, phi_lo, derphi_lo, a_hi, phi_hi, a_rec, phi_rec, &a_j) &&
                 a_j <= b - cchk && a_j >= a + cchk;
        }
        if (!ok && isfinite(phi_hi)) {
            double qchk = 0.1 * width;
            ok = quadratic_min(a_lo, phi_lo, derphi_lo, a_hi, phi_hi, &a_j) && a_j <= b - qchk &&
                 a_j >= a + qchk;
        }
        if (!ok)
            a_j = a_lo + 0.5 * dalpha;
        if (a_j == a_lo || a_j == a_hi)
            return ax_line_not_found(p, ROUNDING);

        double phi_j;
        AX_TRY(ax_line_probe_phi(p, a_j, &phi_j));
        if (ax_line_probe_capped(p) && isnan(phi_j))
            return ax_line_not_found(p, CAPPED);
        if (phi_j > phi0 + c1 * a_j * derphi0 || phi_j >= phi_lo) {
            phi_rec = phi_hi;
            a_rec = a_hi;
            a_hi = a_j;
            phi_hi = phi_j;
        } else {
            double derphi_j = 0.0;
            AX_TRY(ax_line_probe_slope(p, &derphi_j));
            bool wolfe = fabs(derphi_j) <= -c2 * derphi0;
            if (wolfe)
                AX_TRY(accepted(p, a_j, phi_j, derphi_j, &wolfe));
            if (wolfe)
                return ax_line_found(p, a_j, phi_j, derphi_j);
            if (derphi_j * (a_hi - a_lo) >= 0) {
                phi_rec = phi_hi;
                a_rec = a_hi;
                a_hi = a_lo;
                phi_hi = phi_lo;
            } else {
                phi_rec = phi_lo;
                a_rec = a_lo;
            }
            a_lo = a_j;
            phi_lo = phi_j;
            derphi_lo = derphi_j;
        }
        if (i + 1 > ZOOM_STEPS)
            return ax_line_not_found(p, ZOOM_SPENT);
    }
}

ax_status ax_line_search_nocedal_wright(probe *p, double phi0, double derphi0, double alpha1)
{
    ax_line_search *search = p->search;
    const double c1 = search->c1, c2 = search->c2;
    if (!(derphi0 < 0.0))
        return ax_line_not_found(p, NOT_DESCENT);
    if (!(alpha1 > 0.0) || !isfinite(alpha1))
        alpha1 = 1.0;
    if (alpha1 > search->amax)
        alpha1 = search->amax;

    double alpha0 = 0.0, phi_a0 = phi0, derphi_a0 = derphi0, phi_a1;
    AX_TRY(ax_line_probe_phi(p, alpha1, &phi_a1));
    for (int i = 0; i < BRACKET_STEPS; i++) {
        if (ax_line_probe_capped(p) && isnan(phi_a1))
            return ax_line_not_found(p, CAPPED);
        if (alpha1 == 0.0)
            return ax_line_not_found(p, ROUNDING);
        if (phi_a1 > phi0 + c1 * alpha1 * derphi0 || (i > 0 && phi_a1 >= phi_a0))
            return zoom(p, alpha0, alpha1, phi_a0, phi_a1, derphi_a0, phi0, derphi0);
        double derphi_a1 = 0.0;
        AX_TRY(ax_line_probe_slope(p, &derphi_a1));
        bool wolfe = fabs(derphi_a1) <= -c2 * derphi0;
        if (wolfe)
            AX_TRY(accepted(p, alpha1, phi_a1, derphi_a1, &wolfe));
        if (wolfe)
            return ax_line_found(p, alpha1, phi_a1, derphi_a1);
        if (derphi_a1 >= 0.0)
            return zoom(p, alpha1, alpha0, phi_a1, phi_a0, derphi_a1, phi0, derphi0);
        if (alpha1 >= search->amax)
            return ax_line_not_found(p, AT_AMAX);
        double alpha2 = fmin(2.0 * alpha1, search->amax);
        alpha0 = alpha1;
        phi_a0 = phi_a1;
        derphi_a0 = derphi_a1;
        alpha1 = alpha2;
        AX_TRY(ax_line_probe_phi(p, alpha1, &phi_a1));
    }
    return ax_line_not_found(p, BRACKET_SPENT);
}

static ax_status search_both(probe *p, double phi0, double derphi0, double alpha1)
{
    ax_line_search *search = p->search;
    ax_line_search_result *result = p->result;
    AX_TRY(ax_line_search_more_thuente(p, phi0, derphi0, alpha1));
    /* scipy checks the extra condition only after dcsrch converged */
    if (result->found && (!search->accept || search->accept(search->accept_user, result->alpha,
                                                            result->phi, result->derphi)))
        return AX_STATUS_OK;
    result->found = false;
    p->phase_evaluations = 0;
    return ax_line_search_nocedal_wright(p, phi0, derphi0, alpha1);
}

ax_status ax_line_search_wolfe(ax_line_search *search, double phi0, double derphi0, double alpha1,
                               ax_line_search_result *result)
{
    *result = (ax_line_search_result){.found = false};
    probe p = {.search = search, .result = result, .last_alpha = NAN};
    const ax_objective *objective = search->objective;
    if (objective->line_begin)
        AX_TRY(objective->line_begin(objective->context, search->direction));
    ax_status status = search_both(&p, phi0, derphi0, alpha1);
    if (objective->line_end)
        objective->line_end(objective->context,
                            status == AX_STATUS_OK && result->found ? result->alpha : 0.0);
    return status;
}

ax_status ax_line_search_check_config(const ax_train_config *config)
{
    if (!(config->gtol >= 0.0 && isfinite(config->gtol)))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "gtol must be a finite number >= 0, not %g", config->gtol);
    if (config->line_search_max_evaluations < 2 || config->line_search_max_evaluations > 1000)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "line-search evaluations must be from 2 to 1000, not %d",
                       config->line_search_max_evaluations);
    return AX_STATUS_OK;
}

double ax_arena_max_abs(ax_optimizer *optimizer, const void *arena, double *scratch)
{
    ax_backend *backend = optimizer->backend;
    backend->ops->download_f64(backend, scratch, arena, optimizer->count);
    /* NaN anywhere makes the result NaN (so no gtol test passes on it); the
     * flag rather than a branch lets the loop vectorise. */
    double largest = 0.0;
    int nan_seen = 0;
#pragma omp simd reduction(max : largest) reduction(| : nan_seen)
    for (int64_t i = 0; i < optimizer->count; i++) {
        const double v = fabs(scratch[i]);
        largest = v > largest ? v : largest;
        nan_seen |= v != v;
    }
    return nan_seen ? NAN : largest;
}
