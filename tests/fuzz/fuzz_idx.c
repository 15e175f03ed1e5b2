/* fuzz_idx.c: libFuzzer target for the IDX (MNIST) loader. The input is an
 * images file and a labels file (split as in fuzz_util.h); either may be
 * gzipped, so zlib's path is fuzzed too. A loaded set is checked for a
 * consistent shape; the row-range loader must give the same rows wherever
 * the whole-file loader succeeds, and fail cleanly otherwise. */
#include <stdint.h>
#include <stdlib.h>

#include "axon.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *images_bytes, *labels_bytes;
    size_t images_size, labels_size;
    fuzz_split(data, size, &images_bytes, &images_size, &labels_bytes, &labels_size);
    fuzz_file images = fuzz_file_make(images_bytes, images_size);
    fuzz_file labels = fuzz_file_make(labels_bytes, labels_size);
    ax_dataset *dataset = NULL;
    if (ax_dataset_load_idx(images.path, labels.path, &dataset) == AX_STATUS_OK) {
        const int64_t rows = ax_dataset_rows(dataset), features = ax_dataset_features(dataset);
        const float *x = ax_dataset_features_data(dataset);
        const int32_t *y = ax_dataset_labels_data(dataset);
        if (rows < 1 || features < 1 || !x || !y)
            abort();
        /* Every value must have been written and scaled to [0, 1]; reading
         * them all also lets the sanitizers see any short allocation. */
        for (int64_t i = 0; i < rows * features; i++)
            if (!(x[i] >= 0.0f && x[i] <= 1.0f))
                abort();
        for (int64_t r = 0; r < rows; r++)
            if (y[r] < 0 || y[r] >= ax_dataset_classes(dataset))
                abort();
        int64_t counted = -1, first, count;
        if (ax_dataset_count_idx(images.path, &counted) != AX_STATUS_OK || counted != rows)
            abort();
        fuzz_pick_range(size, rows, &first, &count);
        ax_dataset *part = NULL;
        if (ax_dataset_load_idx_rows(images.path, labels.path, first, count, &part) != AX_STATUS_OK)
            abort();
        fuzz_check_range(dataset, part, first, count);
        ax_dataset_free(part);
        ax_dataset_free(dataset);
    } else {
        if (dataset)
            abort(); /* a failure must leave *out NULL */
        ax_dataset *part = NULL;
        if (ax_dataset_load_idx_rows(images.path, labels.path, 0, 1, &part) == AX_STATUS_OK)
            ax_dataset_free(part);
        else if (part)
            abort();
    }
    fuzz_file_close(&images);
    fuzz_file_close(&labels);
    return 0;
}
