/* Trace collector target for sonde check's exclusive-time-outliers: twelve
   functions that each spin for about 20 ms, work_K (the argument) for ten times
   as long. Two runs differ in one function's exclusive time. The spin is on
   the monotonic clock, as the trace measures: a function preempted while the
   tests run beside it ends late by at most what the preemption overran it,
   not by the whole preemption as a spin of CPU time did. Such a slice (4 to
   16 ms on a busy machine) stays under check's 5 % cutoff of the run's
   exclusive time (about 420 ms), where with 2 ms functions it was 10 % and
   more. */
#include <stdlib.h>
#include <time.h>

__attribute__((no_instrument_function)) static void spin(double ms)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6 < ms);
}

static int slow;

#define WORK(k)                                                                                    \
	void work_##k(void);                                                                       \
	void work_##k(void)                                                                        \
	{                                                                                          \
		spin(slow == (k) ? 200.0 : 20.0);                                                  \
	}
WORK(1)
WORK(2)
WORK(3)
WORK(4)
WORK(5)
WORK(6)
WORK(7)
WORK(8)
WORK(9)
WORK(10)
WORK(11)
WORK(12)

int main(int argc, char **argv)
{
	void (*const all[])(void) = { work_1, work_2, work_3, work_4,  work_5,	work_6,
				      work_7, work_8, work_9, work_10, work_11, work_12 };

	slow = argc > 1 ? atoi(argv[1]) : 0;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		all[i]();
	return 0;
}
