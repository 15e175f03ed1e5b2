/* test_color_pca.c: the colour principal components (src/data/color_pca.c)
 * on cases with known answers (tests/prep_color_pca.sh compares real
 * batches with NumPy's eigh):
 *   - pixels whose channels vary independently with spreads 3 : 2 : 1
 *     (each channel a +-d pattern, all 8 sign combinations equally often):
 *     stdevs exactly those spreads, eigenvectors the axes in that order;
 *   - the same pixels rotated by a known orthonormal matrix: the rotated
 *     axes back, to rounding;
 *   - one colour everywhere: present, stdevs 0, eigenvectors orthonormal;
 *     no pixels: not present;
 *   - moments summed in two parts and merged equal the moments of the whole
 *     (exact integers), so the order of the parts does not matter;
 *   - the meta.json object written and read back gives the same doubles bit
 *     for bit; malformed objects are refused naming the file. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "data/color_pca.h"
#include "test_util.h"

/* The 8 colours mean +- spread[c] in each channel c, `copies` times each. */
static void eight_corners(const double spread[3], const double rotation[3][3], int copies,
                          ax_color_moments *m)
{
    memset(m, 0, sizeof *m);
    for (int k = 0; k < 8 * copies; k++) {
        double offset[3];
        for (int c = 0; c < 3; c++)
            offset[c] = (k >> c & 1 ? 1 : -1) * spread[c];
        unsigned char rgb[3];
        for (int c = 0; c < 3; c++) {
            double value = 128;
            for (int i = 0; i < 3; i++)
                value += rotation[c][i] * offset[i];
            rgb[c] = (unsigned char)lround(value);
        }
        ax_color_moments_add(m, rgb, 1);
    }
}

static void test_axes(void)
{
    static const double identity[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    /* spreads 20, 40, 60 in r, g, b: the largest is blue, then green, then red */
    ax_color_moments m;
    eight_corners((const double[3]){20, 40, 60}, identity, 5, &m);
    ax_color_pca pca;
    ax_color_pca_compute(&m, &pca);
    CHECK(pca.present);
    CHECK(pca.stdevs[0] == 60 && pca.stdevs[1] == 40 && pca.stdevs[2] == 20);
    CHECK(pca.eigenvectors[0][2] == 1 && pca.eigenvectors[1][1] == 1 &&
          pca.eigenvectors[2][0] == 1);

    /* rotated by an orthonormal matrix with rational entries (3/5, 4/5): the
     * pixels are exact integers, so the columns of the rotation come back */
    static const double rotation[3][3] = {{0.6, -0.8, 0}, {0.8, 0.6, 0}, {0, 0, 1}};
    eight_corners((const double[3]){50, 25, 10}, rotation, 3, &m);
    ax_color_pca_compute(&m, &pca);
    const double want_stdevs[3] = {50, 25, 10};
    for (int i = 0; i < 3; i++) {
        CHECK(fabs(pca.stdevs[i] - want_stdevs[i]) < 1e-12 * want_stdevs[i]);
        /* column i of the rotation, signed so that its largest entry is positive */
        double column[3], largest = 0;
        for (int c = 0; c < 3; c++) {
            column[c] = rotation[c][i];
            if (fabs(column[c]) > fabs(largest))
                largest = column[c];
        }
        for (int c = 0; c < 3; c++)
            CHECK(fabs(pca.eigenvectors[i][c] - (largest < 0 ? -column[c] : column[c])) < 1e-12);
    }
}

static void test_degenerate(void)
{
    ax_color_moments m;
    memset(&m, 0, sizeof m);
    ax_color_pca pca;
    ax_color_pca_compute(&m, &pca);
    CHECK(!pca.present);
    const unsigned char grey[12] = {7, 8, 9, 7, 8, 9, 7, 8, 9, 7, 8, 9};
    ax_color_moments_add(&m, grey, 4);
    ax_color_pca_compute(&m, &pca);
    CHECK(pca.present && pca.stdevs[0] == 0 && pca.stdevs[1] == 0 && pca.stdevs[2] == 0);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double dot = 0;
            for (int c = 0; c < 3; c++)
                dot += pca.eigenvectors[i][c] * pca.eigenvectors[j][c];
            CHECK(fabs(dot - (i == j)) < 1e-15);
        }
}

static void test_merge(void)
{
    unsigned char pixels[3 * 1000];
    uint64_t state = 5;
    for (int i = 0; i < 3000; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        pixels[i] = (unsigned char)(state >> 56);
    }
    ax_color_moments whole = {0}, first = {0}, second = {0};
    ax_color_moments_add(&whole, pixels, 1000);
    ax_color_moments_add(&first, pixels, 377);
    ax_color_moments_add(&second, pixels + 3 * 377, 623);
    ax_color_moments_merge(&second, &first); /* the later part first */
    CHECK(memcmp(&whole, &second, sizeof whole) == 0);
}

static void test_json(void)
{
    static const double rotation[3][3] = {{0.36, 0.48, -0.8}, {-0.8, 0.6, 0}, {0.48, 0.64, 0.6}};
    ax_color_moments m;
    eight_corners((const double[3]){33, 17, 3}, rotation, 2, &m);
    ax_color_pca pca, back;
    ax_color_pca_compute(&m, &pca);
    ax_json_writer w = {0};
    ax_color_pca_write_json(&w, &pca);
    CHECK(!w.out_of_memory);
    ax_json *root = NULL;
    CHECK_OK(ax_json_parse(w.text, w.length, 0, &root));
    CHECK_OK(ax_color_pca_read_json(root, "meta.json", &back));
    CHECK(back.present && memcmp(back.stdevs, pca.stdevs, sizeof pca.stdevs) == 0 &&
          memcmp(back.eigenvectors, pca.eigenvectors, sizeof pca.eigenvectors) == 0);
    ax_json_free(root);
    ax_json_writer_free(&w);

    CHECK_OK(ax_color_pca_read_json(NULL, "meta.json", &back));
    CHECK(!back.present);
    static const char *const bad[] = {
        "[1, 2, 3]",
        "{\"stdevs\": [1, 2], \"eigenvectors\": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}",
        "{\"stdevs\": [1, 2, -3], \"eigenvectors\": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}",
        "{\"stdevs\": [1, 2, 3], \"eigenvectors\": [[1, 0, 0], [0, 1, 0]]}",
        "{\"stdevs\": [1, 2, 3], \"eigenvectors\": [[1, 0, 0], [0, 1, \"x\"], [0, 0, 1]]}",
        "{\"stdevs\": [1, 2, 3]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        root = NULL;
        CHECK_OK(ax_json_parse(bad[i], strlen(bad[i]), 0, &root));
        CHECK(ax_color_pca_read_json(root, "x/meta.json", &back) == AX_STATUS_BAD_FILE &&
              !back.present && strstr(ax_error_message(), "x/meta.json: \"color_pca\""));
        ax_json_free(root);
    }
}

int main(void)
{
    test_axes();
    test_degenerate();
    test_merge();
    test_json();
    return test_finish("test_color_pca");
}
