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

#endif
