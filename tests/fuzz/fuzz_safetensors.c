/* fuzz_safetensors.c: libFuzzer target for the safetensors reader and the
 * model loader built on it: every tensor the reader accepts is read through
 * in full (so a bad offset or shape shows up under ASan), then the same
 * bytes go to ax_net_load (compute precision float32 or float64, chosen by
 * the input's length, so both conversion paths run). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "axon.h"
#include "fuzz_util.h"
#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_file file = fuzz_file_make(data, size);
    ax_safetensors_file *tensors = NULL;
    if (ax_safetensors_read(file.path, &tensors) == AX_STATUS_OK) {
        volatile unsigned char sink = 0;
        for (int i = 0; i < ax_safetensors_count(tensors); i++) {
            const ax_safetensors_tensor *tensor = ax_safetensors_tensor_at(tensors, i);
            const unsigned char *bytes = tensor->data;
            const size_t length = ax_safetensors_tensor_bytes(tensor);
            for (size_t b = 0; b < length; b++)
                sink ^= bytes[b];
            if (ax_safetensors_find(tensors, tensor->name) == NULL)
                abort();
        }
        for (int i = 0; i < ax_safetensors_metadata_count(tensors); i++) {
            const char *key = ax_safetensors_metadata_key(tensors, i);
            if (!ax_safetensors_metadata(tensors, key))
                abort();
        }
        (void)sink;
        ax_safetensors_free(tensors);
    }

    ax_net *net = NULL;
    const ax_precision precision = size % 2 ? AX_PRECISION_F64 : AX_PRECISION_F32;
    if (ax_net_load(file.path, precision, &net) == AX_STATUS_OK) {
        if (ax_net_parameter_count(net) < 1)
            abort();
        ax_net_free(net);
    } else if (net) {
        abort();
    }
    fuzz_file_close(&file);
    return 0;
}
