/* threads.c: the process's thread count, OpenMP loops and the BLAS
 * together (ax_set_threads, ax_threads): the one the user chose, else
 * OMP_NUM_THREADS, else the CPUs this process may run on. Below core, so
 * that the peak (peak.c) and the training loop's thread governor read it
 * alike. */
#include <stdlib.h>

#include <omp.h>

#include "backend/cpu/blas.h"
#include "base/error.h"
#include "perf/cpu_load.h"
#include "perf/threads.h"

#if defined(AXON_BLAS_BLIS)
#include <blis.h>
#endif

static int threads_in_use;

static int default_threads(void)
{
    const char *text = getenv("OMP_NUM_THREADS");
    if (text && atoi(text) > 0)
        return atoi(text);
    /* The CPUs this process may run on (a container's or taskset's), not
     * every CPU online. */
    return ax_cpu_load_cores();
}

int ax_others_running(void) { return ax_cpu_load_others_running(); }

void ax_threads_run_on(int n)
{
    omp_set_num_threads(n);
#if defined(AXON_BLAS_OPENBLAS)
    ax_blas.set_num_threads(n);
#elif defined(AXON_BLAS_BLIS)
    bli_thread_set_num_threads(n);
#endif
}

ax_status ax_set_threads(int n)
{
    if (n > 4096)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "%d threads is more than this machine can use", n);
    if (n <= 0)
        n = default_threads();
    ax_threads_run_on(n);
    threads_in_use = n;
    return AX_STATUS_OK;
}

int ax_threads(void) { return threads_in_use > 0 ? threads_in_use : default_threads(); }
