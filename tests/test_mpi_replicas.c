/* test_mpi_replicas.c: ax_train as ranks of a data-parallel run, without MPI:
 * two threads of this process are the two ranks, joined by the library's
 * thread communicator (ax_thread_ranks, which axon train --replicas uses;
 * the same interface MPI's communicator fills; tests/mpi_train.sh runs the
 * real thing under mpirun). So the library's side is tested in every build,
 * the sanitizer one included:
 *  - the thread communicator itself: deterministic rank-order sums, differing
 *    counts refused on every rank, a leaving rank waking the others;
 *  - SGD on two shards, even and uneven (one rank holding no rows at all),
 *    ends with the weights of one process on all rows; CG the same;
 *  - the callback runs on rank 0 only, and its stop stops both ranks;
 *  - ranks that disagree (a validation set on one only) fail alike, a rank
 *    whose data is bad fails and the other is told (no hang), and
 *    check_replicas finds replicas whose weights differ;
 *  - checkpoints: rank 0 alone writes them; a stop asked by rank 1's
 *    communicator (stop_requested) stops both ranks after the same step
 *    with the interrupted checkpoint written; both ranks resuming from it
 *    end bit-identical to the uninterrupted run, one process resuming from
 *    it ends within rounding, and shards whose rows changed (one value, or
 *    two rows swapped between the ranks) are refused by both ranks. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"
#include "test_files.h"

enum { RANKS = 2, ROWS = 903, FEATURES = 7, MAX_COUNT = 4096 };

/* What the test counts about the ranks' calls; the sums themselves are the
 * library's thread communicator (ax_thread_ranks, as axon train --replicas
 * uses), whose functions the ranks' communicators wrap. */
typedef struct meeting {
    ax_thread_ranks *team;
    int stop_polls[RANKS];    /* stop_requested calls per rank */
    int stop_rank1_at_poll;   /* rank 1 asks to stop from this call on; 0 = never */
    int begun[RANKS], waits[RANKS]; /* sum_begin and sum_wait calls per rank */
    ax_status begin_fails, wait_fails; /* what every rank's sum_begin / sum_wait returns */
} meeting;

static meeting *current; /* the ranks' meeting (the team's context is the team's own) */

/* The overlapped sum's interface with a blocking sum behind it: the
 * library's side (which sums begin when, in which order, weighted how) is
 * what is tested here; MPI's non-blocking sums run in mpi_train.sh. */
static ax_status thread_sum_begin(const ax_communicator *self, void *values, int64_t count,
                                  ax_precision precision)
{
    current->begun[self->rank]++;
    if (current->begin_fails != AX_STATUS_OK)
        return current->begin_fails;
    return self->sum(self, values, count, precision);
}

static ax_status thread_sum_wait(const ax_communicator *self)
{
    current->waits[self->rank]++;
    return current->wait_fails;
}

/* Rank 1's own stop request (as a signal to that rank alone would be). */
static bool thread_stop_requested(const ax_communicator *self)
{
    int polls = ++current->stop_polls[self->rank];
    return self->rank == 1 && current->stop_rank1_at_poll > 0 && polls >= current->stop_rank1_at_poll;
}

static void never_abort(const ax_communicator *self, int code)
{
    (void)self;
    fprintf(stderr, "abort(%d) called: the library must never abort\n", code);
    exit(1);
}

/* Rows [first, end) of data as a data set of their own. */
static ax_dataset *rows_of(const ax_dataset *data, int64_t first, int64_t end)
{
    ax_dataset *part = NULL;
    if (ax_dataset_create(end - first, FEATURES, 0, 1, &part) != AX_STATUS_OK)
        return NULL;
    memcpy(ax_dataset_features_data(part),
           ax_dataset_features_data((ax_dataset *)data) + first * FEATURES,
           (size_t)((end - first) * FEATURES) * sizeof(float));
    memcpy(ax_dataset_targets_data(part), ax_dataset_targets_data((ax_dataset *)data) + first,
           (size_t)(end - first) * sizeof(float));
    return part;
}

typedef struct rank_run {
    ax_communicator communicator;
    ax_net_config net_config;
    ax_train_config train_config;
    ax_dataset *shard, *validation;
    ax_status status;
    char message[512];
    double parameters[MAX_COUNT];
    int progress_calls;
    int stop_after_epoch; /* the callback asks to stop after this epoch; 0 = never */
    const char *resume;   /* resume from this checkpoint (its network and options) */
    int epochs_run;
} rank_run;

