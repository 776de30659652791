/*
 * memsample.c - sampled allocations, summed per function and per NUMA node
 * (see include/sonde/memsample.h).
 *
 * Every sampled block is kept (there is one about every `interval` bytes
 * allocated): its weight, the function that allocated it, the node its page
 * was on when allocated and when last read (its free, or the end), and the
 * node of the CPU that allocated it. A block counts for the node it was first
 * seen on; it *migrated* when it was seen on two nodes, and is *remote* when
 * its node is not its allocating CPU's.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/memsample.h>
#include "grow.h"
#include "u64map.h"

struct block {
	double weight;
	size_t func; /* index + 1 into funcs; 0: none */
	int32_t node0, node1, cpu_node;
	bool freed;
};

struct fsum {
	char *key; /* function \1 file \1 line */
	uint64_t samples;
	double bytes, live; /* live: of blocks never seen freed */
};

struct sonde_memsample {
	uint64_t interval;
	uint64_t allocs, frees, asked;
	double est, est_freed;
	struct block *b;
	size_t nb, capb;
	struct u64map live; /* ptr -> block + 1 */
	struct fsum *f;
	size_t nf, capf;
	json_t *findex; /* key -> index */
};

struct sonde_memsample *sonde_memsample__new(uint64_t interval)
{
	struct sonde_memsample *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->interval = interval;
	m->findex = json_object();
	if (!m->findex) {
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	return m;
}

void sonde_memsample__free(struct sonde_memsample *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->nf; i++)
		free(m->f[i].key);
	free(m->f);
	free(m->b);
	u64map__release(&m->live);
	json_decref(m->findex);
	free(m);
}

static int func_of(struct sonde_memsample *m, const struct sonde_memsample_event *e, size_t *out)
{
	char *key;
	json_t *i;

	*out = 0;
	if (!e->function)
		return 0;
	if (asprintf(&key, "%s\x01%s\x01%llu", e->function, e->file ? e->file : "",
		     (unsigned long long)e->line) < 0)
		return -ENOMEM;
	i = json_object_get(m->findex, key);
	if (i) {
		*out = (size_t)json_integer_value(i) + 1;
		free(key);
		return 0;
	}
	if (sonde_grow((void **)&m->f, &m->capf, m->nf + 1, sizeof(*m->f)) ||
	    json_object_set_new_nocheck(m->findex, key, json_integer((json_int_t)m->nf))) {
		free(key);
		return -ENOMEM;
	}
	m->f[m->nf] = (struct fsum){ key, 0, 0, 0 };
	*out = ++m->nf;
	return 0;
}

int sonde_memsample__add(struct sonde_memsample *m, const struct sonde_memsample_event *e)
{
	uint64_t v;
	struct block *b;
	size_t f;

	if (e->kind == SONDE_MEMSAMPLE_ALLOC) {
		if (func_of(m, e, &f) ||
		    sonde_grow((void **)&m->b, &m->capb, m->nb + 1, sizeof(*m->b)))
			return -ENOMEM;
		/* a block at an address sampled before and never seen freed: that one is gone */
		u64map__take(&m->live, e->ptr, &v);
		if (u64map__put(&m->live, e->ptr, m->nb + 1))
			return -ENOMEM;
		m->b[m->nb++] = (struct block){ e->weight, f, e->node, -1, e->cpu_node, false };
		m->allocs++;
		m->asked += e->size;
		m->est += e->weight;
		if (f) {
			m->f[f - 1].samples++;
			m->f[f - 1].bytes += e->weight;
		}
		return 0;
	}
	if (!u64map__get(&m->live, e->ptr, &v))
		return 0; /* not a sampled block's */
	b = &m->b[v - 1];
	if (e->node >= 0)
		b->node1 = e->node;
	if (e->kind == SONDE_MEMSAMPLE_FREE) {
		u64map__take(&m->live, e->ptr, &v);
		b->freed = true;
		m->frees++;
		m->est_freed += b->weight;
	}
	return 0;
}

