/*
 * grow.h - grow a zero-filled array to hold at least need elements (doubling).
 * Internal to libsonde.
 */
#ifndef SONDE_GROW_H
#define SONDE_GROW_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Arrays from this size on are asked for transparent huge pages. */
#define SONDE_HUGE_FROM (4u << 20)

/*
 * Ask for transparent huge pages on the 2 MiB-aligned part of [p, p + bytes)
 * (honoured where THP is "always" or "madvise"; a no-op where "never"). On a
 * virtual machine with shadow page tables the first touch of a 4 KiB page
 * costs ~10 us, that of a 2 MiB page hardly more: a 16 MiB array filled page
 * by page costs 40 ms there, on huge pages under 1 ms. Only for memory that
 * is filled densely: a huge page is taken whole.
 */
#define SONDE_HUGE_PAGE ((size_t)2 << 20)

static inline void sonde_hint_huge(void *p, size_t bytes)
{
	const uintptr_t huge = SONDE_HUGE_PAGE;
	uintptr_t from = ((uintptr_t)p + huge - 1) & ~(huge - 1),
		  to = ((uintptr_t)p + bytes) & ~(huge - 1);

	if (to > from)
		madvise((void *)from, to - from, MADV_HUGEPAGE);
}

/*
 * A buffer of at least bytes, filled densely: from a huge page's size on,
 * whole huge pages (aligned, rounded up) asked for as such; below, malloc's.
 * free() it. NULL when out of memory.
 */
static inline void *sonde_alloc_huge(size_t bytes)
{
	size_t len = (bytes + SONDE_HUGE_PAGE - 1) & ~(SONDE_HUGE_PAGE - 1);
	void *p;

	if (bytes < SONDE_HUGE_PAGE)
		return malloc(bytes);
	p = aligned_alloc(SONDE_HUGE_PAGE, len);
	if (p)
		sonde_hint_huge(p, len);
	return p;
}

static __attribute__((noinline, unused)) int sonde_grow__more(void **p, size_t *cap, size_t need,
							      size_t size)
{
	size_t c = *cap ? *cap : 16;
	void *n;

	while (c < need)
		c *= 2;
	n = realloc(*p, c * size);
	if (!n)
		return -ENOMEM;
	if (c * size >= SONDE_HUGE_FROM)
		sonde_hint_huge(n, c * size);
	memset((char *)n + *cap * size, 0, (c - *cap) * size);
	*p = n;
	*cap = c;
	return 0;
}

/* 0, or -ENOMEM (the array as it was). The common case, room enough, inline. */
static inline int sonde_grow(void **p, size_t *cap, size_t need, size_t size)
{
	return need <= *cap ? 0 : sonde_grow__more(p, cap, need, size);
}

#endif
