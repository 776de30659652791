/*
 * service.c - the counter collection service: profile configs, counter sets
 * on perf_event file descriptors, buffers, contexts, region and process
 * dispatch counting, and agent counting (see sonde/counters.h).
 *
 * A counter set is a config's base counters opened on one target (a thread,
 * a process and its descendants, or a CPU), once per CPU when counted per
 * CPU. In a grouped set the hardware counters are one perf group, scheduled
 * together and read with one read(2) (or with rdpmc when the PMU lets user
 * space read them); software counters and tracepoints are opened on their own:
 * they need no co-scheduling, and on some kernels (6.18) a group member of a
 * group led by cpu-clock or task-clock reads a stale count while it runs (0
 * page faults in a region that made 16). A multiplexed set opens every counter
 * as its own group so the kernel may rotate them, and values are scaled by
 * time_enabled / time_running.
 */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sonde/clock.h>
#include "../../perf-read.h"
#include "counters.h"
#include "service.h"

/* ---- profile configs ------------------------------------------------------------------ */

static _Atomic uint32_t next_config_id = 1;

/* Whether the supported hardware inputs of cfg schedule together as one group. */
static bool hardware_fits(struct sonde_counters_config *cfg)
{
	int fds[CNT_MAX_INPUTS], n = 0, leader = -1, i;
	uint64_t buf[3 + CNT_MAX_INPUTS];
	volatile unsigned long spin = 0;
	bool ok = true;
	size_t k;

	for (k = 0; k < cfg->nin && ok; k++) {
		struct perf_event_attr attr;
		int fd;

		if (!cfg->in_ok[k] || cfg->ine[k]->kind != SONDE_COUNTER_HARDWARE)
			continue;
		cnt_entry__attr(cfg->ine[k], &attr);
		attr.disabled = leader < 0;
		attr.exclude_kernel = attr.exclude_hv = 1;
		attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED |
				   PERF_FORMAT_TOTAL_TIME_RUNNING;
		fd = cnt_perf_open(&attr, 0, -1, leader, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			ok = false;
			break;
		}
		fds[n++] = fd;
		if (leader < 0)
			leader = fd;
	}
	if (ok && n > 1) {
		ioctl(leader, PERF_EVENT_IOC_ENABLE, 0);
		while (spin < 200000)
			spin++;
		ioctl(leader, PERF_EVENT_IOC_DISABLE, 0);
		ok = read(leader, buf, sizeof(buf)) > 0 && buf[2] > 0; /* time_running */
	}
	for (i = 0; i < n; i++)
		close(fds[i]);
	return ok;
}

int cnt_request_inputs(const uint32_t *ids, size_t n, uint32_t *in, size_t *nin,
		       struct sonde_strbuf *err)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct cnt_entry *e = cnt_catalog__get(ids[i]);
		int rc = e ? cnt_inputs(e, in, nin, CNT_MAX_INPUTS) : 0;

		if (rc) {
			sonde_strbuf__addf(err, "%s: more than %d base counters in one config",
					   e->name, CNT_MAX_INPUTS);
			return rc == -E2BIG ? -E2BIG : -EINVAL;
		}
	}
	return 0;
}

int sonde_counters_config__new(uint32_t agent, const uint32_t *ids, size_t n, unsigned flags,
			       struct sonde_strbuf *err, struct sonde_counters_config **out)
{
	struct sonde_counters_config *cfg;
	size_t na, i, hw = 0;
	int rc;

