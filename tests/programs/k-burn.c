/* k-burn T S [CPU]: T threads each burn the CPU for S seconds of wall time;
 * with CPU, every thread is pinned to that one CPU (so they wait for it in
 * turn: each runs about S/T and waits the rest). */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

static double secs;
static int cpu = -1;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *burn(void *arg)
{
	volatile unsigned long x = 1;
	double end = now() + secs;
	int i;

	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	while (now() < end)
		for (i = 0; i < 10000; i++)
			x = x * 6364136223846793005UL + 1;
	return arg;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2, i;
	pthread_t *t;

	secs = argc > 2 ? atof(argv[2]) : 1;
	cpu = argc > 3 ? atoi(argv[3]) : -1;
	t = calloc((size_t)n, sizeof(*t));
	if (!t)
		return 1;
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, burn, NULL))
			return 1;
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
	return 0;
}
