/* test_opencl_faults.c: the OpenCL plugin when OpenCL calls fail.
 *
 * PoCL never fails by itself, so tests/opencl_fault_shim.c (linked into this
 * test only) makes one chosen call fail with a chosen code. Each failure
 * must reach the caller as a status with a message naming the device, the
 * call and the code by its OpenCL name, and leave nothing behind: the
 * shim's count of live buffers, kernels and queues is back where it was
 * once the backend is destroyed (or its creation refused).
 * - Creation: clCreateContext, clCreateProgramWithSource and clBuildProgram
 *   (before the device's first success: the context and programs are kept
 *   once made), then clCreateCommandQueue, the 5th clCreateKernel and each
 *   of the three clCreateBuffer of the backend's own buffers: refused, an
 *   allocation code as AX_STATUS_OUT_OF_MEMORY, any other as unsupported.
 * - Allocation: clCreateBuffer or the zeroing fill failing is an out-of-
 *   memory refusal that is not sticky (the backend goes on); every code of
 *   the OpenCL 1.2 headers (cl.h, written out here as the reference) is
 *   named in the message by its name, an unknown code as "unknown".
 * - Sticky failures of a live backend: a write, read, copy, kernel argument,
 *   kernel launch, reduction read, clFinish, release, argmax's buffer, and a
 *   CLBlast GEMM whose launch fails: the status names the first failure
 *   (later ones do not replace it), reductions give NaN and downloads NaN,
 *   so no result of a failed device passes for a number.
 * - The statistics (entropy-mi, tensor-mean): each failing call named with
 *   the statistic, nothing left alive, and the next call's sums the same
 *   bits as before the failures.
 * - The device list (in child processes: it is made once per process): no
 *   platform counted or listed means no device, and the refusal says to
 *   install an ICD; a device or platform name not answered is "?".
 * Without OpenCL (no shim, no plugin or no device) it exits 77 saying which. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/plugin.h"
#include "base/error.h"
#include "opencl_fault_shim.h"
#include "test_util.h"

/* AXON_TEST_FAULT_SHIM: tests/CMakeLists.txt links the shim (a build with
 * the OpenCL backend); without it the test skips. */
#ifdef AXON_TEST_FAULT_SHIM
static const ax_device opencl = {.backend = "opencl", .index = 0};

