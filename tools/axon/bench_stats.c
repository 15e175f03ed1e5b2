/* bench_stats.c: `axon bench entropy-mi` and `axon bench tensor-mean`: seed
 * 004's activation statistics (BENCHMARKS.md B4, B5) timed over the seed's
 * sizes, through the public API. Each size gets a warm-up, then --repeat
 * samples; a sample loops the call for at least --min-time seconds and
 * gives seconds per call (the calls take 50 us to 50 ms, below a timer's
 * useful resolution on a busy machine). The table gives mean, sd and the
 * fastest sample per size with the memory rate (entropy-mi: both inputs
 * read once) or the GFLOP/s (tensor-mean: 2 N D^3 flops). With --csv, one
 * row per sample in the columns of bench/peers (system axon, variant axon,
 * batch = B or N, width = D, repeat = the sample, epoch empty: a whole
 * run), which bench/compare_stats.sh puts beside NumPy and PyTorch. */
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
     "comma-separated B (entropy-mi) or N (tensor-mean); default: seed 004's\n"
     "256,1024,4096,16384,65536 and 64,256,1024,4096,8192"},
    {"d", CLI_INT, "D", NULL, "values per row (default: 256 for entropy-mi, 32 for tensor-mean)"},
    {"min-time", CLI_NUMBER, "S", "0.05", "each sample repeats the call for at least S seconds"},
    {"quick", CLI_FLAG, NULL, NULL, "2 samples of 0.01 s, sizes up to 4096, for a smoke test"},
    {"csv", CLI_STRING, "FILE", NULL, "append one row per sample there"},
};

static const char stats_bench_usage[] =
    "axon bench entropy-mi|tensor-mean [--sizes LIST] [--d D] [--repeat N] [--threads N] "
    "[--csv FILE]";
static const char stats_bench_description[] =
    "Times seed 004's activation statistics (BENCHMARKS.md B4, B5) at the seed's\n"
    "sizes: seconds per call as mean and sd over samples, GB/s (entropy-mi) or\n"
    "GFLOP/s (tensor-mean). bench/compare_stats.sh runs NumPy and PyTorch beside it.";

enum { MAX_SIZES = 32 };

bool bench_stats_handles(const char *name)
{
    return strcmp(name, "entropy-mi") == 0 || strcmp(name, "tensor-mean") == 0;
}

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
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

/* "256,1024" into sizes; false after a usage message. */
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
    if (*count == 0) {
        cli_error(args, "--sizes: no sizes given");
        return false;
    }
    return true;
}

typedef struct stats_case {
    bool entropy;        /* else tensor-mean */
    int64_t rows, d;
    float *a, *b, *c, *out;
    double entropy_value, mi_value;
} stats_case;

static ax_status run_once(stats_case *k)
{
    return k->entropy
               ? ax_stats_entropy_mi(k->a, k->b, k->rows, k->d, &k->entropy_value, &k->mi_value)
               : ax_stats_tensor_mean(k->a, k->b, k->c, k->rows, k->d, k->out);
}

/* Seconds per call over one sample of at least min_time seconds. */
static ax_status sample(stats_case *k, double min_time, double *seconds)
{
    int calls = 0;
    double start = now_seconds(), elapsed;
    do {
        ax_status status = run_once(k);
        if (status != AX_STATUS_OK)
            return status;
        calls++;
        elapsed = now_seconds() - start;
    } while (elapsed < min_time);
    *seconds = elapsed / calls;
    return AX_STATUS_OK;
}

