/* fuzz_layers.c: libFuzzer target for the layer layout string
 * ("128:relu,10:softmax"); an accepted layout must survive being formatted
 * back to text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "axon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    ax_net_config config = ax_net_defaults();
    config.input_width = 3;
    if (ax_layers_parse(text, &config) == AX_STATUS_OK) {
        if (config.layer_count < 1 || config.layer_count > AX_MAX_LAYERS)
            abort();
        char formatted[4096];
        ax_layers_format(&config, formatted, sizeof formatted);
        if (strlen(formatted) >= sizeof formatted)
            abort();
    }
    ax_net_config_release(&config);
    free(text);
    return 0;
}
