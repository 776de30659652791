/*
 * memsample.h - sampled allocations: what they stand for, per function and per
 * NUMA node, from events a runtime hands over (the Python CPU collector's
 * allocator hook, in process and through `sonde collect python --memory`).
 *
 * A runtime samples allocations by bytes (a sample about every `interval`
 * bytes, the gaps drawn from an exponential distribution), so an allocation
 * of s bytes is sampled with probability 1 - exp(-s / interval) and stands for
 * s divided by that (its weight): sums of weights estimate bytes without bias.
 *
 * Ownership: __new gives an aggregate that __free releases; it borrows nothing.
 */
#ifndef SONDE_MEMSAMPLE_H
#define SONDE_MEMSAMPLE_H

#include <stdint.h>
#include <jansson.h>

enum sonde_memsample_kind {
	SONDE_MEMSAMPLE_ALLOC = 1, /* a sampled allocation */
	SONDE_MEMSAMPLE_FREE,	   /* the free of a sampled allocation */
	SONDE_MEMSAMPLE_LIVE,	   /* a sampled allocation still live at the end: its node now */
};

struct sonde_memsample_event {
	uint32_t kind, tid;
	int32_t node;	  /* the NUMA node of the block's page when read; -1: not known */
	int32_t cpu_node; /* ALLOC: the node of the CPU that allocated; -1: not known */
	uint64_t ts_ns;
	uint64_t ptr, size;	     /* ALLOC: bytes asked for */
	double weight;		     /* ALLOC: bytes the sample stands for */
	const char *function, *file; /* ALLOC: the code that allocated (NULL: none) */
	uint64_t line;
};

struct sonde_memsample;

/* interval: the mean bytes between samples. NULL with errno on failure. */
struct sonde_memsample *sonde_memsample__new(uint64_t interval);
void sonde_memsample__free(struct sonde_memsample *m);
/* One event, in the order they happened. 0 or -ENOMEM. */
int sonde_memsample__add(struct sonde_memsample *m, const struct sonde_memsample_event *e);
/*
 * The summary (stats.trace.memory): interval, samples, estimated bytes, per
 * function; numa: the machine's nodes ({nodes: [...]}, stolen) or a reason it
 * could not be read ({not_supported: ...}), or NULL when not asked for.
 */
json_t *sonde_memsample__json(const struct sonde_memsample *m, json_t *numa);

#endif
