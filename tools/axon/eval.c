/* eval.c: `axon eval`: loss, accuracy and confusion matrix of a saved model
 * on a data set (ax_net_evaluate), as a table for people or JSON for
 * scripts. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "data_source.h"
#include "metrics.h"
#include "options.h"

static const cli_option eval_options[] = {
    {"model", CLI_STRING, "FILE", NULL, "the model to evaluate (required), from axon train --out"},
    {"data", CLI_STRING, "D", NULL,
     "the data: fashion-mnist, an IDX folder (its t10k test files), FILE.csv,\n"
     "FILE.npy or synth:linear"},
    {"test", CLI_STRING, "D", NULL, "the same as --data, except that synth:linear then gives\n"
                                    "the test rows of axon train --test synth:linear"},
    PRECISION_OPTION,
    DEVICE_OPTION,
    THREADS_OPTION,
    {"json", CLI_FLAG, NULL, NULL, "print one JSON object instead of tables"},
    {"seed", CLI_INT, "N", "1", "synth:linear: the seed given to axon train"},
    DATA_SOURCE_OPTIONS,
    DATA_STREAM_OPTIONS,
    {"views", CLI_INT, "1|10", "1",
     "streamed batches with --crop: 1 = the centre crop; 10 = cuda-convnet2's\n"
     "multiview test: the 4 corner crops and the centre, each mirrored, their\n"
     "softmax outputs averaged (a softmax cross-entropy model)"},
};

static const char eval_usage[] = "axon eval --model FILE --data D [options]";
static const char eval_description[] =
    "Evaluates a saved model on D: the mean loss, and for class labels the\n"
    "accuracy and the confusion matrix (rows: true class, columns: predicted).\n"
    "\nexample:\n  axon eval --model fmnist.safetensors --data fashion-mnist";

/* Largest confusion matrix printed as a table; --json has them all. */
enum { MAX_TABLE_CLASSES = 40 };

static int64_t correct_count(const ax_evaluation *evaluation)
{
    int64_t correct = 0;
    for (int64_t c = 0; c < evaluation->classes; c++)
        correct += evaluation->confusion[c * evaluation->classes + c];
    return correct;
}

static void print_confusion(const ax_evaluation *evaluation)
{
    int64_t classes = evaluation->classes;
    if (classes > MAX_TABLE_CLASSES) {
        printf("confusion matrix: %lld classes, too many for a table (see --json)\n",
               (long long)classes);
        return;
    }
    int64_t largest = classes;
    for (int64_t i = 0; i < classes * classes; i++)
        if (evaluation->confusion[i] > largest)
            largest = evaluation->confusion[i];
    int width = snprintf(NULL, 0, "%lld", (long long)largest) + 2;
    if (width < 5)
        width = 5;
    printf("confusion matrix (rows: true class, columns: predicted class)\n");
    printf("%*s", width, "");
    for (int64_t c = 0; c < classes; c++)
        printf("%*lld", width, (long long)c);
    printf("\n");
    for (int64_t t = 0; t < classes; t++) {
        printf("%*lld", width, (long long)t);
        for (int64_t p = 0; p < classes; p++)
            printf("%*lld", width, (long long)evaluation->confusion[t * classes + p]);
        printf("\n");
    }
}

static void print_text(const char *model_path, const ax_net *net, const ax_dataset *data,
                       const char *spec, const ax_evaluation *evaluation)
{
    const ax_net_config *config = ax_net_config_get(net);
    char text[1024];
    ax_layers_format(config, text, sizeof text);
    printf("model     %s: %s, %lld parameters, %s\n", model_path, text,
           (long long)ax_net_parameter_count(net), precision_description(config->precision, config->device));
    data_describe(data, text, sizeof text);
    printf("data      %s: %s\n", data_name(data, spec), text);
    printf("loss      %.6g (%s)\n", evaluation->loss, ax_loss_name(config->loss));
    if (evaluation->classes > 0 && evaluation->confusion) {
        printf("accuracy  %.2f%%  (%lld of %lld rows)\n", 100.0 * evaluation->accuracy,
               (long long)correct_count(evaluation), (long long)evaluation->rows);
        print_confusion(evaluation);
    } else if (config->loss == AX_LOSS_MSE && evaluation->loss >= 0) {
        printf("rmse      %.6g\n", sqrt(evaluation->loss));
    }
}

