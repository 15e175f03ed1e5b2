/* ranks.c: the MPI processes of one prep run (`mpirun -np P axon prep`).
 *
 * Every rank lists the input and shuffles it with the seed, so all hold the
 * same plan; rank r makes the batches b with b % P == r. The batch bytes do
 * not depend on who makes them, and the per-rank counts and exact integer
 * pixel sums are added up at the end, so the output is the same for any P.
 *
 * Global progress (the MPI version of cuda-convnet2's preparation had none):
 * each rank sends its counts to rank 0
 * with non-blocking sends a few times a second; rank 0 drains them whenever
 * it reports and shows the sum. The end is a fixed handshake that cannot
 * hang: every rank sends one final message (done or failed) to rank 0; rank
 * 0 sends every other rank exactly one control message, "stop" as soon as it
 * learns of a failure (or its caller stops it), otherwise "end" once all
 * finals are in; a rank waits for its control message only after its final.
 * Waiting polls and sleeps instead of blocking in MPI, whose blocking calls
 * spin a core that the other ranks need for decoding.
 *
 * Failures in the phases before and after (listing, output folder, metadata)
 * are settled with prep_ranks_agree, a collective every rank reaches: the
 * first rank that failed on its own account (not merely stopped) is named in
 * the message every rank returns.
 *
 * MPI is initialised here only when the process was started by mpirun
 * (OMPI_COMM_WORLD_SIZE or PMI_SIZE set): a singleton MPI_Init costs a
 * second and is useless. A program that initialised MPI itself keeps it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "prep/prep.h"

int prep_launched_size(void)
{
    const char *names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *text = getenv(names[i]);
        if (text && atoi(text) > 0)
            return atoi(text);
    }
    return 0;
}

int prep_cpus_available(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    int count = CPU_COUNT(&set);
    return count > 0 ? count : 1;
}

#ifndef AXON_MPI

ax_status prep_ranks_start(prep_ranks *ranks)
{
    memset(ranks, 0, sizeof *ranks);
    ranks->size = 1;
    int launched = prep_launched_size();
    if (launched > 1)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "prep: started by mpirun as %d processes, but this axon was built without "
                       "MPI (AXON_MPI=OFF or Open MPI not found), so every process would make "
                       "every batch; run it without mpirun, or rebuild with -DAXON_MPI=ON",
                       launched);
    return AX_STATUS_OK;
}
void prep_ranks_end(prep_ranks *ranks) { (void)ranks; }
ax_status prep_ranks_agree(prep_ranks *ranks, ax_status status, bool secondary)
{
    (void)ranks;
    (void)secondary;
    return status;
}
bool prep_ranks_same(prep_ranks *ranks, uint64_t value)
{
    (void)ranks;
    (void)value;
    return true;
}
void prep_ranks_poll(prep_ranks *ranks, const prep_counts *mine, prep_counts *all)
{
    (void)ranks;
    *all = *mine;
}
void prep_ranks_stop_all(prep_ranks *ranks) { (void)ranks; }
void prep_ranks_finish(prep_ranks *ranks, const prep_counts *mine, bool failed,
                       void (*tick)(void *context, const prep_counts *all), void *context)
{
    (void)ranks;
    (void)mine;
    (void)failed;
    (void)tick;
    (void)context;
}
void prep_ranks_sum_u64(prep_ranks *ranks, uint64_t *values, size_t count)
{
    (void)ranks;
    (void)values;
    (void)count;
}
void prep_ranks_sum_i64(prep_ranks *ranks, int64_t *values, size_t count)
{
    (void)ranks;
    (void)values;
    (void)count;
}
void prep_ranks_sum_f64(prep_ranks *ranks, double *values, size_t count)
{
    (void)ranks;
    (void)values;
    (void)count;
}
void prep_ranks_gather_warnings(prep_ranks *ranks, prep_warnings *warnings)
{
    (void)ranks;
    (void)warnings;
}

#else /* AXON_MPI */

#include <mpi.h>

enum { TAG_PROGRESS = 7001, TAG_CONTROL = 7002 };
enum { STATE_RUNNING = 0, STATE_DONE = 1, STATE_FAILED = 2 };
enum { CONTROL_STOP = 1, CONTROL_END = 2 };
enum { MESSAGE_LENGTH = 5 }; /* state, done, processed, skipped, batches_done */

