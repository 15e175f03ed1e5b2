/* two_moons.c: the smallest complete axon program, for users of the
 * installed library: it makes a two-class data set in memory (two
 * interleaved half circles), trains a 2-16-16-2 network with Adam, prints
 * the accuracy, and saves and reloads the model. Build it against an
 * installed axon either way:
 *   cc two_moons.c $(pkg-config --cflags --libs axon) -o two_moons
 *   cmake -S examples -B build-examples -DCMAKE_PREFIX_PATH=PREFIX  (find_package(axon))
 * Exit status 0 when the network separates the moons (accuracy >= 0.95). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <axon.h>

static int fail(const char *what, ax_status status)
{
    fprintf(stderr, "two_moons: %s: %s: %s\n", what, ax_status_name(status), ax_error_message());
    return 1;
}

int main(int argc, char **argv)
{
    const char *model_path = argc > 1 ? argv[1] : "two_moons.safetensors";
    enum { ROWS = 512 };
    ax_dataset *data = NULL;
    ax_status status = ax_dataset_create(ROWS, 2, 2, 0, &data);
    if (status != AX_STATUS_OK)
        return fail("ax_dataset_create", status);
    float *x = ax_dataset_features_data(data); /* (rows, 2) */
    int32_t *y = ax_dataset_labels_data(data);  /* (rows) */
    const double pi = 3.14159265358979323846;
    for (int r = 0; r < ROWS; r++) {
        double t = pi * (r / 2) / (ROWS / 2 - 1);
        int upper = r % 2 == 0;
        x[2 * r] = (float)(upper ? cos(t) : 1 - cos(t));
        x[2 * r + 1] = (float)(upper ? sin(t) : 0.5 - sin(t));
        y[r] = upper ? 0 : 1;
    }

    ax_net_config net_config = ax_net_defaults();
    net_config.input_width = 2;
    status = ax_layers_parse("16:tanh,16:tanh,2:softmax", &net_config);
    ax_net *net = NULL;
    if (status == AX_STATUS_OK)
        status = ax_net_create(&net_config, &net);
    ax_net_config_release(&net_config);
    if (status != AX_STATUS_OK) {
        ax_dataset_free(data);
        return fail("creating the network", status);
    }

    ax_train_config config = ax_train_defaults();
    config.optimizer = AX_OPTIMIZER_ADAM;
    config.learning_rate = 0.01;
    config.batch_size = 32;
    config.epochs = 200;
    ax_train_summary summary = ax_train_summary_empty();
    ax_evaluation evaluation = ax_evaluation_empty();
    ax_net *loaded = NULL;
    status = ax_train(net, data, NULL, NULL, &config, &summary);
    if (status == AX_STATUS_OK)
        status = ax_net_save(net, model_path);
    if (status == AX_STATUS_OK)
        status = ax_net_load(model_path, AX_PRECISION_F32, &loaded);
    if (status == AX_STATUS_OK)
        status = ax_net_evaluate(loaded, data, &evaluation);
    int result = 0;
    if (status != AX_STATUS_OK) {
        result = fail("training, saving or evaluating", status);
    } else {
        printf("axon %s: %d epochs in %.2f s, loss %.4f, accuracy %.3f (model reloaded from %s)\n",
               ax_build_info_get().version, summary.epochs_run, summary.seconds, evaluation.loss,
               evaluation.accuracy, model_path);
        result = evaluation.accuracy >= 0.95 ? 0 : 1;
    }
    ax_evaluation_free(&evaluation);
    ax_net_free(loaded);
    ax_net_free(net);
    ax_dataset_free(data);
    return result;
}
