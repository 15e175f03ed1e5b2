/* info.c: `axon info`: what this build is and what it runs on (version, BLAS
 * and its kernels, CPU features, backends, compiler, OpenMP, threads, cores),
 * the facts to quote beside any timing. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "metrics.h"
#include "options.h"

static const cli_option info_options[] = {
    THREADS_OPTION,
    {"json", CLI_FLAG, NULL, NULL, "print one JSON object"},
    {"peak", CLI_FLAG, NULL, NULL,
     "also measure the machine's float32/float64 peak and the GEMM rate at\n"
     "the training shapes of the Fashion-MNIST MLP (784-128-128-10, batch 128)\n"
     "and of TMVA's regression benchmark (20-256x5-1, batch 1024), and the\n"
     "convolution rate of the LeNet network of axon bench lenet (batch 128)"},
};

static const char info_usage[] = "axon info [--threads N] [--json] [--peak]";
static const char info_description[] =
    "Prints the version, the build (BLAS library and kernels, CPU features,\n"
    "backends, compiler, OpenMP, MPI, whether prep and stats are built), the\n"
    "threads in use and the number of cores.";

static const char *or_unknown(const char *text) { return text && text[0] ? text : "unknown"; }

typedef struct reference_network {
    const char *name;
    int64_t input_width;
    const char *layers;
    int64_t batch;
} reference_network;

static const reference_network reference_networks[] = {
    {"MLP 784-128-128-10, batch 128", 784, "128:relu,128:relu,10:softmax", 128},
    {"regression 20-256x5-1, batch 1024", 20, "256:tanh,256:tanh,256:tanh,256:tanh,256:tanh,1:identity", 1024},
};

/* The GEMM rate of a reference network's training products, or 0 on failure. */
static double reference_gemm_rate(const reference_network *reference, ax_precision precision)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = reference->input_width;
    config.precision = precision;
    ax_net *net = NULL;
    double rate = 0.0;
    if (ax_layers_parse(reference->layers, &config) == AX_STATUS_OK &&
        ax_net_create(&config, &net) == AX_STATUS_OK &&
        ax_net_gemm_rate(net, reference->batch, &rate) != AX_STATUS_OK)
        rate = 0.0;
    ax_net_free(net);
    ax_net_config_release(&config);
    return rate;
}

/* The LeNet network of `axon bench lenet` (28x28x1 images, batch 128): its
 * convolutions' rate in float32, all three passes and each (forward,
 * weight gradient, input gradient), or zeros on failure. */
static void lenet_conv_rate(double *rate, double passes[3])
{
    ax_net_config config = ax_net_defaults();
    config.input_width = 784;
    config.input_shape[0] = 28, config.input_shape[1] = 28, config.input_shape[2] = 1;
    ax_net *net = NULL;
    *rate = passes[0] = passes[1] = passes[2] = 0.0;
    if (ax_layers_parse("conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,maxpool:2,1024:relu,10:softmax",
                        &config) == AX_STATUS_OK &&
        ax_net_create(&config, &net) == AX_STATUS_OK &&
        ax_net_conv_rate(net, 128, rate, passes) != AX_STATUS_OK)
        *rate = passes[0] = passes[1] = passes[2] = 0.0;
    ax_net_free(net);
    ax_net_config_release(&config);
}

