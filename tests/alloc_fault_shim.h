/* alloc_fault_shim.h: the controls of tests/alloc_fault_shim.c, which
 * makes the nth heap allocation of the calling thread fail, so that a test
 * can walk every out-of-memory path of a call in turn (SQLite's way: fail
 * allocation 1, 2, 3, ... until the call needs no more). Built into a test
 * only where the malloc of the process may be replaced (not under
 * AddressSanitizer, which owns malloc): AXON_TEST_ALLOC_SHIM says so. */
#ifndef AX_TEST_ALLOC_FAULT_SHIM_H
#define AX_TEST_ALLOC_FAULT_SHIM_H

#include <stdbool.h>

/* From now on, on this thread, allocation nth (1: the next malloc, calloc
 * or realloc) returns NULL; those before it and after it succeed. 0
 * disarms. Allocations made by libgomp are never failed: it ends the
 * process on a failed allocation instead of reporting it. */
void alloc_fault_arm(long nth);
/* Allocations called from the shared library holding code pass too
 * (a library that crashes on a failed allocation instead of reporting it). */
void alloc_fault_spare(const void *code);
/* Whether this program's malloc is the shim's (under valgrind it is
 * valgrind's, and nothing can be made to fail). */
bool alloc_fault_active(void);
/* Whether the armed allocation has been failed since the last arm. */
bool alloc_fault_fired(void);

#endif
