/* layer_window.c: helpers shared by the layers that slide a window over an
 * image (layer_conv.c, layer_pool.c); see layer_window.h. */
#include "core/layer_window.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "base/error.h"
#include "core/net.h"

bool ax_window_read_number(const char **cursor, int64_t *value)
{
    if (!isdigit((unsigned char)**cursor))
        return false;
    char *end;
    errno = 0;
    long long number = strtoll(*cursor, &end, 10);
    if (errno)
        return false;
    *value = number;
    *cursor = end;
    return true;
}

ax_status ax_window_syntax_error(const char *where, const char *item, const char *stop,
                                 const char *form)
{
    if (!*stop)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s: '%s' ends too early; expected %s", where, item,
                       form);
    return ax_fail(AX_STATUS_BAD_ARGUMENT,
                   "%s: '%s' stops fitting at character %d ('%s'); expected %s", where, item,
                   (int)(stop - item) + 1, stop, form);
}

ax_status ax_window_require_image(int index, const char *item, ax_layer_shape in)
{
    if (in.image)
        return AX_STATUS_OK;
    if (index == 0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "layer 1 (%s) needs an image input, but the input is %lld values per row "
                       "with no image shape (IDX images, batches:DIR and .npy files of 4 "
                       "dimensions (N, H, W, C) have one)",
                       item, (long long)in.channels);
    return ax_fail(AX_STATUS_BAD_ARGUMENT,
                   "layer %d (%s) needs an image input, but layer %d is dense (%lld values per "
                   "row); put convolution and pooling layers before the dense ones",
                   index + 1, item, index, (long long)in.channels);
}

const void *ax_window_layer_input(const ax_net *net, int index)
{
    return index > 0 ? net->workspace.outputs[index - 1] : net->workspace.current_input;
}
