/* onednn_matmul.c: GEMMs on oneDNN's matmul in fixed blocks of the
 * output (onednn_matmul.h), for bf16 and for float32's forward products.
 *
 * A product's C is cut into blocks of PANEL_ROWS by PANEL_COLUMNS (the
 * edges' shorter); each block is one primitive's whole sum over k, made as
 * if one thread were all there is (so oneDNN plans no split of k), and runs
 * on the thread that takes the block, on that thread's stream and
 * scratchpad. The block's rows of op(A) and columns of op(B) are views of
 * the operands through strides, transposed or not. bf16 first rounds and
 * packs op(A) and op(B) to bfloat16 in their stored layout (each value
 * alone: bf16_round.h); float32 reads them in place. A block's C is a view
 * of C (bf16: oneDNN then takes its gemm:jit, fastest on the lent
 * Sapphire Rapids) or a dense block of the thread's scratch copied into C
 * after (float32: oneDNN's brgemm kernels take only dense blocks).
 * 64 columns are one AMX B panel (oneDNN's brgemm blocks N by 64) and give
 * LeNet's 1024-wide layer 16 blocks; 256 rows keep a block's rows of A
 * within a core's L2. */
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/bf16_round.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/onednn_matmul.h"
#include "backend/cpu/onednn_streams.h"

enum { PANEL_ROWS = 256, PANEL_COLUMNS = 64 };
/* Block shapes kept: a product needs at most four (full, and the last row
 * and column blocks'), a dense network's three products per layer a few
 * more; the least recently used goes. */
enum { KEPT = 24 };

typedef struct block_key {
    int64_t rows, columns, k;
    int64_t a_strides[2], b_strides[2], ldc;
    int operand; /* dnnl_data_type_t: dnnl_bf16 or dnnl_f32 */
} block_key;

typedef struct block_primitive {
    block_key key;
    uint64_t last_used; /* 0: empty */
    dnnl_primitive_t matmul;
    dnnl_memory_desc_t a, b, c, scratchpad;
    size_t scratchpad_bytes;
} block_primitive;

struct ax_onednn_matmuls {
    dnnl_engine_t engine;
    uint64_t clock;
    block_primitive kept[KEPT];
    ax_onednn_streams streams; /* one per thread */
    void *staging; /* bf16: the packed copies of op(A) and op(B) */
    size_t staging_bytes;
    void *scratch; /* the threads' scratchpads, then (dense C) their blocks of C */
    size_t scratch_bytes;
    char kernel[64]; /* the last primitive's implementation */
};

static pthread_once_t choice_once = PTHREAD_ONCE_INIT;
static bool chosen;

bool ax_onednn_cpu_has_amx(void)
{
    /* The ISA masks nest (dnnl_types.h). */
    const unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    const unsigned amx = (unsigned)dnnl_cpu_isa_avx512_core_amx;
    return (isa & amx) == amx;
}

static void choose(void)
{
    const char *asked = getenv("AXON_BF16_KERNEL");
    if (asked && strcmp(asked, "onednn") == 0) {
        chosen = true;
        return;
    }
    if ((asked && *asked && strcmp(asked, "auto") != 0) || ax_cpu_kernels_generic())
        return;
    /* Where oneDNN has AMX (the CPUs that have it also have AVX512_BF16,
     * whose gemm:jit oneDNN picks for these blocks). On Xeons without AMX
     * oneDNN's bf16 matmul measured no faster than bf16_gemm.c's own
     * kernels (docs/notes/blas-choice.md). */
    chosen = ax_onednn_cpu_has_amx();
}

bool ax_onednn_bf16_matmul_chosen(void)
{
    pthread_once(&choice_once, choose);
    return chosen;
}

bool ax_onednn_bf16_matmul_takes(int64_t m, int64_t n, int64_t k)
{
    return ax_onednn_bf16_matmul_chosen() && (double)m * (double)n * (double)k >= 0x1p24;
}

bool ax_onednn_f32_matmul_takes(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k)
{
    const char *asked = getenv("AXON_ONEDNN_MATMUL");
    if (asked && strcmp(asked, "off") == 0)
        return false;
    if (asked && strcmp(asked, "on") == 0)
        return true;
    return !trans_a && trans_b && (double)m * (double)n * (double)k >= 0x1p24 &&
           ax_cpu_kernels_avx512f();
}

static void block_release(block_primitive *p)
{
    if (p->matmul)
        dnnl_primitive_destroy(p->matmul);
    memset(p, 0, sizeof *p);
}

