/*
 * perf-rings.c - perf_event rings (see perf-rings.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include "perf-rings.h"

struct ring {	    /* one CPU's */
	int leader; /* the event whose ring it is; -1: none opened on this CPU */
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	size_t map_bytes, data_bytes;
};

struct event {
	int fd, attr;
	uint64_t id;
};

struct perf_rings {
	struct ring *r; /* per CPU */
	size_t ncpu;
	struct event *ev;
	size_t nev;
	uint8_t *scratch; /* a record that wraps around its ring's end */
};

static int ring_map(struct ring *r, int fd, size_t ring_bytes, size_t page)
{
	r->map_bytes = ring_bytes + page;
	r->meta = mmap(NULL, r->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->meta == MAP_FAILED) {
		r->meta = NULL;
		return -errno;
	}
	r->data = (uint8_t *)r->meta + page;
	r->data_bytes = ring_bytes;
	r->leader = fd;
	return 0;
}

static int open_one(struct perf_rings *s, const struct perf_event_attr *a, int k, pid_t tid,
		    int cpu, size_t ring_bytes, size_t page)
{
	struct ring *r = &s->r[cpu];
	struct event *e = &s->ev[s->nev];
	int fd = (int)syscall(SYS_perf_event_open, a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0) /* the thread ended meanwhile, or the CPU is offline */
		return errno == ESRCH || errno == ENODEV ? 1 : -errno;
	*e = (struct event){ fd, k, 0 };
	s->nev++;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &e->id) < 0)
		e->id = 0;
	if (r->leader < 0)
		return ring_map(r, fd, ring_bytes, page);
	return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->leader) < 0 ? -errno : 0;
}

int perf_rings__open(struct perf_rings **out, const struct perf_event_attr *attrs, size_t nattr,
		     const pid_t *tids, size_t ntid, size_t ring_bytes, int *failed)
{
	struct perf_rings *s = calloc(1, sizeof(*s));
	long page = sysconf(_SC_PAGESIZE), ncpu = sysconf(_SC_NPROCESSORS_CONF);
	size_t i, k;
	int rc = 0, cpu;

	*out = NULL;
	*failed = -1;
	if (!s)
		return -ENOMEM;
	ring_bytes = (ring_bytes + (size_t)page - 1) & ~((size_t)page - 1);
	while (ring_bytes & (ring_bytes - 1)) /* a power of two of pages */
		ring_bytes &= ring_bytes - 1;
	s->ncpu = ncpu > 0 ? (size_t)ncpu : 1;
	s->r = calloc(s->ncpu, sizeof(*s->r));
	s->ev = calloc(nattr * ntid * s->ncpu + 1, sizeof(*s->ev));
	s->scratch = malloc(1u << 16);
	if (!s->r || !s->ev || !s->scratch) {
		perf_rings__close(s);
		return -ENOMEM;
	}
	for (cpu = 0; (size_t)cpu < s->ncpu; cpu++)
		s->r[cpu].leader = -1;
	for (i = 0; i < ntid && rc >= 0; i++) {
		for (cpu = 0; (size_t)cpu < s->ncpu && rc >= 0; cpu++) {
			for (k = 0; k < nattr; k++) {
				size_t before = s->nev;

				rc = open_one(s, &attrs[k], (int)k, tids[i], cpu, ring_bytes,
					      (size_t)page);
				if (rc < 0 && s->nev == before)
					*failed = (int)k;
				if (rc)
					break;
			}
			if (rc > 0)
				rc = 0;
		}
	}
	if (rc < 0) {
		perf_rings__close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void perf_rings__close(struct perf_rings *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; s->r && i < s->ncpu; i++)
		if (s->r[i].meta)
			munmap(s->r[i].meta, s->r[i].map_bytes);
	for (i = 0; i < s->nev; i++)
		close(s->ev[i].fd);
	free(s->ev);
	free(s->r);
	free(s->scratch);
	free(s);
}

int perf_rings__enable(struct perf_rings *s, bool on)
{
	unsigned long req = on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE;
	size_t i;

	for (i = 0; i < s->nev; i++)
		if (ioctl(s->ev[i].fd, req, 0) < 0)
			return -errno;
	return 0;
}

int perf_rings__attr_of(const struct perf_rings *s, uint64_t id)
{
	size_t i;

	for (i = 0; i < s->nev; i++)
		if (s->ev[i].id == id)
			return s->ev[i].attr;
	return -1;
}

size_t perf_rings__fds(const struct perf_rings *s, int *fds, size_t cap)
{
	size_t i, n = 0;

	for (i = 0; i < s->ncpu; i++)
		if (s->r[i].meta && n < cap)
			fds[n++] = s->r[i].leader;
	return n;
}

int perf_rings__read(struct perf_rings *s, perf_record_fn fn, void *ctx)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < s->ncpu && !rc; i++) {
		struct ring *r = &s->r[i];
		uint64_t head, tail;

		if (!r->meta)
			continue;
		head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
		tail = r->meta->data_tail;
		while (!rc && tail + sizeof(struct perf_event_header) <= head) {
			size_t pos = (size_t)(tail & (r->data_bytes - 1));
			size_t first = r->data_bytes - pos;
			struct perf_event_header h;
			const void *rec = r->data + pos;

			if (first >= sizeof(h)) {
				memcpy(&h, rec, sizeof(h));
			} else {
				memcpy(&h, rec, first);
				memcpy((uint8_t *)&h + first, r->data, sizeof(h) - first);
			}
			if (h.size < sizeof(h) || tail + h.size > head)
				break;
			if (first < h.size) {
				memcpy(s->scratch, rec, first);
				memcpy(s->scratch + first, r->data, h.size - first);
				rec = s->scratch;
			}
			rc = fn(ctx, rec);
			tail += h.size;
		}
		__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
	}
	return rc;
}
