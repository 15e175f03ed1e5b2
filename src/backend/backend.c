/* backend.c: the loader. Picks the backend a network computes on, the CPU
 * or a device of a backend plugin (libaxon_<name>.so, plugin.h), finds the
 * plugins by scanning the plugin folders, opens each once, and checks and
 * pads the tables of older plugins. It knows no backend by name but "cpu":
 * a plugin is found by its file name and used through the one table it
 * exports. The public questions about devices are devices.c's. */
#include "backend/plugin.h"

#include <ctype.h>
#include <dirent.h>
#include <stddef.h>
#include <dlfcn.h> /* dladdr: _GNU_SOURCE, set for every file by CMake */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/cpu_features.h"
#include "base/error.h"

/* The backends of axon's sources, built here or not (CMake: the folders
 * of src/backend/ with a backend.cmake), separated by spaces. */
#ifndef AXON_SOURCE_BACKENDS
#define AXON_SOURCE_BACKENDS ""
#endif
#ifndef AXON_PLUGIN_BUILD_DIR
#define AXON_PLUGIN_BUILD_DIR ""
#endif
#ifndef AXON_PLUGIN_INSTALL_DIR
#define AXON_PLUGIN_INSTALL_DIR ""
#endif

enum { MAX_PLUGINS = 8, NAME_CAPACITY = 32, FAILURE_CAPACITY = 768, PATH_CAPACITY = 4096 + 64 };

/* The size of the oldest table a plugin may have (version 3's): up to its
 * last entry. */
#define OPS_SIZE_OLDEST (offsetof(ax_backend_ops, destroy) + sizeof(void (*)(void)))

/* Each plugin is opened once, successfully or not, and kept until exit. */
static struct {
    pthread_mutex_t lock;
    int count;
    struct {
        char name[NAME_CAPACITY];
        const ax_backend_plugin *table; /* NULL when it could not be loaded */
        bool absent;                    /* no file of it was found */
        char failure[FAILURE_CAPACITY];
    } entries[MAX_PLUGINS];
} plugins = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The plugins found in the plugin folders, once per process: names in
 * order, each with the first folder's file. */
static struct {
    pthread_once_t once;
    int count;
    char names[MAX_PLUGINS][NAME_CAPACITY];
    char paths[MAX_PLUGINS][PATH_CAPACITY];
    char folders[3][PATH_CAPACITY]; /* the folders scanned, for messages */
    int folder_count;
} found = {.once = PTHREAD_ONCE_INIT};

/* "cuda" -> "CUDA", for messages and the override variable's name. */
static void upper(const char *name, char *out, size_t capacity)
{
    size_t i = 0;
    for (; name[i] && i + 1 < capacity; i++)
        out[i] = (char)toupper((unsigned char)name[i]);
    out[i] = '\0';
}

static bool valid_name(const char *name, size_t length)
{
    bool valid = length > 0 && length < NAME_CAPACITY;
    for (size_t i = 0; valid && i < length; i++)
        valid = isalnum((unsigned char)name[i]) || name[i] == '_';
    return valid;
}

/* The folder of the object (program or libaxon.so) this code is in. */
static bool own_folder(char *folder, size_t capacity)
{
    Dl_info info;
    if (!dladdr((const void *)&plugins, &info) || !info.dli_fname || !strchr(info.dli_fname, '/'))
        return false;
    snprintf(folder, capacity, "%s", info.dli_fname);
    *strrchr(folder, '/') = '\0';
    return true;
}

