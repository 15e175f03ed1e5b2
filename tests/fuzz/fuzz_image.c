/* fuzz_image.c: libFuzzer target for prep's image decoder (JPEG and PNG from
 * memory) and the resize-and-crop that follows it in the pipeline. The first
 * byte picks grey or RGB and the target side (1..64); the rest is the file.
 * The pipeline's partial decode (prep_decode_for_crop) runs beside the whole
 * one: when both accept the file, their crops must be the same bytes. */
#include <string.h>
#include <stdint.h>
#include <stdlib.h>

#include "prep/prep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const int channels = data[0] & 1 ? 3 : 1;
    const int64_t side = (data[0] >> 1) % 64 + 1;
    prep_pixels pixels = {0};
    char why[256];
    if (prep_decode(data + 1, size - 1, side, channels, &pixels, why, sizeof why)) {
        if (pixels.width < 1 || pixels.height < 1 || pixels.channels != channels)
            abort();
        const size_t bytes = (size_t)(side * side * channels);
        unsigned char *out = malloc(bytes), *out_part = malloc(bytes);
        float *work = NULL;
        size_t work_capacity = 0;
        prep_pixels part = {0};
        /* false only when its scratch space cannot be allocated */
        if (out && out_part && prep_resize_crop(&pixels, side, out, &work, &work_capacity) &&
            prep_decode_for_crop(data + 1, size - 1, side, channels, &part, why, sizeof why) &&
            prep_resize_crop(&part, side, out_part, &work, &work_capacity) &&
            memcmp(out, out_part, bytes) != 0)
            abort();
        free(part.data);
        free(work);
        free(out);
        free(out_part);
    }
    free(pixels.data);
    return 0;
}
