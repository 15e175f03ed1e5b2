/* test_base_refusals.c: the edges of src/base that the rest of the suite
 * does not reach, each checked for what a caller sees:
 * - AXON_TEST_FAULT (test_fault.c), each in a child process since the
 *   variable is read once per process: every malformed form refused by
 *   ax_test_fault_check, naming the variable and its value; unset or empty,
 *   no fault; a valid one fires once, at its point and count only (a SIGINT
 *   caught by the child, counted), and a TERM kills the child by SIGTERM.
 * - Messages (error.c): every status has its own name, an unknown value
 *   says so; a long context over a long cause is cut (context first,
 *   then the cause) to fill the 1024 bytes of the message, '\0' included.
 * - ax_rng_below (random.c) with a bound just above 2^63, where Lemire's
 *   method rejects about half the draws: the values equal those of the
 *   method written out from its paper (Lemire 2019, "Fast random integer
 *   generation in an interval") over the same xoshiro stream, all below the
 *   bound, and some draws were indeed rejected.
 * - Replacing a file (atomic_file.c): a folder put where the file goes
 *   between open and commit (rename refused: the step, errno EISDIR, the
 *   message naming the path, no temporary left, the folder untouched), a
 *   name too long to look at, and /dev/full written in place (ENOSPC named,
 *   the device not replaced). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/random.h"
#include "test_util.h"

/* ------------------------------------------------------- AXON_TEST_FAULT */

typedef struct child_result {
    int status; /* ax_test_fault_check's, or -1 */
    char message[512];
    int interrupts; /* SIGINTs the child caught */
    int fired;      /* ax_test_fault calls that returned true */
    int signal;     /* the signal that ended the child, 0 if it exited */
} child_result;

static volatile sig_atomic_t interrupts;
static void count_interrupt(int signal_number) { (void)signal_number; interrupts++; }

/* In a child with AXON_TEST_FAULT=value (NULL: unset): the check, then the
 * points "step" 1..3 and "prep-batch" 2 twice. */
static child_result run_child(const char *value)
{
    child_result result = {.status = -1};
    int pipe_ends[2];
    if (pipe(pipe_ends) != 0) {
        CHECK(!"pipe");
        return result;
    }
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) {
        close(pipe_ends[0]);
        if (value)
            setenv("AXON_TEST_FAULT", value, 1);
        else
            unsetenv("AXON_TEST_FAULT");
        signal(SIGINT, count_interrupt);
        child_result mine = {.status = ax_test_fault_check()};
        snprintf(mine.message, sizeof mine.message, "%s", ax_error_message());
        for (int step = 1; step <= 3; step++)
            mine.fired += ax_test_fault("step", step);
        mine.fired += ax_test_fault("prep-batch", 2);
        mine.fired += ax_test_fault("prep-batch", 2);
        mine.interrupts = interrupts;
        ssize_t written = write(pipe_ends[1], &mine, sizeof mine);
        /* exit, not _exit: the coverage counters are written at exit. */
        exit(written == (ssize_t)sizeof mine ? 0 : 1);
    }
    close(pipe_ends[1]);
    ssize_t got = read(pipe_ends[0], &result, sizeof result);
    close(pipe_ends[0]);
    int wait_status = 0;
    waitpid(pid, &wait_status, 0);
    if (WIFSIGNALED(wait_status)) {
        result = (child_result){.status = -1, .signal = WTERMSIG(wait_status)};
    } else {
        CHECK(got == (ssize_t)sizeof result);
        CHECK(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0);
    }
    return result;
}

