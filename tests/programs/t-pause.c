/* Trace collector target: N calls of leaf() (the argument), then it sleeps
   for MS milliseconds (the second) before main returns, so that a follower of
   the log has the calls to itself while the program still runs. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned sink;

void leaf(unsigned i);
void leaf(unsigned i)
{
	sink += i;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
	long ms = argc > 2 ? strtol(argv[2], NULL, 10) : 1000;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	unsigned long i;

	for (i = 0; i < n; i++)
		leaf((unsigned)i);
	nanosleep(&ts, NULL);
	return 0;
}
