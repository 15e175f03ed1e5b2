/* plugin.h: what a backend plugin exports, and how libaxon finds it.
 *
 * Every backend but the CPU lives in its own shared object,
 * libaxon_<name>.so (libaxon_cuda.so), opened the first time one of its
 * devices is asked for, so that a CPU run never loads a GPU runtime. The
 * plugin exports one symbol, `ax_backend_plugin_<name>`: a const
 * ax_backend_plugin (below) describing its devices and creating a backend
 * (the table of backend.h) on one of them. The loader (backend.c) knows
 * no backend by name: it finds the plugins by scanning the plugin folders
 * for libaxon_<name>.so (ax_backend_count lists what it found, opening
 * nothing), and opens backend <name> from, in order:
 *   1. $AXON_<NAME>_PLUGIN: a path to the .so (a plugin outside the
 *      folders, as the tests' fake one);
 *   2. the folder of the program or libaxon.so holding this loader;
 *   3. the build folder (tests run from build/tests/);
 *   4. the install folder (CMAKE_INSTALL_FULL_LIBDIR).
 * Adding a backend is its folder src/backend/<name>/ and one CMake line
 * (axon_add_backend_plugin); nothing in libaxon or the tools names it.
 *
 * A plugin resolves no symbol of libaxon: the few library functions it
 * calls (ax_fail, ax_fail_context, the CPU backend) reach it as a table of
 * host services, ax_backend_host, which the loader hands to its `init`
 * before anything else. src/backend/plugin_host/host_calls.c, linked into
 * every plugin, defines those functions there over that table, so plugin
 * sources call them as the library does. Why a table, not a link against
 * libaxon.so: libaxon may be loaded privately (Python's ctypes opens it
 * RTLD_LOCAL, so its symbols are invisible to a plugin), linked statically
 * into the axon command and the tests, or into a program that exports
 * nothing; a DT_NEEDED libaxon.so would then load a second libaxon whose
 * ax_fail writes a message the caller's ax_error_message never reads.
 * Handed over by the loader, the functions are always those of the copy of
 * libaxon that loaded the plugin. */
#ifndef AX_BACKEND_PLUGIN_H
#define AX_BACKEND_PLUGIN_H

#include "backend/backend.h"

/* Versions (SQLite's iVersion): `abi` is the version of the headers a
 * plugin was built with, AX_BACKEND_PLUGIN_ABI for the version of these
 * (backend.h's AX_BACKEND_TABLE_VERSION, or the older one a test plugin
 * asks for). Both tables, this one and ax_backend_ops, grow only at their
 * tails, each version's entries under a line "valid for version N". The
 * loader (backend.c, open_plugin):
 *   - refuses a plugin older than AX_BACKEND_PLUGIN_ABI_OLDEST, or whose
 *     ops_size is smaller than the oldest version's table, naming both
 *     versions (it was built before the tables could grow);
 *   - accepts an older plugin, reads this table only up to the entries of
 *     its version (ax_backend_plugin_has), and gives each backend it
 *     creates a copy of its ax_backend_ops with the later entries NULL, so
 *     the rest of libaxon finds them missing (ax_backend_supports) and
 *     refuses, naming the entry, what needs it, or goes without;
 *   - accepts a newer plugin, using the entries this version knows.
 * To add an entry: raise
 * AX_BACKEND_TABLE_VERSION to N, append the entry at the tail under a new
 * "valid for version N" line, read it only where
 * ax_backend_plugin_has(plugin, N) and it is not NULL, and let it be NULL
 * in plugins that have nothing to offer. Raise AX_BACKEND_PLUGIN_ABI_OLDEST
 * only when an entry above such a line must change. */
