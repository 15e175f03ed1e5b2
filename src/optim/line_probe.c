/* line_probe.c: what both line searches (line_search.c, more_thuente.c)
 * ask of the objective along the search direction: phi(alpha) and its
 * slope, the gradient at the point evaluated last, and the ends of a
 * search (found, or not found with the start point restored). Its own
 * file, so that the two searches call it and nothing here calls them. */
#include "optim/line_search_internal.h"

#include <math.h>

typedef ax_line_probe probe;

/* Restores the start point, as promised on every failure. */
static void reset_to_start(ax_line_search *search)
{
    ax_optimizer *o = search->optimizer;
    o->backend->ops->copy(o->backend, o->parameters, search->x0, o->count);
}

/* phi(alpha): sets the parameters to x0 + alpha d and evaluates; the slope
 * comes from the same pass and is kept for slope(). Along a direction
 * (evaluate_along) the gradient arena stays incomplete: only a point the
 * search accepts, or shows to the caller's extra condition, needs it. */
ax_status ax_line_probe_phi(probe *p, double alpha, double *value)
{
    ax_line_search *search = p->search;
    ax_optimizer *o = search->optimizer;
    const ax_backend_ops *ops = o->backend->ops;
    if (p->phase_evaluations >= search->max_evaluations) {
        *value = NAN;
        return AX_STATUS_OK; /* the caller sees the cap and stops */
    }
    ops->copy(o->backend, o->parameters, search->x0, o->count);
    ops->axpy(o->backend, o->count, alpha, search->direction, o->parameters);
    const ax_objective *objective = search->objective;
    double slope = NAN;
    ax_status status = objective->evaluate_along
                           ? objective->evaluate_along(objective->context, alpha, false, value, &slope)
                           : objective->evaluate(objective->context, value);
    p->result->evaluations++;
    p->phase_evaluations++;
    if (status != AX_STATUS_OK) {
        reset_to_start(search);
        return status;
    }
    if (isnan(*value)) {
        reset_to_start(search);
        return ax_fail(AX_STATUS_DIVERGED,
                       "iteration %d: the cost is NaN at line-search step %g; the weights of the "
                       "previous iteration are kept",
                       search->iteration, alpha);
    }
    p->last_alpha = alpha;
    if (objective->evaluate_along) {
        p->gradient_complete = false;
        p->gradient_finite = isfinite(slope);
        p->derphi = slope;
        return AX_STATUS_OK;
    }
    p->gradient_complete = true;
    /* One host wait for both; the slope is dropped when not finite. */
    ax_reduction reads[2] = {
        {.kind = AX_REDUCTION_NONFINITE, .count = o->count, .x = o->gradients},
        {.kind = AX_REDUCTION_DOT, .count = o->count, .x = o->gradients, .y = search->direction},
    };
    ax_backend_reduce(o->backend, 2, reads);
    p->gradient_finite = reads[0].value == 0.0;
    p->derphi = p->gradient_finite ? reads[1].value : NAN;
    return AX_STATUS_OK;
}

static ax_status gradient_not_finite(probe *p)
{
    reset_to_start(p->search);
    return ax_fail(AX_STATUS_DIVERGED,
                   "iteration %d: the gradient is NaN or infinite at line-search step %g; the "
                   "weights of the previous iteration are kept",
                   p->search->iteration, p->last_alpha);
}

ax_status ax_line_probe_gradient(probe *p)
{
    if (p->gradient_complete)
        return AX_STATUS_OK;
    ax_line_search *search = p->search;
    ax_optimizer *o = search->optimizer;
    const ax_objective *objective = search->objective;
    double loss, slope;
    ax_status status =
        objective->evaluate_along(objective->context, p->last_alpha, true, &loss, &slope);
    if (status != AX_STATUS_OK) {
        reset_to_start(search);
        return status;
    }
    p->gradient_complete = true;
    if (!o->backend->ops->all_finite(o->backend, o->count, o->gradients))
        return gradient_not_finite(p);
    return AX_STATUS_OK;
}

/* phi'(alpha) at the point phi() last evaluated (the algorithms only ask
 * for the slope where they just evaluated the loss). */
ax_status ax_line_probe_slope(probe *p, double *value)
{
    p->result->gradient_evaluations++;
    if (!p->gradient_finite || !isfinite(p->derphi))
        return gradient_not_finite(p);
    *value = p->derphi;
    return AX_STATUS_OK;
}

bool ax_line_probe_capped(const probe *p)
{
    return p->phase_evaluations >= p->search->max_evaluations;
}

ax_status ax_line_found(probe *p, double alpha, double value, double derphi)
{
    /* Both searches accept only the step they evaluated last. */
    AX_TRY(ax_line_probe_gradient(p));
    p->result->found = true;
    p->result->alpha = alpha;
    p->result->phi = value;
    p->result->derphi = derphi;
    p->result->reason = NULL;
    return AX_STATUS_OK;
}

ax_status ax_line_not_found(probe *p, const char *reason)
{
    reset_to_start(p->search);
    p->result->found = false;
    p->result->reason = reason;
    return AX_STATUS_OK;
}
