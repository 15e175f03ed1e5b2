/* alloc_fault_shim.c: a malloc, calloc and realloc of the test program
 * that come before glibc's (the program's own symbols win, and glibc's own
 * calls, strdup's, asprintf's or getline's, go through them too) and pass
 * each call on to glibc's __libc_* functions, failing the one armed by
 * alloc_fault_arm. Only the arming thread counts, so the worker threads of
 * a pipeline go on undisturbed; allocations called from libgomp pass, as
 * it aborts the process on a failed one (gomp_fatal), and so do those of
 * any library a test spares (libarchive 3.6 dereferences a failed
 * archive_entry_new inside archive_read_next_header). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr */
#endif
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "alloc_fault_shim.h"

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);

static _Thread_local long countdown; /* 0: disarmed */
static _Thread_local bool fired;
/* Libraries whose allocations pass: their mapped segments. */
enum { MOST_SPARED = 8 };
static uintptr_t spared_begin[MOST_SPARED], spared_end[MOST_SPARED];
static int spared_count;

static int find_library(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t probe = (uintptr_t)data;
    uintptr_t low = UINTPTR_MAX, high = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_LOAD)
            continue;
        uintptr_t start = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
        uintptr_t end = start + info->dlpi_phdr[i].p_memsz;
        low = start < low ? start : low;
        high = end > high ? end : high;
    }
    if (probe >= low && probe < high && spared_count < MOST_SPARED) {
        spared_begin[spared_count] = low;
        spared_end[spared_count++] = high;
        return 1;
    }
    return 0;
}

void alloc_fault_spare(const void *code)
{
    dl_iterate_phdr(find_library, (void *)code);
}

void alloc_fault_arm(long nth)
{
    static bool gomp_spared;
    if (!gomp_spared) { /* omp_get_thread_num lies in libgomp */
        alloc_fault_spare((const void *)(uintptr_t)&omp_get_thread_num);
        gomp_spared = true;
    }
    fired = false;
    countdown = nth;
}

bool alloc_fault_active(void)
{
    void *(*volatile allocate)(size_t) = malloc; /* not folded away with its free */
    alloc_fault_arm(1);
    void *probe = allocate(16);
    alloc_fault_arm(0);
    free(probe);
    return probe == NULL;
}

bool alloc_fault_fired(void)
{
    return fired;
}

/* Whether this allocation, called from caller, is the one to fail. */
static bool fail_now(const void *caller)
{
    if (countdown <= 0)
        return false;
    uintptr_t from = (uintptr_t)caller;
    for (int i = 0; i < spared_count; i++)
        if (from >= spared_begin[i] && from < spared_end[i])
            return false;
    if (--countdown > 0)
        return false;
    fired = true;
    errno = ENOMEM; /* as glibc's malloc does */
    return true;
}

void *malloc(size_t size)
{
    return fail_now(__builtin_return_address(0)) ? NULL : __libc_malloc(size);
}

void *calloc(size_t count, size_t size)
{
    return fail_now(__builtin_return_address(0)) ? NULL : __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size)
{
    return fail_now(__builtin_return_address(0)) ? NULL : __libc_realloc(pointer, size);
}
