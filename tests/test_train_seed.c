/* test_train_seed.c: ax_train_config.seed drives both random choices of
 * training, the row order of each epoch and the dropout masks, and nothing
 * else; the same seed repeats them bit for bit.
 *
 * Each run starts from the same initial weights (the network's own seed,
 * fixed here) in float64 on one thread count, so two runs take the same
 * arithmetic unless a random choice differs:
 * - shuffle on, no dropout: the same seed gives the same weights bit for
 *   bit; another seed gives weights that differ by far more than rounding
 *   (SGD on batches of 4 visits the rows in another order); and neither
 *   equals the run with shuffle off, so the rows were reordered at all.
 * - shuffle off, no dropout: two seeds give the same weights bit for bit
 *   (the seed touches nothing else).
 * - shuffle off, dropout 0.5: the same seed repeats the masks (equal bit for
 *   bit), another seed draws other masks (weights far apart).
 * A trainer seeded with a constant instead of config.seed fails the first
 * check, and dropout keys drawn without config.seed fail the last. */
#include "test_util.h"
#include "test_datasets.h"

enum { MAX_PARAMETERS = 256 };

typedef struct result {
    double weights[MAX_PARAMETERS];
    int64_t count;
} result;

static result train_once(const ax_dataset *data, uint64_t seed, bool shuffle, double dropout)
{
    result r = {.count = 0};
    ax_net_config config = ax_net_defaults();
    config.input_width = 5;
    config.precision = AX_PRECISION_F64;
    config.seed = 3; /* the initial weights: the same in every run */
    CHECK_OK(ax_layers_parse("12:tanh,3:softmax", &config));
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    if (!net)
        return r;
    ax_train_config training = ax_train_defaults();
    training.optimizer = AX_OPTIMIZER_SGD;
    training.learning_rate = 0.2;
    training.momentum = 0.0;
    training.batch_size = 4;
    training.epochs = 2;
    training.seed = seed;
    training.shuffle = shuffle;
    training.dropout = dropout;
    training.adapt_threads = false;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, data, NULL, NULL, &training, &summary));
    r.count = ax_net_parameter_count(net);
    CHECK(r.count <= MAX_PARAMETERS);
    if (r.count <= MAX_PARAMETERS)
        ax_net_parameters_get(net, r.weights);
    ax_net_free(net);
    return r;
}

static bool same(const result *a, const result *b)
{
    return a->count == b->count && a->count > 0 &&
           memcmp(a->weights, b->weights, (size_t)a->count * sizeof(double)) == 0;
}

/* The largest difference of two runs' weights, relative to the largest weight. */
static double distance(const result *a, const result *b)
{
    double largest = 0.0, difference = 0.0;
    for (int64_t i = 0; i < a->count && a->count == b->count; i++) {
        largest = fmax(largest, fabs(a->weights[i]));
        difference = fmax(difference, fabs(a->weights[i] - b->weights[i]));
    }
    return largest > 0.0 ? difference / largest : 0.0;
}

int main(void)
{
    ax_dataset *data = test_uniform_dataset(64, 5, 11, false);
    if (!data)
        return test_finish("test_train_seed");
    /* Far beyond rounding: float64 runs that take the same arithmetic
     * agree to the last bit, and rounding alone moves weights by ~1e-15. */
    const double apart = 1e-4;

    const result shuffled_7 = train_once(data, 7, true, 0.0);
    const result shuffled_7_again = train_once(data, 7, true, 0.0);
    const result shuffled_8 = train_once(data, 8, true, 0.0);
    const result unshuffled_7 = train_once(data, 7, false, 0.0);
    const result unshuffled_8 = train_once(data, 8, false, 0.0);
    CHECK(same(&shuffled_7, &shuffled_7_again));
    CHECK(!same(&shuffled_7, &shuffled_8) && distance(&shuffled_7, &shuffled_8) > apart);
    CHECK(same(&unshuffled_7, &unshuffled_8));
    CHECK(distance(&shuffled_7, &unshuffled_7) > apart && distance(&shuffled_8, &unshuffled_7) > apart);
    printf("row order: seeds 7 and 8 %.3g apart; 7 twice equal; shuffle off %.3g from seed 7's, "
           "seeds alike there\n",
           distance(&shuffled_7, &shuffled_8), distance(&shuffled_7, &unshuffled_7));

    const result dropout_7 = train_once(data, 7, false, 0.5);
    const result dropout_7_again = train_once(data, 7, false, 0.5);
    const result dropout_8 = train_once(data, 8, false, 0.5);
    CHECK(same(&dropout_7, &dropout_7_again));
    CHECK(!same(&dropout_7, &dropout_8) && distance(&dropout_7, &dropout_8) > apart);
    CHECK(distance(&dropout_7, &unshuffled_7) > apart); /* dropout did something */
    printf("dropout masks: seeds 7 and 8 %.3g apart; 7 twice equal\n",
           distance(&dropout_7, &dropout_8));
    ax_dataset_free(data);
    return test_finish("test_train_seed");
}
