/* opencl_internal.h: what the OpenCL plugin's files share: the devices of
 * this process, the backend object, the sticky error, addresses of device
 * memory, and the kernel launcher.
 *
 * Device memory is OpenCL buffers (cl_mem), which are handles, not
 * addresses; but the table of backend.h hands out pointers, and the network
 * code takes views into them (each layer's weights are a pointer into the
 * one parameter arena). So every buffer gets a range of made-up addresses
 * (never dereferenced: host_memory is false), and a pointer into that range
 * is turned back into the buffer and a byte offset at each call
 * (ax_ocl_locate). Kernels take each array as a (buffer, byte offset) pair;
 * CLBlast takes element offsets.
 *
 * One OpenCL context per device and process (the kernels are compiled once
 * per context and precision, and CLBlast caches its programs per context);
 * one in-order command queue per backend. */
#ifndef AX_BACKEND_OPENCL_INTERNAL_H
#define AX_BACKEND_OPENCL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <CL/cl.h>

#include "backend/plugin.h"

/* Work-items per work-group of the reductions (a power of two; smaller on
 * a device that allows fewer). */
#define AX_OCL_GROUP 256
/* Work-groups of a reduction's first pass; the host adds their partial
 * sums in order, so every reduction gives the same bits every run. */
#define AX_OCL_REDUCE_GROUPS 256
/* Doubles of column-sum partials kept on the device (8 MiB). */
#define AX_OCL_COLUMN_PARTIALS (1 << 20)
/* Bytes of the host staging buffer of uploads and downloads. */
#define AX_OCL_STAGE_BYTES ((size_t)8 << 20)

/* One OpenCL device as this process sees it (opencl_devices.c). */
typedef struct ax_ocl_device {
    cl_platform_id platform;
    cl_device_id id;
    char name[256], vendor[128], version[128], platform_name[128], driver[64];
    bool gpu, fp64, unified_memory;
    cl_uint compute_units, clock_mhz, vector_width_f32, vector_width_f64;
    int nv_major, nv_minor; /* compute capability (cl_nv_device_attribute_query); 0 elsewhere */
    cl_ulong memory, max_alloc;
    size_t max_group;
    /* Created on first use, kept until exit. */
    cl_context context;
    cl_program programs[2]; /* [0] float32, [1] float64 */
} ax_ocl_device;

/* The devices, GPUs first (so device 0 is the first GPU when there is one,
 * else the first device), in platform order; 0 without a platform. */
int ax_ocl_device_count(void);
ax_ocl_device *ax_ocl_device_get(int index);
/* The device's context and its program for a precision, made once per
 * process; fails with a message naming the call (and the build log). */
ax_status ax_ocl_device_prepare(int index, ax_precision precision, cl_context *context,
                                cl_program *program);
/* "CL_OUT_OF_RESOURCES" for an OpenCL error code (or "unknown"). */
const char *ax_ocl_error_name(int code);
/* The plugin's device_info (axon.h: ax_device_info). */
ax_status ax_ocl_device_info(int index, char *text, size_t capacity);
/* The plugin's device_properties (plugin.h; axon.h: ax_device_properties). */
ax_status ax_ocl_device_properties(int index, ax_device_properties *out, size_t size);
/* "no OpenCL device N: ..." */
ax_status ax_ocl_no_device(int index);

/* The kernels of kernels.cl, each created once per backend. */
typedef enum ax_ocl_kernel_id {
    AX_OCL_BIAS_ACTIVATION,
    AX_OCL_SOFTMAX,
    AX_OCL_COLUMN_PARTIALS_KERNEL,
    AX_OCL_SUM_CHUNKS,
    AX_OCL_CROSS_ENTROPY,
    AX_OCL_BINARY_CROSS_ENTROPY,
    AX_OCL_SQUARED_ERROR,
    AX_OCL_DROPOUT,
    AX_OCL_AXPY,
    AX_OCL_SCALE,
    AX_OCL_DOT,
    AX_OCL_COUNT_NONFINITE,
    AX_OCL_SGD,
    AX_OCL_ADAM,
    AX_OCL_ARGMAX,
    AX_OCL_IM2COL, /* image.cl */
    AX_OCL_COL2IM,
    AX_OCL_POOL_FORWARD,
    AX_OCL_POOL_BACKWARD,
    AX_OCL_TRANSPOSE,
    AX_OCL_GATHER_ROWS, /* kernels.cl: data sets on the device */
    AX_OCL_GATHER_LABELS,
    AX_OCL_LOSS_FINISH, /* kernels.cl: losses kept on the device (float64 devices only) */
    AX_OCL_LOSS_ACCUMULATE,
    AX_OCL_LOSS_RESET,
    AX_OCL_L1, /* kernels.cl: training strategies */
    AX_OCL_CLAMP,
    AX_OCL_KERNEL_COUNT
} ax_ocl_kernel_id;