struct prep_ranks_state {
    MPI_Comm comm;
    /* rank 0 */
    prep_counts *latest; /* (size) */
    bool *final;         /* (size) its final message arrived */
    bool *told;          /* (size) its control message went out */
    int finals;
    /* other ranks */
    int64_t outgoing[MESSAGE_LENGTH];
    MPI_Request request;
    bool pending;
    bool controlled; /* the one control message arrived */
};

static void pause_briefly(void)
{
    struct timespec pause = {0, 2000000}; /* 2 ms */
    nanosleep(&pause, NULL);
}

ax_status prep_ranks_start(prep_ranks *ranks)
{
    memset(ranks, 0, sizeof *ranks);
    ranks->size = 1;
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (finalized) {
        if (prep_launched_size() > 1)
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "prep: MPI was already finalised in this process (an earlier run "
                           "under mpirun); a program that runs prep more than once under "
                           "mpirun must call MPI_Init itself");
        return AX_STATUS_OK;
    }
    if (!initialized) {
        if (prep_launched_size() == 0)
            return AX_STATUS_OK; /* not started by mpirun: one process, no MPI */
        int provided = 0;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "prep: MPI_Init_thread failed");
        ranks->initialized_here = true;
    }
    struct prep_ranks_state *state = calloc(1, sizeof *state);
    if (!state)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
    MPI_Comm_dup(MPI_COMM_WORLD, &state->comm);
    MPI_Comm_rank(state->comm, &ranks->rank);
    MPI_Comm_size(state->comm, &ranks->size);
    ranks->state = state;
    state->request = MPI_REQUEST_NULL;
    int n = ranks->size;
    state->latest = calloc((size_t)n, sizeof *state->latest);
    state->final = calloc((size_t)n, sizeof *state->final);
    state->told = calloc((size_t)n, sizeof *state->told);
    if (!state->latest || !state->final || !state->told)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory for %d ranks", n);
    return AX_STATUS_OK;
}

void prep_ranks_end(prep_ranks *ranks)
{
    struct prep_ranks_state *state = ranks->state;
    if (state) {
        if (state->pending)
            MPI_Wait(&state->request, MPI_STATUS_IGNORE);
        MPI_Comm_free(&state->comm);
        free(state->latest);
        free(state->final);
        free(state->told);
        free(state);
        ranks->state = NULL;
    }
    if (ranks->initialized_here)
        MPI_Finalize();
    ranks->initialized_here = false;
}

/* Every rank learns the first rank that failed on its own account (or,
 * when all failures are stops, the first that failed at all) and returns
 * that rank's status with its message, prefixed with "rank R of P". */
ax_status prep_ranks_agree(prep_ranks *ranks, ax_status status, bool secondary)
{
    if (!ranks->state || ranks->size == 1)
        return status;
    const int n = ranks->size;
    int key = status == AX_STATUS_OK ? 2 * n : (secondary ? n : 0) + ranks->rank;
    int first = 0;
    MPI_Allreduce(&key, &first, 1, MPI_INT, MPI_MIN, ranks->state->comm);
    if (first == 2 * n)
        return AX_STATUS_OK;
    int root = first % n;
    char message[1024];
    int code = (int)status;
    if (ranks->rank == root)
        snprintf(message, sizeof message, "%s", ax_error_message());
    MPI_Bcast(&code, 1, MPI_INT, root, ranks->state->comm);
    MPI_Bcast(message, (int)sizeof message, MPI_CHAR, root, ranks->state->comm);
    message[sizeof message - 1] = '\0';
    return ax_fail((ax_status)code, "rank %d of %d: %s", root, n, message);
}

bool prep_ranks_same(prep_ranks *ranks, uint64_t value)
{
    if (!ranks->state || ranks->size == 1)
        return true;
    uint64_t low = 0, high = 0;
    MPI_Allreduce(&value, &low, 1, MPI_UINT64_T, MPI_MIN, ranks->state->comm);
    MPI_Allreduce(&value, &high, 1, MPI_UINT64_T, MPI_MAX, ranks->state->comm);
    return low == high;
}

static void tell(prep_ranks *ranks, int rank, int64_t control)
{
    struct prep_ranks_state *state = ranks->state;
    if (state->told[rank])
        return;
    state->told[rank] = true;
    /* One small message per rank over its lifetime: sent eagerly, so a
     * blocking send returns at once. */
    MPI_Send(&control, 1, MPI_INT64_T, rank, TAG_CONTROL, state->comm);
}

