/* devices.c: the public questions about backends and devices (axon.h's
 * "devices"): parsing and naming devices, the list of backends the loader
 * found, each device's properties (ggml's device interface: kind, name,
 * memory, compute units, peak rates, capabilities) and description, and
 * the statistics extensions of plugins. Only "cpu" is named here; every
 * other backend is reached through the loader (backend.c) by its name. */
#include "backend/plugin.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

enum { NAME_CAPACITY = 32 };

/* "cuda" -> "CUDA", for messages. */
static void upper(const char *name, char *out, size_t capacity)
{
    size_t i = 0;
    for (; name[i] && i + 1 < capacity; i++)
        out[i] = (char)toupper((unsigned char)name[i]);
    out[i] = '\0';
}

ax_device ax_device_from_number(int number)
{
    return number < 0 ? ax_device_cpu() : (ax_device){.backend = "cuda", .index = number};
}

const char *ax_backend_source_list(void) { return ax_backend_source_names(); }

int ax_backend_count(void) { return 1 + ax_backend_found_count(); }

const char *ax_backend_name(int index)
{
    return index == 0 ? "cpu" : ax_backend_found_name(index - 1);
}

const char *ax_backend_runtime(const char *backend)
{
    if (backend && strcmp(backend, "cpu") == 0)
        return "";
    const ax_backend_plugin *plugin;
    if (ax_backend_plugin_get(backend, &plugin) != AX_STATUS_OK)
        return NULL;
    return ax_backend_plugin_has(plugin, 6) && plugin->runtime ? plugin->runtime : "";
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
    if (status != AX_STATUS_OK && ax_backend_plugin_absent(name)) {
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

ax_status ax_device_properties_get(ax_device device, ax_device_properties *out)
{
    if (!out)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "ax_device_properties_get needs somewhere to write");
    memset(out, 0, sizeof *out);
    const char *name;
    AX_TRY(device_name(&device, &name));
    if (ax_device_is_cpu(device)) {
        ax_backend_cpu_properties(out);
        out->device = ax_device_cpu();
        return AX_STATUS_OK;
    }
    const ax_backend_plugin *plugin;
    AX_TRY(ax_backend_plugin_get(name, &plugin));
    if (ax_backend_plugin_has(plugin, 6) && plugin->device_properties) {
        AX_TRY(plugin->device_properties(device.index, out, sizeof *out));
    } else if (device.index >= plugin->device_count()) {
        /* An older plugin: its device_info says why there is no such device. */
        char text[8];
        AX_TRY(plugin->device_info(device.index, text, sizeof text));
    }
    out->device = device;
    if (!out->description[0])
        AX_TRY(plugin->device_info(device.index, out->description, sizeof out->description));
    if (ax_backend_plugin_extension(plugin, AX_BACKEND_EXTENSION_STATS_ENTROPY_MI) &&
        ax_backend_plugin_extension(plugin, AX_BACKEND_EXTENSION_STATS_TENSOR_MEAN))
        out->capabilities |= AX_DEVICE_CAPABILITY_STATS;
    return AX_STATUS_OK;
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
    if (!ax_backend_plugin_extension(*plugin, AX_BACKEND_EXTENSION_STATS_ENTROPY_MI) ||
        !ax_backend_plugin_extension(*plugin, AX_BACKEND_EXTENSION_STATS_TENSOR_MEAN))
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
    ax_backend_stats_entropy_mi_fn entropy_mi = (ax_backend_stats_entropy_mi_fn)
        ax_backend_plugin_extension(plugin, AX_BACKEND_EXTENSION_STATS_ENTROPY_MI);
    return entropy_mi(index, x, y, rows, d, sums, timing);
}

ax_status ax_backend_stats_tensor_mean(const char *name, int index, const float *fx,
                                       const float *fy, const float *fz, int64_t n, int64_t d,
                                       float *out, ax_stats_timing *timing)
{
    const ax_backend_plugin *plugin;
    AX_TRY(stats_plugin("tensor-mean", name, index, &plugin));
    ax_backend_stats_tensor_mean_fn tensor_mean = (ax_backend_stats_tensor_mean_fn)
        ax_backend_plugin_extension(plugin, AX_BACKEND_EXTENSION_STATS_TENSOR_MEAN);
    return tensor_mean(index, fx, fy, fz, n, d, out, timing);
}
