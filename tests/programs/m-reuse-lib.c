/* m-reuse-lib: one of two libraries m-reuse loads in turn (FN allocates SIZE bytes). */
#include <stdlib.h>

void *FN(void)
{
	return malloc(SIZE);
}
