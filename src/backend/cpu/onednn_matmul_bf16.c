/* onednn_matmul_bf16.c: the bf16 backend's GEMMs on oneDNN's bf16 matmul
 * in fixed blocks of the output (onednn_matmul_bf16.h).
 *
 * A call rounds op(A) and op(B) to packed bfloat16 in their stored layout
 * (each value alone: bf16_round.h), then runs one primitive per block of
 * C, PANEL_ROWS by PANEL_COLUMNS or the edges' shorter blocks: the block's
 * rows of op(A) and columns of op(B) are views of the packed copies
 * (oneDNN reads them through strides, transposed or not), and the whole
 * sum over k is the block's own. A block's primitive is created as if one
 * thread were all there is (so oneDNN plans no split of k) and runs on the
 * thread that takes the block, on that thread's stream and scratchpad.
 * 64 columns are one AMX B panel (oneDNN's brgemm blocks N by 64) and
 * give LeNet's 1024-wide layer 16 blocks; 256 rows keep a block's rows of
 * A within a core's L2. */
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/bf16_round.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/onednn_matmul_bf16.h"
#include "backend/cpu/onednn_streams.h"

enum { PANEL_ROWS = 256, PANEL_COLUMNS = 64 };
/* Block shapes kept: a product needs at most four (full, and the last row
 * and column blocks'), a dense network's three products per layer a few
 * more; the least recently used goes. */
enum { KEPT = 24 };

typedef struct block_key {
    int64_t rows, columns, k;
    int64_t a_strides[2], b_strides[2], ldc;
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
    void *staging; /* the packed copies of op(A) and op(B) */
    size_t staging_bytes;
    void *scratch; /* the threads' scratchpads */
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

/* The single-threaded primitive of p->key: bf16 views of op(A) and op(B),
 * float32 C, scratchpad the caller's. */
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
    dnnl_status_t s = dnnl_memory_desc_init_by_strides(&p->a, 2, a_dims, dnnl_bf16, a_strides);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_strides(&p->b, 2, b_dims, dnnl_bf16, b_strides);
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

/* One product's layout: the packed operands and the four block shapes'
 * primitives, indexed [last row block][last column block]. */
typedef struct product {
    const uint16_t *a, *b;
    bool trans_a, trans_b;
    int64_t m, n, k, ldc;
    float *c;
    const block_primitive *blocks[2][2];
    size_t scratch_stride; /* bytes per thread */
} product;

static block_key key_of(const product *p, int64_t rows, int64_t columns)
{
    block_key key;
    memset(&key, 0, sizeof key); /* compared with memcmp */
    key.rows = rows;
    key.columns = columns;
    key.k = p->k;
    /* op(A) (rows, k): A packed (m, k), or (k, m) when transposed */
    key.a_strides[0] = p->trans_a ? 1 : p->k;
    key.a_strides[1] = p->trans_a ? p->m : 1;
    /* op(B) (k, columns): B packed (k, n), or (n, k) when transposed */
    key.b_strides[0] = p->trans_b ? 1 : p->n;
    key.b_strides[1] = p->trans_b ? p->k : 1;
    key.ldc = p->ldc;
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
    /* oneDNN takes non-const handles; it only reads the operands */
    void *handles[4] = {
        (void *)(p->a + (p->trans_a ? i0 : i0 * p->k)),
        (void *)(p->b + (p->trans_b ? j0 * p->k : j0)),
        p->c + i0 * p->ldc + j0,
        (char *)matmuls->scratch + (size_t)thread * p->scratch_stride,
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
    return ok;
}

bool ax_onednn_bf16_matmul(ax_onednn_matmuls **matmuls_, bool trans_a, bool trans_b, int64_t m,
                           int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                           const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (alpha != 1.0f || beta != 0.0f || m <= 0 || n <= 0 || k <= 0)
        return false;
    if (!*matmuls_) {
        ax_onednn_matmuls *made = calloc(1, sizeof *made);
        if (!made)
            return false;
        if (dnnl_engine_create(&made->engine, dnnl_cpu, 0) != dnnl_success) {
            free(made);
            return false;
        }
        *matmuls_ = made;
    }
    ax_onednn_matmuls *matmuls = *matmuls_;
    product p = {.trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n, .k = k, .ldc = ldc,
                 .c = c};
    /* the primitives of the (up to) four block shapes */
    const int64_t last_rows = m - (m - 1) / PANEL_ROWS * PANEL_ROWS;
    const int64_t last_columns = n - (n - 1) / PANEL_COLUMNS * PANEL_COLUMNS;
    const int64_t row_shapes[2] = {m < PANEL_ROWS ? m : PANEL_ROWS, last_rows};
    const int64_t column_shapes[2] = {n < PANEL_COLUMNS ? n : PANEL_COLUMNS, last_columns};
    size_t scratchpad = 0;
    for (int r = 0; r < 2; r++)
        for (int col = 0; col < 2; col++) {
            const block_key key = key_of(&p, row_shapes[r], column_shapes[col]);
            block_primitive *primitive = block_for(matmuls, &key);
            if (!primitive)
                return false;
            p.blocks[r][col] = primitive;
            if (primitive->scratchpad_bytes > scratchpad)
                scratchpad = primitive->scratchpad_bytes;
        }
    /* The edge blocks are indexed by whether they pass the panel's end:
     * when m is a multiple of PANEL_ROWS no block does, and [1] is unused. */
    const int threads = omp_get_max_threads();
    p.scratch_stride = (scratchpad + 63) & ~(size_t)63;
    const size_t a_bytes = ((size_t)(m * k) * sizeof(uint16_t) + 63) & ~(size_t)63;
    const size_t b_bytes = (size_t)(k * n) * sizeof(uint16_t);
    uint16_t *staging = grown(&matmuls->staging, &matmuls->staging_bytes, a_bytes + b_bytes);
    if (!staging || !ax_onednn_streams_reserve(&matmuls->streams, matmuls->engine, threads) ||
        (p.scratch_stride &&
         !grown(&matmuls->scratch, &matmuls->scratch_bytes, (size_t)threads * p.scratch_stride)))
        return false;
    p.a = staging;
    p.b = (const uint16_t *)((const char *)staging + a_bytes);
    pack_rows((uint16_t *)p.a, a, trans_a ? k : m, trans_a ? m : k, lda);
    pack_rows((uint16_t *)p.b, b, trans_b ? n : k, trans_b ? k : n, ldb);
    const int64_t column_blocks = (n + PANEL_COLUMNS - 1) / PANEL_COLUMNS;
    const int64_t blocks = (m + PANEL_ROWS - 1) / PANEL_ROWS * column_blocks;
    bool failed = false;
#pragma omp parallel for schedule(static) reduction(|| : failed) if (blocks > 1)
    for (int64_t block = 0; block < blocks; block++)
        failed = !block_run(matmuls, &p, block, column_blocks) || failed;
    return !failed;
}
