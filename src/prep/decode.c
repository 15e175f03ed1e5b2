/* decode.c: one JPEG or PNG, held in memory, to 8-bit pixels (grey or RGB).
 *
 * JPEG: libjpeg-turbo, asking its IDCT for the smallest output of the
 * scales n/8 (n = 1..8) whose shorter side is still at least the target
 * side: the reduction then costs almost nothing and the resize that follows
 * has less to filter (cuda-convnet2's preparation decoded at full size). libjpeg
 * reports errors by calling exit(); the error manager here jumps back
 * instead, and any warning (a truncated file gives "premature end of data"
 * and grey rows) fails the image too, so a damaged file is skipped, not
 * half-used. CMYK/YCCK JPEGs (a few in ImageNet) are converted here.
 * prep_decode_for_crop computes only the window of the scaled image that the
 * centre crop's resize reads (jpeg_crop_scanline, jpeg_skip_scanlines): the
 * IDCT, upsampling and colour conversion of the rest are saved, while every
 * row is still entropy-decoded so that damage is found wherever it is.
 *
 * PNG: libpng's simplified API (any bit depth, palette, alpha composited on
 * black, 16-bit reduced to 8). Grey is the luma 0.299 R + 0.587 G + 0.114 B,
 * the value libjpeg gives for a YCbCr JPEG decoded to grey. */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h> /* after stdio.h and stddef.h, which it needs */
#include <png.h>

#include "prep/prep.h"

/* Largest image decoded: 2^28 pixels (16384 x 16384), 768 MiB as RGB. A
 * header may claim up to 10^6 x 10^6 (PNG) or 65500 x 65500 (JPEG) in a few
 * bytes; such a file is refused before the buffer is allocated (found by
 * tests/fuzz/fuzz_image). */
#define PREP_MAX_PIXELS ((int64_t)1 << 28)

static bool too_large(int64_t width, int64_t height, char *why, size_t why_capacity)
{
    if (width > 0 && height > 0 && width <= PREP_MAX_PIXELS / height)
        return false;
    snprintf(why, why_capacity, "image of %lld x %lld pixels is over the limit of %lld pixels",
             (long long)width, (long long)height, (long long)PREP_MAX_PIXELS);
    return true;
}

static bool reserve(prep_pixels *pixels, int64_t width, int64_t height, int channels)
{
    size_t bytes = (size_t)width * (size_t)height * (size_t)channels;
    if (bytes > pixels->capacity) {
        unsigned char *grown = realloc(pixels->data, bytes);
        if (!grown)
            return false;
        pixels->data = grown;
        pixels->capacity = bytes;
    }
    pixels->width = width;
    pixels->height = height;
    pixels->channels = channels;
    pixels->x0 = pixels->y0 = 0;
    pixels->full_width = pixels->full_height = 0;
    return true;
}

/* ------------------------------------------------------------------- JPEG */

typedef struct jpeg_failure {
    struct jpeg_error_mgr manager;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    bool warned;
} jpeg_failure;

static void jpeg_on_error(j_common_ptr info)
{
    jpeg_failure *failure = (jpeg_failure *)info->err;
    info->err->format_message(info, failure->message);
    longjmp(failure->jump, 1);
}

static void jpeg_on_message(j_common_ptr info, int level)
{
    jpeg_failure *failure = (jpeg_failure *)info->err;
    if (level < 0 && !failure->warned) { /* a warning: corrupt or truncated data */
        info->err->format_message(info, failure->message);
        failure->warned = true;
    }
}

/* Luma with the weights (and rounding) of libjpeg's RGB -> grey. */
static inline unsigned char luma(int r, int g, int b)
{
    return (unsigned char)((19595 * r + 38470 * g + 7471 * b + 32768) >> 16);
}

/* Pixels of margin decoded around the window a crop reads. libjpeg-turbo's
 * partial decode equals the whole decode except at the window's own left
 * and right edges, where fancy (smooth) h2v1/h2v2 chroma upsampling treats
 * them as image edges (libjpeg.txt, "Partial image decompression"): that
 * changes the outermost pixel column only, so 2 columns of margin keep every
 * pixel the resize reads exact (tests/test_prep.c compares the crops made
 * from partial and whole decodes byte for byte). Rows get the same margin,
 * though jpeg_skip_scanlines keeps upsampling context exact. */
#define PREP_CROP_MARGIN 2

