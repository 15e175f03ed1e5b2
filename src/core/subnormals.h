/* subnormals.h: training with subnormal floats flushed to zero.
 *
 * Once a network has trained a while, some gradients, momenta and deltas
 * fall below float32's smallest normal number (1.2e-38), and on x86 every
 * operation that reads or makes such a number takes a microcode assist,
 * which slows every later epoch; flushed, they cost nothing and the test
 * accuracy is the same (docs/notes/threads.md, "Subnormals"). So ax_train
 * flushes them unless ax_train_config.keep_subnormals is set: it sets the
 * SSE control register's FTZ (results) and DAZ (operands) bits on the
 * calling thread and on OpenMP's threads (the BLAS's too, where it runs on
 * OpenMP's) while it runs, and gives each thread its own bits back after.
 * Elsewhere than x86-64 nothing changes. */
#ifndef AX_SUBNORMALS_H
#define AX_SUBNORMALS_H

#include <stdbool.h>

/* Flushes on this thread and `threads` OpenMP threads; nests (only the
 * outermost begin and end change anything on a thread). */
void ax_subnormals_flush_begin(int threads);
/* Gives the threads of the matching begin their own control bits back. */
void ax_subnormals_flush_end(int threads);
/* Whether this thread flushes now (for tests). */
bool ax_subnormals_flushed(void);

#endif
