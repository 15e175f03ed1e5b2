/* synth.c: the synthetic regression data of TMVA's deep-learning benchmark:
 * rows x
 * features drawn from N(0, 1) and the target x . w for a weight vector w
 * drawn first from the same generator, so the set is a pure function of
 * (rows, features, seed).
 *
 * Generation is sequential on purpose: one stream from one generator is what
 * makes the data identical on every machine and thread count.
 */
#include <stdlib.h>

#include "base/error.h"
#include "base/random.h"
#include "data/dataset.h"

ax_status ax_dataset_synth_linear(int64_t rows, int64_t features, uint64_t seed, ax_dataset **out)
{
    *out = NULL;
    if (rows < 1 || features < 1)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "synth:linear needs at least 1 row and 1 feature, not %lld x %lld",
                       (long long)rows, (long long)features);
    double *weights = malloc((size_t)features * sizeof *weights);
    if (!weights)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "synth:linear: out of memory for %lld weights",
                       (long long)features);
    ax_status status = ax_dataset_allocate(rows, features, 0, 1, "synth:linear", out);
    if (status != AX_STATUS_OK) {
        free(weights);
        return status;
    }
    ax_rng rng;
    ax_rng_seed(&rng, seed);
    for (int64_t j = 0; j < features; j++)
        weights[j] = ax_rng_normal(&rng);
    ax_dataset *dataset = *out;
    for (int64_t row = 0; row < rows; row++) {
        float *x = dataset->feature_values + row * features;
        double target = 0.0;
        for (int64_t j = 0; j < features; j++) {
            x[j] = (float)ax_rng_normal(&rng);
            /* From the stored float, so the target is exactly x . w as the trainer sees x. */
            target += (double)x[j] * weights[j];
        }
        dataset->target_values[row] = (float)target;
    }
    free(weights);
    return AX_STATUS_OK;
}
