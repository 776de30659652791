/*
 * cf-inline.c - functions inlined into their callers at -O2. -finstrument-
 * functions still calls the hooks for them, with the caller's frame and return
 * address: middle() and inner() share host()'s frame, nested, and inner()
 * makes a real call.
 */
#include <stdio.h>

volatile long sink;

__attribute__((noinline)) void leaf(int i)
{
	sink += i;
}

static inline void inner(int i)
{
	sink += i;
	leaf(i);
}

static inline void middle(int i)
{
	inner(i);
	inner(i + 1);
}

__attribute__((noinline)) void host(int n)
{
	for (int i = 0; i < n; i++)
		middle(i);
}

int main(void)
{
	for (int k = 0; k < 20; k++)
		host(3);
	printf("%ld\n", sink);
	return 0;
}
