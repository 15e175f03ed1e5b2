/* bf16_gemm.c: see bf16_gemm.h. The native kernel is the classic packed
 * GEMM (Goto; BLIS's micro-kernel of MR x NR sums in registers), shaped by
 * VDPBF16PS, which multiplies *pairs* of bf16 values along k: a 32-bit lane
 * holds (x[2p], x[2p+1]). So both operands are packed as 32-bit "pair
 * words": B in panels of 32 columns, [pair][column], loaded as two vectors;
 * A as words broadcast one per row. The float32 -> bf16 conversion
 * (VCVTNE2PS2BF16, round to nearest even) happens in that packing, which
 * reads each operand once; nothing else converts.
 *
 * Operand layouts (words are uint32_t, two bf16):
 *   A not transposed (m, k):   words (m, pairs), row i's pair p at i * pairs + p
 *   A transposed (k, m):       words (pairs, m16), pair p of row i at p * m16 + i
 *   B panels:                  (panels, pairs, 32), column j's pair p at
 *                              ((j / 32) * pairs + p) * 32 + j % 32
 * An odd k is padded with a zero, and columns past n with zeros. */
#include "backend/cpu/bf16_gemm.h"
#include "backend/cpu/bf16_round.h"
#include "backend/cpu/cpu_features.h"
#include "base/clock.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/blas.h"

#define BF16_MR 8
#define BF16_NR 32
/* Below this many multiply-adds one thread finishes before a team starts. */
#define BF16_PARALLEL_MIN (INT64_C(1) << 18)

/* 0: the CPU's choice; 1: emulate; -1: the native kernel where it can run. */
static int forced_emulation = 0;
static ax_bf16_choice choice = {.reason = "emulated: not an x86-64 build with GCC"};
static char choice_reason[200];
static pthread_once_t choice_once = PTHREAD_ONCE_INIT;

void ax_bf16_gemm_force(ax_bf16_kernel kernel) { forced_emulation = kernel; }

float ax_bf16_round(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        u = (u | 0x00400000u) & 0xffff0000u; /* a quiet NaN keeps its sign */
    } else {
        u += 0x7fffu + ((u >> 16) & 1u);
        u &= 0xffff0000u;
    }
    memcpy(&x, &u, sizeof x);
    return x;
}

void ax_bf16_workspace_free(ax_bf16_workspace *workspace)
{
    if (!workspace)
        return;
    free(workspace->memory);
    workspace->memory = NULL;
    workspace->bytes = 0;
}

void *ax_bf16_workspace_reserve(ax_bf16_workspace *workspace, size_t bytes)
{
    if (workspace->bytes >= bytes)
        return workspace->memory;
    size_t rounded = (bytes + 4095) & ~(size_t)4095;
    void *memory = aligned_alloc(64, rounded);
    if (!memory)
        return NULL;
    free(workspace->memory);
    workspace->memory = memory;
    workspace->bytes = rounded;
    return memory;
}

/* Without scratch memory: the same roundings, one product at a time. */
static void gemm_unpacked(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                          float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                          float beta, float *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float sum = 0.0f;
            for (int64_t p = 0; p < k; p++)
                sum += ax_bf16_round(trans_a ? a[p * lda + i] : a[i * lda + p]) *
                       ax_bf16_round(trans_b ? b[j * ldb + p] : b[p * ldb + j]);
            float *out = &c[i * ldc + j];
            *out = beta == 0.0f ? alpha * sum : alpha * sum + beta * *out;
        }
}

/* Below this many values one thread rounds them before a team would start
 * (about 0.25 ns a value: 64K values take 16 us, a region 1-2 us). */
#define BF16_ROUND_PARALLEL_MIN (INT64_C(1) << 16)

/* dst (rows, cols), dense, = src (rows, cols) with leading dimension ld,
 * each value rounded to bfloat16: ax_bf16_round without a branch, so that
 * it vectorises. Rows are split among the calling team (no wait at the end). */
static void round_copy(float *dst, const float *src, int64_t rows, int64_t cols, int64_t ld)
{
#pragma omp for schedule(static) nowait
    for (int64_t r = 0; r < rows; r++) {
        const uint32_t *in = (const uint32_t *)(src + r * ld);
        uint32_t *out = (uint32_t *)(dst + r * cols);
#pragma omp simd
        for (int64_t j = 0; j < cols; j++) {
            out[j] = ax_bf16_round_bits(in[j]);
        }
    }
}

