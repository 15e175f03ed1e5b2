/* test_opencl_peak.c: the estimated peaks `axon info` lists for an OpenCL
 * device (src/backend/opencl/opencl_peak.c), from the figures drivers
 * report, without a device:
 * - an NVIDIA H100 SXM through NVIDIA's OpenCL (132 compute units at
 *   1980 MHz, compute capability 9.0): 66.9 TFLOP/s float32 (128 lanes per
 *   SM; the CUDA line of axon info says 66.9) and 33.5 float64 (64 lanes).
 *   Before, one lane per compute unit: 522.7 GFLOP/s for both;
 * - PoCL on this kind of CPU (4 cores at 2500 MHz, native vectors of 8
 *   floats and 4 doubles: AVX2): 160 and 80 GFLOP/s;
 * - an NVIDIA GPU whose compute capability is not in the table, and a GPU
 *   of an unknown vendor, are marked as guesses; no fp64 gives no float64. */
#include <math.h>
#include <string.h>

#include "backend/opencl/opencl_peak.h"
#include "test_util.h"

static void check_peak(const ax_ocl_peak_facts *facts, double f32, double f64, bool known,
                       const char *basis)
{
    ax_ocl_peak peak;
    ax_ocl_peak_estimate(facts, &peak);
    CHECK_NEAR(peak.f32, f32, 1e-3);
    CHECK(f64 == 0.0 ? peak.f64 == 0.0 : fabs(peak.f64 - f64) <= 1e-3 * f64);
    CHECK(peak.known == known);
    if (!strstr(peak.basis, basis)) {
        fprintf(stderr, "basis \"%s\" lacks \"%s\"\n", peak.basis, basis);
        test_failures++;
    }
    printf("%.1f GFLOP/s float32, %.1f float64 (%s)\n", peak.f32 / 1e9, peak.f64 / 1e9,
           peak.basis);
}

int main(void)
{
    ax_ocl_peak_facts h100 = {.gpu = true, .fp64 = true, .vendor = "NVIDIA Corporation",
                              .compute_units = 132, .clock_mhz = 1980, .vector_width_f32 = 1,
                              .vector_width_f64 = 1, .nv_major = 9, .nv_minor = 0};
    check_peak(&h100, 2.0 * 132 * 128 * 1980e6, 2.0 * 132 * 64 * 1980e6, true,
               "132 SMs x 128 float32 / 64 float64 lanes x 1980 MHz, compute capability 9.0");
    CHECK(fabs(2.0 * 132 * 128 * 1980e6 / 1e12 - 66.9) < 0.05); /* the CUDA line's figure */

    ax_ocl_peak_facts pocl = {.gpu = false, .fp64 = true, .vendor = "GenuineIntel",
                              .compute_units = 4, .clock_mhz = 2500, .vector_width_f32 = 8,
                              .vector_width_f64 = 4};
    check_peak(&pocl, 160e9, 80e9, true, "4 cores x 8 float32 / 4 float64 lanes x 2500 MHz");

    ax_ocl_peak_facts future = h100;
    future.nv_major = 99;
    check_peak(&future, 2.0 * 132 * 128 * 1980e6, 2.0 * 132 * 2 * 1980e6, false,
               "not in axon's table");
    ax_ocl_peak_facts unknown = {.gpu = true, .fp64 = false, .vendor = "Someone",
                                 .compute_units = 10, .clock_mhz = 1000, .vector_width_f32 = 4};
    check_peak(&unknown, 2.0 * 10 * 4 * 1e9, 0.0, false, "a lower bound");
    ax_ocl_peak_facts amd = {.gpu = true, .fp64 = true,
                             .vendor = "Advanced Micro Devices, Inc.", .compute_units = 60,
                             .clock_mhz = 1800, .vector_width_f32 = 1, .vector_width_f64 = 1};
    check_peak(&amd, 2.0 * 60 * 64 * 1800e6, 2.0 * 60 * 4 * 1800e6, true, "AMD GPU");
    return test_finish("test_opencl_peak");
}
