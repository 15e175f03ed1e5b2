/* memory.h: large zeroed allocations backed by transparent huge pages where
 * the kernel allows: a first touch of a 4 KiB page costs ~10 us in some VMs,
 * so a 188 MB data set would spend a second in page faults alone. */
#ifndef AX_BASE_MEMORY_H
#define AX_BASE_MEMORY_H

#include <stddef.h>

#include "axon.h"

/* Zeroed memory, 64-byte aligned (2 MiB aligned and huge-page advised from
 * 4 MiB up); free with free(). NULL when out of memory. */
void *ax_allocate_zeroed(size_t bytes);

/* Refuses an allocation of bytes (what: "the data set x.csv", for the
 * message) that would exceed the memory the machine has available, before
 * it is tried. */
ax_status ax_memory_check(size_t bytes, const char *what);

#endif
