/*
 * samplework.c - the sampling benchmark's workload: a fixed amount of work in
 * a call tree a few levels deep (recursion and loops), about a second; prints
 * its own elapsed time in ns, so a profiler's cost on the target is seen apart
 * from the profiler's own start and end. Argument: rounds (120).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long leaf(unsigned long x)
{
	for (int i = 0; i < 200; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

__attribute__((noinline)) static unsigned long tree(int depth, unsigned long x)
{
	if (!depth)
		return leaf(x);
	return tree(depth - 1, x) ^ tree(depth - 1, x + 1);
}

__attribute__((noinline)) static unsigned long round_(int r)
{
	unsigned long s = 0;

	for (int i = 0; i < 40; i++)
		s += tree(10, (unsigned long)(r * 40 + i));
	return s;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 120;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int r = 0; r < rounds; r++)
		sink += round_(r);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec));
	return 0;
}
