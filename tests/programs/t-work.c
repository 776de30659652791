/* Trace collector target for sonde check's exclusive-time-outliers: twelve
   functions that each spin for about 2 ms of CPU, work_K (the argument) for
   ten times as long. Two runs differ in one function's exclusive time. */
#include <stdlib.h>
#include <time.h>

__attribute__((no_instrument_function)) static void spin(double ms)
{
	struct timespec a, b;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	while ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6 < ms);
}

static int slow;

#define WORK(k)                                                                                    \
	void work_##k(void);                                                                       \
	void work_##k(void)                                                                        \
	{                                                                                          \
		spin(slow == (k) ? 20.0 : 2.0);                                                    \
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
