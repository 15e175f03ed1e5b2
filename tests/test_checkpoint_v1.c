/* test_checkpoint_v1.c: a checkpoint written by the axon of commit 2020ee2,
 * before checkpoints carried a "fingerprint" field (data fingerprint
 * version 1: one chained hash of the whole set), is still resumed. The
 * fixtures (scripts/make_checkpoint_v1.sh) are that axon's checkpoint after
 * epoch 2 of a 4-epoch run (SGD with momentum, dropout 0.25, batches of 8,
 * float64) on tests/data/checkpoint_v1_train.csv, and the same run's
 * uninterrupted model.
 *
 * - The checkpoint loads with the run's options, fingerprint version 1 and
 *   2 epochs done.
 * - Resumed to epoch 4, the weights are the old axon's uninterrupted run's
 *   to 1e-12 relative: the old and new kernels round differently (4.7e-16
 *   measured), while a random state, row order or velocity not restored
 *   would move them by 1e-2 or more.
 * - The same data with one feature changed by 1/8 is refused as not the
 *   checkpoint's data: the version-1 fingerprint this axon computes is
 *   the one the old axon stored (else the right data would be refused too).
 * - The resumed run's own checkpoint of epoch 3 (version 2), resumed,
 *   ends bit for bit where the resume from version 1 ended. */
#define _POSIX_C_SOURCE 200809L

#include "core/checkpoint.h"
#include "data/fingerprint.h"
#include "test_util.h"
#include "test_files.h"

#define V1_CHECKPOINT AXON_TEST_DATA "/checkpoint_v1.epoch-000002.safetensors"
#define V1_FINAL AXON_TEST_DATA "/checkpoint_v1_final.safetensors"
#define V1_DATA AXON_TEST_DATA "/checkpoint_v1_train.csv"

enum { PARAMETERS = 51 }; /* 4-6-3: 6 x 4 + 6 + 3 x 6 + 3 */

static ax_dataset *load_data(void)
{
    ax_dataset *data = NULL;
    const ax_csv_options options = ax_csv_defaults();
    CHECK_OK(ax_dataset_load_csv(V1_DATA, &options, &data));
    return data;
}

/* Resumes checkpoint `path` on data to its recorded 4 epochs; the final
 * weights in weights (PARAMETERS). With prefix, the run writes its own
 * checkpoints there. Returns the status of ax_train. */
static ax_status resume(const char *path, const ax_dataset *data, const char *prefix,
                        int expect_fingerprint, double *weights)
{
    ax_net *net = NULL;
    ax_train_config config;
    ax_train_state *state = NULL;
    CHECK_OK(ax_checkpoint_load(path, &net, &config, &state));
    if (!net || !state)
        return AX_STATUS_BAD_FILE;
    CHECK(state->fingerprint == expect_fingerprint);
    CHECK(ax_train_state_epochs_done(state) == (expect_fingerprint == 1 ? 2 : 3));
    CHECK(config.resume == state && config.epochs == 4 && config.optimizer == AX_OPTIMIZER_SGD);
    CHECK(config.batch_size == 8 && config.dropout == 0.25 && config.seed == 5);
    CHECK(config.learning_rate == 0.05 && config.momentum == 0.9);
    CHECK(ax_net_config_get(net)->precision == AX_PRECISION_F64);
    CHECK(ax_net_parameter_count(net) == PARAMETERS);
    config.checkpoint_every = prefix ? 1 : 0;
    config.checkpoint_prefix = prefix;
    config.keep_checkpoints = 0;
    ax_train_summary summary = ax_train_summary_empty();
    ax_status status = ax_train(net, data, NULL, NULL, &config, &summary);
    if (status == AX_STATUS_OK && ax_net_parameter_count(net) == PARAMETERS)
        ax_net_parameters_get(net, weights);
    ax_net_free(net);
    ax_train_state_free(state);
    return status;
}

int main(void)
{
    if (!test_work_dir_make("axon-checkpoint-v1"))
        return 1;
    ax_dataset *data = load_data();
    if (!data)
        return test_finish("test_checkpoint_v1");
    CHECK(ax_dataset_rows(data) == 48 && ax_dataset_features(data) == 4);

    /* Resumed from version 1 against the old axon's own epochs 3 and 4. */
    double resumed[PARAMETERS], expected[PARAMETERS];
    const char *prefix = in_work("v2");
    CHECK_OK(resume(V1_CHECKPOINT, data, prefix, 1, resumed));
    ax_net *old = NULL;
    CHECK_OK(ax_net_load(V1_FINAL, AX_PRECISION_F64, &old));
    if (old) {
        CHECK(ax_net_parameter_count(old) == PARAMETERS);
        ax_net_parameters_get(old, expected);
        double largest = 0.0, difference = 0.0;
        for (int i = 0; i < PARAMETERS; i++) {
            largest = fmax(largest, fabs(expected[i]));
            difference = fmax(difference, fabs(resumed[i] - expected[i]));
        }
        printf("resumed from the version-1 checkpoint: %.3g from the old axon's weights (relative)\n",
               difference / largest);
        CHECK(largest > 0.0 && difference <= 1e-12 * largest);
        ax_net_free(old);
    }

    /* Other values of the same shape: refused by the version-1 fingerprint. */
    ax_dataset *other = load_data();
    if (other) {
        ax_dataset_features_data(other)[5] += 0.125f;
        double unused[PARAMETERS];
        CHECK_FAILS(resume(V1_CHECKPOINT, other, NULL, 1, unused), AX_STATUS_BAD_DATA,
                    "the training data has the checkpoint's shape but not its values");
        ax_dataset_free(other);
    }

    /* The resumed run's checkpoints are version 2; from its epoch 3 the
     * run ends where the resume from version 1 ended. */
    char epoch3[300];
    snprintf(epoch3, sizeof epoch3, "%s.epoch-000003.safetensors", prefix);
    double again[PARAMETERS];
    CHECK_OK(resume(epoch3, data, NULL, AX_FINGERPRINT_VERSION, again));
    CHECK(memcmp(again, resumed, sizeof again) == 0);

    ax_dataset_free(data);
    test_work_dir_remove();
    return test_finish("test_checkpoint_v1");
}
