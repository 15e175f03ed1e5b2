/* error.c: per-thread last error message (like dlerror), so that library
 * calls can report to any caller without printing. */
#define _POSIX_C_SOURCE 200809L
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { AX_ERROR_CAPACITY = 1024 };
static _Thread_local char error_text[AX_ERROR_CAPACITY];

ax_status ax_fail(ax_status status, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(error_text, sizeof error_text, format, args);
    va_end(args);
    return status;
}

ax_status ax_fail_context(ax_status status, const char *format, ...)
{
    char prefix[512];
    char previous[AX_ERROR_CAPACITY];
    va_list args;
    va_start(args, format);
    vsnprintf(prefix, sizeof prefix, format, args);
    va_end(args);
    memcpy(previous, error_text, sizeof previous);
    /* Truncation is acceptable: the message stays a readable prefix. */
    size_t used = strlen(prefix);
    if (used > sizeof error_text - 3)
        used = sizeof error_text - 3;
    memcpy(error_text, prefix, used);
    memcpy(error_text + used, ": ", 2);
    size_t room = sizeof error_text - used - 3;
    size_t length = strnlen(previous, room);
    memcpy(error_text + used + 2, previous, length);
    error_text[used + 2 + length] = '\0';
    return status;
}

void ax_error_clear(void) { error_text[0] = '\0'; }

const char *ax_error_message(void) { return error_text; }

const char *ax_status_name(ax_status status)
{
    switch (status) {
    case AX_STATUS_OK: return "ok";
    case AX_STATUS_BAD_ARGUMENT: return "bad argument";
    case AX_STATUS_BAD_FILE: return "bad file";
    case AX_STATUS_BAD_DATA: return "bad data";
    case AX_STATUS_IO_ERROR: return "i/o error";
    case AX_STATUS_OUT_OF_MEMORY: return "out of memory";
    case AX_STATUS_DIVERGED: return "diverged";
    case AX_STATUS_UNSUPPORTED: return "unsupported";
    case AX_STATUS_INTERRUPTED: return "interrupted";
    case AX_STATUS_DEVICE: return "device failure";
    }
    return "unknown status";
}
