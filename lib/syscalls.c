/*
 * syscalls.c - system calls from the raw_syscalls tracepoints (see syscalls.h).
 *
 * Two events (sys_enter, sys_exit) per opened thread and CPU, in perf-rings.h's
 * per-CPU rings; threads a thread starts later are recorded too. A thread's
 * events are spread over the CPUs' rings; the reader puts them back in time
 * order per thread.
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
#include "perf-rings.h"
#include "tracefs.h"

struct sonde_syscalls {
	struct perf_rings *rings;
	uint64_t enter_id, exit_id, lost;
	sonde_syscall_fn fn;
	void *ctx;
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

static void tp_attr(struct perf_event_attr *a, uint64_t id)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_TRACEPOINT;
	a->config = id;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
	a->disabled = 1;
	a->inherit = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
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
	long long ei = tp_id("sys_enter"), xi = tp_id("sys_exit");
	struct perf_event_attr a[2];
	int err, failed;

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
	tp_attr(&a[0], s->enter_id);
	tp_attr(&a[1], s->exit_id);
	err = -perf_rings__open(&s->rings, a, 2, tids, n, ring_bytes ? ring_bytes : 4u << 20,
				&failed);
	if (err) {
		explain(err, false, why);
		free(s);
		return err == ENOENT || err == ENODEV ? -ENOSYS : -err;
	}
	*out = s;
	return 0;
}

int sonde_syscalls__enable(struct sonde_syscalls *s, bool on)
{
	return perf_rings__enable(s->rings, on);
}

static int one_record(void *ctx, const struct perf_event_header *h)
{
	struct sonde_syscalls *s = ctx;
	const uint8_t *p = (const uint8_t *)(h + 1);

	if (h->type == PERF_RECORD_LOST && h->size >= sizeof(*h) + 16) {
		uint64_t lost;

		memcpy(&lost, p + 8, 8);
		s->lost += lost;
	} else if (h->type == PERF_RECORD_SAMPLE && h->size >= sizeof(*h) + 28) {
		/* pid, tid; time; raw size; raw: common fields, then id */
		uint32_t pid, tid, raw;
		uint64_t ns;
		uint16_t type;
		long nr;

		memcpy(&pid, p, 4);
		memcpy(&tid, p + 4, 4);
		memcpy(&ns, p + 8, 8);
		memcpy(&raw, p + 16, 4);
		if (raw >= 16 && 20 + raw <= h->size - sizeof(*h)) {
			memcpy(&type, p + 20, 2);
			memcpy(&nr, p + 28, sizeof(nr));
			if (type == s->enter_id || type == s->exit_id) {
				int rc = s->fn(s->ctx, pid, tid, ns, type == s->enter_id, nr);

				return rc < 0 ? rc : 0;
			}
		}
	}
	return 0;
}

int sonde_syscalls__read(struct sonde_syscalls *s, sonde_syscall_fn fn, void *ctx)
{
	int rc;

	s->fn = fn;
	s->ctx = ctx;
	rc = perf_rings__read(s->rings, one_record, s);
	return rc;
}

uint64_t sonde_syscalls__lost(const struct sonde_syscalls *s)
{
	return s->lost;
}

void sonde_syscalls__close(struct sonde_syscalls *s)
{
	if (!s)
		return;
	perf_rings__close(s->rings);
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
