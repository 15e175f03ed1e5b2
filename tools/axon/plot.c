/* plot.c: `axon plot METRICS.jsonl --out loss.png`: the loss and accuracy
 * per epoch of an `axon train --metrics` file, drawn by gnuplot (pngcairo),
 * as scripts/galaxy_picture.py draws the galaxy picture and axon.plot draws
 * the same two panels with matplotlib (python/axon/_plot.py).
 *
 * The script carries its data inline (a gnuplot datablock), so that the
 * copy --script writes redraws the picture alone and shows exactly what was
 * drawn. gnuplot draws into a private temporary folder; the PNG then goes to
 * --out as every output does (ax_output_file: replaced whole or left as it
 * was, a device or FIFO written in place). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "file_roles.h"
#include "metrics_reader.h"
#include "output_stream.h"
#include "options.h"

extern char **environ;

static const cli_option plot_options[] = {
    {"metrics", CLI_STRING, "FILE", NULL,
     "the metrics file (axon train --metrics), if not given first"},
    {"out", CLI_STRING, "FILE", NULL, "the PNG to write (required)"},
    {"size", CLI_STRING, "WxH", "1000x400", "the picture's width and height in pixels"},
    {"title", CLI_STRING, "TEXT", NULL, "the title above the panels (default: the file's name)"},
    {"script", CLI_STRING, "FILE", NULL,
     "also write the gnuplot script, data inline (gnuplot FILE redraws it)"},
};

static const char plot_usage[] = "axon plot METRICS.jsonl --out FILE.png [options]";
static const char plot_description[] =
    "Draws the loss (train, validation, test) and the accuracy (validation,\n"
    "test) per epoch of an axon train --metrics file into a PNG, with gnuplot\n"
    "(Debian: apt-get install gnuplot-nox). Curves the run did not record (null\n"
    "in every line) are left out; so is the accuracy panel for regression.\n"
    "\nexample:\n"
    "  axon train --data fashion-mnist --epochs 10 --metrics m.jsonl --out f.safetensors\n"
    "  axon plot m.jsonl --out loss.png";

static const char *const metric_titles[METRIC_COUNT] = {"train", "validation", "test",
                                                       "validation", "test"};
/* gnuplot's line type of each curve: one colour per set in both panels. */
static const int metric_line_types[METRIC_COUNT] = {1, 2, 3, 2, 3};

/* text as a gnuplot single-quoted string: quotes doubled, line breaks and
 * other control characters as spaces. */
static void write_quoted(FILE *stream, const char *text)
{
    fputc('\'', stream);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '\'')
            fputs("''", stream);
        else
            fputc(*c < 0x20 ? ' ' : *c, stream);
    }
    fputc('\'', stream);
}

static bool has_values(const metrics_series *series, int metric)
{
    for (int64_t i = 0; i < series->count; i++)
        if (isfinite(series->epochs[i].values[metric]))
            return true;
    return false;
}

/* One panel's plot command over the metrics [first, end) that hold values. */
static void write_panel(FILE *stream, const metrics_series *series, int first, int end,
                        const char *name, const char *key)
{
    fprintf(stream, "set title '%s'; set ylabel '%s'; set key %s\nplot", name, name, key);
    const char *separator = " ";
    for (int metric = first; metric < end; metric++) {
        if (!has_values(series, metric))
            continue;
        fprintf(stream, "%s$metrics using 1:%d with linespoints lt %d lw 2 pt 7 ps 0.6 title '%s'",
                separator, metric + 2, metric_line_types[metric], metric_titles[metric]);
        separator = ", \\\n    ";
    }
    fputc('\n', stream);
}

/* value in the fewest digits that read back as the same double: the metrics
 * file's own text for the numbers axon wrote (%.10g), the value exactly. */
static void write_number(FILE *stream, double value)
{
    char text[40];
    for (int digits = 10; digits <= 17; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, value);
        if (strtod(text, NULL) == value)
            break;
    }
    fprintf(stream, " %s", text);
}

