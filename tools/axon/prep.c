/* prep.c: `axon prep`, the image-to-batch pipeline (cuda-convnet2's data
 * preparation, parallelised over threads and MPI ranks; docs/prep.md) on the
 * command line: photographs (a folder tree, a .tar or a tar of tars) in,
 * shuffled .npy batches out, with a live line of images done / total,
 * images/s and ETA (as `axon train` shows its batches), and a summary with
 * the files skipped and where the time went. Ctrl-C stops after the batches
 * already complete; rerunning the same command makes the rest.
 *
 * Under `mpirun -np P axon prep ...` the library joins the P processes
 * (src/prep/ranks.c); here only rank 0 (from mpirun's environment) shows the
 * progress, the summary and the error, so they appear once. Each rank uses
 * the CPUs mpirun bound it to unless --threads says otherwise. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "file_roles.h"
#include "options.h"
#include "progress.h"

static const cli_option prep_options[] = {
    {"input", CLI_STRING, "PATH", NULL,
     "a folder of images (one subfolder or .tar per label), a .tar, or a tar of tars"},
    {"out", CLI_STRING, "DIR", NULL, "folder for the batches, meta.json and mean.npy"},
    {"size", CLI_INT, "S", "256", "images become S x S: shorter side to S, centre crop"},
    {"batch", CLI_INT, "K", "1024", "images per batch file"},
    {"seed", CLI_INT, "N", "1", "the shuffle; the same seed gives the same batches"},
    {"grey", CLI_FLAG, NULL, NULL, "one grey channel instead of RGB"},
    {"labels", CLI_STRING, "FILE", NULL,
     "label names, one a line: their order numbers the labels\n"
     "(default: byte order of the folder or inner tar names)"},
    {"ground-truth", CLI_STRING, "FILE", NULL,
     "a validation set as ILSVRC gives it: --input holds the images flat, and\n"
     "line i of FILE (a label number from 1, the i-th name of --labels) labels\n"
     "the i-th image in byte order of the file names"},
    {"format", CLI_STRING, "raw|jpeg|cuda-convnet2", "raw",
     "raw: batch_NNNNN.npy pixels; jpeg: batch_NNNNN.jpegs, each image a JPEG\n"
     "of S x S (about a fifth of the size; decoded while training);\n"
     "cuda-convnet2: --input is a folder axon prep wrote, converted to\n"
     "cuda-convnet2's data_batch_N pickles and batches.meta"},
    {"from-cuda-convnet2", CLI_STRING, "DIR", NULL,
     "convert cuda-convnet2's batch folder DIR (data_batch_N, batches.meta)\n"
     "to axon's batches of --format raw or jpeg, instead of --input"},
    {"quality", CLI_INT, "Q", "90", "JPEG quality 1 .. 100 of --format jpeg"},
    {"quiet", CLI_FLAG, NULL, NULL, "no live progress line"},
    THREADS_OPTION,
};

static const char prep_usage[] =
    "axon prep --input DIR|FILE.tar --out DIR [--size 256] [--batch 1024] [--seed 1] [--grey]\n"
    "          [--format raw|jpeg [--quality 90]]\n"
    "axon prep --from-cuda-convnet2 DIR --out DIR [--format raw|jpeg [--quality 90]]\n"
    "axon prep --input DIR --out DIR --format cuda-convnet2";
static const char prep_description[] =
    "Turns photographs into shuffled batches a network can train on:\n"
    "each JPEG or PNG is decoded (JPEG at the smallest DCT scale not below S),\n"
    "resized with an area filter so its shorter side is S, centre-cropped to S x S,\n"
    "and put in batch_NNNNN.npy (K, S, S, C) uint8 with batch_NNNNN_labels.npy (K)\n"
    "int32; meta.json names the labels and batches, mean.npy is the mean image.\n"
    "The label of an image is the top-level folder or inner tar it sits in.\n"
    "Damaged files are skipped and listed. A rerun into the same --out keeps the\n"
    "complete batches. Format: docs/prep.md. Train on it with --data batches:DIR.\n"
    "Under mpirun (build with MPI) the processes share the batches, rank 0 shows\n"
    "the progress of all; the files are the same for any number of processes.\n"
    "\nexample:\n  axon prep --input photos/ --out batches/ --size 64 --batch 512\n"
    "  mpirun -np 4 axon prep --input photos/ --out batches/\n"
    "  axon prep --from-cuda-convnet2 cifar-10-py-colmajor/ --out cifar/\n"
    "  axon train --data batches:batches/ --layers 256,10:softmax";

typedef struct prep_display {
    bool live;         /* stderr is a terminal: one line rewritten in place */
    bool lines;        /* under mpirun, whose stderr is a pipe: a line every few seconds */
    bool shown;
    bool finished_shown; /* lines: the line with every image done is out */
    double last_line;
} prep_display;

