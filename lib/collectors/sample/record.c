/*
 * record.c - the sampling collector's perf events and the records they write.
 *
 * Every CPU has one ring; a reader thread drains them while the target runs
 * (woken when a quarter of a ring is full, and every 50 ms) and keeps the
 * records in memory, so a full ring loses as little as it can; what the
 * kernel still lost it says in PERF_RECORD_LOST, counted here. Copies of user
 * stacks keep only the part that was in use.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <asm/perf_regs.h>
#include <sys/eventfd.h>
#include "sample.h"

#define SAMPLE_TYPE                                                                                \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |            \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)

uint64_t smp_regs_mask(void)
{
	return ((1ull << PERF_REG_X86_64_MAX) - 1) &
	       ~((1ull << PERF_REG_X86_DS) | (1ull << PERF_REG_X86_ES) | (1ull << PERF_REG_X86_FS) |
		 (1ull << PERF_REG_X86_GS));
}

static uint64_t sample_type(const struct smp_cfg *c)
{
	uint64_t t = SAMPLE_TYPE;

	if (c->graph == SMP_DWARF)
		t |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	if (c->graph == SMP_LBR)
		t |= PERF_SAMPLE_BRANCH_STACK;
	return t;
}

static void base_attr(const struct smp_cfg *c, struct perf_event_attr *a, bool launch)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->sample_type = sample_type(c);
	a->disabled = 1;
	a->enable_on_exec = launch;
	a->inherit = 1;
	a->sample_id_all = 1;
	a->exclude_kernel = !c->kernel;
	a->exclude_callchain_kernel = !c->kernel;
	a->exclude_hv = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	if (c->python_now) { /* frames are read at each sample, as soon as it is there */
		a->wakeup_events = 1;
	} else {
		a->watermark = 1;
		a->wakeup_watermark = (uint32_t)(c->ring_bytes / 4);
	}
	a->sample_max_stack = 127;
	if (c->graph == SMP_DWARF) {
		a->exclude_callchain_user = 1; /* the kernel's part still comes as a chain */
		a->sample_regs_user = smp_regs_mask();
		a->sample_stack_user = c->stack_user;
	}
	if (c->graph == SMP_LBR) {
		a->branch_sample_type = PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_CALL_STACK;
		a->exclude_callchain_user = 1;
	}
}

static void explain(const struct smp_cfg *c, int err, int which, struct sonde_strbuf *why)
{
	int level = -1;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	const char *what = which == SMP_EV_SWITCH ? "context-switches (for --off-cpu)" : c->event;

	if (f) {
		if (fscanf(f, "%d", &level) != 1)
			level = -1;
		fclose(f);
	}
	if (err == EACCES || err == EPERM)
		sonde_strbuf__addf(why,
				   "perf_event_open of %s was refused (kernel.perf_event_paranoid "
				   "= %d; run as root, or sysctl kernel.perf_event_paranoid=1)",
				   what, level);
	else if (c->graph == SMP_LBR && (err == EOPNOTSUPP || err == EINVAL || err == ENOENT))
		sonde_strbuf__addf(why,
				   "--call-graph lbr is not supported here: this CPU's PMU has "
				   "no last-branch-record call stack (perf_event_open: %s)",
				   strerror(err));
	else if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV)
		sonde_strbuf__addf(why,
				   "the event %s cannot be sampled here: the machine has no PMU "
				   "that counts it (perf_event_open: %s); try --event cpu-clock",
				   what, strerror(err));
	else if (err == ESRCH)
		sonde_strbuf__adds(why, "the process ended before sampling could start");
	else
		sonde_strbuf__addf(why, "perf_event_open of %s: %s", what, strerror(err));
}

