/* m-leaf.c - leaks two blocks of 333 B at one line. */
#include <stdlib.h>

static void *keep[2];

int main(void)
{
	int i;

	for (i = 0; i < 2; i++)
		keep[i] = malloc(333); /* LEAF */
	keep[0] = keep[1] = NULL;
	return 0;
}
