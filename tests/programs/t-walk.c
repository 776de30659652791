/* t-walk R D: R walks, each a recursion D + 1 calls deep that calls leaf()
   at every level: (D + 1) * R calls of walk and of leaf. With walk left out
   (--exclude), every leaf is main's callee, in one context. */
#include <stdlib.h>

volatile unsigned long sink;

void leaf(void);
void leaf(void)
{
	sink++;
}

void walk(int d);
void walk(int d)
{
	leaf();
	if (d > 0)
		walk(d - 1);
}

int main(int argc, char **argv)
{
	int r = argc > 1 ? atoi(argv[1]) : 100, d = argc > 2 ? atoi(argv[2]) : 4;

	for (int i = 0; i < r; i++)
		walk(d);
	return 0;
}
