/* resize.c: shorter side to S, then the centre S x S crop, in one separable
 * resampling that computes only the pixels of the crop.
 *
 * Shrinking an axis uses the area filter (OpenCV's INTER_AREA): an output
 * pixel covers the source interval [i s, (i + 1) s), s = source / resized
 * length, and averages the source pixels weighted by how much of each the
 * interval covers. Its support grows with the reduction factor, so it
 * antialiases however large the photograph is; for an integer factor r it is
 * exactly the mean of r x r blocks, which the tests check. Enlarging an axis
 * (a photograph smaller than S) uses bilinear interpolation between pixel
 * centres, edges clamped.
 *
 * prep_crop_window tells the decoder which source pixels those filters read
 * (the crop plus the filters' support), so that it may decode only them;
 * the resize then works in the whole image's coordinates on that window. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "prep/prep.h"

typedef struct axis_plan {
    int64_t *start;  /* (count) first source index */
    int *taps;       /* (count) source pixels used */
    float *weights;  /* (count, max_taps) */
    int max_taps;
} axis_plan;

/* Plans output pixels first .. first + count - 1 of an axis resized from
 * source to resized pixels. */
static bool plan_axis(int64_t source, int64_t resized, int64_t first, int64_t count,
                      axis_plan *plan)
{
    const double s = (double)source / (double)resized;
    plan->max_taps = s >= 1.0 ? (int)ceil(s) + 1 : 2;
    plan->start = malloc((size_t)count * sizeof *plan->start);
    plan->taps = malloc((size_t)count * sizeof *plan->taps);
    plan->weights = calloc((size_t)count * (size_t)plan->max_taps, sizeof *plan->weights);
    if (!plan->start || !plan->taps || !plan->weights)
        return false;
    for (int64_t o = 0; o < count; o++) {
        const int64_t i = first + o;
        float *w = plan->weights + o * plan->max_taps;
        if (s >= 1.0) {
            const double low = (double)i * s, high = (double)(i + 1) * s;
            int64_t j0 = (int64_t)floor(low), j1 = (int64_t)ceil(high) - 1;
            if (j1 >= source)
                j1 = source - 1;
            if (j1 < j0)
                j1 = j0;
            plan->start[o] = j0;
            plan->taps[o] = (int)(j1 - j0 + 1);
            double total = 0.0;
            for (int64_t j = j0; j <= j1; j++) {
                double covered = fmin((double)(j + 1), high) - fmax((double)j, low);
                w[j - j0] = (float)(covered > 0 ? covered : 0);
                total += w[j - j0];
            }
            for (int k = 0; k < plan->taps[o]; k++)
                w[k] = (float)(w[k] / total);
        } else {
            double centre = ((double)i + 0.5) * s - 0.5;
            if (centre < 0)
                centre = 0;
            if (centre > (double)(source - 1))
                centre = (double)(source - 1);
            int64_t j0 = (int64_t)floor(centre);
            double fraction = centre - (double)j0;
            plan->start[o] = j0;
            if (j0 + 1 < source) {
                plan->taps[o] = 2;
                w[0] = (float)(1.0 - fraction);
                w[1] = (float)fraction;
            } else {
                plan->taps[o] = 1;
                w[0] = 1.0f;
            }
        }
    }
    return true;
}

static void free_plan(axis_plan *plan)
{
    free(plan->start);
    free(plan->taps);
    free(plan->weights);
}

/* Plans the crop of side x side from a w x h image: the columns and rows of
 * the centre crop of the image resized so that its shorter side is side. */
static bool plan_crop(int64_t w, int64_t h, int64_t side, axis_plan *xs, axis_plan *ys)
{
    int64_t rw, rh;
    if (w <= h) {
        rw = side;
        rh = (int64_t)llround((double)h * (double)side / (double)w);
    } else {
        rh = side;
        rw = (int64_t)llround((double)w * (double)side / (double)h);
    }
    if (rw < side)
        rw = side;
    if (rh < side)
        rh = side;
    const int64_t x_first = (rw - side) / 2, y_first = (rh - side) / 2;
    return plan_axis(w, rw, x_first, side, xs) && plan_axis(h, rh, y_first, side, ys);
}

