/* test_cpu_generic_kernels.c: the CPU backend on the path of a CPU without
 * AVX-512, forced on any CPU by AXON_CPU_KERNELS=generic
 * (src/backend/cpu/cpu_features.h), which the test sets itself before the
 * library reads it. It proves that:
 * - AXON_CPU_KERNELS other than generic, auto or empty is refused when a
 *   CPU backend is created (bad argument, naming the variable and value);
 * - under generic, the AVX-512 kernels (tiny_gemm's row kernel,
 *   skinny_gemm, long_gemm) decline the very shapes they take on an
 *   AVX-512 CPU, touching nothing, while the plain-C weight-gradient kernel
 *   still takes its shapes, and bf16's GEMMs are emulated and say why;
 * - the backend's gemm on those shapes (and on edge sizes: one row, one
 *   column, k = 1, odd widths, tails, padded strides, alpha and beta, C
 *   full of NaN under beta 0) agrees with a float64 triple loop within the
 *   rounding of any summation order: (k + 2 blocks + 2) units of roundoff
 *   of the sum of |terms| in float32 and float64, and bf16's bound of
 *   test_bf16_gemm.c (operands rounded to 8 bits) for bf16;
 * - m or n of 0 reads and writes nothing; memory that cannot be had is
 *   OUT_OF_MEMORY with its size, and the other status entries succeed.
 * The other path (the CPU's own kernels) is checked against the same kind
 * of reference by test_tiny_gemm, test_skinny_gemm and test_long_gemm. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/long_gemm.h"
#include "backend/cpu/skinny_gemm.h"
#include "backend/cpu/tiny_gemm.h"
#include "test_reference.h"
#include "test_util.h"

/* The backend's gemm splits k in blocks of 256 (cpu_backend.c), each
 * adding one more rounding of C. */
#define K_BLOCK 256

typedef struct {
    bool trans_a, trans_b;
    int64_t m, n, k;
    double alpha, beta;
    int64_t pad; /* leading dimensions exceed the widths by this much */
    const char *what;
} shape;

static int failures_reported = 0;

/* Runs one shape through the backend's gemm in one precision and compares
 * with the float64 reference; C's padding (past n in each row) must keep
 * its 7s. */
