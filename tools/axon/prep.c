/* prep.c: `axon prep`, seed 002's image-to-batch pipeline (B6) on the
 * command line: photographs (a folder tree, a .tar or a tar of tars) in,
 * shuffled .npy batches out, with a live line of images done / total,
 * images/s and ETA (as `axon train` shows its batches), and a summary with
 * the files skipped and where the time went. Ctrl-C stops after the batches
 * already complete; rerunning the same command makes the rest. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
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
    {"quiet", CLI_FLAG, NULL, NULL, "no live progress line"},
    THREADS_OPTION,
};

static const char prep_usage[] =
    "axon prep --input DIR|FILE.tar --out DIR [--size 256] [--batch 1024] [--seed 1] [--grey]";
static const char prep_description[] =
    "Turns photographs into shuffled batches a network can train on (seed 002, B6):\n"
    "each JPEG or PNG is decoded (JPEG at the smallest DCT scale not below S),\n"
    "resized with an area filter so its shorter side is S, centre-cropped to S x S,\n"
    "and put in batch_NNNNN.npy (K, S, S, C) uint8 with batch_NNNNN_labels.npy (K)\n"
    "int32; meta.json names the labels and batches, mean.npy is the mean image.\n"
    "The label of an image is the top-level folder or inner tar it sits in.\n"
    "Damaged files are skipped and listed. A rerun into the same --out keeps the\n"
    "complete batches. Format: docs/prep.md. Train on it with --data batches:DIR.\n"
    "\nexample:\n  axon prep --input photos/ --out batches/ --size 64 --batch 512\n"
    "  axon train --data batches:batches/ --layers 256,10:softmax";

typedef struct prep_display {
    bool live;
    bool shown;
} prep_display;

static bool on_progress(const ax_prep_progress *progress, void *user)
{
    prep_display *display = user;
    if (display->live) {
        char eta[32];
        format_duration(progress->eta_seconds, eta, sizeof eta);
        fprintf(stderr, "\rprep  images %lld/%lld  batch %lld/%lld  %.0f images/s  skipped %lld  "
                "ETA %s\033[K",
                (long long)progress->images_done, (long long)progress->images_total,
                (long long)progress->batches_done, (long long)progress->batches_total,
                progress->images_per_second, (long long)progress->images_skipped, eta);
        fflush(stderr);
        display->shown = true;
    }
    return !progress_interrupted();
}

static void print_summary(const ax_prep_summary *s, const char *out, int threads)
{
    char total[32];
    format_seconds(s->seconds, total, sizeof total);
    printf("prep: %lld images written, %lld skipped, %lld other files ignored; %lld labels\n",
           (long long)s->images_written, (long long)s->images_skipped,
           (long long)s->files_ignored, (long long)s->labels);
    printf("prep: %lld batches written, %lld kept from an earlier run, in %s\n",
           (long long)s->batches_written, (long long)s->batches_reused, out);
    double processed = (double)(s->images_written + s->images_skipped);
    printf("prep: %s, %.0f images/s with %d threads (listing %.2f s; thread-seconds: read %.2f, "
           "decode %.2f, resize %.2f; write %.2f s)\n",
           total, s->seconds > 0 ? processed / s->seconds : 0.0, threads, s->seconds_enumerate,
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
    ax_prep_options options = ax_prep_defaults();
    int64_t seed = 1;
    bool quiet = false;
    if (!cli_get_nonempty(&args, "input", &options.input) ||
        !cli_get_nonempty(&args, "out", &options.output) ||
        !cli_get_int64(&args, "size", 1, 16384, &options.image_size) ||
        !cli_get_int64(&args, "batch", 1, 1000000, &options.batch_size) ||
        !cli_get_int64(&args, "seed", 0, INT64_MAX, &seed) ||
        !cli_get_flag(&args, "grey", &options.grey) || !cli_get_flag(&args, "quiet", &quiet) ||
        !cli_get_nonempty(&args, "labels", &options.labels_file))
        return CLI_EXIT_USAGE;
    if (!options.input || !options.output) {
        cli_error(&args, "--input and --out are required (see axon prep --help)");
        return CLI_EXIT_USAGE;
    }
    options.seed = (uint64_t)seed;
    result = apply_threads(&args);
    if (result != CLI_EXIT_OK)
        return result;
    options.threads = ax_threads();

    prep_display display = {.live = !quiet && isatty(fileno(stderr)), .shown = false};
    ax_prep_summary summary;
    progress_catch_interrupt();
    ax_status status = ax_prep_run(&options, on_progress, &display, &summary);
    progress_release_interrupt();
    if (display.shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    if (status == AX_STATUS_OK || summary.images_found > 0)
        print_summary(&summary, options.output, options.threads);
    ax_prep_summary_free(&summary);
    if (status != AX_STATUS_OK)
        return report_failure(status, options.input);
    return CLI_EXIT_OK;
}
