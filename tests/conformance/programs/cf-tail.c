/*
 * cf-tail.c - for the ebpf engine at -O2: sibling (tail) calls, and functions
 * with .cold parts that run when argv[2] is given.
 */
#include <stdio.h>
#include <stdlib.h>

volatile int sink;
int shift;

__attribute__((cold, noinline)) void complain(const char *what, int x)
{
	fprintf(stderr, "%s %d\n", what, x);
}

__attribute__((noinline)) int leaf(int x)
{
	sink += x;
	return x * 3;
}

__attribute__((noinline)) int callee(int x)
{
	sink++;
	return leaf(x) + leaf(x + 1);
}

__attribute__((noinline)) int tail(int x)
{
	sink += 2;
	return callee(x + 1); /* a sibling call at -O2 */
}

__attribute__((noinline)) int check(int x)
{
	if (x < 0) {
		complain("negative", x);
		sink = 0;
		x = -x;
	}
	sink += x;
	return x + 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5, s = 0, i;

	shift = argc > 2;
	for (i = 0; i < n; i++) {
		s += tail(i);
		s += check(i - shift);
	}
	printf("%d\n", s);
	return 0;
}
