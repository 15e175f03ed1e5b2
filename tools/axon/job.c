/* job.c: the MPI job of `mpirun -np P axon train` (see job.h). Messages of
 * several ranks interleave in mpirun's output, so each rank's stderr names
 * the rank ("axon: rank 1 of 2: --data x.csv: no such file"): stderr is
 * replaced by a glibc cookie stream that inserts the rank into every line,
 * which covers all the places that print, not only some. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* fopencookie (CMake defines it for every file already) */
#endif
#include "job.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "options.h"
#include "progress.h"

static struct {
    bool mpi;                 /* MPI was started here: end it */
    bool several;             /* more than one rank */
    bool shared;              /* the outcome is every rank's */
    ax_communicator communicator;
    char tag[48];             /* "rank R of P: " */
    bool line_start;          /* the next byte written to stderr starts a line */
} job = {.line_start = true};

/* axon train --replicas: the rank this thread plays (tools/axon/replicas.c);
 * NULL in the main thread and in a process without replicas. */
static _Thread_local const ax_communicator *replica;
static _Thread_local char replica_tag[48]; /* "replica R of P: " */

void cli_job_enter_replica(const ax_communicator *communicator)
{
    replica = communicator;
    replica_tag[0] = '\0';
    if (communicator)
        snprintf(replica_tag, sizeof replica_tag, "replica %d of %d: ", communicator->rank,
                 communicator->size);
}

bool cli_job_is_replica(void)
{
    return replica != NULL;
}

static void write_all(const char *bytes, size_t count)
{
    while (count > 0) {
        ssize_t written = write(STDERR_FILENO, bytes, count);
        if (written <= 0)
            return;
        bytes += written;
        count -= (size_t)written;
    }
}

/* The cookie stream's write: copies to fd 2, inserting the tag after the
 * "axon...: " that starts a line (or "axon: " and the tag before a line
 * that has none). A tagged line goes out in one write, so that mpirun does
 * not interleave other ranks' output within it. */
static ssize_t tagged_write(void *cookie, const char *bytes, size_t count)
{
    (void)cookie;
    size_t done = 0;
    while (done < count) {
        const char *line = bytes + done;
        const char *newline = memchr(line, '\n', count - done);
        size_t length = newline ? (size_t)(newline - line) + 1 : count - done;
        char tagged[8192];
        const char *tag = replica ? replica_tag : job.tag; /* the main thread of --replicas: "" */
        if (job.line_start && tag[0] && length + 64 < sizeof tagged) {
            const char *colon = strncmp(line, "axon", 4) == 0 ? memchr(line, ':', length) : NULL;
            size_t head = colon && (size_t)(colon - line) + 1 < length && colon[1] == ' '
                              ? (size_t)(colon - line) + 2 : 0;
            int used = snprintf(tagged, sizeof tagged, "%.*s%s%s", (int)head, line,
                                head ? "" : "axon: ", tag);
            memcpy(tagged + used, line + head, length - head);
            write_all(tagged, (size_t)used + length - head);
        } else {
            write_all(line, length);
        }
        job.line_start = newline != NULL;
        done += length;
    }
    return (ssize_t)count;
}

/* Replaces stderr by the tagging stream. */
/* Points file descriptor 1 at /dev/null. Not freopen: stdout is then a
 * stream of output_stream.c (over descriptor 1), which freopen cannot reopen. */
static bool silence_stdout(void)
{
    fflush(stdout);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null < 0)
        return false;
    bool done = dup2(null, STDOUT_FILENO) >= 0;
    close(null);
    return done;
}

static void tag_stderr_stream(void)
{
    cookie_io_functions_t functions = {.write = tagged_write};
    FILE *stream = fopencookie(NULL, "w", functions);
    if (!stream)
        return; /* untagged messages are still messages */
    /* Whole lines reach tagged_write, however many fprintf calls make one. */
    setvbuf(stream, NULL, _IOLBF, 8192);
    fflush(stderr);
    stderr = stream;
}

static void tag_stderr(int rank, int size)
{
    snprintf(job.tag, sizeof job.tag, "rank %d of %d: ", rank, size);
    tag_stderr_stream();
}

void cli_job_tag_replicas(void)
{
    if (!job.several) /* under mpirun, stderr is tagged already */
        tag_stderr_stream();
}

/* A SIGINT or SIGTERM to this rank alone (not through mpirun, which signals
 * every rank) is this rank's vote to stop: all ranks stop after the same
 * step, and rank 0 writes the interrupted checkpoint (docs/mpi.md). */
static bool job_stop_requested(const ax_communicator *self)
{
    (void)self;
    return progress_interrupted();
}

int cli_job_start(int *argc, char ***argv)
{
    const int launched = ax_mpi_launched();
    if (launched == 0)
        return CLI_EXIT_OK;
    ax_status status = ax_mpi_init(argc, argv);
    if (status == AX_STATUS_UNSUPPORTED && launched == 1)
        return CLI_EXIT_OK; /* mpirun -np 1 of a build without MPI: one process anyway */
    if (status != AX_STATUS_OK) {
        fprintf(stderr, "axon: started by an MPI launcher as one of %d processes, but: %s\n",
                launched, ax_error_message());
        return CLI_EXIT_RUNTIME;
    }
    job.mpi = true;
    status = ax_communicator_mpi_world(&job.communicator);
    if (status != AX_STATUS_OK) {
        fprintf(stderr, "axon: %s\n", ax_error_message());
        return CLI_EXIT_RUNTIME;
    }
    job.communicator.stop_requested = job_stop_requested;
    /* AXON_ALLREDUCE=overlap begins each layer's gradient sum during the
     * backward pass; blocking (the default: it measured as fast or faster,
     * docs/mpi.md) sums the whole gradient after it. */
    const char *allreduce = getenv("AXON_ALLREDUCE");
    if (allreduce && *allreduce && strcmp(allreduce, "overlap") != 0 &&
        strcmp(allreduce, "blocking") != 0) {
        fprintf(stderr, "axon: AXON_ALLREDUCE=%s: give overlap or blocking\n", allreduce);
        return CLI_EXIT_USAGE;
    }
    if (!allreduce || strcmp(allreduce, "overlap") != 0) {
        job.communicator.sum_begin = NULL;
        job.communicator.sum_wait = NULL;
    }
    job.several = job.communicator.size > 1;
    if (job.several) {
        tag_stderr(job.communicator.rank, job.communicator.size);
        /* Rank 0 speaks for the job; the others' figures are the same. */
        if (job.communicator.rank != 0 && !silence_stdout())
            fprintf(stderr, "axon: cannot silence standard output: %s\n", strerror(errno));
    }
    return CLI_EXIT_OK;
}

const ax_communicator *cli_job_communicator(void)
{
    if (replica)
        return replica;
    return job.several ? &job.communicator : NULL;
}

int cli_job_rank(void)
{
    if (replica)
        return replica->rank;
    return job.several ? job.communicator.rank : 0;
}

int cli_job_size(void)
{
    if (replica)
        return replica->size;
    return job.several ? job.communicator.size : 1;
}

void cli_job_outcome_shared(void)
{
    job.shared = true;
}

int cli_job_end(int result)
{
    fflush(stdout);
    fflush(stderr);
    if (job.several && result != CLI_EXIT_OK && !job.shared)
        job.communicator.abort(&job.communicator, result); /* does not return */
    if (job.mpi)
        ax_mpi_finalize();
    return result;
}
