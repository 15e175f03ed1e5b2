/* color_pca.c: the RGB principal components of color_pca.h. The covariance
 * comes from exact integer sums; its eigen-decomposition is the cyclic
 * Jacobi method (Golub & Van Loan, section 8.5), which for a 3 x 3 symmetric
 * matrix reaches rounding level in a few sweeps and gives orthonormal
 * vectors, with no library needed. */
#include "data/color_pca.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"

void ax_color_moments_add(ax_color_moments *m, const unsigned char *rgb, int64_t count)
{
    /* Per call in 64 bits: 255^2 * count stays exact for any image size. */
    uint64_t s[3] = {0, 0, 0}, p[6] = {0, 0, 0, 0, 0, 0};
    for (int64_t i = 0; i < count; i++) {
        const uint64_t r = rgb[3 * i], g = rgb[3 * i + 1], b = rgb[3 * i + 2];
        s[0] += r, s[1] += g, s[2] += b;
        p[0] += r * r, p[1] += r * g, p[2] += r * b, p[3] += g * g, p[4] += g * b, p[5] += b * b;
    }
    m->pixels += (uint64_t)count;
    for (int c = 0; c < 3; c++)
        m->sums[c] += s[c];
    for (int k = 0; k < 6; k++)
        m->products[k] += p[k];
}

void ax_color_moments_merge(ax_color_moments *a, const ax_color_moments *b)
{
    a->pixels += b->pixels;
    for (int c = 0; c < 3; c++)
        a->sums[c] += b->sums[c];
    for (int k = 0; k < 6; k++)
        a->products[k] += b->products[k];
}

/* Diagonalises the symmetric a in place (its diagonal ends as the
 * eigenvalues); v's columns become the eigenvectors. */
static void jacobi(double a[3][3], double v[3][3])
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            v[i][j] = i == j;
    for (int sweep = 0; sweep < 64; sweep++) {
        const double off = fabs(a[0][1]) + fabs(a[0][2]) + fabs(a[1][2]);
        const double scale = fabs(a[0][0]) + fabs(a[1][1]) + fabs(a[2][2]);
        if (off <= DBL_EPSILON * 1e-3 * scale || off == 0)
            break;
        for (int p = 0; p < 2; p++)
            for (int q = p + 1; q < 3; q++) {
                if (a[p][q] == 0)
                    continue;
                /* the rotation that zeroes a[p][q]: t = tan of its angle */
                const double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
                double t = 1 / (fabs(theta) + sqrt(theta * theta + 1));
                if (theta < 0)
                    t = -t;
                const double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < 3; k++) { /* a = a J */
                    const double kp = a[k][p], kq = a[k][q];
                    a[k][p] = c * kp - s * kq;
                    a[k][q] = s * kp + c * kq;
                }
                for (int k = 0; k < 3; k++) { /* a = J^T a */
                    const double pk = a[p][k], qk = a[q][k];
                    a[p][k] = c * pk - s * qk;
                    a[q][k] = s * pk + c * qk;
                }
                a[p][q] = a[q][p] = 0; /* zero by construction; no rounding residue */
                for (int k = 0; k < 3; k++) {
                    const double kp = v[k][p], kq = v[k][q];
                    v[k][p] = c * kp - s * kq;
                    v[k][q] = s * kp + c * kq;
                }
            }
    }
}

void ax_color_pca_compute(const ax_color_moments *m, ax_color_pca *pca)
{
    memset(pca, 0, sizeof *pca);
    if (m->pixels == 0)
        return;
    const double n = (double)m->pixels;
    double mean[3], cov[3][3];
    for (int c = 0; c < 3; c++)
        mean[c] = (double)m->sums[c] / n;
    static const int row[6] = {0, 0, 0, 1, 1, 2}, column[6] = {0, 1, 2, 1, 2, 2};
    for (int k = 0; k < 6; k++) {
        const int i = row[k], j = column[k];
        cov[i][j] = cov[j][i] = (double)m->products[k] / n - mean[i] * mean[j];
    }
    double vectors[3][3];
    jacobi(cov, vectors);
    int order[3] = {0, 1, 2}; /* by eigenvalue, largest first; ties keep their order */
    for (int i = 1; i < 3; i++)
        for (int j = i; j > 0 && cov[order[j]][order[j]] > cov[order[j - 1]][order[j - 1]]; j--) {
            const int swap = order[j];
            order[j] = order[j - 1];
            order[j - 1] = swap;
        }
    for (int i = 0; i < 3; i++) {
        const int e = order[i];
        const double value = cov[e][e];
        pca->stdevs[i] = value > 0 ? sqrt(value) : 0; /* a rounding-level negative is 0 */
        int largest = 0;
        for (int c = 1; c < 3; c++)
            if (fabs(vectors[c][e]) > fabs(vectors[largest][e]))
                largest = c;
        const double sign = vectors[largest][e] < 0 ? -1 : 1;
        for (int c = 0; c < 3; c++)
            pca->eigenvectors[i][c] = sign * vectors[c][e];
    }
    pca->present = true;
}

static void append_number(ax_json_writer *w, double value)
{
    char text[40];
    snprintf(text, sizeof text, "%.17g", value); /* 17 digits: read back bit for bit */
    ax_json_writer_append(w, text);
}

void ax_color_pca_write_json(ax_json_writer *w, const ax_color_pca *pca)
{
    if (!pca->present)
        return;
    ax_json_writer_append(w, "{\"stdevs\": [");
    for (int i = 0; i < 3; i++) {
        ax_json_writer_append(w, i ? ", " : "");
        append_number(w, pca->stdevs[i]);
    }
    ax_json_writer_append(w, "], \"eigenvectors\": [");
    for (int i = 0; i < 3; i++) {
        ax_json_writer_append(w, i ? ", [" : "[");
        for (int c = 0; c < 3; c++) {
            ax_json_writer_append(w, c ? ", " : "");
            append_number(w, pca->eigenvectors[i][c]);
        }
        ax_json_writer_append(w, "]");
    }
    ax_json_writer_append(w, "]}");
}

static bool three_numbers(const ax_json *array, double out[3])
{
    if (!array || ax_json_type_of(array) != AX_JSON_ARRAY || ax_json_length(array) != 3)
        return false;
    for (size_t i = 0; i < 3; i++)
        if (!ax_json_number(ax_json_array_get(array, i), &out[i]) || !isfinite(out[i]))
            return false;
    return true;
}

ax_status ax_color_pca_read_json(const ax_json *node, const char *path, ax_color_pca *pca)
{
    memset(pca, 0, sizeof *pca);
    if (!node)
        return AX_STATUS_OK;
    bool ok = ax_json_type_of(node) == AX_JSON_OBJECT &&
              three_numbers(ax_json_object_get(node, "stdevs"), pca->stdevs);
    const ax_json *vectors = ax_json_object_get(node, "eigenvectors");
    ok = ok && vectors && ax_json_type_of(vectors) == AX_JSON_ARRAY &&
         ax_json_length(vectors) == 3;
    for (size_t i = 0; ok && i < 3; i++)
        ok = three_numbers(ax_json_array_get(vectors, i), pca->eigenvectors[i]);
    for (int i = 0; ok && i < 3; i++)
        ok = pca->stdevs[i] >= 0;
    if (!ok) {
        memset(pca, 0, sizeof *pca);
        return ax_fail(AX_STATUS_BAD_FILE, "%s: \"color_pca\" is not {\"stdevs\": [3 numbers >= "
                       "0], \"eigenvectors\": [[3 numbers] x 3]}", path);
    }
    pca->present = true;
    return AX_STATUS_OK;
}
