/*
 * timer.c - the region timer's C API (include/sonde/timer.h): a program times
 * its own steps, nested, on four threads, prints their statistics and writes
 * a profile that `sonde show`, `sonde check` and `sonde report` read.
 *
 * Usage: timer [STEPS [PROFILE]]   (default 50 steps, no profile written)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/timer.h>

static struct sonde_timer *timer;
static long steps = 50;

/* a little work that the compiler cannot drop */
static volatile double sink;

static void work(long n)
{
	double x = 0;
	long i;

	for (i = 0; i < n; i++)
		x += (double)i * 0.5;
	sink = x;
}

static void *worker(void *arg)
{
	long i, id = sonde_timer__region(timer, "solve"); /* the hot-loop spelling */

	(void)arg;
	for (i = 0; i < steps; i++) {
		sonde_timer__begin(timer, "step");
		sonde_timer__enter(timer, id);
		work(200000);
		sonde_timer__leave(timer, id);
		work(50000);
		sonde_timer__end(timer, "step");
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[4];
	struct sonde_summary s;
	size_t i;
	int err;

	if (argc > 1)
		steps = atol(argv[1]);
	timer = sonde_timer__new(2); /* the first 2 samples of each region are warm-up */
	if (!timer || steps < 3) {
		fprintf(stderr, "timer: no memory, or fewer than 3 steps\n");
		return 1;
	}
	for (i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < sonde_timer__count(timer); i++) {
		const char *name = sonde_timer__name(timer, i);

		if (sonde_timer__stats(timer, name, &s) == 0)
			printf("%-6s n=%zu mean=%.3f ms median=%.3f ms min=%.3f ms max=%.3f ms\n",
			       name, s.n, s.mean / 1e6, s.median / 1e6, s.min / 1e6, s.max / 1e6);
	}
	err = argc > 2 ? sonde_timer__save(timer, argv[2]) : 0;
	if (err)
		fprintf(stderr, "timer: cannot write %s: %s\n", argv[2], strerror(-err));
	sonde_timer__free(timer);
	return err ? 1 : 0;
}
