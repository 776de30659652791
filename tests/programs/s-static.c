/* s-static.c - built with -static: the memory collector must refuse it. */
#include <stdlib.h>

int main(void)
{
	free(malloc(1));
	return 0;
}