static void print_json(const char *model_path, const ax_net *net, const ax_dataset *data,
                       const char *spec, const ax_evaluation *evaluation)
{
    const ax_net_config *config = ax_net_config_get(net);
    char layout[1024];
    ax_layers_format(config, layout, sizeof layout);
    bool classification = evaluation->classes > 0 && evaluation->confusion;
    printf("{\"model\":");
    json_write_string(stdout, model_path);
    printf(",\"layers\":");
    json_write_string(stdout, layout);
    printf(",\"data\":");
    json_write_string(stdout, data_name(data, spec));
    printf(",\"rows\":%lld,\"loss_function\":", (long long)evaluation->rows);
    json_write_string(stdout, ax_loss_name(config->loss));
    printf(",\"loss\":");
    json_write_number(stdout, evaluation->loss);
    printf(",\"accuracy\":");
    json_write_number(stdout, classification ? evaluation->accuracy : NAN);
    printf(",\"classes\":%lld,\"confusion\":", (long long)(classification ? evaluation->classes : 0));
    if (!classification) {
        printf("null}\n");
        return;
    }
    printf("[");
    for (int64_t t = 0; t < evaluation->classes; t++) {
        printf("%s[", t ? "," : "");
        for (int64_t p = 0; p < evaluation->classes; p++)
            printf("%s%lld", p ? "," : "",
                   (long long)evaluation->confusion[t * evaluation->classes + p]);
        printf("]");
    }
    printf("]}\n");
}

int command_eval(int argc, char **argv)
{
    cli_args args;
    int result = cli_parse("eval", eval_options, (int)(sizeof eval_options / sizeof *eval_options),
                           argc, argv, 1, &args);
    if (result != CLI_EXIT_OK)
        return result;
    if (args.help) {
        cli_print_help(&args, eval_usage, eval_description, stdout);
        return CLI_EXIT_OK;
    }
    const char *model_path = NULL, *data_spec = NULL, *test_spec = NULL;
    bool json = false;
    ax_precision precision = AX_PRECISION_F32;
    ax_device device = ax_device_cpu();
    data_settings settings;
    if (!cli_get_nonempty(&args, "model", &model_path) ||
        !cli_get_nonempty(&args, "data", &data_spec) ||
        !cli_get_nonempty(&args, "test", &test_spec) || !cli_get_flag(&args, "json", &json) ||
        !read_precision(&args, &precision) || !read_device(&args, &device) || !data_settings_read(&args, &settings) ||
        !data_stream_settings_read(&args, data_spec ? data_spec : test_spec, &settings))
        return CLI_EXIT_USAGE;
    if (!data_views_read(&args, &settings))
        return CLI_EXIT_USAGE;
    /* An evaluation reads its rows once, in order: batches are streamed but with --stream off. */
    settings.stream = settings.stream_mode != STREAM_OFF;
    if (!model_path) {
        cli_error(&args, "--model is required (see axon eval --help)");
        return CLI_EXIT_USAGE;
    }
    if ((data_spec == NULL) == (test_spec == NULL)) {
        cli_error(&args, "give the data with --data (or --test), once (see axon eval --help)");
        return CLI_EXIT_USAGE;
    }
    result = apply_threads(&args);
    if (result != CLI_EXIT_OK)
        return result;

    ax_net *net = NULL;
    result = load_model_on_device("--model", model_path, precision, device, &net);
    if (result != CLI_EXIT_OK)
        return result;
    const char *option = data_spec ? "--data" : "--test";
    const char *spec = data_spec ? data_spec : test_spec;
    /* An IDX folder is evaluated on its test files; synth:linear given as
     * --data is the training draw, as --test the test draw. */
    data_part part = data_spec && strncmp(spec, "synth:", 6) == 0 ? DATA_PART_TRAIN : DATA_PART_TEST;
    const char *labels = settings.labels ? settings.labels : settings.test_labels;
    ax_dataset *data = NULL;
    result = data_source_load(option, spec, labels, part, &settings, &data);
    if (result == CLI_EXIT_OK)
        result = check_data_fits(ax_net_config_get(net), data, model_path);
    if (result == CLI_EXIT_OK) {
        ax_evaluation evaluation = ax_evaluation_empty();
        ax_status status = ax_net_evaluate(net, data, &evaluation);
        if (status != AX_STATUS_OK) {
            result = report_failure(status, spec);
        } else {
            if (json)
                print_json(model_path, net, data, spec, &evaluation);
            else
                print_text(model_path, net, data, spec, &evaluation);
            if (fflush(stdout) != 0)
                result = CLI_EXIT_RUNTIME;
        }
        ax_evaluation_free(&evaluation);
    }
    ax_dataset_free(data);
    ax_net_free(net);
    return result;
}
