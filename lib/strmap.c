/*
 * strmap.c - strings to 64-bit values (see strmap.h).
 */
#include <stdlib.h>
#include <string.h>
#include "grow.h"
#include "strmap.h"

#define EMPTY SIZE_MAX

static struct sonde_strmap_slot *find(const struct sonde_strmap *m, const char *key, size_t len,
				      uint64_t h)
{
	size_t i, mask = m->cap - 1;

	for (i = (size_t)h & mask; m->slot[i].off != EMPTY; i = (i + 1) & mask) {
		const struct sonde_strmap_slot *s = &m->slot[i];

		if (s->hash == h && s->len == len && !memcmp(m->keys + s->off, key, len))
			return &m->slot[i];
	}
	return &m->slot[i];
}

static int grow_table(struct sonde_strmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64, i, j;
	struct sonde_strmap_slot *s = malloc(cap * sizeof(*s));

	if (!s)
		return -1;
	for (i = 0; i < cap; i++)
		s[i].off = EMPTY;
	for (i = 0; i < m->cap; i++) {
		if (m->slot[i].off == EMPTY)
			continue;
		for (j = (size_t)m->slot[i].hash & (cap - 1); s[j].off != EMPTY;
		     j = (j + 1) & (cap - 1))
			;
		s[j] = m->slot[i];
	}
	free(m->slot);
	m->slot = s;
	m->cap = cap;
	return 0;
}

uint64_t *sonde_strmap__get(const struct sonde_strmap *m, const char *key, size_t len)
{
	struct sonde_strmap_slot *s;

	if (!m->n)
		return NULL;
	s = find(m, key, len, sonde_strmap__hash(key, len));
	return s->off == EMPTY ? NULL : &s->val;
}

uint64_t *sonde_strmap__upsert(struct sonde_strmap *m, const char *key, size_t len, bool *existed)
{
	uint64_t h = sonde_strmap__hash(key, len);
	struct sonde_strmap_slot *s;

	if ((m->n + 1) * 4 > m->cap * 3 && grow_table(m))
		return NULL;
	s = find(m, key, len, h);
	if (existed)
		*existed = s->off != EMPTY;
	if (s->off != EMPTY)
		return &s->val;
	/* room for the key and a NUL, so that a key read back is a C string */
	if (sonde_grow((void **)&m->keys, &m->keys_cap, m->keys_len + len + 1, 1))
		return NULL;
	memcpy(m->keys + m->keys_len, key, len);
	m->keys[m->keys_len + len] = 0;
	*s = (struct sonde_strmap_slot){ h, m->keys_len, len, 0 };
	m->keys_len += len + 1;
	m->n++;
	return &s->val;
}

uint64_t *sonde_strmap__upserts(struct sonde_strmap *m, const char *key, bool *existed)
{
	return sonde_strmap__upsert(m, key, strlen(key), existed);
}

uint64_t *sonde_strmap__gets(const struct sonde_strmap *m, const char *key)
{
	return sonde_strmap__get(m, key, strlen(key));
}

void sonde_strmap__release(struct sonde_strmap *m)
{
	free(m->slot);
	free(m->keys);
	memset(m, 0, sizeof(*m));
}
