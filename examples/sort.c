/*
 * sort.c - the bundled example: sort N pseudo-random integers with a merge sort
 * and print a checksum, so `make run` has real work to profile. Built as
 * sort-traced (SONDE_TRACED), each merge_sort call tells the trace collector
 * the size it sorts (sonde_trace_size), and the time-per-size models of
 * `sonde postprocess ... regression` fit a real curve.
 *
 * usage: sort [N]   (default 100000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef SONDE_TRACED
#include <sonde/trace.h>
#else
#define sonde_trace_size(n) ((void)(n))
#endif

static void merge_sort(unsigned *a, unsigned *tmp, size_t n)
{
	size_t mid = n / 2, i = 0, j = mid, k = 0;

	sonde_trace_size(n);
	if (n < 2)
		return;
	merge_sort(a, tmp, mid);
	merge_sort(a + mid, tmp, n - mid);
	while (i < mid && j < n)
		tmp[k++] = a[i] <= a[j] ? a[i++] : a[j++];
	while (i < mid)
		tmp[k++] = a[i++];
	while (j < n)
		tmp[k++] = a[j++];
	memcpy(a, tmp, n * sizeof(*a));
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000, i;
	unsigned *a = malloc(n * sizeof(*a)), *tmp = malloc(n * sizeof(*tmp)), x = 2463534242u;
	unsigned long long sum = 0;

	if (!a || !tmp) {
		fprintf(stderr, "sort: out of memory\n");
		return 1;
	}
	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		a[i] = x;
	}
	merge_sort(a, tmp, n);
	for (i = 0; i < n; i++)
		sum = sum * 31 + a[i];
	printf("sorted %zu integers, checksum %016llx\n", n, sum);
	free(a);
	free(tmp);
	return 0;
}
