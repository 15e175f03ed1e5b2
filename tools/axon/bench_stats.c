/* bench_stats.c: `axon bench entropy-mi` and `axon bench tensor-mean`: the
 * activation statistics (docs/stats.md) timed at the sizes of the Python
 * case study they come from (entropy-mi: B = 256 .. 65536 rows of 256;
 * tensor-mean: N = 64 .. 8192 rows of 32), through the public API. Each size
 * gets a warm-up, then --repeat samples; a sample loops the call for at
 * least --min-time seconds and gives seconds per call (the calls take 50 us to 50 ms, below a timer's
 * useful resolution on a busy machine). The table gives mean, sd and the
 * fastest sample per size with the memory rate (entropy-mi: both inputs
 * read once) or the GFLOP/s (tensor-mean: 2 N D^3 flops). With --csv, one
 * row per sample in the columns of bench/peers (system axon, variant axon,
 * batch = B or N, width = D, repeat = the sample, epoch empty: a whole
 * run), which bench/compare_stats.sh puts beside NumPy and PyTorch.
 *
 * With --device NAME[:N], every size runs on the CPU and then on the
 * device: the device's time per call with the copies (the wall clock of
 * the whole call) and without them (the kernels, by the device's events), and the
 * crossover: the smallest size from which the device is faster at every
 * larger size swept, with and without the copies (the case study asked
 * where a GPU starts to pay). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"
#include "common.h"
#include "options.h"

static const cli_option stats_bench_options[] = {
    THREADS_OPTION,
    {"repeat", CLI_INT, "N", "5", "timed samples per size; the table gives mean and sd over them"},
    {"sizes", CLI_STRING, "LIST", NULL,
     "comma-separated B (entropy-mi) or N (tensor-mean); default:\n"
     "256,1024,4096,16384,65536 and 64,256,1024,4096,8192"},
    {"d", CLI_INT, "D", NULL, "values per row (default: 256 for entropy-mi, 32 for tensor-mean)"},
    {"min-time", CLI_NUMBER, "S", "0.05", "each sample repeats the call for at least S seconds"},
    {"quick", CLI_FLAG, NULL, NULL, "2 samples of 0.01 s, sizes up to 4096, for a smoke test"},
    {"csv", CLI_STRING, "FILE", NULL, "append one row per sample there (a new file gets the header line first)"},
    DEVICE_OPTION,
};

static const char stats_bench_usage[] =
    "axon bench entropy-mi|tensor-mean [--sizes LIST] [--d D] [--repeat N] [--threads N] "
    "[--csv FILE] [--device NAME[:N]]";
static const char stats_bench_description[] =
    "Times the activation statistics of axon stats (docs/stats.md) at five sizes\n"
    "each: seconds per call as mean and sd over samples, GB/s (entropy-mi) or\n"
    "GFLOP/s (tensor-mean). bench/compare_stats.sh runs NumPy and PyTorch beside it.\n"
    "--device NAME[:N] (a device axon info lists): the CPU and the device at each size, the device's time\n"
    "with and without the copies, and the size from which the device wins.";

enum { MAX_SIZES = 32 };

bool bench_stats_handles(const char *name)
{
    return strcmp(name, "entropy-mi") == 0 || strcmp(name, "tensor-mean") == 0;
}

/* Roughly standard normal values (a sum of four uniforms from a fixed
 * LCG): logits and features of the scale the peers draw, the same on every
 * run. NULL when out of memory. */
static float *random_array(int64_t count, uint64_t seed)
{
    float *a = malloc((size_t)count * sizeof *a);
    for (int64_t i = 0; a && i < count; i++) {
        double s = 0.0;
        for (int k = 0; k < 4; k++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            s += (double)(seed >> 11) / 9007199254740992.0;
        }
        a[i] = (float)((s - 2.0) * 1.7320508);
    }
    return a;
}

/* "256,1024" into sizes; false after a usage message. The text is not
 * empty (cli_get_nonempty), so a true return holds one size at least. */