static int print_peak(bool json)
{
    ax_peak peak;
    ax_status status = ax_machine_peak(&peak);
    if (status != AX_STATUS_OK)
        return report_failure(status, NULL);
    double rates[2][3];
    const ax_precision precisions[3] = {AX_PRECISION_F32, AX_PRECISION_F64, AX_PRECISION_BF16};
    for (int r = 0; r < 2; r++)
        for (int p = 0; p < 3; p++)
            rates[r][p] = reference_gemm_rate(&reference_networks[r], precisions[p]);
    double conv = 0.0, conv_passes[3];
    lenet_conv_rate(&conv, conv_passes);
    /* the rates measured since, in float32's terms, as a lower bound on the
     * peak (ax_peak_at_least): the loop may have run in a slow moment */
    /* (Winograd's passes count a direct convolution's FLOPs: they say
     * nothing of the peak) */
    const bool winograd = ax_conv_winograd_enabled();
    double seen = winograd ? 0.0 : conv;
    for (int i = 0; i < 3 && !winograd; i++)
        seen = conv_passes[i] > seen ? conv_passes[i] : seen;
    for (int r = 0; r < 2; r++) {
        seen = rates[r][0] > seen ? rates[r][0] : seen;
        seen = 2.0 * rates[r][1] > seen ? 2.0 * rates[r][1] : seen;
    }
    const bool raised = ax_peak_at_least(&peak, seen);
    if (json) {
        printf("{\"vector_bits\":%d,\"fma_units\":%d,\"clock_ghz\":%.3f,\"cores\":%d,"
               "\"peak_f32_gflops\":%.1f,\"peak_f64_gflops\":%.1f,\"peak_bf16_gflops\":%.1f,"
               "\"measured_fma_f32_gflops\":%.1f,\"pipes_from_products\":%s,"
               "\"gemm_b1_f32\":%.1f,\"gemm_b1_f64\":%.1f,\"gemm_b1_bf16\":%.1f,"
               "\"gemm_b2_f32\":%.1f,\"gemm_b2_f64\":%.1f,\"gemm_b2_bf16\":%.1f,"
               "\"conv_lenet_f32\":%.1f,\"conv_lenet_forward_f32\":%.1f,"
               "\"conv_lenet_weight_gradient_f32\":%.1f,\"conv_lenet_input_gradient_f32\":%.1f,"
               "\"conv_lenet_winograd\":%s}\n",
               peak.vector_bits, peak.fma_units, peak.clock_ghz, peak.cores, peak.f32_gflops,
               peak.f64_gflops, ax_peak_bf16_gflops(&peak), peak.measured_f32_gflops, raised ? "true" : "false", rates[0][0],
               rates[0][1], rates[0][2], rates[1][0], rates[1][1], rates[1][2], conv,
               conv_passes[0], conv_passes[1], conv_passes[2], winograd ? "true" : "false");
    } else {
        printf("peak (%d thread%s)\n", peak.cores, peak.cores == 1 ? "" : "s");
        printf("  vector width  %d bits (%d float32 lanes), %d FMA pipe%s per core, %.2f GHz\n",
               peak.vector_bits, peak.vector_bits / 32, peak.fma_units, peak.fma_units == 1 ? "" : "s",
               peak.clock_ghz);
        printf("  theoretical   %.0f GFLOP/s float32, %.0f GFLOP/s float64, %.0f GFLOP/s bf16%s\n",
               peak.f32_gflops, peak.f64_gflops, ax_peak_bf16_gflops(&peak),
               !ax_bf16_native()                         ? " (emulated: float32's)"
               : ax_bf16_support_get().speed_ratio > 0.0 ? " (VDPBF16PS)"
                                                         : " (VDPBF16PS's nominal 2x; AMX's is higher)");
        printf("  FMA loop      %.0f GFLOP/s float32 reached\n", peak.measured_f32_gflops);
        if (raised)
            printf("                in a slow moment: a product below ran at %.0f in float32's terms,\n"
                   "                which takes %d FMA pipes a core (a virtual machine's cores drift\n"
                   "                between two rates)\n",
                   seen, peak.fma_units);
        printf("  how           %s\n", peak.method);
        for (int r = 0; r < 2; r++)
            printf("  GEMM rate     %s: %.0f GFLOP/s float32 (%.0f%% of peak), %.0f float64 (%.0f%%)\n",
                   reference_networks[r].name, rates[r][0], 100.0 * rates[r][0] / peak.f32_gflops,
                   rates[r][1], 100.0 * rates[r][1] / peak.f64_gflops);
        for (int r = 0; r < 2; r++)
            printf("  GEMM rate     %s: %.0f GFLOP/s bf16 (%.0f%% of bf16 peak)\n",
                   reference_networks[r].name, rates[r][2], 100.0 * rates[r][2] / ax_peak_bf16_gflops(&peak));
        printf("  conv rate     LeNet (axon bench lenet), batch 128: %.0f GFLOP/s float32 (%.0f%% of peak):\n"
               "                forward %.0f (%.0f%%), weight gradient %.0f (%.0f%%), input gradient %.0f (%.0f%%)\n",
               conv, 100.0 * conv / peak.f32_gflops, conv_passes[0], 100.0 * conv_passes[0] / peak.f32_gflops,
               conv_passes[1], 100.0 * conv_passes[1] / peak.f32_gflops, conv_passes[2],
               100.0 * conv_passes[2] / peak.f32_gflops);
        if (winograd)
            printf("                (the second layer's three passes run Winograd's F(4x4, 5x5) and\n"
                   "                F(5x5, 4x4): their rates count a direct convolution's FLOPs, 3-6x the\n"
                   "                products made; AXON_CONV_WINOGRAD=off runs the direct kernels)\n");
    }
    return CLI_EXIT_OK;
}

