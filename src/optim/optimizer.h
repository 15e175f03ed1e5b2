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

/* A kind's own state between steps (kind_state: CG's gradient and
 * direction, L-BFGS's correction pairs) as a checkpoint holds it: named
 * arrays of host doubles and named scalars, both in the kind's terms. The
 * checkpoint writes and reads them without knowing what they mean
 * (tensors "optimizer.NAME", hexadecimal floats in the state's JSON); the
 * kind checks them before a resume. Doubles hold float32 and float64
 * arenas exactly, so a restored state is the saved one bit for bit. */
enum { AX_OPTIMIZER_SAVED_MAX = 8, AX_OPTIMIZER_SAVED_NAME = 32 };
typedef struct ax_optimizer_saved {
    int array_count, scalar_count;
    struct {
        char name[AX_OPTIMIZER_SAVED_NAME];
        int64_t length;
        double *values; /* owned (malloc) */
    } arrays[AX_OPTIMIZER_SAVED_MAX];
    struct {
        char name[AX_OPTIMIZER_SAVED_NAME];
        double value;
    } scalars[AX_OPTIMIZER_SAVED_MAX];
} ax_optimizer_saved;

/* How a kind's state goes from one training call into the next
 * (core/optimizer_state.c, ax_train_config.optimizer_state): for the kinds
 * whose whole state is the arenas state[0 ..] and a step count. The texts
 * are for the messages that refuse a state. */
typedef struct ax_optimizer_carry {
    int fewest_arrays, most_arrays; /* how many arenas a carried state may hold */
    const char *arrays_text;        /* those counts and what they hold: "2 (m and v)" */
    /* An arena whose values are >= 0 (Adam's second moments), or -1; and
     * what it is, for the message. */
    int nonnegative_array;
    const char *nonnegative_text;
    /* Why a run keeps no arena, or some, for the message of a mismatch. */
    const char *why_none, *why_some;
} ax_optimizer_carry;

/* One optimizer kind: its name, what it needs of training, and its
 * operations. Each kind's file defines one (ax_optimizer_sgd, ...) and the
 * registry in optimizer.c lists them at their enum values; the trainer, the
 * checkpoints and the public ax_optimizer_* queries ask the registry instead
 * of testing for kinds. Optional members are NULL (or 0) where a kind has no
 * use for them. */
typedef struct ax_optimizer_descriptor {
    const char *name; /* as ax_optimizer_name and --optimizer spell it */
    /* Works on the full batch only, with a deterministic cost (no dropout):
     * one epoch is one iteration (CG, L-BFGS). */
    bool full_batch;
    unsigned settings; /* ax_optimizer_setting bits: the options of ax_train_config it reads */
    double default_learning_rate; /* 0: ax_train_defaults' 0.1 (kinds that choose their steps) */
    /* How many state arenas state[0 ..] it keeps for config (zeroed before
     * init; NULL: none). */
    int (*state_arrays)(const ax_train_config *config);
    /* Checks its own options of config, after the checks every kind gets. */
    ax_status (*check_config)(const ax_train_config *config);
    /* Sets up kind_state (the state arenas are allocated already). */
    ax_status (*init)(ax_optimizer *optimizer);
    /* One step; *loss gets the loss at the parameters the step started from
     * (SGD, Adam) or, for the line-search optimizers (CG, L-BFGS), at the
     * point the step accepted, which they know already. */
    ax_status (*step)(ax_optimizer *optimizer, const ax_objective *objective, double *loss);
    void (*destroy)(ax_optimizer *optimizer);
    /* Kinds with a kind_state (all three NULL for SGD and Adam, whose state
     * is the arenas state[0..1]): save adds it to an empty `saved`;
     * check_saved says whether `saved` is a state the kind could have saved
     * for count parameters with config's options (the names it expects and
     * no others, array lengths, scalar ranges); restore puts back a state
     * that check_saved accepted. Between steps only. */
    ax_status (*save)(const ax_optimizer *optimizer, ax_optimizer_saved *saved);
    ax_status (*check_saved)(const ax_train_config *config, int64_t count,
                             const ax_optimizer_saved *saved);
    void (*restore)(ax_optimizer *optimizer, const ax_optimizer_saved *saved);
    /* How its state is carried between calls, or NULL where it cannot be
     * (CG's and L-BFGS's belong to one full batch). */
    const ax_optimizer_carry *carry;
} ax_optimizer_descriptor;

/* The kinds (one file each), listed by the registry in optimizer.c. */
extern const ax_optimizer_descriptor ax_optimizer_sgd;
extern const ax_optimizer_descriptor ax_optimizer_adam;
extern const ax_optimizer_descriptor ax_optimizer_cg;
extern const ax_optimizer_descriptor ax_optimizer_lbfgs;
extern const ax_optimizer_descriptor ax_optimizer_adamw;

