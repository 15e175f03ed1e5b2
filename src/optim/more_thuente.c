/* more_thuente.c: the Moré-Thuente line search (MINPACK-2's dcsrch and
 * dcstep), which scipy.optimize's line_search_wolfe1 runs first inside
 * fmin_cg and fmin_bfgs; only when it fails does scipy fall back to the
 * Nocedal-Wright search of line_search.c. Following scipy keeps axon's CG
 * trajectory close to fmin_cg's from the same start. The search keeps an
 * interval [stx, sty] that brackets a step satisfying the strong Wolfe
 * conditions and picks trial steps by safeguarded cubic, quadratic or secant
 * interpolation (Moré & Thuente, ACM TOMS 20, 1994). */
#include "optim/line_search_internal.h"

#include <math.h>

typedef struct dcstep_state {
    double stx, fx, dx, sty, fy, dy;
    bool brackt;
} dcstep_state;

/* dcstep: updates the interval with the trial (stp, fp, dp) and returns the
 * next trial step, within [stpmin, stpmax]. */
static double dcstep(dcstep_state *s, double stp, double fp, double dp, double stpmin,
                     double stpmax)
{
    const double stx = s->stx, fx = s->fx, dx = s->dx;
    const double sgnd = dp * (dx / fabs(dx));
    double stpf;
    if (fp > fx) {
        /* higher value: bracketed; the cubic step if nearer stx, else the
         * mean of cubic and quadratic */
        double theta = 3.0 * (fx - fp) / (stp - stx) + dx + dp;
        double sc = fmax(fabs(theta), fmax(fabs(dx), fabs(dp)));
        double gamma = sc * sqrt((theta / sc) * (theta / sc) - (dx / sc) * (dp / sc));
        if (stp < stx)
            gamma = -gamma;
        double p = (gamma - dx) + theta, q = ((gamma - dx) + gamma) + dp;
        double stpc = stx + p / q * (stp - stx);
        double stpq = stx + ((dx / ((fx - fp) / (stp - stx) + dx)) / 2.0) * (stp - stx);
        stpf = fabs(stpc - stx) < fabs(stpq - stx) ? stpc : stpc + (stpq - stpc) / 2.0;
        s->brackt = true;
    } else if (sgnd < 0.0) {
        /* lower value, slopes of opposite sign: bracketed */
        double theta = 3.0 * (fx - fp) / (stp - stx) + dx + dp;
        double sc = fmax(fabs(theta), fmax(fabs(dx), fabs(dp)));
        double gamma = sc * sqrt((theta / sc) * (theta / sc) - (dx / sc) * (dp / sc));
        if (stp > stx)
            gamma = -gamma;
        double p = (gamma - dp) + theta, q = ((gamma - dp) + gamma) + dx;
        double stpc = stp + p / q * (stx - stp);
        double stpq = stp + (dp / (dp - dx)) * (stx - stp);
        stpf = fabs(stpc - stp) > fabs(stpq - stp) ? stpc : stpq;
        s->brackt = true;
    } else if (fabs(dp) < fabs(dx)) {
        /* lower value, same sign, slope magnitude decreasing */
        double theta = 3.0 * (fx - fp) / (stp - stx) + dx + dp;
        double sc = fmax(fabs(theta), fmax(fabs(dx), fabs(dp)));
        double gamma = sc * sqrt(fmax(0.0, (theta / sc) * (theta / sc) - (dx / sc) * (dp / sc)));
        if (stp > stx)
            gamma = -gamma;
        double p = (gamma - dp) + theta, q = (gamma + (dx - dp)) + gamma;
        double r = p / q, stpc;
        if (r < 0.0 && gamma != 0.0)
            stpc = stp + r * (stx - stp);
        else
            stpc = stp > stx ? stpmax : stpmin;
        double stpq = stp + (dp / (dp - dx)) * (stx - stp);
        if (s->brackt) {
            stpf = fabs(stpc - stp) < fabs(stpq - stp) ? stpc : stpq;
            stpf = stp > stx ? fmin(stp + 0.66 * (s->sty - stp), stpf)
                             : fmax(stp + 0.66 * (s->sty - stp), stpf);
        } else {
            stpf = fabs(stpc - stp) > fabs(stpq - stp) ? stpc : stpq;
            stpf = fmin(stpmax, fmax(stpmin, stpf));
        }
    } else {
        /* lower value, same sign, slope not decreasing */
        if (s->brackt) {
            double theta = 3.0 * (fp - s->fy) / (s->sty - stp) + s->dy + dp;
            double sc = fmax(fabs(theta), fmax(fabs(s->dy), fabs(dp)));
            double gamma = sc * sqrt((theta / sc) * (theta / sc) - (s->dy / sc) * (dp / sc));
            if (stp > s->sty)
                gamma = -gamma;
            double p = (gamma - dp) + theta, q = ((gamma - dp) + gamma) + s->dy;
            stpf = stp + p / q * (s->sty - stp);
        } else {
            stpf = stp > stx ? stpmax : stpmin;
        }
    }
    if (fp > fx) {
        s->sty = stp;
        s->fy = fp;
        s->dy = dp;
    } else {
        if (sgnd < 0.0) {
            s->sty = stx;
            s->fy = fx;
            s->dy = dx;
        }
        s->stx = stp;
        s->fx = fp;
        s->dx = dp;
    }
    return stpf;
}

