/* opencl_peak.h: the estimated float32 and float64 peaks `axon info` lists
 * for an OpenCL device, from what the driver reports. OpenCL gives compute
 * units and a clock, not the lanes of a compute unit: a GPU's lanes come
 * from the vendor's figures (NVIDIA's by compute capability through
 * cl_nv_device_attribute_query, AMD's and Intel's per compute unit), a
 * CPU's from its native vector width. No OpenCL types here, so that
 * tests/test_opencl_peak.c checks the arithmetic without a device. */
#ifndef AX_BACKEND_OPENCL_PEAK_H
#define AX_BACKEND_OPENCL_PEAK_H

#include <stdbool.h>
#include <stddef.h>

/* What the driver says (clGetDeviceInfo). */
typedef struct ax_ocl_peak_facts {
    bool gpu;                    /* CL_DEVICE_TYPE has CL_DEVICE_TYPE_GPU */
    bool fp64;                   /* CL_DEVICE_DOUBLE_FP_CONFIG nonzero or cl_khr_fp64 */
    const char *vendor;          /* CL_DEVICE_VENDOR */
    unsigned compute_units;      /* CL_DEVICE_MAX_COMPUTE_UNITS */
    unsigned clock_mhz;          /* CL_DEVICE_MAX_CLOCK_FREQUENCY */
    unsigned vector_width_f32;   /* CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT */
    unsigned vector_width_f64;   /* CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE */
    int nv_major, nv_minor;      /* NVIDIA compute capability; 0.0 when not reported */
} ax_ocl_peak_facts;

typedef struct ax_ocl_peak {
    double f32, f64;       /* FLOP/s: 2 per FMA lane per clock; f64 0 without fp64 */
    double lanes_f32, lanes_f64; /* per compute unit, as estimated */
    bool known;            /* the lanes come from a vendor's figures or a CPU's vectors,
                              not a guess (an unknown GPU: a lower bound) */
    char basis[256];       /* how: "132 SMs x 128 float32 / 64 float64 lanes (compute
                              capability 9.0)" */
} ax_ocl_peak;

void ax_ocl_peak_estimate(const ax_ocl_peak_facts *facts, ax_ocl_peak *out);

#endif
