/* s-spin: burn CPU for N million loop iterations and print the result. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long n = (argc > 1 ? atol(argv[1]) : 1) * 1000000L, i;
	volatile unsigned long x = 1;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	printf("%lu\n", (unsigned long)x);
	return 0;
}
