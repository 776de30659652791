/*
 * grow.h - grow a zero-filled array to hold at least need elements (doubling).
 * Internal to libsonde.
 */
#ifndef SONDE_GROW_H
#define SONDE_GROW_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