static bool on_progress(const ax_prep_progress *progress, void *user)
{
    prep_display *display = user;
    bool finished = progress->images_done == progress->images_total;
    if (display->live ||
        (display->lines && !display->finished_shown &&
         (finished || ax_seconds_now() - display->last_line >= 5.0))) {
        display->finished_shown = finished;
        char eta[32];
        format_duration(progress->eta_seconds, eta, sizeof eta);
        fprintf(stderr, "%sprep  images %lld/%lld  batch %lld/%lld  %.0f images/s  skipped %lld  "
                "ETA %s%s",
                display->live ? "\r" : "", (long long)progress->images_done,
                (long long)progress->images_total, (long long)progress->batches_done,
                (long long)progress->batches_total, progress->images_per_second,
                (long long)progress->images_skipped, eta, display->live ? "\033[K" : "\n");
        fflush(stderr);
        display->shown = display->live;
        display->last_line = ax_seconds_now();
    }
    return !progress_interrupted();
}

/* mpirun's rank of this process and the number of processes; 0 and 0 when
 * not started by mpirun. */
static int launched(const char *const *names)
{
    for (int i = 0; names[i]; i++) {
        const char *text = getenv(names[i]);
        if (text && *text)
            return atoi(text);
    }
    return 0;
}
static int launched_rank(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", NULL};
    return launched(names);
}
static int launched_size(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", NULL};
    return launched(names);
}

static int cpus_available(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
}

static void print_summary(const ax_prep_summary *s, const char *out, int threads, int processes)
{
    char total[32];
    format_seconds(s->seconds, total, sizeof total);
    printf("prep: %lld images written, %lld skipped, %lld other files ignored; %lld labels\n",
           (long long)s->images_written, (long long)s->images_skipped,
           (long long)s->files_ignored, (long long)s->labels);
    if (s->links_skipped > 0)
        printf("prep: %lld symbolic link%s not followed (each named in a warning)\n",
               (long long)s->links_skipped, s->links_skipped == 1 ? "" : "s");
    printf("prep: %lld batches written, %lld kept from an earlier run, in %s\n",
           (long long)s->batches_written, (long long)s->batches_reused, out);
    double processed = (double)(s->images_written + s->images_skipped);
    char workers[64];
    if (processes > 1)
        snprintf(workers, sizeof workers, "%d processes x %d threads", processes, threads);
    else
        snprintf(workers, sizeof workers, "%d threads", threads);
    printf("prep: %s, %.0f images/s with %s (listing %.2f s; thread-seconds: read %.2f, "
           "decode %.2f, resize %.2f; write %.2f s)\n",
           total, s->seconds > 0 ? processed / s->seconds : 0.0, workers, s->seconds_enumerate,
           s->seconds_read, s->seconds_decode, s->seconds_resize, s->seconds_write);
    for (int64_t i = 0; i < s->warnings_kept; i++)
        fprintf(stderr, "axon prep: warning: %s\n", s->warnings[i]);
    if (s->warning_count > s->warnings_kept)
        fprintf(stderr, "axon prep: ... and %lld more warnings\n",
                (long long)(s->warning_count - s->warnings_kept));
}