	if (!sonde_counters__agents(&na) || agent >= na) {
		sonde_strbuf__addf(err, "no agent %u (this machine has %zu)", agent, na);
		return -ENODEV;
	}
	if (!n || n > CNT_MAX_REQUEST) {
		sonde_strbuf__addf(err, "a profile config takes 1 to %d counters", CNT_MAX_REQUEST);
		return -EINVAL;
	}
	if (flags & SONDE_CONFIG_PER_CPU) {
		/* a process's count on each CPU is not a share of one multiplexed count:
		   scaled, the shares add up to more than the process counted */
		sonde_strbuf__addf(err, "per-CPU values of a process or region do not add up to "
					"its count; count the agents (system-wide) for values "
					"per CPU");
		return -EINVAL;
	}
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg || !(cfg->req = calloc(n, sizeof(*cfg->req))) ||
	    !(cfg->reqe = calloc(n, sizeof(*cfg->reqe)))) {
		sonde_counters_config__free(cfg);
		return -ENOMEM;
	}
	cfg->agent = agent;
	cfg->flags = flags;
	for (i = 0; i < n; i++) {
		struct cnt_entry *e = cnt_catalog__get(ids[i]);

		if (!e) {
			sonde_strbuf__addf(err, "no counter with id %u", ids[i]);
			sonde_counters_config__free(cfg);
			return -ENOENT;
		}
		cfg->req[i] = ids[i];
		cfg->reqe[i] = e;
	}
	rc = cnt_request_inputs(ids, n, cfg->in, &cfg->nin, err);
	if (rc) {
		sonde_counters_config__free(cfg);
		return rc;
	}
	cfg->nreq = n;
	for (i = 0; i < cfg->nin; i++) {
		cfg->ine[i] = cnt_catalog__get(cfg->in[i]);
		cfg->in_ok[i] = cnt_entry__supported(cfg->ine[i]);
		hw += cfg->in_ok[i] && cfg->ine[i]->kind == SONDE_COUNTER_HARDWARE;
	}
	if (hw > 1 && !(flags & SONDE_CONFIG_MULTIPLEX) && !hardware_fits(cfg)) {
		sonde_strbuf__addf(err,
				   "the %zu hardware counters do not fit on the PMU together; "
				   "allow multiplexing (SONDE_CONFIG_MULTIPLEX) or ask for fewer",
				   hw);
		sonde_counters_config__free(cfg);
		return -E2BIG;
	}
	cfg->id = atomic_fetch_add(&next_config_id, 1);
	*out = cfg;
	return 0;
}

void sonde_counters_config__free(struct sonde_counters_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->req);
	free(cfg->reqe);
	free(cfg);
}

uint32_t sonde_counters_config__id(const struct sonde_counters_config *cfg)
{
	return cfg->id;
}

uint32_t sonde_counters_config__agent(const struct sonde_counters_config *cfg)
{
	return cfg->agent;
}

const uint32_t *sonde_counters_config__counters(const struct sonde_counters_config *cfg, size_t *n)
{
	*n = cfg->nreq;
	return cfg->req;
}

/* ---- counter sets --------------------------------------------------------------------- */

static bool user_only; /* the kernel refused kernel-mode counting: count user space */

int cnt_set__open(struct cnt_set *s, const struct sonde_counters_config *cfg, pid_t pid,
		  const int *cpus, size_t ncpu, unsigned how, struct sonde_strbuf *err)
{
	size_t c, k;

	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->ncpu = ncpu ? ncpu : 1;
	/* one group, one read: unless inherited, or hardware counters may take turns */
	s->group = !(how & CNT_INHERIT);
	for (k = 0; s->group && (cfg->flags & SONDE_CONFIG_MULTIPLEX) && k < cfg->nin; k++)
		if (cfg->in_ok[k] && cfg->ine[k]->kind == SONDE_COUNTER_HARDWARE)
			s->group = false;
	s->fd = malloc(s->ncpu * cfg->nin * sizeof(int));
	s->last = calloc(s->ncpu * cfg->nin, sizeof(*s->last));
	s->cpus = calloc(s->ncpu, sizeof(int));
	if (!s->fd || !s->last || !s->cpus) {
		cnt_set__close(s);
		return -ENOMEM;
	}
	for (c = 0; c < s->ncpu; c++)
		s->cpus[c] = ncpu ? cpus[c] : -1;
	for (k = 0; k < s->ncpu * cfg->nin; k++)
		s->fd[k] = -1;
	s->nfd = s->ncpu * cfg->nin;
	for (c = 0; c < s->ncpu; c++) {
		int leader = -1;

		for (k = 0; k < cfg->nin; k++) {
			struct perf_event_attr attr;
			int fd;

			if (!cfg->in_ok[k])
				continue;
			bool in_group = s->group && cfg->ine[k]->kind == SONDE_COUNTER_HARDWARE;

			cnt_entry__attr(cfg->ine[k], &attr);
			attr.read_format =
				PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
			if (in_group)
				attr.read_format |= PERF_FORMAT_GROUP;
			attr.inherit = !!(how & CNT_INHERIT);
			attr.disabled = (how & CNT_DISABLED) && (!in_group || leader < 0);
			attr.enable_on_exec = (how & CNT_ENABLE_ON_EXEC) && attr.disabled;
			if (user_only)
				attr.exclude_kernel = attr.exclude_hv = 1;
			fd = cnt_perf_open(&attr, pid, s->cpus[c], in_group ? leader : -1,
					   PERF_FLAG_FD_CLOEXEC);
			if ((fd == -EACCES || fd == -EPERM) && !attr.exclude_kernel && pid != -1) {
				user_only = true;
				attr.exclude_kernel = attr.exclude_hv = 1;
				fd = cnt_perf_open(&attr, pid, s->cpus[c], in_group ? leader : -1,
						   PERF_FLAG_FD_CLOEXEC);
			}
			if (fd < 0) {
				if (fd == -EACCES || fd == -EPERM) {
					sonde_strbuf__addf(
						err,
						"cannot count %s%s%s: not permitted (%s needs root "
						"or "
						"CAP_PERFMON, or kernel.perf_event_paranoid <= %d)",
						cfg->ine[k]->name, pid == -1 ? " on " : "",
						pid == -1 ? "a CPU" : "",
						pid == -1 ? "system-wide counting" : "this counter",
						pid == -1 ? 0 : 1);
					cnt_set__close(s);
					return -EACCES;
				}
				if (fd == -ESRCH) {
					cnt_set__close(s);
					return fd;
				}
				/* counted as not supported in every record */
				continue;
			}
			s->fd[c * cfg->nin + k] = fd;
			if (in_group) {
				s->grouped |= 1ull << k;
				if (leader < 0)
					leader = fd;
			}
		}
	}
	if (how & CNT_RDPMC)
		cnt_set__map_rdpmc(s);
	return 0;
}

