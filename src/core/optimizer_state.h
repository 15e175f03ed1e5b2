/* optimizer_state.h: the trainer's side of ax_optimizer_state (axon.h,
 * "optimizer state"): starting a run's optimizer from a carried state and
 * leaving the run's final state in it. */
#ifndef AX_CORE_OPTIMIZER_STATE_H
#define AX_CORE_OPTIMIZER_STATE_H

#include "axon.h"
#include "optim/optimizer.h"

/* Refuses a state for a kind that cannot carry one (CG, L-BFGS), before
 * any work; NULL passes. */
ax_status ax_optimizer_state_check_kind(const ax_optimizer_state *carried, ax_optimizer_kind kind);

/* Puts a held state into the freshly created optimizer (its arrays and its
 * step count) after checking that it fits: the kind, the parameter count,
 * the precision and the number of arrays; an empty state (or NULL) leaves
 * the optimizer as created. The optimizer is unchanged on failure. */
ax_status ax_optimizer_state_start(const ax_optimizer_state *carried, ax_optimizer *optimizer,
                                   ax_precision precision);

/* Leaves the optimizer's arrays and step count in *carried (NULL: nothing). */
ax_status ax_optimizer_state_keep(ax_optimizer_state *carried, const ax_optimizer *optimizer,
                                  ax_precision precision);

#endif
