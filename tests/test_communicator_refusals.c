/* test_communicator_refusals.c: what ax_train does with a communicator that
 * cannot be used (src/parallel/replicas.c), in one thread, no MPI:
 * - a rank outside 0 .. size - 1, a size below 1 or no sum function is
 *   refused (AX_STATUS_BAD_ARGUMENT, naming rank, size and the sum) before
 *   any step: the weights are those given, bit for bit;
 * - a job of one rank trains as without a communicator, bit for bit, and
 *   its sum is never called;
 * - a sum that fails stops the run with the sum's status, the message
 *   naming the rank and that it was summing over the ranks, the weights
 *   untouched (the first sum comes before the first step).
 * - the thread team (ax_thread_ranks): 0 or more than 4096 replicas
 *   refused; a rank out of range has no communicator; NULL teams are
 *   answered, not followed; a team of one sums in place, and once its rank
 *   has left, a sum fails naming the replica that left.
 * A valid run on the same net moves the weights, so the refusals are not
 * of the net or the data. */
#include "test_util.h"

static int sums_called;

static ax_status counting_sum(const ax_communicator *self, void *values, int64_t count,
                              ax_precision precision)
{
    (void)self, (void)values, (void)count, (void)precision;
    sums_called++;
    return AX_STATUS_OK;
}

/* The link to the other rank is down. */
static ax_status failing_sum(const ax_communicator *self, void *values, int64_t count,
                             ax_precision precision)
{
    (void)self, (void)values, (void)count, (void)precision;
    sums_called++;
    return AX_STATUS_IO_ERROR;
}

static ax_net *make_net(void)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = 4;
    ax_net *net = NULL;
    CHECK_OK(ax_layers_parse("5:tanh,1:identity", &config));
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    return net;
}

static double *weights_of(const ax_net *net)
{
    const int64_t count = ax_net_parameter_count(net);
    double *weights = malloc((size_t)count * sizeof *weights);
    ax_net_parameters_get(net, weights);
    return weights;
}

static bool same_weights(const ax_net *a, const ax_net *b)
{
    double *x = weights_of(a), *y = weights_of(b);
    bool same = memcmp(x, y, (size_t)ax_net_parameter_count(a) * sizeof *x) == 0;
    free(x);
    free(y);
    return same;
}

static ax_train_config short_run(const ax_communicator *communicator)
{
    ax_train_config config = ax_train_defaults();
    config.epochs = 2;
    config.batch_size = 16;
    config.progress_interval = 1e9;
    config.communicator = communicator;
    return config;
}

/* ax_train with communicator fails with status and text, weights untouched. */
static void check_refused(const ax_dataset *data, const ax_communicator *communicator,
                          ax_status status, const char *text)
{
    ax_net *net = make_net(), *untouched = make_net();
    if (!net || !untouched) {
        ax_net_free(net);
        ax_net_free(untouched);
        return;
    }
    ax_train_config config = short_run(communicator);
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &config, &summary), status, text);
    CHECK(same_weights(net, untouched));
    ax_net_free(net);
    ax_net_free(untouched);
}

static void test_thread_team(void)
{
    ax_thread_ranks *team = (ax_thread_ranks *)1;
    CHECK_FAILS(ax_thread_ranks_create(0, &team), AX_STATUS_BAD_ARGUMENT, "0 replicas: give 1 to 4096");
    CHECK(team == NULL);
    CHECK_FAILS(ax_thread_ranks_create(4097, &team), AX_STATUS_BAD_ARGUMENT,
                "4097 replicas: give 1 to 4096");
    int rank = 7;
    CHECK(ax_thread_ranks_communicator(NULL, 0) == NULL);
    CHECK(!ax_thread_ranks_left(NULL, &rank) && rank == -1);
    ax_thread_ranks_leave(NULL, 0);
    ax_thread_ranks_free(NULL);
    CHECK_OK(ax_thread_ranks_create(1, &team));
    if (!team)
        return;
    CHECK(ax_thread_ranks_communicator(team, 1) == NULL);
    CHECK(ax_thread_ranks_communicator(team, -1) == NULL);
    ax_communicator *alone = ax_thread_ranks_communicator(team, 0);
    CHECK(alone && alone->rank == 0 && alone->size == 1);
    double values[3] = {1.5, -2.0, 1e300};
    float floats[2] = {0.25f, -8.0f};
    CHECK_OK(alone->sum(alone, values, 3, AX_PRECISION_F64));
    CHECK(values[0] == 1.5 && values[1] == -2.0 && values[2] == 1e300);
    CHECK_OK(alone->sum(alone, floats, 2, AX_PRECISION_F32));
    CHECK(floats[0] == 0.25f && floats[1] == -8.0f);
    CHECK(!ax_thread_ranks_left(team, &rank) && rank == -1);
    ax_thread_ranks_leave(team, 0);
    CHECK(ax_thread_ranks_left(team, &rank) && rank == 0);
    CHECK_FAILS(alone->sum(alone, values, 3, AX_PRECISION_F64), AX_STATUS_IO_ERROR,
                "replica 0 of 1 left the run (it failed; see its message)");
    ax_thread_ranks_free(team);
}

int main(void)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_synth_linear(64, 4, 7, &data));
    if (!data)
        return test_finish("test_communicator_refusals");

    ax_communicator bad = {.rank = 2, .size = 2, .sum = counting_sum};
    check_refused(data, &bad, AX_STATUS_BAD_ARGUMENT,
                  "the communicator is not valid: rank 2 of 2, sum set");
    bad = (ax_communicator){.rank = -1, .size = 2, .sum = counting_sum};
    check_refused(data, &bad, AX_STATUS_BAD_ARGUMENT, "rank -1 of 2, sum set");
    bad = (ax_communicator){.rank = 0, .size = 0, .sum = counting_sum};
    check_refused(data, &bad, AX_STATUS_BAD_ARGUMENT, "rank 0 of 0, sum set");
    bad = (ax_communicator){.rank = 0, .size = 2, .sum = NULL};
    check_refused(data, &bad, AX_STATUS_BAD_ARGUMENT, "rank 0 of 2, sum missing");
    CHECK(sums_called == 0);

    ax_communicator broken = {.rank = 0, .size = 2, .sum = failing_sum};
    check_refused(data, &broken, AX_STATUS_IO_ERROR, "rank 0 of 2: summing over the ranks");
    CHECK(sums_called == 1);

    /* One rank alone: the same bits as no communicator, no sums. */
    sums_called = 0;
    ax_communicator alone = {.rank = 0, .size = 1, .sum = counting_sum};
    ax_net *with = make_net(), *without = make_net(), *start = make_net();
    if (with && without && start) {
        ax_train_config config = short_run(&alone);
        ax_train_summary summary = ax_train_summary_empty();
        CHECK_OK(ax_train(with, data, NULL, NULL, &config, &summary));
        config = short_run(NULL);
        summary = ax_train_summary_empty();
        CHECK_OK(ax_train(without, data, NULL, NULL, &config, &summary));
        CHECK(same_weights(with, without));
        CHECK(!same_weights(with, start)); /* it trained */
        CHECK(sums_called == 0);
    }
    ax_net_free(with);
    ax_net_free(without);
    ax_net_free(start);
    ax_dataset_free(data);
    test_thread_team();
    return test_finish("test_communicator_refusals");
}
