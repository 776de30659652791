/*
 * syscalls.c - system calls from the raw_syscalls tracepoints (see syscalls.h).
 *
 * Two events (sys_enter, sys_exit) per opened thread and CPU: the kernel maps
 * no ring of an inherited event that follows one task on every CPU, so, as
 * perf record does, each follows its task on one CPU, and every event of a
 * CPU writes into that CPU's one ring (PERF_EVENT_IOC_SET_OUTPUT). Inherited
 * events write into their parent's ring: the threads a thread starts later
 * are recorded too. A thread's events are spread over the CPUs' rings; the
 * reader puts them back in time order per thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sonde/syscalls.h>
#include "tracefs.h"

struct sc_ring {    /* one CPU's */
	int leader; /* the event whose ring it is; -1: none opened on this CPU */
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	size_t map_bytes, data_bytes;
};

struct sonde_syscalls {
	struct sc_ring *r; /* per CPU */
	size_t ncpu;
	int *fds;
	size_t nfds;
	uint64_t enter_id, exit_id, lost;
};

/*
 * The tracepoint's id from tracefs (mounted if need be, as root); -ENOENT when
 * tracefs is not mounted, -EACCES when it is not readable (not root).
 */
static long long tp_id(const char *name)
{
	const char *events = sonde_tracefs_events();
	char path[160], buf[32];
	FILE *f;

	if (!events)
		return errno == EACCES ? -EACCES : -ENOENT;
	snprintf(path, sizeof(path), "%s/raw_syscalls/%s/id", events, name);
	f = fopen(path, "re");
	if (!f)
		return errno == EACCES || errno == EPERM ? -EACCES : -ENOENT;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -ENOENT;
	}
	fclose(f);
	return atoll(buf);
}

static int open_tp(uint64_t id, pid_t tid, int cpu)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_TRACEPOINT;
	a.config = id;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
	a.disabled = 1;
	a.inherit = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	return (int)syscall(SYS_perf_event_open, &a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static void explain(int err, bool ids, struct sonde_strbuf *why)
{
	int level = -1;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");

	if (f) {
		if (fscanf(f, "%d", &level) != 1)
			level = -1;
		fclose(f);
	}
	if (ids && err == EACCES)
		sonde_strbuf__adds(why, "the raw_syscalls tracepoints are not readable in tracefs "
					"(run as root)");
	else if (err == EACCES || err == EPERM)
		sonde_strbuf__addf(
			why,
			"perf_event_open of the raw_syscalls tracepoints was refused "
			"(kernel.perf_event_paranoid = %d; run as root, or set it to -1)",
			level);
	else if (err == ENOENT)
		sonde_strbuf__adds(why, "tracefs is not mounted (mount -t tracefs nodev "
					"/sys/kernel/tracing), so the raw_syscalls tracepoints "
					"cannot be named");
	else
		sonde_strbuf__addf(why, "perf_event_open of the raw_syscalls tracepoints: %s",
				   strerror(err));
}

int sonde_syscalls__open(const pid_t *tids, size_t n, size_t ring_bytes,
			 struct sonde_syscalls **out, struct sonde_strbuf *why)
{
	struct sonde_syscalls *s = calloc(1, sizeof(*s));
	long page = sysconf(_SC_PAGESIZE), ncpu = sysconf(_SC_NPROCESSORS_CONF);
	long long ei = tp_id("sys_enter"), xi = tp_id("sys_exit");
	size_t i, k;
	int err = 0, cpu;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	if (ei < 0 || xi < 0) {
		err = (int)-(ei < 0 ? ei : xi);
		explain(err, true, why);
		free(s);
		return -err;
	}
	s->enter_id = (uint64_t)ei;
	s->exit_id = (uint64_t)xi;
	if (!ring_bytes)
		ring_bytes = 4u << 20;
	ring_bytes = (ring_bytes + (size_t)page - 1) & ~((size_t)page - 1);
	while (ring_bytes & (ring_bytes - 1)) /* a power of two of pages */
		ring_bytes &= ring_bytes - 1;
	s->ncpu = ncpu > 0 ? (size_t)ncpu : 1;
	s->r = calloc(s->ncpu, sizeof(*s->r));
	s->fds = calloc(2 * n * s->ncpu + 1, sizeof(*s->fds));
	if (!s->r || !s->fds) {
		sonde_syscalls__close(s);
		return -ENOMEM;
	}
	for (cpu = 0; (size_t)cpu < s->ncpu; cpu++)
		s->r[cpu].leader = -1;
	for (i = 0; i < n && !err; i++) {
		for (cpu = 0; (size_t)cpu < s->ncpu && !err; cpu++) {
			struct sc_ring *r = &s->r[cpu];

			for (k = 0; k < 2 && !err; k++) {
				int fd = open_tp(k ? s->exit_id : s->enter_id, tids[i], cpu);

				if (fd < 0) {
					/* the thread ended meanwhile, or the CPU is offline */
					if (errno != ESRCH && errno != ENODEV)
						err = errno;
					break;
				}
				s->fds[s->nfds++] = fd;
				if (r->leader < 0) {
					r->map_bytes = ring_bytes + (size_t)page;
					r->meta = mmap(NULL, r->map_bytes, PROT_READ | PROT_WRITE,
						       MAP_SHARED, fd, 0);
					if (r->meta == MAP_FAILED) {
						r->meta = NULL;
						err = errno;
						break;
					}
					r->data = (uint8_t *)r->meta + (size_t)page;
					r->data_bytes = ring_bytes;
					r->leader = fd;
				} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->leader) < 0) {
					err = errno;
				}
			}
		}
	}
	if (err) {
		explain(err, false, why);
		sonde_syscalls__close(s);
		return err == ENOENT || err == ENODEV ? -ENOSYS : -err;
	}
	*out = s;
	return 0;
}