/* The whole script: terminal, output, the data, the panels. */
static void write_script(FILE *stream, const metrics_series *series, const char *metrics_path,
                         const char *output, int width, int height, const char *title)
{
    fputs("# axon plot: loss and accuracy per epoch of ", stream);
    write_quoted(stream, metrics_path);
    fputs(" (axon train --metrics)\n# redraw with: gnuplot THIS_FILE\n", stream);
    fprintf(stream, "set terminal pngcairo size %d,%d font 'sans,10'\nset output ", width, height);
    write_quoted(stream, output);
    fputs("\n$metrics << EOD\n# epoch", stream);
    for (int metric = 0; metric < METRIC_COUNT; metric++)
        fprintf(stream, " %s", metric_keys[metric]);
    fputc('\n', stream);
    for (int64_t i = 0; i < series->count; i++) {
        const metrics_epoch *epoch = &series->epochs[i];
        fprintf(stream, "%lld", (long long)epoch->epoch);
        for (int metric = 0; metric < METRIC_COUNT; metric++) {
            if (isfinite(epoch->values[metric]))
                write_number(stream, epoch->values[metric]);
            else
                fputs(" ?", stream);
        }
        fputc('\n', stream);
    }
    fputs("EOD\nset datafile missing '?'\nset grid\nset xlabel 'epoch'\n",
          stream);
    if (series->count <= 20)
        fputs("set xtics 1\n", stream); /* whole epochs only */
    const bool accuracy = has_values(series, METRIC_VAL_ACCURACY) ||
                          has_values(series, METRIC_TEST_ACCURACY);
    fprintf(stream, "set multiplot layout 1,%d title ", accuracy ? 2 : 1);
    write_quoted(stream, title);
    fputc('\n', stream);
    write_panel(stream, series, METRIC_TRAIN_LOSS, METRIC_VAL_ACCURACY, "loss", "top right");
    if (accuracy)
        write_panel(stream, series, METRIC_VAL_ACCURACY, METRIC_COUNT, "accuracy",
                    "bottom right");
    fputs("unset multiplot\n", stream);
}

static bool read_size(const cli_args *args, int *width, int *height)
{
    const char *text = NULL;
    if (!cli_get_nonempty(args, "size", &text))
        return false;
    char tail = '\0';
    if (sscanf(text, "%dx%d%c", width, height, &tail) != 2 || *width < 100 || *height < 100 ||
        *width > 10000 || *height > 10000) {
        cli_error(args, "--size: expected WIDTHxHEIGHT in pixels, each 100 to 10000 (e.g. "
                        "1000x400), got '%s'", text);
        return false;
    }
    return true;
}

typedef struct plot_work {
    char folder[4096];       /* the private temporary folder */
    char script[4096 + 16];  /* folder/plot.gp */
    char picture[4096 + 16]; /* folder/plot.png */
    char log[4096 + 16];     /* folder/gnuplot.log: gnuplot's messages */
} plot_work;

static void work_remove(plot_work *work)
{
    if (!work->folder[0])
        return;
    unlink(work->script);
    unlink(work->picture);
    unlink(work->log);
    rmdir(work->folder);
}

/* The last lines of gnuplot's messages, for a failure. */
static void print_log_tail(const char *log)
{
    FILE *file = fopen(log, "r");
    if (!file)
        return;
    char text[2048];
    size_t got = 0;
    if (fseek(file, -(long)(sizeof text - 1), SEEK_END) != 0)
        rewind(file);
    got = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[got] = '\0';
    if (got > 0)
        fprintf(stderr, "%s%s", text, text[got - 1] == '\n' ? "" : "\n");
}

