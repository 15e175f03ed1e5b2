/* fuzz_npy.c: libFuzzer target for the .npy readers: the data-set loader
 * (features + labels, split as in fuzz_util.h; an empty labels part means
 * "labels in the first column") with its row-range variant, which must give
 * the same rows wherever the whole-file loader succeeds, and ax_npy_read_f32
 * on the features part. */
#include <stdint.h>
#include <stdlib.h>

#include "axon.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *features_bytes, *labels_bytes;
    size_t features_size, labels_size;
    fuzz_split(data, size, &features_bytes, &features_size, &labels_bytes, &labels_size);
    fuzz_file features = fuzz_file_make(features_bytes, features_size);
    fuzz_file labels = fuzz_file_make(labels_bytes, labels_size);

    ax_dataset *dataset = NULL;
    const char *labels_path = labels_size ? labels.path : NULL;
    if (ax_dataset_load_npy(features.path, labels_path, 1.0, &dataset) == AX_STATUS_OK) {
        const int64_t rows = ax_dataset_rows(dataset);
        if (rows < 1 || ax_dataset_features(dataset) < 1)
            abort();
        int64_t counted = -1, first, count;
        if (ax_dataset_count_npy(features.path, &counted) != AX_STATUS_OK || counted != rows)
            abort();
        fuzz_pick_range(size, rows, &first, &count);
        ax_dataset *part = NULL;
        if (ax_dataset_load_npy_rows(features.path, labels_path, 1.0, first, count, &part) !=
            AX_STATUS_OK)
            abort();
        fuzz_check_range(dataset, part, first, count);
        ax_dataset_free(part);
        ax_dataset_free(dataset);
    } else {
        if (dataset)
            abort();
        ax_dataset *part = NULL;
        if (ax_dataset_load_npy_rows(features.path, labels_path, 1.0, 0, 1, &part) == AX_STATUS_OK)
            ax_dataset_free(part);
        else if (part)
            abort();
    }

    float *values = NULL;
    int64_t rows = 0, cols = 0;
    if (ax_npy_read_f32(features.path, &values, &rows, &cols) == AX_STATUS_OK) {
        if (rows < 0 || cols < 0)
            abort();
        /* Touch every value so a short buffer shows up under ASan. */
        volatile float sum = 0.0f;
        for (int64_t i = 0; i < rows * cols; i++)
            sum += values[i];
        (void)sum;
    }
    free(values);
    fuzz_file_close(&features);
    fuzz_file_close(&labels);
    return 0;
}
