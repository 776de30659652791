/*
 * cf-ownmalloc.c - a program with its own allocator, instrumented like the
 * rest: a bump arena until a pre-init function (.preinit_array) has found
 * libc's functions, then those. ld.so runs pre-init functions before any
 * library's constructor, libc's and a preloaded tracer's included, so the
 * first calls come before any tracer is ready, and before getenv works.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void (*next_free)(void *);
static _Alignas(16) char arena[1 << 20];
static size_t arena_used;

static int in_arena(const void *p)
{
	return (const char *)p >= arena && (const char *)p < arena + sizeof(arena);
}

void *malloc(size_t n)
{
	size_t *h;

	if (next_malloc)
		return next_malloc(n);
	n = (n + 15) & ~(size_t)15;
	if (n > sizeof(arena) - 16 - arena_used)
		return NULL;
	h = (size_t *)(void *)(arena + arena_used);
	*h = n; /* the size, 16 bytes before the block */
	arena_used += n + 16;
	return (char *)h + 16;
}

void free(void *p)
{
	if (p && !in_arena(p) && next_free)
		next_free(p);
}

/* not malloc then memset: gcc -O2 makes that a call of calloc, this one */
void *calloc(size_t k, size_t n)
{
	if (n && k > SIZE_MAX / n)
		return NULL;
	if (next_calloc)
		return next_calloc(k, n);
	return malloc(k * n); /* the arena is never reused: still zero */
}

void *realloc(void *p, size_t n)
{
	void *q;
	size_t old;

	if (!p)
		return malloc(n);
	if (!in_arena(p))
		return next_realloc(p, n);
	old = *(size_t *)(void *)((char *)p - 16);
	q = malloc(n);
	if (q)
		memcpy(q, p, old < n ? old : n);
	return q;
}

static void find_libc(void)
{
	next_malloc = dlsym(RTLD_NEXT, "malloc");
	next_calloc = dlsym(RTLD_NEXT, "calloc");
	next_realloc = dlsym(RTLD_NEXT, "realloc");
	next_free = dlsym(RTLD_NEXT, "free");
}

/* before every library's constructor, libc's and a preloaded runtime's too */
__attribute__((section(".preinit_array"),
	       used)) static void (*const preinit[])(void) = { find_libc };

struct node {
	struct node *next;
	long v;
};

static __attribute__((noinline)) struct node *build(int n)
{
	struct node *head = NULL;

	for (int i = 0; i < n; i++) {
		struct node *x = malloc(sizeof(*x));

		x->next = head;
		x->v = i;
		head = x;
	}
	return head;
}

static __attribute__((noinline)) long drop(struct node *x)
{
	long s = 0;

	while (x) {
		struct node *next = x->next;

		s += x->v;
		free(x);
		x = next;
	}
	return s;
}

int main(void)
{
	long s = 0;

	for (int k = 0; k < 3; k++)
		s += drop(build(10));
	printf("%ld\n", s);
	return 0;
}
