/* m-many N: N pairs of malloc(32) and free, as fast as it can (default 2 000 000). */
#include <stdlib.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000, i;
	volatile char *p;

	for (i = 0; i < n; i++) {
		p = malloc(32);
		p[0] = 1;
		free((void *)p);
	}
	return 0;
}