/* One size: data, warm-up, samples, a table line and the CSV rows. */
static int bench_size(const char *workload, bool entropy, int64_t rows, int64_t d, int repeat,
                      double min_time, FILE *csv)
{
    stats_case k = {.entropy = entropy, .rows = rows, .d = d};
    const int64_t count = rows * d;
    k.a = random_array(count, 1 + (uint64_t)rows);
    k.b = random_array(count, 1000 + (uint64_t)rows);
    if (!entropy) {
        k.c = random_array(count, 2000 + (uint64_t)rows);
        k.out = malloc((size_t)(d * d * d) * sizeof *k.out);
    }
    int result = CLI_EXIT_OK;
    if (!k.a || !k.b || (!entropy && (!k.c || !k.out))) {
        fprintf(stderr, "axon bench %s: out of memory for %lld x %lld\n", workload,
                (long long)rows, (long long)d);
        result = CLI_EXIT_RUNTIME;
    }
    double sum = 0.0, sum_sq = 0.0, best = INFINITY, seconds = 0.0;
    /* Warm-up: first touch of the pages, thread start-up, clock ramp. */
    ax_status status = result == CLI_EXIT_OK ? sample(&k, min_time / 2, &seconds) : AX_STATUS_OK;
    for (int r = 1; r <= repeat && result == CLI_EXIT_OK && status == AX_STATUS_OK; r++) {
        status = sample(&k, min_time, &seconds);
        if (status != AX_STATUS_OK)
            break;
        sum += seconds, sum_sq += seconds * seconds;
        best = seconds < best ? seconds : best;
        double gflops = 2.0 * (double)rows * (double)(d * d * d) / seconds * 1e-9;
        if (csv) {
            fprintf(csv, "axon,%s,axon,f32,%d,%lld,%lld,%d,,%.9g,,,", workload, ax_threads(),
                    (long long)rows, (long long)d, r, seconds);
            if (!entropy)
                fprintf(csv, "%.3f", gflops);
            fprintf(csv, ",%.1f\n", (double)rows / seconds);
        }
    }
    if (status != AX_STATUS_OK)
        result = report_failure(status, workload);
    if (result == CLI_EXIT_OK) {
        double mean = sum / repeat;
        double variance = repeat > 1 ? (sum_sq - repeat * mean * mean) / (repeat - 1) : 0.0;
        double sd = sqrt(variance > 0.0 ? variance : 0.0);
        if (entropy) {
            double bytes = 2.0 * (double)count * sizeof(float);
            printf("  %8lld  %10.4f  %8.4f  %10.4f  %9.1f  %9.1f  %.6g  %.6g\n", (long long)rows,
                   1e3 * mean, 1e3 * sd, 1e3 * best, bytes / mean * 1e-9, bytes / best * 1e-9,
                   k.entropy_value, k.mi_value);
        } else {
            double flop = 2.0 * (double)rows * (double)(d * d * d);
            printf("  %8lld  %10.4f  %8.4f  %10.4f  %9.1f  %9.1f  %.6g\n", (long long)rows,
                   1e3 * mean, 1e3 * sd, 1e3 * best, flop / mean * 1e-9, flop / best * 1e-9,
                   (double)k.out[0]);
        }
        fflush(stdout);
    }
    free(k.a);
    free(k.b);
    free(k.c);
    free(k.out);
    return result;
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
    int repeat = 5, d = entropy ? 256 : 32;
    double min_time = 0.05;
    bool quick = false;
    const char *csv_path = NULL, *sizes_text = NULL;
    if (!cli_get_int(&args, "repeat", 1, 1000, &repeat) || !cli_get_flag(&args, "quick", &quick) ||
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
    if (csv_path && !(csv = fopen(csv_path, "a"))) {
        fprintf(stderr, "axon bench: cannot open %s for appending: %s\n", csv_path, strerror(errno));
        return CLI_EXIT_RUNTIME;
    }
    printf("axon bench %s: D = %d, %d thread(s), %d sample(s) of >= %g s per size\n", workload, d,
           ax_threads(), repeat, min_time);
    if (entropy)
        printf("  %8s  %10s  %8s  %10s  %9s  %9s  %s\n", "B", "mean ms", "sd ms", "best ms",
               "GB/s", "best GB/s", "H, MI");
    else
        printf("  %8s  %10s  %8s  %10s  %9s  %9s  %s\n", "N", "mean ms", "sd ms", "best ms",
               "GFLOP/s", "best", "A[0,0,0]");
    for (int i = 0; i < size_count && result == CLI_EXIT_OK; i++)
        result = bench_size(workload, entropy, sizes[i], d, repeat, min_time, csv);
    if (csv && fclose(csv) != 0 && result == CLI_EXIT_OK) {
        fprintf(stderr, "axon bench: writing %s failed\n", csv_path);
        result = CLI_EXIT_RUNTIME;
    }
    return result;
}
