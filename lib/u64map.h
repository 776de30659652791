/*
 * u64map.h - a map from 64-bit keys to 64-bit values, for libsonde's insides:
 * open addressing, linear probing, deletion by backward shift (no tombstones,
 * so a map with as many frees as allocations stays fast), at most half full:
 * at three quarters, the memory replay's probes and shifts through the live
 * blocks' map took about a fifth more of its time (16 to 32 bytes a key).
 * Every key works: UINT64_MAX, the mark of an empty slot, lives beside the
 * table (has_max, max_v), so keys that come from a target cannot break the
 * map. Code that walks k[] directly does not see that one key.
 */
#ifndef SONDE_U64MAP_H
#define SONDE_U64MAP_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "grow.h"

#define U64MAP_EMPTY UINT64_MAX

struct u64map {
	uint64_t *k, *v;
	size_t cap, n; /* cap: a power of two, or 0; n counts the key UINT64_MAX too */
	bool has_max;  /* the key UINT64_MAX is present, with value max_v */
	uint64_t max_v;
};

static inline size_t u64map__slot(const struct u64map *m, uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (size_t)key & (m->cap - 1);
}

static inline void u64map__release(struct u64map *m)
{
	free(m->k);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

/* Empty the map, keeping its table. */
static inline void u64map__clear(struct u64map *m)
{
	if (m->cap)
		memset(m->k, 0xff, m->cap * sizeof(*m->k));
	m->n = 0;
	m->has_max = false;
}

static inline int u64map__put(struct u64map *m, uint64_t key, uint64_t val);

static inline int u64map__grow(struct u64map *m)
{
	struct u64map big = { 0 };
	size_t i;

	big.cap = m->cap ? m->cap * 2 : 1024;
	big.has_max = m->has_max;
	big.max_v = m->max_v;
	big.n = m->has_max;
	big.k = malloc(big.cap * sizeof(*big.k));
	big.v = malloc(big.cap * sizeof(*big.v));
	if (!big.k || !big.v) {
		free(big.k);
		free(big.v);
		return -ENOMEM;
	}
	memset(big.k, 0xff, big.cap * sizeof(*big.k));
	for (i = 0; i < m->cap; i++)
		if (m->k[i] != U64MAP_EMPTY)
			u64map__put(&big, m->k[i], m->v[i]);
	u64map__release(m);
	*m = big;
	return 0;
}

/* Insert or replace. Returns 0 or -ENOMEM. */
static inline int u64map__put(struct u64map *m, uint64_t key, uint64_t val)
{
	size_t i;

	if (key == U64MAP_EMPTY) {
		m->n += !m->has_max;
		m->has_max = true;
		m->max_v = val;
		return 0;
	}
	if ((m->n + 1) * 2 > m->cap && u64map__grow(m))
		return -ENOMEM;
	for (i = u64map__slot(m, key); m->k[i] != U64MAP_EMPTY; i = (i + 1) & (m->cap - 1))
		if (m->k[i] == key) {
			m->v[i] = val;
			return 0;
		}
	m->k[i] = key;
	m->v[i] = val;
	m->n++;
	return 0;
}

/*
 * The value of key, inserted (value unset) when absent: *existed says which.
 * The pointer is valid until the map is next changed. NULL: no memory.
 */
static inline uint64_t *u64map__upsert(struct u64map *m, uint64_t key, bool *existed)
{
	size_t i;

	if (key == U64MAP_EMPTY) {
		*existed = m->has_max;
		m->n += !m->has_max;
		m->has_max = true;
		return &m->max_v;
	}
	if ((m->n + 1) * 2 > m->cap && u64map__grow(m))
		return NULL;
	for (i = u64map__slot(m, key); m->k[i] != U64MAP_EMPTY; i = (i + 1) & (m->cap - 1))
		if (m->k[i] == key) {
			*existed = true;
			return &m->v[i];
		}
	*existed = false;
	m->k[i] = key;
	m->n++;
	return &m->v[i];
}

static inline bool u64map__get(const struct u64map *m, uint64_t key, uint64_t *val)
{
	size_t i;

	if (key == U64MAP_EMPTY) {
		if (m->has_max && val)
			*val = m->max_v;
		return m->has_max;
	}
	if (!m->cap)
		return false;
	for (i = u64map__slot(m, key); m->k[i] != U64MAP_EMPTY; i = (i + 1) & (m->cap - 1))
		if (m->k[i] == key) {
			if (val)
				*val = m->v[i];
			return true;
		}
	return false;
}

/* Remove key; its value goes to *val. Returns false when absent. */
static inline bool u64map__take(struct u64map *m, uint64_t key, uint64_t *val)
{
	size_t i, j, mask = m->cap - 1;

	if (key == U64MAP_EMPTY) {
		if (!m->has_max)
			return false;
		if (val)
			*val = m->max_v;
		m->has_max = false;
		m->n--;
		return true;
	}
	if (!m->cap)
		return false;
	for (i = u64map__slot(m, key); m->k[i] != key; i = (i + 1) & mask)
		if (m->k[i] == U64MAP_EMPTY)
			return false;
	if (val)
		*val = m->v[i];
	/* backward shift: pull later members of the cluster into the hole */
	for (j = (i + 1) & mask; m->k[j] != U64MAP_EMPTY; j = (j + 1) & mask) {
		size_t home = u64map__slot(m, m->k[j]);

		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->k[i] = m->k[j];
			m->v[i] = m->v[j];
			i = j;
		}
	}
	m->k[i] = U64MAP_EMPTY;
	m->n--;
	return true;
}

/*
 * An array of structs indexed by key through m: *pos is key's element,
 * appended zero-filled (and m told) when key is new. 0 or -ENOMEM.
 */
static inline int u64map__element(struct u64map *m, uint64_t key, void **arr, size_t *n,
				  size_t *cap, size_t size, size_t *pos)
{
	uint64_t i;

	if (u64map__get(m, key, &i)) {
		*pos = (size_t)i;
		return 0;
	}
	if (sonde_grow(arr, cap, *n + 1, size) || u64map__put(m, key, *n))
		return -ENOMEM;
	memset((char *)*arr + *n * size, 0, size);
	*pos = (*n)++;
	return 0;
}

#endif
