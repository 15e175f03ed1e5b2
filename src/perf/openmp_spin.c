/* openmp_spin.c: short spinning for libgomp's waiting threads where libgomp
 * was started before axon could choose its spin count.
 *
 * libgomp reads GOMP_SPINCOUNT once, when it is loaded. The axon command
 * and the Python package set it for that moment (10000 rounds, 1000 on a
 * busy machine), but a Python program that imported scikit-learn first has
 * libgomp loaded with its own 300,000 rounds: each of axon's threads then
 * spins about 3 ms after every parallel loop and BLAS call, taking the core
 * its partner or another process needs (B1's fit with 2 threads held: 6.4-12
 * s against 0.5-1.1 s imported first, at load 4 on 2 cores).
 *
 * No call changes the count once libgomp runs, but libgomp spins only 100
 * rounds while it manages more threads than the process has CPUs (libgomp's
 * manual, GOMP_SPINCOUNT). So a thread of ours holds an idle OpenMP team of
 * one thread per CPU for the rest of the process: its team's threads sleep
 * in libgomp's dock, the count of managed threads exceeds the CPUs as soon
 * as any other team runs, and every waiting thread of the process spins 100
 * rounds. Cost: one sleeping thread per CPU. */
#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

#include <omp.h>

#include "base/error.h"
#include "perf/cpu_load.h"

static pthread_mutex_t holder_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t holder_docked = PTHREAD_COND_INITIALIZER;
static bool holder_started, team_docked;
static int team_started; /* the team's threads that ran */

static void *hold_idle_team(void *unused)
{
    (void)unused;
    pthread_setname_np(pthread_self(), "axon-omp-spin"); /* as ps and /proc show it */
    const int cpus = ax_cpu_load_cores();
#pragma omp parallel num_threads(cpus > 1 ? cpus : 1)
    {
        /* not empty: the compiler drops an empty parallel region */
#pragma omp atomic
        team_started++;
    }
    pthread_mutex_lock(&holder_lock);
    team_docked = true;
    pthread_cond_broadcast(&holder_docked);
    pthread_mutex_unlock(&holder_lock);
    for (;;) /* the team lives as long as this thread */
        pause();
    return NULL;
}

ax_status ax_openmp_spin_briefly(void)
{
    pthread_mutex_lock(&holder_lock);
    if (!holder_started) {
        pthread_attr_t attributes;
        pthread_t holder;
        pthread_attr_init(&attributes);
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        holder_started = pthread_create(&holder, &attributes, hold_idle_team, NULL) == 0;
        pthread_attr_destroy(&attributes);
        if (!holder_started) {
            pthread_mutex_unlock(&holder_lock);
            return ax_fail(AX_STATUS_OUT_OF_MEMORY,
                           "could not start the thread that holds an idle OpenMP team");
        }
    }
    while (!team_docked)
        pthread_cond_wait(&holder_docked, &holder_lock);
    pthread_mutex_unlock(&holder_lock);
    return AX_STATUS_OK;
}
