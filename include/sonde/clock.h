/*
 * clock.h - the one clock every sonde stream is stamped with.
 *
 * CLOCK_MONOTONIC in nanoseconds, so streams from different collectors can be
 * laid on one timeline.
 */
#ifndef SONDE_CLOCK_H
#define SONDE_CLOCK_H

#include <stdint.h>

/* Monotonic time in ns (CLOCK_MONOTONIC). Never fails on Linux. */
uint64_t sonde_clock_ns(void);

/* The calling thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID). */
uint64_t sonde_clock_thread_cpu_ns(void);

/* Wall-clock time in ns since the epoch (CLOCK_REALTIME), for file names and metadata. */
uint64_t sonde_clock_realtime_ns(void);

/*
 * The TSC and sonde_clock_ns() read together, to map one onto the other: the
 * TSC is read before and after the clock, and of four such readings the one
 * with the fewest cycles between is kept (its middle is *tick). A reading
 * preempted, or whose vCPU the host took, between its two TSC reads is off by
 * that gap, and a mapping made of it by as much. Not on x86-64: both are the
 * clock.
 */
void sonde_clock_tsc_pair(uint64_t *tick, uint64_t *ns);

#endif
