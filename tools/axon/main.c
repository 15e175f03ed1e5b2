/* main.c: the axon command: `axon train|eval|predict|export|plot|info|stats|prep|help`, and
 * `axon --version`. Each subcommand lives in its own file and uses only the
 * public header, like any other program built on libaxon. Exit status: 0 on
 * success, 1 for runtime errors (bad data, unreadable files), 2 for usage
 * errors (bad command line), 130 when Ctrl-C stopped training. Under
 * mpirun, `axon train` joins the MPI job (job.c) and ends it. */
#include <stdio.h>
#include <string.h>

#include "axon.h"
#include "common.h"
#include "job.h"
#include "options.h"
#include "output_stream.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"train", command_train, "train a network on a data set and save it"},
    {"eval", command_eval, "loss, accuracy and confusion matrix of a saved model"},
    {"predict", command_predict, "write a saved model's outputs for a data set as CSV"},
    {"export", command_export, "write a saved model as ONNX, for ONNX runtimes"},
    {"plot", command_plot, "draw the loss and accuracy per epoch of a --metrics file (gnuplot)"},
    {"info", command_info, "version, build (BLAS, CPU features, OpenMP), threads and cores"},
    {"bench", command_bench, "run a reference workload (b1a, b1b, b2, galaxy-cg, entropy-mi, tensor-mean): mean and sd over repeats"},
    {"stats", command_stats, "entropy-mi and tensor-mean of arrays or of a model's layers"},
    {"prep", command_prep, "photographs (folder, tar, tar of tars) to shuffled .npy batches"},
};
enum { COMMAND_COUNT = (int)(sizeof commands / sizeof *commands) };

static void print_overview(FILE *stream)
{
    fprintf(stream,
            "axon %s: trains dense neural networks fast on the CPU and reports how fast.\n\n"
            "usage: axon COMMAND [options]\n\ncommands:\n",
            AX_VERSION);
    for (int i = 0; i < COMMAND_COUNT; i++)
        fprintf(stream, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(stream,
            "  %-9s the options of a command: axon help train (or axon train --help)\n\n"
            "  axon --version    print the version\n\n"
            "example:\n"
            "  axon train --data fashion-mnist --layers 128:relu,128:relu,10:softmax \\\n"
            "             --epochs 5 --out fmnist.safetensors\n"
            "  axon eval --model fmnist.safetensors --data fashion-mnist\n\n"
            "The manual: docs/cli.md.\n",
            "help");
}

static const command *find_command(const char *name)
{
    for (int i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static int unknown_command(const char *name)
{
    fprintf(stderr, "axon: unknown command '%s' (see axon --help)\n", name);
    const char *names[COMMAND_COUNT + 1];
    for (int i = 0; i < COMMAND_COUNT; i++)
        names[i] = commands[i].name;
    names[COMMAND_COUNT] = "help";
    const char *near = cli_closest(name, strlen(name), names, COMMAND_COUNT + 1);
    if (near)
        fprintf(stderr, "axon: did you mean '%s'?\n", near);
    return CLI_EXIT_USAGE;
}

static int help(int argc, char **argv)
{
    if (argc < 3) {
        print_overview(stdout);
        return CLI_EXIT_OK;
    }
    if (argc > 3) {
        fprintf(stderr, "axon help: give one command, e.g. axon help train\n");
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[2], "help") == 0) {
        print_overview(stdout);
        return CLI_EXIT_OK;
    }
    const command *target = find_command(argv[2]);
    if (!target)
        return unknown_command(argv[2]);
    char help_flag[] = "--help";
    char *help_argv[] = {argv[2], help_flag, NULL};
    return target->run(2, help_argv);
}

/* What a command printed must have arrived: a full disk or a closed pipe
 * behind standard output fails the command with the cause, whatever it
 * printed (eval's table, info, train's report), instead of exiting 0 or 1
 * without a word (output_stream.h). */
static int finish_stdout(int result) { return output_stream_finish_stdout(result); }

int main(int argc, char **argv)
{
    cli_release_blas_core_override(argv);
    output_stream_take_stdout();
    if (argc < 2) {
        print_overview(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--version") == 0) {
        printf("axon %s\n", AX_VERSION);
        return finish_stdout(CLI_EXIT_OK);
    }
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0)
        return finish_stdout(help(argc, argv));
    if (name[0] == '-') {
        fprintf(stderr, "axon: unknown option %s; the command comes first, e.g. axon train "
                        "--data ... (see axon --help)\n", name);
        return CLI_EXIT_USAGE;
    }
    const command *target = find_command(name);
    if (!target)
        return unknown_command(name);
    if (target->run != command_train)
        return finish_stdout(target->run(argc - 1, argv + 1));
    /* Data-parallel training: one rank of an MPI job when mpirun started us. */
    int result = cli_job_start(&argc, &argv);
    if (result != CLI_EXIT_OK)
        return result;
    return cli_job_end(finish_stdout(target->run(argc - 1, argv + 1)));
}