static bool count_and_stop(const ax_progress *progress, void *user)
{
    rank_run *run = user;
    run->progress_calls++;
    return !(progress->epoch_done && progress->epoch == run->stop_after_epoch);
}

static void *train_rank(void *argument)
{
    rank_run *run = argument;
    if (ax_set_threads(1) != AX_STATUS_OK)
        fprintf(stderr, "could not set 1 thread: %s\n", ax_error_message());
    ax_net *net = NULL;
    ax_train_state *state = NULL;
    if (run->resume) {
        ax_train_config recorded;
        run->status = ax_checkpoint_load(run->resume, &net, &recorded, &state);
        if (run->status == AX_STATUS_OK) {
            recorded.check_replicas = run->train_config.check_replicas;
            run->train_config = recorded;
        }
    } else {
        run->status = ax_net_create(&run->net_config, &net);
    }
    if (run->status == AX_STATUS_OK) {
        ax_train_summary summary = ax_train_summary_empty();
        run->train_config.communicator = &run->communicator;
        run->train_config.progress = count_and_stop;
        run->train_config.progress_user = run;
        run->status = ax_train(net, run->shard, run->validation, NULL, &run->train_config, &summary);
        run->epochs_run = summary.epochs_run;
        ax_net_parameters_get(net, run->parameters);
    }
    snprintf(run->message, sizeof run->message, "%s", ax_error_message());
    ax_net_free(net);
    ax_train_state_free(state);
    return NULL;
}

static ax_net_config net_config(void)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = FEATURES;
    config.precision = AX_PRECISION_F64;
    CHECK_OK(ax_layers_parse("9:tanh,1", &config));
    return config;
}

/* Trains on all rows in one process: the reference. */
static void train_alone(const ax_dataset *data, const ax_train_config *config, double *parameters)
{
    ax_net_config nc = net_config();
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&nc, &net));
    ax_net_config_release(&nc);
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, data, NULL, NULL, config, &summary));
    ax_net_parameters_get(net, parameters);
    ax_net_free(net);
}

/* What a scenario changes in the ranks. */
typedef struct scenario {
    int stop_after_epoch;      /* rank 0's callback stops after it; 0 = never */
    ax_dataset *validation_0;  /* rank 0's validation set; rank 1 gets none */
    bool different_weights;    /* the ranks start from different weights */
    bool nan_on_1;             /* rank 1's shard holds a NaN */
    int stop_rank1_at_poll;    /* rank 1's communicator asks to stop from this poll on */
    const char *resume;        /* both ranks resume from this checkpoint */
    bool changed_on_1;         /* one value of rank 1's shard differs */
    bool swapped;              /* the first rows of the two shards trade places */
    bool overlapped;           /* the communicators have sum_begin and sum_wait */
    int *begun, *waits;        /* where to copy the calls counted (RANKS each), or NULL */
    ax_status begin_fails, wait_fails; /* every rank's sum_begin / sum_wait fails so */
} scenario;

