/* dev/amx_matmul.c: which oneDNN matmul implementation (brg:avx512_core_amx or
 * another) each block layout of onednn_matmul.c gets, and how fast, at LeNet's
 * dense shapes (batch 128, 1024 -> 1024): the whole product as one multithreaded
 * primitive, against 64-column blocks as views of the whole operands (strided B and
 * C) or as dense copies. Build: dev/amx_matmul.sh. Prints one line per (shape, layout). */
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_median.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static dnnl_engine_t engine;
static dnnl_data_type_t operand = dnnl_bf16; /* dnnl_f32 with AMX_MATMUL_F32=1 */

/* A matmul primitive (rows, k) x (k, cols) -> (rows, cols) with the given strides;
 * single-threaded when single. Returns its implementation name in impl. */
static dnnl_primitive_t make(int64_t rows, int64_t cols, int64_t k, const int64_t as[2],
                             const int64_t bs[2], int64_t ldc, int single, char *impl,
                             dnnl_memory_desc_t md[3], size_t *scratch)
{
    dnnl_dims_t ad = {rows, k}, bd = {k, cols}, cd = {rows, cols};
    dnnl_dims_t ast = {as[0], as[1]}, bst = {bs[0], bs[1]}, cst = {ldc, 1};
    dnnl_memory_desc_init_by_strides(&md[0], 2, ad, operand, ast);
    dnnl_memory_desc_init_by_strides(&md[1], 2, bd, operand, bst);
    dnnl_memory_desc_init_by_strides(&md[2], 2, cd, dnnl_f32, cst);
    dnnl_matmul_desc_t d;
    dnnl_matmul_desc_init(&d, &md[0], &md[1], NULL, &md[2]);
    dnnl_primitive_attr_t attr;
    dnnl_primitive_attr_create(&attr);
    dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    int threads = omp_get_max_threads();
    if (single)
        omp_set_num_threads(1);
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p = NULL;
    if (dnnl_primitive_desc_create(&pd, &d, attr, engine, NULL) == dnnl_success) {
        const char *name = "?";
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name);
        snprintf(impl, 64, "%s", name);
        *scratch = dnnl_memory_desc_get_size(dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0));
        dnnl_primitive_create(&p, pd);
        dnnl_primitive_desc_destroy(pd);
    } else
        snprintf(impl, 64, "(none)");
    omp_set_num_threads(threads);
    dnnl_primitive_attr_destroy(attr);
    return p;
}

static void run(dnnl_primitive_t p, dnnl_memory_desc_t md[3], void *a, void *b, void *c,
                void *scratch, size_t scratch_bytes, dnnl_stream_t stream)
{
    dnnl_memory_t m[4] = {0};
    dnnl_memory_create(&m[0], &md[0], engine, a);
    dnnl_memory_create(&m[1], &md[1], engine, b);
    dnnl_memory_create(&m[2], &md[2], engine, c);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, m[0]}, {DNNL_ARG_WEIGHTS, m[1]}, {DNNL_ARG_DST, m[2]}};
    int n = 3;
    if (scratch_bytes) {
        dnnl_memory_desc_t smd;
        dnnl_dims_t sd = {(int64_t)scratch_bytes};
        dnnl_memory_desc_init_by_tag(&smd, 1, sd, dnnl_u8, dnnl_a);
        dnnl_memory_create(&m[3], &smd, engine, scratch);
        args[3] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, m[3]};
        n = 4;
    }
    dnnl_primitive_execute(p, stream, n, args);
    dnnl_stream_wait(stream);
    for (int i = 0; i < 4; i++)
        if (m[i])
            dnnl_memory_destroy(m[i]);
}

