/* cuda_backend.c: the CUDA plugin's table (ax_backend_plugin_cuda, at the end)
 * and the CUDA backend's table of operations: device memory, the stream every
 * operation is queued on, cuBLAS GEMMs, copies and the sticky error; the
 * elementwise and reduction kernels live in the *.cu files beside it (one
 * per group of operations) and the transfers in gather.cu.
 *
 * Row-major matrices meet column-major cuBLAS through the identity
 * C^T = op(B)^T op(A)^T: a row-major (m, n) C is a column-major (n, m) C^T,
 * so C = op(A) op(B) is computed as cublas gemm(op_b, op_a, n, m, k, B, A). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_internal.h"
#include "base/error.h"

bool ax_cuda_check(ax_cuda_backend *cb, int code, bool is_cublas, const char *where)
{
    if (code == 0)
        return false;
    if (!cb->error) {
        /* `where` is the call's source text (AX_CUDA_CHECK) or a kernel's
         * name: the message keeps the function's name, not its arguments. */
        int name_length = (int)strcspn(where, "(");
        while (name_length > 0 && where[name_length - 1] == ' ')
            name_length--;
        cb->error = code;
        snprintf(cb->error_text, sizeof cb->error_text, "%.*s failed: %s (%d): %s", name_length,
                 where,
                 is_cublas ? cublasGetStatusName((cublasStatus_t)code)
                           : cudaGetErrorName((cudaError_t)code),
                 code,
                 is_cublas ? cublasGetStatusString((cublasStatus_t)code)
                           : cudaGetErrorString((cudaError_t)code));
    }
    return true;
}

/* Operations may come from any host thread; the device a thread works on is
 * per thread, so each entry point selects the backend's device first. */
static ax_cuda_backend *enter(ax_backend *backend)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    AX_CUDA_CHECK(cb, cudaSetDevice(cb->device));
    return cb;
}

int ax_cuda_stage_acquire(ax_cuda_backend *cb)
{
    int index = cb->next_stage;
    cb->next_stage = 1 - index;
    AX_CUDA_CHECK(cb, cudaEventSynchronize(cb->stage_free[index]));
    return index;
}

void ax_cuda_stage_release(ax_cuda_backend *cb, int index)
{
    AX_CUDA_CHECK(cb, cudaEventRecord(cb->stage_free[index], cb->stream));
}