/* crop: compute only the window that prep_resize_crop(min_side) reads. */
static bool decode_jpeg(const unsigned char *bytes, size_t size, int64_t min_side, int channels,
                        bool crop, prep_pixels *pixels, char *why, size_t why_capacity)
{
    struct jpeg_decompress_struct info;
    jpeg_failure failure;
    memset(&failure, 0, sizeof failure);
    info.err = jpeg_std_error(&failure.manager);
    failure.manager.error_exit = jpeg_on_error;
    failure.manager.emit_message = jpeg_on_message;
    unsigned char *volatile row_buffer = NULL;
    if (setjmp(failure.jump)) {
        snprintf(why, why_capacity, "corrupt JPEG: %s", failure.message);
        jpeg_destroy_decompress(&info);
        free(row_buffer);
        return false;
    }
    jpeg_create_decompress(&info);
    jpeg_mem_src(&info, bytes, (unsigned long)size);
    jpeg_read_header(&info, TRUE);
    const bool cmyk = info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK;
    /* Grey output of a colour JPEG is libjpeg's own: it skips the chroma
     * components' IDCT and upsampling altogether. */
    if (cmyk)
        info.out_color_space = JCS_CMYK;
    else
        info.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    info.dct_method = JDCT_ISLOW;
    /* The smallest n/8 keeping the shorter side >= min_side. */
    info.scale_denom = 8;
    for (unsigned n = 1; n <= 8; n++) {
        info.scale_num = n;
        jpeg_calc_output_dimensions(&info);
        int64_t shorter = info.output_width < info.output_height ? info.output_width
                                                                 : info.output_height;
        if (shorter >= min_side)
            break;
    }
    /* libjpeg's own buffers (a progressive file's coefficients) grow with
     * the full size, so that is what is limited. */
    if (too_large(info.image_width, info.image_height, why, why_capacity)) {
        jpeg_destroy_decompress(&info);
        return false;
    }
    jpeg_start_decompress(&info);
    const int64_t full_width = info.output_width, full_height = info.output_height;
    /* The window: all of it, or the crop's, widened by the margin. */
    int64_t x_first = 0, x_end = full_width, y_first = 0, y_end = full_height;
    int64_t window[4];
    if (crop && prep_crop_window(full_width, full_height, min_side, window)) {
        x_first = window[0] > PREP_CROP_MARGIN ? window[0] - PREP_CROP_MARGIN : 0;
        x_end = window[1] + PREP_CROP_MARGIN < full_width ? window[1] + PREP_CROP_MARGIN : full_width;
        y_first = window[2] > PREP_CROP_MARGIN ? window[2] - PREP_CROP_MARGIN : 0;
        y_end = window[3] + PREP_CROP_MARGIN < full_height ? window[3] + PREP_CROP_MARGIN
                                                             : full_height;
    }
    if (x_first > 0 || x_end < full_width) {
        /* libjpeg moves the start left to an iMCU boundary and widens. */
        JDIMENSION offset = (JDIMENSION)x_first, columns = (JDIMENSION)(x_end - x_first);
        jpeg_crop_scanline(&info, &offset, &columns);
        x_first = offset;
    }
    const int64_t width = info.output_width, height = y_end - y_first;
    if (!reserve(pixels, width, height, channels)) {
        snprintf(why, why_capacity, "out of memory for %lld x %lld pixels", (long long)width,
                 (long long)height);
        jpeg_destroy_decompress(&info);
        return false;
    }
    pixels->x0 = x_first, pixels->y0 = y_first;
    pixels->full_width = crop ? full_width : 0;
    pixels->full_height = crop ? full_height : 0;
    const int components = info.output_components;
    /* libjpeg converts to RGB and to grey itself (output_components ==
     * channels); CMYK alone is converted here, through a row of its own. */
    if (cmyk) {
        row_buffer = malloc((size_t)width * (size_t)components);
        if (!row_buffer) {
            snprintf(why, why_capacity, "out of memory");
            jpeg_destroy_decompress(&info);
            return false;
        }
    }
    /* Rows above the window are entropy-decoded only (no IDCT, upsampling
     * or colour conversion). */
    if (y_first > 0)
        jpeg_skip_scanlines(&info, (JDIMENSION)y_first);
    /* Adobe writes CMYK JPEGs inverted (0 = full ink). */
    const bool inverted = info.saw_Adobe_marker;
    while ((int64_t)info.output_scanline < y_end) {
        unsigned char *out = pixels->data + (size_t)((int64_t)info.output_scanline - y_first) *
                                                (size_t)width * (size_t)channels;
        JSAMPROW row = row_buffer ? row_buffer : out;
        jpeg_read_scanlines(&info, &row, 1);
        if (!row_buffer)
            continue;
        for (int64_t x = 0; x < width; x++) {
            const unsigned char *p = row_buffer + x * components;
            int c = p[0], m = p[1], y = p[2], k = p[3];
            if (!inverted) {
                c = 255 - c, m = 255 - m, y = 255 - y, k = 255 - k;
            }
            const int r = (c * k + 127) / 255, g = (m * k + 127) / 255, b = (y * k + 127) / 255;
            if (channels == 1) {
                out[x] = luma(r, g, b);
            } else {
                out[3 * x] = (unsigned char)r, out[3 * x + 1] = (unsigned char)g;
                out[3 * x + 2] = (unsigned char)b;
            }
        }
    }
    /* Rows below the window: entropy-decoded too, so that damage there
     * (a truncated file, a bad Huffman code) still fails the image, as it
     * does in a whole decode. jpeg_skip_scanlines reads nothing when told to
     * skip to the end (it just declares the end reached), so it skips to the
     * last row, which is then read. */
    if (y_end < full_height) {
        if (y_end < full_height - 1)
            jpeg_skip_scanlines(&info, (JDIMENSION)(full_height - 1 - y_end));
        if (!row_buffer) {
            row_buffer = malloc((size_t)width * (size_t)components);
            if (!row_buffer) {
                snprintf(why, why_capacity, "out of memory");
                jpeg_destroy_decompress(&info);
                return false;
            }
        }
        JSAMPROW row = row_buffer;
        jpeg_read_scanlines(&info, &row, 1);
    }
    jpeg_finish_decompress(&info);
    jpeg_destroy_decompress(&info);
    free(row_buffer);
    if (failure.warned) {
        snprintf(why, why_capacity, "damaged JPEG: %s", failure.message);
        return false;
    }
    return true;
}