static bool parse_sizes(const cli_args *args, const char *text, int64_t *sizes, int *count)
{
    *count = 0;
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        long long value = strtoll(p, &end, 10);
        if (end == p || errno != 0 || value < 1 || value > (1LL << 26) || (*end && *end != ',')) {
            cli_error(args, "--sizes: expected sizes from 1 to %lld separated by commas, got '%s'",
                      1LL << 26, text);
            return false;
        }
        if (*count == MAX_SIZES) {
            cli_error(args, "--sizes: at most %d sizes", MAX_SIZES);
            return false;
        }
        sizes[(*count)++] = value;
        p = *end ? end + 1 : end;
        if (*end && !*p) {
            cli_error(args, "--sizes: a size is missing after the last comma in '%s'", text);
            return false;
        }
    }
    return true;
}

typedef struct stats_case {
    bool entropy; /* else tensor-mean */
    ax_device device;
    int64_t rows, d;
    float *a, *b, *c, *out;
    double entropy_value, mi_value;
    ax_stats_timing spent; /* summed over the calls of a sample */
} stats_case;

static ax_status run_once(stats_case *k)
{
    ax_stats_timing t;
    ax_status status =
        k->entropy ? ax_stats_entropy_mi_on(k->device, k->a, k->b, k->rows, k->d,
                                            &k->entropy_value, &k->mi_value, &t)
                   : ax_stats_tensor_mean_on(k->device, k->a, k->b, k->c, k->rows, k->d, k->out,
                                             &t);
    k->spent.upload_seconds += t.upload_seconds;
    k->spent.compute_seconds += t.compute_seconds;
    k->spent.download_seconds += t.download_seconds;
    return status;
}

/* Seconds per call over one sample of at least min_time seconds (and in
 * *per_call, the device's copies and kernels per call). */
static ax_status sample(stats_case *k, double min_time, double *seconds, ax_stats_timing *per_call)
{
    int calls = 0;
    k->spent = (ax_stats_timing){0.0, 0.0, 0.0};
    double start = ax_seconds_now(), elapsed;
    do {
        ax_status status = run_once(k);
        if (status != AX_STATUS_OK)
            return status;
        calls++;
        elapsed = ax_seconds_now() - start;
    } while (elapsed < min_time);
    *seconds = elapsed / calls;
    per_call->upload_seconds = k->spent.upload_seconds / calls;
    per_call->compute_seconds = k->spent.compute_seconds / calls;
    per_call->download_seconds = k->spent.download_seconds / calls;
    return AX_STATUS_OK;
}

/* What the samples of one size on one device gave. */
typedef struct size_result {
    double mean, sd, best;  /* seconds per call, wall clock */
    ax_stats_timing device; /* means per call over the samples */
    double entropy_value, mi_value, first;
} size_result;

FILE *bench_csv_open(const char *path)
{
    FILE *csv = fopen(path, "a");
    if (!csv)
        return NULL;
    /* "a" leaves the position to the implementation until the first write */
    if (fseek(csv, 0, SEEK_END) != 0 || (ftell(csv) == 0 && fputs(BENCH_CSV_COLUMNS "\n", csv) < 0)) {
        const int saved = errno;
        fclose(csv);
        errno = saved;
        return NULL;
    }
    return csv;
}

static void csv_row(FILE *csv, const char *workload, const char *variant, bool entropy,
                    int64_t rows, int64_t d, int r, double seconds)
{
    double gflops = 2.0 * (double)rows * (double)(d * d * d) / seconds * 1e-9;
    fprintf(csv, "axon,%s,%s,f32,%d,%lld,%lld,%d,,%.9g,,,", workload, variant, ax_threads(),
            (long long)rows, (long long)d, r, seconds);
    if (!entropy)
        fprintf(csv, "%.6g", gflops);
    fprintf(csv, ",%.1f\n", (double)rows / seconds);
}