int smp_rec__open(struct smp_rec *r, const struct smp_cfg *cfg, const pid_t *tids, size_t ntid,
		  bool launch, struct sonde_strbuf *why)
{
	struct perf_event_attr a[2];
	int rc, failed;
	size_t n = 1;

	memset(r, 0, sizeof(*r));
	r->cfg = *cfg;
	r->stop_fd = -1;
	r->last_id = UINT64_MAX;
	base_attr(cfg, &a[0], launch);
	a[0].type = cfg->type;
	a[0].config = cfg->config;
	a[0].config1 = cfg->config1;
	a[0].config2 = cfg->config2;
	if (cfg->hz) {
		a[0].freq = 1;
		a[0].sample_freq = cfg->hz;
	} else {
		a[0].sample_period = cfg->period;
	}
	a[0].mmap = 1;
	a[0].mmap2 = 1;
	a[0].comm = 1;
	a[0].comm_exec = 1;
	a[0].task = 1;
	a[0].context_switch = cfg->off_cpu;
	if (cfg->off_cpu) {
		base_attr(cfg, &a[1], launch);
		a[1].type = PERF_TYPE_SOFTWARE;
		a[1].config = PERF_COUNT_SW_CONTEXT_SWITCHES;
		a[1].sample_period = 1;
		n = 2;
	}
	rc = perf_rings__open(&r->rings, a, n, tids, ntid, cfg->ring_bytes, &failed);
	if (rc < 0) {
		explain(cfg, -rc, failed, why);
		return rc;
	}
	r->py = cfg->python ? smp_py__new() : NULL;
	r->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (r->stop_fd < 0 || (cfg->python && !r->py)) {
		rc = r->stop_fd < 0 ? -errno : -ENOMEM;
		smp_rec__close(r);
		return rc;
	}
	return 0;
}

static int keep(struct smp_rec *r, const void *rec, size_t len)
{
	const struct perf_event_header *h = rec;

	if (r->len + len > r->cap) {
		size_t cap = r->cap ? r->cap : 1u << 20;
		void *n;

		while (cap < r->len + len)
			cap *= 2;
		n = realloc(r->buf, cap);
		if (!n)
			return -ENOMEM;
		r->buf = n;
		r->cap = cap;
	}
	memcpy(r->buf + r->len, rec, len);
	if (h->type == PERF_RECORD_SAMPLE && len >= sizeof(*h) + 8) {
		uint64_t id, ev;

		/* the identifier becomes the event's index (SMP_EV_*) */
		memcpy(&id, r->buf + r->len + sizeof(*h), 8);
		if (id != r->last_id) {
			r->last_id = id;
			r->last_ev = perf_rings__attr_of(r->rings, id);
		}
		ev = r->last_ev < 0 ? SMP_EV_MAIN : (uint64_t)r->last_ev;
		memcpy(r->buf + r->len + sizeof(*h), &ev, 8);
	}
	r->len += len;
	return 0;
}

/* A sample whose user stack copy is cut to the bytes in use (dyn_size). */
static int keep_sample(struct smp_rec *r, const struct perf_event_header *h)
{
	struct smp_sample s;
	size_t head, used;
	uint64_t dyn;
	uint8_t *p;
	int rc;

	if (r->cfg.graph != SMP_DWARF || smp_parse_sample(&r->cfg, h, &s) || !s.stack_size)
		return keep(r, h, h->size);
	memcpy(&dyn, s.stack + s.stack_size, 8);
	if (dyn > s.stack_size)
		dyn = s.stack_size;
	used = (size_t)((dyn + 7) & ~7ull);
	head = (size_t)(s.stack - (const uint8_t *)h);
	rc = keep(r, h, head + used + 8);
	if (rc)
		return rc;
	p = r->buf + r->len - (head + used + 8);
	((struct perf_event_header *)p)->size = (uint16_t)(head + used + 8);
	memcpy(p + head - 8, &(uint64_t){ used }, 8); /* the copy's size: what is kept */
	memcpy(p + head + used, &dyn, 8);
	return 0;
}

/* A record as the kernel would have written it, with its sample_id at time ns. */
static int synth(struct smp_rec *r, uint32_t type, const void *body, size_t len, uint32_t pid,
		 uint32_t tid, uint64_t ns)
{
	uint8_t rec[4096 + 128];
	size_t pad = (len + 7) & ~(size_t)7, size = sizeof(struct perf_event_header) + pad + 32;
	struct perf_event_header h = { type, 0, (uint16_t)size };

	if (pad > 4096)
		return 0;
	memset(rec, 0, size);
	memcpy(rec, &h, sizeof(h));
	memcpy(rec + sizeof(h), body, len);
	memcpy(rec + size - 32, &pid, 4);
	memcpy(rec + size - 28, &tid, 4);
	memcpy(rec + size - 24, &ns, 8);
	return keep(r, rec, size);
}

