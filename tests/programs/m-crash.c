/* m-crash.c - 50 allocations of 123 B, then a segmentation fault. */
#include <signal.h>
#include <stdlib.h>

static void *keep[50];

int main(void)
{
	int i;

	for (i = 0; i < 50; i++)
		keep[i] = malloc(123); /* CRASH-ALLOC */
	raise(SIGSEGV);
	return 0;
}
