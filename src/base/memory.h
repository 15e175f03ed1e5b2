/* memory.h: large zeroed allocations backed by transparent huge pages where
 * the kernel allows: a first touch of a 4 KiB page costs ~10 us in some VMs,
 * so a 188 MB data set would spend a second in page faults alone. */
#ifndef AX_BASE_MEMORY_H
#define AX_BASE_MEMORY_H

#include <stdbool.h>
#include <stddef.h>

#include "axon.h"

/* Zeroed memory, 64-byte aligned (2 MiB aligned and huge-page advised from
 * 4 MiB up); free with free(). NULL when out of memory. */
void *ax_allocate_zeroed(size_t bytes);

/* Refuses an allocation of bytes (what: "the data set x.csv", for the
 * message) that would exceed the memory the machine has available, before
 * it is tried. */
ax_status ax_memory_check(size_t bytes, const char *what);

/* Public structs that grow (include/axon.h, "versioned structs"; docs/design.md,
 * "The ABI rule"): the first member is size_t size, the bytes of the struct
 * in the caller's header. */
/* Fills the first size bytes of out from full (full_size bytes, the
 * defaults; bytes past full_size are zeroed) and sets out's size to size. */
void ax_sized_fill(void *out, size_t size, const void *full, size_t full_size);
/* The caller's struct given over the defaults in full (full_size bytes):
 * given->size bytes are copied and full's size becomes full_size; a size
 * below min_size or above full_size is refused (AX_STATUS_BAD_ARGUMENT, the
 * message naming what, e.g. "training config", and defaults, the function
 * that fills it). */
ax_status ax_sized_read(const void *given, void *full, size_t min_size, size_t full_size,
                        const char *what, const char *defaults);
/* The results a caller allocates (ax_train_summary, ax_evaluation,
 * ax_prep_summary): the library fills a whole struct of its own and copies
 * out only the caller's size. Refuses a size below sizeof (size_t) or above
 * full_size (AX_STATUS_BAD_ARGUMENT, naming what and empty, the function that
 * sets the size), writing nothing. */
ax_status ax_sized_output_check(const void *given, size_t full_size, const char *what,
                                const char *empty);
/* Copies the first out->size bytes of full (full_size bytes; checked by
 * ax_sized_output_check) into out, leaving out's size as it is. */
void ax_sized_output_write(void *out, const void *full, size_t full_size);
/* Whether a caller's struct of out->size bytes holds the field that ends at
 * byte end (offsetof + sizeof): where not, what the library allocated for it
 * is the library's to free. */
bool ax_sized_output_holds(const void *out, size_t end);

#endif