#define AX_BACKEND_PLUGIN_ABI AX_BACKEND_HEADERS_AS_OF
/* Versions: 3 brought the optional image operations and tables that can
 * grow; 4 the plugin's `init` (host services, below): a plugin older than
 * that resolved libaxon's symbols itself, which fails where libaxon is
 * loaded privately, so it is refused; 5 data sets and losses on the device
 * (backend.h); 6 structured device properties, extensions by name and the
 * runtime's line here, alloc and synchronize with a status (backend.h);
 * 7 the training strategies' l1_penalty and clamp; 8 whole convolutions
 * (conv_forward, conv_backward_input); 9 reduce (several reductions read
 * back with one wait); 10 conv_backward_weights (the third whole
 * convolution); 11 max_pool_backward_relu (pooling's input gradient and
 * the ReLU derivative below it in one pass); 12 conv_forward_bias_activation
 * (a convolution's forward pass with its bias and activation); 13
 * conv_backward_weights_bias (its weight and bias gradients in one pass);
 * 14 conv_backward_weights_bias_pooled (those of a first layer straight
 * from the max pooling's output gradient above it); 15
 * conv_forward_relu_max_pool and conv_backward_weights_bias_coded (a first
 * layer's forward pass and its max pooling in one, and its gradients from
 * the windows' coded positions rather than its output). */
#define AX_BACKEND_PLUGIN_ABI_OLDEST 4


/* A plugin's one exported symbol, its table: plugins are built with hidden
 * visibility, so that nothing else of theirs can interpose on the host's
 * symbols or another plugin's. */
#define AX_PLUGIN_EXPORT __attribute__((visibility("default")))

/* What the loader lends a plugin, valid until the process exits. New
 * services are added at the tail, with `size` telling a plugin which the
 * loader has. */
typedef struct ax_backend_host {
    size_t size; /* sizeof(ax_backend_host) of the loader */
    /* ax_fail (base/error.h) with the message already formatted. */
    ax_status (*fail)(ax_status status, const char *message);
    /* ax_fail_context with the context already formatted. */
    ax_status (*fail_context)(ax_status status, const char *context);
    /* ax_backend_cpu_create (backend.h): for a plugin that wraps the CPU's
     * code (the test plugin, tests/plugin_fake.c). */
    ax_backend *(*cpu_create)(ax_precision precision);
} ax_backend_host;

/* The extensions a plugin may offer by name (get_proc_address, below),
 * with their types. Statistics: on device `index`, inputs and outputs in
 * host memory, arguments already checked by src/stats/device.c (see
 * ax_backend_stats_entropy_mi below). */
typedef void (*ax_backend_proc)(void);
#define AX_BACKEND_EXTENSION_STATS_ENTROPY_MI "stats_entropy_mi"
typedef ax_status (*ax_backend_stats_entropy_mi_fn)(int index, const float *x, const float *y,
                                                     int64_t rows, int64_t d, double sums[3],
                                                     ax_stats_timing *timing);
#define AX_BACKEND_EXTENSION_STATS_TENSOR_MEAN "stats_tensor_mean"
typedef ax_status (*ax_backend_stats_tensor_mean_fn)(int index, const float *fx, const float *fy,
                                                      const float *fz, int64_t n, int64_t d,
                                                      float *out, ax_stats_timing *timing);

typedef struct ax_backend_plugin {
    int abi;           /* AX_BACKEND_PLUGIN_ABI of the headers it was built with */
    size_t ops_size;   /* sizeof(ax_backend_ops) it was built with */
    const char *name;  /* "cuda": the file's and the symbol's <name> */

    /* Devices visible to this process; 0 when its driver or devices are missing. */
    int (*device_count)(void);
    /* One line describing device `index` (see ax_cuda_device_info); fails
     * naming the devices there are when there is no such device. */
    ax_status (*device_info)(int index, char *text, size_t capacity);
    /* A backend on device `index`: AX_STATUS_UNSUPPORTED when there is no
     * such device (a message saying "no <name> device N", the name in
     * any case, as tests/test_backend_ops.c checks), AX_STATUS_OUT_OF_MEMORY
     * when its buffers do not fit. */
    ax_status (*create)(ax_precision precision, int index, ax_backend **out);

    /* Read only from plugins of versions 3 to 5 (NULL when one had none):
     * the activation statistics, which later plugins offer through
     * get_proc_address (AX_BACKEND_EXTENSION_STATS_*) and leave NULL here. */
    ax_status (*stats_entropy_mi)(int index, const float *x, const float *y, int64_t rows,
                                  int64_t d, double sums[3], ax_stats_timing *timing);
    ax_status (*stats_tensor_mean)(int index, const float *fx, const float *fy, const float *fz,
                                   int64_t n, int64_t d, float *out, ax_stats_timing *timing);
    /* ---- entries above are valid for version 3 and later ---- */
#if AX_BACKEND_HEADERS_AS_OF >= 4
    /* Called once by the loader, before any other entry: the host's
     * services. Every plugin's is ax_plugin_host_init (below). */
    void (*init)(const ax_backend_host *host);
    /* ---- entries above are valid for version 4 and later ---- */
#endif
#if AX_BACKEND_HEADERS_AS_OF >= 6
    /* Structured facts about device `index` into *out, which the loader
     * zeroes and whose size it passes (its sizeof(ax_device_properties)):
     * the plugin writes no further than `size` bytes, so that the struct
     * can grow at its tail (fill a local one and copy the first `size`
     * bytes). The loader sets out->device and, where the plugin leaves it
     * empty, the description from device_info. AX_STATUS_UNSUPPORTED when
     * there is no such device. NULL: only the description is known. */
    ax_status (*device_properties)(int index, ax_device_properties *out, size_t size);
    /* An extension by name (ggml's get_proc_address): the function, to be
     * cast to the type that goes with its name (above), or NULL where the
     * plugin has none. NULL: no extensions. */
    ax_backend_proc (*get_proc_address)(const char *name);
    /* The runtime the plugin was built against, one line (the GPU
     * toolkit's name and version), or NULL. */
    const char *runtime;
    /* ---- entries above are valid for version 6 and later ---- */
#endif
} ax_backend_plugin;

