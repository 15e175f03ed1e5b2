/* threads.h: running OpenMP loops and the BLAS on a number of threads
 * (threads.c; the public ax_set_threads and ax_threads are axon.h's). */
#ifndef AX_PERF_THREADS_H
#define AX_PERF_THREADS_H

#include "axon.h"

/* Runs OpenMP loops (the calling thread's) and the BLAS on n threads,
 * leaving ax_threads(), the run's own count, as it is. */
void ax_threads_run_on(int n);

#endif
