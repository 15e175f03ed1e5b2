/* fuzz_csv.c: libFuzzer target for the CSV loaders. The first 3 bytes choose
 * the options (flags: header, regression; label column -2..5, -2 being
 * AX_CSV_NO_LABEL (features only); delimiter one
 * of , ; tab space), the rest is the file. The row counter and the range
 * loader must agree with the whole-file loader wherever it succeeds, and
 * fail cleanly otherwise. */
#include <stdint.h>
#include <stdlib.h>

#include "axon.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    ax_csv_options options = ax_csv_defaults();
    options.header = data[0] & 1;
    options.regression = (data[0] >> 1) & 1;
    options.label_column = (int64_t)(data[1] % 8) - 2;
    static const char delimiters[] = {',', ';', '\t', ' '};
    options.delimiter = delimiters[data[2] % 4];
    fuzz_file file = fuzz_file_make(data + 3, size - 3);
    ax_dataset *dataset = NULL;
    if (ax_dataset_load_csv(file.path, &options, &dataset) == AX_STATUS_OK) {
        const int64_t rows = ax_dataset_rows(dataset);
        if (rows < 1 || ax_dataset_features(dataset) < 1)
            abort();
        const int32_t *y = ax_dataset_labels_data(dataset);
        if (options.label_column == AX_CSV_NO_LABEL) { /* features only: no labels at all */
            if (y)
                abort();
        } else if (!options.regression) {
            for (int64_t r = 0; r < rows; r++)
                if (y[r] < 0 || y[r] >= ax_dataset_classes(dataset))
                    abort();
        }
        int64_t counted = -1, first, count;
        if (ax_dataset_count_csv(file.path, &options, &counted) != AX_STATUS_OK || counted != rows)
            abort();
        fuzz_pick_range(size, rows, &first, &count);
        ax_dataset *part = NULL;
        if (ax_dataset_load_csv_rows(file.path, &options, first, count, &part) != AX_STATUS_OK)
            abort();
        fuzz_check_range(dataset, part, first, count);
        ax_dataset_free(part);
        ax_dataset_free(dataset);
    } else {
        if (dataset)
            abort();
        int64_t counted = -1;
        (void)ax_dataset_count_csv(file.path, &options, &counted);
        ax_dataset *part = NULL;
        if (ax_dataset_load_csv_rows(file.path, &options, 0, 1, &part) == AX_STATUS_OK) {
            if (ax_dataset_rows(part) != 1)
                abort();
            ax_dataset_free(part);
        } else if (part) {
            abort();
        }
    }
    fuzz_file_close(&file);
    return 0;
}
