/* amx_gemm.c: see amx_gemm.h. op(A) is packed, rounded to bf16, into A
 * tiles of 16 rows by 32 values of k, op(B) into B tiles of 16 pairs of k
 * by 16 columns (consecutive k interleaved), each tile 1 KB, 64-byte
 * aligned and contiguous, zeros beyond m, n and k (two zeros: their product
 * adds nothing). Four C tiles, a 32 x 32 block of C, stay in the tile
 * registers over k; threads take whole blocks. With AVX-512 the full
 * tiles are packed by vectors (a transpose where op() reads across the
 * stored rows), the others one value at a time, with the same rounding. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/amx_gemm.h"
#include "backend/cpu/amx_tiles.h"
#include "backend/cpu/bf16_round.h"
#include "backend/cpu/conv_weight_amx.h"
#include "backend/cpu/cpu_features.h"

enum {
    TILE = 16,           /* rows of A and C tiles, columns of B and C tiles */
    K_BLOCK = 32,        /* k of a tile */
    TILE_VALUES = 512,   /* bf16 values of an A or B tile */
    BLOCK = 2 * TILE,    /* a C block's rows and columns */
};

/* A kernel named by AXON_BF16_KERNEL (native, emulated, onednn) is the
 * user's choice for every bf16 GEMM; unset, empty or auto leaves it to axon. */
static bool kernel_asked(void)
{
    const char *asked = getenv("AXON_BF16_KERNEL");
    return asked && *asked && strcmp(asked, "auto") != 0;
}

/* 2^20: B1(a)'s 128 x 128 x 784 and 128 x 128 x 128 took its bf16 epoch
 * 1.6-1.75x faster than bf16_gemm.c's VDPBF16PS kernel on an AMX Xeon */
static bool size_taken(int64_t m, int64_t n, int64_t k)
{
    return m > 0 && n > 0 && k > 0 && (double)m * (double)n * (double)k >= 0x1p20;
}

bool ax_amx_gemm_takes(int64_t m, int64_t n, int64_t k)
{
    return size_taken(m, n, k) && !kernel_asked() &&
           ax_conv_amx_mode_chosen() != AX_CONV_AMX_OFF;
}

/* One product's operands and their packed tiles. */
typedef struct product {
    bool trans_a, trans_b;
    int64_t m, n, k, lda, ldb;
    const float *a, *b;
    int64_t k_blocks;
    uint16_t *a_tiles; /* (m / 16 rounded up to pairs, k blocks) tiles */
    uint16_t *b_tiles; /* (n / 16 rounded up to pairs, k blocks) tiles */
} product;

static uint16_t bf16_of(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return (uint16_t)(ax_bf16_round_bits(u) >> 16);
}

static float op_a(const product *p, int64_t i, int64_t kk)
{
    if (i >= p->m || kk >= p->k)
        return 0.0f;
    return p->trans_a ? p->a[kk * p->lda + i] : p->a[i * p->lda + kk];
}

static float op_b(const product *p, int64_t kk, int64_t j)
{
    if (kk >= p->k || j >= p->n)
        return 0.0f;
    return p->trans_b ? p->b[j * p->ldb + kk] : p->b[kk * p->ldb + j];
}

static void pack_a_scalar(const product *p, int64_t rt, int64_t kb, uint16_t *tile)
{
    for (int r = 0; r < TILE; r++)
        for (int q = 0; q < K_BLOCK; q++)
            tile[r * K_BLOCK + q] = bf16_of(op_a(p, rt * TILE + r, kb * K_BLOCK + q));
}

static void pack_b_scalar(const product *p, int64_t ct, int64_t kb, uint16_t *tile)
{
    for (int pair = 0; pair < TILE; pair++)
        for (int col = 0; col < TILE; col++)
            for (int e = 0; e < 2; e++)
                tile[pair * 2 * TILE + 2 * col + e] =
                    bf16_of(op_b(p, kb * K_BLOCK + 2 * pair + e, ct * TILE + col));
}

#if defined(__x86_64__) && defined(__GNUC__)
/* 32 floats rounded: 16 pairs of bf16, the first of each in the low half */
__attribute__((target("avx512f"))) static inline __m512i pairs_of(const float *v)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(ax_bf16_pack16(_mm512_loadu_ps(v))),
                              ax_bf16_pack16(_mm512_loadu_ps(v + 16)), 1);
}

__attribute__((target("avx512f"))) static void pack_a_vector(const product *p, int64_t rt,
                                                             int64_t kb, uint16_t *tile)
{
    const int64_t i0 = rt * TILE, k0 = kb * K_BLOCK;
    if (!p->trans_a) { /* a row of op(A) is a stored row */
        for (int r = 0; r < TILE; r++)
            _mm512_storeu_si512(tile + r * K_BLOCK, pairs_of(p->a + (i0 + r) * p->lda + k0));
        return;
    }
    for (int half = 0; half < 2; half++) { /* op(A)'s rows are stored columns */
        __m512 columns[TILE];
        ax_transpose_16x16(p->a + (k0 + half * TILE) * p->lda + i0, p->lda, columns);
        for (int r = 0; r < TILE; r++)
            _mm256_storeu_si256((__m256i *)(tile + r * K_BLOCK + half * TILE),
                                ax_bf16_pack16(columns[r]));
    }
}

