/* replicas.h: `axon train --replicas P`: data-parallel training inside one
 * process, P threads each playing one rank of what mpirun -np P runs as
 * processes (docs/mpi.md "Replicas in one process"). */
#ifndef AXON_CLI_REPLICAS_H
#define AXON_CLI_REPLICAS_H

/* What one replica does: the whole run of one rank (load its shard, train,
 * rank 0 reports and writes), returning a CLI_EXIT_* status. In its thread
 * cli_job_rank(), cli_job_size() and cli_job_communicator() answer for
 * its rank. */
typedef int (*replica_body)(void *user, int rank);

/* Runs count replicas, each in its own thread with threads_each OpenMP and
 * BLAS threads, and waits for all. A replica that fails leaves the team,
 * so that the others' sums fail instead of waiting for it: the run ends
 * with the exit status of the first replica that failed (its message is
 * the one that explains), else rank 0's. */
int replicas_run(int count, int threads_each, replica_body body, void *user);

#endif