static void check_backend_shape(ax_backend *backend, shape s)
{
    const ax_backend_ops *ops = backend->ops;
    const int64_t a_rows = s.trans_a ? s.k : s.m, a_cols = s.trans_a ? s.m : s.k;
    const int64_t b_rows = s.trans_b ? s.n : s.k, b_cols = s.trans_b ? s.k : s.n;
    const int64_t lda = a_cols + s.pad, ldb = b_cols + s.pad, ldc = s.n + s.pad;
    const int64_t a_size = a_rows * lda, b_size = b_rows * ldb, c_size = s.m * ldc;
    double *a = malloc(sizeof(double) * (size_t)a_size);
    double *b = malloc(sizeof(double) * (size_t)b_size);
    double *c_in = malloc(sizeof(double) * (size_t)c_size);
    double *c_out = malloc(sizeof(double) * (size_t)c_size);
    double *expected = malloc(sizeof(double) * (size_t)(s.m * s.n));
    double *magnitude = malloc(sizeof(double) * (size_t)(s.m * s.n));
    void *da = ops->alloc(backend, backend->real_size * (size_t)a_size);
    void *db = ops->alloc(backend, backend->real_size * (size_t)b_size);
    void *dc = ops->alloc(backend, backend->real_size * (size_t)c_size);
    const bool allocated = a && b && c_in && c_out && expected && magnitude && da && db && dc;
    CHECK(allocated);
    if (!allocated)
        goto done;
    /* values that float32 and bfloat16 hold exactly where they must:
     * the reference sees what the backend is given */
    const bool bf16 = backend->precision == AX_PRECISION_BF16;
    const bool f64 = backend->precision == AX_PRECISION_F64;
    for (int64_t i = 0; i < a_size; i++)
        a[i] = f64 ? value_at((uint64_t)i, 11) : (float)value_at((uint64_t)i, 11);
    for (int64_t i = 0; i < b_size; i++)
        b[i] = f64 ? value_at((uint64_t)i, 12) : (float)value_at((uint64_t)i, 12);
    for (int64_t i = 0; i < c_size; i++) {
        const bool padding = i % ldc >= s.n;
        const double value = f64 ? value_at((uint64_t)i, 13) : (float)value_at((uint64_t)i, 13);
        c_in[i] = padding ? 7.0 : s.beta == 0 ? NAN : value;
    }
    reference_gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, s.alpha, a, lda, b, ldb, s.beta, c_in, ldc,
                   expected, magnitude);
    ops->upload_f64(backend, da, a, a_size);
    ops->upload_f64(backend, db, b, b_size);
    ops->upload_f64(backend, dc, c_in, c_size);
    ops->gemm(backend, s.trans_a, s.trans_b, s.m, s.n, s.k, s.alpha, da, lda, db, ldb, s.beta, dc,
              ldc);
    ops->download_f64(backend, c_out, dc, c_size);
    const double worst = worst_error_f64(c_out, ldc, s.m, s.n, expected, magnitude);
    const double unit = f64 ? 0x1p-53 : 0x1p-24;
    const int64_t blocks = (s.k + K_BLOCK - 1) / K_BLOCK;
    /* float32 sums of products of bf16 roundings (test_bf16_gemm.c) */
    const double bound = bf16 ? 2 * 0x1p-8 + 0x1p-16 + (double)(s.k + 2) * 0x1p-23
                              : (double)(s.k + 2 * blocks + 2) * 2 * unit;
    bool padding_kept = true;
    for (int64_t i = 0; i < c_size; i++)
        padding_kept = padding_kept && (i % ldc < s.n || c_out[i] == 7.0);
    if (!(worst <= bound && padding_kept) && failures_reported++ < 10)
        fprintf(stderr,
                "  %s (%s): ta=%d tb=%d m=%lld n=%lld k=%lld alpha=%g beta=%g pad=%lld: "
                "error %.2e of the terms (bound %.2e), padding %s\n",
                s.what, ax_precision_name(backend->precision), s.trans_a, s.trans_b,
                (long long)s.m, (long long)s.n, (long long)s.k, s.alpha, s.beta,
                (long long)s.pad, worst, bound, padding_kept ? "kept" : "written");
    CHECK(worst <= bound);
    CHECK(padding_kept);
done:
    free(a), free(b), free(c_in), free(c_out), free(expected), free(magnitude);
    ops->free(backend, da), ops->free(backend, db), ops->free(backend, dc);
}

/* AXON_CPU_KERNELS is checked when a CPU backend is created. */
static void check_setting_refusals(void)
{
    ax_backend *backend = NULL;
    const char *refused[] = {"avx512", "Generic", "generic ", "1"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        setenv("AXON_CPU_KERNELS", refused[i], 1);
        CHECK_FAILS(ax_backend_create(AX_PRECISION_F32, ax_device_cpu(), &backend),
                    AX_STATUS_BAD_ARGUMENT, "AXON_CPU_KERNELS='");
        CHECK(strstr(ax_error_message(), refused[i]) != NULL);
        CHECK(strstr(ax_error_message(), "generic") && strstr(ax_error_message(), "auto"));
        CHECK(backend == NULL);
    }
    const char *accepted[] = {"", "auto", "generic"};
    for (size_t i = 0; i < sizeof accepted / sizeof *accepted; i++) {
        setenv("AXON_CPU_KERNELS", accepted[i], 1);
        CHECK_OK(ax_backend_create(AX_PRECISION_F64, ax_device_cpu(), &backend));
        CHECK(backend != NULL);
        if (backend)
            backend->ops->destroy(backend);
        backend = NULL;
    }
    char why[8];
    setenv("AXON_CPU_KERNELS", "fast", 1);
    CHECK(!ax_cpu_kernels_setting_valid(why, sizeof why)); /* a short buffer is cut, ended */
    CHECK(strlen(why) == sizeof why - 1);
    CHECK(!ax_cpu_kernels_setting_valid(NULL, 0));
    unsetenv("AXON_CPU_KERNELS");
    CHECK(ax_cpu_kernels_setting_valid(NULL, 0));
}

