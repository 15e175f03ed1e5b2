/* options.c: the defaults of ax_prep_options (ax_prep_defaults in axon.h
 * calls this). Built with or without the image preparation (CMakeLists.txt,
 * AXON_PREP): a program may fill its options before it learns that this
 * build cannot run them (src/prep/absent.c). */
#include <stddef.h>
#include <string.h>

#include "axon.h"
#include "base/memory.h"
#include "prep/prep.h"

void ax_prep_options_init(ax_prep_options *options, size_t size)
{
    ax_prep_options defaults;
    memset(&defaults, 0, sizeof defaults);
    defaults.image_size = 256;
    defaults.batch_size = 1024;
    defaults.seed = 1;
    defaults.progress_interval = 0.25;
    defaults.jpeg_quality = 90;
    ax_sized_fill(options, size, &defaults, sizeof defaults);
}

ax_status prep_options_read(const ax_prep_options *options, ax_prep_options *full)
{
    *full = ax_prep_defaults();
    return ax_sized_read(options, full,
                         offsetof(ax_prep_options, progress_interval) + sizeof options->progress_interval,
                         sizeof *full, "prep options", "ax_prep_defaults");
}
