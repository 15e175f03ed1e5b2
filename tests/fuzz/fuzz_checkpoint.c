/* fuzz_checkpoint.c: libFuzzer target for the checkpoint reader
 * (ax_checkpoint_load, src/core/checkpoint_load.c): the bytes are the file.
 * An accepted checkpoint must come back consistent (a network whose weights
 * match the file's count, a state whose epoch is within the run, the config
 * pointing at the state); a refused one must leave every output NULL, so
 * LeakSanitizer sees anything the failure paths forget.
 *
 * An accepted one is then resumed for the rest of its epoch (at most one
 * more) on the data the seed checkpoints were made with (synth:linear, 40
 * rows, 3 features, seed 1), so that mutated counters, row orders, options
 * and optimizer states reach ax_train's own resume checks; other data is
 * refused by the fingerprint, which is checked too. Nothing is written:
 * the checkpoint options are cleared. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "axon.h"
#include "fuzz_util.h"

static ax_dataset *seed_data; /* made once: what the seed checkpoints trained on */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (ax_set_threads(1) != AX_STATUS_OK || ax_dataset_synth_linear(40, 3, 1, &seed_data) != AX_STATUS_OK)
        abort();
    return 0;
}

static void resume(ax_net *net, ax_train_config *config, int epoch)
{
    config->epochs = epoch + 1;
    config->checkpoint_every = 0;
    config->checkpoint_prefix = NULL;
    config->progress = NULL;
    ax_train_summary summary = ax_train_summary_empty();
    ax_status status = ax_train(net, seed_data, NULL, NULL, config, &summary);
    if (status != AX_STATUS_OK && !ax_error_message()[0])
        abort(); /* a refusal says why */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_file file = fuzz_file_make(data, size);
    ax_net *net = NULL;
    ax_train_state *state = NULL;
    ax_train_config config;
    memset(&config, 0, sizeof config);
    if (ax_checkpoint_load(file.path, &net, &config, &state) == AX_STATUS_OK) {
        if (!net || !state || config.resume != state)
            abort();
        const int64_t count = ax_net_parameter_count(net);
        if (count < 1)
            abort();
        /* Read the weights back through the backend: a short arena shows up under ASan. */
        double *values = malloc((size_t)count * sizeof *values);
        if (values) {
            ax_net_parameters_get(net, values);
            free(values);
        }
        const int epoch = ax_train_state_epochs_done(state);
        if (epoch < 0 || epoch > 100000000)
            abort();
        (void)strlen(ax_train_state_note(state));
        resume(net, &config, epoch);
        ax_net_free(net);
        ax_train_state_free(state);
    } else if (net || state) {
        abort();
    }
    fuzz_file_close(&file);
    return 0;
}
