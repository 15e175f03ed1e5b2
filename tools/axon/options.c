/* options.c: parsing "--name value" / "--name=value" against a subcommand's
 * option table, and typed getters with range checks. Every message names the
 * subcommand and the option, so a user can fix the line without reading the
 * manual; nothing here can crash on any argument (empty strings, huge numbers,
 * values missing at the end of the line). */
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void cli_error(const cli_args *args, const char *format, ...)
{
    va_list list;
    va_start(list, format);
    fprintf(stderr, "axon %s: ", args->command);
    vfprintf(stderr, format, list);
    fputc('\n', stderr);
    va_end(list);
}

static int find_option(const cli_option *options, int count, const char *name, size_t length)
{
    for (int i = 0; i < count; i++)
        if (strlen(options[i].name) == length && strncmp(options[i].name, name, length) == 0)
            return i;
    return -1;
}

/* Levenshtein distance, capped: only used to suggest a near miss. */
static int edit_distance(const char *a, size_t la, const char *b)
{
    size_t lb = strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    int row[41];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diagonal = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int above = row[j];
            int cost = a[i - 1] == b[j - 1] ? 0 : 1;
            int best = diagonal + cost;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    return row[lb];
}

const char *cli_closest(const char *word, size_t length, const char *const *candidates, int count)
{
    const char *best = NULL;
    int best_distance = 3; /* suggest only near misses, and not for one-letter words */
    for (int i = 0; i < count; i++) {
        int distance = edit_distance(word, length, candidates[i]);
        if (distance < best_distance && (size_t)distance < length) {
            best_distance = distance;
            best = candidates[i];
        }
    }
    return best;
}

static void suggest_option(const cli_args *args, const char *name, size_t length)
{
    const char *names[CLI_MAX_OPTIONS];
    for (int i = 0; i < args->option_count; i++)
        names[i] = args->options[i].name;
    const char *near = cli_closest(name, length, names, args->option_count);
    if (near)
        cli_error(args, "did you mean --%s?", near);
}

static bool is_help(const char *arg) { return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0; }

static const char *flag_value(const char *text)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(text, yes[i]) == 0)
            return "true";
        if (strcmp(text, no[i]) == 0)
            return "false";
    }
    return NULL;
}

int cli_parse(const char *command, const cli_option *options, int option_count, int argc,
              char **argv, int first, cli_args *args)
{
    memset(args, 0, sizeof *args);
    args->command = command;
    args->options = options;
    args->option_count = option_count < CLI_MAX_OPTIONS ? option_count : CLI_MAX_OPTIONS;
    /* --help wins over any other mistake on the line: the user is asking how to fix it. */
    for (int i = first; i < argc; i++)
        if (is_help(argv[i])) {
            args->help = true;
            return CLI_EXIT_OK;
        }
    for (int i = first; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0) {
            if (arg[0] == '-' && arg[1] != '\0') {
                cli_error(args, "unknown option %s (see axon %s --help)", arg, command);
                const char *name = arg + 1;
                size_t length = strcspn(name, "=");
                suggest_option(args, name, length);
            } else {
                cli_error(args, "unexpected argument '%s'; options are written --name value "
                                "(see axon %s --help)", arg, command);
            }
            return CLI_EXIT_USAGE;
        }
        const char *name = arg + 2;
        const char *equals = strchr(name, '=');
        size_t length = equals ? (size_t)(equals - name) : strlen(name);
        int index = length ? find_option(options, args->option_count, name, length) : -1;
        if (index < 0) {
            cli_error(args, "unknown option --%.*s (see axon %s --help)", (int)length, name,
                      command);
            if (length)
                suggest_option(args, name, length);
            return CLI_EXIT_USAGE;
        }
        const cli_option *option = &options[index];
        if (option->type == CLI_FLAG) {
            const char *value = equals ? flag_value(equals + 1) : "true";
            if (!value) {
                cli_error(args, "--%s: expected true or false, got '%s'", option->name, equals + 1);
                return CLI_EXIT_USAGE;
            }
            args->values[index] = value;
            continue;
        }
        if (equals) {
            args->values[index] = equals + 1;
        } else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
            args->values[index] = argv[++i];
        } else {
            cli_error(args, "--%s needs a value (see axon %s --help)", option->name, command);
            return CLI_EXIT_USAGE;
        }
        if (option->type == CLI_LIST) {
            if (args->repeated_count == CLI_MAX_REPEATED) {
                cli_error(args, "--%s: at most %d given in all", option->name, CLI_MAX_REPEATED);
                return CLI_EXIT_USAGE;
            }
            args->repeated_option[args->repeated_count] = index;
            args->repeated[args->repeated_count++] = args->values[index];
        }
    }
    return CLI_EXIT_OK;
}