/* Runs gnuplot on the script; 0, or 1 after saying why. */
static int run_gnuplot(const plot_work *work)
{
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, work->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    char program[] = "gnuplot";
    char *argv[] = {program, (char *)work->script, NULL};
    pid_t child = 0;
    int failed = posix_spawnp(&child, "gnuplot", &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (failed == ENOENT) {
        fprintf(stderr, "axon: axon plot draws with gnuplot, which is not installed (not found "
                        "on PATH); install it with: apt-get install gnuplot-nox\n");
        return 1;
    }
    if (failed) {
        fprintf(stderr, "axon: cannot run gnuplot: %s\n", strerror(failed));
        return 1;
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "axon: waiting for gnuplot failed: %s\n", strerror(errno));
            return 1;
        }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status))
        fprintf(stderr, "axon: gnuplot failed (exit status %d); it said:\n", WEXITSTATUS(status));
    else
        fprintf(stderr, "axon: gnuplot was killed by signal %d; it said:\n",
                WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    print_log_tail(work->log);
    return 1;
}

/* The picture gnuplot drew, whole, into *bytes (malloc'd); checked for the
 * PNG signature, so that a gnuplot without pngcairo's output is caught. */
static int read_picture(const char *path, unsigned char **bytes, size_t *size)
{
    *bytes = NULL;
    *size = 0;
    FILE *file = fopen(path, "rb");
    struct stat info;
    if (!file || fstat(fileno(file), &info) != 0 || info.st_size < 8) {
        fprintf(stderr, "axon: gnuplot wrote no picture (is its pngcairo terminal there? "
                        "gnuplot -e 'set terminal' lists them)\n");
        if (file)
            fclose(file);
        return 1;
    }
    *size = (size_t)info.st_size;
    *bytes = malloc(*size);
    size_t got = *bytes ? fread(*bytes, 1, *size, file) : 0;
    fclose(file);
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (got != *size || memcmp(*bytes, signature, 8) != 0) {
        fprintf(stderr, "axon: gnuplot's picture %s is not a whole PNG\n", path);
        free(*bytes);
        *bytes = NULL;
        return 1;
    }
    return 0;
}

/* Draws series into work->picture; writes the script for drawing there. */
static int draw(plot_work *work, const metrics_series *series, const char *metrics_path,
                int width, int height, const char *title)
{
    const char *temporary = getenv("TMPDIR");
    if (!temporary || !temporary[0])
        temporary = "/tmp";
    if (snprintf(work->folder, sizeof work->folder, "%s/axon-plot.XXXXXX", temporary) >=
        (int)sizeof work->folder) {
        fprintf(stderr, "axon: TMPDIR %s is too long a folder name\n", temporary);
        work->folder[0] = '\0';
        return 1;
    }
    if (!mkdtemp(work->folder)) {
        fprintf(stderr, "axon: cannot make a temporary folder in %s: %s\n", temporary,
                strerror(errno));
        work->folder[0] = '\0';
        return 1;
    }
    snprintf(work->script, sizeof work->script, "%s/plot.gp", work->folder);
    snprintf(work->picture, sizeof work->picture, "%s/plot.png", work->folder);
    snprintf(work->log, sizeof work->log, "%s/gnuplot.log", work->folder);
    FILE *stream = fopen(work->script, "w");
    if (!stream) {
        fprintf(stderr, "axon: cannot write %s: %s\n", work->script, strerror(errno));
        return 1;
    }
    write_script(stream, series, metrics_path, work->picture, width, height, title);
    if (fclose(stream) != 0) {
        fprintf(stderr, "axon: cannot write %s: %s\n", work->script, strerror(errno));
        return 1;
    }
    return run_gnuplot(work);
}

