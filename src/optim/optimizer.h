/* optimizer.h: what an optimizer sees of training: a flat parameter vector,
 * the matching gradient, and an objective it may evaluate as often as it
 * needs (once per step for SGD and Adam; several times per iteration for a
 * line search in nonlinear CG or L-BFGS). Optimizers never see layers. */
#ifndef AX_OPTIM_OPTIMIZER_H
#define AX_OPTIM_OPTIMIZER_H

#include "axon.h"
#include "backend/backend.h"

/* Computes the loss at the current parameters and writes the gradient
 * arena. The batch it covers is set by the trainer before each step.
 *
 * Line searches may use three optional calls (all three or none) that make
 * a trial step cheaper than evaluate: along a fixed direction d the network's
 * first layer is affine in the step, X (W + a D)^T = X W^T + a X D^T, so
 * with those two products kept a trial needs no pass over the inputs.
 *  - line_begin: the parameters hold x0; a search along direction starts.
 *  - evaluate_along: the parameters hold x0 + alpha direction; *loss and
 *    *slope = gradient . direction there (equal to evaluate's up to rounding).
 *    The gradient arena is complete only when with_gradient is set; calling
 *    again at the same alpha with with_gradient set completes it cheaply.
 *  - line_end: the search ended at x0 + alpha d (alpha 0: it found no point
 *    and the parameters are back at x0). */
typedef struct ax_objective {
    ax_status (*evaluate)(void *context, double *loss);
    ax_status (*line_begin)(void *context, const void *direction);
    ax_status (*evaluate_along)(void *context, double alpha, bool with_gradient, double *loss,
                                double *slope);
    void (*line_end)(void *context, double alpha);
    void *context;
} ax_objective;

typedef struct ax_optimizer ax_optimizer;

typedef struct ax_optimizer_ops {
    const char *name;
    /* One step; *loss gets the loss at the parameters the step started from
     * (SGD, Adam) or, for the line-search optimizers (CG, L-BFGS), at the
     * point the step accepted, which they know already. */
    ax_status (*step)(ax_optimizer *optimizer, const ax_objective *objective, double *loss);
    void (*destroy)(ax_optimizer *optimizer);
} ax_optimizer_ops;

struct ax_optimizer {
    const ax_optimizer_ops *ops;
    ax_backend *backend;
    int64_t count;       /* parameters */
    void *parameters;    /* backend arena (count) */
    void *gradients;     /* backend arena (count) */
    ax_train_config config;
    void *state[2];      /* optimizer state arenas (count each), as needed */
    int64_t steps;
    void *kind_state;    /* a kind's own state (CG, L-BFGS); its destroy frees it */
    /* Line-search optimizers: objective calls so far (each computes loss and
     * gradient in one pass) and, of those, the ones whose gradient was used
     * (scipy's grad_calls); and, once they stop moving, why (static text):
     * `converged` asks the trainer to end training cleanly. */
    int64_t evaluations;
    int64_t gradient_evaluations;
    bool converged;
    const char *stop_reason;
};

/* The optimizer named by config->optimizer, with zeroed state. */
ax_status ax_optimizer_create(const ax_train_config *config, ax_backend *backend, void *parameters,
                              void *gradients, int64_t count, ax_optimizer **out);
void ax_optimizer_free(ax_optimizer *optimizer);

/* Constructors of each kind (one file each). */
ax_status ax_optimizer_sgd_init(ax_optimizer *optimizer);
ax_status ax_optimizer_adam_init(ax_optimizer *optimizer);
ax_status ax_optimizer_cg_init(ax_optimizer *optimizer);
ax_status ax_optimizer_lbfgs_init(ax_optimizer *optimizer);

/* Allocates state arena i (zeroed). */
ax_status ax_optimizer_allocate_state(ax_optimizer *optimizer, int index);

/* Checkpoints: copies state arena i (count reals) to or from host doubles,
 * exactly for float and double arenas. get returns false, copying nothing,
 * when the kind has no arena i; set fails when it has none. The step count
 * and evaluation counters are plain fields the trainer copies itself. CG
 * and L-BFGS keep more in kind_state, which this does not cover. */
bool ax_optimizer_state_get(const ax_optimizer *optimizer, int index, double *values);
ax_status ax_optimizer_state_set(ax_optimizer *optimizer, int index, const double *values);

#endif