int command_prep(int argc, char **argv)
{
    cli_args args;
    int result = cli_parse("prep", prep_options, (int)(sizeof prep_options / sizeof *prep_options),
                           argc, argv, 1, &args);
    if (result != CLI_EXIT_OK)
        return result;
    if (args.help) {
        cli_print_help(&args, prep_usage, prep_description, stdout);
        return CLI_EXIT_OK;
    }
    if (!cli_component_built(CLI_COMPONENT_PREP))
        return cli_refuse_unbuilt("prep", CLI_COMPONENT_PREP);
    ax_prep_options options = ax_prep_defaults();
    int64_t seed = 1;
    bool quiet = false;
    const char *from_cuda_convnet2 = NULL;
    if (!cli_get_nonempty(&args, "from-cuda-convnet2", &from_cuda_convnet2) ||
        !cli_get_nonempty(&args, "input", &options.input) ||
        !cli_get_nonempty(&args, "out", &options.output) ||
        !cli_get_int64(&args, "size", 1, 16384, &options.image_size) ||
        !cli_get_int64(&args, "batch", 1, 1000000, &options.batch_size) ||
        !cli_get_int64(&args, "seed", 0, INT64_MAX, &seed) ||
        !cli_get_flag(&args, "grey", &options.grey) || !cli_get_flag(&args, "quiet", &quiet) ||
        !cli_get_nonempty(&args, "labels", &options.labels_file) ||
        !cli_get_nonempty(&args, "ground-truth", &options.ground_truth))
        return CLI_EXIT_USAGE;
    static const char *const formats[] = {"raw", "jpeg", "cuda-convnet2", NULL};
    int format = 0;
    if (!cli_get_choice(&args, "format", formats, &format) ||
        !cli_get_int(&args, "quality", 1, 100, &options.jpeg_quality))
        return CLI_EXIT_USAGE;
    options.format = format == 1   ? AX_PREP_FORMAT_JPEG
                     : format == 2 ? AX_PREP_FORMAT_CUDA_CONVNET2
                                   : AX_PREP_FORMAT_RAW;
    if (cli_given(&args, "quality") && options.format != AX_PREP_FORMAT_JPEG) {
        cli_error(&args, "--quality is the JPEG quality of --format jpeg");
        return CLI_EXIT_USAGE;
    }
    const bool converting = from_cuda_convnet2 || options.format == AX_PREP_FORMAT_CUDA_CONVNET2;
    if (from_cuda_convnet2 && options.input) {
        cli_error(&args, "give the input once: --input or --from-cuda-convnet2");
        return CLI_EXIT_USAGE;
    }
    if (from_cuda_convnet2 && options.format == AX_PREP_FORMAT_CUDA_CONVNET2) {
        cli_error(&args, "--from-cuda-convnet2 makes axon's batches: --format raw or jpeg");
        return CLI_EXIT_USAGE;
    }
    if (from_cuda_convnet2) {
        options.input = from_cuda_convnet2;
        options.from_cuda_convnet2 = true;
    }
    if (converting) { /* the folder's own settings are kept */
        static const char *const settings[] = {"size", "batch", "seed", "grey", "labels",
                                               "ground-truth", NULL};
        for (int i = 0; settings[i]; i++)
            if (cli_given(&args, settings[i])) {
                cli_error(&args, "--%s: a conversion keeps the batches' own settings (%s)",
                          settings[i], from_cuda_convnet2 ? "--from-cuda-convnet2" : "--format cuda-convnet2");
                return CLI_EXIT_USAGE;
            }
    }
    if (!options.input || !options.output) {
        cli_error(&args, "--input and --out are required (or --from-cuda-convnet2 DIR and --out; see "
                         "axon prep --help)");
        return CLI_EXIT_USAGE;
    }
    options.seed = (uint64_t)seed;
    result = apply_threads(&args);
    if (result != CLI_EXIT_OK)
        return result;
    /* The files prep writes into --out (docs/prep.md) against its inputs. */
    static const char *const written[] = {"batch_*.npy", "batch_*.jpegs", "meta.json", "mean.npy", "plan.json",
                                          "data_batch_*", "batches.meta", "*.tmp.*", NULL};
    file_roles roles = {0};
    file_roles_input(&roles, from_cuda_convnet2 ? "--from-cuda-convnet2" : "--input", options.input,
                     "the input");
    file_roles_input(&roles, "--labels", options.labels_file, "the label names");
    file_roles_input(&roles, "--ground-truth", options.ground_truth, "the ground truth");
    file_roles_folder(&roles, "--out", options.output, written);
    result = file_roles_check(&roles);
    if (result != CLI_EXIT_OK)
        return result;
    options.threads = ax_threads();
    const int processes = launched_size(), rank = launched_rank();
    if (processes > 1 && !cli_given(&args, "threads") && !getenv("OMP_NUM_THREADS"))
        options.threads = cpus_available(); /* mpirun binds each rank to its share */

    /* Rank 0 speaks for all: the library calls on_progress only there. */
    const bool speaker = rank == 0;
    prep_display display = {.live = !quiet && speaker && isatty(fileno(stderr)),
                            .lines = !quiet && speaker && processes > 1 &&
                                     !isatty(fileno(stderr)),
                            .last_line = ax_seconds_now()};
    ax_prep_summary summary = ax_prep_summary_empty();
    progress_catch_interrupt();
    ax_status status = ax_prep_run(&options, on_progress, &display, &summary);
    if (display.shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    if (converting) {
        if (status == AX_STATUS_OK)
            printf("prep: %lld images in %lld batches, %lld labels, converted from %s to %s in %s "
                   "(%.2f s)\n",
                   (long long)summary.images_written, (long long)summary.batches_written,
                   (long long)summary.labels,
                   from_cuda_convnet2 ? "cuda-convnet2's batches" : "axon's batches",
                   from_cuda_convnet2 ? (options.format == AX_PREP_FORMAT_JPEG ? "axon's JPEG batches" : "axon's raw batches")
                                      : "cuda-convnet2's batches",
                   options.output, summary.seconds);
    } else if (speaker && (status == AX_STATUS_OK || summary.images_found > 0))
        print_summary(&summary, options.output, options.threads, processes);
    ax_prep_summary_free(&summary);
    if (status != AX_STATUS_OK)
        return speaker ? report_failure(status, options.input)
               : status == AX_STATUS_INTERRUPTED ? CLI_EXIT_INTERRUPTED : CLI_EXIT_RUNTIME;
    return CLI_EXIT_OK;
}
