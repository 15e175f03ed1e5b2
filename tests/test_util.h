/* test_util.h: the few macros every test uses. A failed CHECK prints the
 * file, line and expression and marks the test failed; tests exit with
 * test_finish(). Exit code 77 means "skipped" to CTest. */
#ifndef AX_TEST_UTIL_H
#define AX_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axon.h"

static int test_failures;

/* The tests' random numbers: splitmix64's next value of the stream whose
 * state is *state (the same numbers on every machine), and a double in
 * [low, high) from its upper 53 bits. */
static inline uint64_t test_random_next(uint64_t *state)
{
    uint64_t x = (*state += 0x9e3779b97f4a7c15ULL);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
static inline double test_random_uniform(uint64_t *state, double low, double high)
{
    return low + (high - low) * (double)(test_random_next(state) >> 11) * 0x1.0p-53;
}

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
            test_failures++;                                                           \
        }                                                                              \
    } while (0)

/* Checks a library call succeeds, printing its message if not. */
#define CHECK_OK(call)                                                                 \
    do {                                                                               \
        ax_status check_status_ = (call);                                              \
        if (check_status_ != AX_STATUS_OK) {                                           \
            fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,   \
                    ax_status_name(check_status_), ax_error_message());                \
            test_failures++;                                                           \
        }                                                                              \
    } while (0)

/* Checks a call fails with the given status and a message containing text. */
#define CHECK_FAILS(call, status, text)                                                \
    do {                                                                               \
        ax_status check_status_ = (call);                                              \
        if (check_status_ != (status)) {                                               \
            fprintf(stderr, "%s:%d: %s: expected %s, got %s (%s)\n", __FILE__, __LINE__, \
                    #call, ax_status_name(status), ax_status_name(check_status_),      \
                    ax_error_message());                                               \
            test_failures++;                                                           \
        } else if (!strstr(ax_error_message(), (text))) {                              \
            fprintf(stderr, "%s:%d: %s: message \"%s\" lacks \"%s\"\n", __FILE__,       \
                    __LINE__, #call, ax_error_message(), (text));                      \
            test_failures++;                                                           \
        }                                                                              \
    } while (0)

#define CHECK_NEAR(a, b, rel)                                                          \
    do {                                                                               \
        double check_a_ = (a), check_b_ = (b);                                         \
        double check_scale_ = fmax(fabs(check_a_), fabs(check_b_));                    \
        if (!(fabs(check_a_ - check_b_) <= (rel) * fmax(check_scale_, 1e-30))) {      \
            fprintf(stderr, "%s:%d: %s = %.17g and %s = %.17g differ by more than %g relative\n", \
                    __FILE__, __LINE__, #a, check_a_, #b, check_b_, (double)(rel));    \
            test_failures++;                                                           \
        }                                                                              \
    } while (0)

#define TEST_SKIP(...)                                                                 \
    do {                                                                               \
        printf("SKIPPED: ");                                                           \
        printf(__VA_ARGS__);                                                           \
        printf("\n");                                                                  \
        exit(77);                                                                      \
    } while (0)

static inline int test_finish(const char *name)
{
    if (test_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, test_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

#endif