/* The names of every backend but the CPU, once: those of axon's sources
 * (built here or not) and any other plugin the library found. */
static int device_backend_names(char names[][AX_DEVICE_NAME_CAPACITY], int capacity)
{
    int count = 0;
    for (const char *p = ax_backend_source_list(); *p && count < capacity;) {
        const size_t length = strcspn(p, " ");
        snprintf(names[count++], AX_DEVICE_NAME_CAPACITY, "%.*s", (int)length, p);
        p += length + (p[length] == ' ');
    }
    for (int i = 1; i < ax_backend_count() && count < capacity; i++) {
        bool listed = false;
        for (int j = 0; j < count && !listed; j++)
            listed = strcmp(names[j], ax_backend_name(i)) == 0;
        if (!listed)
            snprintf(names[count++], AX_DEVICE_NAME_CAPACITY, "%s", ax_backend_name(i));
    }
    return count;
}

static ax_device device_of(const char *backend, int index)
{
    ax_device device = {.index = index};
    memcpy(device.backend, backend, strnlen(backend, AX_DEVICE_NAME_CAPACITY - 1));
    return device;
}

static bool found_here(const char *backend)
{
    for (int i = 1; i < ax_backend_count(); i++)
        if (strcmp(ax_backend_name(i), backend) == 0)
            return true;
    return false;
}

static const char *kind_name(ax_device_kind kind)
{
    return kind == AX_DEVICE_KIND_CPU ? "cpu" : kind == AX_DEVICE_KIND_GPU ? "gpu" : "accelerator";
}

/* One device's properties as a JSON object. */
static void print_device_json(const ax_device_properties *p)
{
    static const char *const capabilities[] = {"f64", "bf16", "images", "device_data",
                                               "device_loss", "stats"};
    char name[AX_DEVICE_NAME_CAPACITY + 16];
    ax_device_format(p->device, name, sizeof name);
    printf("{\"device\":");
    json_write_string(stdout, name);
    printf(",\"kind\":\"%s\",\"name\":", kind_name(p->kind));
    json_write_string(stdout, p->name);
    printf(",\"description\":");
    json_write_string(stdout, p->description);
    printf(",\"memory_bytes\":%lld,\"compute_units\":%d,\"clock_ghz\":%.3f,"
           "\"peak_f32_gflops\":%.1f,\"peak_f64_gflops\":%.1f,\"capabilities\":[",
           (long long)p->memory_bytes, p->compute_units, p->clock_ghz, p->peak_f32_gflops,
           p->peak_f64_gflops);
    for (int c = 0, printed = 0; c < (int)(sizeof capabilities / sizeof *capabilities); c++)
        if (p->capabilities & (1u << c))
            printf("%s\"%s\"", printed++ ? "," : "", capabilities[c]);
    printf("]}");
}

/* The devices of every backend, from the library's enumeration
 * (ax_backend_count, ax_device_count, ax_device_properties_get): "not
 * built" for a backend of the sources without its plugin, "no device"
 * without one, else a line per device as its plugin describes it. JSON
 * keeps, per backend, "NAME_built" and "NAME_devices" (the lines), and adds
 * "devices", every device's properties (the CPU's first). */
