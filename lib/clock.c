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

void sonde_clock_tsc_pair(uint64_t *tick, uint64_t *ns)
{
#if defined(__x86_64__)
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 4; i++) {
		uint64_t a = __builtin_ia32_rdtsc(), n = sonde_clock_ns(),
			 b = __builtin_ia32_rdtsc();

		if (b - a < best) {
			best = b - a;
			*tick = a + (b - a) / 2;
			*ns = n;
		}
	}
#else
	*tick = *ns = sonde_clock_ns();
#endif
}