/* Adam's update of every parameter from the gradient arena (adam.c), the
 * step count already advanced; AdamW's step ends with it. */
void ax_adam_update_all(ax_optimizer *optimizer);
/* Adam's moments m and v as a carried state (adam.c); AdamW's too. */
extern const ax_optimizer_carry ax_adam_carry;

/* The descriptor of kind, or NULL for a value no kind has. */
const ax_optimizer_descriptor *ax_optimizer_descriptor_of(ax_optimizer_kind kind);

/* What an optimizer has counted, as one value a checkpoint records and
 * restores (core/train_state.h): steps taken; line-search optimizers also
 * count objective calls (each computes loss and gradient in one pass) and,
 * of those, the ones whose gradient was used (scipy's grad_calls). */
typedef struct ax_optimizer_counters {
    int64_t steps;
    int64_t evaluations;
    int64_t gradient_evaluations;
} ax_optimizer_counters;

struct ax_optimizer {
    const ax_optimizer_descriptor *kind;
    ax_backend *backend;
    int64_t count;       /* parameters */
    void *parameters;    /* backend arena (count) */
    void *gradients;     /* backend arena (count) */
    ax_train_config config;
    void *state[2];      /* optimizer state arenas (count each), as needed */
    ax_optimizer_counters counters;
    void *kind_state;    /* a kind's own state (CG, L-BFGS); its destroy frees it */
    /* Line-search optimizers, once they stop moving: why (static text);
     * `converged` asks the trainer to end training cleanly. */
    bool converged;
    const char *stop_reason;
    /* The parameters that are weights (not biases), which AdamW decays:
     * [weight_offset[i], weight_offset[i] + weight_length[i]) in reals, set
     * by the trainer after creating the optimizer (none: nothing decays). */
    int weight_spans;
    int64_t weight_offset[AX_MAX_LAYERS], weight_length[AX_MAX_LAYERS];
};

/* The optimizer named by config->optimizer, with zeroed state. */
ax_status ax_optimizer_create(const ax_train_config *config, ax_backend *backend, void *parameters,
                              void *gradients, int64_t count, ax_optimizer **out);
void ax_optimizer_free(ax_optimizer *optimizer);

/* Checkpoints: copies state arena i (count reals) to or from host doubles,
 * exactly for float and double arenas. get returns false, copying nothing,
 * when the kind has no arena i; set fails when it has none. The counters
 * are one plain field the trainer copies itself. CG
 * and L-BFGS keep theirs in kind_state: ax_optimizer_save below. */
bool ax_optimizer_state_get(const ax_optimizer *optimizer, int index, double *values);
ax_status ax_optimizer_state_set(ax_optimizer *optimizer, int index, const double *values);

/* The kind's own state (see ax_optimizer_saved): save fills `saved` (empty
 * for SGD and Adam; free it with ax_optimizer_saved_free); restore checks
 * it as ax_optimizer_saved_check does, then puts it back. */
ax_status ax_optimizer_save(const ax_optimizer *optimizer, ax_optimizer_saved *saved);
ax_status ax_optimizer_restore(ax_optimizer *optimizer, const ax_optimizer_saved *saved);
/* Whether `saved` is a state the kind config->optimizer could have saved
 * for count parameters with config's options: the names it expects and no
 * others, array lengths, scalar ranges. Fails (AX_STATUS_BAD_FILE) with a
 * message naming the field, for a checkpoint reader to prefix its file. */
ax_status ax_optimizer_saved_check(const ax_train_config *config, int64_t count,
                                   const ax_optimizer_saved *saved);
void ax_optimizer_saved_free(ax_optimizer_saved *saved);
/* Building and reading a saved state. add_array returns the new array's
 * storage (length doubles, uninitialised), or NULL (out of memory, or more
 * than AX_OPTIMIZER_SAVED_MAX arrays: the message is set). find returns
 * NULL for a name not held. */
double *ax_optimizer_saved_add_array(ax_optimizer_saved *saved, const char *name, int64_t length);
ax_status ax_optimizer_saved_add_scalar(ax_optimizer_saved *saved, const char *name, double value);
const double *ax_optimizer_saved_array(const ax_optimizer_saved *saved, const char *name,
                                       int64_t *length);
bool ax_optimizer_saved_scalar(const ax_optimizer_saved *saved, const char *name, double *value);
/* For the kinds' checks: fails unless the arrays and scalars held are
 * exactly those named (NULL-terminated lists) and each named array has the
 * matching length of `lengths`. */
ax_status ax_optimizer_saved_expect(const ax_optimizer_saved *saved, const char *kind,
                                    const char *const *arrays, const int64_t *lengths,
                                    const char *const *scalars);
/* For the kinds' checks: the scalar "started", which must be there and be 0
 * or 1 (a kind that has not started saves nothing else). */
ax_status ax_optimizer_saved_started(const ax_optimizer_saved *saved, const char *kind,
                                     bool *started);

#endif