static void *cuda_alloc(ax_backend *backend, size_t bytes)
{
    ax_cuda_backend *cb = enter(backend);
    void *memory = NULL;
    if (bytes == 0)
        bytes = 1;
    /* cudaMalloc aligns to 256 bytes (the table asks for 64). A failed
     * allocation is the caller's out-of-memory, not a sticky failure. */
    if (cudaMalloc(&memory, bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    if (AX_CUDA_CHECK(cb, cudaMemsetAsync(memory, 0, bytes, cb->stream))) {
        cudaFree(memory);
        return NULL;
    }
    return memory;
}

static void cuda_free(ax_backend *backend, void *memory)
{
    if (!memory)
        return;
    ax_cuda_backend *cb = enter(backend);
    /* cudaFree waits for the device, so no queued kernel still uses it. */
    AX_CUDA_CHECK(cb, cudaFree(memory));
}

static void cuda_copy(ax_backend *backend, void *dst, const void *src, int64_t count)
{
    ax_cuda_backend *cb = enter(backend);
    if (count > 0 && dst != src)
        AX_CUDA_CHECK(cb, cudaMemcpyAsync(dst, src, (size_t)count * backend->real_size,
                                          cudaMemcpyDeviceToDevice, cb->stream));
}

static void cuda_gemm(ax_backend *backend, bool trans_a, bool trans_b, int64_t m, int64_t n,
                      int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                      int64_t ldb, double beta, void *c, int64_t ldc)
{
    ax_cuda_backend *cb = enter(backend);
    if (m <= 0 || n <= 0)
        return;
    cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (backend->precision == AX_PRECISION_F64) {
        AX_CUBLAS_CHECK(cb, cublasDgemm(cb->blas, op_b, op_a, (int)n, (int)m, (int)k, &alpha, b,
                                        (int)ldb, a, (int)lda, &beta, c, (int)ldc));
    } else if (backend->precision == AX_PRECISION_BF16) {
        /* Float32 matrices, products of their bfloat16 roundings on the
         * tensor cores, float32 sums: the CPU's bf16 (bf16_gemm.c). */
        float alpha_f = (float)alpha, beta_f = (float)beta;
        AX_CUBLAS_CHECK(cb, cublasGemmEx(cb->blas, op_b, op_a, (int)n, (int)m, (int)k, &alpha_f, b,
                                         CUDA_R_32F, (int)ldb, a, CUDA_R_32F, (int)lda, &beta_f, c,
                                         CUDA_R_32F, (int)ldc, CUBLAS_COMPUTE_32F_FAST_16BF,
                                         CUBLAS_GEMM_DEFAULT));
    } else {
        float alpha_f = (float)alpha, beta_f = (float)beta;
        AX_CUBLAS_CHECK(cb, cublasSgemm(cb->blas, op_b, op_a, (int)n, (int)m, (int)k, &alpha_f, b,
                                        (int)ldb, a, (int)lda, &beta_f, c, (int)ldc));
    }
}

static void cuda_synchronize(ax_backend *backend)
{
    ax_cuda_backend *cb = enter(backend);
    AX_CUDA_CHECK(cb, cudaStreamSynchronize(cb->stream));
}

/* The first failure, kept by ax_cuda_check; the error stays (CUDA's own
 * sticky errors, an illegal address for one, leave the context unusable). */
static ax_status cuda_status(ax_backend *backend)
{
    const ax_cuda_backend *cb = ax_cuda(backend);
    if (!cb->error)
        return AX_STATUS_OK;
    return ax_fail(AX_STATUS_DEVICE, "CUDA device %d: %s; the results since then are void",
                   cb->device, cb->error_text);
}

static ax_status cuda_alloc_status(ax_backend *backend, size_t bytes, void **memory)
{
    *memory = cuda_alloc(backend, bytes);
    if (*memory)
        return AX_STATUS_OK;
    const ax_cuda_backend *cb = ax_cuda(backend);
    if (cb->error)
        return cuda_status(backend);
    size_t free_bytes = 0, total_bytes = 0;
    (void)cudaMemGetInfo(&free_bytes, &total_bytes);
    (void)cudaGetLastError();
    return ax_fail(AX_STATUS_OUT_OF_MEMORY, "CUDA device %d: no room for %zu bytes (%.2f of its "
                   "%.2f GiB free)", cb->device, bytes, (double)free_bytes / 1073741824.0,
                   (double)total_bytes / 1073741824.0);
}

static ax_status cuda_synchronize_status(ax_backend *backend)
{
    cuda_synchronize(backend);
    return cuda_status(backend);
}

static void cuda_destroy(ax_backend *backend)
{
    if (!backend)
        return;
    ax_cuda_backend *cb = ax_cuda(backend);
    cudaSetDevice(cb->device);
    if (cb->stream)
        cudaStreamSynchronize(cb->stream);
    for (int i = 0; i < 2; i++) {
        if (cb->stage_free[i])
            cudaEventDestroy(cb->stage_free[i]);
        cudaFreeHost(cb->host_stage[i]);
        cudaFree(cb->device_stage[i]);
    }
    cudaFree(cb->partials);
    cudaFree(cb->result);
    cudaFree(cb->column_partials);
    cudaFreeHost(cb->host_result);
    if (cb->blas)
        cublasDestroy(cb->blas);
    if (cb->stream)
        cudaStreamDestroy(cb->stream);
    free(cb);
}

static const ax_backend_ops cuda_ops = {
    .name = "cuda",
    .alloc = cuda_alloc,
    .free = cuda_free,
    .upload_f64 = ax_cuda_upload_f64,
    .download_f64 = ax_cuda_download_f64,
    .download_f32 = ax_cuda_download_f32,
    .copy = cuda_copy,
    .gather_rows = ax_cuda_gather_rows,
    .gather_labels = ax_cuda_gather_labels,
    .gemm = cuda_gemm,
    .bias_activation = ax_cuda_bias_activation,
    .activation_backward = ax_cuda_activation_backward,
    .column_sums = ax_cuda_column_sums,
    .cross_entropy = ax_cuda_cross_entropy,
    .binary_cross_entropy = ax_cuda_binary_cross_entropy,
    .squared_error = ax_cuda_squared_error,
    .dropout = ax_cuda_dropout,
    .axpy = ax_cuda_axpy,
    .dot = ax_cuda_dot,
    .scale = ax_cuda_scale,
    .all_finite = ax_cuda_all_finite,
    .sgd_update = ax_cuda_sgd_update,
    .adam_update = ax_cuda_adam_update,
    .argmax_rows = ax_cuda_argmax_rows,
    .im2col = ax_cuda_im2col,
    .col2im = ax_cuda_col2im,
    .pool_forward = ax_cuda_pool_forward,
    .pool_backward = ax_cuda_pool_backward,
    .transpose = ax_cuda_transpose,
    .synchronize = cuda_synchronize,
    .status = cuda_status,
    .destroy = cuda_destroy,
    .write_bytes = ax_cuda_write_bytes,
    .gather_rows_device = ax_cuda_gather_rows_device,
    .gather_labels_device = ax_cuda_gather_labels_device,
    .loss_defer = ax_cuda_loss_defer,
    .loss_accumulate = ax_cuda_loss_accumulate,
    .loss_reset = ax_cuda_loss_reset,
    .loss_read = ax_cuda_loss_read,
    .alloc_status = cuda_alloc_status,
    .synchronize_status = cuda_synchronize_status,
    .l1_penalty = ax_cuda_l1_penalty,
    .clamp = ax_cuda_clamp,
    .reduce = ax_cuda_reduce,
};

int ax_backend_cuda_device_count(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return count;
}

static ax_status no_device(int device)
{
    int count = ax_backend_cuda_device_count();
    if (count == 0)
        return ax_fail(AX_STATUS_UNSUPPORTED, "no CUDA device %d: this machine has no CUDA device "
                                              "(or no driver)", device);
    return ax_fail(AX_STATUS_UNSUPPORTED, "no CUDA device %d: this machine has %d (0 to %d)",
                   device, count, count - 1);
}

ax_status ax_backend_cuda_create(ax_precision precision, int device, ax_backend **out)
{
    *out = NULL;
    if (device < 0 || device >= ax_backend_cuda_device_count())
        return no_device(device);
    ax_cuda_backend *cb = calloc(1, sizeof *cb);
    if (!cb)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory creating the CUDA backend");
    cb->base.ops = &cuda_ops;
    cb->base.precision = precision;
    cb->base.real_size = precision == AX_PRECISION_F64 ? sizeof(double) : sizeof(float);
    cb->base.host_memory = false;
    cb->device = device;

    bool ok = !AX_CUDA_CHECK(cb, cudaSetDevice(device)) &&
              !AX_CUDA_CHECK(cb, cudaStreamCreateWithFlags(&cb->stream, cudaStreamNonBlocking)) &&
              !AX_CUBLAS_CHECK(cb, cublasCreate(&cb->blas)) &&
              !AX_CUBLAS_CHECK(cb, cublasSetStream(cb->blas, cb->stream)) &&
              !AX_CUDA_CHECK(cb, cudaMalloc((void **)&cb->partials,
                                            AX_CUDA_REDUCE_BLOCKS * sizeof(double))) &&
              !AX_CUDA_CHECK(cb, cudaMalloc((void **)&cb->result, AX_CUDA_RESULTS * sizeof(double))) &&
              !AX_CUDA_CHECK(cb, cudaMalloc((void **)&cb->column_partials,
                                            AX_CUDA_COLUMN_PARTIALS * sizeof(double))) &&
              !AX_CUDA_CHECK(cb, cudaMallocHost((void **)&cb->host_result, AX_CUDA_RESULTS * sizeof(double)));
    for (int i = 0; i < 2 && ok; i++)
        ok = !AX_CUDA_CHECK(cb, cudaMallocHost(&cb->host_stage[i], AX_CUDA_STAGE_BYTES)) &&
             !AX_CUDA_CHECK(cb, cudaMalloc(&cb->device_stage[i], AX_CUDA_STAGE_BYTES)) &&
             !AX_CUDA_CHECK(cb, cudaEventCreateWithFlags(&cb->stage_free[i],
                                                         cudaEventDisableTiming));
    if (ok) {
        /* Default cuBLAS math: full float32 products, no TF32 (TF32 would
         * break the 1e-3 parity with the CPU; see docs/cuda.md). */
        ok = !AX_CUBLAS_CHECK(cb, cublasSetMathMode(cb->blas, CUBLAS_DEFAULT_MATH));
    }
    if (!ok) {
        char text[sizeof cb->error_text];
        memcpy(text, cb->error_text, sizeof text);
        int code = cb->error;
        cuda_destroy(&cb->base);
        (void)cudaGetLastError();
        return ax_fail(code == (int)cudaErrorMemoryAllocation ? AX_STATUS_OUT_OF_MEMORY
                                                              : AX_STATUS_UNSUPPORTED,
                       "CUDA device %d: %s", device, text);
    }
    *out = &cb->base;
    return AX_STATUS_OK;
}

/* FP32 and FP64 lanes per multiprocessor by compute capability (the CUDA
 * programming guide's throughput table), for the peak figures. */
static void lanes_per_sm(int major, int minor, int *fp32, int *fp64)
{
    *fp32 = 128;
    *fp64 = 2;
    if (major == 6 && minor == 0) {
        *fp32 = 64; *fp64 = 32;
    } else if (major == 7) {
        *fp32 = 64; *fp64 = minor == 0 ? 32 : 2;
    } else if (major == 8 && minor == 0) {
        *fp32 = 64; *fp64 = 32;
    } else if (major == 9 || major == 10) {
        *fp32 = 128; *fp64 = 64;
    }
}

/* The facts of device `device` into *out (ax_device_properties, axon.h). */
static ax_status cuda_properties(int device, ax_device_properties *out)
{
    if (device < 0 || device >= ax_backend_cuda_device_count())
        return no_device(device);
    struct cudaDeviceProp prop;
    int clock_khz = 0;
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device) != cudaSuccess) {
        cudaError_t error = cudaGetLastError();
        return ax_fail(AX_STATUS_UNSUPPORTED, "CUDA device %d: %s", device, cudaGetErrorString(error));
    }
    int fp32, fp64;
    lanes_per_sm(prop.major, prop.minor, &fp32, &fp64);
    /* One fused multiply-add = 2 FLOPs per lane per clock. */
    const double hz = (double)clock_khz * 1e3;
    out->kind = AX_DEVICE_KIND_GPU;
    snprintf(out->name, sizeof out->name, "%.*s", (int)sizeof out->name - 1, prop.name);
    out->memory_bytes = (int64_t)prop.totalGlobalMem;
    out->compute_units = prop.multiProcessorCount;
    out->clock_ghz = hz / 1e9;
    out->peak_f32_gflops = 2.0 * fp32 * prop.multiProcessorCount * hz / 1e9;
    out->peak_f64_gflops = 2.0 * fp64 * prop.multiProcessorCount * hz / 1e9;
    /* bf16 GEMMs on tensor cores from compute capability 8.0 (Ampere) on. */
    out->capabilities = (prop.major >= 8 ? AX_DEVICE_CAPABILITY_BF16 : 0u) |
                        AX_DEVICE_CAPABILITY_F64 | AX_DEVICE_CAPABILITY_IMAGES |
                        AX_DEVICE_CAPABILITY_DEVICE_DATA | AX_DEVICE_CAPABILITY_DEVICE_LOSS;
    snprintf(out->description, sizeof out->description,
             "%s, compute %d.%d, %.1f GiB, %d multiprocessors at %.2f GHz, "
             "peak %.1f TFLOP/s float32, %.1f TFLOP/s float64 (without tensor cores)",
             prop.name, prop.major, prop.minor, (double)prop.totalGlobalMem / 1073741824.0,
             prop.multiProcessorCount, hz / 1e9, out->peak_f32_gflops / 1e3,
             out->peak_f64_gflops / 1e3);
    return AX_STATUS_OK;
}