ax_status ax_line_search_more_thuente(ax_line_probe *p, double phi0, double derphi0, double stp)
{
    ax_line_search *search = p->search;
    const double ftol = search->c1, gtol = search->c2, xtol = 1e-14;
    const double stpmin = search->amin, stpmax = search->amax;
    if (!(derphi0 < 0.0))
        return ax_line_not_found(
            p, "line search failed: the search direction is not a descent direction");
    if (stp > stpmax)
        stp = stpmax;
    if (stp < stpmin)
        stp = stpmin;
    dcstep_state s = {.stx = 0.0, .fx = phi0, .dx = derphi0, .sty = 0.0, .fy = phi0, .dy = derphi0};
    const double gtest = ftol * derphi0;
    double width = stpmax - stpmin, width1 = width / 0.5;
    double stmin = 0.0, stmax = stp + 4.0 * stp;
    int stage = 1;
    for (;;) {
        double f, g;
        AX_TRY(ax_line_probe_phi(p, stp, &f));
        if (ax_line_probe_capped(p) && isnan(f))
            return ax_line_not_found(p, "line search failed to find a Wolfe point within its "
                                        "maximum number of evaluations");
        if (isinf(f))
            g = NAN; /* a saturated step: only its size matters below */
        else
            AX_TRY(ax_line_probe_slope(p, &g));
        if (isinf(f)) {
            /* dcsrch cannot interpolate through +inf: shrink toward the best step */
            s.sty = stp;
            s.fy = f;
            s.brackt = true;
            stp = s.stx + 0.5 * (stp - s.stx);
            stmin = fmin(s.stx, s.sty);
            stmax = fmax(s.stx, s.sty);
            if (stmax - stmin <= xtol * stmax)
                return ax_line_not_found(p, "line search failed to find a Wolfe point: the cost is "
                                            "infinite at every step tried");
            continue;
        }
        const double ftest = phi0 + stp * gtest;
        if (stage == 1 && f <= ftest && g >= 0.0)
            stage = 2;
        if (f <= ftest && fabs(g) <= gtol * -derphi0)
            return ax_line_found(p, stp, f, g);
        if (s.brackt && (stp <= stmin || stp >= stmax))
            return ax_line_not_found(
                p, "line search failed to find a Wolfe point: rounding errors prevent progress");
        if (s.brackt && stmax - stmin <= xtol * stmax)
            return ax_line_not_found(
                p, "line search failed to find a Wolfe point: the interval is below xtol");
        if (stp == stpmax && f <= ftest && g <= gtest)
            return ax_line_not_found(
                p, "line search failed to find a Wolfe point below its largest step");
        if (stp == stpmin && (f > ftest || g >= gtest))
            return ax_line_not_found(
                p, "line search failed to find a Wolfe point above its smallest step");

        if (stage == 1 && f <= s.fx && f > ftest) {
            /* the modified function psi(stp) = f - f0 - ftol stp f'(0) */
            dcstep_state m = {.stx = s.stx,
                              .fx = s.fx - s.stx * gtest,
                              .dx = s.dx - gtest,
                              .sty = s.sty,
                              .fy = s.fy - s.sty * gtest,
                              .dy = s.dy - gtest,
                              .brackt = s.brackt};
            stp = dcstep(&m, stp, f - stp * gtest, g - gtest, stmin, stmax);
            s.stx = m.stx;
            s.sty = m.sty;
            s.brackt = m.brackt;
            s.fx = m.fx + m.stx * gtest;
            s.fy = m.fy + m.sty * gtest;
            s.dx = m.dx + gtest;
            s.dy = m.dy + gtest;
        } else {
            stp = dcstep(&s, stp, f, g, stmin, stmax);
        }
        if (s.brackt) {
            if (fabs(s.sty - s.stx) >= 0.66 * width1)
                stp = s.stx + 0.5 * (s.sty - s.stx);
            width1 = width;
            width = fabs(s.sty - s.stx);
            stmin = fmin(s.stx, s.sty);
            stmax = fmax(s.stx, s.sty);
        } else {
            stmin = stp + 1.1 * (stp - s.stx);
            stmax = stp + 4.0 * (stp - s.stx);
        }
        stp = fmin(stpmax, fmax(stpmin, stp));
        if ((s.brackt && (stp <= stmin || stp >= stmax)) ||
            (s.brackt && stmax - stmin <= xtol * stmax))
            stp = s.stx;
    }
}
