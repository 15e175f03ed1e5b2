/* memory.h: large zeroed allocations backed by transparent huge pages where
 * the kernel allows: a first touch of a 4 KiB page costs ~10 us in some VMs,
 * so a 188 MB data set would spend a second in page faults alone. */
#ifndef AX_CORE_MEMORY_H
#define AX_CORE_MEMORY_H

#include <stddef.h>

/* Zeroed memory, 64-byte aligned (2 MiB aligned and huge-page advised from
 * 4 MiB up); free with free(). NULL when out of memory. */
void *ax_allocate_zeroed(size_t bytes);

#endif