/* Runs both ranks, rank r on rows [bounds[r], bounds[r + 1]). */
static void train_ranks(const ax_dataset *data, const int64_t bounds[RANKS + 1],
                        const ax_train_config *config, const scenario *change, rank_run runs[RANKS])
{
    const scenario none = {0};
    if (!change)
        change = &none;
    meeting m;
    memset(&m, 0, sizeof m);
    m.stop_rank1_at_poll = change->stop_rank1_at_poll;
    m.begin_fails = change->begin_fails;
    m.wait_fails = change->wait_fails;
    CHECK_OK(ax_thread_ranks_create(RANKS, &m.team));
    current = &m;
    pthread_t threads[RANKS];
    for (int r = 0; r < RANKS; r++) {
        memset(&runs[r], 0, sizeof runs[r]);
        runs[r].communicator = *ax_thread_ranks_communicator(m.team, r);
        runs[r].communicator.abort = never_abort;
        runs[r].communicator.stop_requested = thread_stop_requested;
        if (change->overlapped) {
            runs[r].communicator.sum_begin = thread_sum_begin;
            runs[r].communicator.sum_wait = thread_sum_wait;
        }
        runs[r].net_config = net_config();
        if (change->different_weights)
            runs[r].net_config.seed = 10 + (uint64_t)r;
        runs[r].train_config = *config;
        runs[r].shard = rows_of(data, bounds[r], bounds[r + 1]);
        runs[r].validation = r == 0 ? change->validation_0 : NULL;
        runs[r].stop_after_epoch = change->stop_after_epoch;
        if (r == 1 && change->nan_on_1)
            ax_dataset_features_data(runs[r].shard)[3] = NAN;
        if (r == 1 && change->changed_on_1)
            ax_dataset_features_data(runs[r].shard)[FEATURES * 5 + 2] += 0.25f;
        runs[r].resume = change->resume;
    }
    if (change->swapped) { /* the same rows in the shards, in another order */
        float *a = ax_dataset_features_data(runs[0].shard), *b = ax_dataset_features_data(runs[1].shard);
        float *ta = ax_dataset_targets_data(runs[0].shard), *tb = ax_dataset_targets_data(runs[1].shard);
        for (int j = 0; j < FEATURES; j++) {
            float kept = a[j];
            a[j] = b[j];
            b[j] = kept;
        }
        float kept = ta[0];
        ta[0] = tb[0];
        tb[0] = kept;
    }
    for (int r = 0; r < RANKS; r++)
        pthread_create(&threads[r], NULL, train_rank, &runs[r]);
    for (int r = 0; r < RANKS; r++) {
        pthread_join(threads[r], NULL);
        ax_dataset_free(runs[r].shard);
        ax_net_config_release(&runs[r].net_config);
    }
    ax_thread_ranks_free(m.team);
    current = NULL;
    if (change->begun)
        memcpy(change->begun, m.begun, sizeof m.begun);
    if (change->waits)
        memcpy(change->waits, m.waits, sizeof m.waits);
}

static void check_same(const rank_run runs[RANKS], const double *reference, int64_t count,
                       double tolerance, const char *what)
{
    for (int r = 0; r < RANKS; r++) {
        if (runs[r].status != AX_STATUS_OK) {
            fprintf(stderr, "%s: rank %d failed: %s\n", what, r, runs[r].message);
            test_failures++;
            continue;
        }
        CHECK(memcmp(runs[r].parameters, runs[0].parameters, (size_t)count * sizeof(double)) == 0);
        double worst = 0.0, largest = 0.0;
        for (int64_t i = 0; i < count; i++) {
            worst = fmax(worst, fabs(runs[r].parameters[i] - reference[i]));
            largest = fmax(largest, fabs(reference[i]));
        }
        printf("%s, rank %d: largest difference %.3g (weights up to %.3g)\n", what, r, worst, largest);
        CHECK(worst <= tolerance * largest);
    }
}

static bool file_exists(const char *path)
{
    struct stat info;
    return stat(path, &info) == 0;
}

/* Checkpoints of two ranks: written by rank 0 once, the stop of one rank
 * stopping both, resumed on two ranks and in one process, refused on
 * changed data. */
