/*
 * callwork.c - the trace benchmark's workload: ITER rounds of a small call
 * tree (a recursive walk DEPTH + 1 calls deep, 8 by default, with a leaf call
 * at each level), built with -finstrument-functions, so that the
 * instrumentation hooks dominate. Prints the number of calls it made, which
 * the benchmark divides the overhead by. Usage: callwork [ITER [DEPTH]]
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
	unsigned depth = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 7;

	for (i = 0; i < iter; i++)
		calls += 2 * (walk(depth) + 1); /* depth + 1 walk calls, as many leaf calls */
	printf("%lu\n", calls);
	return 0;
}
