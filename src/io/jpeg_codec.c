/* jpeg_codec.c: the JPEGs of JPEG batches (data/jpeg_batch.h), encoded by
 * `axon prep --format jpeg` and decoded while training (data/stream.c).
 *
 * Every setting that decides the decoded pixels is fixed here rather than
 * left to libjpeg's defaults of the day: the accurate integer IDCT
 * (JDCT_ISLOW) and fancy upsampling, on both sides. The images are stored
 * at exactly the prepared size S, so decoding never scales; a grey batch is
 * encoded and decoded as one component, with no colour conversion at all.
 * prep decodes each image it encodes, so its mean image and any raw batch
 * made from a JPEG batch hold exactly the pixels a trainer decodes. */
#define _POSIX_C_SOURCE 200809L

#include "io/jpeg_codec.h"

#if defined(AXON_PREP) /* libjpeg is linked where image preparation is built */

#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h> /* after stdio.h and stddef.h */


typedef struct codec_failure {
    struct jpeg_error_mgr manager;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    bool warned;
} codec_failure;

static void on_error(j_common_ptr info)
{
    codec_failure *failure = (codec_failure *)info->err;
    info->err->format_message(info, failure->message);
    longjmp(failure->jump, 1);
}

static void on_message(j_common_ptr info, int level)
{
    codec_failure *failure = (codec_failure *)info->err;
    if (level < 0 && !failure->warned) { /* corrupt or truncated data */
        info->err->format_message(info, failure->message);
        failure->warned = true;
    }
}

bool ax_jpeg_decode_exact(const unsigned char *bytes, size_t size, int64_t side, int64_t channels,
                          unsigned char *out, char *why, size_t why_capacity)
{
    struct jpeg_decompress_struct info;
    codec_failure failure;
    memset(&failure, 0, sizeof failure);
    info.err = jpeg_std_error(&failure.manager);
    failure.manager.error_exit = on_error;
    failure.manager.emit_message = on_message;
    if (setjmp(failure.jump)) {
        snprintf(why, why_capacity, "corrupt JPEG: %s", failure.message);
        jpeg_destroy_decompress(&info);
        return false;
    }
    jpeg_create_decompress(&info);
    jpeg_mem_src(&info, bytes, (unsigned long)size);
    jpeg_read_header(&info, TRUE);
    if ((int64_t)info.image_width != side || (int64_t)info.image_height != side ||
        info.num_components != (int)channels) {
        snprintf(why, why_capacity, "a JPEG of %u x %u with %d components where the batch holds "
                 "%lld x %lld with %lld", info.image_width, info.image_height,
                 info.num_components, (long long)side, (long long)side, (long long)channels);
        jpeg_destroy_decompress(&info);
        return false;
    }
    info.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    info.dct_method = JDCT_ISLOW;
    info.do_fancy_upsampling = TRUE;
    info.scale_num = info.scale_denom = 1;
    jpeg_start_decompress(&info);
    const size_t stride = (size_t)side * (size_t)channels;
    while (info.output_scanline < info.output_height) {
        JSAMPROW row = out + (size_t)info.output_scanline * stride;
        jpeg_read_scanlines(&info, &row, 1);
    }
    jpeg_finish_decompress(&info);
    jpeg_destroy_decompress(&info);
    if (failure.warned) {
        snprintf(why, why_capacity, "corrupt JPEG: %s", failure.message);
        return false;
    }
    return true;
}

bool ax_jpeg_encode(const unsigned char *pixels, int64_t side, int64_t channels, int quality,
                    unsigned char **buffer, size_t *capacity, size_t *size, char *why,
                    size_t why_capacity)
{
    struct jpeg_compress_struct info;
    codec_failure failure;
    memset(&failure, 0, sizeof failure);
    info.err = jpeg_std_error(&failure.manager);
    failure.manager.error_exit = on_error;
    failure.manager.emit_message = on_message;
    /* jpeg_mem_dest writes into the caller's buffer and, when it fills,
     * into a larger one of its own (the caller's is left as it was). */
    unsigned char *volatile given = *buffer;
    unsigned char *out = *buffer;
    unsigned long out_size = (unsigned long)*capacity;
    if (setjmp(failure.jump)) {
        snprintf(why, why_capacity, "cannot encode a JPEG: %s", failure.message);
        jpeg_destroy_compress(&info);
        if (out != given)
            free(out);
        return false;
    }
    jpeg_create_compress(&info);
    jpeg_mem_dest(&info, &out, &out_size);
    info.image_width = (JDIMENSION)side;
    info.image_height = (JDIMENSION)side;
    info.input_components = (int)channels;
    info.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&info);
    info.dct_method = JDCT_ISLOW;
    jpeg_set_quality(&info, quality, TRUE);
    jpeg_start_compress(&info, TRUE);
    const size_t stride = (size_t)side * (size_t)channels;
    while (info.next_scanline < info.image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)info.next_scanline * stride);
        jpeg_write_scanlines(&info, &row, 1);
    }
    jpeg_finish_compress(&info);
    jpeg_destroy_compress(&info);
    if (out != given) { /* libjpeg grew it: keep the larger one */
        free(given);
        *buffer = out;
        *capacity = out_size;
    }
    *size = out_size;
    return true;
}

#else
#include <stdio.h>

/* JPEG batches (data/jpeg_batch.h) can be listed but not decoded or made
 * without libjpeg. */

bool ax_jpeg_decode_exact(const unsigned char *bytes, size_t size, int64_t side, int64_t channels,
                          unsigned char *out, char *why, size_t why_capacity)
{
    (void)bytes, (void)size, (void)side, (void)channels, (void)out;
    snprintf(why, why_capacity, "this build of axon has no libjpeg (image preparation is off); "
             "rebuild with cmake -DAXON_PREP=ON to read JPEG batches");
    return false;
}

bool ax_jpeg_encode(const unsigned char *pixels, int64_t side, int64_t channels, int quality,
                    unsigned char **buffer, size_t *capacity, size_t *size, char *why,
                    size_t why_capacity)
{
    (void)pixels, (void)side, (void)channels, (void)quality, (void)buffer, (void)capacity;
    *size = 0;
    snprintf(why, why_capacity, "this build of axon has no libjpeg (image preparation is off)");
    return false;
}
#endif