/* One size on one device: warm-up, samples, the CSV rows. */
static int bench_size(const char *workload, bool entropy, ax_device device, const stats_case *data,
                      int repeat, double min_time, FILE *csv, size_result *out)
{
    stats_case k = *data;
    k.device = device;
    double sum = 0.0, sum_sq = 0.0, best = INFINITY, seconds = 0.0;
    ax_stats_timing per_call, device_sum = {0.0, 0.0, 0.0};
    /* Warm-up: first touch of the pages, thread start-up, clock ramp; on a
     * device its context, buffers and cuBLAS handle. */
    ax_status status = sample(&k, min_time / 2, &seconds, &per_call);
    for (int r = 1; r <= repeat && status == AX_STATUS_OK; r++) {
        status = sample(&k, min_time, &seconds, &per_call);
        if (status != AX_STATUS_OK)
            break;
        sum += seconds, sum_sq += seconds * seconds;
        best = seconds < best ? seconds : best;
        device_sum.upload_seconds += per_call.upload_seconds;
        device_sum.compute_seconds += per_call.compute_seconds;
        device_sum.download_seconds += per_call.download_seconds;
        if (csv && ax_device_is_cpu(device)) {
            csv_row(csv, workload, "axon", entropy, k.rows, k.d, r, seconds);
        } else if (csv) { /* "axon-NAME" */
            char system[AX_DEVICE_NAME_CAPACITY + 16], kernels[AX_DEVICE_NAME_CAPACITY + 24];
            snprintf(system, sizeof system, "axon-%.*s", AX_DEVICE_NAME_CAPACITY, device.backend);
            snprintf(kernels, sizeof kernels, "%s-kernels", system);
            csv_row(csv, workload, system, entropy, k.rows, k.d, r, seconds);
            csv_row(csv, workload, kernels, entropy, k.rows, k.d, r, per_call.compute_seconds);
        }
    }
    if (status != AX_STATUS_OK)
        return report_failure(status, status == AX_STATUS_UNSUPPORTED && !ax_device_is_cpu(device) ? "--device"
                                                                                       : workload);
    out->mean = sum / repeat;
    double variance = repeat > 1 ? (sum_sq - repeat * out->mean * out->mean) / (repeat - 1) : 0.0;
    out->sd = sqrt(variance > 0.0 ? variance : 0.0);
    out->best = best;
    out->device.upload_seconds = device_sum.upload_seconds / repeat;
    out->device.compute_seconds = device_sum.compute_seconds / repeat;
    out->device.download_seconds = device_sum.download_seconds / repeat;
    out->entropy_value = k.entropy_value;
    out->mi_value = k.mi_value;
    out->first = entropy ? 0.0 : (double)k.out[0];
    return CLI_EXIT_OK;
}

/* The inputs of one size (fixed pseudo-normal data); false when out of memory. */
static bool case_create(stats_case *k, bool entropy, int64_t rows, int64_t d)
{
    *k = (stats_case){.entropy = entropy, .device = ax_device_cpu(), .rows = rows, .d = d};
    const int64_t count = rows * d;
    k->a = random_array(count, 1 + (uint64_t)rows);
    k->b = random_array(count, 1000 + (uint64_t)rows);
    if (!entropy) {
        k->c = random_array(count, 2000 + (uint64_t)rows);
        k->out = malloc((size_t)(d * d * d) * sizeof *k->out);
    }
    return k->a && k->b && (entropy || (k->c && k->out));
}

static void case_free(stats_case *k)
{
    free(k->a);
    free(k->b);
    free(k->c);
    free(k->out);
}

/* The CPU's table line of one size. */
static void print_cpu_line(bool entropy, int64_t rows, int64_t d, const size_result *r)
{
    if (entropy) {
        double bytes = 2.0 * (double)(rows * d) * sizeof(float);
        printf("  %8lld  %10.4f  %8.4f  %10.4f  %9.1f  %9.1f  %.6g  %.6g\n", (long long)rows,
               1e3 * r->mean, 1e3 * r->sd, 1e3 * r->best, bytes / r->mean * 1e-9,
               bytes / r->best * 1e-9, r->entropy_value, r->mi_value);
    } else {
        double flop = 2.0 * (double)rows * (double)(d * d * d);
        printf("  %8lld  %10.4f  %8.4f  %10.4f  %9.1f  %9.1f  %.6g\n", (long long)rows,
               1e3 * r->mean, 1e3 * r->sd, 1e3 * r->best, flop / r->mean * 1e-9,
               flop / r->best * 1e-9, r->first);
    }
}

