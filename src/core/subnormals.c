/* subnormals.c: see subnormals.h. */
#include "core/subnormals.h"

#include <omp.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <xmmintrin.h>

#define FLUSH_BITS 0x8040u /* FTZ (bit 15) and DAZ (bit 6) */

/* Each thread's own: how deep in begins it is and its bits before the first. */
static _Thread_local int depth;
static _Thread_local unsigned int bits_before;

static void enter(void)
{
    if (depth++ == 0) {
        bits_before = _mm_getcsr();
        _mm_setcsr(bits_before | FLUSH_BITS);
    }
}

static void leave(void)
{
    if (depth > 0 && --depth == 0)
        _mm_setcsr((_mm_getcsr() & ~FLUSH_BITS) | (bits_before & FLUSH_BITS));
}

bool ax_subnormals_flushed(void) { return (_mm_getcsr() & FLUSH_BITS) == FLUSH_BITS; }
#else
static void enter(void) {}
static void leave(void) {}
bool ax_subnormals_flushed(void) { return false; }
#endif

/* The calling thread takes part in the region as thread 0; a team of the
 * same size is the same threads from libgomp's pool each time (threads the
 * pool makes later copy the maker's bits, as clone copies them). */
void ax_subnormals_flush_begin(int threads)
{
#pragma omp parallel num_threads(threads > 0 ? threads : 1)
    enter();
}

void ax_subnormals_flush_end(int threads)
{
#pragma omp parallel num_threads(threads > 0 ? threads : 1)
    leave();
}
