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
};

static const char info_usage[] = "axon info [--threads N] [--json]";
static const char info_description[] =
    "Prints the version, the build (BLAS library and kernels, CPU features,\n"
    "backends, compiler, OpenMP), the threads in use and the number of cores.";

static const char *or_unknown(const char *text) { return text && text[0] ? text : "unknown"; }

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
    bool json = false;
    if (!cli_get_flag(&args, "json", &json))
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
        printf("  cpu features  %s\n", build.cpu_features && build.cpu_features[0]
                                           ? build.cpu_features : "(none detected)");
        printf("  backends      %s\n", or_unknown(build.backends));
        printf("  compiler      %s\n", or_unknown(build.compiler));
        printf("  openmp        %s\n", build.openmp ? "yes" : "no");
        printf("  threads       %d in use (%s)\n", ax_threads(),
               strcmp(cli_text(&args, "threads"), "auto") != 0 ? "--threads"
               : omp_threads                ? "OMP_NUM_THREADS"
                                            : "default: all cores");
        printf("  cores         %ld\n", cores);
    }
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_RUNTIME;
}
