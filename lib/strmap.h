/*
 * strmap.h - a map from strings to 64-bit values, for libsonde's insides:
 * open addressing, linear probing, each key copied once into one growing
 * block, each slot keeping its key's hash so that a probe rarely reads a
 * key. Views and postprocessors group a profile's resources by name with it
 * (a JSON object doing that job costs a few hundred ns a key at a million).
 * Keys are byte strings of a given length (NUL bytes allowed). No removal.
 */
#ifndef SONDE_STRMAP_H
#define SONDE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct sonde_strmap {
	struct sonde_strmap_slot {
		uint64_t hash;
		size_t off; /* of the key in keys; SIZE_MAX: empty */
		size_t len;
		uint64_t val;
	} * slot;
	size_t cap, n; /* cap: a power of two, or 0 */
	char *keys;
	size_t keys_len, keys_cap;
};

#define SONDE_STRMAP_INIT                                                                          \
	{                                                                                          \
		0                                                                                  \
	}

/* The hash of n bytes at s, 8 at a time (also the JSON loader's string cache's). */
static inline uint64_t sonde_strmap__hash(const char *s, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (n * 0xff51afd7ed558ccdull), w;

	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, s, n);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 29;
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 32);
}

/*
 * The value of key, added as 0 when absent (*existed says which; may be
 * NULL). Valid until the next addition. NULL: no memory.
 */
uint64_t *sonde_strmap__upsert(struct sonde_strmap *m, const char *key, size_t len, bool *existed);
/* The value of key, or NULL when absent. */
uint64_t *sonde_strmap__get(const struct sonde_strmap *m, const char *key, size_t len);
/* The same for a NUL-terminated key. */
uint64_t *sonde_strmap__upserts(struct sonde_strmap *m, const char *key, bool *existed);
uint64_t *sonde_strmap__gets(const struct sonde_strmap *m, const char *key);
void sonde_strmap__release(struct sonde_strmap *m);

#endif