static void test_fault_variable(void)
{
    static const char *const malformed[] = {
        "KILL",          /* no '@' */
        "HUP@step",      /* not one of the four signals */
        "KILLL@step",    /* a longer name is no signal either */
        "KILL@step:0",   /* N counts from 1 */
        "KILL@step:-2",
        "KILL@step:",    /* no number after the colon */
        "KILL@step:3x",  /* a number and more */
        "KILL@steps",    /* not one of the points */
        "KILL@",
    };
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        const child_result r = run_child(malformed[i]);
        char expected[64];
        snprintf(expected, sizeof expected, "AXON_TEST_FAULT=%s: expected SIGNAL@POINT[:N]",
                 malformed[i]);
        CHECK(r.signal == 0);
        CHECK(r.status == AX_STATUS_BAD_ARGUMENT);
        if (!strstr(r.message, expected) || !strstr(r.message, "unset it")) {
            fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", malformed[i], r.message,
                    expected);
            test_failures++;
        }
        CHECK(r.fired == 0 && r.interrupts == 0); /* a malformed fault never fires */
    }
    /* Unset or empty: nothing to refuse, nothing fires. */
    const char *const none[] = {NULL, ""};
    for (int i = 0; i < 2; i++) {
        const child_result r = run_child(none[i]);
        CHECK(r.status == AX_STATUS_OK && r.fired == 0 && r.interrupts == 0 && r.signal == 0);
    }
    /* INT at the second prep batch: once, though the point is reached twice. */
    child_result r = run_child("INT@prep-batch:2");
    CHECK(r.status == AX_STATUS_OK);
    CHECK(r.fired == 1 && r.interrupts == 1);
    /* INT at step 4, a count never reached: nothing. */
    r = run_child("INT@step:4");
    CHECK(r.status == AX_STATUS_OK && r.fired == 0 && r.interrupts == 0);
    /* TERM at step 2 (the count given), default action: the child ends by SIGTERM. */
    r = run_child("TERM@step:2");
    CHECK(r.signal == SIGTERM);
    /* No count means 1. */
    r = run_child("TERM@step");
    CHECK(r.signal == SIGTERM);
}

/* ------------------------------------------------------------- messages */

static void test_messages(void)
{
    const ax_status statuses[] = {AX_STATUS_OK, AX_STATUS_BAD_ARGUMENT, AX_STATUS_BAD_FILE,
                                  AX_STATUS_BAD_DATA, AX_STATUS_IO_ERROR,
                                  AX_STATUS_OUT_OF_MEMORY, AX_STATUS_DIVERGED,
                                  AX_STATUS_UNSUPPORTED, AX_STATUS_INTERRUPTED,
                                  AX_STATUS_DEVICE};
    const int count = (int)(sizeof statuses / sizeof statuses[0]);
    for (int i = 0; i < count; i++) {
        const char *name = ax_status_name(statuses[i]);
        CHECK(name[0] != '\0' && strcmp(name, "unknown status") != 0);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(name, ax_status_name(statuses[j])) != 0);
    }
    CHECK(strcmp(ax_status_name((ax_status)97), "unknown status") == 0);

    /* A cause of 1000 characters under a context of 1500: the context is
     * cut to 511 (its buffer), the cause to what is left, 510, so that the
     * message fills its 1024 bytes with the '\0'. */
    char context[1501], cause[1001];
    for (int i = 0; i < 1500; i++)
        context[i] = (char)('a' + i % 26);
    context[1500] = '\0';
    for (int i = 0; i < 1000; i++)
        cause[i] = (char)('A' + i % 26);
    cause[1000] = '\0';
    CHECK(ax_fail(AX_STATUS_BAD_FILE, "%s", cause) == AX_STATUS_BAD_FILE);
    CHECK(ax_fail_context(AX_STATUS_IO_ERROR, "%s", context) == AX_STATUS_IO_ERROR);
    const char *message = ax_error_message();
    CHECK(strlen(message) == 1023);
    CHECK(strncmp(message, context, 511) == 0);
    CHECK(strncmp(message + 511, ": ", 2) == 0);
    CHECK(strncmp(message + 513, cause, 510) == 0);
    /* A short context keeps the whole cause after it. */
    CHECK(ax_fail(AX_STATUS_BAD_FILE, "the cause") == AX_STATUS_BAD_FILE);
    CHECK(ax_fail_context(AX_STATUS_BAD_FILE, "reading %s", "x.csv") == AX_STATUS_BAD_FILE);
    CHECK(strcmp(ax_error_message(), "reading x.csv: the cause") == 0);
    ax_error_clear();
    CHECK(ax_error_message()[0] == '\0');
}

/* --------------------------------------------------------- random below */

