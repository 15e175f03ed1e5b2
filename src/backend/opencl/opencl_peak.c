/* opencl_peak.c: see opencl_peak.h. A peak is 2 FLOPs (one FMA) per lane per
 * clock, times lanes per compute unit, compute units and the highest clock
 * the driver reports; what a kernel reaches is below it. The lanes per
 * compute unit are NVIDIA's, AMD's and Intel's published figures (CUDA C
 * Programming Guide, "Arithmetic Instructions" throughput table; AMD's
 * GCN/RDNA and Intel's Xe white papers). Tensor/matrix units are left out:
 * axon's kernels do not use them. */
#include "backend/opencl/opencl_peak.h"

#include <stdio.h>
#include <string.h>

/* FP32 and FP64 FMA lanes per streaming multiprocessor by compute
 * capability (CUDA C Programming Guide, throughput of 32-bit and 64-bit
 * floating-point add, multiply, multiply-add per clock per multiprocessor). */
static const struct {
    int major, minor, f32, f64;
} nvidia[] = {
    {3, 0, 192, 8},  {3, 5, 192, 64}, {3, 7, 192, 64}, {5, 0, 128, 4},  {5, 2, 128, 4},
    {5, 3, 128, 4},  {6, 0, 64, 32},  {6, 1, 128, 4},  {6, 2, 128, 4},  {7, 0, 64, 32},
    {7, 2, 64, 32},  {7, 5, 64, 2},   {8, 0, 64, 32},  {8, 6, 128, 2},  {8, 7, 128, 2},
    {8, 9, 128, 2},  {9, 0, 128, 64}, {10, 0, 128, 64}, {12, 0, 128, 2},
};

static bool vendor_is(const char *vendor, const char *word)
{
    return vendor && strstr(vendor, word) != NULL;
}

void ax_ocl_peak_estimate(const ax_ocl_peak_facts *facts, ax_ocl_peak *out)
{
    memset(out, 0, sizeof *out);
    const double units = (double)facts->compute_units, hz = (double)facts->clock_mhz * 1e6;
    const unsigned w32 = facts->vector_width_f32 ? facts->vector_width_f32 : 1;
    const unsigned w64 = facts->vector_width_f64 ? facts->vector_width_f64 : 1;
    double f32 = w32, f64 = w64;
    const char *unit = "compute units";
    char why[96] = "";
    out->known = true;
    if (!facts->gpu) {
        /* A CPU (PoCL): a compute unit is a core, its lanes one native
         * vector; a second FMA pipe on server cores is not visible, so it
         * is counted as one. */
        unit = "cores";
        snprintf(why, sizeof why, "native vectors; one FMA pipe");
    } else if (facts->nv_major > 0) {
        unit = "SMs";
        int found = -1;
        for (size_t i = 0; i < sizeof nvidia / sizeof nvidia[0]; i++)
            if (nvidia[i].major == facts->nv_major && nvidia[i].minor == facts->nv_minor)
                found = (int)i;
        if (found >= 0) {
            f32 = nvidia[found].f32, f64 = nvidia[found].f64;
            snprintf(why, sizeof why, "compute capability %d.%d", facts->nv_major,
                     facts->nv_minor);
        } else { /* newer than the table: as the last consumer generation */
            f32 = 128, f64 = 2;
            out->known = false;
            snprintf(why, sizeof why, "compute capability %d.%d not in axon's table: assumed",
                     facts->nv_major, facts->nv_minor);
        }
    } else if (vendor_is(facts->vendor, "NVIDIA")) {
        unit = "SMs";
        f32 = 64, f64 = 2;
        out->known = false;
        snprintf(why, sizeof why, "no compute capability reported: the fewest lanes of an SM");
    } else if (vendor_is(facts->vendor, "Advanced Micro Devices") || vendor_is(facts->vendor, "AMD")) {
        /* GCN: 4 SIMD16, RDNA: 2 SIMD32 (RDNA 3's dual issue not counted).
         * float64 runs at 1/16 on consumer parts; Instinct cards run it at
         * 1/2 or 1/1, which the driver does not say. */
        f32 = 64, f64 = 4;
        snprintf(why, sizeof why, "AMD GPU; float64 at 1/16 assumed (Instinct: faster)");
    } else if (vendor_is(facts->vendor, "Intel")) {
        /* An EU: 8 float32 lanes (Gen9 to Xe-LPG); float64 at 1/4 where present. */
        unit = "EUs";
        f32 = 8, f64 = 2;
        snprintf(why, sizeof why, "Intel GPU; float64 at 1/4 assumed");
    } else {
        out->known = false;
        snprintf(why, sizeof why, "lanes per compute unit unknown: a lower bound");
    }
    out->lanes_f32 = f32;
    out->lanes_f64 = facts->fp64 ? f64 : 0.0;
    out->f32 = 2.0 * units * f32 * hz;
    out->f64 = facts->fp64 ? 2.0 * units * f64 * hz : 0.0;
    if (facts->fp64)
        snprintf(out->basis, sizeof out->basis, "%u %s x %g float32 / %g float64 lanes x %u MHz, %s",
                 facts->compute_units, unit, f32, f64, facts->clock_mhz, why);
    else
        snprintf(out->basis, sizeof out->basis, "%u %s x %g float32 lanes x %u MHz, %s",
                 facts->compute_units, unit, f32, facts->clock_mhz, why);
}