/* The kernels decline under generic the shapes they take on their CPU. */
static void check_kernels_declined(void)
{
    enum { SIZE = 64 * 8192 };
    float *a = calloc(SIZE, sizeof(float)), *b = calloc(SIZE, sizeof(float));
    float *c = malloc(sizeof(float) * 64 * 64);
    double *a64 = calloc(SIZE, sizeof(double)), *b64 = calloc(SIZE, sizeof(double));
    double *c64 = malloc(sizeof(double) * 64 * 64);
    CHECK(a && b && c && a64 && b64 && c64);
    if (!(a && b && c && a64 && b64 && c64))
        goto done;
    for (int i = 0; i < 64 * 64; i++)
        c[i] = 7.0f, c64[i] = 7.0;
    CHECK(!ax_cpu_kernels_avx512f() && !ax_cpu_kernels_avx512vl());
    /* tiny_gemm's row kernel (test_tiny_gemm takes these shapes) */
    CHECK(!ax_tiny_gemm_f32(false, true, 9, 3, 8, 1, a, 8, b, 8, 0, c, 3));
    CHECK(!ax_tiny_gemm_f32(false, false, 9, 8, 16, 1, a, 16, b, 8, 0, c, 8));
    CHECK(!ax_tiny_gemm_f64(false, true, 9, 3, 8, 1, a64, 8, b64, 8, 0, c64, 3));
    CHECK(!ax_tiny_gemm_f64(false, false, 9, 8, 16, 1, a64, 16, b64, 8, 0, c64, 8));
    /* skinny_gemm (forward and gradient) and long_gemm */
    CHECK(!ax_skinny_gemm_f32(false, true, 300, 8, 64, 1, a, 64, b, 64, 0, c, 8));
    CHECK(!ax_skinny_gemm_f32(true, false, 8, 64, 64, 1, a, 8, b, 64, 0, c, 64));
    CHECK(!ax_skinny_gemm_f64(false, true, 300, 8, 64, 1, a64, 64, b64, 64, 0, c64, 8));
    CHECK(!ax_long_gemm_f32(true, false, 32, 25, 8192, 1, a, 32, b, 25, 0, c, 25));
    bool untouched = true;
    for (int i = 0; i < 64 * 64; i++)
        untouched = untouched && c[i] == 7.0f && c64[i] == 7.0;
    CHECK(untouched);
    /* the weight-gradient kernel is plain C: every CPU's */
    CHECK(ax_tiny_gemm_f32(true, false, 3, 8, 64, 1, a, 3, b, 8, 0, c, 8));
    CHECK(ax_tiny_gemm_f64(true, false, 3, 8, 64, 1, a64, 3, b64, 8, 0, c64, 8));
done:
    free(a), free(b), free(c), free(a64), free(b64), free(c64);
}

/* The entries that return a status: memory that cannot be had is
 * OUT_OF_MEMORY with the size, never a crash; the rest cannot fail. */
static void check_status_entries(ax_backend *backend)
{
    const ax_backend_ops *ops = backend->ops;
    void *memory = (void *)1;
#if defined(__SANITIZE_ADDRESS__)
    printf("AddressSanitizer build: an impossible size aborts there; not asked for\n");
#else
    CHECK(ops->alloc_status(backend, SIZE_MAX / 2, &memory) == AX_STATUS_OUT_OF_MEMORY);
    CHECK(memory == NULL);
    char size[32];
    snprintf(size, sizeof size, "%zu bytes", SIZE_MAX / 2);
    CHECK(strstr(ax_error_message(), size) && strstr(ax_error_message(), "CPU"));
#endif
    CHECK(ops->alloc_status(backend, 64, &memory) == AX_STATUS_OK && memory != NULL);
    bool zeroed = true;
    for (int i = 0; memory && i < 64; i++)
        zeroed = zeroed && ((unsigned char *)memory)[i] == 0;
    CHECK(zeroed);
    ops->free(backend, memory);
    CHECK(ops->synchronize_status(backend) == AX_STATUS_OK);
    CHECK(ops->status(backend) == AX_STATUS_OK);
}

