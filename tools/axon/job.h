/* job.h: `mpirun -np P axon train ...`: the MPI job a run may be one rank
 * of (docs/mpi.md). main() starts it for train only (axon prep joins MPI on
 * its own, src/prep/ranks.c) and ends it: MPI_Finalize when every rank
 * reached the same outcome, MPI_Abort when one failed on its own, so that a
 * failing rank takes the job down instead of leaving the others waiting. */
#ifndef AXON_CLI_JOB_H
#define AXON_CLI_JOB_H

#include <stdbool.h>

#include "axon.h"

/* Joins MPI when an MPI launcher started this process; alone otherwise.
 * In a job of several ranks, stdout of ranks other than 0 is discarded and
 * every line written to stderr that starts "axon...: " gets "rank R of P: "
 * after that prefix. Returns CLI_EXIT_OK or, after printing why,
 * CLI_EXIT_RUNTIME (started by mpirun as several processes in a build
 * without MPI, or MPI failed to start). */
int cli_job_start(int *argc, char ***argv);
/* The communicator of the job, NULL when this process is alone. */
const ax_communicator *cli_job_communicator(void);
/* axon train --replicas (replicas.h): the calling thread plays the rank of
 * communicator from now on (NULL: none), and the calls above and below
 * answer for that rank in this thread. */
void cli_job_enter_replica(const ax_communicator *communicator);
bool cli_job_is_replica(void);
/* From now on, lines a replica thread writes to stderr name it, after the
 * "axon...: " that starts them ("axon: replica 1 of 2: ..."). */
void cli_job_tag_replicas(void);
/* This process's rank (0 when alone) and the number of ranks (1 alone). */
int cli_job_rank(void);
int cli_job_size(void);
/* Says that the run's outcome, good or bad, was reached by every rank
 * together (ax_train's agreed stop, divergence, success), so the job can
 * end normally. */
void cli_job_outcome_shared(void);
/* Ends the job with exit status result: finalises MPI, or, for a failure
 * not known to be shared, aborts every rank with that status. */
int cli_job_end(int result);

#endif
