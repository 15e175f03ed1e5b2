/* backend.c: picks the backend a network computes on, the CPU or a device
 * of a backend plugin (libaxon_<name>.so, plugin.h), and answers the public
 * questions about devices. The loader knows no backend by name: a plugin
 * is found by its file name and used through the one table it exports.
 * Devices are {backend name, index} (ax_device); only
 * ax_cuda_device_count/info name "cuda". */
#include "backend/plugin.h"

#include <ctype.h>
#include <stddef.h>
#include <dlfcn.h> /* dladdr: _GNU_SOURCE, set for every file by CMake */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/bf16_gemm.h"
#include "base/error.h"

/* The plugins this build made (CMake's AXON_BACKEND_PLUGINS, e.g. "cuda"). */
#ifndef AXON_BACKEND_PLUGINS
#define AXON_BACKEND_PLUGINS ""
#endif
#ifndef AXON_PLUGIN_BUILD_DIR
#define AXON_PLUGIN_BUILD_DIR ""
#endif
#ifndef AXON_PLUGIN_INSTALL_DIR
#define AXON_PLUGIN_INSTALL_DIR ""
#endif

bool ax_bf16_native(void) { return ax_bf16_cpu_native(); }

ax_bf16_support ax_bf16_support_get(void)
{
    ax_bf16_choice choice = ax_bf16_cpu_choice();
    return (ax_bf16_support){choice.instructions, choice.native, choice.speed_ratio, choice.reason};
}

enum { MAX_PLUGINS = 8, NAME_CAPACITY = 32, FAILURE_CAPACITY = 768 };

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
        char failure[FAILURE_CAPACITY];
    } entries[MAX_PLUGINS];
} plugins = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* "cuda" -> "CUDA", for messages and the override variable's name. */
static void upper(const char *name, char *out, size_t capacity)
{
    size_t i = 0;
    for (; name[i] && i + 1 < capacity; i++)
        out[i] = (char)toupper((unsigned char)name[i]);
    out[i] = '\0';
}

static bool built_here(const char *name)
{
    const char *list = AXON_BACKEND_PLUGINS;
    const size_t length = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += length)
        if ((p == list || p[-1] == ' ') && (p[length] == '\0' || p[length] == ' '))
            return true;
    return false;
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
static const ax_backend_plugin *open_plugin(const char *name, char *failure, size_t capacity)
{
    char upper_name[NAME_CAPACITY], variable[NAME_CAPACITY + 16], file[NAME_CAPACITY + 16];
    upper(name, upper_name, sizeof upper_name);
    snprintf(variable, sizeof variable, "AXON_%s_PLUGIN", upper_name);
    snprintf(file, sizeof file, "libaxon_%s.so", name);
    const char *override = getenv(variable);
    if (!built_here(name) && !(override && override[0])) {
        snprintf(failure, capacity, "this build has no %s backend (%s); rebuild with -DAXON_%s=ON "
                 "where its compiler is installed, or name a plugin in $%s", upper_name, file,
                 upper_name, variable);
        return NULL;
    }
    char here[4096] = "", candidates[5][4096 + 64];
    int count = 0;
    if (override && override[0])
        snprintf(candidates[count++], sizeof candidates[0], "%s", override);
    else {
        if (own_folder(here, sizeof here))
            snprintf(candidates[count++], sizeof candidates[0], "%s/%s", here, file);
        if (AXON_PLUGIN_BUILD_DIR[0])
            snprintf(candidates[count++], sizeof candidates[0], "%s/%s", AXON_PLUGIN_BUILD_DIR, file);
        if (AXON_PLUGIN_INSTALL_DIR[0])
            snprintf(candidates[count++], sizeof candidates[0], "%s/%s", AXON_PLUGIN_INSTALL_DIR, file);
        snprintf(candidates[count++], sizeof candidates[0], "%s", file);
    }
    /* The first candidate that exists and fails to load (a missing
     * dependency, a wrong architecture) is the failure worth reporting. */
    void *handle = NULL;
    const char *opened = NULL;
    bool kept = false;
    for (int i = 0; i < count && !handle; i++) {
        opened = candidates[i];
        if (strchr(opened, '/') && access(opened, F_OK) != 0) {
            if (!kept)
                snprintf(failure, capacity, "the %s backend could not be loaded: %.600s: no such file",
                         upper_name, opened);
            continue;
        }
        handle = dlopen(opened, RTLD_NOW | RTLD_LOCAL);
        if (!handle && !kept) {
            snprintf(failure, capacity, "the %s backend could not be loaded: %s", upper_name,
                     dlerror());
            kept = true;
        }
    }
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
    size_t length = name ? strlen(name) : 0;
    bool valid = length > 0 && length < NAME_CAPACITY;
    for (size_t i = 0; valid && i < length; i++)
        valid = isalnum((unsigned char)name[i]) || name[i] == '_';
    if (!valid)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "'%s' is not a backend name (letters, digits, _)",
                       name ? name : "(null)");
    pthread_mutex_lock(&plugins.lock);
    int found = -1;
    for (int i = 0; i < plugins.count && found < 0; i++)
        if (strcmp(plugins.entries[i].name, name) == 0)
            found = i;
    if (found < 0 && plugins.count < MAX_PLUGINS) {
        found = plugins.count++;
        snprintf(plugins.entries[found].name, NAME_CAPACITY, "%s", name);
        plugins.entries[found].table = open_plugin(name, plugins.entries[found].failure,
                                                   FAILURE_CAPACITY);
    }
    const ax_backend_plugin *table = found >= 0 ? plugins.entries[found].table : NULL;
    char failure[FAILURE_CAPACITY];
    snprintf(failure, sizeof failure, "%s",
             found >= 0 ? plugins.entries[found].failure : "too many backend plugins asked for");
    pthread_mutex_unlock(&plugins.lock);
    if (!table)
        return ax_fail(AX_STATUS_UNSUPPORTED, "%s", failure);
    *out = table;
    return AX_STATUS_OK;
}

