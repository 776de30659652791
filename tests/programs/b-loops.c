/* b-loops N M K: loops of known shapes, each body counting its own iterations
 * by the line it is on; prints "LINE COUNT" per loop line. The bounds
 * collector analyses this source, and the test checks that every bound it
 * gives is at least the count this prints (exactly it, for counted loops). */
#include <stdio.h>
#include <stdlib.h>

struct node {
	struct node *next;
};

static long hits[512];
#define hit() (hits[__LINE__]++)

/* Each loop and its hit() on one line: the loop's line is what the counts are keyed by. */
/* clang-format off */

static void counted(int n)
{
	for (int i = 0; i < n; i++) hit();
}

static void down(int n, int k)
{
	for (int i = n; i > k; i -= 2) hit();
}

static void nested(int n, int m)
{
	for (int i = 0; i < n; i++) for (int j = 0; j <= m; j++) hit();
}

static void triangle(int n)
{
	for (int i = 0; i < n; i++) for (int j = i; j < n; j++) hit();
}

static void sequence(int n)
{
	for (int i = 0; i < n; i++) hit();
	for (int j = 1; j < n; j++) hit();
}

static void steps(int n)
{
	for (int i = 3; i <= n; i += 3) hit();
}

static void bubble(int n)
{
	for (int i = 0; i < n; i++) for (int j = 0; j + 1 < n - i; j++) hit();
}

static void countdown(int k)
{
	while (k > 0) { hit(); k--; }
}

static int walk(struct node *p)
{
	int c = 0;

	for (; p; p = p->next) { hit(); c++; }
	return c;
}

static void partition(int *a, int n)
{
	int lo = 0, hi = n - 1;

	while (lo < hi) { hit(); if (a[lo] < 0) lo++; else hi--; }
}

static void flow(int n)
{
	int lim = n + 2, c = 0;

	for (int i = 0; i < lim; i++) { hit(); c += 2; }
	while (c > 0) { hit(); c -= 1; }
}

static void amortized(int n)
{
	int pending = 0;

	for (int i = 0; i < n; i++) { pending += 1; if (i % 3 == 0)
		while (pending > 0) { hit(); pending--; } }
}

/* clang-format on */

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10, m = argc > 2 ? atoi(argv[2]) : 5;
	int k = argc > 3 ? atoi(argv[3]) : 2, i;
	struct node nodes[8];
	int *a = calloc((size_t)(n > 0 ? n : 1), sizeof(*a));

	for (i = 0; i < 8; i++)
		nodes[i].next = i + 1 < 8 ? &nodes[i + 1] : NULL;
	counted(n);
	down(n, k);
	nested(n, m);
	triangle(n);
	sequence(n);
	steps(n);
	bubble(n);
	countdown(k);
	walk(nodes);
	partition(a, n);
	flow(n);
	amortized(n);
	for (i = 0; i < 512; i++)
		if (hits[i])
			printf("%d %ld\n", i, hits[i]);
	free(a);
	return 0;
}
