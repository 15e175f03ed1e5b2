/* line_search_internal.h: what the two line searches (line_search.c's
 * Nocedal-Wright search, more_thuente.c's MINPACK dcsrch) share: a probe
 * that evaluates the objective at x0 + alpha d and reports the result. */
#ifndef AX_OPTIM_LINE_SEARCH_INTERNAL_H
#define AX_OPTIM_LINE_SEARCH_INTERNAL_H

#include "base/error.h"
#include "optim/line_search.h"

typedef struct ax_line_probe {
    ax_line_search *search;
    ax_line_search_result *result;
    int phase_evaluations; /* objective calls in the current search phase */
    double last_alpha;     /* the point the arenas hold */
    double derphi;         /* slope at last_alpha */
    bool gradient_finite;
    bool gradient_complete; /* the gradient arena holds the gradient at last_alpha */
} ax_line_probe;

/* phi(alpha): the loss at x0 + alpha d (one objective call, which also
 * computes the gradient). NaN without a call when the phase's evaluations
 * are used up; fails on a NaN loss. */
ax_status ax_line_probe_phi(ax_line_probe *p, double alpha, double *value);
/* phi'(alpha) at the point phi() last evaluated; fails when not finite. */
ax_status ax_line_probe_slope(ax_line_probe *p, double *value);
bool ax_line_probe_capped(const ax_line_probe *p);
/* Makes the gradient arena hold the gradient at last_alpha (a search along
 * a direction leaves it incomplete until needed); fails when not finite. */
ax_status ax_line_probe_gradient(ax_line_probe *p);
/* Ends a search: found (arenas at alpha, which must be the point phi()
 * evaluated last) or not (parameters reset to x0). */
ax_status ax_line_found(ax_line_probe *p, double alpha, double phi, double derphi);
ax_status ax_line_not_found(ax_line_probe *p, const char *reason);

/* The two searches; both end with ax_line_found or ax_line_not_found. */
ax_status ax_line_search_more_thuente(ax_line_probe *p, double phi0, double derphi0, double alpha1);
ax_status ax_line_search_nocedal_wright(ax_line_probe *p, double phi0, double derphi0,
                                        double alpha1);

#endif