ax_status ax_backend_create_on(const char *name, int index, ax_precision precision,
                               ax_backend **out)
{
    *out = NULL;
    if (precision == AX_PRECISION_BF16 && !(name && strcmp(name, "cpu") == 0)) {
        char upper_name[NAME_CAPACITY];
        upper(name ? name : "(null)", upper_name, sizeof upper_name);
        return ax_fail(AX_STATUS_UNSUPPORTED,
                       "bf16 runs on the CPU only: use f32 on %s device %d, or --device cpu",
                       upper_name, index);
    }
    if (name && strcmp(name, "cpu") == 0) {
        if (index > 0)
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "there is one CPU device, not %d", index);
        *out = ax_backend_cpu_create(precision);
        return *out ? AX_STATUS_OK
                    : ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory creating the CPU backend");
    }
    const ax_backend_plugin *plugin;
    AX_TRY(ax_backend_plugin_get(name, &plugin));
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

ax_device ax_device_cpu(void) { return (ax_device){.backend = "cpu", .index = 0}; }

bool ax_device_is_cpu(ax_device device)
{
    return device.backend[0] == '\0' || strcmp(device.backend, "cpu") == 0;
}

ax_status ax_device_parse(const char *text, ax_device *out)
{
    *out = ax_device_cpu();
    const char *colon = text ? strchr(text, ':') : NULL;
    const size_t length = text ? (colon ? (size_t)(colon - text) : strlen(text)) : 0;
    bool valid = length > 0 && length < AX_DEVICE_NAME_CAPACITY;
    for (size_t i = 0; valid && i < length; i++)
        valid = isalnum((unsigned char)text[i]) || text[i] == '_';
    long index = 0;
    if (valid && colon) {
        char *end = NULL;
        valid = colon[1] >= '0' && colon[1] <= '9';
        index = valid ? strtol(colon + 1, &end, 10) : 0;
        valid = valid && *end == '\0' && index <= 1023;
    }
    if (!valid)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "'%s' is not a device: expected cpu, NAME or "
                       "NAME:N (a backend's name, e.g. cuda, and a device number)",
                       text ? text : "(null)");
    ax_device device = {.index = (int)index};
    memcpy(device.backend, text, length);
    if (ax_device_is_cpu(device) && index != 0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "'%s' is not a device: there is one CPU, cpu", text);
    *out = device;
    return AX_STATUS_OK;
}

