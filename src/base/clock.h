/* clock.h: the one clock axon times things with (training and evaluation
 * times, profiles, prep's progress, communication): monotonic, so a change
 * of the wall clock never makes a duration negative. */
#ifndef AX_BASE_CLOCK_H
#define AX_BASE_CLOCK_H

/* Seconds on a monotonic clock (CLOCK_MONOTONIC); only differences mean anything. */
double ax_seconds_now(void);

#endif