int sonde_syscalls__enable(struct sonde_syscalls *s, bool on)
{
	size_t i;
	unsigned long req = on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE;

	for (i = 0; i < s->nfds; i++)
		if (ioctl(s->fds[i], req, 0) < 0)
			return -errno;
	return 0;
}

/* Bytes [off, off + len) of the ring (wrapping) into buf. */
static void ring_copy(const struct sc_ring *r, uint64_t off, void *buf, size_t len)
{
	size_t pos = (size_t)(off & (r->data_bytes - 1)), first = r->data_bytes - pos;

	if (first >= len) {
		memcpy(buf, r->data + pos, len);
	} else {
		memcpy(buf, r->data + pos, first);
		memcpy((uint8_t *)buf + first, r->data, len - first);
	}
}

int sonde_syscalls__read(struct sonde_syscalls *s, sonde_syscall_fn fn, void *ctx)
{
	uint8_t rec[512];
	size_t i;

	for (i = 0; i < s->ncpu; i++) {
		struct sc_ring *r = &s->r[i];
		uint64_t head, tail;

		if (!r->meta)
			continue;
		head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
		tail = r->meta->data_tail;
		while (tail + sizeof(struct perf_event_header) <= head) {
			struct perf_event_header h;

			ring_copy(r, tail, &h, sizeof(h));
			if (h.size < sizeof(h) || tail + h.size > head)
				break;
			if (h.size <= sizeof(rec)) {
				ring_copy(r, tail, rec, h.size);
				if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
					uint64_t lost;

					memcpy(&lost, rec + sizeof(h) + 8, 8);
					s->lost += lost;
				} else if (h.type == PERF_RECORD_SAMPLE &&
					   h.size >= sizeof(h) + 28) {
					/* pid, tid; time; raw size; raw: common fields, then id */
					uint32_t pid, tid, raw;
					uint64_t ns;
					uint16_t type;
					long nr;
					const uint8_t *p = rec + sizeof(h);

					memcpy(&pid, p, 4);
					memcpy(&tid, p + 4, 4);
					memcpy(&ns, p + 8, 8);
					memcpy(&raw, p + 16, 4);
					if (raw >= 16 && 20 + raw <= h.size - sizeof(h)) {
						int rc;

						memcpy(&type, p + 20, 2);
						memcpy(&nr, p + 28, sizeof(nr));
						if (type == s->enter_id || type == s->exit_id) {
							rc = fn(ctx, pid, tid, ns,
								type == s->enter_id, nr);
							if (rc < 0)
								return rc;
						}
					}
				}
			}
			tail += h.size;
		}
		__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
	}
	return 0;
}

uint64_t sonde_syscalls__lost(const struct sonde_syscalls *s)
{
	return s->lost;
}

void sonde_syscalls__close(struct sonde_syscalls *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; s->r && i < s->ncpu; i++)
		if (s->r[i].meta)
			munmap(s->r[i].meta, s->r[i].map_bytes);
	for (i = 0; i < s->nfds; i++)
		close(s->fds[i]);
	free(s->fds);
	free(s->r);
	free(s);
}

const char *sonde_syscall__name(long nr, char *buf, size_t len)
{
	char *name = nr >= 0 ? seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, (int)nr) : NULL;

	if (name) {
		snprintf(buf, len, "%s", name);
		free(name);
	} else {
		snprintf(buf, len, "syscall_%ld", nr);
	}
	return buf;
}