static void print_devices(bool json)
{
    char names[16][AX_DEVICE_NAME_CAPACITY];
    const int backends = device_backend_names(names, 16);
    ax_device_properties properties;
    if (json) {
        for (int b = 0; b < backends; b++) {
            const bool built = found_here(names[b]);
            const int count = built ? ax_device_count(names[b]) : 0;
            printf(",\"%s_built\":%s,\"%s_devices\":[", names[b], built ? "true" : "false",
                   names[b]);
            for (int d = 0; d < count; d++) {
                const ax_device device = device_of(names[b], d);
                if (d > 0)
                    printf(",");
                json_write_string(stdout, ax_device_properties_get(device, &properties) == AX_STATUS_OK
                                              ? properties.description : ax_error_message());
            }
            printf("]");
        }
        printf(",\"devices\":[");
        bool first = true;
        if (ax_device_properties_get(ax_device_cpu(), &properties) == AX_STATUS_OK) {
            print_device_json(&properties);
            first = false;
        }
        for (int b = 0; b < backends; b++)
            for (int d = 0; found_here(names[b]) && d < ax_device_count(names[b]); d++) {
                const ax_device device = device_of(names[b], d);
                if (ax_device_properties_get(device, &properties) != AX_STATUS_OK)
                    continue;
                printf("%s", first ? "" : ",");
                print_device_json(&properties);
                first = false;
            }
        printf("]");
        return;
    }
    if (ax_device_properties_get(ax_device_cpu(), &properties) == AX_STATUS_OK)
        printf("  %-12s  %s\n", "cpu", properties.description);
    for (int b = 0; b < backends; b++) {
        const char *backend = names[b];
        if (!found_here(backend)) {
            char upper[AX_DEVICE_NAME_CAPACITY];
            for (size_t i = 0; i < sizeof upper; i++)
                upper[i] = (char)(backend[i] >= 'a' && backend[i] <= 'z' ? backend[i] - 32 : backend[i]);
            printf("  %-12s  not built (configure with -DAXON_%s=ON where its compiler and "
                   "libraries are installed: docs/%s.md)\n", backend, upper, backend);
            continue;
        }
        const char *runtime = ax_backend_runtime(backend);
        const int count = ax_device_count(backend);
        if (!runtime)
            printf("  %-12s  %s\n", backend, ax_error_message());
        else if (count == 0)
            printf("  %-12s  no device%s%s%s\n", backend, runtime[0] ? " (" : "", runtime,
                   runtime[0] ? ")" : "");
        for (int d = 0; runtime && d < count; d++) {
            const ax_device device = device_of(backend, d);
            char name[48];
            ax_device_format(device, name, sizeof name);
            printf("  %-12s  %s\n", name,
                   ax_device_properties_get(device, &properties) == AX_STATUS_OK
                       ? properties.description : ax_error_message());
        }
    }
}

