/*
 * daemonwork.c OUT [WAIT_S] [CALLS] - a daemon's work after its tool is gone:
 * the program forks and exits at once; the child, in a session of its own,
 * waits WAIT_S seconds (1), then makes CALLS calls of a small function
 * (20 000 000) and writes the seconds they took to OUT. Built with
 * -finstrument-functions: under a tracer every call enters its hooks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static long step(long x)
{
	return x * 3 + 1;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long i, s = 0, n = argc > 3 ? atol(argv[3]) : 20000000;
	unsigned wait_s = argc > 2 ? (unsigned)atoi(argv[2]) : 1;
	double t0;
	FILE *o;

	if (argc < 2)
		return 2;
	if (fork() != 0)
		return 0;
	setsid();
	sleep(wait_s);
	t0 = now();
	for (i = 0; i < n; i++)
		s += step(i);
	o = fopen(argv[1], "w");
	if (!o)
		return 1;
	fprintf(o, "%.0f %ld\n", (now() - t0) * 1e9, s & 1);
	return fclose(o) ? 1 : 0;
}
