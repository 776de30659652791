/* Trace collector target: work(n) for n = 1..N (argv[1], default 20000), REPS
   calls each (argv[2], default 1), each reporting n through sonde_trace_size()
   and looping n times: a linear model over the whole range of sizes. */
#include <stdlib.h>
#include <sonde/trace.h>

volatile unsigned long sink;

void work(unsigned n)
{
	sonde_trace_size(n);
	for (unsigned i = 0; i < n; i++)
		sink += i;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 20000;
	unsigned reps = argc > 2 ? (unsigned)atoi(argv[2]) : 1;

	for (unsigned i = 1; i <= n; i++)
		for (unsigned r = 0; r < reps; r++)
			work(i);
	return 0;
}
