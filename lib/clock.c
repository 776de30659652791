/*
 * clock.c - CLOCK_MONOTONIC and CLOCK_REALTIME in nanoseconds.
 */
#include <time.h>
#include <sonde/clock.h>

static uint64_t read_clock(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t sonde_clock_ns(void)
{
	return read_clock(CLOCK_MONOTONIC);
}

uint64_t sonde_clock_thread_cpu_ns(void)
{
	return read_clock(CLOCK_THREAD_CPUTIME_ID);
}

uint64_t sonde_clock_realtime_ns(void)
{
	return read_clock(CLOCK_REALTIME);
}
