/* m-many N [MS]: N pairs of malloc(32) and free, as fast as it can (default
   2 000 000), then a sleep of MS milliseconds (default none). */
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000, i;
	long ms = argc > 2 ? atol(argv[2]) : 0;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	volatile char *p;

	for (i = 0; i < n; i++) {
		p = malloc(32);
		p[0] = 1;
		free((void *)p);
	}
	if (ms > 0)
		nanosleep(&ts, NULL);
	return 0;
}
