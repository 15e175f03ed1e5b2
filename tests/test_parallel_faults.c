/* test_parallel_faults.c: data parallelism when memory runs out, through
 * tests/alloc_fault_shim.c (the nth allocation of one thread fails):
 * - ax_thread_ranks_create fails with AX_STATUS_OUT_OF_MEMORY and "cannot
 *   set up a team of 3 replicas" for each of its allocations, leaving *out
 *   NULL, and the first run that needs no more gives a whole team;
 * - ax_replicas_create on rank 0 of a two-thread team fails alike for each
 *   of its allocations, and rank 1, waiting in the exchange of row counts,
 *   is told that rank 0 left instead of waiting forever; with memory
 *   enough, both ranks agree on the global rows and their shards' offsets.
 * Skips (77) in a build whose malloc belongs to AddressSanitizer. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "parallel/replicas.h"
#include "test_util.h"
#ifdef AXON_TEST_ALLOC_SHIM
#include "alloc_fault_shim.h"
#endif

#ifndef AXON_TEST_ALLOC_SHIM
int main(void)
{
    TEST_SKIP("this build's malloc is AddressSanitizer's: no allocation faults injected here");
}
#else

enum { ROWS0 = 40, ROWS1 = 24 };

static void check_team(void)
{
    for (long nth = 1;; nth++) {
        ax_thread_ranks *team = (ax_thread_ranks *)1;
        alloc_fault_arm(nth);
        ax_status status = ax_thread_ranks_create(3, &team);
        bool fired = alloc_fault_fired();
        alloc_fault_arm(0);
        if (!fired) {
            CHECK_OK(status);
            for (int r = 0; r < 3; r++) {
                ax_communicator *c = ax_thread_ranks_communicator(team, r);
                CHECK(c && c->rank == r && c->size == 3 && c->sum);
            }
            ax_thread_ranks_free(team);
            CHECK(nth > 1);
            printf("ax_thread_ranks_create: %ld allocations\n", nth - 1);
            return;
        }
        CHECK_FAILS(status, AX_STATUS_OUT_OF_MEMORY, "cannot set up a team of 3 replicas");
        CHECK(team == NULL);
    }
}

typedef struct rank_call {
    ax_thread_ranks *team;
    int rank;
    long nth;         /* the allocation of this rank to fail; 0: none */
    const ax_net *net;
    const ax_dataset *shard;
    ax_status status;
    char message[300];
    bool fired;
    ax_replicas *replicas;
} rank_call;

static void *create_on_rank(void *argument)
{
    rank_call *call = argument;
    alloc_fault_arm(call->nth);
    call->status = ax_replicas_create(ax_thread_ranks_communicator(call->team, call->rank),
                                      call->net, call->shard, NULL, NULL, &call->replicas);
    call->fired = alloc_fault_fired();
    alloc_fault_arm(0);
    snprintf(call->message, sizeof call->message, "%s", ax_error_message());
    if (call->status != AX_STATUS_OK) /* as axon train --replicas does: the others are told */
        ax_thread_ranks_leave(call->team, call->rank);
    return NULL;
}

static void check_replicas(void)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = 4;
    ax_net *net = NULL;
    CHECK_OK(ax_layers_parse("5:tanh,1:identity", &config));
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    ax_dataset *shards[2] = {NULL, NULL};
    CHECK_OK(ax_dataset_synth_linear(ROWS0, 4, 7, &shards[0]));
    CHECK_OK(ax_dataset_synth_linear(ROWS1, 4, 8, &shards[1]));
    if (!net || !shards[0] || !shards[1])
        return;
    for (long nth = 1; nth < 100; nth++) {
        ax_thread_ranks *team = NULL;
        CHECK_OK(ax_thread_ranks_create(2, &team));
        rank_call calls[2];
        pthread_t threads[2];
        for (int r = 0; r < 2; r++) {
            calls[r] = (rank_call){.team = team, .rank = r, .nth = r == 0 ? nth : 0, .net = net,
                                   .shard = shards[r]};
            pthread_create(&threads[r], NULL, create_on_rank, &calls[r]);
        }
        for (int r = 0; r < 2; r++)
            pthread_join(threads[r], NULL);
        bool done = !calls[0].fired;
        if (done) {
            CHECK(calls[0].status == AX_STATUS_OK && calls[1].status == AX_STATUS_OK);
            for (int r = 0; r < 2; r++)
                CHECK(calls[r].replicas && calls[r].replicas->global_rows == ROWS0 + ROWS1 &&
                      calls[r].replicas->local_rows == (r ? ROWS1 : ROWS0) &&
                      calls[r].replicas->first_row == (r ? ROWS0 : 0) &&
                      calls[r].replicas->validation_rows == -1);
            CHECK(nth > 1);
            printf("ax_replicas_create: %ld allocations on rank 0\n", nth - 1);
        } else {
            CHECK(calls[0].status == AX_STATUS_OUT_OF_MEMORY && !calls[0].replicas &&
                  strstr(calls[0].message, "out of memory for data-parallel training"));
            CHECK(calls[1].status == AX_STATUS_IO_ERROR && !calls[1].replicas &&
                  strstr(calls[1].message, "replica 0 of 2 left the run"));
        }
        for (int r = 0; r < 2; r++)
            ax_replicas_free(calls[r].replicas);
        ax_thread_ranks_free(team);
        if (done)
            break;
    }
    ax_dataset_free(shards[0]);
    ax_dataset_free(shards[1]);
    ax_net_free(net);
}

int main(void)
{
    if (!alloc_fault_active())
        TEST_SKIP("this program's malloc is not its own (valgrind's?): no allocation faults");
    check_team();
    check_replicas();
    return test_finish("test_parallel_faults");
}

#endif