static void scan_folder(const char *folder)
{
    DIR *dir = opendir(folder);
    if (!dir)
        return;
    static const char prefix[] = "libaxon_", suffix[] = ".so";
    const size_t prefix_length = sizeof prefix - 1, suffix_length = sizeof suffix - 1;
    for (struct dirent *entry; (entry = readdir(dir)) != NULL;) {
        const char *file = entry->d_name;
        const size_t length = strlen(file);
        if (length <= prefix_length + suffix_length || strncmp(file, prefix, prefix_length) != 0 ||
            strcmp(file + length - suffix_length, suffix) != 0)
            continue;
        const char *name = file + prefix_length;
        const size_t name_length = length - prefix_length - suffix_length;
        if (!valid_name(name, name_length))
            continue;
        bool known = false;
        for (int i = 0; i < found.count && !known; i++)
            known = strlen(found.names[i]) == name_length &&
                    strncmp(found.names[i], name, name_length) == 0;
        if (known || found.count == MAX_PLUGINS)
            continue;
        /* Kept in the order of their names, so that listings are stable. */
        char this_name[NAME_CAPACITY];
        snprintf(this_name, sizeof this_name, "%.*s", (int)name_length, name);
        int at = found.count++;
        while (at > 0 && strcmp(found.names[at - 1], this_name) > 0) {
            memcpy(found.names[at], found.names[at - 1], sizeof found.names[0]);
            memcpy(found.paths[at], found.paths[at - 1], sizeof found.paths[0]);
            at--;
        }
        snprintf(found.names[at], NAME_CAPACITY, "%s", this_name);
        snprintf(found.paths[at], PATH_CAPACITY, "%.3900s/%.255s", folder, file); /* fits PATH_CAPACITY */
    }
    closedir(dir);
}

/* The plugin folders, in the order of plugin.h: the loader's own, the
 * build folder, the install folder. */
static void scan_plugins(void)
{
    char here[4096];
    const char *folders[3] = {own_folder(here, sizeof here) ? here : "", AXON_PLUGIN_BUILD_DIR,
                              AXON_PLUGIN_INSTALL_DIR};
    for (int i = 0; i < 3; i++) {
        bool seen = !folders[i][0];
        for (int j = 0; j < found.folder_count && !seen; j++)
            seen = strcmp(found.folders[j], folders[i]) == 0;
        if (seen)
            continue;
        snprintf(found.folders[found.folder_count++], PATH_CAPACITY, "%s", folders[i]);
        scan_folder(folders[i]);
    }
}

int ax_backend_found_count(void)
{
    pthread_once(&found.once, scan_plugins);
    return found.count;
}

const char *ax_backend_found_name(int index)
{
    return index >= 0 && index < ax_backend_found_count() ? found.names[index] : NULL;
}

const char *ax_backend_source_names(void) { return AXON_SOURCE_BACKENDS; }

bool ax_backend_known(const char *name)
{
    if (!name)
        return false;
    if (strcmp(name, "cpu") == 0)
        return true;
    for (int i = 0; i < ax_backend_found_count(); i++)
        if (strcmp(found.names[i], name) == 0)
            return true;
    const char *list = AXON_SOURCE_BACKENDS;
    const size_t length = strlen(name);
    for (const char *p = list; length > 0 && (p = strstr(p, name)) != NULL; p += length)
        if ((p == list || p[-1] == ' ') && (p[length] == '\0' || p[length] == ' '))
            return true;
    return false;
}

/* The host's side of ax_backend_host: messages already formatted by the
 * plugin go into this copy of libaxon's per-thread message. */
static ax_status host_fail(ax_status status, const char *message)
{
    return ax_fail(status, "%s", message);
}

static ax_status host_fail_context(ax_status status, const char *context)
{
    return ax_fail_context(status, "%s", context);
}

static const ax_backend_host host_services = {
    .size = sizeof(ax_backend_host),
    .fail = host_fail,
    .fail_context = host_fail_context,
    .cpu_create = ax_backend_cpu_create,
};

/* Opens libaxon_<name>.so and checks its table; the failure names why
 * (paths cut at 600 characters there). */
