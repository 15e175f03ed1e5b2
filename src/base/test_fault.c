/* test_fault.c: the fault-injection point of the kill and signal tests.
 *
 * AXON_TEST_FAULT="SIGNAL@POINT[:N]" (for tests only) makes the process
 * raise SIGNAL on itself the first time it reaches POINT number N:
 *   SIGNAL  KILL, TERM, INT or STOP (STOP: the test signals it while it waits)
 *   POINT   step        after the Nth optimizer step of the run: a batch of
 *                       SGD or Adam, an iteration of CG or L-BFGS, counted
 *                       from the start of the run across resumes, as the
 *                       checkpoint counts them
 *           saving      `axon train` after training ended, before the model
 *                       is written (N is 1)
 *           prep-batch  `axon prep` after the Nth batch this process made
 *                       (handed to its writer thread) or found complete
 * A test then kills or stops a run at a known step on every machine, fast or
 * slow, busy or idle, instead of sending a signal after a guessed delay.
 *
 * Why a signal raised by the process itself rather than a direct exit or a
 * flag: the process takes the very path a signal from outside takes (the
 * default action for KILL, axon's handlers for TERM and INT), so the tests
 * exercise what users hit. Without the variable each point costs one load
 * and one branch (the variable is read once). It fires once per process: the
 * replicas of one process (threads) reach each step together, and the first
 * to arrive raises the signal for all, as a signal from outside would. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

enum { POINT_NAME_CAPACITY = 16 };

static struct {
    pthread_once_t once;
    bool armed;           /* a valid fault is set */
    bool malformed;       /* the variable was set but not understood */
    int signal_number;
    char point[POINT_NAME_CAPACITY];
    long long count;
    atomic_bool fired;
} fault = {.once = PTHREAD_ONCE_INIT};

static const struct {
    const char *name;
    int number;
} signals[] = {{"KILL", SIGKILL}, {"TERM", SIGTERM}, {"INT", SIGINT}, {"STOP", SIGSTOP}};

static const char *const points[] = {"step", "saving", "prep-batch"};

static void read_variable(void)
{
    const char *text = getenv("AXON_TEST_FAULT");
    if (!text || !*text)
        return;
    fault.malformed = true;
    const char *at = strchr(text, '@');
    if (!at)
        return;
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        if ((size_t)(at - text) == strlen(signals[i].name) &&
            strncmp(text, signals[i].name, (size_t)(at - text)) == 0)
            fault.signal_number = signals[i].number;
    if (fault.signal_number == 0)
        return;
    const char *point = at + 1, *colon = strchr(point, ':');
    const size_t length = colon ? (size_t)(colon - point) : strlen(point);
    fault.count = 1;
    if (colon) {
        char *end;
        fault.count = strtoll(colon + 1, &end, 10);
        if (*end || end == colon + 1 || fault.count < 1)
            return;
    }
    for (size_t i = 0; i < sizeof points / sizeof points[0]; i++)
        if (length == strlen(points[i]) && strncmp(point, points[i], length) == 0) {
            memcpy(fault.point, points[i], length + 1);
            fault.armed = true;
            fault.malformed = false;
        }
}

ax_status ax_test_fault_check(void)
{
    pthread_once(&fault.once, read_variable);
    if (fault.malformed)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "AXON_TEST_FAULT=%s: expected SIGNAL@POINT[:N] with SIGNAL one of KILL, "
                       "TERM, INT, STOP, POINT one of step, saving, prep-batch and N >= 1 (a variable for "
                       "tests only; unset it)",
                       getenv("AXON_TEST_FAULT"));
    return AX_STATUS_OK;
}

bool ax_test_fault(const char *point, long long count)
{
    pthread_once(&fault.once, read_variable);
    if (!fault.armed || count != fault.count || strcmp(point, fault.point) != 0)
        return false;
    if (atomic_exchange(&fault.fired, true))
        return false;
    raise(fault.signal_number);
    return true;
}