/* [first, end) of the source pixels an axis plan reads. */
static void plan_range(const axis_plan *plan, int64_t count, int64_t *first, int64_t *end)
{
    *first = plan->start[0];
    *end = plan->start[0] + plan->taps[0];
    for (int64_t o = 1; o < count; o++) {
        if (plan->start[o] < *first)
            *first = plan->start[o];
        if (plan->start[o] + plan->taps[o] > *end)
            *end = plan->start[o] + plan->taps[o];
    }
}

bool prep_crop_window(int64_t width, int64_t height, int64_t side, int64_t window[4])
{
    if (width <= 0 || height <= 0 || side <= 0)
        return false;
    axis_plan xs = {0}, ys = {0};
    bool ok = plan_crop(width, height, side, &xs, &ys);
    if (ok) {
        plan_range(&xs, side, &window[0], &window[1]);
        plan_range(&ys, side, &window[2], &window[3]);
    }
    free_plan(&xs);
    free_plan(&ys);
    return ok;
}

bool prep_resize_crop(const prep_pixels *pixels, int64_t side, unsigned char *out, float **work,
                      size_t *work_capacity)
{
    /* The plan is made in the whole image's coordinates; data may hold only
     * the window [x0, x0 + width) x [y0, y0 + height) of it. */
    const bool part = pixels->full_width > 0;
    const int64_t w = part ? pixels->full_width : pixels->width;
    const int64_t h = part ? pixels->full_height : pixels->height;
    const int64_t x0 = part ? pixels->x0 : 0, y0 = part ? pixels->y0 : 0;
    const int64_t stride = pixels->width;
    const int c = pixels->channels;
    if (w <= 0 || h <= 0 || pixels->width <= 0 || pixels->height <= 0)
        return false;
    axis_plan xs = {0}, ys = {0};
    bool ok = plan_crop(w, h, side, &xs, &ys);
    if (ok) {
        int64_t x_first, x_end, y_first, y_end;
        plan_range(&xs, side, &x_first, &x_end);
        plan_range(&ys, side, &y_first, &y_end);
        ok = x_first >= x0 && x_end <= x0 + pixels->width && y_first >= y0 &&
             y_end <= y0 + pixels->height;
    }
    if (!ok) {
        free_plan(&xs);
        free_plan(&ys);
        return false;
    }
    /* The source rows the crop needs, filtered horizontally once each. */
    const int64_t row_first = ys.start[0];
    const int64_t row_last = ys.start[side - 1] + ys.taps[side - 1] - 1;
    const int64_t rows = row_last - row_first + 1;
    const size_t row_floats = (size_t)side * (size_t)c;
    const size_t need = (size_t)(rows + 1) * row_floats; /* + one accumulator row */
    if (need > *work_capacity) {
        float *grown = realloc(*work, need * sizeof(float));
        if (!grown) {
            free_plan(&xs);
            free_plan(&ys);
            return false;
        }
        *work = grown;
        *work_capacity = need;
    }
    float *tmp = *work;
    const unsigned char *data_end =
        pixels->data + (size_t)pixels->width * (size_t)pixels->height * (size_t)c;
    for (int64_t r = 0; r < rows; r++) {
        const unsigned char *src =
            pixels->data + (size_t)(row_first + r - y0) * (size_t)stride * (size_t)c;
        float *dst = tmp + (size_t)r * row_floats;
        int64_t x = 0;
#if defined(__AVX2__)
        /* Two RGB pixels in the lanes of one 8-float vector, each lane
         * doing the scalar code's multiplies and adds in its order. The
         * pixel with fewer taps runs on over taps of weight 0 (the plan's
         * weights are 0 past a pixel's taps): adding 0 * p, +0.0, leaves a
         * sum of non-negative terms as it was, so the floats are the
         * scalar code's (tests/test_prep.c checks). Lanes 3 and 7 (the
         * byte after each pixel) are moved out of the way before the store,
         * whose last 2 floats the next pair overwrites (or land in the next
         * row or the accumulator row, written later). */
        if (c == 3) {
            const __m256i order = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);
            for (; x + 1 < side; x += 2) {
                const unsigned char *p0 = src + (xs.start[x] - x0) * 3;
                const unsigned char *p1 = src + (xs.start[x + 1] - x0) * 3;
                const int taps = xs.taps[x] > xs.taps[x + 1] ? xs.taps[x] : xs.taps[x + 1];
                if (p0 + 3 * taps + 1 > data_end || p1 + 3 * taps + 1 > data_end)
                    break; /* the rest one pixel at a time, below */
                const float *w0 = xs.weights + x * xs.max_taps, *w1 = w0 + xs.max_taps;
                __m256 sum = _mm256_setzero_ps();
                for (int k = 0; k < taps; k++) {
                    int32_t a, b;
                    memcpy(&a, p0 + 3 * k, 4);
                    memcpy(&b, p1 + 3 * k, 4);
                    __m128i both = _mm_insert_epi32(_mm_cvtsi32_si128(a), b, 1);
                    __m256 value = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(both));
                    __m256 weight = _mm256_setr_m128(_mm_set1_ps(w0[k]), _mm_set1_ps(w1[k]));
                    sum = _mm256_add_ps(sum, _mm256_mul_ps(weight, value));
                }
                _mm256_storeu_ps(dst + 3 * x, _mm256_permutevar8x32_ps(sum, order));
            }
        }
