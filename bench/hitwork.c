/* hitwork N: calls hit() N times; the ebpf trace benchmark probes hit(). Built
   three ways (bench/meson.build): hit() starting with push %rbp, which the
   kernel emulates at a uprobe; with endbr64 (-fcf-protection) before it; or,
   without frame pointers, with an instruction the kernel single-steps. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int hit(int x);
__attribute__((noinline)) int hit(int x)
{
	volatile int v = x; /* a stack slot: with frame pointers, a frame */

	return v + 1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000, i;
	int x = 0;

	for (i = 0; i < n; i++)
		x = hit(x);
	printf("%d\n", x);
	return 0;
}
