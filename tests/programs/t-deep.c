/* t-deep N: one recursion N calls deep (default 100 000), for views that must
   not recurse, or print, as deep as the data. */
#include <stdlib.h>

volatile unsigned long sink;

unsigned long down(unsigned n)
{
	return n ? down(n - 1) + 1 : sink;
}

int main(int argc, char **argv)
{
	sink = down(argc > 1 ? (unsigned)atoi(argv[1]) : 100000);
	return 0;
}
