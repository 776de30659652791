/*
 * callwork.c - the trace benchmark's workload: ITER rounds of a small call
 * tree (a recursive walk and leaf calls), built with -finstrument-functions,
 * so that the instrumentation hooks dominate. Prints the number of calls it
 * made, which the benchmark divides the overhead by.
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void leaf(unsigned long i)
{
	sink += i;
}

__attribute__((noinline)) static unsigned long walk(unsigned depth)
{
	leaf(depth);
	return depth ? walk(depth - 1) + 1 : 0;
}

int main(int argc, char **argv)
{
	unsigned long iter = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000, i, calls = 1;

	for (i = 0; i < iter; i++)
		calls += 2 * (walk(7) + 1); /* 8 walk calls, 8 leaf calls */
	printf("%lu\n", calls);
	return 0;
}