static const ax_backend_plugin *open_plugin(const char *name, char *failure, size_t capacity,
                                            bool *absent)
{
    char upper_name[NAME_CAPACITY], variable[NAME_CAPACITY + 16], file[NAME_CAPACITY + 16];
    upper(name, upper_name, sizeof upper_name);
    snprintf(variable, sizeof variable, "AXON_%s_PLUGIN", upper_name);
    snprintf(file, sizeof file, "libaxon_%s.so", name);
    const char *override = getenv(variable);
    const char *opened = override && override[0] ? override : NULL;
    for (int i = 0; i < ax_backend_found_count() && !opened; i++)
        if (strcmp(found.names[i], name) == 0)
            opened = found.paths[i];
    if (!opened) {
        char folders[3 * 200] = "";
        for (int i = 0; i < found.folder_count; i++) {
            const size_t used = strlen(folders);
            snprintf(folders + used, sizeof folders - used, "%s%.190s", i ? ", " : "",
                     found.folders[i]);
        }
        *absent = true;
        snprintf(failure, capacity, "this build has no %s backend (%s is in none of its plugin "
                 "folders: %s); build its plugin (src/backend/%s, -DAXON_%s=ON where its compiler "
                 "and libraries are installed), or name one in $%s",
                 upper_name, file, folders[0] ? folders : "none", name, upper_name, variable);
        return NULL;
    }
    if (strchr(opened, '/') && access(opened, F_OK) != 0) {
        snprintf(failure, capacity, "the %s backend could not be loaded: %.600s: no such file",
                 upper_name, opened);
        return NULL;
    }
    void *handle = dlopen(opened, RTLD_NOW | RTLD_LOCAL);
    if (!handle)
        snprintf(failure, capacity, "the %s backend could not be loaded: %s", upper_name, dlerror());
    if (!handle)
        return NULL;
    char symbol[NAME_CAPACITY + 32];
    snprintf(symbol, sizeof symbol, "ax_backend_plugin_%s", name);
    const ax_backend_plugin *table = (const ax_backend_plugin *)dlsym(handle, symbol);
    if (!table) {
        snprintf(failure, capacity, "the %s backend could not be loaded: %.500s exports no %s "
                 "(a plugin built before this axon: rebuild it)", upper_name, opened, symbol);
        return NULL;
    }
    /* Older plugins are accepted back to the oldest version whose tables
     * grow at their tails (plugin.h); newer ones are used through the
     * entries this version knows. */
    if (table->abi < AX_BACKEND_PLUGIN_ABI_OLDEST || table->ops_size < OPS_SIZE_OLDEST ||
        table->ops_size % sizeof(void *) != 0 ||
        (table->abi == AX_BACKEND_PLUGIN_ABI && table->ops_size != sizeof(ax_backend_ops))) {
        snprintf(failure, capacity, "the %s backend could not be loaded: %.480s was built for plugin "
                 "interface %d (this axon has %d and takes plugins of %d and later) with a table of "
                 "%zu bytes: rebuild it",
                 upper_name, opened, table->abi, AX_BACKEND_PLUGIN_ABI,
                 AX_BACKEND_PLUGIN_ABI_OLDEST, table->ops_size);
        return NULL;
    }
    if (!table->name || strcmp(table->name, name) != 0 || !table->device_count ||
        !table->device_info || !table->create || !table->init) {
        snprintf(failure, capacity, "the %s backend could not be loaded: %.480s names itself "
                 "'%.40s' or lacks its entry points (device_count, device_info, create, init): rebuild it",
                 upper_name, opened, table->name ? table->name : "(null)");
        return NULL;
    }
    table->init(&host_services);
    return table;
}

/* Tables of plugins older than these headers, copied whole with the later
 * entries NULL (backend.h), one per table a plugin hands out, kept until
 * exit as the plugins are. */
static struct {
    pthread_mutex_t lock;
    struct padded_ops {
        const ax_backend_ops *source;
        ax_backend_ops table;
        struct padded_ops *next;
    } *first;
} padded = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const ax_backend_ops *pad_ops(const ax_backend_ops *source, size_t size)
{
    pthread_mutex_lock(&padded.lock);
    struct padded_ops *p = padded.first;
    while (p && p->source != source)
        p = p->next;
    if (!p && (p = calloc(1, sizeof *p)) != NULL) {
        p->source = source;
        memcpy(&p->table, source, size);
        p->next = padded.first;
        padded.first = p;
    }
    pthread_mutex_unlock(&padded.lock);
    return p ? &p->table : NULL;
}