/* The CPU and device line of one size. */
static void print_device_line(int64_t rows, const size_result *cpu, const size_result *gpu)
{
    printf("  %8lld  %9.4f  %9.4f  %9.4f  %9.4f  %9.4f  %8.2fx  %8.2fx\n", (long long)rows,
           1e3 * cpu->mean, 1e3 * gpu->mean, 1e3 * gpu->device.compute_seconds,
           1e3 * gpu->device.upload_seconds, 1e3 * gpu->device.download_seconds,
           cpu->mean / gpu->mean, cpu->mean / gpu->device.compute_seconds);
}

/* The smallest size from which the device is faster at every larger size
 * swept (sizes ascending), or -1. */
static int64_t crossover(const int64_t *sizes, const size_result *cpu, const size_result *gpu,
                         int count, bool kernels_only)
{
    int64_t from = -1;
    for (int i = count - 1; i >= 0; i--) {
        double device = kernels_only ? gpu[i].device.compute_seconds : gpu[i].mean;
        if (!(device < cpu[i].mean))
            break;
        from = sizes[i];
    }
    return from;
}

static int compare_sizes(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int command_bench_stats(int argc, char **argv)
{
    const char *workload = argv[1];
    const bool entropy = strcmp(workload, "entropy-mi") == 0;
    cli_args args;
    int result = cli_parse("bench", stats_bench_options,
                           (int)(sizeof stats_bench_options / sizeof *stats_bench_options),
                           argc - 1, argv + 1, 1, &args);
    if (result != CLI_EXIT_OK)
        return result;
    if (args.help) {
        cli_print_help(&args, stats_bench_usage, stats_bench_description, stdout);
        return CLI_EXIT_OK;
    }
    if (!cli_component_built(CLI_COMPONENT_STATS))
        return cli_refuse_unbuilt(entropy ? "bench entropy-mi" : "bench tensor-mean",
                                  CLI_COMPONENT_STATS);
    int repeat = 5, d = entropy ? 256 : 32;
    double min_time = 0.05;
    bool quick = false;
    const char *csv_path = NULL, *sizes_text = NULL;
    ax_device device = ax_device_cpu();
    if (!cli_get_int(&args, "repeat", 1, 1000, &repeat) || !cli_get_flag(&args, "quick", &quick) ||
        !read_device(&args, &device) ||
        !cli_get_int(&args, "d", 1, entropy ? 1 << 20 : 1290, &d) ||
        !cli_get_double(&args, "min-time", 0.0, 60.0, CLI_CLOSED, &min_time) ||
        !cli_get_nonempty(&args, "csv", &csv_path) || !cli_get_nonempty(&args, "sizes", &sizes_text))
        return CLI_EXIT_USAGE;
    int64_t sizes[MAX_SIZES];
    int size_count = 0;
    if (sizes_text) {
        if (!parse_sizes(&args, sizes_text, sizes, &size_count))
            return CLI_EXIT_USAGE;
    } else {
        const int64_t seed_sizes[2][5] = {{256, 1024, 4096, 16384, 65536}, {64, 256, 1024, 4096, 8192}};
        for (int i = 0; i < 5; i++)
            if (!quick || seed_sizes[!entropy][i] <= 4096)
                sizes[size_count++] = seed_sizes[!entropy][i];
    }
    if (quick) {
        if (!cli_given(&args, "repeat"))
            repeat = 2;
        if (!cli_given(&args, "min-time"))
            min_time = 0.01;
    }
    result = apply_threads(&args);
    if (result != CLI_EXIT_OK)
        return result;
    FILE *csv = NULL;
    if (csv_path && !(csv = bench_csv_open(csv_path))) {
        fprintf(stderr, "axon bench: cannot open %s for appending: %s\n", csv_path, strerror(errno));
        return CLI_EXIT_RUNTIME;
    }
    char device_text[256] = "";
    const bool on_device = !ax_device_is_cpu(device);
    if (on_device) {
        /* Sorted, for the crossover; a device that is not there fails now,
         * before the CPU runs. */
        qsort(sizes, (size_t)size_count, sizeof *sizes, compare_sizes);
        if (ax_device_info(device, device_text, sizeof device_text) != AX_STATUS_OK) {
            if (csv)
                fclose(csv);
            return report_failure(AX_STATUS_UNSUPPORTED, "--device");
        }
        char name[64];
        ax_device_format(device, name, sizeof name);
        printf("axon bench %s: D = %d, CPU (%d thread(s)) and device %s (%s), %d sample(s) "
               "of >= %g s per size\n", workload, d, ax_threads(), name, device_text, repeat,
               min_time);
        printf("  %8s  %9s  %9s  %9s  %9s  %9s  %9s  %9s\n", entropy ? "B" : "N", "CPU ms",
               "GPU ms", "kernel ms", "copy in", "copy out", "speedup", "kernels");
    } else {
        printf("axon bench %s: D = %d, %d thread(s), %d sample(s) of >= %g s per size\n",
               workload, d, ax_threads(), repeat, min_time);
        if (entropy)
            printf("  %8s  %10s  %8s  %10s  %9s  %9s  %s\n", "B", "mean ms", "sd ms", "best ms",
                   "GB/s", "best GB/s", "H, MI");
        else
            printf("  %8s  %10s  %8s  %10s  %9s  %9s  %s\n", "N", "mean ms", "sd ms", "best ms",
                   "GFLOP/s", "best", "A[0,0,0]");
    }
    size_result cpu[MAX_SIZES], gpu[MAX_SIZES];
    for (int i = 0; i < size_count && result == CLI_EXIT_OK; i++) {
        stats_case k;
        if (!case_create(&k, entropy, sizes[i], d)) {
            fprintf(stderr, "axon bench %s: out of memory for %lld x %d\n", workload,
                    (long long)sizes[i], d);
            result = CLI_EXIT_RUNTIME;
        }
        if (result == CLI_EXIT_OK)
            result = bench_size(workload, entropy, ax_device_cpu(), &k, repeat, min_time, csv,
                                &cpu[i]);
        if (result == CLI_EXIT_OK && on_device)
            result = bench_size(workload, entropy, device, &k, repeat, min_time, csv, &gpu[i]);
        if (result == CLI_EXIT_OK) {
            if (on_device)
                print_device_line(sizes[i], &cpu[i], &gpu[i]);
            else
                print_cpu_line(entropy, sizes[i], d, &cpu[i]);
            fflush(stdout);
        }
        case_free(&k);
    }
    if (result == CLI_EXIT_OK && on_device) {
        printf("  (GPU ms: the whole call, copies included; kernel ms: by the device's own\n"
               "   events, or the host clock around the finished kernels; speedup:\n"
               "   CPU ms / GPU ms; kernels: CPU ms / kernel ms)\n");
        for (int only = 0; only < 2; only++) {
            int64_t from = crossover(sizes, cpu, gpu, size_count, only == 1);
            const char *what = only ? "kernels alone (data already on the device)"
                                    : "with the copies";
            if (from < 0)
                printf("crossover, %s: the CPU is faster at the largest size swept\n", what);
            else if (from == sizes[0])
                printf("crossover, %s: the GPU is faster at every size swept (from %s = %lld)\n",
                       what, entropy ? "B" : "N", (long long)from);
            else
                printf("crossover, %s: the GPU is faster from %s = %lld on\n", what,
                       entropy ? "B" : "N", (long long)from);
        }
    }
    if (csv && fclose(csv) != 0 && result == CLI_EXIT_OK) {
        fprintf(stderr, "axon bench: writing %s failed\n", csv_path);
        result = CLI_EXIT_RUNTIME;
    }
    return result;
}