ax_status ax_backend_cuda_device_info(int device, char *text, size_t capacity)
{
    ax_device_properties properties;
    memset(&properties, 0, sizeof properties);
    AX_TRY(cuda_properties(device, &properties));
    snprintf(text, capacity, "%s", properties.description);
    return AX_STATUS_OK;
}

static ax_status cuda_device_properties(int device, ax_device_properties *out, size_t size)
{
    ax_device_properties properties;
    memset(&properties, 0, sizeof properties);
    AX_TRY(cuda_properties(device, &properties));
    memcpy(out, &properties, size < sizeof properties ? size : sizeof properties);
    return AX_STATUS_OK;
}

static ax_backend_proc cuda_get_proc_address(const char *name)
{
    if (strcmp(name, AX_BACKEND_EXTENSION_STATS_ENTROPY_MI) == 0)
        return (ax_backend_proc)ax_cuda_stats_entropy_mi;
    if (strcmp(name, AX_BACKEND_EXTENSION_STATS_TENSOR_MEAN) == 0)
        return (ax_backend_proc)ax_cuda_stats_tensor_mean;
    return NULL;
}

AX_PLUGIN_EXPORT const ax_backend_plugin ax_backend_plugin_cuda = {
    .abi = AX_BACKEND_PLUGIN_ABI,
    .ops_size = sizeof(ax_backend_ops),
    .name = "cuda",
    .device_count = ax_backend_cuda_device_count,
    .device_info = ax_backend_cuda_device_info,
    .create = ax_backend_cuda_create,
    .init = ax_plugin_host_init,
    .device_properties = cuda_device_properties,
    .get_proc_address = cuda_get_proc_address,
#ifdef AXON_CUDA_VERSION
    .runtime = "CUDA " AXON_CUDA_VERSION,
#endif
};
