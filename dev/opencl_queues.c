/* opencl_queues.c: does an OpenCL device overlap the work of two command
 * queues? Seed 001 computed the gradients of two batches at once on two
 * CUDA streams and found it paid at small batches. axon's OpenCL backend
 * gives each network (each backend) its own in-order queue, so two networks
 * on one device trained in two threads are two queues: this trains two
 * networks one epoch each on halves of TMVA's regression data (B2: 20-(W
 * tanh)x5-1), first one after the other, then at once, and prints both
 * times; sequential / concurrent above 1 is what overlapping gives.
 *
 *   gcc -O2 -Iinclude dev/opencl_queues.c -Lbuild -laxon -Wl,-rpath,$PWD/build -lpthread \
 *       -o /tmp/opencl_queues
 *   /tmp/opencl_queues [DEVICE [BATCH [WIDTH [ROWS]]]]    (default opencl 1024 256 100000)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axon.h"

typedef struct job {
    ax_net *net;
    ax_dataset *data;
    ax_train_config train;
    ax_status status;
} job;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *run(void *user)
{
    job *j = user;
    ax_train_summary summary = ax_train_summary_empty();
    j->status = ax_train(j->net, j->data, NULL, NULL, &j->train, &summary);
    if (j->status != AX_STATUS_OK)
        fprintf(stderr, "ax_train: %s\n", ax_error_message());
    return NULL;
}

/* Half `half` (0 or 1) of rows x 20 values from N(0, 1), target x . w. */
static ax_dataset *make_half(int64_t rows, int half)
{
    ax_dataset *data = NULL;
    if (ax_dataset_create(rows, 20, 0, 1, &data) != AX_STATUS_OK)
        return NULL;
    float *x = ax_dataset_features_data(data), *t = ax_dataset_targets_data(data);
    uint64_t state = 12345u + (uint64_t)half;
    for (int64_t r = 0; r < rows; r++) {
        double y = 0.0;
        for (int c = 0; c < 20; c++) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            const double u = (double)(state >> 11) / 9007199254740992.0 - 0.5;
            x[r * 20 + c] = (float)(3.4 * u);
            y += x[r * 20 + c] * (0.1 * (c + 1));
        }
        t[r] = (float)y;
    }
    return data;
}

int main(int argc, char **argv)
{
    ax_device device;
    if (ax_device_parse(argc > 1 ? argv[1] : "opencl", &device) != AX_STATUS_OK) {
        fprintf(stderr, "%s\n", ax_error_message());
        return 2;
    }
    const int64_t batch = argc > 2 ? atoll(argv[2]) : 1024, width = argc > 3 ? atoll(argv[3]) : 256;
    const int64_t rows = argc > 4 ? atoll(argv[4]) : 100000;
    char layers[256];
    snprintf(layers, sizeof layers, "%lld:tanh,%lld:tanh,%lld:tanh,%lld:tanh,%lld:tanh,1",
             (long long)width, (long long)width, (long long)width, (long long)width,
             (long long)width);
    job jobs[2];
    for (int i = 0; i < 2; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].data = make_half(rows / 2, i);
        ax_net_config config = ax_net_defaults();
        config.input_width = 20;
        config.loss = AX_LOSS_MSE;
        config.device = device;
        if (!jobs[i].data || ax_layers_parse(layers, &config) != AX_STATUS_OK ||
            ax_net_create(&config, &jobs[i].net) != AX_STATUS_OK) {
            fprintf(stderr, "%s\n", ax_error_message());
            return 1;
        }
        ax_net_config_release(&config);
        jobs[i].train = ax_train_defaults();
        jobs[i].train.batch_size = batch;
        jobs[i].train.epochs = 1;
        jobs[i].train.learning_rate = 1e-3;
    }
    run(&jobs[0]); /* warm-up: kernels compiled, workspaces made */
    run(&jobs[1]);
    double start = now();
    run(&jobs[0]);
    run(&jobs[1]);
    const double sequential = now() - start;
    pthread_t threads[2];
    start = now();
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, run, &jobs[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    const double concurrent = now() - start;
    char name[64];
    ax_device_format(device, name, sizeof name);
    printf("%s: two networks 20-(%lld tanh)x5-1, batch %lld, %lld rows each: one after the other "
           "%.3f s, at once (two queues) %.3f s: %.2fx\n",
           name, (long long)width, (long long)batch, (long long)(rows / 2), sequential, concurrent,
           sequential / concurrent);
    for (int i = 0; i < 2; i++) {
        ax_net_free(jobs[i].net);
        ax_dataset_free(jobs[i].data);
    }
    return jobs[0].status == AX_STATUS_OK && jobs[1].status == AX_STATUS_OK ? 0 : 1;
}
