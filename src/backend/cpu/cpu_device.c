/* cpu_device.c: the CPU as a device: its properties for the device
 * enumeration (axon.h's ax_device_properties_get) and the public answers
 * about its bf16 GEMMs (ax_bf16_native, ax_bf16_support_get), which
 * bf16_gemm.c decides, unless axon's AMX tiles (amx_gemm.h) or oneDNN's
 * matmul on AMX (onednn_matmul.h) take them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/cpu/amx_gemm.h"
#include "backend/cpu/bf16_gemm.h"
#include "backend/cpu/conv_weight_amx.h"
#ifdef AXON_ONEDNN
#include "backend/cpu/onednn_matmul.h"
#endif

ax_bf16_support ax_bf16_support_get(void)
{
    ax_bf16_choice choice = ax_bf16_cpu_choice();
    /* axon's AMX tiles take the large products first (amx_gemm.h); AMX's
     * rate is not probed (speed_ratio 0, as below) */
    if (ax_amx_gemm_takes(INT64_C(1) << 10, INT64_C(1) << 10, INT64_C(1) << 10) &&
        ax_conv_amx_mode_chosen() == AX_CONV_AMX_HARDWARE)
        return (ax_bf16_support){choice.instructions, true, 0.0,
                                 "native: axon's AMX tiles for products of 2^20 multiply-adds "
                                 "or more, chosen as this CPU has AMX"};
#ifdef AXON_ONEDNN
    /* AMX's rate is not probed: speed_ratio 0 makes the bf16 peak twice
     * float32's (perf/peak.c), VDPBF16PS's nominal rate, a floor for AMX.
     * Forced on a CPU without AMX, oneDNN runs bf16 no faster than float32. */
    if (ax_onednn_bf16_matmul_chosen()) {
        const bool amx = ax_onednn_cpu_has_amx();
        return (ax_bf16_support){
            choice.instructions, amx, amx ? 0.0 : choice.speed_ratio,
            !amx ? "emulated by oneDNN's bf16 matmul, as AXON_BF16_KERNEL=onednn asks (this CPU "
                   "has no AMX)"
            : getenv("AXON_BF16_KERNEL") && strcmp(getenv("AXON_BF16_KERNEL"), "onednn") == 0
                ? "native: oneDNN's bf16 matmul in fixed blocks, as AXON_BF16_KERNEL=onednn asks "
                  "(this CPU has AMX)"
                : "native: oneDNN's bf16 matmul in fixed blocks, chosen as this CPU has AMX"};
    }
#endif
    return (ax_bf16_support){choice.instructions, choice.native, choice.speed_ratio, choice.reason};
}

bool ax_bf16_native(void) { return ax_bf16_support_get().native; }

/* The CPU's model ("model name" in /proc/cpuinfo), or "" where not told. */
static void cpu_model(char *name, size_t capacity)
{
    name[0] = '\0';
    FILE *file = fopen("/proc/cpuinfo", "r");
    if (!file)
        return;
    char line[512];
    while (fgets(line, sizeof line, file)) {
        const char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            colon++;
            while (*colon == ' ' || *colon == '\t')
                colon++;
            snprintf(name, capacity, "%s", colon);
            name[strcspn(name, "\n")] = '\0';
            break;
        }
    }
    fclose(file);
}

void ax_backend_cpu_properties(ax_device_properties *out)
{
    out->kind = AX_DEVICE_KIND_CPU;
    cpu_model(out->name, sizeof out->name);
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    out->memory_bytes = pages > 0 && page_size > 0 ? (int64_t)pages * page_size : 0;
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    out->compute_units = cores > 0 ? (int)cores : 0;
    /* Every precision, the image layers and the statistics run here; the
     * data and the loss are in host memory already. */
    out->capabilities = AX_DEVICE_CAPABILITY_F64 | AX_DEVICE_CAPABILITY_BF16 |
                        AX_DEVICE_CAPABILITY_IMAGES | AX_DEVICE_CAPABILITY_STATS;
    snprintf(out->description, sizeof out->description, "%s, %d cores, %.1f GiB",
             out->name[0] ? out->name : "the CPU", out->compute_units,
             (double)out->memory_bytes / 1073741824.0);
}
