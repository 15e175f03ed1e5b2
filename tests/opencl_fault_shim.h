/* opencl_fault_shim.h: the controls of tests/opencl_fault_shim.c, the
 * test-only library that makes one chosen OpenCL call fail. A test that may
 * run without it (a build without OpenCL) declares them weak and skips when
 * they are absent. */
#ifndef AX_TEST_OPENCL_FAULT_SHIM_H
#define AX_TEST_OPENCL_FAULT_SHIM_H

typedef enum ax_test_ocl_object {
    AX_TEST_OCL_BUFFERS,
    AX_TEST_OCL_KERNELS,
    AX_TEST_OCL_QUEUES,
    AX_TEST_OCL_OBJECT_KINDS
} ax_test_ocl_object;

/* Makes the nth call (1: the next) of the OpenCL function named `call`
 * fail with `code` (a creator returns NULL and sets *errcode_ret); the
 * calls before it, and all after it, go to the driver. One fault at a time:
 * arming replaces the last; call "" disarms. */
void ax_test_ocl_fault_arm(const char *call, long nth, int code);
/* How many armed faults have fired since the process started. */
long ax_test_ocl_fault_fired(void);
/* The objects of a kind created through the shim and not yet released. */
long ax_test_ocl_live(ax_test_ocl_object kind);

#endif