/* Whether plugin was built with headers of version `version` or later, so
 * that the entries of that version are in its table (NULL or not). */
static inline bool ax_backend_plugin_has(const ax_backend_plugin *plugin, int version)
{
    return plugin->abi >= version;
}

/* Defined in every plugin by src/backend/plugin_host/host_calls.c (never in
 * libaxon): keeps `host` for the ax_fail, ax_fail_context and
 * ax_backend_cpu_create it defines there. */
void ax_plugin_host_init(const ax_backend_host *host);

/* The plugin `name` (letters, digits and '_'), opened once per process (any
 * thread); AX_STATUS_UNSUPPORTED with a message saying why when this build
 * has no such backend or its file cannot be found or used. */
ax_status ax_backend_plugin_get(const char *name, const ax_backend_plugin **out);

/* The plugins found in the plugin folders (libaxon_<name>.so), in the
 * order of their names; found by scanning once per process, opening none.
 * The name is static; NULL out of range. */
int ax_backend_found_count(void);
const char *ax_backend_found_name(int index);

/* The backends of axon's sources, built here or not, separated by spaces
 * (static). */
const char *ax_backend_source_names(void);

/* Whether ax_backend_plugin_get(name) fails because no file of that
 * plugin was found (this build has no such backend), rather than because
 * one was found and could not be used. */
bool ax_backend_plugin_absent(const char *name);

/* Extension `name` of a plugin (AX_BACKEND_EXTENSION_*), or NULL where it
 * has none: through get_proc_address from version 6, from the fixed
 * statistics entries before. */
ax_backend_proc ax_backend_plugin_extension(const ax_backend_plugin *plugin, const char *name);

/* A backend on device `index` of backend `name`: "cpu" (index 0 or -1) or
 * a plugin's. */
ax_status ax_backend_create_on(const char *name, int index, ax_precision precision,
                               ax_backend **out);

/* Devices of backend `name`: 1 for "cpu", 0 when the plugin is missing. */
int ax_backend_device_count(const char *name);

/* The activation statistics (entropy and mutual information, tensor mean)
 * on device `index` of plugin `name` (its extensions of those names),
 * inputs and outputs in host memory, arguments
 * already checked by src/stats/device.c. entropy_mi gets sums[0] = sum over
 * rows of sum_i P_i^2, sums[1] = sum over rows of (sum P_i^2)(sum Q_j^2) and
 * sums[2] = the number of rows holding NaN or Inf; tensor_mean writes the
 * (d, d, d) mean into out. AX_STATUS_UNSUPPORTED without the plugin, the
 * device, or statistics in the plugin. timing may be NULL. */
ax_status ax_backend_stats_entropy_mi(const char *name, int index, const float *x,
                                      const float *y, int64_t rows, int64_t d, double sums[3],
                                      ax_stats_timing *timing);
ax_status ax_backend_stats_tensor_mean(const char *name, int index, const float *fx,
                                       const float *fy, const float *fz, int64_t n, int64_t d,
                                       float *out, ax_stats_timing *timing);

#endif