void ax_device_format(ax_device device, char *text, size_t capacity)
{
    if (ax_device_is_cpu(device))
        snprintf(text, capacity, "cpu");
    else
        snprintf(text, capacity, "%.*s:%d", AX_DEVICE_NAME_CAPACITY, device.backend, device.index);
}

/* A device's backend name, checked: set by hand, it may lack its '\0'.
 * *name points into *device (or is "cpu"). */
static ax_status device_name(const ax_device *device, const char **name)
{
    *name = "cpu";
    if (ax_device_is_cpu(*device))
        return device->index == 0 ? AX_STATUS_OK
                                  : ax_fail(AX_STATUS_BAD_ARGUMENT, "CPU device %d is not a device: "
                                            "there is one CPU (index 0)", device->index);
    if (strnlen(device->backend, AX_DEVICE_NAME_CAPACITY) == AX_DEVICE_NAME_CAPACITY)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "a device's backend name has no end within %d "
                       "characters", AX_DEVICE_NAME_CAPACITY);
    if (device->index < 0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "device %s:%d is not a device: device numbers "
                       "start at 0", device->backend, device->index);
    *name = device->backend;
    return AX_STATUS_OK;
}

ax_status ax_backend_create(ax_precision precision, ax_device device, ax_backend **out)
{
    *out = NULL;
    const char *name;
    AX_TRY(device_name(&device, &name));
    ax_status status = ax_backend_create_on(name, device.index, precision, out);
    if (status != AX_STATUS_OK && strstr(ax_error_message(), "this build has no")) {
        char upper_name[NAME_CAPACITY];
        upper(name, upper_name, sizeof upper_name);
        return ax_fail_context(status, "%s device %d was asked for", upper_name, device.index);
    }
    return status;
}

int ax_device_count(const char *backend) { return ax_backend_device_count(backend); }

ax_status ax_device_info(ax_device device, char *text, size_t capacity)
{
    if (text && capacity > 0)
        text[0] = '\0';
    if (!text || capacity == 0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "ax_device_info needs a text buffer");
    const char *name;
    AX_TRY(device_name(&device, &name));
    if (ax_device_is_cpu(device)) {
        snprintf(text, capacity, "the CPU");
        return AX_STATUS_OK;
    }
    const ax_backend_plugin *plugin;
    AX_TRY(ax_backend_plugin_get(name, &plugin));
    return plugin->device_info(device.index, text, capacity);
}

int ax_cuda_device_count(void) { return ax_backend_device_count("cuda"); }

ax_status ax_cuda_device_info(int device, char *text, size_t capacity)
{
    return ax_device_info((ax_device){.backend = "cuda", .index = device}, text, capacity);
}

/* The statistics need the plugin and entries in it; a plugin without them
 * still trains. */
static ax_status stats_plugin(const char *statistic, const char *name, int index,
                              const ax_backend_plugin **plugin)
{
    ax_status status = ax_backend_plugin_get(name, plugin);
    char upper_name[NAME_CAPACITY];
    upper(name, upper_name, sizeof upper_name);
    if (status != AX_STATUS_OK) /* "entropy-mi on CUDA device 3: ..." */
        return ax_fail_context(status, "%s on %s device %d", statistic, upper_name, index);
    if (!(*plugin)->stats_entropy_mi || !(*plugin)->stats_tensor_mean)
        return ax_fail(AX_STATUS_UNSUPPORTED, "%s on %s device %d: libaxon_%s.so has no "
                       "statistics kernels", statistic, name, index, name);
    return AX_STATUS_OK;
}

ax_status ax_backend_stats_entropy_mi(const char *name, int index, const float *x,
                                      const float *y, int64_t rows, int64_t d, double sums[3],
                                      ax_stats_timing *timing)
{
    const ax_backend_plugin *plugin;
    AX_TRY(stats_plugin("entropy-mi", name, index, &plugin));
    return plugin->stats_entropy_mi(index, x, y, rows, d, sums, timing);
}

ax_status ax_backend_stats_tensor_mean(const char *name, int index, const float *fx,
                                       const float *fy, const float *fz, int64_t n, int64_t d,
                                       float *out, ax_stats_timing *timing)
{
    const ax_backend_plugin *plugin;
    AX_TRY(stats_plugin("tensor-mean", name, index, &plugin));
    return plugin->stats_tensor_mean(index, fx, fy, fz, n, d, out, timing);
}