void prep_ranks_stop_all(prep_ranks *ranks)
{
    if (!ranks->state || ranks->rank != 0)
        return;
    ranks->stop = true;
    for (int i = 1; i < ranks->size; i++)
        tell(ranks, i, CONTROL_STOP);
}

/* Rank 0: takes in every progress and final message waiting. */
static void drain(prep_ranks *ranks)
{
    struct prep_ranks_state *state = ranks->state;
    for (;;) {
        int waiting = 0;
        MPI_Status status;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_PROGRESS, state->comm, &waiting, &status);
        if (!waiting)
            return;
        int64_t message[MESSAGE_LENGTH];
        MPI_Recv(message, MESSAGE_LENGTH, MPI_INT64_T, status.MPI_SOURCE, TAG_PROGRESS,
                 state->comm, MPI_STATUS_IGNORE);
        int from = status.MPI_SOURCE;
        state->latest[from] = (prep_counts){message[1], message[2], message[3], message[4]};
        if (message[0] != STATE_RUNNING && !state->final[from]) {
            state->final[from] = true;
            state->finals++;
        }
        if (message[0] == STATE_FAILED && !ranks->stop) {
            ranks->stop = true;
            ranks->stopped_by_other = true;
            prep_ranks_stop_all(ranks);
        }
    }
}

/* Other ranks: sends counts unless the previous send is still under way. */
static void send_counts(prep_ranks *ranks, const prep_counts *mine, int64_t state_code)
{
    struct prep_ranks_state *state = ranks->state;
    if (state->pending) {
        int complete = 0;
        if (state_code == STATE_RUNNING)
            MPI_Test(&state->request, &complete, MPI_STATUS_IGNORE);
        else
            MPI_Wait(&state->request, MPI_STATUS_IGNORE), complete = 1;
        if (!complete)
            return;
        state->pending = false;
    }
    int64_t *out = state->outgoing;
    out[0] = state_code;
    out[1] = mine->done;
    out[2] = mine->processed;
    out[3] = mine->skipped;
    out[4] = mine->batches_done;
    MPI_Isend(out, MESSAGE_LENGTH, MPI_INT64_T, 0, TAG_PROGRESS, state->comm, &state->request);
    state->pending = true;
}

/* Other ranks: takes the control message if it has come. */
static void check_control(prep_ranks *ranks)
{
    struct prep_ranks_state *state = ranks->state;
    if (state->controlled)
        return;
    int waiting = 0;
    MPI_Iprobe(0, TAG_CONTROL, state->comm, &waiting, MPI_STATUS_IGNORE);
    if (!waiting)
        return;
    int64_t control = 0;
    MPI_Recv(&control, 1, MPI_INT64_T, 0, TAG_CONTROL, state->comm, MPI_STATUS_IGNORE);
    state->controlled = true;
    if (control == CONTROL_STOP) {
        ranks->stop = true;
        ranks->stopped_by_other = true;
    }
}

static void sum_latest(const prep_ranks *ranks, const prep_counts *mine, prep_counts *all)
{
    *all = *mine;
    for (int i = 1; i < ranks->size; i++) {
        const prep_counts *c = &ranks->state->latest[i];
        all->done += c->done;
        all->processed += c->processed;
        all->skipped += c->skipped;
        all->batches_done += c->batches_done;
    }
}

void prep_ranks_poll(prep_ranks *ranks, const prep_counts *mine, prep_counts *all)
{
    *all = *mine;
    if (!ranks->state || ranks->size == 1)
        return;
    if (ranks->rank == 0) {
        drain(ranks);
        sum_latest(ranks, mine, all);
    } else {
        check_control(ranks);
        send_counts(ranks, mine, STATE_RUNNING);
    }
}

void prep_ranks_finish(prep_ranks *ranks, const prep_counts *mine, bool failed,
                       void (*tick)(void *context, const prep_counts *all), void *context)
{
    struct prep_ranks_state *state = ranks->state;
    if (!state || ranks->size == 1)
        return;
    if (ranks->rank == 0) {
        if (failed)
            prep_ranks_stop_all(ranks);
        while (drain(ranks), state->finals < ranks->size - 1) {
            if (tick) {
                prep_counts all;
                sum_latest(ranks, mine, &all);
                tick(context, &all);
            }
            pause_briefly();
        }
        for (int i = 1; i < ranks->size; i++)
            tell(ranks, i, CONTROL_END);
        return;
    }
    send_counts(ranks, mine, failed ? STATE_FAILED : STATE_DONE);
    MPI_Wait(&state->request, MPI_STATUS_IGNORE);
    state->pending = false;
    while (check_control(ranks), !state->controlled)
        pause_briefly();
}

