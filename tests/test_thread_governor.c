/* test_thread_governor.c: the governor's choices, given step times from a
 * made-up machine (no clock involved), and the check that lets it change
 * the thread count mid-run: ax_gemm_thread_invariant says yes exactly when
 * training in that precision gives the same weights, bit for bit, on 1
 * thread and on 2 (with a layer wider than cpu_backend.c's GEMM_K_BLOCK, so
 * that the BLAS is handed k in blocks).
 *
 * Whether it does depends on the BLAS's kernels, so CTest runs this with
 * OpenBLAS's Haswell kernels, where float32 sums depend on the thread count
 * (AXON_EXPECT_F32_INVARIANT=0), and with its SkylakeX kernels on a CPU
 * that has AVX-512, where they do not (=1): both answers are exercised. */
#include "core/thread_governor.h"

#include <stdlib.h>

#include "test_util.h"

/* Feeds `steps` steps to the governor from a machine on which a step of
 * 1 GFLOP takes seconds_on[threads in use]; returns the steps run on 1. */
static int run_steps(ax_thread_governor *g, const double seconds_on[3], int steps)
{
    int on_one = 0;
    for (int i = 0; i < steps; i++) {
        const int threads = g->probing ? g->probing : g->threads;
        on_one += threads == 1;
        ax_thread_governor_step(g, seconds_on[threads], 1e9);
    }
    return on_one;
}

static void check_choices(void)
{
    ax_thread_governor g;
    CHECK_OK(ax_set_threads(2));
    /* Idle: 2 threads twice as fast. It stays on 2 and probes 1 ever less
     * often: 400 windows of 5 steps hold 5 probes (after 2, 8, 32, 128 and
     * 128 windows), each a window of 3 steps of 20 ms. */
    const double idle[3] = {0, 0.02, 0.01};
    ax_thread_governor_start(&g, true);
    const int idle_on_one = run_steps(&g, idle, 2000);
    CHECK(g.threads == 2);
    CHECK(idle_on_one == 5 * 3);
    CHECK(g.probe_interval == 128);
    /* The cores get busy: 2 threads now 3x slower than 1. The next probe
     * finds it (within 129 windows of 2 steps) and the run moves to 1. */
    const double busy[3] = {0, 0.01, 0.03};
    run_steps(&g, busy, 130 * 2 + 5);
    CHECK(g.threads == 1);
    CHECK(g.fewer_seconds > 0);
    /* Idle again: a probe upwards (within 129 windows of 3 steps) brings it
     * back to 2. */
    run_steps(&g, idle, 130 * 3 + 5);
    CHECK(g.threads == 2);
    ax_thread_governor_finish(&g);
    CHECK(ax_threads() == 2);

    /* Disabled, or with one thread: nothing changes. */
    ax_thread_governor_start(&g, false);
    run_steps(&g, busy, 200);
    CHECK(g.threads == 2 && !g.probing);
    CHECK_OK(ax_set_threads(1));
    ax_thread_governor_start(&g, true);
    CHECK(!g.enabled);
    ax_thread_governor_finish(&g);
}

/* Trains a 300-64-10 network for 2 epochs on threads and returns its weights. */
static double *train_on(int threads, ax_precision precision, const ax_dataset *data, int64_t *count)
{
    CHECK_OK(ax_set_threads(threads));
    ax_net_config config = ax_net_defaults();
    config.precision = precision;
    config.seed = 7;
    double *weights = NULL;
    ax_net *net = NULL;
    CHECK_OK(ax_layers_parse("64:relu,10:softmax", &config));
    config.input_width = 300;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    if (!net)
        return NULL;
    ax_train_config train = ax_train_defaults();
    train.epochs = 2;
    train.batch_size = 100;
    train.adapt_threads = false; /* the count is the test's to choose */
    ax_train_summary summary;
    CHECK_OK(ax_train(net, data, NULL, NULL, &train, &summary));
    *count = ax_net_parameter_count(net);
    weights = malloc((size_t)*count * sizeof *weights);
    if (weights)
        ax_net_parameters_get(net, weights);
    ax_net_free(net);
    return weights;
}

static void check_same_weights(void)
{
    /* 2000 rows of 300 features and 10 classes from a fixed pattern. */
    const int64_t rows = 2000, features = 300;
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_create(rows, features, 10, 0, &data));
    if (!data)
        return;
    float *x = ax_dataset_features_data(data);
    int32_t *y = ax_dataset_labels_data(data);
    uint64_t state = 12345;
    for (int64_t i = 0; i < rows * features; i++) {
        state = state * 6364136223846793005u + 1442695040888963407u;
        x[i] = (float)((state >> 40) & 0xffff) / 65536.0f;
    }
    for (int64_t r = 0; r < rows; r++)
        y[r] = (int32_t)(x[r * features] * 9.99f);
    const ax_precision precisions[] = {AX_PRECISION_F32, AX_PRECISION_BF16};
    for (int p = 0; p < 2; p++) {
        int64_t count1 = 0, count2 = 0;
        double *one = train_on(1, precisions[p], data, &count1);
        double *two = train_on(2, precisions[p], data, &count2);
        CHECK(one && two && count1 == count2);
        const bool invariant = ax_gemm_thread_invariant(precisions[p], 2);
        if (one && two && count1 == count2) {
            int64_t differ = 0;
            for (int64_t i = 0; i < count1; i++)
                differ += one[i] != two[i];
            printf("%s: the check says %s; %lld of %lld weights differ between 1 and 2 threads\n",
                   p ? "bf16" : "f32", invariant ? "invariant" : "not invariant",
                   (long long)differ, (long long)count1);
            CHECK(invariant == (differ == 0));
        }
        const char *expect = getenv("AXON_EXPECT_F32_INVARIANT");
        if (p == 0 && expect && *expect)
            CHECK(invariant == (atoi(expect) != 0));
        free(one);
        free(two);
    }
    ax_dataset_free(data);
}

int main(void)
{
    check_choices();
    check_same_weights();
    return test_finish("test_thread_governor");
}