#endif
        for (; x < side; x++) {
            const float *weight = xs.weights + x * xs.max_taps;
            const unsigned char *p = src + (xs.start[x] - x0) * c;
            const int taps = xs.taps[x];
#if defined(__SSE2__)
            /* R, G, B (and the next byte, ignored) in the lanes of one
             * vector: each lane does the scalar code's multiplies and adds
             * in its order, so the sums are the same floats. The 4-byte
             * load may not pass the end of the data; its fourth lane's
             * store is overwritten by the next pixel's (or lands in the
             * next row or the accumulator row, written later). */
            if (c == 3 && p + 3 * taps + 1 <= data_end) {
                const __m128i zero = _mm_setzero_si128();
                __m128 sum = _mm_setzero_ps();
                for (int k = 0; k < taps; k++) {
                    int32_t bytes;
                    memcpy(&bytes, p + 3 * k, 4);
                    __m128i wide = _mm_unpacklo_epi8(_mm_cvtsi32_si128(bytes), zero);
                    __m128 value = _mm_cvtepi32_ps(_mm_unpacklo_epi16(wide, zero));
                    sum = _mm_add_ps(sum, _mm_mul_ps(_mm_set1_ps(weight[k]), value));
                }
                _mm_storeu_ps(dst + 3 * x, sum);
                continue;
            }
#endif
            if (c == 3) {
                float a = 0, b = 0, d = 0;
                for (int k = 0; k < taps; k++) {
                    a += weight[k] * p[3 * k];
                    b += weight[k] * p[3 * k + 1];
                    d += weight[k] * p[3 * k + 2];
                }
                dst[3 * x] = a, dst[3 * x + 1] = b, dst[3 * x + 2] = d;
            } else {
                float a = 0;
                for (int k = 0; k < taps; k++)
                    a += weight[k] * p[k];
                dst[x] = a;
            }
        }
    }
    float *sum = tmp + (size_t)rows * row_floats;
    for (int64_t y = 0; y < side; y++) {
        const float *weight = ys.weights + y * ys.max_taps;
        const float *first = tmp + (size_t)(ys.start[y] - row_first) * row_floats;
        unsigned char *dst = out + (size_t)y * row_floats;
        /* Tap by tap over whole rows: contiguous, vectorisable loops. */
        for (size_t i = 0; i < row_floats; i++)
            sum[i] = weight[0] * first[i];
        for (int k = 1; k < ys.taps[y]; k++) {
            const float wk = weight[k], *row = first + (size_t)k * row_floats;
            for (size_t i = 0; i < row_floats; i++)
                sum[i] += wk * row[i];
        }
        for (size_t i = 0; i < row_floats; i++) {
            float rounded = sum[i] + 0.5f;
            dst[i] = rounded <= 0.0f ? 0 : rounded >= 255.0f ? 255 : (unsigned char)rounded;
        }
    }
    free_plan(&xs);
    free_plan(&ys);
    return true;
}