/* The PNG to --out and the script to --script, both or neither. */
static int write_outputs(const char *out_path, const unsigned char *png, size_t png_size,
                         const char *script_path, const metrics_series *series,
                         const char *metrics_path, int width, int height, const char *title)
{
    ax_output_file *picture = NULL;
    if (ax_output_file_open(out_path, &picture) != AX_STATUS_OK ||
        ax_output_file_write(picture, png, png_size) != AX_STATUS_OK) {
        fprintf(stderr, "axon: --out %s: %s\n", out_path, ax_error_message());
        ax_output_file_abandon(picture);
        return CLI_EXIT_RUNTIME;
    }
    if (script_path) {
        output_stream script;
        int result = output_stream_open(&script, "--script", script_path);
        if (result == CLI_EXIT_OK) {
            write_script(script.stream, series, metrics_path, out_path, width, height, title);
            result = output_stream_close(&script, true);
        }
        if (result != CLI_EXIT_OK) {
            ax_output_file_abandon(picture);
            return result;
        }
    }
    if (ax_output_file_commit(picture) != AX_STATUS_OK) {
        fprintf(stderr, "axon: --out %s: %s\n", out_path, ax_error_message());
        return CLI_EXIT_RUNTIME;
    }
    return CLI_EXIT_OK;
}

int command_plot(int argc, char **argv)
{
    /* The metrics file may come first, as a plain argument. */
    const char *metrics_path = NULL;
    int first = 1;
    if (argc > 1 && argv[1][0] != '-') {
        metrics_path = argv[1];
        first = 2;
    }
    cli_args args;
    int result = cli_parse("plot", plot_options,
                           (int)(sizeof plot_options / sizeof *plot_options), argc, argv, first,
                           &args);
    if (result != CLI_EXIT_OK)
        return result;
    if (args.help) {
        cli_print_help(&args, plot_usage, plot_description, stdout);
        return CLI_EXIT_OK;
    }
    const char *given = NULL, *out_path = NULL, *title = NULL, *script_path = NULL;
    int width = 0, height = 0;
    if (!cli_get_nonempty(&args, "metrics", &given) || !cli_get_nonempty(&args, "out", &out_path) ||
        !cli_get_string(&args, "title", &title) ||
        !cli_get_nonempty(&args, "script", &script_path) || !read_size(&args, &width, &height))
        return CLI_EXIT_USAGE;
    if (given && metrics_path) {
        cli_error(&args, "the metrics file is given twice (%s and --metrics %s): give one",
                  metrics_path, given);
        return CLI_EXIT_USAGE;
    }
    metrics_path = metrics_path ? metrics_path : given;
    if (!metrics_path || !out_path) {
        cli_error(&args, "%s is required (see axon plot --help)",
                  metrics_path ? "--out FILE.png" : "the metrics file (axon plot METRICS.jsonl)");
        return CLI_EXIT_USAGE;
    }
    file_roles roles = {0};
    file_roles_input(&roles, "METRICS", metrics_path, "the metrics file");
    file_roles_output(&roles, "--out", out_path);
    file_roles_output(&roles, "--script", script_path);
    result = file_roles_check(&roles);
    if (result != CLI_EXIT_OK)
        return result;

    metrics_series series;
    if (metrics_series_read(metrics_path, &series) != 0)
        return CLI_EXIT_RUNTIME;
    bool anything = false;
    for (int metric = 0; metric < METRIC_COUNT; metric++)
        anything = anything || has_values(&series, metric);
    if (!anything) {
        fprintf(stderr, "axon: %s: no loss or accuracy to draw (null in every line)\n",
                metrics_path);
        metrics_series_free(&series);
        return CLI_EXIT_RUNTIME;
    }
    if (!title) {
        const char *slash = strrchr(metrics_path, '/');
        title = slash ? slash + 1 : metrics_path;
    }
    plot_work work;
    memset(&work, 0, sizeof work);
    unsigned char *png = NULL;
    size_t png_size = 0;
    result = CLI_EXIT_RUNTIME;
    if (draw(&work, &series, metrics_path, width, height, title) == 0 &&
        read_picture(work.picture, &png, &png_size) == 0)
        result = write_outputs(out_path, png, png_size, script_path, &series, metrics_path, width,
                               height, title);
    if (result == CLI_EXIT_OK)
        printf("wrote %s: %lld epochs, %dx%d pixels\n", out_path, (long long)series.count, width,
               height);
    free(png);
    work_remove(&work);
    metrics_series_free(&series);
    return result;
}
