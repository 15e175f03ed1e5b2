/* test_openmp_spin.c: ax_openmp_spin_briefly makes a docked OpenMP worker
 * stop spinning where libgomp was started with its default spin count.
 *
 * The check reads the CPU time of the main team's worker while the main
 * thread sleeps between two parallel loops: with libgomp's 300,000 rounds
 * an idle machine's worker spins milliseconds of it; with 100 rounds it
 * sleeps almost at once. Only "little CPU time after the call" is a
 * verdict: a busy machine can only lower a thread's CPU time, so the check
 * never depends on how busy or fast the machine is. */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <omp.h>

#include "test_util.h"

/* Seconds of CPU time the main team's worker takes while the main thread
 * sleeps 50 ms after a parallel loop of two threads. */
static double docked_worker_seconds(void)
{
    clockid_t worker = 0;
    bool found = false;
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 1)
            found = pthread_getcpuclockid(pthread_self(), &worker) == 0;
    }
    if (!found)
        return -1.0;
    struct timespec before, after, nap = {0, 50 * 1000 * 1000};
    clock_gettime(worker, &before);
    nanosleep(&nap, NULL);
    clock_gettime(worker, &after);
    return (double)(after.tv_sec - before.tv_sec) + 1e-9 * (double)(after.tv_nsec - before.tv_nsec);
}

static int threads_of_this_process(void)
{
    DIR *tasks = opendir("/proc/self/task");
    int count = 0;
    for (struct dirent *entry; tasks && (entry = readdir(tasks));)
        count += entry->d_name[0] != '.';
    if (tasks)
        closedir(tasks);
    return count;
}

int main(int argc, char **argv)
{
    (void)argc;
    /* libgomp read its settings when this process started: run again with
     * its defaults (CTest sets OMP_WAIT_POLICY=passive for every test). */
    if (!getenv("AXON_TEST_SPIN_CHILD")) {
        unsetenv("OMP_WAIT_POLICY");
        unsetenv("GOMP_SPINCOUNT");
        setenv("AXON_TEST_SPIN_CHILD", "1", 1);
        execv("/proc/self/exe", argv);
        perror("test_openmp_spin: execv /proc/self/exe");
        return 1;
    }
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2) {
        printf("test_openmp_spin: skipped: needs 2 CPUs to run a team of two threads\n");
        return 77;
    }
    const double spinning = docked_worker_seconds();
    CHECK(spinning >= 0.0);
    const int threads_before = threads_of_this_process();
    CHECK_OK(ax_openmp_spin_briefly());
    const int threads_after = threads_of_this_process();
    /* a holder thread and its team's other threads, one per CPU in all */
    CHECK(threads_after - threads_before == CPU_COUNT(&allowed));
    CHECK_OK(ax_openmp_spin_briefly());
    CHECK(threads_of_this_process() == threads_after); /* once per process */
    double most = 0.0;
    for (int look = 0; look < 3; look++) {
        const double seconds = docked_worker_seconds();
        CHECK(seconds >= 0.0);
        most = seconds > most ? seconds : most;
    }
    /* 100 rounds of spinning take microseconds; 300,000 take milliseconds */
    CHECK(most < 0.001);
    printf("docked worker's CPU time in 50 ms: %.2f ms at libgomp's spin count, at most %.3f ms "
           "after ax_openmp_spin_briefly\n", 1e3 * spinning, 1e3 * most);
    return test_finish("test_openmp_spin");
}