/* The emulation: float32 GEMM (sgemm, or the caller's) of the rounded operands. */
static void gemm_emulated(ax_bf16_workspace *workspace, ax_bf16_sgemm sgemm, bool trans_a, bool trans_b, int64_t m,
                          int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                          const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    size_t a_count = (size_t)m * (size_t)k, b_count = (size_t)k * (size_t)n;
    float *rounded = ax_bf16_workspace_reserve(workspace, (a_count + b_count) * sizeof(float) + 64);
    if (!rounded) {
        gemm_unpacked(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    float *ra = rounded, *rb = rounded + a_count;
#pragma omp parallel if ((int64_t)(a_count + b_count) >= BF16_ROUND_PARALLEL_MIN)
    {
        round_copy(ra, a, trans_a ? k : m, trans_a ? m : k, lda);
        round_copy(rb, b, trans_b ? n : k, trans_b ? k : n, ldb);
    }
    if (sgemm) {
        sgemm(trans_a, trans_b, m, n, k, alpha, ra, trans_a ? m : k, rb, trans_b ? k : n, beta, c,
              ldc);
        return;
    }
    ax_blas.sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                  trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha, ra,
                  (int)(trans_a ? m : k), rb, (int)(trans_b ? k : n), beta, c, (int)ldc);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))

/* 12 independent chains, enough to cover either instruction's latency:
 * throughput in multiply-adds per second. */
#define PROBE_CHAINS 12
#define PROBE_ROUNDS 20000
/* One probe per instruction: NAME's chains of STEP (sums = STEP(sums, x, y)),
 * operands of TYPE set to X and Y, LANES multiply-adds per instruction. The
 * empty asm keeps the compiler from hoisting or folding the chain. */
#define DEFINE_PROBE(NAME, TYPE, X, Y, STEP, LANES)                                  \
    BF16_TARGET __attribute__((noinline)) static double NAME(void)                   \
    {                                                                                \
        __m512 sums[PROBE_CHAINS];                                                   \
        for (int i = 0; i < PROBE_CHAINS; i++)                                       \
            sums[i] = _mm512_set1_ps((float)i);                                      \
        TYPE x = (X), y = (Y);                                                       \
        double start = ax_seconds_now();                                              \
        for (int r = 0; r < PROBE_ROUNDS; r++) {                                     \
            _Pragma("GCC unroll 12") for (int i = 0; i < PROBE_CHAINS; i++)          \
                sums[i] = STEP(sums[i], x, y);                                       \
            __asm__ volatile("" : "+v"(x));                                          \
        }                                                                            \
        double elapsed = ax_seconds_now() - start;                                    \
        __m512 total = sums[0];                                                      \
        for (int i = 1; i < PROBE_CHAINS; i++)                                       \
            total = _mm512_add_ps(total, sums[i]);                                   \
        __asm__ volatile("" : : "v"(total));                                         \
        return (double)PROBE_ROUNDS * PROBE_CHAINS * (LANES) / elapsed;              \
    }

DEFINE_PROBE(probe_dpbf16, __m512bh, (__m512bh)_mm512_set1_epi32(0x3f803f80),
             (__m512bh)_mm512_set1_epi32(0), _mm512_dpbf16_ps, 32.0)
DEFINE_PROBE(probe_fma, __m512, _mm512_set1_ps(1.0f), _mm512_setzero_ps(), _mm512_fmadd_ps, 16.0)

/* Having VDPBF16PS is not enough: on the Xeon this was written on, it
 * retires about 0.45x the multiply-adds of float32 FMAs (where the ISA
 * suggests 2x), and every bf16 GEMM, oneDNN's included, runs at half
 * sgemm's rate (docs/notes/blas-choice.md). So the kernel is chosen by
 * measuring: five alternating probes of each (about 3 ms in all), the best
 * of each, and VDPBF16PS only where it does at least 1.25x the FMAs' work
 * (its packing costs 5-25 %). AXON_BF16_KERNEL=native or emulated fixes
 * the choice (a run resumed elsewhere, or a test); without it,
 * AXON_CPU_KERNELS=generic means emulated. */