/* OpenCL 1.2's error codes and names (Khronos cl.h, cl_ext.h for -1001). */
static const struct {
    int code;
    const char *name;
} cl_errors[] = {
    {-1, "CL_DEVICE_NOT_FOUND"}, {-2, "CL_DEVICE_NOT_AVAILABLE"},
    {-3, "CL_COMPILER_NOT_AVAILABLE"}, {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
    {-5, "CL_OUT_OF_RESOURCES"}, {-6, "CL_OUT_OF_HOST_MEMORY"},
    {-7, "CL_PROFILING_INFO_NOT_AVAILABLE"}, {-8, "CL_MEM_COPY_OVERLAP"},
    {-9, "CL_IMAGE_FORMAT_MISMATCH"}, {-10, "CL_IMAGE_FORMAT_NOT_SUPPORTED"},
    {-11, "CL_BUILD_PROGRAM_FAILURE"}, {-12, "CL_MAP_FAILURE"},
    {-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET"},
    {-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"}, {-15, "CL_COMPILE_PROGRAM_FAILURE"},
    {-16, "CL_LINKER_NOT_AVAILABLE"}, {-17, "CL_LINK_PROGRAM_FAILURE"},
    {-18, "CL_DEVICE_PARTITION_FAILED"}, {-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"},
    {-30, "CL_INVALID_VALUE"}, {-31, "CL_INVALID_DEVICE_TYPE"}, {-32, "CL_INVALID_PLATFORM"},
    {-33, "CL_INVALID_DEVICE"}, {-34, "CL_INVALID_CONTEXT"},
    {-35, "CL_INVALID_QUEUE_PROPERTIES"}, {-36, "CL_INVALID_COMMAND_QUEUE"},
    {-37, "CL_INVALID_HOST_PTR"}, {-38, "CL_INVALID_MEM_OBJECT"},
    {-39, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR"}, {-40, "CL_INVALID_IMAGE_SIZE"},
    {-41, "CL_INVALID_SAMPLER"}, {-42, "CL_INVALID_BINARY"}, {-43, "CL_INVALID_BUILD_OPTIONS"},
    {-44, "CL_INVALID_PROGRAM"}, {-45, "CL_INVALID_PROGRAM_EXECUTABLE"},
    {-46, "CL_INVALID_KERNEL_NAME"}, {-47, "CL_INVALID_KERNEL_DEFINITION"},
    {-48, "CL_INVALID_KERNEL"}, {-49, "CL_INVALID_ARG_INDEX"}, {-50, "CL_INVALID_ARG_VALUE"},
    {-51, "CL_INVALID_ARG_SIZE"}, {-52, "CL_INVALID_KERNEL_ARGS"},
    {-53, "CL_INVALID_WORK_DIMENSION"}, {-54, "CL_INVALID_WORK_GROUP_SIZE"},
    {-55, "CL_INVALID_WORK_ITEM_SIZE"}, {-56, "CL_INVALID_GLOBAL_OFFSET"},
    {-57, "CL_INVALID_EVENT_WAIT_LIST"}, {-58, "CL_INVALID_EVENT"},
    {-59, "CL_INVALID_OPERATION"}, {-60, "CL_INVALID_GL_OBJECT"},
    {-61, "CL_INVALID_BUFFER_SIZE"}, {-62, "CL_INVALID_MIP_LEVEL"},
    {-63, "CL_INVALID_GLOBAL_WORK_SIZE"}, {-64, "CL_INVALID_PROPERTY"},
    {-65, "CL_INVALID_IMAGE_DESCRIPTOR"}, {-66, "CL_INVALID_COMPILER_OPTIONS"},
    {-67, "CL_INVALID_LINKER_OPTIONS"}, {-68, "CL_INVALID_DEVICE_PARTITION_COUNT"},
    {-1001, "CL_PLATFORM_NOT_FOUND_KHR"}, {-20, "unknown"}, {-9999, "unknown"},
};

enum {
    CL_MEM_OBJECT_ALLOCATION_FAILURE_ = -4,
    CL_OUT_OF_RESOURCES_ = -5,
    CL_OUT_OF_HOST_MEMORY_ = -6,
    CL_BUILD_PROGRAM_FAILURE_ = -11,
    CL_INVALID_PLATFORM_ = -32,
    CL_INVALID_DEVICE_ = -33,
    CL_INVALID_COMMAND_QUEUE_ = -36,
    CL_INVALID_MEM_OBJECT_ = -38,
    CL_INVALID_KERNEL_NAME_ = -46,
    CL_INVALID_ARG_VALUE_ = -50,
    CL_INVALID_WORK_GROUP_SIZE_ = -54,
};

static char device_name[256];

/* What the shim counts alive: every kind must be back here after a test. */
static long live_before[AX_TEST_OCL_OBJECT_KINDS];

static void note_live(void)
{
    for (int kind = 0; kind < AX_TEST_OCL_OBJECT_KINDS; kind++)
        live_before[kind] = ax_test_ocl_live((ax_test_ocl_object)kind);
}

static void check_nothing_left(const char *after)
{
    static const char *const kinds[] = {"buffers", "kernels", "queues"};
    for (int kind = 0; kind < AX_TEST_OCL_OBJECT_KINDS; kind++) {
        const long now = ax_test_ocl_live((ax_test_ocl_object)kind);
        if (now != live_before[kind]) {
            fprintf(stderr, "after %s: %ld OpenCL %s alive, %ld before\n", after, now,
                    kinds[kind], live_before[kind]);
            test_failures++;
        }
    }
}

/* Arms one fault and checks it fired by the time `fired_by` is checked. */
static long fired_at_arming;
static void arm(const char *call, long nth, int code)
{
    fired_at_arming = ax_test_ocl_fault_fired();
    ax_test_ocl_fault_arm(call, nth, code);
}
#define CHECK_FIRED() CHECK(ax_test_ocl_fault_fired() == fired_at_arming + 1)

/* A backend's creation refused by a failing call: status, message, nothing left. */
static void creation_refused(ax_precision precision, const char *call, long nth, int code,
                             ax_status status, const char *expected)
{
    note_live();
    ax_backend *backend = NULL;
    arm(call, nth, code);
    CHECK_FAILS(ax_backend_create(precision, opencl, &backend), status, expected);
    CHECK_FIRED();
    CHECK(backend == NULL);
    CHECK(strstr(ax_error_message(), "OpenCL device 0") != NULL);
    printf("refused (%s #%ld): %s\n", call, nth, ax_error_message());
    check_nothing_left(call);
}

/* The device's context and program: failures before its first success. */
static void test_device_preparation(void)
{
    creation_refused(AX_PRECISION_F32, "clCreateContext", 1, CL_OUT_OF_HOST_MEMORY_,
                     AX_STATUS_DEVICE, "clCreateContext failed: CL_OUT_OF_HOST_MEMORY (-6)");
    creation_refused(AX_PRECISION_F32, "clCreateProgramWithSource", 1, CL_OUT_OF_RESOURCES_,
                     AX_STATUS_DEVICE,
                     "clCreateProgramWithSource failed: CL_OUT_OF_RESOURCES (-5)");
    /* The build itself never ran: its log is empty, and the message says so. */
    creation_refused(AX_PRECISION_F32, "clBuildProgram", 1, CL_BUILD_PROGRAM_FAILURE_,
                     AX_STATUS_DEVICE,
                     "(float32) failed: CL_BUILD_PROGRAM_FAILURE (-11); build log: (empty)");
}

static void test_creation_failures(void)
{
    /* An allocation code is out of memory; anything else, a device that cannot be used. */
    creation_refused(AX_PRECISION_F32, "clCreateCommandQueue", 1, CL_OUT_OF_HOST_MEMORY_,
                     AX_STATUS_OUT_OF_MEMORY,
                     "clCreateCommandQueue failed: CL_OUT_OF_HOST_MEMORY (-6)");
    creation_refused(AX_PRECISION_F32, "clCreateCommandQueue", 1, CL_INVALID_DEVICE_,
                     AX_STATUS_UNSUPPORTED, "clCreateCommandQueue failed: CL_INVALID_DEVICE (-33)");
    /* The 5th kernel of kernels.cl's list; the four made before it are released. */
    creation_refused(AX_PRECISION_F32, "clCreateKernel", 5, CL_INVALID_KERNEL_NAME_,
                     AX_STATUS_UNSUPPORTED,
                     "clCreateKernel (ax_cross_entropy) failed: CL_INVALID_KERNEL_NAME (-46)");
    /* The partials, the column partials, and (on a float64 device) the loss state. */
    ax_device_properties properties;
    CHECK_OK(ax_device_properties_get(opencl, &properties));
    const bool fp64 = (properties.capabilities & AX_DEVICE_CAPABILITY_F64) != 0;
    for (long nth = 1; nth <= (fp64 ? 3 : 2); nth++)
        creation_refused(AX_PRECISION_F32, "clCreateBuffer", nth,
                         CL_MEM_OBJECT_ALLOCATION_FAILURE_, AX_STATUS_OUT_OF_MEMORY,
                         "clCreateBuffer failed: CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)");
}

static ax_backend *create_backend(ax_precision precision)
{
    ax_backend *backend = NULL;
    CHECK_OK(ax_backend_create(precision, opencl, &backend));
    return backend;
}

/* A failed allocation is a refusal, named, not sticky; every code by its name. */
static void test_allocation_failures(void)
{
    note_live();
    ax_backend *backend = create_backend(AX_PRECISION_F64);
    if (!backend)
        return;
    const long buffers = ax_test_ocl_live(AX_TEST_OCL_BUFFERS);
    for (size_t i = 0; i < sizeof cl_errors / sizeof cl_errors[0]; i++) {
        char expected[512];
        snprintf(expected, sizeof expected,
                 "OpenCL device 0 (%s): a buffer of 800 bytes could not be allocated: %s (%d)",
                 device_name, cl_errors[i].name, cl_errors[i].code);
        arm("clCreateBuffer", 1, cl_errors[i].code);
        ax_error_clear();
        void *memory = backend->ops->alloc(backend, 800);
        CHECK_FIRED();
        CHECK(memory == NULL);
        if (!strstr(ax_error_message(), expected)) {
            fprintf(stderr, "code %d: message \"%s\" lacks \"%s\"\n", cl_errors[i].code,
                    ax_error_message(), expected);
            test_failures++;
        }
    }
    CHECK(ax_test_ocl_live(AX_TEST_OCL_BUFFERS) == buffers);
    /* The zeroing fill failing after the buffer was made: the buffer is released. */
    arm("clEnqueueFillBuffer", 1, CL_OUT_OF_RESOURCES_);
    void *memory = (void *)&memory;
    CHECK_FAILS(ax_backend_alloc(backend, 800, "the fault's buffer", &memory),
                AX_STATUS_OUT_OF_MEMORY, "the fault's buffer: ");
    CHECK_FIRED();
    CHECK(memory == NULL);
    CHECK(strstr(ax_error_message(), "no room for 800 bytes") != NULL);
    CHECK(ax_test_ocl_live(AX_TEST_OCL_BUFFERS) == buffers);
    /* Not sticky: the backend allocates and computes after it. */
    CHECK_OK(backend->ops->status(backend));
    CHECK_OK(ax_backend_alloc(backend, 3 * sizeof(double), "three doubles", &memory));
    if (memory) {
        const double values[3] = {1.0, 2.0, 3.0};
        backend->ops->upload_f64(backend, memory, values, 3);
        CHECK(backend->ops->dot(backend, 3, memory, memory) == 14.0);
        backend->ops->free(backend, memory);
    }
    CHECK_OK(backend->ops->status(backend));
    backend->ops->destroy(backend);
    check_nothing_left("the allocation failures");
}

/* One sticky failure: `run` makes the armed call fail on a fresh backend
 * with two buffers (x = 1 2 3, y = 4 5 6). */
typedef struct fixture {
    ax_backend *backend;
    void *x, *y;
} fixture;

static bool fixture_make(fixture *f, ax_precision precision)
{
    f->backend = create_backend(precision);
    if (!f->backend)
        return false;
    const double x[3] = {1.0, 2.0, 3.0}, y[3] = {4.0, 5.0, 6.0};
    CHECK_OK(ax_backend_alloc(f->backend, 3 * f->backend->real_size, "x", &f->x));
    CHECK_OK(ax_backend_alloc(f->backend, 3 * f->backend->real_size, "y", &f->y));
    f->backend->ops->upload_f64(f->backend, f->x, x, 3);
    f->backend->ops->upload_f64(f->backend, f->y, y, 3);
    CHECK_OK(ax_backend_synchronize(f->backend));
    return true;
}

/* After the failure: its status and message, and no number passes for a result. */
static void check_sticky(fixture *f, ax_status status, const char *expected)
{
    ax_backend *backend = f->backend;
    CHECK_FIRED();
    CHECK_FAILS(backend->ops->status(backend), status, expected);
    CHECK(strstr(ax_error_message(), "the results since then are void") != NULL);
    printf("sticky: %s\n", ax_error_message());
    CHECK(isnan(backend->ops->dot(backend, 3, f->x, f->y)));
    double back[3] = {0.0, 0.0, 0.0};
    backend->ops->download_f64(backend, back, f->x, 3);
    CHECK(isnan(back[0]) && isnan(back[1]) && isnan(back[2]));
    /* An allocation that fails after it reports the first failure, not its own. */
    void *memory = &memory;
    const long fired = fired_at_arming;
    arm("clCreateBuffer", 1, CL_MEM_OBJECT_ALLOCATION_FAILURE_);
    CHECK_FAILS(ax_backend_alloc(backend, 64, "a later buffer", &memory), status, expected);
    CHECK_FIRED();
    CHECK(memory == NULL);
    fired_at_arming = fired;
    /* A second failure does not replace the first. */
    arm("clFinish", 1, CL_INVALID_COMMAND_QUEUE_);
    CHECK_FAILS(ax_backend_synchronize(backend), status, expected);
}

static void fixture_free(fixture *f)
{
    f->backend->ops->free(f->backend, f->x);
    f->backend->ops->free(f->backend, f->y);
    f->backend->ops->destroy(f->backend);
}

static void test_sticky_failures(ax_precision precision)
{
    fixture f;
    double values[3];

    note_live();
    if (!fixture_make(&f, precision))
        return;
    arm("clEnqueueWriteBuffer", 1, CL_OUT_OF_RESOURCES_);
    f.backend->ops->upload_f64(f.backend, f.x, (const double[]){7.0, 8.0, 9.0}, 3);
    check_sticky(&f, AX_STATUS_OUT_OF_MEMORY, "clEnqueueWriteBuffer failed: CL_OUT_OF_RESOURCES (-5)");
    fixture_free(&f);
    check_nothing_left("a failed write");

    if (!fixture_make(&f, precision))
        return;
    arm("clEnqueueReadBuffer", 1, CL_INVALID_COMMAND_QUEUE_);
    f.backend->ops->download_f64(f.backend, values, f.y, 3);
    CHECK(isnan(values[0]) && isnan(values[1]) && isnan(values[2]));
    check_sticky(&f, AX_STATUS_DEVICE, "clEnqueueReadBuffer failed: CL_INVALID_COMMAND_QUEUE (-36)");
    fixture_free(&f);

    if (!fixture_make(&f, precision))
        return;
    arm("clEnqueueCopyBuffer", 1, CL_INVALID_MEM_OBJECT_);
    f.backend->ops->copy(f.backend, f.x, f.y, 3);
    check_sticky(&f, AX_STATUS_DEVICE, "clEnqueueCopyBuffer failed: CL_INVALID_MEM_OBJECT (-38)");
    fixture_free(&f);

    /* A kernel launch: the reduction's result is NaN, the message names the kernel. */
    if (!fixture_make(&f, precision))
        return;
    arm("clEnqueueNDRangeKernel", 1, CL_INVALID_WORK_GROUP_SIZE_);
    CHECK(isnan(f.backend->ops->dot(f.backend, 3, f.x, f.y)));
    check_sticky(&f, AX_STATUS_DEVICE,
                 "clEnqueueNDRangeKernel (kernel dot, 256 work-items) failed: "
                 "CL_INVALID_WORK_GROUP_SIZE (-54)");
    fixture_free(&f);

    if (!fixture_make(&f, precision))
        return;
    arm("clSetKernelArg", 2, CL_INVALID_ARG_VALUE_);
    CHECK(isnan(f.backend->ops->dot(f.backend, 3, f.x, f.y)));
    check_sticky(&f, AX_STATUS_DEVICE,
                 "clSetKernelArg (kernel dot, argument 1) failed: CL_INVALID_ARG_VALUE (-50)");
    fixture_free(&f);

    /* The reduction's partial sums cannot be read back. */
    if (!fixture_make(&f, precision))
        return;
    arm("clEnqueueReadBuffer", 1, CL_OUT_OF_RESOURCES_);
    CHECK(isnan(f.backend->ops->dot(f.backend, 3, f.x, f.y)));
    check_sticky(&f, AX_STATUS_OUT_OF_MEMORY, "clEnqueueReadBuffer failed: CL_OUT_OF_RESOURCES (-5)");
    fixture_free(&f);

    if (!fixture_make(&f, precision))
        return;
    arm("clFinish", 1, CL_INVALID_COMMAND_QUEUE_);
    CHECK_FAILS(ax_backend_synchronize(f.backend), AX_STATUS_DEVICE,
                "clFinish failed: CL_INVALID_COMMAND_QUEUE (-36)");
    fired_at_arming = ax_test_ocl_fault_fired() - 1;
    check_sticky(&f, AX_STATUS_DEVICE, "clFinish failed: CL_INVALID_COMMAND_QUEUE (-36)");
    fixture_free(&f);

    /* A release refused: reported, not hidden (the driver still freed it). */
    if (!fixture_make(&f, precision))
        return;
    arm("clReleaseMemObject", 1, CL_INVALID_MEM_OBJECT_);
    f.backend->ops->free(f.backend, f.y);
    f.y = NULL;
    CHECK_FIRED();
    CHECK_FAILS(f.backend->ops->status(f.backend), AX_STATUS_DEVICE,
                "clReleaseMemObject failed: CL_INVALID_MEM_OBJECT (-38)");
    fixture_free(&f);

    /* argmax's buffer of indices cannot be made: sticky, and no index is made up. */
    if (!fixture_make(&f, precision))
        return;
    int32_t indices[1] = {-7};
    arm("clCreateBuffer", 1, CL_MEM_OBJECT_ALLOCATION_FAILURE_);
    f.backend->ops->argmax_rows(f.backend, f.x, indices, 1, 3);
    check_sticky(&f, AX_STATUS_OUT_OF_MEMORY,
                 "clCreateBuffer failed: CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)");
    fixture_free(&f);

    /* argmax's read of the indices: zeros, not what was there before. */
    if (!fixture_make(&f, precision))
        return;
    arm("clEnqueueReadBuffer", 1, CL_INVALID_COMMAND_QUEUE_);
    f.backend->ops->argmax_rows(f.backend, f.x, indices, 1, 3);
    CHECK(indices[0] == 0);
    check_sticky(&f, AX_STATUS_DEVICE, "clEnqueueReadBuffer failed: CL_INVALID_COMMAND_QUEUE (-36)");
    fixture_free(&f);

    /* Downloads to float: NaN after a failed read, as to double. */
    if (!fixture_make(&f, precision))
        return;
    float floats[3] = {1.0f, 1.0f, 1.0f};
    arm("clEnqueueReadBuffer", 1, CL_OUT_OF_RESOURCES_);
    f.backend->ops->download_f32(f.backend, floats, f.y, 3);
    CHECK(isnan(floats[0]) && isnan(floats[1]) && isnan(floats[2]));
    check_sticky(&f, AX_STATUS_OUT_OF_MEMORY, "clEnqueueReadBuffer failed: CL_OUT_OF_RESOURCES (-5)");
    fixture_free(&f);

    /* Bytes written as they are (data sets on the device): a failed write is sticky too. */
    if (!fixture_make(&f, precision))
        return;
    arm("clEnqueueWriteBuffer", 1, CL_INVALID_MEM_OBJECT_);
    f.backend->ops->write_bytes(f.backend, f.x, "12345678", 8);
    check_sticky(&f, AX_STATUS_DEVICE, "clEnqueueWriteBuffer failed: CL_INVALID_MEM_OBJECT (-38)");
    fixture_free(&f);

    /* The loss kept on the device (float64 devices): its read fails, the total is NaN. */
    if (!fixture_make(&f, precision))
        return;
    if (f.backend->ops->loss_defer(f.backend, true)) {
        f.backend->ops->loss_reset(f.backend, 0.0);
        double total = 0.0, bad_value = 0.0;
        int64_t first_bad = 7;
        f.backend->ops->loss_read(f.backend, &total, &first_bad, &bad_value);
        CHECK(total == 0.0 && first_bad == -1); /* read back as reset */
        arm("clEnqueueReadBuffer", 1, CL_INVALID_COMMAND_QUEUE_);
        f.backend->ops->loss_read(f.backend, &total, &first_bad, &bad_value);
        CHECK(isnan(total) && first_bad == -1);
        f.backend->ops->loss_defer(f.backend, false);
        check_sticky(&f, AX_STATUS_DEVICE,
                     "clEnqueueReadBuffer failed: CL_INVALID_COMMAND_QUEUE (-36)");
        /* After the failure no read is tried: NaN again. */
        total = 0.0;
        f.backend->ops->loss_read(f.backend, &total, &first_bad, &bad_value);
        CHECK(isnan(total) && first_bad == -1);
    }
    fixture_free(&f);

    /* A pointer that is no buffer of the backend handed to free: an axon bug, reported. */
    if (!fixture_make(&f, precision))
        return;
    f.backend->ops->free(f.backend, (char *)f.y + 8);
    fired_at_arming = ax_test_ocl_fault_fired() - 1; /* no fault armed: the plugin's own check */
    check_sticky(&f, AX_STATUS_DEVICE, "free was given ");
    fixture_free(&f);

    /* CLBlast's own refusals (a leading dimension smaller than a row, a
     * buffer smaller than its matrix: axon bugs if they ever came): each code
     * by its name. x and y hold 3 reals; C is x. */
    static const struct {
        int64_t m, k, lda, ldb, ldc;
        const char *name;
    } refusals[] = {
        {1, 3, 1, 1, 1, "CLBlastInvalidLeadDimA ("},
        {1, 3, 3, 0, 1, "CLBlastInvalidLeadDimB ("},
        {1, 3, 3, 1, 0, "CLBlastInvalidLeadDimC ("},
        {2, 3, 3, 1, 1, "CLBlastInsufficientMemoryA ("},
        {1, 3, 3, 2, 1, "CLBlastInsufficientMemoryB ("},
    };
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        if (!fixture_make(&f, precision))
            return;
        f.backend->ops->gemm(f.backend, false, false, refusals[i].m, 1, refusals[i].k, 1.0, f.x,
                             refusals[i].lda, f.y, refusals[i].ldb, 0.0, f.x, refusals[i].ldc);
        fired_at_arming = ax_test_ocl_fault_fired() - 1;
        char expected[96];
        snprintf(expected, sizeof expected, "gemm failed: %s", refusals[i].name);
        check_sticky(&f, AX_STATUS_DEVICE, expected);
        fixture_free(&f);
    }

    /* CLBlast's GEMM whose own kernel launch fails: its code, named, through clblast_check. */
    if (!fixture_make(&f, precision))
        return;
    arm("clEnqueueNDRangeKernel", 1, CL_OUT_OF_RESOURCES_);
    /* (1, 1) = (1, 3) x (3, 1): x . y */
    f.backend->ops->gemm(f.backend, false, false, 1, 1, 3, 1.0, f.x, 3, f.y, 1, 0.0, f.x, 1);
    check_sticky(&f, AX_STATUS_DEVICE, "gemm failed: CL_OUT_OF_RESOURCES (-5)");
    fixture_free(&f);
    check_nothing_left("the sticky failures");
}

/* The device list is made once per process: its failures run in children
 * (fork before this process asks anything of OpenCL), each ending with its
 * own verdict as exit status. */
static int in_child(void (*body)(void))
{
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) {
        body();
        exit(test_failures ? 1 : 0); /* exit, not _exit: the coverage counters are written */
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void no_device_found(void)
{
    ax_backend *backend = NULL;
    CHECK(ax_device_count("opencl") == 0);
    CHECK_FIRED();
    CHECK_FAILS(ax_backend_create(AX_PRECISION_F32, opencl, &backend), AX_STATUS_UNSUPPORTED,
                "no OpenCL device 0: this machine has no OpenCL platform with a device (install "
                "an ICD");
    CHECK(backend == NULL);
}

static void platforms_uncounted(void)
{
    arm("clGetPlatformIDs", 1, CL_OUT_OF_HOST_MEMORY_);
    no_device_found();
}

static void platforms_unlisted(void)
{
    arm("clGetPlatformIDs", 2, CL_OUT_OF_HOST_MEMORY_);
    no_device_found();
}

/* Device 0's name and platform name unanswered: "?" in their place, and the device still listed. */
static void names_unanswered(void)
{
    arm("clGetDeviceInfo", 1, CL_INVALID_DEVICE_);
    ax_device_properties properties;
    CHECK_OK(ax_device_properties_get(opencl, &properties));
    CHECK_FIRED();
    CHECK(strcmp(properties.name, "?") == 0);
    CHECK(strncmp(properties.description, "? (", 3) == 0);
}

static void platform_unanswered(void)
{
    arm("clGetPlatformInfo", 1, CL_INVALID_PLATFORM_);
    char text[512];
    CHECK_OK(ax_device_info(opencl, text, sizeof text));
    CHECK_FIRED();
    CHECK(strstr(text, ", ?, OpenCL") != NULL);
    printf("described: %s\n", text);
}

static void test_device_list_failures(void)
{
    CHECK(in_child(platforms_uncounted) == 0);
    CHECK(in_child(platforms_unlisted) == 0);
    CHECK(in_child(names_unanswered) == 0);
    CHECK(in_child(platform_unanswered) == 0);
}

/* The statistics (opencl_stats.c): each call makes and releases its own
 * queue, kernel and buffers; a failing call is named with the statistic,
 * and after it a call without a fault gives the same bits as before. */
enum { STATS_ROWS = 64, STATS_D = 4 };

static ax_status entropy_mi(const float *x, const float *y, double sums[3])
{
    return ax_backend_stats_entropy_mi("opencl", 0, x, y, STATS_ROWS, STATS_D, sums, NULL);
}

static ax_status tensor_mean(const float *x, const float *y, double sums[3])
{
    (void)sums;
    static float tensor[STATS_D * STATS_D * STATS_D];
    return ax_backend_stats_tensor_mean("opencl", 0, x, y, x, STATS_ROWS, STATS_D, tensor, NULL);
}

static void stats_refused(ax_status (*statistic)(const float *, const float *, double[3]),
                          const float *x, const float *y, const char *call, long nth, int code,
                          ax_status status, const char *expected)
{
    note_live();
    double sums[3] = {0.0, 0.0, 0.0};
    arm(call, nth, code);
    CHECK_FAILS(statistic(x, y, sums), status, expected);
    CHECK_FIRED();
    printf("statistic refused (%s #%ld): %s\n", call, nth, ax_error_message());
    check_nothing_left(call);
}

static void test_statistics_failures(void)
{
    float x[STATS_ROWS * STATS_D], y[STATS_ROWS * STATS_D];
    for (int i = 0; i < STATS_ROWS * STATS_D; i++) {
        x[i] = 0.05f + 0.9f * (float)((i * 37) % 101) / 101.0f;
        y[i] = 0.05f + 0.9f * (float)((i * 53) % 103) / 103.0f;
    }
    double before[3], after[3];
    CHECK_OK(entropy_mi(x, y, before));

    const char *const mi = "entropy-mi on OpenCL device 0";
    stats_refused(entropy_mi, x, y, "clCreateCommandQueue", 1, CL_INVALID_DEVICE_,
                  AX_STATUS_DEVICE, "clCreateCommandQueue failed: CL_INVALID_DEVICE (-33)");
    stats_refused(entropy_mi, x, y, "clCreateKernel", 1, CL_INVALID_KERNEL_NAME_, AX_STATUS_DEVICE,
                  "clCreateKernel failed: CL_INVALID_KERNEL_NAME (-46)");
    stats_refused(entropy_mi, x, y, "clCreateBuffer", 2, CL_MEM_OBJECT_ALLOCATION_FAILURE_,
                  AX_STATUS_OUT_OF_MEMORY,
                  "a block of rows of y of 1024 bytes could not be allocated: "
                  "CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)");
    stats_refused(entropy_mi, x, y, "clEnqueueWriteBuffer", 2, CL_OUT_OF_RESOURCES_,
                  AX_STATUS_OUT_OF_MEMORY, "clEnqueueWriteBuffer failed: CL_OUT_OF_RESOURCES (-5)");
    stats_refused(entropy_mi, x, y, "clSetKernelArg", 3, CL_INVALID_ARG_VALUE_, AX_STATUS_DEVICE,
                  "clSetKernelArg failed: CL_INVALID_ARG_VALUE (-50)");
    stats_refused(entropy_mi, x, y, "clEnqueueNDRangeKernel", 1, CL_INVALID_WORK_GROUP_SIZE_,
                  AX_STATUS_DEVICE,
                  "clEnqueueNDRangeKernel (ax_entropy_rows) failed: CL_INVALID_WORK_GROUP_SIZE");
    stats_refused(entropy_mi, x, y, "clFinish", 2, CL_INVALID_COMMAND_QUEUE_, AX_STATUS_DEVICE,
                  "clFinish failed: CL_INVALID_COMMAND_QUEUE (-36)");
    stats_refused(entropy_mi, x, y, "clEnqueueReadBuffer", 1, CL_INVALID_COMMAND_QUEUE_,
                  AX_STATUS_DEVICE, "clEnqueueReadBuffer failed: CL_INVALID_COMMAND_QUEUE (-36)");
    CHECK(strstr(ax_error_message(), mi) != NULL);
    CHECK_OK(entropy_mi(x, y, after));
    CHECK(memcmp(before, after, sizeof before) == 0);

    const char *const mean = "tensor-mean on OpenCL device 0";
    stats_refused(tensor_mean, x, y, "clCreateBuffer", 5, CL_MEM_OBJECT_ALLOCATION_FAILURE_,
                  AX_STATUS_OUT_OF_MEMORY,
                  "the d^3 tensor of 256 bytes could not be allocated: "
                  "CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)");
    stats_refused(tensor_mean, x, y, "clEnqueueWriteBuffer", 3, CL_OUT_OF_RESOURCES_,
                  AX_STATUS_OUT_OF_MEMORY, "clEnqueueWriteBuffer failed: CL_OUT_OF_RESOURCES (-5)");
    stats_refused(tensor_mean, x, y, "clEnqueueNDRangeKernel", 1, CL_INVALID_WORK_GROUP_SIZE_,
                  AX_STATUS_DEVICE,
                  "clEnqueueNDRangeKernel (ax_khatri_rao) failed: CL_INVALID_WORK_GROUP_SIZE");
    /* The second launch is CLBlast's own, inside its SGEMM. */
    stats_refused(tensor_mean, x, y, "clEnqueueNDRangeKernel", 2, CL_OUT_OF_RESOURCES_,
                  AX_STATUS_DEVICE, "CLBlastSgemm failed: CL_OUT_OF_RESOURCES (-5)");
    stats_refused(tensor_mean, x, y, "clEnqueueReadBuffer", 1, CL_INVALID_COMMAND_QUEUE_,
                  AX_STATUS_DEVICE, "clEnqueueReadBuffer failed: CL_INVALID_COMMAND_QUEUE (-36)");
    CHECK(strstr(ax_error_message(), mean) != NULL);
    CHECK_OK(tensor_mean(x, y, after));
}

static void count_devices(void) { exit(ax_device_count("opencl") > 0 ? 0 : 77); }

int main(void)
{
    /* Asked in a child, so that this process's list is still to be made. */
    if (in_child(count_devices) == 77)
        TEST_SKIP("no OpenCL device (the plugin or an ICD is missing: pocl-opencl-icd)");
    test_device_list_failures();
    const int devices = ax_device_count("opencl");
    if (devices < 1)
        TEST_SKIP("no OpenCL device (the plugin or an ICD is missing: pocl-opencl-icd)");
    ax_device_properties properties;
    CHECK_OK(ax_device_properties_get(opencl, &properties));
    snprintf(device_name, sizeof device_name, "%s", properties.name);
    test_device_preparation();
    test_creation_failures();
    test_allocation_failures();
    test_sticky_failures(AX_PRECISION_F32);
    test_sticky_failures(AX_PRECISION_F64);
    test_statistics_failures();
    CHECK(ax_test_ocl_fault_fired() > 0);
    return test_finish("test_opencl_faults");
}
#else
int main(void) { TEST_SKIP("this build has no OpenCL backend, hence no OpenCL fault shim"); }
#endif