static void checkpoints(const ax_dataset *data, const ax_train_config *base, int64_t count)
{
    static double whole[MAX_COUNT], alone[MAX_COUNT];
    rank_run runs[RANKS];
    const int64_t even[RANKS + 1] = {0, ROWS / 2, ROWS};
    if (!test_work_dir_make("axon-replicas"))
        return;
    ax_train_config config = *base;
    config.epochs = 4;
    config.checkpoint_every = 1;
    config.keep_checkpoints = 0;
    config.checkpoint_prefix = in_work("whole");
    train_ranks(data, even, &config, NULL, runs);
    for (int r = 0; r < RANKS; r++)
        CHECK(runs[r].status == AX_STATUS_OK);
    memcpy(whole, runs[0].parameters, (size_t)count * sizeof(double));
    CHECK(file_exists(in_work("whole.epoch-000004.safetensors")));

    /* Rank 1 alone asks to stop at its 25th poll (each step polls once and
     * each epoch's end once: 19 + 1 per epoch, so inside epoch 2): both
     * ranks stop after the same step and rank 0 writes where they stood. */
    config.checkpoint_prefix = in_work("stopped");
    const scenario stop = {.stop_rank1_at_poll = 25};
    train_ranks(data, even, &config, &stop, runs);
    for (int r = 0; r < RANKS; r++) {
        CHECK(runs[r].status == AX_STATUS_INTERRUPTED);
        CHECK(strstr(runs[r].message, "interrupted in epoch 2") != NULL);
        CHECK(runs[r].epochs_run == 1);
        CHECK(memcmp(runs[r].parameters, runs[0].parameters, (size_t)count * sizeof(double)) == 0);
    }
    const char *stopped = in_work("stopped.interrupted.safetensors");
    CHECK(file_exists(stopped));
    CHECK(file_exists(in_work("stopped.epoch-000001.safetensors")));
    CHECK(!file_exists(in_work("stopped.epoch-000002.safetensors")));

    /* Both ranks resume from it and end where the whole run ended. */
    const scenario resumed = {.resume = stopped};
    train_ranks(data, even, &config, &resumed, runs);
    for (int r = 0; r < RANKS; r++) {
        if (runs[r].status != AX_STATUS_OK)
            fprintf(stderr, "resume, rank %d: %s\n", r, runs[r].message);
        CHECK(runs[r].status == AX_STATUS_OK);
        CHECK(memcmp(runs[r].parameters, whole, (size_t)count * sizeof(double)) == 0);
    }

    /* One process resumes a two-rank checkpoint: the global data are the same. */
    ax_net *net = NULL;
    ax_train_state *state = NULL;
    ax_train_config recorded;
    CHECK_OK(ax_checkpoint_load(stopped, &net, &recorded, &state));
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, data, NULL, NULL, &recorded, &summary));
    ax_net_parameters_get(net, alone);
    ax_net_free(net);
    ax_train_state_free(state);
    double worst = 0.0, largest = 0.0;
    for (int64_t i = 0; i < count; i++) {
        worst = fmax(worst, fabs(alone[i] - whole[i]));
        largest = fmax(largest, fabs(whole[i]));
    }
    printf("two-rank checkpoint resumed in one process: largest difference %.3g\n", worst);
    CHECK(worst <= 1e-10 * largest);

    /* Changed data: one value on rank 1, or rows moved between the shards. */
    const scenario changed = {.resume = stopped, .changed_on_1 = true};
    const scenario swapped = {.resume = stopped, .swapped = true};
    const scenario *refused[] = {&changed, &swapped};
    for (int i = 0; i < 2; i++) {
        train_ranks(data, even, &config, refused[i], runs);
        for (int r = 0; r < RANKS; r++) {
            CHECK(runs[r].status == AX_STATUS_BAD_DATA);
            CHECK(strstr(runs[r].message, "has the checkpoint's shape but not its values") != NULL);
        }
    }
    /* Other shard bounds with the same rows: accepted. */
    const int64_t uneven[RANKS + 1] = {0, 100, ROWS};
    train_ranks(data, uneven, &config, &resumed, runs);
    for (int r = 0; r < RANKS; r++)
        CHECK(runs[r].status == AX_STATUS_OK);
    test_work_dir_remove();
}

/* The thread communicator by itself: three ranks summing float and double
 * buffers of odd lengths (slices of uneven size, a rank with no slice) get
 * the rank-order sum in every buffer; differing counts fail on every rank;
 * a rank that leaves wakes the ranks waiting in a sum with a failure. */
enum { TEAM = 3, TEAM_VALUES = 1001 };
typedef struct team_member {
    const ax_communicator *communicator;
    ax_thread_ranks *team;
    int64_t count;        /* values to sum; < 0: leave the team instead */
    float floats[TEAM_VALUES];
    double doubles[TEAM_VALUES];
    ax_status status;
    char message[256];
} team_member;

static void *team_rank(void *argument)
{
    team_member *member = argument;
    if (member->count < 0) {
        /* Most often the others are waiting in the sum by now; a sum entered
         * after the leave fails as well, so the verdict holds either way. */
        usleep(20000);
        ax_thread_ranks_leave(member->team, member->communicator->rank);
        member->status = AX_STATUS_OK;
        return NULL;
    }
    member->status = member->communicator->sum(member->communicator, member->floats,
                                               member->count, AX_PRECISION_F32);
    if (member->status == AX_STATUS_OK)
        member->status = member->communicator->sum(member->communicator, member->doubles,
                                                   member->count, AX_PRECISION_F64);
    snprintf(member->message, sizeof member->message, "%s", ax_error_message());
    return NULL;
}

