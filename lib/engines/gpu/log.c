/*
 * log.c - the GPU runtime's records of one run, read from the drained log.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/ring.h>
#include "../../u64map.h"
#include "gpu.h"

static int add_name(struct sonde_gpu_run *r, uint32_t id, const char *s, size_t max)
{
	char *copy;

	if (r->nnames == r->capnames) {
		size_t cap = r->capnames ? 2 * r->capnames : 64;
		char **n = realloc(r->names, cap * sizeof(*n));
		uint32_t *d;

		if (!n)
			return -ENOMEM;
		r->names = n;
		d = realloc(r->name_ids, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		r->name_ids = d;
		r->capnames = cap;
	}
	copy = strndup(s, max);
	if (!copy)
		return -ENOMEM;
	r->names[r->nnames] = copy;
	r->name_ids[r->nnames++] = id;
	return 0;
}

const char *sonde_gpu_run__name(const struct sonde_gpu_run *r, uint32_t id)
{
	size_t i;

	for (i = r->nnames; i-- > 0;)
		if (r->name_ids[i] == id)
			return r->names[i];
	return NULL;
}

/* Append one record of size sz to an array of them. */
static int push(void **arr, size_t *n, size_t *cap, const void *rec, size_t sz)
{
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 256;
		void *a = realloc(*arr, c * sz);

		if (!a)
			return -ENOMEM;
		*arr = a;
		*cap = c;
	}
	memcpy((char *)*arr + *n * sz, rec, sz);
	(*n)++;
	return 0;
}

/*
 * Kernel name ids are per process image (its ring's serial): each image's ids
 * are moved past those of the images read before it (base), so that names of
 * every process stay distinct.
 */
static int record(struct sonde_gpu_run *r, uint32_t type, const uint8_t *q, uint32_t len,
		  uint32_t *base, uint32_t *top)
{
	switch (type) {
	case GPU_REC_PROC:
		r->processes++;
		*base = *top;
		return 0;
	case GPU_REC_NAME: {
		struct gpu_name n;
		uint32_t id;

		if (len < sizeof(n) + 1)
			return -EINVAL;
		memcpy(&n, q, sizeof(n));
		id = n.id >> 31 ? n.id : n.id + *base;
		if (!(n.id >> 31) && id > *top)
			*top = id;
		if (n.id >> 31 && sonde_gpu_run__name(r, id))
			return 0; /* an API name another process gave already */
		return add_name(r, id, (const char *)q + sizeof(n), len - sizeof(n));
	}
	case GPU_REC_ACT: {
		struct gpu_act a;

		if (len < sizeof(a))
			return -EINVAL;
		memcpy(&a, q, sizeof(a));
		if (a.kind == GPU_ACT_KERNEL && a.name)
			a.name += *base;
		return push((void **)&r->acts, &r->nacts, &r->capacts, &a, sizeof(a));
	}
	case GPU_REC_API: {
		struct gpu_api a;

		if (len < sizeof(a))
			return -EINVAL;
		memcpy(&a, q, sizeof(a));
		return push((void **)&r->apis, &r->napis, &r->capapis, &a, sizeof(a));
	}
	case GPU_REC_MARKER: {
		struct gpu_marker m;

		if (len < sizeof(m))
			return -EINVAL;
		memcpy(&m, q, sizeof(m));
		if (m.name)
			m.name += *base;
		return push((void **)&r->markers, &r->nmarkers, &r->capmarkers, &m, sizeof(m));
	}
	case GPU_REC_MEMORY: {
		struct gpu_memory m;

		if (len < sizeof(m))
			return -EINVAL;
		memcpy(&m, q, sizeof(m));
		return push((void **)&r->mems, &r->nmems, &r->capmems, &m, sizeof(m));
	}
	case GPU_REC_CLOCK: {
		struct gpu_clock c;

		if (len < sizeof(c))
			return -EINVAL;
		memcpy(&c, q, sizeof(c));
		return push((void **)&r->clocks, &r->nclocks, &r->capclocks, &c, sizeof(c));
	}
	case GPU_REC_DROPPED: {
		struct gpu_dropped d;

		if (len < sizeof(d))
			return -EINVAL;
		memcpy(&d, q, sizeof(d));
		r->dropped += d.records;
		return 0;
	}
	case GPU_REC_STATUS: {
		struct gpu_status st;

		if (len < sizeof(st) + 1)
			return -EINVAL;
		if (r->status)
			return 0;
		memcpy(&st, q, sizeof(st));
		r->status = strndup((const char *)q + sizeof(st), len - sizeof(st));
		return r->status ? 0 : -ENOMEM;
	}
	default:
		return 0; /* module records, and kinds a newer runtime may add */
	}
}

int sonde_gpu_run__read(struct sonde_gpu_run *r, const void *log, size_t len)
{
	const uint8_t *p = log, *end = p + len;
	struct u64map bases = { 0 }; /* process serial -> its kernel name ids' base */
	uint32_t top = 0;
	size_t i;
	int rc = 0;

	for (i = 0; i < r->nnames; i++)
		if (!(r->name_ids[i] >> 31) && r->name_ids[i] > top)
			top = r->name_ids[i];
	while ((size_t)(end - p) >= sizeof(struct sonde_ring_chunk)) {
		struct sonde_ring_chunk ch;
		const uint8_t *q, *qend;

		uint64_t b = 0;
		uint32_t base;

		memcpy(&ch, p, sizeof(ch));
		p += sizeof(ch);
		if (ch.bytes > (uint64_t)(end - p)) {
			rc = -EINVAL;
			break;
		}
		u64map__get(&bases, ch.serial, &b);
		base = (uint32_t)b;
		for (q = p, qend = p + ch.bytes; !rc && qend - q >= 8;) {
			uint32_t h, rlen, type;

			memcpy(&h, q, 4);
			rlen = SONDE_RING_REC_LEN(h);
			type = SONDE_RING_REC_TYPE(h);
			if (rlen < 8 || rlen > (size_t)(qend - q)) {
				rc = -EINVAL;
				break;
			}
			rc = record(r, type, q, rlen, &base, &top);
			if (!rc && type == GPU_REC_PROC)
				rc = u64map__put(&bases, ch.serial, base);
			q += rlen;
		}
		if (rc)
			break;
		p = qend;
	}
	u64map__release(&bases);
	return rc;
}

void sonde_gpu_run__free(struct sonde_gpu_run *r)
{
	size_t i;

	for (i = 0; i < r->nnames; i++)
		free(r->names[i]);
	free(r->names);
	free(r->name_ids);
	free(r->acts);
	free(r->apis);
	free(r->clocks);
	free(r->markers);
	free(r->mems);
	free(r->status);
	memset(r, 0, sizeof(*r));
}
