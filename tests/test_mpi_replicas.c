/* test_mpi_replicas.c: ax_train as ranks of a data-parallel run, without MPI:
 * two threads of this process are the two ranks, joined by a communicator
 * whose sum meets at a barrier (the same interface MPI's communicator
 * fills; tests/mpi_train.sh runs the real thing under mpirun). So the
 * library's side is tested in every build, the sanitizer one included:
 *  - SGD on two shards, even and uneven (one rank holding no rows at all),
 *    ends with the weights of one process on all rows; CG the same;
 *  - the callback runs on rank 0 only, and its stop stops both ranks;
 *  - ranks that disagree (a validation set on one only) fail alike, a rank
 *    whose data is bad fails and the other is told (no hang), and
 *    check_replicas finds replicas whose weights differ. */
#include <pthread.h>

#include "test_util.h"

enum { RANKS = 2, ROWS = 903, FEATURES = 7, MAX_COUNT = 4096 };

/* The meeting point of the two threads. */
typedef struct meeting {
    pthread_barrier_t barrier;
    const void *values[RANKS];
} meeting;

static ax_status thread_sum(const ax_communicator *self, void *values, int64_t count,
                            ax_precision precision)
{
    meeting *m = self->context;
    if (count > MAX_COUNT)
        return AX_STATUS_OUT_OF_MEMORY;
    double total[MAX_COUNT];
    m->values[self->rank] = values;
    pthread_barrier_wait(&m->barrier);
    /* Both ranks add in rank order, so both get the same bits. */
    for (int64_t i = 0; i < count; i++) {
        total[i] = 0.0;
        for (int r = 0; r < RANKS; r++)
            total[i] += precision == AX_PRECISION_F64 ? ((const double *)m->values[r])[i]
                                                      : (double)((const float *)m->values[r])[i];
    }
    pthread_barrier_wait(&m->barrier); /* everyone has read before anyone writes */
    for (int64_t i = 0; i < count; i++) {
        if (precision == AX_PRECISION_F64)
            ((double *)values)[i] = total[i];
        else
            ((float *)values)[i] = (float)total[i];
    }
    return AX_STATUS_OK;
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
    run->status = ax_net_create(&run->net_config, &net);
    if (run->status == AX_STATUS_OK) {
        ax_train_summary summary;
        run->train_config.communicator = &run->communicator;
        run->train_config.progress = count_and_stop;
        run->train_config.progress_user = run;
        run->status = ax_train(net, run->shard, run->validation, NULL, &run->train_config, &summary);
        ax_net_parameters_get(net, run->parameters);
    }
    snprintf(run->message, sizeof run->message, "%s", ax_error_message());
    ax_net_free(net);
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
    ax_train_summary summary;
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
} scenario;

/* Runs both ranks, rank r on rows [bounds[r], bounds[r + 1]). */
static void train_ranks(const ax_dataset *data, const int64_t bounds[RANKS + 1],
                        const ax_train_config *config, const scenario *change, rank_run runs[RANKS])
{
    const scenario none = {0};
    if (!change)
        change = &none;
    meeting m;
    pthread_barrier_init(&m.barrier, NULL, RANKS);
    pthread_t threads[RANKS];
    for (int r = 0; r < RANKS; r++) {
        memset(&runs[r], 0, sizeof runs[r]);
        runs[r].communicator = (ax_communicator){.rank = r, .size = RANKS, .context = &m,
                                                 .sum = thread_sum, .abort = never_abort};
        runs[r].net_config = net_config();
        if (change->different_weights)
            runs[r].net_config.seed = 10 + (uint64_t)r;
        runs[r].train_config = *config;
        runs[r].shard = rows_of(data, bounds[r], bounds[r + 1]);
        runs[r].validation = r == 0 ? change->validation_0 : NULL;
        runs[r].stop_after_epoch = change->stop_after_epoch;
        if (r == 1 && change->nan_on_1)
            ax_dataset_features_data(runs[r].shard)[3] = NAN;
    }
    for (int r = 0; r < RANKS; r++)
        pthread_create(&threads[r], NULL, train_rank, &runs[r]);
    for (int r = 0; r < RANKS; r++) {
        pthread_join(threads[r], NULL);
        ax_dataset_free(runs[r].shard);
    }
    pthread_barrier_destroy(&m.barrier);
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

int main(void)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_synth_linear(ROWS, FEATURES, 5, &data));
    ax_net_config nc = net_config();
    ax_net *probe = NULL;
    CHECK_OK(ax_net_create(&nc, &probe));
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

    ax_train_config cg = ax_train_defaults();
    cg.optimizer = AX_OPTIMIZER_CG;
    cg.batch_size = 0;
    cg.epochs = 12;
    train_alone(data, &cg, reference);
    const int64_t uneven[RANKS + 1] = {0, 100, ROWS};
    train_ranks(data, uneven, &cg, NULL, runs);
    check_same(runs, reference, count, 1e-8, "CG, uneven shards");

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

    /* Checkpoints need one process. */
    ax_train_config with_checkpoints = sgd;
    with_checkpoints.checkpoint_every = 1;
    with_checkpoints.checkpoint_prefix = "never-written";
    train_ranks(data, even, &with_checkpoints, NULL, runs);
    for (int r = 0; r < RANKS; r++) {
        CHECK(runs[r].status == AX_STATUS_UNSUPPORTED);
        CHECK(strstr(runs[r].message, "checkpoints and resume need one process") != NULL);
    }
    ax_dataset_free(data);
    return test_finish("test_mpi_replicas");
}