static void choose_kernel(void)
{
    __builtin_cpu_init();
    choice.instructions = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512bf16");
    const char *fixed = getenv("AXON_BF16_KERNEL");
    const bool chosen_here = !(fixed && *fixed && strcmp(fixed, "auto") != 0);
    const bool wants_native = !chosen_here && strcmp(fixed, "native") == 0;
    if (chosen_here && ax_cpu_kernels_generic()) {
        /* the generic path is a CPU's without AVX-512 (cpu_features.h) */
        choice.reason = "emulated, as AXON_CPU_KERNELS=generic asks";
        return;
    }
    if (!choice.instructions) {
        choice.reason = wants_native
                            ? "emulated: AXON_BF16_KERNEL=native, but this CPU has no AVX512_BF16"
                        : chosen_here ? "emulated: this CPU has no AVX512_BF16"
                                      : "emulated, as AXON_BF16_KERNEL asks";
        return;
    }
    if (!chosen_here && !wants_native) {
        choice.reason = "emulated, as AXON_BF16_KERNEL asks";
        return;
    }
    /* Measured even when the environment asks for the native kernel: the
     * bf16 peak (ax_peak_bf16_gflops) is float32's times this ratio. */
    double dot = 0.0, fma = 0.0;
    for (int round = 0; round < 5; round++) {
        double d = probe_dpbf16(), f = probe_fma();
        dot = d > dot ? d : dot;
        fma = f > fma ? f : fma;
    }
    choice.speed_ratio = dot / fma;
    choice.native = wants_native || choice.speed_ratio >= 1.25;
    snprintf(choice_reason, sizeof choice_reason,
             wants_native    ? "native: VDPBF16PS (AVX512_BF16), as AXON_BF16_KERNEL=native asks; "
                               "measured at %.2fx float32 FMAs' multiply-adds per second"
             : choice.native ? "native: VDPBF16PS (AVX512_BF16), measured at %.2fx float32 FMAs' "
                               "multiply-adds per second"
                             : "emulated: this CPU has AVX512_BF16, but VDPBF16PS measured at only "
                               "%.2fx float32 FMAs' multiply-adds per second (native needs 1.25x)",
             choice.speed_ratio);
    choice.reason = choice_reason;
}

static inline __mmask16 first_lanes(int64_t count)
{
    return count >= 16 ? (__mmask16)0xffff : count <= 0 ? 0 : (__mmask16)((1u << count) - 1u);
}

/* out[0..width) = pair words (r0[j], r1[j]) for j < count, zero beyond;
 * r1 NULL means a row of zeros (the padding of an odd k); width a multiple
 * of 16. */
BF16_TARGET static void interleave_rows(const float *r0, const float *r1, int64_t count,
                                        int64_t width, uint32_t *out)
{
    /* 16-bit lane 2t takes lo's t, lane 2t + 1 hi's t (lane 16 + t) */
    const __m512i lanes = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i order = _mm512_add_epi32(_mm512_mullo_epi32(lanes, _mm512_set1_epi32(0x10001)),
                                           _mm512_set1_epi32(0x100000));
    for (int64_t j = 0; j < width; j += 16) {
        __mmask16 mask = first_lanes(count - j);
        __m512 lo = _mm512_maskz_loadu_ps(mask, r0 + j);
        __m512 hi = r1 ? _mm512_maskz_loadu_ps(mask, r1 + j) : _mm512_setzero_ps();
        __m512i both = (__m512i)_mm512_cvtne2ps_pbh(hi, lo); /* lo's 16, then hi's 16 */
        _mm512_storeu_si512(out + j, _mm512_permutexvar_epi16(order, both));
    }
}

/* out[0..(count + 1) / 2) = row's values as pair words (a zero after an
 * odd count). */
BF16_TARGET static void convert_row(const float *row, int64_t count, uint32_t *out)
{
    for (int64_t j = 0; j < count; j += 32) {
        __m512 lo = _mm512_maskz_loadu_ps(first_lanes(count - j), row + j);
        __m512 hi = _mm512_maskz_loadu_ps(first_lanes(count - j - 16), row + j + 16);
        __m512i words = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
        _mm512_mask_storeu_epi32(out + j / 2, first_lanes((count - j + 1) / 2), words);
    }
}

/* A's pair words, rows split among the team. */
BF16_TARGET static void pack_a(bool trans_a, int64_t m, int64_t k, const float *a, int64_t lda,
                               uint32_t *out, int64_t pairs, int64_t m16)
{
    if (!trans_a) {
#pragma omp for schedule(static)
        for (int64_t i = 0; i < m; i++)
            convert_row(a + i * lda, k, out + i * pairs);
    } else {
#pragma omp for schedule(static)
        for (int64_t p = 0; p < pairs; p++)
            interleave_rows(a + 2 * p * lda, 2 * p + 1 < k ? a + (2 * p + 1) * lda : NULL, m,
                            m16, out + p * m16);
    }
}

