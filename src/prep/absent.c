/* absent.c: image preparation in a build without it (AXON_PREP=OFF, or AUTO
 * where pkg-config found no libarchive, libjpeg and libpng). CMake compiles
 * this file instead of the rest of src/prep, so the public functions of
 * axon.h still exist and programs need no #ifdef: ax_prep_run refuses with
 * AX_STATUS_UNSUPPORTED and says how to rebuild (after the same check of
 * the options' size as the pipeline's), as
 * src/parallel/mpi_communicator.c does for MPI (the options' defaults stay:
 * options.c is built either way). batches:DIR data (prep's output,
 * src/data/batches.c) needs none of these libraries and is always built. */
#include <string.h>

#include "base/error.h"
#include "base/memory.h"
#include "prep/prep.h"

void ax_prep_summary_free(ax_prep_summary *summary)
{
    (void)summary; /* ax_prep_run below allocates nothing */
}

ax_status ax_prep_run(const ax_prep_options *options, ax_prep_progress_fn progress, void *user,
                      ax_prep_summary *summary)
{
    if (summary) { /* filled "as far as the run went": nowhere, within the caller's size */
        AX_TRY(ax_sized_output_check(summary, sizeof *summary, "a prep summary",
                                     "ax_prep_summary_empty"));
        ax_prep_summary nothing = ax_prep_summary_empty();
        ax_sized_output_write(summary, &nothing, sizeof nothing);
    }
    /* A caller's malformed options are its bug whatever the build: the
     * same answer as with prep built (test_config_size). */
    ax_prep_options full;
    if (options)
        AX_TRY(prep_options_read(options, &full));
    return ax_fail(AX_STATUS_UNSUPPORTED,
                   "this build of axon has no image preparation (axon prep); rebuild with it "
                   "(apt-get install pkg-config libarchive-dev libjpeg62-turbo-dev libpng-dev; "
                   "cmake -DAXON_PREP=ON)");
}