void ax_onednn_matmuls_free(ax_onednn_matmuls *matmuls)
{
    if (!matmuls)
        return;
    for (int i = 0; i < KEPT; i++)
        block_release(&matmuls->kept[i]);
    ax_onednn_streams_free(&matmuls->streams);
    if (matmuls->engine)
        dnnl_engine_destroy(matmuls->engine);
    free(matmuls->staging);
    free(matmuls->scratch);
    free(matmuls);
}

const char *ax_onednn_matmuls_kernel(const ax_onednn_matmuls *matmuls)
{
    return matmuls ? matmuls->kernel : "";
}

/* The single-threaded primitive of p->key: views of op(A) and op(B) in the
 * key's operand type, float32 C, scratchpad the caller's. */
static dnnl_status_t block_create(ax_onednn_matmuls *matmuls, block_primitive *p)
{
    const block_key *key = &p->key;
    const dnnl_dims_t a_dims = {key->rows, key->k}, b_dims = {key->k, key->columns};
    const dnnl_dims_t c_dims = {key->rows, key->columns}, c_strides = {key->ldc, 1};
    const dnnl_dims_t a_strides = {key->a_strides[0], key->a_strides[1]};
    const dnnl_dims_t b_strides = {key->b_strides[0], key->b_strides[1]};
    dnnl_matmul_desc_t description;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1); /* what oneDNN plans its split for */
    const dnnl_data_type_t operand = (dnnl_data_type_t)key->operand;
    dnnl_status_t s = dnnl_memory_desc_init_by_strides(&p->a, 2, a_dims, operand, a_strides);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_strides(&p->b, 2, b_dims, operand, b_strides);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_strides(&p->c, 2, c_dims, dnnl_f32, c_strides);
    if (s == dnnl_success)
        s = dnnl_matmul_desc_init(&description, &p->a, &p->b, NULL, &p->c);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success)
        s = dnnl_primitive_desc_create(&pd, &description, attr, matmuls->engine, NULL);
    if (s == dnnl_success)
        s = dnnl_primitive_create(&p->matmul, pd);
    if (s == dnnl_success) {
        p->scratchpad = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        p->scratchpad_bytes = dnnl_memory_desc_get_size(&p->scratchpad);
        const char *name = NULL;
        if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) == dnnl_success &&
            name)
            snprintf(matmuls->kernel, sizeof matmuls->kernel, "%s", name);
    }
    omp_set_num_threads(threads);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return s;
}

/* The primitive of key, made when new (replacing the least recently used,
 * never one this call already holds: those were used last); NULL when
 * oneDNN cannot make it. */
static block_primitive *block_for(ax_onednn_matmuls *matmuls, const block_key *key)
{
    block_primitive *oldest = &matmuls->kept[0];
    for (int i = 0; i < KEPT; i++) {
        block_primitive *p = &matmuls->kept[i];
        if (p->last_used && memcmp(&p->key, key, sizeof *key) == 0) {
            p->last_used = ++matmuls->clock;
            return p;
        }
        if (p->last_used < oldest->last_used)
            oldest = p;
    }
    block_release(oldest);
    oldest->key = *key;
    if (block_create(matmuls, oldest) != dnnl_success) {
        block_release(oldest);
        return NULL;
    }
    oldest->last_used = ++matmuls->clock;
    return oldest;
}

/* memory grown to at least bytes (64-byte aligned), its contents dropped. */
static void *grown(void **memory, size_t *capacity, size_t bytes)
{
    if (*capacity >= bytes)
        return *memory;
    free(*memory);
    *capacity = 0;
    *memory = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (*memory)
        *capacity = bytes;
    return *memory;
}

/* to (rows, columns), dense, = from (rows, columns; leading dimension ld)
 * rounded to bfloat16 and packed. */
static void pack_rows(uint16_t *to, const float *from, int64_t rows, int64_t columns, int64_t ld)
{
#pragma omp parallel for schedule(static) if (rows * columns >= 65536)
    for (int64_t r = 0; r < rows; r++)
        ax_bf16_pack_values_serial(to + r * columns, from + r * ld, columns);
}

/* One product's layout: its operands (bf16: the packed copies) as views,
 * C, and the four block shapes' primitives, indexed [last row block][last
 * column block]. */
typedef struct product {
    const char *a, *b;
    size_t value;          /* bytes per operand value */
    int64_t a_strides[2];  /* op(A)'s rows and columns, in values */
    int64_t b_strides[2];  /* op(B)'s */
    int64_t m, n, k, ldc;
    float *c;
    bool dense_c;          /* blocks in the thread's scratch, copied into C */
    int operand;
    const block_primitive *blocks[2][2];
    size_t scratchpad;     /* bytes of oneDNN's scratchpad per thread */
    size_t scratch_stride; /* bytes per thread: scratchpad, then a block of C */
} product;