/* B's panels, split among the team. Transposed, B is (n, k): each row of 16
 * columns converts to pair words in a small block that 16 gathers then
 * read down its columns. */
BF16_TARGET static void pack_b(bool trans_b, int64_t n, int64_t k, const float *b, int64_t ldb,
                               uint32_t *out, int64_t pairs)
{
    const int64_t panels = (n + BF16_NR - 1) / BF16_NR;
    if (!trans_b) {
#pragma omp for schedule(static) collapse(2)
        for (int64_t panel = 0; panel < panels; panel++)
            for (int64_t p = 0; p < pairs; p++) {
                const int64_t j0 = panel * BF16_NR;
                interleave_rows(b + 2 * p * ldb + j0,
                                2 * p + 1 < k ? b + (2 * p + 1) * ldb + j0 : NULL, n - j0,
                                BF16_NR, out + (panel * pairs + p) * BF16_NR);
            }
        return;
    }
    const __m512i down = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6,
                                                             5, 4, 3, 2, 1, 0),
                                            _mm512_set1_epi32(16));
    const int64_t pair_blocks = (pairs + 15) / 16;
#pragma omp for schedule(static) collapse(2)
    for (int64_t half = 0; half < panels * 2; half++)
        for (int64_t block = 0; block < pair_blocks; block++) {
            uint32_t words[16 * 16] __attribute__((aligned(64)));
            const int64_t j0 = half * 16, p0 = block * 16;
            for (int64_t jj = 0; jj < 16; jj++) {
                if (j0 + jj < n) {
                    const float *row = b + (j0 + jj) * ldb + 2 * p0;
                    int64_t count = k - 2 * p0;
                    __m512 lo = _mm512_maskz_loadu_ps(first_lanes(count), row);
                    __m512 hi = _mm512_maskz_loadu_ps(first_lanes(count - 16), row + 16);
                    _mm512_store_si512(words + jj * 16, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
                } else {
                    _mm512_store_si512(words + jj * 16, _mm512_setzero_si512());
                }
            }
            uint32_t *panel = out + (j0 / BF16_NR) * pairs * BF16_NR + j0 % BF16_NR;
            for (int64_t pp = 0; pp < 16 && p0 + pp < pairs; pp++)
                _mm512_storeu_si512(panel + (p0 + pp) * BF16_NR,
                                    _mm512_i32gather_epi32(_mm512_add_epi32(down,
                                                                            _mm512_set1_epi32((int)pp)),
                                                           words, 4));
        }
}

/* C rows (ROWS of them) x one panel: sums over all pairs in registers, then
 * C = alpha sums + beta C with the panel's last columns masked. a_row and
 * a_pair are the strides of A's words. */
#define DEFINE_TILE(ROWS)                                                                        \
    BF16_TARGET static void tile_##ROWS(int64_t pairs, const uint32_t *a, int64_t a_row,         \
                                        int64_t a_pair, const uint32_t *b, float *c,             \
                                        int64_t ldc, __mmask16 m0, __mmask16 m1, float alpha,    \
                                        float beta)                                              \
    {                                                                                            \
        __m512 sum0[ROWS], sum1[ROWS];                                                           \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) sum0[r] = sum1[r] =               \
            _mm512_setzero_ps();                                                                 \
        for (int64_t p = 0; p < pairs; p++) {                                                    \
            const __m512bh b0 = (__m512bh)_mm512_load_si512(b + p * BF16_NR);                    \
            const __m512bh b1 = (__m512bh)_mm512_load_si512(b + p * BF16_NR + 16);               \
            const uint32_t *ap = a + p * a_pair;                                                 \
            _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++)                               \
            {                                                                                    \
                const __m512bh word = (__m512bh)_mm512_set1_epi32((int)ap[r * a_row]);           \
                sum0[r] = _mm512_dpbf16_ps(sum0[r], word, b0);                                   \
                sum1[r] = _mm512_dpbf16_ps(sum1[r], word, b1);                                   \
            }                                                                                    \
        }                                                                                        \
        const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);                      \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++)                                   \
        {                                                                                        \
            float *row = c + r * ldc;                                                            \
            __m512 v0 = _mm512_mul_ps(va, sum0[r]), v1 = _mm512_mul_ps(va, sum1[r]);             \
            if (beta != 0.0f) {                                                                  \
                v0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, row), v0);                    \
                v1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, row + 16), v1);               \
            }                                                                                    \
            _mm512_mask_storeu_ps(row, m0, v0);                                                  \
            _mm512_mask_storeu_ps(row + 16, m1, v1);                                             \
        }                                                                                        \
    }