int smp_rec__synthesize(struct smp_rec *r, uint32_t pid, const pid_t *tids, size_t ntid)
{
	char path[64], line[4200];
	uint64_t ns = 0;
	struct timespec t;
	size_t i;
	FILE *f;
	int rc = 0;

	if (!clock_gettime(CLOCK_MONOTONIC, &t))
		ns = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
	for (i = 0; i < ntid && !rc; i++) {
		uint8_t body[8 + 24] = { 0 };
		FILE *c;

		snprintf(path, sizeof(path), "/proc/%u/task/%d/comm", pid, (int)tids[i]);
		c = fopen(path, "re");
		if (!c)
			continue;
		if (fgets((char *)body + 8, 17, c)) {
			((char *)body)[8 + strcspn((char *)body + 8, "\n")] = 0;
			memcpy(body, &pid, 4);
			memcpy(body + 4, &tids[i], 4);
			rc = synth(r, PERF_RECORD_COMM, body, 8 + strlen((char *)body + 8) + 1, pid,
				   (uint32_t)tids[i], ns);
		}
		fclose(c);
	}
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return rc ? rc : -errno;
	while (!rc && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8], body[64 + 4096];
		int pos = 0;
		uint32_t prot = 0x4 /* PROT_EXEC */;
		const char *obj;
		size_t ol;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &off, &pos) <
			    4 ||
		    !pos || perms[2] != 'x')
			continue;
		obj = line + pos;
		ol = strcspn(obj, "\n");
		if (ol >= 4096)
			continue;
		memset(body, 0, 64);
		memcpy(body, &pid, 4);
		memcpy(body + 4, &pid, 4);
		memcpy(body + 8, &(uint64_t){ lo }, 8);
		memcpy(body + 16, &(uint64_t){ hi - lo }, 8);
		memcpy(body + 24, &(uint64_t){ off }, 8);
		memcpy(body + 56, &prot, 4);
		memcpy(body + 64, obj, ol);
		body[64 + ol] = 0;
		rc = synth(r, PERF_RECORD_MMAP2, body, 64 + ol + 1, pid, pid, ns);
	}
	fclose(f);
	return rc;
}

/* CPython frames at a sample; a process that exec'ed or mapped a Python is probed again. */
static int python(struct smp_rec *r, const struct perf_event_header *h)
{
	const uint8_t *b = (const uint8_t *)(h + 1);
	struct smp_sample s;
	uint32_t pid;

	if (h->type == PERF_RECORD_SAMPLE)
		return smp_parse_sample(&r->cfg, h, &s)
			       ? 0
			       : smp_py__read(r->py, r, s.pid, s.tid, s.time);
	if ((h->type == PERF_RECORD_COMM && (h->misc & PERF_RECORD_MISC_COMM_EXEC)) ||
	    (h->type == PERF_RECORD_MMAP2 && h->size > sizeof(*h) + 64 &&
	     strstr((const char *)b + 64, "python"))) {
		memcpy(&pid, b, 4);
		smp_py__forget(r->py, pid);
	}
	return 0;
}

int smp_rec__append(struct smp_rec *r, const void *rec, size_t len)
{
	return keep(r, rec, len);
}

static int on_record(void *ctx, const struct perf_event_header *h)
{
	struct smp_rec *r = ctx;
	int rc;

	r->records++;
	if (h->type == PERF_RECORD_LOST && h->size >= sizeof(*h) + 16) {
		uint64_t n;

		memcpy(&n, (const uint8_t *)(h + 1) + 8, 8);
		r->lost += n;
		return 0;
	}
	if (h->type == PERF_RECORD_LOST_SAMPLES && h->size >= sizeof(*h) + 8) {
		uint64_t n;

		memcpy(&n, h + 1, 8);
		r->lost_samples += n;
		return 0;
	}
	rc = h->type == PERF_RECORD_SAMPLE ? keep_sample(r, h) : keep(r, h, h->size);
	if (!rc && r->py)
		rc = python(r, h);
	return rc;
}

static int drain(struct smp_rec *r)
{
	int rc = perf_rings__read(r->rings, on_record, r);

	if (rc && !r->err)
		r->err = rc;
	return rc;
}