void cnt_set__close(struct cnt_set *s)
{
	size_t k;

	for (k = 0; s->fd && k < s->nfd; k++) {
		if (s->page && s->page[k])
			munmap(s->page[k], (size_t)sysconf(_SC_PAGESIZE));
		if (s->fd[k] >= 0)
			close(s->fd[k]);
	}
	free(s->page);
	free(s->fd);
	free(s->last);
	free(s->cpus);
	memset(s, 0, sizeof(*s));
}

void cnt_set__enable(struct cnt_set *s, bool on)
{
	size_t k;

	for (k = 0; k < s->ncpu * s->cfg->nin; k++)
		if (s->fd[k] >= 0)
			ioctl(s->fd[k], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

/*
 * rdpmc: when every open counter of the set is a hardware counter the kernel
 * lets user space read (cap_usr_rdpmc), a reading costs no system call.
 */
void cnt_set__map_rdpmc(struct cnt_set *s)
{
#if defined(__x86_64__)
	size_t k, n = s->ncpu * s->cfg->nin, pg = (size_t)sysconf(_SC_PAGESIZE);

	if (s->ncpu != 1)
		return;
	for (k = 0; k < n; k++)
		if (s->fd[k] >= 0 && s->cfg->ine[k]->kind != SONDE_COUNTER_HARDWARE)
			return;
	s->page = calloc(n, sizeof(*s->page));
	if (!s->page)
		return;
	for (k = 0; k < n; k++) {
		void *p;

		if (s->fd[k] < 0)
			continue;
		p = mmap(NULL, pg, PROT_READ, MAP_SHARED, s->fd[k], 0);
		if (p == MAP_FAILED || !((struct perf_event_mmap_page *)p)->cap_usr_rdpmc) {
			if (p != MAP_FAILED)
				munmap(p, pg);
			break;
		}
		s->page[k] = p;
	}
	if (k < n) {
		for (k = 0; k < n; k++)
			if (s->page[k])
				munmap(s->page[k], pg);
		free(s->page);
		s->page = NULL;
		return;
	}
	s->rdpmc = true;
#else
	(void)s;
#endif
}

#if defined(__x86_64__)
/* One counter through its mmap page (the kernel's documented seqlock loop). */
static bool rdpmc_read(struct perf_event_mmap_page *pc, struct cnt_value *v)
{
	uint32_t seq, idx, time_mult = 0, time_shift = 0;
	uint64_t count, enabled, running, cyc = 0, time_offset = 0;
	uint16_t width;
	int tries = 0;

	do {
		seq = __atomic_load_n(&pc->lock, __ATOMIC_ACQUIRE);
		__asm__ volatile("" ::: "memory");
		enabled = pc->time_enabled;
		running = pc->time_running;
		if (pc->cap_user_time && enabled != running) {
			cyc = __builtin_ia32_rdtsc();
			time_offset = pc->time_offset;
			time_mult = pc->time_mult;
			time_shift = pc->time_shift;
		}
		idx = pc->index;
		count = (uint64_t)pc->offset;
		if (!pc->cap_usr_rdpmc || !idx)
			return false;
		width = pc->pmc_width;
		{
			uint64_t pmc = __builtin_ia32_rdpmc((int)(idx - 1));

			pmc <<= 64 - width;
			count += (uint64_t)((int64_t)pmc >> (64 - width));
		}
		__asm__ volatile("" ::: "memory");
	} while (__atomic_load_n(&pc->lock, __ATOMIC_ACQUIRE) != seq && ++tries < 100);
	if (tries >= 100)
		return false;
	if (pc->cap_user_time && enabled != running) {
		uint64_t quot = cyc >> time_shift, rem = cyc & (((uint64_t)1 << time_shift) - 1);
		uint64_t delta = time_offset + quot * time_mult + ((rem * time_mult) >> time_shift);

		enabled += delta;
		if (idx)
			running += delta;
	}
	v->raw = count;
	v->enabled = enabled;
	v->running = running;
	return true;
}
#endif

int cnt_set__read(struct cnt_set *s, struct cnt_value *out)
{
	const struct sonde_counters_config *cfg = s->cfg;
	size_t c, k, nin = cfg->nin;

	memset(out, 0, s->ncpu * nin * sizeof(*out));
#if defined(__x86_64__)
	if (s->rdpmc) {
		for (k = 0; k < nin; k++)
			if (s->page[k] && !rdpmc_read(s->page[k], &out[k]))
				break;
		if (k == nin)
			goto done;
	}
#endif
	for (c = 0; c < s->ncpu; c++) {
		struct cnt_value *o = out + c * nin;

		if (s->grouped) {
			uint64_t buf[3 + CNT_MAX_INPUTS];
			int leader = -1;
			size_t i = 0;

			for (k = 0; k < nin && leader < 0; k++)
				if (s->grouped & (1ull << k))
					leader = s->fd[c * nin + k];
			if (leader >= 0 && sonde_perf_read(leader, buf, sizeof(buf)) <
						   (ssize_t)(3 * sizeof(uint64_t)))
				return -errno ? -errno : -EIO;
			for (k = 0; leader >= 0 && k < nin; k++) {
				if (s->fd[c * nin + k] < 0 || !(s->grouped & (1ull << k)))
					continue;
				o[k].raw = buf[3 + i++];
				o[k].enabled = buf[1];
				o[k].running = buf[2];
				o[k].open = true;
			}
		}
		for (k = 0; k < nin; k++) {
			uint64_t buf[3];
			int fd = s->fd[c * nin + k];

			if (fd < 0 || (s->grouped & (1ull << k)))
				continue;
			if (sonde_perf_read(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
				return -errno ? -errno : -EIO;
			o[k].raw = buf[0];
			o[k].enabled = buf[1];
			o[k].running = buf[2];
			o[k].open = true;
		}
	}
	return 0;
#if defined(__x86_64__)
done:
	for (k = 0; k < nin; k++)
		out[k].open = s->page[k] != NULL;
	return 0;
#endif
}

/*
 * A reading and the time it was taken: the clock is read on both sides of the
 * reads, and a reading the scheduler delayed by more than CNT_READ_SLACK_NS
 * is taken again (a few times at most), so the time stands for the counts to
 * within half that. A window's duration then is the one its counts cover.
 */
#define CNT_READ_SLACK_NS 200000ull

int cnt_set__read_at(struct cnt_set *s, struct cnt_value *out, uint64_t *at)
{
	int tries = 4, rc;
	uint64_t t0, t1;

	do {
		t0 = sonde_clock_ns();
		rc = cnt_set__read(s, out);
		t1 = sonde_clock_ns();
	} while (!rc && t1 - t0 > CNT_READ_SLACK_NS && --tries > 0);
	*at = t0 + (t1 - t0) / 2;
	return rc;
}

/*
 * The counts between two readings. A counter that ran before but not in
 * between counted nothing in between (a task that slept): that is a 0 to
 * report, not a "not counted".
 */
void cnt_value__delta(struct cnt_value *d, const struct cnt_value *now,
		      const struct cnt_value *before)
{
	d->open = now->open;
	d->raw = now->raw - before->raw;
	d->enabled = now->enabled - before->enabled;
	d->running = now->running - before->running;
	d->idle = !d->running && now->running;
}

/* ---- records -------------------------------------------------------------------------- */

/* The dimension positions of instance i of a reading of set s. */
static void positions(const struct cnt_set *s, size_t i, int agent_cpu, struct sonde_dim_pos *dp)
{
	const struct sonde_agent *a;
	size_t na, j;
	int cpu = s && s->ncpu > 1 ? s->cpus[i] : agent_cpu;
	int d;

	for (d = 0; d < SONDE_DIM__COUNT; d++)
		dp->pos[d] = SONDE_DIM_ALL;
	if (cpu < 0)
		return;
	a = sonde_counters__agents(&na);
	for (j = 0; a && j < na; j++)
		if (a[j].cpu == cpu) {
			dp->pos[SONDE_DIM_CPU] = cpu;
			dp->pos[SONDE_DIM_CORE] = a[j].core >= 0 ? a[j].core : SONDE_DIM_ALL;
			dp->pos[SONDE_DIM_PACKAGE] =
				a[j].package >= 0 ? a[j].package : SONDE_DIM_ALL;
			dp->pos[SONDE_DIM_NUMA] = a[j].numa >= 0 ? a[j].numa : SONDE_DIM_ALL;
		}
}

static void put_value(struct cnt_block *b, uint64_t dispatch, uint32_t counter,
		      const struct sonde_dim_pos *dp, double value, uint64_t raw, uint64_t en,
		      uint64_t run, uint32_t flags)
{
	struct sonde_counters_value *v;

	if (b->n == b->cap)
		return;
	v = &b->values[b->n++];
	memset(v, 0, sizeof(*v));
	v->h.kind = SONDE_RECORD_VALUE;
	v->h.size = sizeof(*v);
	v->dispatch_id = dispatch;
	sonde_instance__encode(counter, dp, &v->instance_id);
	v->value = value;
	v->raw = raw;
	v->time_enabled = en;
	v->time_running = run;
	v->flags = flags;
}

/*
 * The values of one reading: delta (ninst x nin) of set s, or of a single
 * instance at agent_cpu. Derived counters are evaluated over the instances.
 */
int cnt_block__fill(struct cnt_block *b, const struct sonde_counters_config *cfg,
		    const struct cnt_set *s, int agent_cpu, const struct cnt_value *delta,
		    size_t ninst, double duration_ns, struct expr_env *env)
{
	/* regions and agents read one instance: no allocation on their path */
	double small_vals[CNT_MAX_INPUTS], small_out[16], *vals = small_vals, *out = small_out;
	bool valid[CNT_MAX_INPUTS];
	struct cnt_reading r = { cfg->in, cfg->nin, ninst, vals, valid, duration_ns };
	struct sonde_dim_pos dp;
	size_t q, i, k, n, cap = 16;
	uint64_t id = b->dispatch;

	if (ninst > EXPR_MAX_VEC)
		return -E2BIG;
	if (ninst > 1) {
		cap = ninst;
		vals = malloc(cfg->nin * ninst * sizeof(double));
		out = malloc(cap * sizeof(double));
		if (!vals || !out) {
			free(vals);
			free(out);
			return -ENOMEM;
		}
		r.vals = vals;
	}
	for (k = 0; k < cfg->nin; k++) {
		valid[k] = true;
		for (i = 0; i < ninst; i++) {
			const struct cnt_value *v = &delta[i * cfg->nin + k];

			if (v->open && v->idle) {
				vals[k * ninst + i] = 0;
			} else if (!v->open || !v->running) {
				valid[k] = false;
				vals[k * ninst + i] = NAN;
			} else {
				vals[k * ninst + i] = v->running < v->enabled
							      ? (double)v->raw *
									(double)v->enabled /
									(double)v->running
							      : (double)v->raw;
			}
		}
	}
	for (q = 0; q < cfg->nreq; q++) {
		struct cnt_entry *e = cfg->reqe[q];

		if (e->kind == SONDE_COUNTER_DERIVED) {
			struct expr_error xe = { 0 };
			uint32_t flags = 0;
			int rc;

			env->div0_col = 0;
			rc = cnt_derive(e, &r, env, out, cap, &n, &xe);
			if (rc) {
				bool ok = cnt_entry__supported(e);

				positions(NULL, 0, ninst == 1 ? agent_cpu : -1, &dp);
				put_value(b, id, e->id, &dp, NAN, 0, 0, 0,
					  ok ? SONDE_VALUE_NOT_COUNTED : SONDE_VALUE_NOT_SUPPORTED);
				continue;
			}
			if (env->div0_col)
				flags |= SONDE_VALUE_DIV0;
			for (i = 0; i < n; i++) {
				positions(s, i, n == 1 && ninst > 1 ? -1 : agent_cpu, &dp);
				put_value(b, id, e->id, &dp, out[i], 0, 0, 0,
					  flags | (isnan(out[i]) && !flags ? SONDE_VALUE_NOT_COUNTED
									   : 0));
			}
			continue;
		}
		for (k = 0; k < cfg->nin && cfg->in[k] != e->id; k++)
			;
		for (i = 0; i < ninst; i++) {
			const struct cnt_value *v = &delta[i * cfg->nin + k];
			uint32_t flags = !cfg->in_ok[k] || !v->open ? SONDE_VALUE_NOT_SUPPORTED
					 : v->idle		    ? 0
					 : !v->running		    ? SONDE_VALUE_NOT_COUNTED
					 : v->running < v->enabled  ? SONDE_VALUE_SCALED
								    : 0;

			positions(s, i, agent_cpu, &dp);
			put_value(b, id, e->id, &dp, vals[k * ninst + i], v->raw, v->enabled,
				  v->running, flags);
		}
	}
	if (vals != small_vals) {
		free(vals);
		free(out);
	}
	return 0;
}

/* ---- buffers -------------------------------------------------------------------------- */

int sonde_counters_buffer__new(struct sonde_counters_context *ctx, size_t bytes, size_t watermark,
			       enum sonde_buffer_policy policy, sonde_buffer_fn fn, void *user,
			       struct sonde_counters_buffer **out)
{
	struct sonde_counters_buffer *b;

	if (!ctx || !fn || bytes < 1024 || watermark > bytes)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b || !(b->data = malloc(bytes))) {
		free(b);
		return -ENOMEM;
	}
	pthread_mutex_init(&b->lock, NULL);
	b->size = bytes;
	b->watermark = watermark ? watermark : 1;
	b->policy = policy;
	b->fn = fn;
	b->user = user;
	b->next = ctx->buffers;
	ctx->buffers = b;
	*out = b;
	return 0;
}

/* Hand everything held to the callback (lock held). */
static void deliver_locked(struct sonde_counters_buffer *b)
{
	const struct sonde_counters_header *stack[512], **hdrs = stack;
	size_t n = 0, off, cap = 512;

	if (!b->used)
		return;
	for (off = 0; off < b->used;
	     off += ((const struct sonde_counters_header *)(b->data + off))->size)
		n++;
	if (n > cap) {
		hdrs = malloc(n * sizeof(*hdrs));
		if (!hdrs) {
			b->dropped += n;
			b->used = 0;
			return;
		}
	}
	n = 0;
	for (off = 0; off < b->used;
	     off += ((const struct sonde_counters_header *)(b->data + off))->size)
		hdrs[n++] = (const struct sonde_counters_header *)(b->data + off);
	b->fn(b, hdrs, n, b->dropped, b->user);
	b->used = 0;
	if (hdrs != stack)
		free(hdrs);
}

/* Append a header and its values as one block. */
void cnt_buffer__put(struct sonde_counters_buffer *b, const void *hdr, size_t hlen,
		     const struct sonde_counters_value *v, size_t n)
{
	size_t len = hlen + n * sizeof(*v);

	pthread_mutex_lock(&b->lock);
	if (b->used + len > b->size) {
		if (b->policy == SONDE_BUFFER_LOSSLESS)
			deliver_locked(b);
		if (b->used + len > b->size) {
			b->dropped += 1 + n;
			pthread_mutex_unlock(&b->lock);
			return;
		}
	}
	memcpy(b->data + b->used, hdr, hlen);
	if (n)
		memcpy(b->data + b->used + hlen, v, n * sizeof(*v));
	b->used += len;
	if (b->used >= b->watermark)
		deliver_locked(b);
	pthread_mutex_unlock(&b->lock);
}

int sonde_counters_buffer__flush(struct sonde_counters_buffer *b)
{
	pthread_mutex_lock(&b->lock);
	deliver_locked(b);
	pthread_mutex_unlock(&b->lock);
	return 0;
}

uint64_t sonde_counters_buffer__dropped(const struct sonde_counters_buffer *b)
{
	return b->dropped;
}

/* ---- contexts ------------------------------------------------------------------------- */

struct sonde_counters_context *_Atomic cnt_active;
_Atomic unsigned cnt_generation = 1;

int sonde_counters_context__new(struct sonde_counters_context **out)
{
	struct sonde_counters_context *ctx = calloc(1, sizeof(*ctx));

	if (!ctx)
		return -ENOMEM;
	ctx->next_dispatch = 1;
	*out = ctx;
	return 0;
}

void sonde_counters_context__free(struct sonde_counters_context *ctx)
{
	struct sonde_counters_buffer *b, *nb;
	size_t i;

	if (!ctx)
		return;
	if (ctx->running)
		sonde_counters_context__stop(ctx);
	for (b = ctx->buffers; b; b = nb) {
		nb = b->next;
		sonde_counters_buffer__flush(b);
		pthread_mutex_destroy(&b->lock);
		free(b->data);
		free(b);
	}
	for (i = 0; i < ctx->nagent; i++)
		free(ctx->agent[i].accum.accum);
	free(ctx->agent);
	free(ctx);
}

int sonde_counters__configure_dispatch(struct sonde_counters_context *ctx,
				       struct sonde_counters_buffer *b, sonde_dispatch_fn fn,
				       void *user)
{
	if (!ctx || !b || !fn || ctx->running)
		return -EINVAL;
	if (ctx->nagent)
		return -EBUSY; /* one service per context, as in rocprofiler */
	ctx->dispatch_buf = b;
	ctx->dispatch_fn = fn;
	ctx->dispatch_user = user;
	return 0;
}

int sonde_counters__configure_agent(struct sonde_counters_context *ctx,
				    struct sonde_counters_buffer *b, uint32_t agent,
				    sonde_agent_profile_fn fn, void *user)
{
	struct cnt_agent *g;
	size_t na;

	if (!ctx || !b || !fn || ctx->running)
		return -EINVAL;
	if (ctx->dispatch_fn)
		return -EBUSY;
	if (!sonde_counters__agents(&na) || agent >= na)
		return -ENODEV;
	g = realloc(ctx->agent, (ctx->nagent + 1) * sizeof(*g));
	if (!g)
		return -ENOMEM;
	ctx->agent = g;
	g = &ctx->agent[ctx->nagent++];
	memset(g, 0, sizeof(*g));
	g->agent = agent;
	g->buf = b;
	g->fn = fn;
	g->user = user;
	return 0;
}

/* Read agent g's counters into g->now. */
static int agent_read(struct cnt_agent *g)
{
	return g->cfg ? cnt_set__read_at(&g->set, g->now, &g->t_now) : 0;
}

/* Record agent g's reading (agent_read) as a sample: the counts since the last. */
static void agent_record(struct sonde_counters_context *ctx, struct cnt_agent *g, bool last)
{
	const struct sonde_agent *a;
	struct cnt_value delta[CNT_MAX_INPUTS];
	struct sonde_counters_value vals[CNT_MAX_INPUTS * 4];
	struct sonde_counters_dispatch h = { 0 };
	struct cnt_block blk = { vals, 0, CNT_MAX_INPUTS * 4, 0 };
	uint64_t t = g->t_now;
	size_t na, k;

	if (!g->cfg)
		return;
	a = sonde_counters__agents(&na);
	for (k = 0; k < g->cfg->nin; k++) {
		cnt_value__delta(&delta[k], &g->now[k], &g->set.last[k]);
		g->set.last[k] = g->now[k];
	}
	h.h.kind = SONDE_RECORD_AGENT;
	h.h.size = sizeof(h);
	h.dispatch_id = blk.dispatch = ctx->next_dispatch++;
	h.correlation_id = g->samples++;
	h.config_id = g->cfg->id;
	h.agent = g->agent;
	h.start_ns = g->t_last;
	h.end_ns = t;
	snprintf(h.name, sizeof(h.name), "%s", a[g->agent].name);
	g->accum.last_sample = last;
	g->accum.series = true;
	cnt_block__fill(&blk, g->cfg, NULL, a[g->agent].cpu, delta, 1, (double)(t - g->t_last),
			&g->accum);
	h.nvalues = (uint32_t)blk.n;
	g->t_last = t;
	cnt_buffer__put(g->buf, &h, sizeof(h), vals, blk.n);
}

int sonde_counters_context__start(struct sonde_counters_context *ctx, struct sonde_strbuf *err)
{
	struct sonde_counters_context *none = NULL;
	const struct sonde_agent *a;
	size_t na, i;
	int rc;

	if (!ctx || ctx->running)
		return -EINVAL;
	a = sonde_counters__agents(&na);
	for (i = 0; i < ctx->nagent; i++) {
		struct cnt_agent *g = &ctx->agent[i];

		g->cfg = NULL;
		g->fn(ctx, g->agent, &g->cfg, g->user);
		if (!g->cfg)
			continue;
		if (g->cfg->agent != g->agent) {
			sonde_strbuf__addf(err,
					   "the profile config of agent %u was made for agent %u",
					   g->agent, g->cfg->agent);
			rc = -EINVAL;
			goto undo;
		}
		rc = cnt_set__open(&g->set, g->cfg, -1, &a[g->agent].cpu, 1, CNT_DISABLED, err);
		if (rc)
			goto undo;
	}
	if (ctx->dispatch_fn && !atomic_compare_exchange_strong(&cnt_active, &none, ctx)) {
		sonde_strbuf__adds(err, "another counter context is running in this process");
		rc = -EBUSY;
		goto undo;
	}
	atomic_fetch_add(&cnt_generation, 1);
	for (i = 0; i < ctx->nagent; i++) {
		struct cnt_agent *g = &ctx->agent[i];

		if (!g->cfg)
			continue;
		cnt_set__enable(&g->set, true);
		cnt_set__read_at(&g->set, g->set.last, &g->t_last);
	}
	ctx->running = true;
	return 0;
undo:
	while (i-- > 0)
		if (ctx->agent[i].cfg)
			cnt_set__close(&ctx->agent[i].set);
	return rc;
}

int sonde_counters_context__sample(struct sonde_counters_context *ctx)
{
	size_t i;
	int rc = 0;

	if (!ctx || !ctx->running)
		return -EINVAL;
	/* a tick is every agent's sample or none: the agents' samples are paired
	   by their index, and a tick left out merges into the next */
	for (i = 0; i < ctx->nagent && !rc; i++)
		rc = agent_read(&ctx->agent[i]);
	for (i = 0; i < ctx->nagent && !rc; i++)
		agent_record(ctx, &ctx->agent[i], false);
	return rc;
}

int sonde_counters_context__stop(struct sonde_counters_context *ctx)
{
	struct sonde_counters_context *me = ctx;
	size_t i;
	int rc = 0;

	if (!ctx || !ctx->running)
		return -EINVAL;
	for (i = 0; i < ctx->nagent; i++) {
		struct cnt_agent *g = &ctx->agent[i];

		if (!g->cfg)
			continue;
		if (!rc && !(rc = agent_read(g)))
			agent_record(ctx, g, true);
		cnt_set__close(&g->set);
	}
	atomic_compare_exchange_strong(&cnt_active, &me, NULL);
	atomic_fetch_add(&cnt_generation, 1);
	ctx->running = false;
	return rc;
}

/* ---- a process as a dispatch ---------------------------------------------------------- */

struct sonde_process_dispatch {
	struct sonde_counters_context *ctx;
	const struct sonde_counters_config *cfg;
	struct cnt_set set;
	struct expr_env accum;
	uint64_t id, samples, t_last;
	pid_t pid;
	char name[64];
};

int sonde_counters__dispatch_process(struct sonde_counters_context *ctx, pid_t pid,
				     const char *name, bool enable_on_exec,
				     struct sonde_strbuf *err, struct sonde_process_dispatch **out)
{
	struct sonde_dispatch_info info = { 0 };
	const struct sonde_counters_config *cfg = NULL;
	struct sonde_process_dispatch *d;
	int rc;

	*out = NULL;
	if (!ctx || !ctx->dispatch_fn)
		return -EINVAL;
	info.dispatch_id = ctx->next_dispatch;
	info.name = name;
	info.pid = info.tid = pid;
	ctx->dispatch_fn(&info, &cfg, ctx->dispatch_user);
	if (!cfg)
		return 0;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	rc = cnt_set__open(&d->set, cfg, pid, NULL, 0,
			   CNT_INHERIT | (enable_on_exec ? CNT_DISABLED | CNT_ENABLE_ON_EXEC : 0),
			   err);
	if (rc) {
		free(d);
		return rc;
	}
	d->ctx = ctx;
	d->cfg = cfg;
	d->id = ctx->next_dispatch++;
	d->pid = pid;
	d->t_last = sonde_clock_ns();
	snprintf(d->name, sizeof(d->name), "%s", name ? name : "");
	*out = d;
	return 0;
}

int sonde_process_dispatch__sample(struct sonde_process_dispatch *d, bool last)
{
	size_t n = d->set.ncpu * d->cfg->nin, k;
	struct cnt_value *now = calloc(n, sizeof(*now)), *delta = calloc(n, sizeof(*delta));
	size_t cap = d->cfg->nreq * d->set.ncpu + 1;
	struct sonde_counters_value *vals = calloc(cap, sizeof(*vals));
	struct cnt_block blk = { vals, 0, cap, d->id };
	struct sonde_counters_dispatch h = { 0 };
	uint64_t t;
	int rc = -ENOMEM;

	if (!now || !delta || !vals)
		goto out;
	rc = cnt_set__read_at(&d->set, now, &t);
	if (rc)
		goto out;
	for (k = 0; k < n; k++) {
		cnt_value__delta(&delta[k], &now[k], &d->set.last[k]);
		d->set.last[k] = now[k];
	}
	h.h.kind = SONDE_RECORD_DISPATCH;
	h.h.size = sizeof(h);
	h.dispatch_id = d->id;
	h.correlation_id = d->samples++;
	h.config_id = d->cfg->id;
	h.agent = d->cfg->agent;
	h.pid = h.tid = (uint32_t)d->pid;
	h.start_ns = d->t_last;
	h.end_ns = t;
	memcpy(h.name, d->name, sizeof(h.name));
	d->accum.last_sample = last;
	d->accum.series = true;
	rc = cnt_block__fill(&blk, d->cfg, &d->set, -1, delta, d->set.ncpu, (double)(t - d->t_last),
			     &d->accum);
	if (rc)
		goto out;
	h.nvalues = (uint32_t)blk.n;
	d->t_last = t;
	cnt_buffer__put(d->ctx->dispatch_buf, &h, sizeof(h), vals, blk.n);
out:
	free(now);
	free(delta);
	free(vals);
	return rc;
}

void sonde_process_dispatch__free(struct sonde_process_dispatch *d)
{
	if (!d)
		return;
	cnt_set__close(&d->set);
	free(d->accum.accum);
	free(d);
}
