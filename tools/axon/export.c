/* export.c: `axon export --model FILE --onnx FILE.onnx`: a saved model as
 * an ONNX model (ax_net_export_onnx), for ONNX runtimes and other tools.
 * One format today; the option names it, so another format is another
 * option beside it rather than a new command. */
#include <stdio.h>

#include "common.h"
#include "file_roles.h"
#include "options.h"

static const cli_option export_options[] = {
    {"model", CLI_STRING, "FILE", NULL, "the model (required), from axon train --out"},
    {"onnx", CLI_STRING, "FILE", NULL,
     "write it as ONNX there (required): input \"input\" (N, height, width, channels)\n"
     "for images, as axon holds pixels, else (N, features); output \"output\""},
};

static const char export_usage[] = "axon export --model FILE --onnx FILE.onnx";
static const char export_description[] =
    "Writes a saved model as an ONNX model (IR 7, operator set 13) that gives the\n"
    "outputs axon predict gives, for ONNX runtimes and converters (docs/cli.md).\n"
    "\nexample:\n  axon export --model fmnist.safetensors --onnx fmnist.onnx";

/* "(N, 28, 28, 1)" or "(N, 784)": the graph's input as the file declares it. */
static void input_text(const ax_net_config *config, char *text, size_t capacity)
{
    if (config->input_shape[0] > 0)
        snprintf(text, capacity, "(N, %lld, %lld, %lld)", (long long)config->input_shape[0],
                 (long long)config->input_shape[1], (long long)config->input_shape[2]);
    else
        snprintf(text, capacity, "(N, %lld)", (long long)config->input_width);
}

int command_export(int argc, char **argv)
{
    cli_args args;
    int result = cli_parse("export", export_options,
                           (int)(sizeof export_options / sizeof *export_options), argc, argv, 1,
                           &args);
    if (result != CLI_EXIT_OK)
        return result;
    if (args.help) {
        cli_print_help(&args, export_usage, export_description, stdout);
        return CLI_EXIT_OK;
    }
    const char *model_path = NULL, *onnx_path = NULL;
    if (!cli_get_nonempty(&args, "model", &model_path) ||
        !cli_get_nonempty(&args, "onnx", &onnx_path))
        return CLI_EXIT_USAGE;
    if (!model_path || !onnx_path) {
        cli_error(&args, "--%s is required (see axon export --help)", model_path ? "onnx" : "model");
        return CLI_EXIT_USAGE;
    }
    file_roles roles = {0};
    file_roles_input(&roles, "--model", model_path, "the model");
    file_roles_output(&roles, "--onnx", onnx_path);
    result = file_roles_check(&roles);
    if (result != CLI_EXIT_OK)
        return result;
    ax_net *net = NULL;
    result = load_model("--model", model_path, AX_PRECISION_F32, &net);
    if (result != CLI_EXIT_OK)
        return result;
    ax_status status = ax_net_export_onnx(net, onnx_path);
    if (status != AX_STATUS_OK) {
        result = report_failure(status, onnx_path);
    } else {
        const ax_net_config *config = ax_net_config_get(net);
        char layout[4096], input[96];
        ax_layers_format(config, layout, sizeof layout);
        input_text(config, input, sizeof input);
        printf("wrote %s: %s, input %s, output (N, %lld)\n", onnx_path, layout, input,
               (long long)ax_net_layer_width(net, config->layer_count - 1));
    }
    ax_net_free(net);
    return result;
}