static block_key key_of(const product *p, int64_t rows, int64_t columns)
{
    block_key key;
    memset(&key, 0, sizeof key); /* compared with memcmp */
    key.rows = rows;
    key.columns = columns;
    key.k = p->k;
    memcpy(key.a_strides, p->a_strides, sizeof key.a_strides);
    memcpy(key.b_strides, p->b_strides, sizeof key.b_strides);
    key.ldc = p->dense_c ? columns : p->ldc;
    key.operand = p->operand;
    return key;
}

static bool block_run(const ax_onednn_matmuls *matmuls, const product *p, int64_t block,
                      int64_t column_blocks)
{
    const int64_t i0 = block / column_blocks * PANEL_ROWS;
    const int64_t j0 = block % column_blocks * PANEL_COLUMNS;
    const block_primitive *primitive =
        p->blocks[i0 + PANEL_ROWS > p->m][j0 + PANEL_COLUMNS > p->n];
    const int thread = omp_get_thread_num();
    char *own = (char *)matmuls->scratch + (size_t)thread * p->scratch_stride;
    float *c = p->dense_c ? (float *)(own + p->scratchpad) : p->c + i0 * p->ldc + j0;
    /* oneDNN takes non-const handles; it only reads the operands */
    void *handles[4] = {
        (void *)(p->a + (size_t)(i0 * p->a_strides[0]) * p->value),
        (void *)(p->b + (size_t)(j0 * p->b_strides[1]) * p->value),
        c,
        own,
    };
    const dnnl_memory_desc_t *descriptions[4] = {&primitive->a, &primitive->b, &primitive->c,
                                                 &primitive->scratchpad};
    const int used = primitive->scratchpad_bytes ? 4 : 3;
    dnnl_memory_t memories[4] = {NULL, NULL, NULL, NULL};
    bool ok = true;
    for (int i = 0; i < used && ok; i++)
        ok = dnnl_memory_create(&memories[i], descriptions[i], matmuls->engine, handles[i]) ==
             dnnl_success;
    if (ok) {
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, memories[0]},
                                   {DNNL_ARG_WEIGHTS, memories[1]},
                                   {DNNL_ARG_DST, memories[2]},
                                   {DNNL_ARG_SCRATCHPAD, memories[3]}};
        dnnl_stream_t stream = matmuls->streams.streams[thread];
        ok = dnnl_primitive_execute(primitive->matmul, stream, used, args) == dnnl_success &&
             dnnl_stream_wait(stream) == dnnl_success;
    }
    for (int i = 0; i < 4; i++)
        if (memories[i])
            dnnl_memory_destroy(memories[i]);
    if (ok && p->dense_c) {
        const int64_t rows = primitive->key.rows, columns = primitive->key.columns;
        for (int64_t r = 0; r < rows; r++)
            memcpy(p->c + (i0 + r) * p->ldc + j0, c + r * columns, (size_t)columns * sizeof *c);
    }
    return ok;
}

/* The state, made at the first call. */
static ax_onednn_matmuls *matmuls_made(ax_onednn_matmuls **matmuls)
{
    if (*matmuls)
        return *matmuls;
    ax_onednn_matmuls *made = calloc(1, sizeof *made);
    if (!made)
        return NULL;
    if (dnnl_engine_create(&made->engine, dnnl_cpu, 0) != dnnl_success) {
        free(made);
        return NULL;
    }
    return *matmuls = made;
}

/* The state for a product this takes (alpha 1, beta 0, nothing empty),
 * made at the first; NULL for the others, or when it cannot be made. */
static ax_onednn_matmuls *taken(ax_onednn_matmuls **matmuls, float alpha, float beta, int64_t m,
                                int64_t n, int64_t k)
{
    if (alpha != 1.0f || beta != 0.0f || m <= 0 || n <= 0 || k <= 0)
        return NULL;
    return matmuls_made(matmuls);
}

/* p's four block shapes' primitives and the threads' scratch: false when
 * oneDNN cannot make one or memory runs out. */