int main(void)
{
    dnnl_engine_create(&engine, dnnl_cpu, 0);
    const char *f32 = getenv("AMX_MATMUL_F32");
    const size_t size = f32 && *f32 == '1' ? 4 : 2;
    if (size == 4)
        operand = dnnl_f32;
    const int threads = omp_get_max_threads();
    dnnl_stream_t *streams = malloc(sizeof *streams * (size_t)threads);
    for (int t = 0; t < threads; t++)
        dnnl_stream_create(&streams[t], engine, dnnl_stream_default_flags);
    /* name, trans_a, trans_b, m, n, k: LeNet's layer 5 products at batch 128 */
    struct { const char *name; int ta, tb; int64_t m, n, k; } shapes[] = {
        {"forward  x W^T", 0, 1, 128, 1024, 1024},
        {"wgrad    d^T x", 1, 0, 1024, 1024, 128},
        {"igrad    d W  ", 0, 0, 128, 1024, 1024},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int ta = shapes[s].ta, tb = shapes[s].tb;
        const int64_t m = shapes[s].m, n = shapes[s].n, k = shapes[s].k, P = 64;
        char *a = calloc((size_t)(m * k), size), *b = calloc((size_t)(k * n), size);
        char *bpanels = calloc((size_t)(k * n), size);
        float *c = calloc((size_t)(m * n), 4), *cblocks = calloc((size_t)(m * n), 4);
        for (int64_t i = 0; i < m * k; i++)
            if (size == 2) ((uint16_t *)a)[i] = 0x3f80 + (uint16_t)(i % 7); else ((float *)a)[i] = 1.0f + (float)(i % 7);
        for (int64_t i = 0; i < k * n; i++)
            if (size == 2) ((uint16_t *)b)[i] = 0x3f80 + (uint16_t)(i % 5); else ((float *)b)[i] = 1.0f + (float)(i % 5);
        const int64_t as[2] = {ta ? 1 : k, ta ? m : 1};
        for (int layout = 0; layout < 4; layout++) {
            /* 0 whole multithreaded; 1 views (strided B and C); 2 dense B panels, strided C;
             * 3 dense B panels and dense C blocks (copied into C after) */
            char impl[64];
            dnnl_memory_desc_t md[3];
            size_t scratch_bytes = 0;
            int64_t bs[2], ldc;
            int64_t cols = layout == 0 ? n : P;
            if (layout == 0 || layout == 1) {
                bs[0] = tb ? 1 : n, bs[1] = tb ? k : 1;
            } else {
                bs[0] = tb ? 1 : P, bs[1] = tb ? k : 1;
            }
            ldc = layout == 3 ? P : n;
            dnnl_primitive_t p = make(m, cols, k, as, bs, ldc, layout != 0, impl, md, &scratch_bytes);
            if (!p) {
                printf("%s layout %d: no primitive\n", shapes[s].name, layout);
                continue;
            }
            char *scratch = aligned_alloc(64, ((scratch_bytes + 63) & ~(size_t)63) * (size_t)threads + 64);
            const size_t stride = (scratch_bytes + 63) & ~(size_t)63;
            double times[30];
            for (int rep = 0; rep < 30; rep++) {
                double t0 = now();
                if (layout == 0) {
                    run(p, md, a, b, c, scratch, scratch_bytes, streams[0]);
                } else {
                    if (layout >= 2 && !tb) { /* the panels' dense copies, as a call would make them */
#pragma omp parallel for schedule(static)
                        for (int64_t j = 0; j < n / P; j++)
                            for (int64_t kk = 0; kk < k; kk++)
                                memcpy(bpanels + ((j * k + kk) * P) * size, b + (kk * n + j * P) * size, (size_t)P * size);
                    }
#pragma omp parallel for schedule(static)
                    for (int64_t j = 0; j < n / P; j++) {
                        const int t = omp_get_thread_num();
                        void *bp = layout == 1 || tb ? (void *)(tb ? b + j * P * k * size : b + j * P * size)
                                                     : (void *)(bpanels + j * k * P * size);
                        void *cp = layout == 3 ? (void *)(cblocks + j * m * P) : (void *)(c + j * P);
                        run(p, md, a, bp, cp, scratch + (size_t)t * stride, scratch_bytes, streams[t]);
                    }
                    if (layout == 3) {
#pragma omp parallel for schedule(static)
                        for (int64_t i = 0; i < m; i++)
                            for (int64_t j = 0; j < n / P; j++)
                                memcpy(c + i * n + j * P, cblocks + (j * m + i) * P, (size_t)P * 4);
                    }
                }
                times[rep] = now() - t0;
            }
            const double median = bench_median(times, 30);
            printf("%s layout %d (%s): %-28s median %.3f ms, %.0f GFLOP/s (best %.3f ms)\n",
                   shapes[s].name, layout,
                   layout == 0 ? "whole, threads" : layout == 1 ? "views" : layout == 2 ? "dense B" : "dense B+C",
                   impl, median * 1e3, 2.0 * (double)(m * n * k) / median * 1e-9, times[0] * 1e3);
            dnnl_primitive_destroy(p);
            free(scratch);
        }
        free(a), free(b), free(bpanels), free(c), free(cblocks);
    }
    return 0;
}
