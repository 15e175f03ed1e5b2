/* fuzz_tar.c: libFuzzer target for prep's input lister on a tar (and tars
 * inside it): every listed image range must lie inside the file. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "prep/prep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_file file = fuzz_file_make(data, size);
    prep_list list;
    prep_warnings warnings = {0};
    if (prep_list_build(file.path, NULL, &list, &warnings) == AX_STATUS_OK) {
        for (int64_t i = 0; i < list.count; i++) {
            const prep_image *image = &list.images[i];
            if (image->offset < 0 || image->size < 0 || image->offset + image->size > (int64_t)size)
                abort();
            if (image->label >= list.label_count || image->source >= list.source_count)
                abort();
            (void)prep_image_name(&list, image);
        }
    }
    prep_list_free(&list);
    for (int64_t i = 0; i < warnings.kept; i++)
        free(warnings.text[i]);
    free(warnings.text);
    fuzz_file_close(&file);
    return 0;
}