DEFINE_TILE(1)
DEFINE_TILE(2)
DEFINE_TILE(3)
DEFINE_TILE(4)
DEFINE_TILE(5)
DEFINE_TILE(6)
DEFINE_TILE(7)
DEFINE_TILE(8)

typedef void (*tile_function)(int64_t, const uint32_t *, int64_t, int64_t, const uint32_t *,
                              float *, int64_t, __mmask16, __mmask16, float, float);
static const tile_function tiles[BF16_MR + 1] = {NULL,   tile_1, tile_2, tile_3, tile_4,
                                                 tile_5, tile_6, tile_7, tile_8};

BF16_TARGET static void gemm_native(uint32_t *packed_a, uint32_t *packed_b, bool trans_a,
                                    bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                                    const float *a, int64_t lda, const float *b, int64_t ldb,
                                    float beta, float *c, int64_t ldc)
{
    const int64_t pairs = (k + 1) / 2, m16 = (m + 15) / 16 * 16;
    const int64_t panels = (n + BF16_NR - 1) / BF16_NR, blocks = (m + BF16_MR - 1) / BF16_MR;
    const int64_t a_row = trans_a ? 1 : pairs, a_pair = trans_a ? m16 : 1;
#pragma omp parallel if (m * n * k >= BF16_PARALLEL_MIN)
    {
        pack_a(trans_a, m, k, a, lda, packed_a, pairs, m16);
        pack_b(trans_b, n, k, b, ldb, packed_b, pairs);
        /* (the barriers at the end of the two loops: packing is done) */
#pragma omp for schedule(static) collapse(2)
        for (int64_t panel = 0; panel < panels; panel++)
            for (int64_t block = 0; block < blocks; block++) {
                const int64_t i0 = block * BF16_MR, j0 = panel * BF16_NR;
                const int64_t rows = m - i0 < BF16_MR ? m - i0 : BF16_MR;
                tiles[rows](pairs, packed_a + i0 * a_row, a_row, a_pair,
                            packed_b + panel * pairs * BF16_NR, c + i0 * ldc + j0, ldc,
                            first_lanes(n - j0), first_lanes(n - j0 - 16), alpha, beta);
            }
    }
}

static bool native_available(void)
{
    pthread_once(&choice_once, choose_kernel);
    return choice.native;
}
#else
static bool native_available(void) { return false; }
#endif

bool ax_bf16_cpu_native(void) { return native_available(); }

ax_bf16_choice ax_bf16_cpu_choice(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    pthread_once(&choice_once, choose_kernel);
#endif
    return choice;
}

bool ax_bf16_cpu_has_instructions(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512bf16");
#else
    return false;
#endif
}

void ax_bf16_gemm(ax_bf16_workspace *workspace, ax_bf16_sgemm sgemm, bool trans_a, bool trans_b, int64_t m, int64_t n,
                  int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                  int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (m <= 0 || n <= 0)
        return;
    if (k <= 0) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    if (forced_emulation == 0 ? native_available() : forced_emulation < 0 && ax_bf16_cpu_has_instructions()) {
        const int64_t pairs = (k + 1) / 2, m16 = (m + 15) / 16 * 16;
        const int64_t panels = (n + BF16_NR - 1) / BF16_NR;
        size_t a_words = (size_t)(trans_a ? pairs * m16 : m * pairs);
        a_words = (a_words + 15) / 16 * 16; /* B's panels start 64-byte aligned */
        size_t b_words = (size_t)(panels * pairs * BF16_NR);
        uint32_t *packed = ax_bf16_workspace_reserve(workspace, (a_words + b_words) * sizeof(uint32_t));
        if (!packed) {
            gemm_unpacked(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
            return;
        }
        gemm_native(packed, packed + a_words, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
                    beta, c, ldc);
        return;
    }
#endif
    gemm_emulated(workspace, sgemm, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