int command_info(int argc, char **argv)
{
    cli_args args;
    int result = cli_parse("info", info_options, (int)(sizeof info_options / sizeof *info_options),
                           argc, argv, 1, &args);
    if (result != CLI_EXIT_OK)
        return result;
    if (args.help) {
        cli_print_help(&args, info_usage, info_description, stdout);
        return CLI_EXIT_OK;
    }
    bool json = false, peak = false;
    if (!cli_get_flag(&args, "json", &json) || !cli_get_flag(&args, "peak", &peak))
        return CLI_EXIT_USAGE;
    result = apply_threads(&args);
    if (result != CLI_EXIT_OK)
        return result;
    ax_build_info build = ax_build_info_get();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const char *omp_threads = getenv("OMP_NUM_THREADS");
    if (json) {
        printf("{\"version\":");
        json_write_string(stdout, or_unknown(build.version));
        printf(",\"blas\":");
        json_write_string(stdout, or_unknown(build.blas));
        printf(",\"blas_kernels\":");
        json_write_string(stdout, or_unknown(build.blas_kernels));
        printf(",\"cpu_features\":");
        json_write_string(stdout, build.cpu_features ? build.cpu_features : "");
        printf(",\"backends\":");
        json_write_string(stdout, or_unknown(build.backends));
        printf(",\"compiler\":");
        json_write_string(stdout, or_unknown(build.compiler));
        print_devices(true);
        printf(",\"mpi\":");
        if (ax_mpi_library())
            json_write_string(stdout, ax_mpi_library());
        else
            printf("null");
        const ax_bf16_support bf16 = ax_bf16_support_get();
        printf(",\"bf16\":\"%s\",\"bf16_instructions\":%s,\"bf16_speed_ratio\":%.3f",
               bf16.native ? "native" : "emulated", bf16.instructions ? "true" : "false",
               bf16.speed_ratio);
        printf(",\"prep\":%s,\"stats\":%s", build.prep ? "true" : "false",
               build.stats ? "true" : "false");
        printf(",\"openmp\":%s,\"threads\":%d,\"cores\":%ld}\n", build.openmp ? "true" : "false",
               ax_threads(), cores);
    } else {
        printf("axon %s\n", or_unknown(build.version));
        printf("  blas          %s (kernels: %s)\n", or_unknown(build.blas),
               or_unknown(build.blas_kernels));
        if (getenv("AXON_IGNORED_OPENBLAS_CORETYPE"))
            printf("                OPENBLAS_CORETYPE=%s was ignored: it names a core without the\n"
                   "                AVX-512 this CPU has (AXON_KEEP_OPENBLAS_CORETYPE=1 keeps it)\n",
                   getenv("AXON_IGNORED_OPENBLAS_CORETYPE"));
        if (getenv("AXON_DETECTED_OPENBLAS_CORETYPE"))
            printf("                OpenBLAS does not know this CPU and chose %s kernels; axon set\n"
                   "                OPENBLAS_CORETYPE=%s (AXON_KEEP_OPENBLAS_CORETYPE=1 keeps OpenBLAS's choice)\n",
                   getenv("AXON_DETECTED_OPENBLAS_CORETYPE"), or_unknown(getenv("OPENBLAS_CORETYPE")));
        printf("  cpu features  %s\n", build.cpu_features && build.cpu_features[0]
                                           ? build.cpu_features : "(none detected)");
        printf("  backends      %s\n", or_unknown(build.backends));
        print_devices(false);
        printf("  compiler      %s\n", or_unknown(build.compiler));
        printf("  openmp        %s\n", build.openmp ? "yes" : "no");
        const ax_bf16_support bf16 = ax_bf16_support_get();
        printf("  bf16          %s\n", bf16.reason);
        if (ax_mpi_library())
            printf("  mpi           %s (mpirun -np P axon train|prep)\n", ax_mpi_library());
        else
            printf("  mpi           no (a build without MPI: cmake -DAXON_MPI=ON with libopenmpi-dev)\n");
        if (build.prep)
            printf("  prep          yes (axon prep: libarchive, libjpeg, libpng)\n");
        else
            printf("  prep          no (a build without image preparation: cmake -DAXON_PREP=ON with\n"
                   "                libarchive-dev libjpeg62-turbo-dev libpng-dev)\n");
        if (build.stats)
            printf("  stats         yes (axon stats)\n");
        else
            printf("  stats         no (a build without activation statistics: cmake -DAXON_STATS=ON)\n");
        printf("  threads       %d in use (%s)\n", ax_threads(),
               strcmp(cli_text(&args, "threads"), "auto") != 0 ? "--threads"
               : omp_threads                ? "OMP_NUM_THREADS"
                                            : "default: all cores");
        printf("  cores         %ld\n", cores);
        const char *chose = getenv("AXON_CHOSE_GOMP_SPINCOUNT");
        if (getenv("GOMP_SPINCOUNT"))
            printf("  omp spin      GOMP_SPINCOUNT=%s (%s)\n", getenv("GOMP_SPINCOUNT"),
                   !chose                       ? "yours"
                   : strcmp(chose, "idle") == 0 ? "axon's: no other process was running at the start"
                                                : "axon's: other processes were running at the start, "
                                                  "or that could not be told");
    }
    if (peak) {
        result = print_peak(json);
        if (result != CLI_EXIT_OK)
            return result;
    }
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_RUNTIME;
}