ax_status ax_backend_plugin_get(const char *name, const ax_backend_plugin **out)
{
    *out = NULL;
    if (!name || !valid_name(name, strlen(name)))
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "'%s' is not a backend name (letters, digits, _)",
                       name ? name : "(null)");
    pthread_mutex_lock(&plugins.lock);
    int at = -1;
    for (int i = 0; i < plugins.count && at < 0; i++)
        if (strcmp(plugins.entries[i].name, name) == 0)
            at = i;
    if (at < 0 && plugins.count < MAX_PLUGINS) {
        at = plugins.count++;
        snprintf(plugins.entries[at].name, NAME_CAPACITY, "%s", name);
        plugins.entries[at].table = open_plugin(name, plugins.entries[at].failure,
                                                   FAILURE_CAPACITY, &plugins.entries[at].absent);
    }
    const ax_backend_plugin *table = at >= 0 ? plugins.entries[at].table : NULL;
    char failure[FAILURE_CAPACITY];
    snprintf(failure, sizeof failure, "%s",
             at >= 0 ? plugins.entries[at].failure : "too many backend plugins asked for");
    pthread_mutex_unlock(&plugins.lock);
    if (!table)
        return ax_fail(AX_STATUS_UNSUPPORTED, "%s", failure);
    *out = table;
    return AX_STATUS_OK;
}

bool ax_backend_plugin_absent(const char *name)
{
    bool absent = false;
    pthread_mutex_lock(&plugins.lock);
    for (int i = 0; i < plugins.count && i < MAX_PLUGINS; i++)
        if (strcmp(plugins.entries[i].name, name) == 0)
            absent = plugins.entries[i].absent;
    pthread_mutex_unlock(&plugins.lock);
    return absent;
}

ax_backend_proc ax_backend_plugin_extension(const ax_backend_plugin *plugin, const char *name)
{
    if (ax_backend_plugin_has(plugin, 6))
        return plugin->get_proc_address ? plugin->get_proc_address(name) : NULL;
    /* Plugins of versions 3 to 5 had the statistics as fixed entries. */
    if (strcmp(name, AX_BACKEND_EXTENSION_STATS_ENTROPY_MI) == 0)
        return (ax_backend_proc)plugin->stats_entropy_mi;
    if (strcmp(name, AX_BACKEND_EXTENSION_STATS_TENSOR_MEAN) == 0)
        return (ax_backend_proc)plugin->stats_tensor_mean;
    return NULL;
}

/* A device runs bf16 only when its properties say it has bf16 GEMMs: a
 * plugin that does not would take the precision for float32 silently. */
static ax_status require_bf16(const ax_backend_plugin *plugin, const char *name, int index)
{
    ax_device_properties properties;
    memset(&properties, 0, sizeof properties);
    if (ax_backend_plugin_has(plugin, 6) && plugin->device_properties)
        AX_TRY(plugin->device_properties(index, &properties, sizeof properties));
    if (properties.capabilities & AX_DEVICE_CAPABILITY_BF16)
        return AX_STATUS_OK;
    char upper_name[NAME_CAPACITY];
    upper(name, upper_name, sizeof upper_name);
    return ax_fail(AX_STATUS_UNSUPPORTED,
                   "bf16 needs bfloat16 GEMMs, which %s device %d does not have (the CPU and CUDA "
                   "devices do): use f32 there, or --device cpu",
                   upper_name, index);
}

ax_status ax_backend_create_on(const char *name, int index, ax_precision precision,
                               ax_backend **out)
{
    *out = NULL;
    if (name && strcmp(name, "cpu") == 0) {
        if (index > 0)
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "there is one CPU device, not %d", index);
        char why[200];
        if (!ax_cpu_kernels_setting_valid(why, sizeof why))
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "%s", why);
        *out = ax_backend_cpu_create(precision);
        return *out ? AX_STATUS_OK
                    : ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory creating the CPU backend");
    }
    const ax_backend_plugin *plugin;
    AX_TRY(ax_backend_plugin_get(name, &plugin));
    if (precision == AX_PRECISION_BF16)
        AX_TRY(require_bf16(plugin, name, index));
    AX_TRY(plugin->create(precision, index, out));
    if (plugin->ops_size < sizeof(ax_backend_ops)) { /* an older plugin: its later entries NULL */
        const ax_backend_ops *table = pad_ops((*out)->ops, plugin->ops_size);
        if (!table) {
            (*out)->ops->destroy(*out);
            *out = NULL;
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory creating a %s backend", name);
        }
        (*out)->ops = table;
    }
    return AX_STATUS_OK;
}

