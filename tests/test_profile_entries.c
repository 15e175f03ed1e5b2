/* test_profile_entries.c: the profiler's bookkeeping (perf/profile.c) fed
 * known durations instead of timed ones, so every figure has an exact
 * reference:
 * - count, total, mean and the sample standard deviation of each slot equal
 *   the two-pass float64 figures of the same durations (Welford's running
 *   update, checked also on 1000 durations around 1000 s that differ by
 *   microseconds, where a naive sum of squares loses every digit); a slot
 *   of one call has deviation 0, not 0/0;
 * - an operation of a layer is named "layer N KIND" (N from 1), one of no
 *   layer (-1) "KIND"; the GEMMs and the convolutions' passes are marked
 *   as matrix products, pooling, shuffles and the rest are not;
 * - the entries come longest total first and their shares add up to 1;
 *   where every duration is 0 the shares are 0 (not 0/0);
 * - a capacity below the entries' count still returns the count and fills
 *   exactly the first `capacity` entries, the longest; clearing forgets all;
 * - ax_profile_record times from a start: a non-negative duration. */
#include <math.h>

#include "perf/profile.h"
#include "test_util.h"

enum { ENTRIES = 16 };

/* The mean and sample standard deviation by the two-pass formula. */
static void two_pass(const double *x, int n, double *mean, double *stddev)
{
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += x[i];
    *mean = sum / n;
    double squares = 0.0;
    for (int i = 0; i < n; i++)
        squares += (x[i] - *mean) * (x[i] - *mean);
    *stddev = n > 1 ? sqrt(squares / (n - 1)) : 0.0;
}

static const ax_profile_entry *named(const ax_profile_entry *entries, int count, const char *name)
{
    for (int i = 0; i < count; i++)
        if (strcmp(entries[i].name, name) == 0)
            return &entries[i];
    fprintf(stderr, "no profile entry \"%s\"\n", name);
    test_failures++;
    return NULL;
}

static void check_figures_and_names(ax_profile *profile)
{
    ax_profile_clear(profile);
    const double forward[4] = {0.010, 0.012, 0.014, 0.020};
    for (int i = 0; i < 4; i++)
        ax_profile_record_seconds(profile, AX_PROFILE_FORWARD_GEMM, 0, forward[i], 1e9);
    ax_profile_record_seconds(profile, AX_PROFILE_SHUFFLE, -1, 0.5, 0.0);
    ax_profile_record_seconds(profile, AX_PROFILE_CONV_FORWARD, 1, 0.030, 2e9);
    ax_profile_record_seconds(profile, AX_PROFILE_CONV_WEIGHT_GRADIENT, 1, 0.040, 2e9);
    ax_profile_record_seconds(profile, AX_PROFILE_CONV_INPUT_GRADIENT, 1, 0.001, 2e9);
    ax_profile_record_seconds(profile, AX_PROFILE_POOL_FORWARD, 2, 0.002, 0.0);
    ax_profile_record_seconds(profile, AX_PROFILE_INPUT_GRADIENT_GEMM, 63, 0.003, 5e8);
    ax_profile_entry entries[ENTRIES];
    const int count = ax_profile_entries(profile, entries, ENTRIES);
    CHECK(count == 7);
    const double grand = 0.056 + 0.5 + 0.030 + 0.040 + 0.001 + 0.002 + 0.003;
    double shares = 0.0;
    for (int i = 0; i < count; i++) {
        shares += entries[i].share;
        CHECK_NEAR(entries[i].share, entries[i].total_seconds / grand, 1e-14);
        if (i > 0)
            CHECK(entries[i - 1].total_seconds >= entries[i].total_seconds);
    }
    CHECK_NEAR(shares, 1.0, 1e-14);
    CHECK(strcmp(entries[0].name, "shuffle") == 0); /* the longest, of no layer */

    const ax_profile_entry *e = named(entries, count, "layer 1 forward GEMM");
    if (e) {
        double mean, stddev;
        two_pass(forward, 4, &mean, &stddev);
        CHECK(e->count == 4 && e->is_gemm);
        CHECK_NEAR(e->total_seconds, 0.056, 1e-14);
        CHECK_NEAR(e->mean_seconds, mean, 1e-14);
        CHECK_NEAR(e->stddev_seconds, stddev, 1e-12);
        CHECK_NEAR(e->gflop, 4.0, 1e-14);
    }
    if ((e = named(entries, count, "shuffle")))
        CHECK(e->count == 1 && e->stddev_seconds == 0.0 && !e->is_gemm && e->gflop == 0.0);
    const char *const conv[3] = {"layer 2 conv forward", "layer 2 conv weight gradient",
                                 "layer 2 conv input gradient"};
    for (int i = 0; i < 3; i++)
        if ((e = named(entries, count, conv[i])))
            CHECK(e->is_gemm && e->count == 1 && e->stddev_seconds == 0.0);
    if ((e = named(entries, count, "layer 3 pooling forward")))
        CHECK(!e->is_gemm);
    if ((e = named(entries, count, "layer 64 input-gradient GEMM")))
        CHECK(e->is_gemm && fabs(e->gflop - 0.5) <= 1e-15);
}

