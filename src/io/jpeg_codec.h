/* jpeg_codec.h: JPEG images in and out, exactly (io/jpeg_codec.c), below the
 * data sets that decode JPEG batches (data/jpeg_batch.c) and the preparation
 * that encodes them (prep/). Without libjpeg (a build without image
 * preparation) both fail, saying how to rebuild. */
#ifndef AX_IO_JPEG_CODEC_H
#define AX_IO_JPEG_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decodes a JPEG that must be exactly side x side with `channels`
 * components into out (side, side, channels): libjpeg-turbo's islow IDCT,
 * fancy upsampling (its defaults, fixed here so that every reader gives the
 * same pixels), grey read as grey (no colour conversion). Any libjpeg
 * warning fails it. false with why[] filled on failure. */
bool ax_jpeg_decode_exact(const unsigned char *bytes, size_t size, int64_t side, int64_t channels,
                          unsigned char *out, char *why, size_t why_capacity);
/* Encodes pixels (side, side, channels) at quality into *buffer (malloc'd,
 * grown as needed: *capacity its size), *size the JPEG's bytes. */
bool ax_jpeg_encode(const unsigned char *pixels, int64_t side, int64_t channels, int quality,
                    unsigned char **buffer, size_t *capacity, size_t *size, char *why,
                    size_t why_capacity);

#endif
