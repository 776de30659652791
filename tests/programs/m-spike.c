/* m-spike: 20 000 pairs of malloc(32) and free, one block of 1 MiB allocated
   and freed at once, then 20 000 pairs more: the heap's peak lasts one event. */
#include <stdlib.h>
#include <string.h>

static void pairs(long n)
{
	volatile char *p;

	for (long i = 0; i < n; i++) {
		p = malloc(32);
		p[0] = 1;
		free((void *)p);
	}
}

char *volatile big; /* seen from outside: the pair is not optimised away */

int main(void)
{
	pairs(20000);
	big = malloc(1 << 20);
	if (big)
		memset(big, 1, 64);
	free(big);
	pairs(20000);
	return 0;
}