static void check_capacity_and_clear(ax_profile *profile)
{
    ax_profile_entry all[ENTRIES], few[3];
    const int count = ax_profile_entries(profile, all, ENTRIES);
    memset(few, 0x5a, sizeof few);
    const ax_profile_entry untouched = few[2];
    CHECK(ax_profile_entries(profile, few, 2) == count);
    for (int i = 0; i < 2; i++)
        CHECK(strcmp(few[i].name, all[i].name) == 0 && few[i].total_seconds == all[i].total_seconds);
    CHECK(memcmp(&few[2], &untouched, sizeof untouched) == 0);
    CHECK(ax_profile_entries(profile, few, 0) == count);
    ax_profile_clear(profile);
    CHECK(ax_profile_entries(profile, all, ENTRIES) == 0);
}

static void check_zero_durations(ax_profile *profile)
{
    ax_profile_clear(profile);
    ax_profile_record_seconds(profile, AX_PROFILE_BATCH_COPY, -1, 0.0, 0.0);
    ax_profile_record_seconds(profile, AX_PROFILE_DROPOUT, 0, 0.0, 0.0);
    ax_profile_entry entries[ENTRIES];
    CHECK(ax_profile_entries(profile, entries, ENTRIES) == 2);
    for (int i = 0; i < 2; i++)
        CHECK(entries[i].share == 0.0 && entries[i].total_seconds == 0.0);
}

/* 1000 durations of 1000 s plus a few microseconds: the sum of squares
 * minus the squared sum would cancel to noise; Welford's update keeps it. */
static void check_welford_accuracy(ax_profile *profile)
{
    ax_profile_clear(profile);
    enum { N = 1000 };
    static double durations[N];
    for (int i = 0; i < N; i++) {
        durations[i] = 1000.0 + 1e-6 * (double)((i * 37) % 101);
        ax_profile_record_seconds(profile, AX_PROFILE_EVALUATION, -1, durations[i], 0.0);
    }
    double mean, stddev;
    two_pass(durations, N, &mean, &stddev);
    ax_profile_entry entry;
    CHECK(ax_profile_entries(profile, &entry, 1) == 1);
    CHECK(strcmp(entry.name, "evaluation") == 0 && entry.count == N);
    CHECK_NEAR(entry.mean_seconds, mean, 1e-14);
    CHECK_NEAR(entry.stddev_seconds, stddev, 1e-6);
    CHECK(stddev > 2e-5 && stddev < 4e-5); /* the microseconds' spread, about 29 us */
    printf("welford: sd %.9g s against two-pass %.9g s over %d calls of 1000 s\n",
           entry.stddev_seconds, stddev, N);
}

static void check_timed_record(ax_profile *profile)
{
    ax_profile_clear(profile);
    ax_profile_record(profile, AX_PROFILE_L2, 4, ax_seconds_now(), 10.0);
    ax_profile_entry entry;
    CHECK(ax_profile_entries(profile, &entry, 1) == 1);
    CHECK(strcmp(entry.name, "layer 5 L2 term") == 0);
    CHECK(entry.count == 1 && entry.total_seconds >= 0.0 && entry.total_seconds < 60.0);
    CHECK_NEAR(entry.gflop, 1e-8, 1e-15);
}

int main(void)
{
    ax_profile *profile = malloc(sizeof *profile);
    if (!profile) {
        fprintf(stderr, "test_profile_entries: out of memory\n");
        return 1;
    }
    check_figures_and_names(profile);
    check_capacity_and_clear(profile);
    check_zero_durations(profile);
    check_welford_accuracy(profile);
    check_timed_record(profile);
    free(profile);
    return test_finish("test_profile_entries");
}
