/* error.h: the library's one way to fail: record a message for the caller
 * (ax_error_message) and return the status. Never prints, never exits. */
#ifndef AX_BASE_ERROR_H
#define AX_BASE_ERROR_H

#include "axon.h"

#if defined(__GNUC__)
#define AX_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define AX_PRINTF(f, a)
#endif

/* Records the formatted message for this thread and returns status. */
ax_status ax_fail(ax_status status, const char *format, ...) AX_PRINTF(2, 3);
/* Prefixes the current message with "context: " and returns status
 * unchanged; for adding the file name at an outer level. */
ax_status ax_fail_context(ax_status status, const char *format, ...) AX_PRINTF(2, 3);
/* Clears the message. */
void ax_error_clear(void);

/* Propagates a failing status from an expression. */
#define AX_TRY(expr)                            \
    do {                                        \
        ax_status ax_try_status_ = (expr);      \
        if (ax_try_status_ != AX_STATUS_OK)     \
            return ax_try_status_;              \
    } while (0)

#endif