__attribute__((target("avx512f"))) static void pack_b_vector(const product *p, int64_t ct,
                                                             int64_t kb, uint16_t *tile)
{
    const int64_t j0 = ct * TILE, k0 = kb * K_BLOCK;
    if (!p->trans_b) { /* two stored rows of op(B) interleaved */
        for (int pair = 0; pair < TILE; pair++) {
            const float *first = p->b + (k0 + 2 * pair) * p->ldb + j0;
            const __m512i low = _mm512_srli_epi32(
                _mm512_castps_si512(ax_bf16_round16(_mm512_loadu_ps(first))), 16);
            const __m512i high = _mm512_castps_si512(ax_bf16_round16(_mm512_loadu_ps(first + p->ldb)));
            _mm512_storeu_si512(tile + pair * 2 * TILE, _mm512_or_si512(low, high));
        }
        return;
    }
    /* op(B)'s columns are stored rows: each column's 16 pairs, then a
     * transpose of the 16 x 16 pairs */
    _Alignas(64) uint32_t columns[TILE][TILE];
    for (int col = 0; col < TILE; col++)
        _mm512_store_si512(columns[col], pairs_of(p->b + (j0 + col) * p->ldb + k0));
    __m512 rows[TILE];
    ax_transpose_16x16((const float *)columns, TILE, rows);
    for (int pair = 0; pair < TILE; pair++)
        _mm512_storeu_ps((float *)(tile + pair * 2 * TILE), rows[pair]);
}
#else
static void pack_a_vector(const product *p, int64_t rt, int64_t kb, uint16_t *tile)
{
    pack_a_scalar(p, rt, kb, tile);
}

static void pack_b_vector(const product *p, int64_t ct, int64_t kb, uint16_t *tile)
{
    pack_b_scalar(p, ct, kb, tile);
}
#endif

static void pack(const product *p, int64_t row_tiles, int64_t column_tiles, bool vector)
{
    const int64_t tiles = (row_tiles + column_tiles) * p->k_blocks;
    /* which thread packs a tile changes nothing in it; transposed tiles
     * cost more */
#pragma omp for schedule(dynamic, 16)
    for (int64_t t = 0; t < tiles; t++) {
        const bool is_a = t < row_tiles * p->k_blocks;
        const int64_t index = is_a ? t : t - row_tiles * p->k_blocks;
        const int64_t outer = index / p->k_blocks, kb = index % p->k_blocks;
        const bool full_k = (kb + 1) * K_BLOCK <= p->k;
        if (is_a) {
            uint16_t *tile = p->a_tiles + index * TILE_VALUES;
            if (vector && full_k && (outer + 1) * TILE <= p->m)
                pack_a_vector(p, outer, kb, tile);
            else
                pack_a_scalar(p, outer, kb, tile);
        } else {
            uint16_t *tile = p->b_tiles + index * TILE_VALUES;
            if (vector && full_k && (outer + 1) * TILE <= p->n)
                pack_b_vector(p, outer, kb, tile);
            else
                pack_b_scalar(p, outer, kb, tile);
        }
    }
}

/* out (32 x 32, row-major) = the block's sums: row tiles 2 rb, 2 rb + 1 by
 * column tiles 2 cb, 2 cb + 1, in the tiles' scalar emulation */