/* m or n of 0, or no column to sum: nothing is read (NULL operands) or
 * written. */
static void check_empty(ax_backend *backend)
{
    float c[4] = {7, 7, 7, 7};
    double c64[4] = {7, 7, 7, 7};
    void *cc = backend->precision == AX_PRECISION_F64 ? (void *)c64 : (void *)c;
    backend->ops->gemm(backend, false, true, 0, 3, 5, 1.0, NULL, 5, NULL, 5, 0.0, cc, 3);
    backend->ops->gemm(backend, true, false, 2, 0, 5, 1.0, NULL, 2, NULL, 1, 0.0, cc, 1);
    /* column sums of no column (a layer of width 0 is refused earlier) */
    backend->ops->column_sums(backend, cc, cc, 4, 0);
    for (int i = 0; i < 4; i++)
        CHECK(c[i] == 7.0f && c64[i] == 7.0);
}

int main(void)
{
    unsetenv("AXON_BF16_KERNEL"); /* which would decide bf16's kernel instead */
    check_setting_refusals();
    setenv("AXON_CPU_KERNELS", "generic", 1);
    CHECK(ax_cpu_kernels_generic());
    check_kernels_declined();
    const ax_bf16_support bf16 = ax_bf16_support_get();
    CHECK(!bf16.native);
    CHECK(bf16.reason && strstr(bf16.reason, "AXON_CPU_KERNELS=generic"));

    /* the shapes each kernel would take on an AVX-512 CPU, and edges */
    const shape shapes[] = {
        {false, true, 9, 3, 8, 1.0, 0.0, 0, "tiny forward"},
        {false, true, 33, 8, 16, -0.75, 0.5, 3, "tiny forward"},
        {false, false, 5, 7, 13, 1.0, 1.0, 1, "tiny input gradient"},
        {false, false, 1, 2, 1 + 1, 1.0, 0.0, 0, "tiny, one row"},
        {true, false, 3, 8, 2701, 0.5, 0.0, 2, "tiny weight gradient"},
        {false, true, 2701, 8, 1024, 1.0, 0.0, 0, "skinny forward"},
        {false, true, 97, 5, 1031, -0.75, 0.5, 3, "skinny forward, odd width"},
        {true, false, 8, 1000, 700, 1.0, 1.0, 8, "skinny gradient"},
        {true, false, 7, 143, 65, 2.0, 0.0, 1, "skinny gradient, tails"},
        {true, false, 32, 25, 8193, 1.0, 0.0, 0, "long (LeNet's first layer)"},
        {true, false, 16, 31, 4099, 0.5, 0.25, 2, "long, odd k"},
        {false, true, 17, 1, 300, 1.0, 0.0, 1, "one column"},
        {false, true, 40, 6, 1, 1.0, 0.0, 0, "outer product (k = 1)"},
        {true, true, 6, 40, 1, -2.0, 0.0, 2, "outer product, transposed"},
        {false, true, 1, 1, 513, 1.0, 1.0, 0, "one element, three k blocks"},
        {true, true, 19, 23, 29, 1.0, -1.0, 5, "A^T B^T"},
    };
    const ax_precision precisions[] = {AX_PRECISION_F32, AX_PRECISION_F64, AX_PRECISION_BF16};
    for (size_t p = 0; p < sizeof precisions / sizeof *precisions; p++) {
        ax_backend *backend = NULL;
        CHECK_OK(ax_backend_create(precisions[p], ax_device_cpu(), &backend));
        if (!backend)
            continue;
        check_empty(backend);
        check_status_entries(backend);
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            check_backend_shape(backend, shapes[s]);
        backend->ops->destroy(backend);
    }
    return test_finish("test_cpu_generic_kernels");
}
