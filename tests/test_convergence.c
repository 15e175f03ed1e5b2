/* test_convergence.c: the Fashion-MNIST MLP learns. 784-128-128-10 ReLU,
 * SGD lr 0.1, momentum
 * 0.9, batch 128 on Fashion-MNIST (skipped when the Debian package is not
 * installed).
 *
 * After one epoch this configuration lands anywhere from about 81.5 % to
 * 84.3 % test accuracy depending on the seed, in PyTorch exactly as in axon
 * (bench/peers/b1_torch.py, seeds 1-3: 81.6, 83.7, 84.2 %; axon seeds 1-6:
 * 83.7, 82.1, 82.4, 84.3, 81.7, 83.0 %): the momentum-amplified step of 1.0
 * is noisy; over seeds 11-22 the means are 82.97 % (axon) and 82.65 %
 * (PyTorch). So the test asks of one epoch what holds for every seed (above
 * 80 %, mean of three seeds above 81.5 %) and of three epochs the 84 % that
 * the issue names. It also checks that the same seed reproduces the run bit
 * for bit. */
#include "test_util.h"
#include "test_datasets.h"

static double train_b1(ax_dataset *train, ax_dataset *test, uint64_t seed, int epochs,
                       double *parameters_out)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = 784;
    config.seed = seed;
    CHECK_OK(ax_layers_parse("128:relu,128:relu,10:softmax", &config));
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    if (!net)
        return 0.0;
    ax_train_config training = ax_train_defaults();
    training.learning_rate = 0.1;
    training.momentum = 0.9;
    training.batch_size = 128;
    training.epochs = epochs;
    training.seed = seed;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, train, NULL, test, &training, &summary));
    printf("seed %llu, %d epoch(s): test accuracy %.2f %%, %.2f s\n", (unsigned long long)seed,
           epochs, 100.0 * summary.final_test_accuracy, summary.seconds);
    if (parameters_out)
        ax_net_parameters_get(net, parameters_out);
    ax_net_free(net);
    return summary.final_test_accuracy;
}

int main(void)
{
    ax_dataset *train = NULL, *test = NULL;
    if (!test_load_fashion_mnist(&train, &test))
        return test_finish("test_convergence");

    double sum = 0.0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        double accuracy = train_b1(train, test, seed, 1, NULL);
        CHECK(accuracy > 0.80);
        sum += accuracy;
    }
    CHECK(sum / 3.0 > 0.815);
    CHECK(train_b1(train, test, 1, 3, NULL) >= 0.84);

    /* Same seed, same threads: identical weights. */
    int64_t count = 784 * 128 + 128 + 128 * 128 + 128 + 128 * 10 + 10;
    double *first = malloc((size_t)count * sizeof(double));
    double *second = malloc((size_t)count * sizeof(double));
    train_b1(train, test, 7, 1, first);
    train_b1(train, test, 7, 1, second);
    CHECK(memcmp(first, second, (size_t)count * sizeof(double)) == 0);
    free(first);
    free(second);

    ax_dataset_free(train);
    ax_dataset_free(test);
    return test_finish("test_convergence");
}
