/* memory.c: see memory.h. */
#include "core/memory.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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