/* A buffer and the made-up addresses it answers to. */
typedef struct ax_ocl_buffer {
    uintptr_t address;
    size_t bytes;
    cl_mem memory;
} ax_ocl_buffer;

typedef struct ax_ocl_backend {
    ax_backend base; /* first: the table's functions get &base */
    int index;
    ax_ocl_device *device;
    cl_context context;
    cl_command_queue queue;
    cl_kernel kernels[AX_OCL_KERNEL_COUNT];
    size_t group; /* work-items per group of the reductions */
    bool acc_f64; /* reductions accumulate in double (the device has fp64) */

    /* Buffers by address, in increasing order of address. */
    ax_ocl_buffer *buffers;
    int buffer_count, buffer_capacity;
    uintptr_t next_address;

    cl_mem partials;        /* (AX_OCL_REDUCE_GROUPS) accumulators */
    cl_mem batch_partials;  /* (AX_BACKEND_REDUCE_MAX x AX_OCL_REDUCE_GROUPS): reduce's */
    cl_mem column_partials; /* (AX_OCL_COLUMN_PARTIALS) accumulators */
    cl_mem indices;         /* argmax's int32 results (indices_capacity) */
    size_t indices_capacity;
    void *stage;            /* host (AX_OCL_STAGE_BYTES) */
    /* Losses kept on the device: while defer_losses, the losses leave their
     * sum in loss_state (4 doubles: last sum, total, first bad step, its loss). */
    bool defer_losses;
    cl_mem loss_state;

    /* The first OpenCL or CLBlast failure, kept (backend.h's `status`). */
    int error;
    ax_status error_status;
    char error_text[1024];
} ax_ocl_backend;

static inline ax_ocl_backend *ax_ocl(ax_backend *backend) { return (ax_ocl_backend *)backend; }

/* Records the first failure at `where` (the call's source text, of which
 * the function's name is kept); true when code is not CL_SUCCESS. */
bool ax_ocl_check(ax_ocl_backend *ob, int code, const char *where);
#define AX_OCL_CHECK(ob, call) ax_ocl_check((ob), (int)(call), #call)
/* Records a failure with its own message (the first only). */
void ax_ocl_fail(ax_ocl_backend *ob, int code, ax_status status, const char *format, ...)
    __attribute__((format(printf, 4, 5)));

/* The buffer holding `pointer` and its byte offset there; NULL (and a
 * recorded failure) for a pointer this backend did not hand out. */
cl_mem ax_ocl_locate(ax_ocl_backend *ob, const void *pointer, size_t *offset);

/* A kernel launch being put together: arguments in order, then run. */
typedef struct ax_ocl_launch {
    ax_ocl_backend *ob;
    cl_kernel kernel;
    const char *name;
    cl_uint next;
    bool failed;
} ax_ocl_launch;
ax_ocl_launch ax_ocl_begin(ax_ocl_backend *ob, ax_ocl_kernel_id id, const char *name);
/* An array: two arguments, the buffer and the byte offset (NULL: a dummy). */
void ax_ocl_arg_array(ax_ocl_launch *launch, const void *pointer);
/* A device buffer of the backend's own (partials), offset 0. */
void ax_ocl_arg_buffer(ax_ocl_launch *launch, cl_mem buffer);
/* A real of the backend's precision. */
void ax_ocl_arg_real(ax_ocl_launch *launch, double value);
/* An accumulator (double where the device has fp64, else float). */
void ax_ocl_arg_acc(ax_ocl_launch *launch, double value);
void ax_ocl_arg_long(ax_ocl_launch *launch, int64_t value);
void ax_ocl_arg_ulong(ax_ocl_launch *launch, uint64_t value);
void ax_ocl_arg_int(ax_ocl_launch *launch, int value);
/* Enqueues over `global` work-items (rounded up to whole groups of
 * `local`; 0: the implementation's choice). */
void ax_ocl_run(ax_ocl_launch *launch, size_t global, size_t local);

/* Work-items of an elementwise kernel with a grid-stride loop over count. */
size_t ax_ocl_elementwise_items(int64_t count);
/* Groups of a reduction over count elements (<= AX_OCL_REDUCE_GROUPS). */
int ax_ocl_reduce_groups(const ax_ocl_backend *ob, int64_t count);
/* Reads the first `groups` partials back and adds them in order; NaN after
 * a failure. */
double ax_ocl_finish_sum(ax_ocl_backend *ob, int groups);
/* Adds groups partials (doubles, or floats without fp64) in order, as
 * ax_ocl_finish_sum does once they are on the host. */
double ax_ocl_add_partials(const ax_ocl_backend *ob, const void *partials, int groups);

