/* test_datasets.h: small in-memory classification sets for the optimizer
 * tests: features uniform in [0, 1) from a 64-bit LCG, 3 classes. */
#ifndef AX_TEST_DATASETS_H
#define AX_TEST_DATASETS_H

#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "axon.h"
#include "test_util.h"

/* rows x features uniform in [0, 1) from seed. Labels either follow the
 * first feature (learnable) or, with noise_labels, come from the same
 * stream after the features (nothing to learn: every improvement on held-out
 * rows is chance). NULL (a failed check) when out of memory. */
static inline ax_dataset *test_uniform_dataset(int64_t rows, int64_t features, uint64_t seed,
                                               bool noise_labels)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_create(rows, features, 3, 0, &data));
    if (!data)
        return NULL;
    float *x = ax_dataset_features_data(data);
    int32_t *labels = ax_dataset_labels_data(data);
    uint64_t state = seed;
    for (int64_t i = 0; i < rows * features; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((double)(state >> 11) / 9007199254740992.0);
    }
    for (int64_t r = 0; r < rows; r++) {
        if (noise_labels) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            labels[r] = (int32_t)((state >> 33) % 3);
        } else {
            labels[r] = (int32_t)((r * 7 + (int64_t)(x[r * features] * 3.0f)) % 3);
        }
    }
    return data;
}

/* Fashion-MNIST's training and test parts from the Debian package's folder
 * (dataset-fashion-mnist); skips the test (exit 77) when it is not
 * installed. false (a failed check) when a part cannot be read. */
static inline bool test_load_fashion_mnist(ax_dataset **train, ax_dataset **test)
{
    static const char *const folder = "/usr/share/datasets/fashion-mnist";
    if (access(folder, R_OK) != 0)
        TEST_SKIP("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)");
    *train = *test = NULL;
    CHECK_OK(ax_dataset_load_idx_dir(folder, false, train));
    CHECK_OK(ax_dataset_load_idx_dir(folder, true, test));
    return *train && *test;
}

#endif
