/* long_gemm.c: see long_gemm.h. C's tiles are 16 or 32 rows (one or two
 * vectors) by up to 12 columns, 24 sums held in registers while the rows
 * of A and B of a fixed quarter of k stream by once (llm.c's and the
 * BLIS micro-kernel's register tile, with the inner dimension outermost). */
#include "backend/cpu/long_gemm.h"
#include "backend/cpu/cpu_features.h"

static bool disabled = false;

void ax_long_gemm_disable(bool disable) { disabled = disable; }

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define LONG_MOST_M 64
#define LONG_MOST_N 32
#define LONG_LEAST_K 4096
#define LONG_COLUMNS 12 /* of a tile: 2 x 12 sums leave 8 registers for A and B */
#define LONG_PARTS 4    /* fixed quarters of k, whatever the thread count */
#define LONG_CHUNK 256  /* rows: 32 KB of A and 25 KB of B at LeNet's shape */

/* part (n, m) column-major += the sums over rows [0, rows) of A (rows, m)^T
 * B (rows, n) for one tile of vectors x columns (= when first). Inlined
 * with constant vectors and columns, so that the sums stay in registers. */
static inline __attribute__((always_inline, target("avx512f"))) void
tile_sums(int vectors, int columns, const float *a, int64_t lda, const float *b, int64_t ldb,
          int64_t rows, bool first, float *part)
{
    __m512 sums[2][LONG_COLUMNS];
    for (int v = 0; v < vectors; v++)
        for (int j = 0; j < columns; j++)
            sums[v][j] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(part + j * LONG_MOST_M + 16 * v);
    for (int64_t r = 0; r < rows; r++) {
        const float *a_row = a + r * lda, *b_row = b + r * ldb;
        const __m512 x0 = _mm512_loadu_ps(a_row);
        const __m512 x1 = vectors > 1 ? _mm512_loadu_ps(a_row + 16) : x0;
        for (int j = 0; j < columns; j++) {
            const __m512 y = _mm512_set1_ps(b_row[j]);
            sums[0][j] = _mm512_fmadd_ps(x0, y, sums[0][j]);
            if (vectors > 1)
                sums[1][j] = _mm512_fmadd_ps(x1, y, sums[1][j]);
        }
    }
    for (int v = 0; v < vectors; v++)
        for (int j = 0; j < columns; j++)
            _mm512_storeu_ps(part + j * LONG_MOST_M + 16 * v, sums[v][j]);
}

#define TILE_CASE(vectors, columns)                                                        \
    case columns:                                                                          \
        tile_sums(vectors, columns, a, lda, b, ldb, rows, first, part);                    \
        break;
#define TILE_SWITCH(vectors)                                                               \
    switch (columns) {                                                                     \
        TILE_CASE(vectors, 1) TILE_CASE(vectors, 2) TILE_CASE(vectors, 3)                  \
        TILE_CASE(vectors, 4) TILE_CASE(vectors, 5) TILE_CASE(vectors, 6)                  \
        TILE_CASE(vectors, 7) TILE_CASE(vectors, 8) TILE_CASE(vectors, 9)                  \
        TILE_CASE(vectors, 10) TILE_CASE(vectors, 11) TILE_CASE(vectors, 12)               \
    }

__attribute__((target("avx512f"))) static void tile(int vectors, int columns, const float *a,
                                                     int64_t lda, const float *b, int64_t ldb,
                                                     int64_t rows, bool first, float *part)
{
    if (vectors == 2) {
        TILE_SWITCH(2)
    } else {
        TILE_SWITCH(1)
    }
}

static void long_gemm(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    /* Sums of each quarter, column-major (n, m): 32 KB. */
    float parts[LONG_PARTS][LONG_MOST_N * LONG_MOST_M];
    const int vectors = m % 32 == 0 ? 2 : 1;
    const int64_t row_tiles = m / (16 * vectors);
    /* Column tiles of equal width (25 columns: 9, 8, 8), not 12, 12, 1. */
    const int64_t column_tiles = (n + LONG_COLUMNS - 1) / LONG_COLUMNS;
    const int64_t base = n / column_tiles, wider = n % column_tiles;
    const int64_t items = row_tiles * LONG_PARTS;
    /* Each item sweeps its quarter of k in chunks that stay in L2 (A's and
     * B's rows read from memory once, not once per column tile), the tiles'
     * sums parked in parts between chunks; every sum still runs over its
     * rows in order. */
#pragma omp parallel for schedule(static)
    for (int64_t item = 0; item < items; item++) {
        const int64_t p = item % LONG_PARTS, row_tile = item / LONG_PARTS;
        const int64_t i0 = row_tile * 16 * vectors;
        const int64_t first = k * p / LONG_PARTS, end = k * (p + 1) / LONG_PARTS;
        for (int64_t chunk = first; chunk < end; chunk += LONG_CHUNK) {
            const int64_t rows = end - chunk < LONG_CHUNK ? end - chunk : LONG_CHUNK;
            for (int64_t column_tile = 0; column_tile < column_tiles; column_tile++) {
                const int64_t j0 = column_tile * base + (column_tile < wider ? column_tile : wider);
                const int columns = (int)(base + (column_tile < wider));
                tile(vectors, columns, a + chunk * lda + i0, lda, b + chunk * ldb + j0, ldb, rows,
                     chunk == first, parts[p] + j0 * LONG_MOST_M + i0);
            }
        }
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float sum = parts[0][j * LONG_MOST_M + i];
            for (int p = 1; p < LONG_PARTS; p++)
                sum += parts[p][j * LONG_MOST_M + i];
            c[i * ldc + j] = beta == 0.0f ? alpha * sum : alpha * sum + beta * c[i * ldc + j];
        }
}

static bool long_gemm_if_suited(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                                int64_t least_k, float alpha, const float *a, int64_t lda,
                                const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (disabled || !trans_a || trans_b || m % 16 != 0 || m < 16 || m > LONG_MOST_M || n < 1 ||
        n > LONG_MOST_N || k < least_k || !ax_cpu_kernels_avx512f())
        return false;
    long_gemm(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return true;
}

bool ax_long_gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                      float *c, int64_t ldc)
{
    return long_gemm_if_suited(trans_a, trans_b, m, n, k, LONG_LEAST_K, alpha, a, lda, b, ldb,
                               beta, c, ldc);
}

bool ax_long_gemm_f32_any_k(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                            float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                            float beta, float *c, int64_t ldc)
{
    return long_gemm_if_suited(trans_a, trans_b, m, n, k, 1, alpha, a, lda, b, ldb, beta, c,
                               ldc);
}

#else /* not x86-64 with GCC or Clang: the BLAS does every shape */

bool ax_long_gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                      float *c, int64_t ldc)
{
    (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda;
    (void)b, (void)ldb, (void)beta, (void)c, (void)ldc;
    return false;
}

bool ax_long_gemm_f32_any_k(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                            float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                            float beta, float *c, int64_t ldc)
{
    return ax_long_gemm_f32(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

#endif
