/* profile.h: per-operation timers (calls, mean, standard deviation and
 * share per operation, and the share of GEMMs in the time, as profiles of
 * the galaxy classifier in Python and of TMVA's backend reported them). A
 * network owns one profile;
 * passes and the trainer bracket each operation with ax_profile_start /
 * ax_profile_stop, which do nothing but test a pointer when profiling is off. */
#ifndef AX_PERF_PROFILE_H
#define AX_PERF_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "axon.h"
#include "base/clock.h" /* ax_seconds_now, for the start times */

typedef enum ax_profile_kind {
    AX_PROFILE_FORWARD_GEMM = 0,
    AX_PROFILE_BIAS_ACTIVATION,
    AX_PROFILE_DROPOUT,
    AX_PROFILE_LOSS,
    AX_PROFILE_WEIGHT_GRADIENT_GEMM,
    AX_PROFILE_INPUT_GRADIENT_GEMM,
    AX_PROFILE_DERIVATIVE,          /* activation derivative fused with the bias gradient */
    AX_PROFILE_BIAS_GRADIENT,       /* column sums alone (output layer) */
    AX_PROFILE_L2,
    AX_PROFILE_OPTIMIZER_UPDATE,
    AX_PROFILE_BATCH_COPY,
    AX_PROFILE_SHUFFLE,
    AX_PROFILE_EVALUATION,
    /* A convolution's passes, im2col and col2im included: their rates are
     * the layer's, not the GEMM's alone. */
    AX_PROFILE_CONV_FORWARD,
    AX_PROFILE_CONV_WEIGHT_GRADIENT,
    AX_PROFILE_CONV_INPUT_GRADIENT,
    AX_PROFILE_POOL_FORWARD,
    AX_PROFILE_POOL_BACKWARD,
    AX_PROFILE_KIND_COUNT
} ax_profile_kind;

typedef struct ax_profile_slot {
    int64_t count;
    double mean, m2; /* Welford's running mean and sum of squared deviations */
    double total;
    double flops;
} ax_profile_slot;

/* Slots per kind: one per layer, plus one for operations of no layer. */
typedef struct ax_profile {
    ax_profile_slot slots[AX_PROFILE_KIND_COUNT][AX_MAX_LAYERS + 1];
} ax_profile;

/* Records one call of kind (layer -1 = none) that began at start and did flops. */
void ax_profile_record(ax_profile *profile, ax_profile_kind kind, int layer, double start,
                       double flops);
/* The same with the duration given. */
void ax_profile_record_seconds(ax_profile *profile, ax_profile_kind kind, int layer,
                               double seconds, double flops);
void ax_profile_clear(ax_profile *profile);
int ax_profile_entries(const ax_profile *profile, ax_profile_entry *entries, int capacity);

#endif
