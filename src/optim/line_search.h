/* line_search.h: the strong-Wolfe line search shared by nonlinear CG and
 * L-BFGS, as scipy.optimize runs it in fmin_cg: the Moré-Thuente search
 * (MINPACK-2 dcsrch), and when it fails Nocedal & Wright's algorithms 3.5
 * and 3.6 (scipy's line_search_wolfe2: bracketing by doubling, then a zoom
 * by cubic, else quadratic, else bisection interpolation).
 *
 * The objective evaluates at the parameter arena, so a trial step alpha
 * writes parameters = x0 + alpha d and calls evaluate; each call yields the
 * loss and the gradient in one pass. */
#ifndef AX_OPTIM_LINE_SEARCH_H
#define AX_OPTIM_LINE_SEARCH_H

#include <stdbool.h>

#include "optim/optimizer.h"

typedef struct ax_line_search {
    ax_optimizer *optimizer;       /* parameters, gradients, backend, count */
    const ax_objective *objective;
    const void *x0;                /* start point (arena) */
    const void *direction;         /* search direction d (arena) */
    double c1, c2;                 /* sufficient decrease and curvature constants */
    double amin, amax;             /* smallest and largest step tried */
    int max_evaluations;           /* cap on objective calls in each of the two phases */
    /* Optional extra acceptance test at a strong-Wolfe point (scipy's
     * extra_condition); the gradient arena holds the gradient at alpha. */
    bool (*accept)(void *user, double alpha, double phi, double derphi);
    void *accept_user;
    int iteration;                 /* for messages */
} ax_line_search;

typedef struct ax_line_search_result {
    bool found;          /* a point satisfying the strong Wolfe conditions */
    double alpha, phi, derphi;
    const char *reason;  /* why no point was found (static), NULL when found */
    int evaluations;          /* objective calls (each computes loss and gradient) */
    int gradient_evaluations; /* of those, the ones whose gradient the search used */
} ax_line_search_result;

/* Searches along d from x0 where the loss is phi0 and the slope derphi0 < 0,
 * starting with step alpha1. On success the parameter arena holds
 * x0 + alpha d and the gradient arena the gradient there. When no Wolfe point
 * is found the parameters are reset to x0 (the gradient arena then holds a
 * trial point's gradient). Fails (AX_STATUS_DIVERGED, parameters reset to x0)
 * when a trial point's loss is NaN or its gradient not finite. */
ax_status ax_line_search_wolfe(ax_line_search *search, double phi0, double derphi0, double alpha1,
                               ax_line_search_result *result);

/* The options every line-search kind reads (gtol, the evaluations per
 * search phase): its check_config, or the start of it. */
ax_status ax_line_search_check_config(const ax_train_config *config);

/* The largest absolute value of an arena (the gradient's inf-norm); scratch
 * holds count doubles (the arena is read through it). */
double ax_arena_max_abs(ax_optimizer *optimizer, const void *arena, double *scratch);

#endif