void prep_ranks_sum_u64(prep_ranks *ranks, uint64_t *values, size_t count)
{
    if (!ranks->state || ranks->size == 1 || count == 0)
        return;
    /* Integer sums are exact, so the order of the ranks does not matter. */
    for (size_t at = 0; at < count; at += (size_t)1 << 28) {
        size_t part = count - at < (size_t)1 << 28 ? count - at : (size_t)1 << 28;
        MPI_Allreduce(MPI_IN_PLACE, values + at, (int)part, MPI_UINT64_T, MPI_SUM,
                      ranks->state->comm);
    }
}

void prep_ranks_sum_i64(prep_ranks *ranks, int64_t *values, size_t count)
{
    if (!ranks->state || ranks->size == 1 || count == 0)
        return;
    for (size_t at = 0; at < count; at += (size_t)1 << 28) {
        size_t part = count - at < (size_t)1 << 28 ? count - at : (size_t)1 << 28;
        MPI_Allreduce(MPI_IN_PLACE, values + at, (int)part, MPI_INT64_T, MPI_SUM,
                      ranks->state->comm);
    }
}

void prep_ranks_sum_f64(prep_ranks *ranks, double *values, size_t count)
{
    if (!ranks->state || ranks->size == 1 || count == 0)
        return;
    MPI_Allreduce(MPI_IN_PLACE, values, (int)count, MPI_DOUBLE, MPI_SUM, ranks->state->comm);
}

/* Rank 0 receives the other ranks' kept warnings, in rank order, and the
 * count of all; the others' lists are emptied so nothing is shown twice. */
void prep_ranks_gather_warnings(prep_ranks *ranks, prep_warnings *warnings)
{
    if (!ranks->state || ranks->size == 1)
        return;
    MPI_Comm comm = ranks->state->comm;
    const int n = ranks->size;
    /* Pack "text\0text\0..." (kept ones only), capped so int counts hold. */
    size_t length = 0;
    for (int64_t i = 0; i < warnings->kept; i++)
        length += strlen(warnings->text[i]) + 1;
    if (length > (size_t)1 << 24)
        length = (size_t)1 << 24;
    char *packed = malloc(length + 1);
    size_t used = 0;
    for (int64_t i = 0; packed && i < warnings->kept; i++) {
        size_t size = strlen(warnings->text[i]) + 1;
        if (used + size > length)
            break;
        memcpy(packed + used, warnings->text[i], size);
        used += size;
    }
    int mine = packed ? (int)used : 0;
    int64_t uncounted = warnings->count;
    int *lengths = ranks->rank == 0 ? calloc((size_t)n, sizeof *lengths) : NULL;
    int *offsets = ranks->rank == 0 ? calloc((size_t)n, sizeof *offsets) : NULL;
    MPI_Gather(&mine, 1, MPI_INT, lengths, 1, MPI_INT, 0, comm);
    int64_t total_count = 0;
    MPI_Reduce(&uncounted, &total_count, 1, MPI_INT64_T, MPI_SUM, 0, comm);
    char *all = NULL;
    size_t all_length = 0;
    if (ranks->rank == 0 && lengths && offsets) {
        for (int i = 0; i < n; i++) {
            offsets[i] = (int)all_length;
            all_length += (size_t)lengths[i];
        }
        all = malloc(all_length + 1);
    }
    int receive = ranks->rank == 0 && all ? 1 : 0;
    MPI_Bcast(&receive, 1, MPI_INT, 0, comm);
    if (receive)
        MPI_Gatherv(packed ? packed : "", mine, MPI_CHAR, all, lengths, offsets, MPI_CHAR, 0,
                    comm);
    if (ranks->rank == 0 && all) {
        /* Rank 0's own warnings are first in `all`; add the others'. */
        for (size_t at = (size_t)lengths[0]; at < all_length;) {
            prep_warn(warnings, "%s", all + at);
            at += strlen(all + at) + 1;
        }
        warnings->count = total_count;
    } else if (ranks->rank != 0) {
        for (int64_t i = 0; i < warnings->kept; i++)
            free(warnings->text[i]);
        warnings->kept = 0;
        warnings->count = 0;
    }
    free(all);
    free(lengths);
    free(offsets);
    free(packed);
}

#endif /* AXON_MPI */
