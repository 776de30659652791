/*
 * cf-alloc.c - allocation patterns whose counts, temporaries, leaks and peak
 * are known: pairs freed at once, blocks freed after other allocations, a
 * realloc chain, calloc, aligned blocks, and two leaks.
 */
#include <stdlib.h>
#include <string.h>

volatile long sink;

__attribute__((noinline)) void pairs(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		char *p = malloc(100);

		p[0] = 1;
		sink += p[0];
		free(p); /* temporary */
	}
}

__attribute__((noinline)) void batch(int n)
{
	char *b[64];
	int i;

	for (i = 0; i < n && i < 64; i++)
		b[i] = malloc(200 + (size_t)i);
	for (i = n < 64 ? n - 1 : 63; i >= 0; i--)
		free(b[i]); /* only the last one allocated is temporary */
}

__attribute__((noinline)) void grow(int n)
{
	char *p = NULL;
	int i;

	for (i = 1; i <= n; i++) {
		p = realloc(p, (size_t)i * 1000);
		memset(p, 0, 10);
	}
	free(p);
}

__attribute__((noinline)) void others(void)
{
	void *a = calloc(10, 100), *b = NULL;

	if (posix_memalign(&b, 64, 4096) == 0)
		free(b);
	free(a);
}

__attribute__((noinline)) void *leaky(size_t n)
{
	char *p = malloc(n);

	memset(p, 1, n);
	return p;
}

int main(void)
{
	void *big;

	pairs(50);
	batch(20);
	grow(30);
	others();
	big = malloc(1 << 20); /* the peak */
	memset(big, 0, 1 << 20);
	free(big);
	sink += (long)leaky(123) + (long)leaky(4567); /* two leaks */
	return 0;
}