static bool blocks_ready(ax_onednn_matmuls *matmuls, product *p)
{
    const int64_t m = p->m, n = p->n;
    const int64_t last_rows = m - (m - 1) / PANEL_ROWS * PANEL_ROWS;
    const int64_t last_columns = n - (n - 1) / PANEL_COLUMNS * PANEL_COLUMNS;
    const int64_t row_shapes[2] = {m < PANEL_ROWS ? m : PANEL_ROWS, last_rows};
    const int64_t column_shapes[2] = {n < PANEL_COLUMNS ? n : PANEL_COLUMNS, last_columns};
    /* The edge blocks are indexed by whether they pass the panel's end:
     * when m is a multiple of PANEL_ROWS no block does, and [1] is unused. */
    p->scratchpad = 0;
    for (int r = 0; r < 2; r++)
        for (int col = 0; col < 2; col++) {
            const block_key key = key_of(p, row_shapes[r], column_shapes[col]);
            block_primitive *primitive = block_for(matmuls, &key);
            if (!primitive)
                return false;
            p->blocks[r][col] = primitive;
            if (primitive->scratchpad_bytes > p->scratchpad)
                p->scratchpad = primitive->scratchpad_bytes;
        }
    p->scratchpad = (p->scratchpad + 63) & ~(size_t)63;
    const size_t block_bytes =
        p->dense_c ? (size_t)(row_shapes[0] * column_shapes[0]) * sizeof(float) : 0;
    p->scratch_stride = (p->scratchpad + block_bytes + 63) & ~(size_t)63;
    const int threads = omp_get_max_threads();
    return ax_onednn_streams_reserve(&matmuls->streams, matmuls->engine, threads) &&
           (!p->scratch_stride ||
            grown(&matmuls->scratch, &matmuls->scratch_bytes, (size_t)threads * p->scratch_stride));
}

/* Every block of p, threads taking whole blocks. Each thread first sets
 * its own thread count (an ICV of its implicit task, gone when the region
 * ends) to one: oneDNN's gemm:jit reads the count when it executes, not
 * when it is made, and a product of one block run outside a region, or on
 * a team of one, would otherwise be split over the caller's threads (and
 * its sum over k with them). */
static bool blocks_run(const ax_onednn_matmuls *matmuls, const product *p)
{
    const int64_t column_blocks = (p->n + PANEL_COLUMNS - 1) / PANEL_COLUMNS;
    const int64_t blocks = (p->m + PANEL_ROWS - 1) / PANEL_ROWS * column_blocks;
    bool failed = false;
#pragma omp parallel reduction(|| : failed)
    {
        omp_set_num_threads(1);
#pragma omp for schedule(static)
        for (int64_t block = 0; block < blocks; block++)
            failed = !block_run(matmuls, p, block, column_blocks) || failed;
    }
    return !failed;
}

bool ax_onednn_bf16_matmul(ax_onednn_matmuls **matmuls_, bool trans_a, bool trans_b, int64_t m,
                           int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                           const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    ax_onednn_matmuls *matmuls = taken(matmuls_, alpha, beta, m, n, k);
    if (!matmuls)
        return false;
    /* op(A) packed (m, k), or (k, m) when transposed; op(B) (k, n) or (n, k) */
    product p = {.value = sizeof(uint16_t), .m = m, .n = n, .k = k, .ldc = ldc, .c = c,
                 .operand = dnnl_bf16,
                 .a_strides = {trans_a ? 1 : k, trans_a ? m : 1},
                 .b_strides = {trans_b ? 1 : n, trans_b ? k : 1}};
    if (!blocks_ready(matmuls, &p))
        return false;
    const size_t a_bytes = ((size_t)(m * k) * sizeof(uint16_t) + 63) & ~(size_t)63;
    const size_t b_bytes = (size_t)(k * n) * sizeof(uint16_t);
    char *staging = grown(&matmuls->staging, &matmuls->staging_bytes, a_bytes + b_bytes);
    if (!staging)
        return false;
    pack_rows((uint16_t *)staging, a, trans_a ? k : m, trans_a ? m : k, lda);
    pack_rows((uint16_t *)(staging + a_bytes), b, trans_b ? n : k, trans_b ? k : n, ldb);
    p.a = staging;
    p.b = staging + a_bytes;
    return blocks_run(matmuls, &p);
}

bool ax_onednn_f32_matmul(ax_onednn_matmuls **matmuls_, bool trans_a, bool trans_b, int64_t m,
                          int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                          const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    ax_onednn_matmuls *matmuls = taken(matmuls_, alpha, beta, m, n, k);
    if (!matmuls)
        return false;
    product p = {.a = (const char *)a, .b = (const char *)b, .value = sizeof(float), .m = m,
                 .n = n, .k = k, .ldc = ldc, .c = c, .dense_c = true, .operand = dnnl_f32,
                 .a_strides = {trans_a ? 1 : lda, trans_a ? lda : 1},
                 .b_strides = {trans_b ? 1 : ldb, trans_b ? ldb : 1}};
    return blocks_ready(matmuls, &p) && blocks_run(matmuls, &p);
}