static void test_rng_below_rejects(void)
{
    const uint64_t bound = ((uint64_t)1 << 63) + 1;
    /* 2^64 mod bound, computed without 128-bit arithmetic: 2^64 - bound = 2^63 - 1 < bound. */
    const uint64_t threshold = ((uint64_t)1 << 63) - 1;
    ax_rng rng, reference;
    ax_rng_seed(&rng, 2024);
    ax_rng_seed(&reference, 2024);
    int draws = 0;
    const int values = 400;
    for (int i = 0; i < values; i++) {
        const uint64_t value = ax_rng_below(&rng, bound);
        CHECK(value < bound);
        /* Lemire: take x * bound (128 bits); reject while its low half < 2^64 mod bound. */
        unsigned __int128 product;
        do {
            product = (unsigned __int128)ax_rng_next(&reference) * bound;
            draws++;
        } while ((uint64_t)product < threshold);
        if (value != (uint64_t)(product >> 64)) {
            fprintf(stderr, "ax_rng_below value %d differs from Lemire's\n", i);
            test_failures++;
            break;
        }
    }
    /* About half the draws are rejected; at least a tenth, by far. */
    CHECK(draws > values + values / 10);
    printf("ax_rng_below: %d values from %d draws\n", values, draws);
}

/* -------------------------------------------------------- atomic files */

static void test_atomic_file_refusals(void)
{
    char folder[] = "/tmp/axon_base_refusals_XXXXXX";
    if (!mkdtemp(folder)) {
        CHECK(!"mkdtemp");
        return;
    }
    ax_atomic_file file;
    char path[256], temporary[sizeof file.temporary];
    snprintf(path, sizeof path, "%s/model.bin", folder);

    /* A folder where the file goes, made after open: the rename is refused. */
    CHECK_OK(ax_atomic_file_open(&file, path));
    CHECK_OK(ax_atomic_file_write(&file, "new bytes", 9));
    snprintf(temporary, sizeof temporary, "%s", file.temporary);
    CHECK(access(temporary, F_OK) == 0);
    CHECK(mkdir(path, 0755) == 0);
    CHECK_FAILS(ax_atomic_file_commit(&file), AX_STATUS_IO_ERROR,
                "model.bin: cannot replace it with the new file: ");
    CHECK(strstr(ax_error_message(), strerror(EISDIR)) != NULL);
    CHECK(file.failed == AX_ATOMIC_STEP_RENAME && file.error == EISDIR);
    CHECK(access(temporary, F_OK) != 0); /* removed */
    struct stat info;
    CHECK(stat(path, &info) == 0 && S_ISDIR(info.st_mode)); /* left as it was */
    rmdir(path);

    /* A name longer than a file system takes (NAME_MAX, 255): refused
     * before anything is made. */
    char long_path[400];
    int used = snprintf(long_path, sizeof long_path, "%s/", folder);
    memset(long_path + used, 'n', sizeof long_path - (size_t)used - 1);
    long_path[sizeof long_path - 1] = '\0';
    CHECK_FAILS(ax_file_write_atomic(long_path, (const void *const[]){"x"}, (const size_t[]){1}, 1,
                                     NULL),
                AX_STATUS_IO_ERROR, strerror(ENAMETOOLONG));

    /* /dev/full, a character device: written in place, and its ENOSPC named. */
    if (access("/dev/full", W_OK) == 0) {
        ax_atomic_file full;
        CHECK_FAILS(ax_file_write_atomic("/dev/full", (const void *const[]){"bytes"},
                                         (const size_t[]){5}, 1, &full),
                    AX_STATUS_IO_ERROR, "/dev/full: writing failed: ");
        CHECK(strstr(ax_error_message(), strerror(ENOSPC)) != NULL);
        CHECK(full.in_place && full.failed == AX_ATOMIC_STEP_WRITE && full.error == ENOSPC);
        CHECK(stat("/dev/full", &info) == 0 && S_ISCHR(info.st_mode));
    } else {
        printf("no writable /dev/full: its case skipped\n");
    }
    CHECK(rmdir(folder) == 0); /* nothing else was left in it */
}

int main(void)
{
    test_fault_variable();
    test_messages();
    test_rng_below_rejects();
    test_atomic_file_refusals();
    return test_finish("test_base_refusals");
}
