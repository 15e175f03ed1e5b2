/* color_pca.h: the principal components of the RGB values of a set of
 * images (issue 31): the eigen-decomposition of the 3 x 3 covariance of
 * every pixel's (r, g, b), in pixel units 0 .. 255. AlexNet's lighting noise
 * (Krizhevsky et al. 2012, section 4.1) adds sum_i alpha_i stdev_i v_i to
 * every pixel of an image, alpha_i ~ N(0, sigma); cuda-convnet2 keeps it in
 * batches.meta as color_pca = (stdevs, eigenvectors as columns), and axon
 * prep in meta.json as "color_pca". The sums it starts from are exact
 * integers, so the result does not depend on how the images were shared
 * between threads or processes. */
#ifndef AX_DATA_COLOR_PCA_H
#define AX_DATA_COLOR_PCA_H

#include <stdbool.h>
#include <stdint.h>

#include "axon.h"
#include "io/json.h"

/* Exact sums over RGB pixels: of r, g, b and of rr, rg, rb, gg, gb, bb.
 * uint64 holds 2^64 / 255^2 = 2.8e14 pixels (a million 16k x 16k images). */
typedef struct ax_color_moments {
    uint64_t pixels;
    uint64_t sums[3];
    uint64_t products[6];
} ax_color_moments;

/* Adds pixels (count, 3) uint8 to moments. */
void ax_color_moments_add(ax_color_moments *moments, const unsigned char *rgb, int64_t count);
/* a += b (the moments of two parts of a set: threads, ranks, batches). */
void ax_color_moments_merge(ax_color_moments *a, const ax_color_moments *b);

/* stdevs[i] = sqrt(eigenvalue i) of the covariance (divided by the pixel
 * count), largest first; eigenvectors[i] its unit (r, g, b) vector, signed so
 * that its largest-magnitude entry is positive. */
typedef struct ax_color_pca {
    bool present;
    double stdevs[3];
    double eigenvectors[3][3];
} ax_color_pca;

/* The components of moments (present = false when it holds no pixel). */
void ax_color_pca_compute(const ax_color_moments *moments, ax_color_pca *pca);

/* meta.json's "color_pca" object: {"stdevs": [3 numbers], "eigenvectors":
 * [[3], [3], [3]]}. Appends it to w (nothing when !pca->present). */
void ax_color_pca_write_json(ax_json_writer *w, const ax_color_pca *pca);
/* Reads node (NULL: absent, pca->present = false); a malformed one fails
 * with AX_STATUS_BAD_FILE naming path. */
ax_status ax_color_pca_read_json(const ax_json *node, const char *path, ax_color_pca *pca);

#endif