/* The table's operations implemented in opencl_ops.c. */
void ax_ocl_bias_activation(ax_backend *backend, ax_activation activation, void *z,
                            const void *bias, int64_t rows, int64_t cols);
void ax_ocl_activation_backward(ax_backend *backend, ax_activation activation, void *delta,
                                const void *a, double a_scale, void *bias_gradient, int64_t rows,
                                int64_t cols);
void ax_ocl_column_sums(ax_backend *backend, const void *delta, void *bias_gradient,
                        int64_t rows, int64_t cols);
double ax_ocl_cross_entropy(ax_backend *backend, const void *outputs, const int32_t *labels,
                            void *delta, double scale, int64_t rows, int64_t cols);
double ax_ocl_binary_cross_entropy(ax_backend *backend, const void *outputs,
                                   const int32_t *labels, const void *targets, void *delta,
                                   double scale, int64_t rows, int64_t cols);
double ax_ocl_squared_error(ax_backend *backend, const void *outputs, const int32_t *labels,
                            const void *targets, void *delta, double scale, int64_t rows,
                            int64_t cols);
void ax_ocl_dropout(ax_backend *backend, void *a, double rate, uint64_t key, int64_t row_offset,
                    int64_t rows, int64_t cols);
void ax_ocl_axpy(ax_backend *backend, int64_t count, double alpha, const void *x, void *y);
double ax_ocl_dot(ax_backend *backend, int64_t count, const void *x, const void *y);
void ax_ocl_scale(ax_backend *backend, int64_t count, double alpha, void *x);
double ax_ocl_l1_penalty(ax_backend *backend, int64_t count, const void *x, double alpha, void *y);
void ax_ocl_clamp(ax_backend *backend, int64_t count, double limit, void *x);
bool ax_ocl_all_finite(ax_backend *backend, int64_t count, const void *x);
void ax_ocl_reduce(ax_backend *backend, int n, ax_reduction *reductions);
void ax_ocl_sgd_update(ax_backend *backend, int64_t count, void *params, const void *grads,
                       void *velocity, double learning_rate, double momentum, bool nesterov);
void ax_ocl_adam_update(ax_backend *backend, int64_t count, void *params, const void *grads,
                        void *first_moment, void *second_moment, double learning_rate,
                        double beta1, double beta2, double epsilon, int64_t step);
void ax_ocl_argmax_rows(ax_backend *backend, const void *outputs, int32_t *host_indices,
                        int64_t rows, int64_t cols);

/* Data sets on the device (backend.h, version 4; opencl_ops.c). */
void ax_ocl_gather_rows_device(ax_backend *backend, void *dst, const float *block, int64_t width,
                               int64_t block_first, int64_t block_rows, const void *order,
                               int order_bytes, int64_t first, int64_t count);
void ax_ocl_gather_labels_device(ax_backend *backend, int32_t *dst, const int32_t *labels,
                                 const void *order, int order_bytes, int64_t first, int64_t count);

/* Losses kept on the device (backend.h, version 4; opencl_ops.c). */
bool ax_ocl_loss_defer(ax_backend *backend, bool on);
void ax_ocl_loss_accumulate(ax_backend *backend, double scale, double weight, int64_t step);
void ax_ocl_loss_reset(ax_backend *backend, double start);
void ax_ocl_loss_read(ax_backend *backend, double *total, int64_t *first_bad, double *bad_value);

/* The optional image operations (opencl_image.c; kernels in image.cl). */
void ax_ocl_im2col(ax_backend *backend, const ax_window_geometry *geometry, const void *x,
                   void *columns, int64_t images);
void ax_ocl_col2im(ax_backend *backend, const ax_window_geometry *geometry, const void *columns,
                   void *x, int64_t images);
void ax_ocl_pool_forward(ax_backend *backend, bool max, const ax_window_geometry *geometry,
                         const void *x, void *y, int64_t images);
void ax_ocl_pool_backward(ax_backend *backend, bool max, const ax_window_geometry *geometry,
                          const void *x, const void *dy, void *dx, int64_t images);
void ax_ocl_transpose(ax_backend *backend, const void *src, void *dst, int64_t batches,
                      int64_t rows, int64_t cols);

/* The activation statistics (opencl_stats.c): the plugin table's
 * stats_entropy_mi and stats_tensor_mean (plugin.h). */
ax_status ax_ocl_stats_entropy_mi(int index, const float *x, const float *y, int64_t rows,
                                  int64_t d, double sums[3], ax_stats_timing *timing);
ax_status ax_ocl_stats_tensor_mean(int index, const float *fx, const float *fy, const float *fz,
                                   int64_t n, int64_t d, float *out, ax_stats_timing *timing);

/* The plugin's table (opencl_backend.c). */
extern const ax_backend_plugin ax_backend_plugin_opencl;

#endif
