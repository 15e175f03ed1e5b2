/* fuzz_options.c: libFuzzer target for the command line's option parser
 * (tools/axon/options.c, with the shared readers of common.c and
 * data_source.c built into this target). The input is an argument vector:
 * words separated by NUL bytes, given to cli_parse as `axon train` would
 * give them, against a table with every kind of option the subcommands use
 * (strings, integers with keywords, numbers, flags, choices). Then every
 * getter runs on every option.
 *
 * Checked besides crashes, leaks and hangs: a refused line or value always
 * prints a message naming the subcommand (stderr is captured for the call);
 * an accepted value is in its range, finite, and not written with leading
 * white space. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "data_source.h"
#include "options.h"

/* The kinds of options of `axon train`, under their real names. */
static const cli_option fuzz_options[] = {
    {"data", CLI_STRING, "D", NULL, "training data"},
    {"layers", CLI_STRING, "SPEC", "auto", "layers after the input"},
    {"optimizer", CLI_STRING, "O", "sgd", "sgd, adam, cg or lbfgs"},
    {"lr", CLI_NUMBER, "X", "auto", "learning rate"},
    {"momentum", CLI_NUMBER, "X", "0.9", "SGD momentum, in [0, 1)"},
    {"nesterov", CLI_FLAG, NULL, NULL, "SGD: Nesterov momentum"},
    {"batch", CLI_INT, "N", "128", "rows per step; 0 or full = full batch"},
    {"epochs", CLI_INT, "N", "10", "passes over the training data"},
    {"l2", CLI_NUMBER, "X", "0", "L2 penalty"},
    {"seed", CLI_INT, "N", "1", "seed"},
    THREADS_OPTION,
    PRECISION_OPTION,
    DEVICE_OPTION,
    {"out", CLI_STRING, "FILE", NULL, "save the trained model there"},
    {"quiet", CLI_FLAG, NULL, NULL, "print nothing but errors"},
    {"keep-checkpoints", CLI_INT, "K", "2", "keep the newest K epoch checkpoints; 0 = all"},
    DATA_SOURCE_OPTIONS,
};
enum { OPTION_COUNT = (int)(sizeof fuzz_options / sizeof *fuzz_options), MAX_WORDS = 256 };

static FILE *capture;       /* stands in for stderr during one input */
static size_t capture_mark; /* its size before the last getter */

static size_t captured(void)
{
    fflush(capture);
    return (size_t)ftell(capture);
}

/* A getter that returns false must have said why. */
static void refused_says_why(bool ok)
{
    size_t now = captured();
    if (!ok && now == capture_mark)
        abort();
    capture_mark = now;
}

static bool starts_blank(const char *text) { return text && isspace((unsigned char)text[0]); }

static void run_getters(const cli_args *args)
{
    static const char *const optimizers[] = {"sgd", "adam", "cg", "lbfgs", NULL};
    capture_mark = captured();
    for (int i = 0; i < OPTION_COUNT; i++) {
        const cli_option *option = &fuzz_options[i];
        const char *text = cli_text(args, option->name);
        bool given = cli_given(args, option->name);
        if (given != (args->values[i] != NULL))
            abort();
        const char *string = NULL;
        refused_says_why(cli_get_string(args, option->name, &string));
        if (string != text)
            abort();
        bool ok = cli_get_nonempty(args, option->name, &string);
        refused_says_why(ok);
        if (ok && text && !*text)
            abort();
        bool flag = false;
        refused_says_why(cli_get_flag(args, option->name, &flag));
        int64_t wide = -7;
        ok = cli_get_int64_or(args, option->name, "full", -1, 0, 1000000, &wide);
        refused_says_why(ok);
        if (ok && text && (wide < -1 || wide > 1000000 || starts_blank(text)))
            abort();
        int narrow = -7;
        ok = cli_get_int(args, option->name, -5, 4096, &narrow);
        refused_says_why(ok);
        if (ok && text && (narrow < -5 || narrow > 4096 || starts_blank(text)))
            abort();
        for (int bounds = CLI_CLOSED; bounds <= CLI_OPEN; bounds++) {
            double value = -7.0;
            const double high = bounds == CLI_MIN_OPEN ? INFINITY : 1.0;
            ok = cli_get_double(args, option->name, 0.0, high, (cli_bounds)bounds, &value);
            refused_says_why(ok);
            if (ok && text) {
                bool low_ok = (bounds & CLI_MIN_OPEN) ? value > 0.0 : value >= 0.0;
                bool high_ok = (bounds & CLI_MAX_OPEN) ? value < high : value <= high;
                if (!isfinite(value) || !low_ok || !high_ok || starts_blank(text))
                    abort();
            }
        }
        int index = -1;
        ok = cli_get_choice(args, option->name, optimizers, &index);
        refused_says_why(ok);
        if (ok && text && (index < 0 || index > 3 || strcmp(optimizers[index], text) != 0))
            abort();
        if (text)
            (void)cli_closest(text, strlen(text), optimizers, 4);
    }
    ax_precision precision;
    refused_says_why(read_precision(args, &precision));
    ax_device device;
    bool ok = read_device(args, &device);
    refused_says_why(ok);
    if (ok && (device.index < 0 || device.index > 1023 ||
               (strcmp(device.backend, "cpu") != 0 && strcmp(device.backend, "cuda") != 0)))
        abort();
    data_settings settings;
    refused_says_why(data_settings_read(args, &settings));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The words, each NUL-terminated (a copy, so the last needs no NUL). */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *argv[MAX_WORDS + 2];
    int argc = 0;
    argv[argc++] = "train";
    for (size_t at = 0; at < size && argc <= MAX_WORDS; at += strlen(text + at) + 1)
        argv[argc++] = text + at;
    argv[argc] = NULL;

    char *buffer = NULL;
    size_t length = 0;
    capture = open_memstream(&buffer, &length);
    if (!capture)
        abort();
    FILE *saved = stderr;
    stderr = capture;
    cli_args args;
    int result = cli_parse("fuzz", fuzz_options, OPTION_COUNT, argc, argv, 1, &args);
    size_t said = captured();
    if (result != CLI_EXIT_OK && result != CLI_EXIT_USAGE)
        abort();
    /* A refused line says why, in the subcommand's name. */
    if (result == CLI_EXIT_USAGE && (said == 0 || strncmp(buffer, "axon fuzz: ", 11) != 0))
        abort();
    if (result == CLI_EXIT_OK && said != 0)
        abort();
    if (result == CLI_EXIT_OK && args.help)
        cli_print_help(&args, "axon fuzz [options]", "The option parser under fuzzing.", capture);
    else if (result == CLI_EXIT_OK)
        run_getters(&args);
    stderr = saved;
    fclose(capture);
    capture = NULL;
    free(buffer);
    free(text);
    return 0;
}
