/*
 * h-daemon OUT N [LINGER_MS [STAY_MS]]: a target that outlives its recording. It
 * forks a daemon (setsid, a second fork: out of the target's process group, as
 * real daemons go) and exits after LINGER_MS (default 0). The daemon makes N
 * allocations in N instrumented calls, writes how long they took, in ms, to OUT,
 * and ends STAY_MS later (default 0). Once sonde stops reading, its runtime must get out of the
 * way: the daemon then runs at about its own speed instead of waiting on a reader that will never
 * come. Built with -finstrument-functions: trace and memory both record it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;

void work(long i);

__attribute__((noinline)) void work(long i)
{
	char *p = malloc((size_t)(i % 256) + 1);

	p[0] = (char)i;
	sink += (unsigned long)p[0];
	free(p);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 1000000, i;
	long linger = argc > 3 ? atol(argv[3]) : 0, stay = argc > 4 ? atol(argv[4]) : 0;
	char tmp[4096];
	double t0;
	FILE *f;

	if (argc < 3)
		return 2;
	if (fork() > 0) {
		usleep((useconds_t)linger * 1000);
		return 0;
	}
	setsid();
	if (fork() > 0)
		_exit(0);
	t0 = now_ms();
	for (i = 0; i < n; i++)
		work(i);
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	f = fopen(tmp, "w");
	if (!f)
		return 1;
	fprintf(f, "%.0f\n", now_ms() - t0);
	fclose(f);
	rename(tmp, argv[1]);
	usleep((useconds_t)stay * 1000);
	return 0;
}
