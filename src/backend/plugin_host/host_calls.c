/* host_calls.c: linked into every backend plugin, never into libaxon. The
 * library functions a plugin calls (ax_fail, ax_fail_context,
 * ax_backend_cpu_create), defined here over the table of host services
 * that the loader hands to ax_plugin_host_init (plugin.h says why a table
 * and not symbols of libaxon). Plugins are built with hidden visibility, so
 * these definitions are the plugin's own: its calls bind here even in a
 * program that exports libaxon's functions under the same names. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>

#include "backend/plugin.h"
#include "base/error.h"

/* Set once by the loader, under its lock, before the plugin's table is
 * handed to anyone: every later reader got the table after that. */
static const ax_backend_host *host;

enum { MESSAGE_CAPACITY = 1024 }; /* base/error.c's; longer text is cut */

void ax_plugin_host_init(const ax_backend_host *given) { host = given; }

ax_status ax_fail(ax_status status, const char *format, ...)
{
    char message[MESSAGE_CAPACITY];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    return host->fail(status, message);
}

ax_status ax_fail_context(ax_status status, const char *format, ...)
{
    char context[MESSAGE_CAPACITY / 2];
    va_list args;
    va_start(args, format);
    vsnprintf(context, sizeof context, format, args);
    va_end(args);
    return host->fail_context(status, context);
}

ax_backend *ax_backend_cpu_create(ax_precision precision) { return host->cpu_create(precision); }
