/* b1_smoke.c: trains the Fashion-MNIST MLP 784-128-128-10 with SGD at batch
 * 128 (axon bench b1a) through the library alone, for quick checks while
 * developing. */
#include <stdio.h>
#include <stdlib.h>
#include "axon.h"

static bool show(const ax_progress *p, void *user)
{
    if (p->epoch_done)
        printf("epoch %d loss %.4f test_acc %.2f%% %.3f s %.1f GFLOP/s\n", p->epoch, p->train_loss,
               100 * p->test_accuracy, p->epoch_seconds, p->gflops);
    return true;
}

int main(int argc, char **argv)
{
    ax_dataset *train, *test;
    if (ax_dataset_load_idx_dir("/usr/share/datasets/fashion-mnist", false, &train) ||
        ax_dataset_load_idx_dir("/usr/share/datasets/fashion-mnist", true, &test)) {
        fprintf(stderr, "%s\n", ax_error_message());
        return 1;
    }
    ax_net_config config = ax_net_defaults();
    config.input_width = 784;
    if (ax_layers_parse(argc > 1 ? argv[1] : "128:relu,128:relu,10:softmax", &config)) return 1;
    config.precision = argc > 2 && argv[2][0] == 'd' ? AX_PRECISION_F64 : AX_PRECISION_F32;
    ax_net *net;
    if (ax_net_create(&config, &net)) { fprintf(stderr, "%s\n", ax_error_message()); return 1; }
    ax_train_config tc = ax_train_defaults();
    tc.epochs = argc > 3 ? atoi(argv[3]) : 5;
    tc.batch_size = argc > 4 ? atoi(argv[4]) : 128;
    tc.learning_rate = argc > 5 ? atof(argv[5]) : 0.1;
    tc.momentum = argc > 6 ? atof(argv[6]) : 0.9;
    tc.progress = show;
    ax_train_summary s = ax_train_summary_empty();
    if (ax_train(net, train, NULL, test, &tc, &s)) { fprintf(stderr, "%s\n", ax_error_message()); return 1; }
    printf("total %.3f s, %.1f GFLOP\n", s.seconds, s.gflop);
    ax_net_free(net);
    ax_dataset_free(train);
    ax_dataset_free(test);
    return 0;
}