/* The optional entries of each feature, by name. */
#define ENTRY(name) {#name, offsetof(ax_backend_ops, name)}
static const struct {
    const char *name;
    size_t offset;
} feature_entries[AX_BACKEND_FEATURE_COUNT][6] = {
    [AX_BACKEND_FEATURE_IMAGES] = {ENTRY(im2col), ENTRY(col2im), ENTRY(pool_forward),
                                   ENTRY(pool_backward), ENTRY(transpose)},
    [AX_BACKEND_FEATURE_DEVICE_DATA] = {ENTRY(write_bytes), ENTRY(gather_rows_device),
                                        ENTRY(gather_labels_device)},
    [AX_BACKEND_FEATURE_DEVICE_LOSS] = {ENTRY(loss_defer), ENTRY(loss_accumulate),
                                        ENTRY(loss_reset), ENTRY(loss_read)},
    [AX_BACKEND_FEATURE_STRATEGIES] = {ENTRY(l1_penalty), ENTRY(clamp)},
};
#undef ENTRY

bool ax_backend_supports(const ax_backend_ops *ops, ax_backend_feature feature, char *missing,
                         size_t capacity)
{
    if (missing && capacity > 0)
        missing[0] = '\0';
    if ((int)feature < 0 || feature >= AX_BACKEND_FEATURE_COUNT)
        return false;
    const char *lacking[6];
    int count = 0;
    for (int i = 0; i < 6 && feature_entries[feature][i].name; i++) {
        void (*entry)(void);
        memcpy(&entry, (const char *)ops + feature_entries[feature][i].offset, sizeof entry);
        if (!entry)
            lacking[count++] = feature_entries[feature][i].name;
    }
    for (int i = 0; missing && capacity > 0 && i < count; i++) {
        const size_t used = strlen(missing);
        snprintf(missing + used, capacity - used, "%s%s",
                 i == 0 ? "" : i + 1 == count ? " and " : ", ", lacking[i]);
    }
    return count == 0;
}

ax_status ax_backend_require(const ax_backend_ops *ops, ax_backend_feature feature,
                             const char *purpose)
{
    char missing[160];
    if (ax_backend_supports(ops, feature, missing, sizeof missing))
        return AX_STATUS_OK;
    return ax_fail(AX_STATUS_UNSUPPORTED, "%s: the %s backend's table has no %s (a plugin built "
                   "before them, or one that has not written them yet)",
                   purpose, ops->name ? ops->name : "(unnamed)", missing);
}

int ax_backend_device_count(const char *name)
{
    if (name && strcmp(name, "cpu") == 0)
        return 1;
    const ax_backend_plugin *plugin;
    return ax_backend_plugin_get(name, &plugin) == AX_STATUS_OK ? plugin->device_count() : 0;
}

ax_status ax_backend_alloc(ax_backend *backend, size_t bytes, const char *what, void **memory)
{
    const ax_backend_ops *ops = backend->ops;
    if (ops->alloc_status) {
        ax_status status = ops->alloc_status(backend, bytes, memory);
        return status == AX_STATUS_OK ? status : ax_fail_context(status, "%s", what);
    }
    *memory = ops->alloc(backend, bytes);
    if (*memory)
        return AX_STATUS_OK;
    return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of %s memory for %zu bytes", what,
                   ops->name ? ops->name : "backend", bytes);
}

ax_status ax_backend_synchronize(ax_backend *backend)
{
    const ax_backend_ops *ops = backend->ops;
    if (ops->synchronize_status)
        return ops->synchronize_status(backend);
    ops->synchronize(backend);
    return ops->status(backend);
}

void ax_backend_reduce(ax_backend *backend, int n, ax_reduction *reductions)
{
    const ax_backend_ops *ops = backend->ops;
    /* AXON_BATCHED_READS=off: one read per reduction, to compare. */
    const char *setting = getenv("AXON_BATCHED_READS");
    if (ops->reduce && !(setting && strcmp(setting, "off") == 0)) {
        for (int first = 0; first < n; first += AX_BACKEND_REDUCE_MAX) {
            const int batch = n - first < AX_BACKEND_REDUCE_MAX ? n - first : AX_BACKEND_REDUCE_MAX;
            ops->reduce(backend, batch, reductions + first);
        }
        return;
    }
    for (int i = 0; i < n; i++) {
        ax_reduction *r = &reductions[i];
        r->value = r->kind == AX_REDUCTION_DOT ? ops->dot(backend, r->count, r->x, r->y)
                   : ops->all_finite(backend, r->count, r->x) ? 0.0
                                                               : 1.0;
    }
}