/* Writes text wrapped to the help column, breaking at spaces; a newline in
 * a table's help string counts as a space, so the tables need not care
 * about the layout. */
static void print_wrapped(FILE *stream, const char *text, int indent, int width)
{
    int column = 0;
    const char *c = text;
    while (*c) {
        if (*c == ' ' || *c == '\n') {
            c++;
            continue;
        }
        int length = (int)strcspn(c, " \n");
        if (column > 0 && column + 1 + length > width) {
            fprintf(stream, "\n%*s", indent, "");
            column = 0;
        } else if (column > 0) {
            fputc(' ', stream);
            column++;
        }
        fwrite(c, 1, (size_t)length, stream);
        column += length;
        c += length;
    }
}

void cli_print_help(const cli_args *args, const char *usage, const char *description,
                    FILE *stream)
{
    enum { LEFT = 24, INDENT = LEFT + 3, WIDTH = 79 - INDENT };
    fprintf(stream, "usage: %s\n\n%s\n\noptions:\n", usage, description);
    for (int i = 0; i < args->option_count; i++) {
        const cli_option *option = &args->options[i];
        char left[64];
        if (option->type == CLI_FLAG || !option->value_name)
            snprintf(left, sizeof left, "--%s", option->name);
        else
            snprintf(left, sizeof left, "--%s %s", option->name, option->value_name);
        fprintf(stream, "  %-*s ", LEFT, left);
        if (strlen(left) > LEFT)
            fprintf(stream, "\n%*s", INDENT, "");
        char text[1024];
        if (option->default_value && option->type != CLI_FLAG)
            snprintf(text, sizeof text, "%s (default %s)", option->help, option->default_value);
        else
            snprintf(text, sizeof text, "%s", option->help);
        print_wrapped(stream, text, INDENT, WIDTH);
        fputc('\n', stream);
    }
    fprintf(stream, "  %-*s print this help\n", LEFT, "--help");
}

static int option_index(const cli_args *args, const char *name)
{
    int index = find_option(args->options, args->option_count, name, strlen(name));
    /* Asking for an option the table lacks is a bug in the subcommand itself. */
    if (index < 0) {
        fprintf(stderr, "axon %s: internal error: no option --%s\n", args->command, name);
        abort();
    }
    return index;
}

bool cli_given(const cli_args *args, const char *name)
{
    return args->values[option_index(args, name)] != NULL;
}

const char *cli_text(const cli_args *args, const char *name)
{
    int index = option_index(args, name);
    return args->values[index] ? args->values[index] : args->options[index].default_value;
}

int cli_list(const cli_args *args, const char *name, const char **texts, int capacity)
{
    const int index = option_index(args, name);
    int count = 0;
    for (int i = 0; i < args->repeated_count && count < capacity; i++)
        if (args->repeated_option[i] == index)
            texts[count++] = args->repeated[i];
    return count;
}

bool cli_get_string(const cli_args *args, const char *name, const char **out)
{
    const char *text = cli_text(args, name);
    if (text)
        *out = text;
    return true;
}

bool cli_get_nonempty(const cli_args *args, const char *name, const char **out)
{
    const char *text = cli_text(args, name);
    if (!text)
        return true;
    if (text[0] == '\0') {
        cli_error(args, "--%s: expected a value, got an empty string", name);
        return false;
    }
    *out = text;
    return true;
}

bool cli_get_flag(const cli_args *args, const char *name, bool *out)
{
    const char *text = cli_text(args, name);
    if (text)
        *out = strcmp(text, "true") == 0;
    return true;
}

/* strtod on the whole text, finite results only. */
static bool parse_plain_number(const char *text, const char *end_of_text, double *out)
{
    /* strtod would skip any leading white space (\f, \v and \r too): refuse it all. */
    if (text == end_of_text || isspace((unsigned char)*text))
        return false;
    char *end = NULL;
    errno = 0;
    double value = strtod(text, &end);
    if (end != end_of_text || !isfinite(value))
        return false;
    *out = value;
    return true;
}

bool cli_parse_number(const char *text, double *out)
{
    const char *end = text + strlen(text);
    const char *slash = strchr(text, '/');
    if (!slash)
        return parse_plain_number(text, end, out);
    double numerator, denominator;
    if (!parse_plain_number(text, slash, &numerator) ||
        !parse_plain_number(slash + 1, end, &denominator) || denominator == 0.0)
        return false;
    double value = numerator / denominator;
    if (!isfinite(value))
        return false;
    *out = value;
    return true;
}