static void run_team(team_member *members, int64_t counts[TEAM])
{
    ax_thread_ranks *team = NULL;
    CHECK_OK(ax_thread_ranks_create(TEAM, &team));
    pthread_t threads[TEAM];
    for (int r = 0; r < TEAM; r++) {
        members[r].communicator = ax_thread_ranks_communicator(team, r);
        members[r].team = team;
        members[r].count = counts[r];
        for (int i = 0; i < TEAM_VALUES; i++) {
            /* Values whose sum depends on the order of the additions. */
            members[r].floats[i] = (r == 1 ? 1e8f : 1.0f) + (float)(i % 7) * 0.3f + (float)r;
            members[r].doubles[i] = (r == 1 ? 1e17 : 1.0) + (double)(i % 5) * 0.1 + r;
        }
        pthread_create(&threads[r], NULL, team_rank, &members[r]);
    }
    for (int r = 0; r < TEAM; r++)
        pthread_join(threads[r], NULL);
    CHECK(ax_thread_ranks_communicator(team, TEAM) == NULL);
    ax_thread_ranks_free(team);
}

static void team_sums(void)
{
    static team_member members[TEAM];
    int64_t counts[TEAM] = {TEAM_VALUES, TEAM_VALUES, TEAM_VALUES};
    run_team(members, counts);
    int wrong = 0;
    for (int i = 0; i < TEAM_VALUES; i++) {
        double floats = 0.0, doubles = 0.0;
        for (int r = 0; r < TEAM; r++) {
            floats += (double)((r == 1 ? 1e8f : 1.0f) + (float)(i % 7) * 0.3f + (float)r);
            doubles += (r == 1 ? 1e17 : 1.0) + (double)(i % 5) * 0.1 + r;
        }
        for (int r = 0; r < TEAM; r++)
            wrong += members[r].floats[i] != (float)floats || members[r].doubles[i] != doubles;
    }
    for (int r = 0; r < TEAM; r++)
        CHECK(members[r].status == AX_STATUS_OK);
    CHECK(wrong == 0);

    int64_t differing[TEAM] = {TEAM_VALUES, 17, TEAM_VALUES};
    run_team(members, differing);
    for (int r = 0; r < TEAM; r++)
        CHECK(members[r].status == AX_STATUS_BAD_ARGUMENT &&
              strstr(members[r].message, "met one of 17 on replica 1"));

    int64_t leaving[TEAM] = {TEAM_VALUES, -1, TEAM_VALUES};
    run_team(members, leaving);
    CHECK(members[0].status == AX_STATUS_IO_ERROR && members[2].status == AX_STATUS_IO_ERROR);
    CHECK(strstr(members[0].message, "replica 1 of 3 left the run") != NULL);
    ax_thread_ranks *team = NULL;
    CHECK_FAILS(ax_thread_ranks_create(0, &team), AX_STATUS_BAD_ARGUMENT, "0 replicas");
    CHECK(team == NULL);
}