static void block_emulated(const product *p, int64_t rb, int64_t cb, float *out)
{
    memset(out, 0, BLOCK * BLOCK * sizeof *out);
    for (int64_t kb = 0; kb < p->k_blocks; kb++)
        for (int r = 0; r < 2; r++)
            for (int c = 0; c < 2; c++)
                ax_amx_dpbf16ps_emulated(
                    out + r * TILE * BLOCK + c * TILE, BLOCK,
                    p->a_tiles + ((2 * rb + r) * p->k_blocks + kb) * TILE_VALUES, K_BLOCK,
                    p->b_tiles + ((2 * cb + c) * p->k_blocks + kb) * TILE_VALUES, 2 * TILE,
                    TILE, K_BLOCK);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* Every tile 16 rows of 64 bytes. */
static void configure(void)
{
    uint8_t rows[AX_AMX_TILES];
    uint16_t bytes[AX_AMX_TILES];
    for (int t = 0; t < AX_AMX_TILES; t++) {
        rows[t] = TILE;
        bytes[t] = 64;
    }
    ax_amx_configure(rows, bytes);
}

__attribute__((target("amx-tile,amx-bf16"))) static void block_amx(const product *p, int64_t rb,
                                                                   int64_t cb, float *out)
{
    const uint16_t *a0 = p->a_tiles + 2 * rb * p->k_blocks * TILE_VALUES;
    const uint16_t *a1 = a0 + p->k_blocks * TILE_VALUES;
    const uint16_t *b0 = p->b_tiles + 2 * cb * p->k_blocks * TILE_VALUES;
    const uint16_t *b1 = b0 + p->k_blocks * TILE_VALUES;
    /* GCC 12's tile loads and stores are asm that names no memory: the
     * packed tiles must be written before them, the sums read after */
    __asm__ volatile("" : : : "memory");
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t kb = 0; kb < p->k_blocks; kb++) {
        const int64_t at = kb * TILE_VALUES;
        _tile_loadd(4, a0 + at, 64);
        _tile_loadd(6, b0 + at, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(7, b1 + at, 64);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, a1 + at, 64);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, out, BLOCK * 4);
    _tile_stored(1, out + TILE, BLOCK * 4);
    _tile_stored(2, out + TILE * BLOCK, BLOCK * 4);
    _tile_stored(3, out + TILE * BLOCK + TILE, BLOCK * 4);
    __asm__ volatile("" : : : "memory");
}
#else
static void configure(void) {}
static void block_amx(const product *p, int64_t rb, int64_t cb, float *out)
{
    block_emulated(p, rb, cb, out);
}
#endif

bool ax_amx_gemm(ax_bf16_workspace *workspace, bool trans_a, bool trans_b, int64_t m, int64_t n,
                 int64_t k, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                 float beta, float *c, int64_t ldc)
{
    const ax_conv_amx_mode mode = ax_conv_amx_mode_chosen(); /* read once a call */
    if (mode == AX_CONV_AMX_OFF || !size_taken(m, n, k) || kernel_asked())
        return false;
    const bool hardware = mode == AX_CONV_AMX_HARDWARE;
    const int64_t row_blocks = (m + BLOCK - 1) / BLOCK, column_blocks = (n + BLOCK - 1) / BLOCK;
    const int64_t row_tiles = 2 * row_blocks, column_tiles = 2 * column_blocks;
    const int64_t k_blocks = (k + K_BLOCK - 1) / K_BLOCK;
    const int threads = omp_get_max_threads();
    const size_t tile_bytes = TILE_VALUES * sizeof(uint16_t);
    const size_t out_bytes = BLOCK * BLOCK * sizeof(float); /* a thread's block of sums */
    char *memory = ax_bf16_workspace_reserve(
        workspace, (size_t)((row_tiles + column_tiles) * k_blocks) * tile_bytes +
                       (size_t)threads * out_bytes);
    if (!memory)
        return false;
    const product p = {
        .trans_a = trans_a,
        .trans_b = trans_b,
        .m = m,
        .n = n,
        .k = k,
        .lda = lda,
        .ldb = ldb,
        .a = a,
        .b = b,
        .k_blocks = k_blocks,
        .a_tiles = (uint16_t *)memory,
        .b_tiles = (uint16_t *)(memory + (size_t)(row_tiles * k_blocks) * tile_bytes),
    };
    float *outs = (float *)(memory + (size_t)((row_tiles + column_tiles) * k_blocks) * tile_bytes);
    const bool vector = ax_cpu_kernels_avx512f();
#pragma omp parallel num_threads(threads)
    {
        pack(&p, row_tiles, column_tiles, vector); /* ends at the loop's barrier */
        float *out = outs + (size_t)omp_get_thread_num() * BLOCK * BLOCK;
        if (hardware)
            configure();
#pragma omp for schedule(static)
        for (int64_t block = 0; block < row_blocks * column_blocks; block++) {
            /* blocks down a column of C in turn: its B tiles, read from
             * memory once, meet every row's A tiles in cache */
            const int64_t cb = block / row_blocks, rb = block % row_blocks;
            if (hardware)
                block_amx(&p, rb, cb, out);
            else
                block_emulated(&p, rb, cb, out);
            const int64_t rows = m - rb * BLOCK < BLOCK ? m - rb * BLOCK : BLOCK;
            const int64_t columns = n - cb * BLOCK < BLOCK ? n - cb * BLOCK : BLOCK;
            for (int64_t r = 0; r < rows; r++) {
                float *to = c + (rb * BLOCK + r) * ldc + cb * BLOCK;
                const float *sums = out + r * BLOCK;
                if (beta == 0.0f)
                    for (int64_t col = 0; col < columns; col++)
                        to[col] = alpha * sums[col];
                else
                    for (int64_t col = 0; col < columns; col++)
                        to[col] = alpha * sums[col] + beta * to[col];
            }
        }
        if (hardware)
            ax_amx_release();
    }
    return true;
}