static void describe_range(char *text, size_t capacity, double min, double max, cli_bounds bounds)
{
    const char *low = (bounds & CLI_MIN_OPEN) ? ">" : ">=";
    const char *high = (bounds & CLI_MAX_OPEN) ? "<" : "<=";
    if (isinf(max))
        snprintf(text, capacity, "a number %s %g", low, min);
    else if (bounds == CLI_CLOSED)
        snprintf(text, capacity, "a number between %g and %g", min, max);
    else
        snprintf(text, capacity, "a number %s %g and %s %g", low, min, high, max);
}

bool cli_get_double(const cli_args *args, const char *name, double min, double max,
                    cli_bounds bounds, double *out)
{
    const char *text = cli_text(args, name);
    if (!text)
        return true;
    char wanted[128];
    describe_range(wanted, sizeof wanted, min, max, bounds);
    double value;
    if (!cli_parse_number(text, &value)) {
        cli_error(args, "--%s: expected a number, got '%s'", name, text);
        return false;
    }
    bool low_ok = (bounds & CLI_MIN_OPEN) ? value > min : value >= min;
    bool high_ok = (bounds & CLI_MAX_OPEN) ? value < max : value <= max;
    if (!low_ok || !high_ok) {
        cli_error(args, "--%s: expected %s, got %s", name, wanted, text);
        return false;
    }
    *out = value;
    return true;
}

/* An integer written plainly ("12") or as an exact number ("1e6"). */
static bool parse_integer(const char *text, int64_t *out, bool *out_of_range)
{
    *out_of_range = false;
    if (text[0] == '\0' || isspace((unsigned char)text[0]))
        return false;
    char *end = NULL;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (*end == '\0') {
        if (errno == ERANGE) {
            *out_of_range = true;
            return false;
        }
        *out = value;
        return true;
    }
    double number;
    if (!cli_parse_number(text, &number) || number != floor(number))
        return false;
    if (fabs(number) > 9.0e15) { /* beyond exact integers in a double */
        *out_of_range = true;
        return false;
    }
    *out = (int64_t)number;
    return true;
}

bool cli_get_int64_or(const cli_args *args, const char *name, const char *keyword,
                      int64_t keyword_value, int64_t min, int64_t max, int64_t *out)
{
    const char *text = cli_text(args, name);
    if (!text)
        return true;
    if (keyword && strcmp(text, keyword) == 0) {
        *out = keyword_value;
        return true;
    }
    char alternative[64] = "";
    if (keyword)
        snprintf(alternative, sizeof alternative, " or '%s'", keyword);
    int64_t value;
    bool out_of_range;
    if (!parse_integer(text, &value, &out_of_range) && !out_of_range) {
        cli_error(args, "--%s: expected an integer%s, got '%s'", name, alternative, text);
        return false;
    }
    if (out_of_range || value < min || value > max) {
        if (max == INT64_MAX)
            cli_error(args, "--%s: expected an integer >= %lld%s, got %s", name, (long long)min,
                      alternative, text);
        else
            cli_error(args, "--%s: expected an integer between %lld and %lld%s, got %s", name,
                      (long long)min, (long long)max, alternative, text);
        return false;
    }
    *out = value;
    return true;
}

bool cli_get_int64(const cli_args *args, const char *name, int64_t min, int64_t max, int64_t *out)
{
    return cli_get_int64_or(args, name, NULL, 0, min, max, out);
}

bool cli_get_int(const cli_args *args, const char *name, int min, int max, int *out)
{
    int64_t value = 0;
    bool given = cli_text(args, name) != NULL;
    if (!cli_get_int64(args, name, min, max, &value))
        return false;
    if (given)
        *out = (int)value;
    return true;
}

bool cli_get_choice(const cli_args *args, const char *name, const char *const *choices, int *index)
{
    const char *text = cli_text(args, name);
    if (!text)
        return true;
    int count = 0;
    for (; choices[count]; count++)
        if (strcmp(choices[count], text) == 0) {
            *index = count;
            return true;
        }
    char list[512] = "";
    size_t used = 0;
    for (int i = 0; i < count && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", choices[i]);
    cli_error(args, "--%s: expected one of %s, got '%s'", name, list, text);
    const char *near = cli_closest(text, strlen(text), choices, count);
    if (near)
        cli_error(args, "did you mean %s?", near);
    return false;
}