int main(void)
{
    team_sums();
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_synth_linear(ROWS, FEATURES, 5, &data));
    ax_net_config nc = net_config();
    ax_net *probe = NULL;
    CHECK_OK(ax_net_create(&nc, &probe));
    ax_net_config_release(&nc);
    const int64_t count = ax_net_parameter_count(probe);
    ax_net_free(probe);
    CHECK(count <= MAX_COUNT);
    static double reference[MAX_COUNT];
    rank_run runs[RANKS];

    ax_train_config sgd = ax_train_defaults();
    sgd.batch_size = 50; /* 903 rows: a last batch of 3 */
    sgd.epochs = 3;
    sgd.learning_rate = 0.02;
    sgd.l2 = 0.01;
    sgd.check_replicas = true;
    train_alone(data, &sgd, reference);
    const int64_t even[RANKS + 1] = {0, ROWS / 2, ROWS};
    train_ranks(data, even, &sgd, NULL, runs);
    check_same(runs, reference, count, 1e-10, "SGD, even shards");
    CHECK(runs[0].progress_calls > 0 && runs[1].progress_calls == 0);

    const int64_t lopsided[RANKS + 1] = {0, ROWS, ROWS}; /* rank 1 holds nothing */
    train_ranks(data, lopsided, &sgd, NULL, runs);
    check_same(runs, reference, count, 1e-10, "SGD, rank 1 without rows");

    /* Overlapped: each layer's sum begins during the backward pass (two
     * layers: two per step, on the rank without rows too), one wait per step. */
    int begun[RANKS], waits[RANKS];
    const scenario overlapped = {.overlapped = true, .begun = begun, .waits = waits};
    const int64_t steps = sgd.epochs * ((ROWS + sgd.batch_size - 1) / sgd.batch_size);
    const int64_t (*layouts[])[RANKS + 1] = {&even, &lopsided};
    for (int i = 0; i < 2; i++) {
        train_ranks(data, *layouts[i], &sgd, &overlapped, runs);
        check_same(runs, reference, count, 1e-10, i == 0 ? "SGD overlapped, even shards"
                                                        : "SGD overlapped, rank 1 without rows");
        for (int r = 0; r < RANKS; r++)
            CHECK(begun[r] == 2 * steps && waits[r] == steps);
    }

    /* Overlapped sums that fail on every rank: a failed begin stops the
     * later layers' begins (one begun of two), the wait still comes, and
     * each rank fails naming itself and the gradient's sum; a failed wait
     * the same, after both begins. */
    const scenario begin_fails = {.overlapped = true, .begun = begun, .waits = waits,
                                  .begin_fails = AX_STATUS_IO_ERROR};
    const scenario wait_fails = {.overlapped = true, .begun = begun, .waits = waits,
                                 .wait_fails = AX_STATUS_IO_ERROR};
    const scenario *failing[] = {&begin_fails, &wait_fails};
    for (int i = 0; i < 2; i++) {
        train_ranks(data, even, &sgd, failing[i], runs);
        for (int r = 0; r < RANKS; r++) {
            char text[64];
            snprintf(text, sizeof text, "rank %d of 2: summing the gradient over the ranks", r);
            CHECK(runs[r].status == AX_STATUS_IO_ERROR && strstr(runs[r].message, text));
            CHECK(begun[r] == (i == 0 ? 1 : 2) && waits[r] == 1);
        }
    }

    ax_train_config cg = ax_train_defaults();
    cg.optimizer = AX_OPTIMIZER_CG;
    cg.batch_size = 0;
    cg.epochs = 12;
    train_alone(data, &cg, reference);
    const int64_t uneven[RANKS + 1] = {0, 100, ROWS};
    train_ranks(data, uneven, &cg, NULL, runs);
    check_same(runs, reference, count, 1e-8, "CG, uneven shards");
    const scenario cg_overlapped = {.overlapped = true, .begun = begun, .waits = waits};
    train_ranks(data, uneven, &cg, &cg_overlapped, runs);
    check_same(runs, reference, count, 1e-8, "CG, communicator able to overlap");
    CHECK(begun[0] == 0 && begun[1] == 0); /* full batches use the blocking sum */

    /* Rank 0's callback stops after epoch 2: both ranks stop there. */
    ax_train_config longer = sgd;
    longer.epochs = 5;
    const scenario stop = {.stop_after_epoch = 2};
    train_ranks(data, even, &longer, &stop, runs);
    for (int r = 0; r < RANKS; r++) {
        CHECK(runs[r].status == AX_STATUS_INTERRUPTED);
        CHECK(strstr(runs[r].message, "after epoch 2") != NULL);
    }
    CHECK(runs[1].progress_calls == 0);

    /* A validation set on rank 0 only: both ranks refuse, neither waits. */
    ax_dataset *held = rows_of(data, 0, 10);
    const scenario lone_validation = {.validation_0 = held};
    train_ranks(data, even, &sgd, &lone_validation, runs);
    for (int r = 0; r < RANKS; r++) {
        CHECK(runs[r].status == AX_STATUS_BAD_ARGUMENT);
        CHECK(strstr(runs[r].message, "disagree on a validation set: rank 1 differs") != NULL);
    }
    ax_dataset_free(held);

    /* Replicas that start from different weights are found after epoch 1. */
    const scenario apart = {.different_weights = true};
    train_ranks(data, even, &sgd, &apart, runs);
    for (int r = 0; r < RANKS; r++) {
        CHECK(runs[r].status == AX_STATUS_BAD_DATA);
        CHECK(strstr(runs[r].message, "after epoch 1: the weights of rank 1 differ") != NULL);
    }

    /* A rank whose data is bad fails alone, and the other is told, not left waiting. */
    const scenario poisoned = {.nan_on_1 = true};
    train_ranks(data, even, &sgd, &poisoned, runs);
    CHECK(runs[1].status == AX_STATUS_BAD_DATA && strstr(runs[1].message, "NaN"));
    CHECK(runs[0].status == AX_STATUS_BAD_DATA &&
          strstr(runs[0].message, "rank 1 of 2 could not start training"));

    checkpoints(data, &sgd, count);
    ax_dataset_free(data);
    return test_finish("test_mpi_replicas");
}