static int by_bytes(const void *x, const void *y)
{
	const struct fsum *a = x, *b = y;

	return a->bytes < b->bytes ? 1 : a->bytes > b->bytes ? -1 : strcmp(a->key, b->key);
}

static json_t *numa_json(const struct sonde_memsample *m, json_t *numa)
{
	json_t *nodes = json_object_get(numa, "nodes"), *by = json_array(), *n;
	uint64_t unknown = 0, migrated = 0, remote = 0;
	size_t i, k;

	if (!by) {
		json_decref(numa);
		return NULL;
	}
	json_array_foreach(nodes, k, n)
	{
		json_int_t node = json_integer_value(n);
		uint64_t samples = 0;
		double bytes = 0;

		for (i = 0; i < m->nb; i++) {
			const struct block *b = &m->b[i];

			if ((b->node0 >= 0 ? b->node0 : b->node1) == node) {
				samples++;
				bytes += b->weight;
			}
		}
		json_array_append_new(by, json_pack("{s:I, s:I, s:I}", "node", node, "samples",
						    (json_int_t)samples, "estimated_bytes",
						    (json_int_t)(bytes + 0.5)));
	}
	for (i = 0; i < m->nb; i++) {
		const struct block *b = &m->b[i];
		int32_t at = b->node0 >= 0 ? b->node0 : b->node1;

		unknown += at < 0;
		migrated += b->node0 >= 0 && b->node1 >= 0 && b->node0 != b->node1;
		remote += at >= 0 && b->cpu_node >= 0 && at != b->cpu_node;
	}
	json_object_set_new(numa, "by_node", by);
	json_object_set_new(numa, "samples_on_no_known_node", json_integer((json_int_t)unknown));
	json_object_set_new(numa, "migrated", json_integer((json_int_t)migrated));
	json_object_set_new(numa, "remote", json_integer((json_int_t)remote));
	return numa;
}

json_t *sonde_memsample__json(const struct sonde_memsample *m, json_t *numa)
{
	struct fsum *ord = malloc((m->nf ? m->nf : 1) * sizeof(*ord));
	json_t *fns = json_array(), *o;
	size_t i;

	if (!ord || !fns) {
		free(ord);
		json_decref(fns);
		json_decref(numa);
		return NULL;
	}
	memcpy(ord, m->f, m->nf * sizeof(*ord));
	for (i = 0; i < m->nb; i++)
		if (!m->b[i].freed && m->b[i].func)
			ord[m->b[i].func - 1].live += m->b[i].weight;
	qsort(ord, m->nf, sizeof(*ord), by_bytes);
	for (i = 0; i < m->nf; i++) {
		char *fn = strdup(ord[i].key), *file, *line;

		if (!fn)
			break;
		file = strchr(fn, '\x01');
		*file++ = 0;
		line = strchr(file, '\x01');
		*line++ = 0;
		json_array_append_new(
			fns, json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "function", fn, "file",
				       file, "line", (json_int_t)strtoull(line, NULL, 10),
				       "samples", (json_int_t)ord[i].samples, "estimated_bytes",
				       (json_int_t)(ord[i].bytes + 0.5), "estimated_live_bytes",
				       (json_int_t)(ord[i].live + 0.5)));
		free(fn);
	}
	free(ord);
	o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "interval_bytes",
		      (json_int_t)m->interval, "sampled_allocations", (json_int_t)m->allocs,
		      "sampled_frees", (json_int_t)m->frees, "sampled_bytes", (json_int_t)m->asked,
		      "estimated_allocated_bytes", (json_int_t)(m->est + 0.5),
		      "estimated_freed_bytes", (json_int_t)(m->est_freed + 0.5), "functions", fns);
	if (o)
		json_object_set_new(o, "estimated_live_bytes",
				    json_integer((json_int_t)(m->est - m->est_freed + 0.5)));
	if (o && numa) {
		json_t *x = json_object_get(numa, "nodes") ? numa_json(m, numa) : numa;

		if (!x || json_object_set_new(o, "numa", x)) {
			json_decref(o);
			return NULL;
		}
	} else if (!o) {
		json_decref(numa);
	}
	return o;
}