/* -------------------------------------------------------------------- PNG */

static bool decode_png(const unsigned char *bytes, size_t size, int channels,
                       prep_pixels *pixels, char *why, size_t why_capacity)
{
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, bytes, size)) {
        snprintf(why, why_capacity, "corrupt PNG: %s", image.message);
        png_image_free(&image);
        return false;
    }
    image.format = PNG_FORMAT_RGB;
    if (too_large(image.width, image.height, why, why_capacity)) {
        png_image_free(&image);
        return false;
    }
    if (!reserve(pixels, image.width, image.height, 3)) {
        snprintf(why, why_capacity, "out of memory for %u x %u pixels", image.width, image.height);
        png_image_free(&image);
        return false;
    }
    /* Without a background libpng composites transparent pixels onto what
     * the buffer held before (another image's pixels): black is explicit. */
    const png_color black = {0, 0, 0};
    if (!png_image_finish_read(&image, &black, pixels->data, 0, NULL)) {
        snprintf(why, why_capacity, "corrupt PNG: %s", image.message);
        png_image_free(&image);
        return false;
    }
    if (image.warning_or_error) {
        snprintf(why, why_capacity, "damaged PNG: %s", image.message);
        png_image_free(&image);
        return false;
    }
    png_image_free(&image);
    if (channels == 1) {
        const size_t count = (size_t)pixels->width * (size_t)pixels->height;
        unsigned char *p = pixels->data;
        for (size_t i = 0; i < count; i++)
            p[i] = luma(p[3 * i], p[3 * i + 1], p[3 * i + 2]);
        pixels->channels = 1;
    }
    return true;
}

static bool decode(const unsigned char *bytes, size_t size, int64_t min_side, int channels,
                   bool crop, prep_pixels *pixels, char *why, size_t why_capacity)
{
    if (size >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF)
        return decode_jpeg(bytes, size, min_side, channels, crop, pixels, why, why_capacity);
    if (size >= 8 && memcmp(bytes, "\x89PNG\r\n\x1a\n", 8) == 0)
        return decode_png(bytes, size, channels, pixels, why, why_capacity);
    snprintf(why, why_capacity, "not a JPEG or PNG image (%s)",
             size == 0 ? "empty file" : "unknown signature");
    return false;
}

bool prep_decode(const unsigned char *bytes, size_t size, int64_t min_side, int channels,
                 prep_pixels *pixels, char *why, size_t why_capacity)
{
    return decode(bytes, size, min_side, channels, false, pixels, why, why_capacity);
}

bool prep_decode_for_crop(const unsigned char *bytes, size_t size, int64_t side, int channels,
                          prep_pixels *pixels, char *why, size_t why_capacity)
{
    return decode(bytes, size, side, channels, true, pixels, why, why_capacity);
}
