/* options.h: the command line's option parser. Each subcommand describes its
 * options in a table (name, type, default, help); cli_parse() checks the
 * arguments against it (unknown options, missing values, malformed numbers)
 * and the typed getters add range checks. A getter prints its own message
 * ("axon train: --lr: expected a number > 0, got -1") and returns false, so
 * a subcommand turns any false into exit status 2 (usage error).
 *
 * The default text in the table is what the getters parse when an option is
 * absent, so the defaults shown by --help are the defaults used. */
#ifndef AXON_CLI_OPTIONS_H
#define AXON_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses of the axon command. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_RUNTIME = 1,     /* bad data, unreadable file, failed training */
    CLI_EXIT_USAGE = 2,       /* bad command line */
    CLI_EXIT_INTERRUPTED = 130, /* stopped by Ctrl-C (128 + SIGINT, as shells report it) */
};

typedef enum cli_type {
    CLI_STRING,
    CLI_INT,     /* an integer (range checked by the getter) */
    CLI_NUMBER,  /* a decimal number, or a ratio like 1/255 */
    CLI_FLAG,    /* no value; --name=true/false also accepted */
    CLI_LIST,    /* a text that may be given several times, each kept in order (cli_list) */
} cli_type;

typedef struct cli_option {
    const char *name;          /* without the leading dashes, e.g. "lr" */
    cli_type type;
    const char *value_name;    /* shown in --help, e.g. "FILE"; NULL for flags */
    const char *default_value; /* used when absent; NULL = no value */
    const char *help;          /* one line (may contain \n for more) */
} cli_option;

enum { CLI_MAX_OPTIONS = 64, CLI_MAX_REPEATED = 32 };

typedef struct cli_args {
    const char *command;       /* "train", for messages */
    const cli_option *options;
    int option_count;
    const char *values[CLI_MAX_OPTIONS]; /* the text given, NULL when absent (a CLI_LIST's last) */
    const char *repeated[CLI_MAX_REPEATED]; /* every CLI_LIST text, in order */
    int repeated_option[CLI_MAX_REPEATED];  /* each one's option index */
    int repeated_count;
    bool help;                 /* --help or -h was given */
} cli_args;

/* Parses argv[first..argc) against options. Returns CLI_EXIT_OK, or CLI_EXIT_USAGE
 * after printing why. Flags given without a value store "true". */
int cli_parse(const char *command, const cli_option *options, int option_count, int argc,
              char **argv, int first, cli_args *args);

/* Prints "usage: ...", the description and a table of options with their
 * defaults. */
void cli_print_help(const cli_args *args, const char *usage, const char *description,
                    FILE *stream);

/* True when the option was given on the command line. */
bool cli_given(const cli_args *args, const char *name);
/* The option's text: as given, else its default, else NULL. */
const char *cli_text(const cli_args *args, const char *name);
/* A CLI_LIST option's texts in the order given (at most capacity): their count. */
int cli_list(const cli_args *args, const char *name, const char **texts, int capacity);

/* Prints "axon CMD: " followed by the formatted message, to stderr. */
void cli_error(const cli_args *args, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Getters: each leaves *out unchanged when the option has neither a value
 * nor a default, and returns false (after printing why) when the text is
 * malformed or out of range. */
bool cli_get_string(const cli_args *args, const char *name, const char **out);
/* A string that must not be empty when present. */
bool cli_get_nonempty(const cli_args *args, const char *name, const char **out);
bool cli_get_flag(const cli_args *args, const char *name, bool *out);
bool cli_get_int64(const cli_args *args, const char *name, int64_t min, int64_t max, int64_t *out);
bool cli_get_int(const cli_args *args, const char *name, int min, int max, int *out);
/* As cli_get_int64, and the word `keyword` (e.g. "full", "auto") gives
 * keyword_value. */
bool cli_get_int64_or(const cli_args *args, const char *name, const char *keyword,
                      int64_t keyword_value, int64_t min, int64_t max, int64_t *out);

/* Bounds of a number: which ends are excluded. */
typedef enum cli_bounds {
    CLI_CLOSED = 0,
    CLI_MIN_OPEN = 1,
    CLI_MAX_OPEN = 2,
    CLI_OPEN = 3,
} cli_bounds;

/* A finite number in [min, max] (ends excluded per bounds); max may be
 * INFINITY. Accepts "0.5", "1e-3" and ratios "1/255". */
bool cli_get_double(const cli_args *args, const char *name, double min, double max,
                    cli_bounds bounds, double *out);
/* One of a NULL-terminated list of words; *index gets its position. */
bool cli_get_choice(const cli_args *args, const char *name, const char *const *choices,
                    int *index);

/* The candidate within two edits of word[0..length), for "did you mean"
 * hints; NULL when none is that close. */
const char *cli_closest(const char *word, size_t length, const char *const *candidates, int count);

/* Parses text as a number the way cli_get_double does (for tests and reuse);
 * false when it is not a finite number. */
bool cli_parse_number(const char *text, double *out);

#endif
