/* memory.c: see memory.h. */
#include "base/memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/error.h"

enum { HUGE_PAGE = 2 << 20, HUGE_THRESHOLD = 4 << 20 };

void *ax_allocate_zeroed(size_t bytes)
{
    size_t alignment = bytes >= HUGE_THRESHOLD ? HUGE_PAGE : 64;
    size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    if (rounded == 0)
        rounded = alignment;
    void *memory = aligned_alloc(alignment, rounded);
    if (!memory)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (alignment == HUGE_PAGE)
        madvise(memory, rounded, MADV_HUGEPAGE); /* advice only: failure is harmless */
#endif
    memset(memory, 0, rounded);
    return memory;
}

ax_status ax_memory_check(size_t bytes, const char *what)
{
    long pages = sysconf(_SC_AVPHYS_PAGES);
    long page_size = sysconf(_SC_PAGESIZE);
    FILE *meminfo = fopen("/proc/meminfo", "r");
    double available = pages > 0 && page_size > 0 ? (double)pages * (double)page_size : 0.0;
    if (meminfo) {
        /* MemAvailable counts reclaimable cache too; it is what the kernel would give us. */
        char line[256];
        while (fgets(line, sizeof line, meminfo)) {
            unsigned long long kib;
            if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
                available = (double)kib * 1024.0;
                break;
            }
        }
        fclose(meminfo);
    }
    if (available > 0 && (double)bytes > available)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY,
                       "%s needs %.1f GiB but only %.1f GiB of memory is available",
                       what, (double)bytes / 1073741824.0, available / 1073741824.0);
    return AX_STATUS_OK;
}

void ax_sized_fill(void *out, size_t size, const void *full, size_t full_size)
{
    memcpy(out, full, size < full_size ? size : full_size);
    if (size > full_size)
        memset((char *)out + full_size, 0, size - full_size);
    if (size >= sizeof size)
        memcpy(out, &size, sizeof size);
}

ax_status ax_sized_read(const void *given, void *full, size_t min_size, size_t full_size,
                        const char *what, const char *defaults)
{
    size_t size;
    memcpy(&size, given, sizeof size);
    if (size < min_size || size > full_size)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s of %zu bytes: fill it with %s() (this library takes %zu to %zu bytes)",
                       what, size, defaults, min_size, full_size);
    memcpy(full, given, size);
    memcpy(full, &full_size, sizeof full_size);
    return AX_STATUS_OK;
}

static size_t size_of(const void *given)
{
    size_t size;
    memcpy(&size, given, sizeof size);
    return size;
}

ax_status ax_sized_output_check(const void *given, size_t full_size, const char *what,
                                const char *empty)
{
    size_t size = size_of(given);
    if (size < sizeof size || size > full_size)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "%s of %zu bytes: start it from %s() (this library writes %zu to %zu "
                       "bytes)",
                       what, size, empty, sizeof size, full_size);
    return AX_STATUS_OK;
}

void ax_sized_output_write(void *out, const void *full, size_t full_size)
{
    size_t size = size_of(out);
    if (size > full_size)
        size = full_size;
    /* The caller's own size stays: the bytes after it are copied. */
    if (size > sizeof size)
        memcpy((char *)out + sizeof size, (const char *)full + sizeof size, size - sizeof size);
}

bool ax_sized_output_holds(const void *out, size_t end) { return size_of(out) >= end; }