static void *reader(void *arg)
{
	struct smp_rec *r = arg;
	struct pollfd pf[257];
	int fds[256];
	size_t i, n = perf_rings__fds(r->rings, fds, 256);

	for (i = 0; i < n; i++)
		pf[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	pf[n] = (struct pollfd){ .fd = r->stop_fd, .events = POLLIN };
	for (;;) {
		int k = poll(pf, n + 1, 50);

		if (k < 0 && errno != EINTR)
			break;
		if (pf[n].revents)
			break;
		if (drain(r) == -ENOMEM)
			break;
	}
	return NULL;
}

int smp_rec__start(struct smp_rec *r)
{
	int rc = pthread_create(&r->reader, NULL, reader, r);

	if (rc)
		return -rc;
	r->reading = true;
	return 0;
}

int smp_rec__stop(struct smp_rec *r)
{
	uint64_t one = 1;

	if (r->rings)
		perf_rings__enable(r->rings, false);
	if (r->reading) {
		if (write(r->stop_fd, &one, sizeof(one)) != sizeof(one))
			return -errno;
		pthread_join(r->reader, NULL);
		r->reading = false;
	}
	if (r->rings)
		drain(r);
	return r->err;
}

void smp_rec__clear(struct smp_rec *r)
{
	r->len = 0;
}

void smp_rec__close(struct smp_rec *r)
{
	if (r->reading)
		smp_rec__stop(r);
	perf_rings__close(r->rings);
	r->rings = NULL;
	if (r->stop_fd >= 0)
		close(r->stop_fd);
	r->stop_fd = -1;
	free(r->buf);
	r->buf = NULL;
	r->len = r->cap = 0;
	smp_py__free(r->py);
	r->py = NULL;
}

/* ---- parsing ------------------------------------------------------------------------------- */

#define TAKE(dst, n)                                                                               \
	do {                                                                                       \
		if (p + (n) > end)                                                                 \
			return -EBADMSG;                                                           \
		memcpy((dst), p, (n));                                                             \
		p += (n);                                                                          \
	} while (0)

int smp_parse_sample(const struct smp_cfg *cfg, const struct perf_event_header *h,
		     struct smp_sample *s)
{
	const uint8_t *p = (const uint8_t *)(h + 1), *end = (const uint8_t *)h + h->size;
	uint64_t t = sample_type(cfg), v;

	memset(s, 0, sizeof(*s));
	TAKE(&s->id, 8);
	TAKE(&s->ip, 8);
	TAKE(&s->pid, 4);
	TAKE(&s->tid, 4);
	TAKE(&s->time, 8);
	TAKE(&s->cpu, 4);
	p += 4;
	TAKE(&s->period, 8);
	TAKE(&s->nr, 8);
	if (s->nr > (uint64_t)(end - p) / 8)
		return -EBADMSG;
	s->ips = (const uint64_t *)p;
	p += s->nr * 8;
	if (t & PERF_SAMPLE_BRANCH_STACK) {
		TAKE(&s->nbr, 8);
		if (s->nbr > (uint64_t)(end - p) / sizeof(*s->br))
			return -EBADMSG;
		s->br = (const struct perf_branch_entry *)p;
		p += s->nbr * sizeof(*s->br);
	}
	if (t & PERF_SAMPLE_REGS_USER) {
		TAKE(&s->abi, 8);
		if (s->abi) {
			size_t nregs = (size_t)__builtin_popcountll(smp_regs_mask());

			if (p + nregs * 8 > end)
				return -EBADMSG;
			s->regs = (const uint64_t *)p;
			p += nregs * 8;
		}
	}
	if (t & PERF_SAMPLE_STACK_USER) {
		TAKE(&v, 8);
		if (v) {
			if (v > (uint64_t)(end - p) || (uint64_t)(end - p) - v < 8)
				return -EBADMSG;
			s->stack = p;
			s->stack_size = v;
		}
	}
	return 0;
}

bool smp_record_time(const struct perf_event_header *h, uint64_t *ns, uint32_t *pid, uint32_t *tid)
{
	const uint8_t *p;

	if (h->type == PERF_RECORD_SAMPLE) {
		if (h->size < sizeof(*h) + 32)
			return false;
		p = (const uint8_t *)(h + 1) + 16;
	} else if (h->type >= SMP_REC_PYSTACK && h->type <= SMP_REC_PROC) {
		if (h->size < sizeof(*h) + 16)
			return false;
		p = (const uint8_t *)(h + 1);
	} else {
		/* sample_id: pid, tid; time; cpu, res; identifier */
		if (h->size < sizeof(*h) + 32)
			return false;
		p = (const uint8_t *)h + h->size - 32;
	}
	memcpy(pid, p, 4);
	memcpy(tid, p + 4, 4);
	memcpy(ns, p + 8, 8);
	return true;
}
