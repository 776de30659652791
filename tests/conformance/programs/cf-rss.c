/*
 * cf-rss BYTES: allocate BYTES, touch every page, free them: a known peak
 * resident set for GNU time and sonde to measure (built dynamic and static).
 */
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 0;
	volatile char *p = n ? malloc(n) : NULL;

	if (n && !p)
		return 1;
	if (p)
		memset((char *)p, 1, n);
	free((char *)p);
	return 0;
}
