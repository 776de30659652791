/*
 * collector.c - `sonde collect sched`: how the scheduler treated the target's
 * threads. With root and BTF, BPF programs on the scheduler's tracepoints
 * (ebpf.c); without, /proc every interval (procfs.c), and a note of what is
 * then missing.
 *
 * Per thread: on-CPU time, run-queue wait (and its log2 histogram), off-CPU
 * time by reason (sleeping: switched out interruptible, until woken;
 * blocked: uninterruptible, mostly disk I/O, until woken; preempted: switched
 * out runnable, until back on a CPU), voluntary and involuntary switches,
 * migrations, wake-ups, and the interrupt and softirq time its CPUs took while
 * it ran. System calls of the tree by name: count, errors, time, maximum and
 * a log2 histogram.
 *
 * The scheduler interference index of a thread (and of all of them) is
 *   (run-queue wait + irq + softirq) / (on-CPU time + run-queue wait)
 * the share of the time it could run that it spent waiting for a CPU or
 * giving its CPU to interrupts: 0 when nothing got in its way, at most 1.
 *
 * Resources: type "thread" (uid the thread's name; fixed tid, pid), type
 * "threads" (uid "all", the sums), type "syscall" (uid the call's name);
 * subtype the metric, fixed unit; columns amount and order (the run). The
 * timeline (ebpf only) is in the profile's "sched" member: the threads, and
 * spans [tid, state, start ns since the collection began, duration ns, cpu].
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/clock.h>
#include <sonde/collector.h>
#include <sonde/syscalls.h>
#include <sonde/warning.h>
#include "config.h"
#include "../../json.h"
#include "../../u64map.h"
#include "loader.h"

static const char *const state_name[SC__N] = { "unknown",  "running", "runnable",
					       "sleeping", "blocked", "exited" };

struct sched_state {
	bool use_bpf, timeline, syscalls;
	double interval_ms;
	struct sc_bpf *bpf;
	struct sc_proc *proc;
	struct sc_data d;
	unsigned run;
	unsigned long long reported; /* drops told to the session so far */
	uint64_t t0;
	char why_proc[256]; /* why /proc is used instead of eBPF */
	/* /proc: the runs' totals from wait4 (the whole tree, reaped children
	   included), to say how much of them the threads read add up to */
	unsigned long long wait_cpu_ns, wait_vol, wait_invol;
	bool have_wait;
};

#if !SONDE_HAVE_EBPF
bool sc_bpf__built(void)
{
	return false;
}
int sc_bpf__open(struct sc_bpf **out, bool timeline, bool syscalls, size_t ring_bytes,
		 struct sonde_strbuf *err)
{
	(void)timeline;
	(void)syscalls;
	(void)ring_bytes;
	*out = NULL;
	sonde_strbuf__adds(err, "this sonde was built without libbpf");
	return -ENOTSUP;
}
int sc_bpf__follow(struct sc_bpf *b, pid_t pid, struct sonde_strbuf *err)
{
	(void)b;
	(void)pid;
	(void)err;
	return -ENOTSUP;
}
int sc_bpf__harvest(struct sc_bpf *b, struct sc_data *d, unsigned run, bool keep)
{
	(void)b;
	(void)d;
	(void)run;
	(void)keep;
	return 0;
}
void sc_bpf__free(struct sc_bpf *b)
{
	(void)b;
}
#endif

static int sched_before(struct sonde_collection *c)
{
	struct sched_state *st = calloc(1, sizeof(*st));
	const char *source = sonde_collection__param_str(c, "source", "auto");
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	long long ring = sonde_collection__param_int(c, "ring", 16 << 20);
	int rc;

	if (!st)
		return -ENOMEM;
	sonde_collection__set_priv(c, st);
	st->timeline = !sonde_collection__param_bool(c, "no-timeline");
	/* opt-in: while their tracepoints are attached, every system call of the
	   machine, not only the target's, takes the kernel's traced path */
	st->syscalls = sonde_collection__param_bool(c, "syscalls") &&
		       !sonde_collection__param_bool(c, "no-syscalls");
	st->interval_ms = sonde_collection__param_double(c, "interval", 10);
	if (ring < 4096 || (ring & (ring - 1))) {
		sonde_collection__fail(
			c, "--ring: %lld is not a power of two of at least 4096 bytes", ring);
		return -EINVAL;
	}
	if (strcmp(source, "proc")) {
		rc = sc_bpf__open(&st->bpf, st->timeline, st->syscalls, (size_t)ring, &err);
		if (rc == -ENOMEM) {
			sonde_strbuf__release(&err);
			return rc;
		}
		if (rc && !strcmp(source, "ebpf")) {
			sonde_collection__fail(c, "the sched collector cannot use eBPF here: %s",
					       err.buf);
			sonde_strbuf__release(&err);
			return -ENOTSUP;
		}
		if (rc)
			snprintf(st->why_proc, sizeof(st->why_proc), "%s", err.buf);
		st->use_bpf = rc == 0;
	} else {
		snprintf(st->why_proc, sizeof(st->why_proc), "--source proc");
	}
	if (!st->use_bpf)
		sonde_collection__note(
			c,
			"sched: reading /proc instead of eBPF (%s): off-CPU time by reason, "
			"interrupts, system calls, migrations, the run-queue histogram and the "
			"timeline are not measured, and a thread that starts and ends between "
			"two readings is not seen (stats.sched.runs_total has wait4's totals)",
			st->why_proc);
	sonde_strbuf__release(&err);
	return 0;
}

static int sched_start(struct sonde_collection *c, pid_t pid)
{
	struct sched_state *st = sonde_collection__priv(c);
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	int rc;

	st->t0 = sonde_collection__t0_ns(c);
	if (!st->use_bpf)
		return sc_proc__start(&st->proc, pid, st->interval_ms);
	rc = sc_bpf__follow(st->bpf, pid, &err);
	if (rc && err.len)
		sonde_collection__fail(c, "%s", err.buf);
	sonde_strbuf__release(&err);
	return rc;
}

/*
 * /proc: the target exited and is not reaped yet; its threads' last values
 * are read while its /proc entries still hold them.
 */
static int sched_exited(struct sonde_collection *c, pid_t pid)
{
	struct sched_state *st = sonde_collection__priv(c);

	(void)pid;
	if (st->proc)
		sc_proc__last(st->proc);
	return 0;
}

static int sched_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	struct sched_state *st = sonde_collection__priv(c);
	int rc;

	if (!st->use_bpf && !ri->warmup && ri->run) {
		const struct rusage *ru = &ri->run->rusage;

		st->wait_cpu_ns += sonde_rusage_cpu_ns(ru);
		st->wait_vol += (unsigned long long)ru->ru_nvcsw;
		st->wait_invol += (unsigned long long)ru->ru_nivcsw;
		st->have_wait = true;
	}

	if (st->use_bpf) {
		rc = sc_bpf__harvest(st->bpf, &st->d, st->run, !ri->warmup);
	} else {
		rc = st->proc ? sc_proc__stop(st->proc, &st->d, st->run, !ri->warmup) : 0;
		sc_proc__free(st->proc);
		st->proc = NULL;
	}
	if (!ri->warmup)
		st->run++;
	{ /* what could not be kept, counted as the run ends */
		unsigned long long n = st->d.oom;
		int k;

		for (k = 0; k < SC_ST_MISSED_SWITCHES; k++) /* missed: not lost data, a warning */
			n += st->d.drops[k];
		if (n > st->reported)
			sonde_collection__dropped(c, n - st->reported);
		st->reported = n;
	}
	return rc;
}

/* ---- the profile ---------------------------------------------------------------------------- */

enum {
	X_ONCPU,
	X_RUNQ,
	X_SLEEP,
	X_BLOCKED,
	X_PREEMPTED,
	X_IRQ,
	X_SOFTIRQ,
	X_VOL,
	X_INVOL,
	X_MIGR,
	X_WAKE,
	X_INDEX,
	X__N
};

static const struct {
	const char *name, *unit;
	bool bpf_only;
} metric[X__N] = {
	[X_ONCPU] = { "on-cpu", "ns" },
	[X_RUNQ] = { "runqueue", "ns" },
	[X_SLEEP] = { "sleeping", "ns", true },
	[X_BLOCKED] = { "blocked", "ns", true },
	[X_PREEMPTED] = { "preempted", "ns", true },
	[X_IRQ] = { "irq", "ns", true },
	[X_SOFTIRQ] = { "softirq", "ns", true },
	[X_VOL] = { "switches-voluntary", "events" },
	[X_INVOL] = { "switches-involuntary", "events" },
	[X_MIGR] = { "migrations", "events", true },
	[X_WAKE] = { "wakeups", "events", true },
	[X_INDEX] = { "interference-index", "ratio" },
};

static void values(const struct sc_thread *t, double v[X__N])
{
	double runnable = (double)t->oncpu_ns + (double)t->runq_ns;

	v[X_ONCPU] = (double)t->oncpu_ns;
	v[X_RUNQ] = (double)t->runq_ns;
	v[X_SLEEP] = (double)t->off_ns[SC_OFF_SLEEPING];
	v[X_BLOCKED] = (double)t->off_ns[SC_OFF_BLOCKED];
	v[X_PREEMPTED] = (double)t->off_ns[SC_OFF_PREEMPTED];
	v[X_IRQ] = (double)t->irq_ns;
	v[X_SOFTIRQ] = (double)t->softirq_ns;
	v[X_VOL] = (double)t->vol;
	v[X_INVOL] = (double)t->invol;
	v[X_MIGR] = (double)t->migrations;
	v[X_WAKE] = (double)t->wakeups;
	v[X_INDEX] = runnable > 0
			     ? ((double)t->runq_ns + (double)t->irq_ns + (double)t->softirq_ns) /
				       runnable
			     : NAN;
	if (v[X_INDEX] > 1)
		v[X_INDEX] = 1;
}

static int add_values(struct sched_state *st, struct sonde_profile *p, const char *type,
		      const char *uid, json_t *extra, const double v[X__N], unsigned run)
{
	int m, err = 0;

	for (m = 0; m < X__N; m++) {
		json_t *x = json_deep_copy(extra);
		long res;

		if (metric[m].bpf_only && !st->use_bpf) {
			json_decref(x);
			continue;
		}
		json_object_set_new(x, "unit", json_string(metric[m].unit));
		res = sonde_profile__resource(p, uid, type, metric[m].name, x);
		json_decref(x);
		if (res < 0)
			return (int)res;
		err |= sonde_profile__append(p, res, "amount",
					     isnan(v[m]) ? json_null() : json_real(v[m]));
		err |= sonde_profile__append(p, res, "order", json_integer(run + 1)); /* 1-based */
	}
	return err ? -ENOMEM : 0;
}

static json_t *histogram(const unsigned long long *h)
{
	json_t *a = json_array();
	int k;

	for (k = 0; k < SC_HIST; k++)
		if (h[k])
			json_array_append_new(a, json_pack("{s:I, s:I, s:I}", "from_ns",
							   (json_int_t)(1ull << k), "to_ns",
							   (json_int_t)(2ull << k), "count",
							   (json_int_t)h[k]));
	return a;
}

/*
 * The timeline: each thread's states as spans, from its events in time order,
 * written as text (sonde_profile__set_text): a busy run has millions of
 * spans, five integers each, which as a tree would be a malloc a value.
 */
static int timeline(struct sched_state *st, struct sonde_strbuf *sb)
{
	json_t *threads = json_array(), *states = json_array();
	struct u64map last = { 0 }; /* (run, tid) -> its last event */
	json_int_t row[5];
	size_t i, n = 0;
	int s, err = !threads || !states;

	for (s = 0; s < SC__N && !err; s++)
		err = json_array_append_new(states, json_string(state_name[s]));
	for (i = 0; i < st->d.nthreads && !err; i++) {
		const struct sc_thread_rec *t = &st->d.threads[i];

		err = json_array_append_new(threads, json_pack("{s:i, s:i, s:s, s:i}", "tid",
							       t->tid, "pid", t->t.tgid, "name",
							       t->t.comm, "run", t->run + 1));
	}
	err |= sonde_strbuf__addch(sb, '{');
	err |= sonde_json__put_member(sb, "states", 1, 1, true) |
	       sonde_json__dump_layout(sb, states, 1, 2);
	err |= sonde_json__put_member(sb, "threads", 1, 1, false) |
	       sonde_json__dump_layout(sb, threads, 1, 2);
	json_decref(states);
	json_decref(threads);
	/* [tid, state, start_ns, duration_ns, cpu]: in time order, each thread's
	   next event ends its span */
	err |= sonde_json__put_member(sb, "spans", 1, 1, false) | sonde_strbuf__addch(sb, '[');
	for (i = 0; i < st->d.nevents && !err; i++) {
		const struct sc_event_rec *b = &st->d.events[i], *a;
		uint64_t key = (uint64_t)b->run << 32 | b->e.tid, prev;

		if (u64map__get(&last, key, &prev)) {
			a = &st->d.events[prev];
			if (a->e.state != SC_EXITED) {
				row[0] = a->e.tid;
				row[1] = a->e.state;
				row[2] = (json_int_t)(a->e.ts > st->t0 ? a->e.ts - st->t0 : 0);
				row[3] = (json_int_t)(b->e.ts - a->e.ts);
				row[4] = a->e.cpu;
				err = sonde_json__put_row(sb, row, 5, 1, 2, n++);
			}
		}
		err |= u64map__put(&last, key, i);
	}
	u64map__release(&last);
	err |= sonde_json__put_close(sb, ']', n, 1, 2) | sonde_json__put_close(sb, '}', 3, 1, 1);
	return err ? -ENOMEM : 0;
}

static int by_time(const void *x, const void *y)
{
	const struct sc_event_rec *a = x, *b = y;

	if (a->run != b->run)
		return a->run < b->run ? -1 : 1;
	return a->e.ts < b->e.ts ? -1 : a->e.ts > b->e.ts;
}

static int sched_after(struct sonde_collection *c, struct sonde_profile *p)
{
	struct sched_state *st = sonde_collection__priv(c);
	json_t *s = json_object(), *sys_h = json_object(), *drops;
	unsigned long long runq_h[SC_HIST] = { 0 };
	unsigned run;
	size_t i;
	int k, rc = 0;

	for (run = 0; run < st->run && !rc; run++) {
		struct sc_thread sum = { 0 };
		double v[X__N];

		for (i = 0; i < st->d.nthreads && !rc; i++) {
			const struct sc_thread_rec *t = &st->d.threads[i];
			json_t *extra;

			if (t->run != run)
				continue;
			extra = json_pack("{s:i, s:i}", "tid", t->tid, "pid", t->t.tgid);
			values(&t->t, v);
			rc = add_values(st, p, "thread", t->t.comm[0] ? t->t.comm : "?", extra, v,
					run);
			json_decref(extra);
			sum.oncpu_ns += t->t.oncpu_ns;
			sum.runq_ns += t->t.runq_ns;
			for (k = 0; k < SC_OFF__N; k++)
				sum.off_ns[k] += t->t.off_ns[k];
			sum.irq_ns += t->t.irq_ns;
			sum.softirq_ns += t->t.softirq_ns;
			sum.vol += t->t.vol;
			sum.invol += t->t.invol;
			sum.migrations += t->t.migrations;
			sum.wakeups += t->t.wakeups;
			for (k = 0; k < SC_HIST; k++)
				runq_h[k] += t->t.runq_hist[k];
		}
		if (!rc) {
			json_t *extra = json_object();

			values(&sum, v);
			rc = add_values(st, p, "threads", "all", extra, v, run);
			json_decref(extra);
		}
	}
	for (i = 0; i < st->d.nsyscalls && !rc; i++) {
		const struct sc_syscall_rec *r = &st->d.syscalls[i];
		static const char *const sub[4] = { "count", "errors", "time", "max" };
		static const char *const unit[4] = { "events", "events", "ns", "ns" };
		const double v[4] = { (double)r->s.count, (double)r->s.errors,
				      (double)r->s.total_ns, (double)r->s.max_ns };
		char name[64];

		sonde_syscall__name((long)r->nr, name, sizeof(name));
		for (k = 0; k < 4 && !rc; k++) {
			json_t *extra = json_pack("{s:s}", "unit", unit[k]);
			long res = sonde_profile__resource(p, name, "syscall", sub[k], extra);

			json_decref(extra);
			if (res < 0) {
				rc = (int)res;
				break;
			}
			rc = sonde_profile__append(p, res, "amount", json_real(v[k])) |
			     sonde_profile__append(p, res, "order", json_integer(r->run + 1));
		}
	}
	{ /* each call's histogram, its buckets summed over the runs */
		for (i = 0; i < st->d.nsyscalls; i++) {
			unsigned long long h[SC_HIST] = { 0 };
			char name[64];
			size_t j;

			sonde_syscall__name((long)st->d.syscalls[i].nr, name, sizeof(name));
			if (json_object_get(sys_h, name))
				continue;
			for (j = i; j < st->d.nsyscalls; j++)
				if (st->d.syscalls[j].nr == st->d.syscalls[i].nr)
					for (k = 0; k < SC_HIST; k++)
						h[k] += st->d.syscalls[j].s.hist[k];
			json_object_set_new(sys_h, name, histogram(h));
		}
	}
	json_object_set_new(s, "source", json_string(st->use_bpf ? "ebpf" : "proc"));
	if (!st->use_bpf) {
		json_object_set_new(s, "why_proc", json_string(st->why_proc));
		json_object_set_new(s, "interval_ms", json_real(st->interval_ms));
		/* a late reading lengthens what an exiting thread loses */
		ticker__report_late(&st->d.late, (uint64_t)(st->interval_ms * 1e6), "sched", s, c);
		json_object_set_new(
			s, "runs_total",
			st->have_wait ? json_pack("{s:I, s:I, s:I}", "cpu_ns",
						  (json_int_t)st->wait_cpu_ns, "voluntary_switches",
						  (json_int_t)st->wait_vol, "involuntary_switches",
						  (json_int_t)st->wait_invol)
				      : json_null());
	}
	json_object_set_new(s, "runqueue_histogram", st->use_bpf ? histogram(runq_h) : json_null());
	json_object_set_new(s, "syscall_histograms",
			    st->use_bpf && st->syscalls ? sys_h : json_null());
	if (!st->use_bpf || !st->syscalls)
		json_decref(sys_h);
	drops = json_pack("{s:I, s:I, s:I, s:I, s:I}", "timeline_events",
			  (json_int_t)st->d.drops[SC_ST_RING_DROPS], "threads",
			  (json_int_t)st->d.drops[SC_ST_THREAD_DROPS], "syscalls",
			  (json_int_t)st->d.drops[SC_ST_SYSCALL_DROPS], "processes",
			  (json_int_t)st->d.drops[SC_ST_PROC_DROPS], "out_of_memory",
			  (json_int_t)st->d.oom);
	json_object_set_new(s, "dropped", drops);
	json_object_set_new(s, "missed",
			    st->use_bpf ? json_pack("{s:I, s:I}", "switches",
						    (json_int_t)st->d.drops[SC_ST_MISSED_SWITCHES],
						    "syscall_exits",
						    (json_int_t)st->d.drops[SC_ST_MISSED_SYSCALLS])
					: json_null());
	if (st->d.drops[SC_ST_MISSED_SWITCHES] || st->d.drops[SC_ST_MISSED_SYSCALLS]) {
		char msg[256];

		snprintf(msg, sizeof(msg),
			 "the kernel did not deliver %llu scheduler switches and %llu system call "
			 "exits to sonde's programs; the times around them are approximate",
			 st->d.drops[SC_ST_MISSED_SWITCHES], st->d.drops[SC_ST_MISSED_SYSCALLS]);
		sonde_profile__add_warning(p, "events-missed", msg,
					   sonde_warning__info(SONDE_WARN_EVENTS_MISSED)->fix);
	}
	if (st->d.too_deep)
		sonde_collection__note(c, "sched: the process tree is deeper than 64 levels: /proc "
					  "was not read below that depth");
	json_object_set_new(s, "definition",
			    json_string("interference-index = (runqueue + irq + softirq) / "
					"(on-cpu + runqueue)"));
	sonde_profile__set(sonde_profile__stats(p), "sched", s);
	if (st->use_bpf && st->timeline) {
		struct sonde_strbuf tl = SONDE_STRBUF_INIT;

		qsort(st->d.events, st->d.nevents, sizeof(*st->d.events), by_time);
		if (!rc)
			rc = timeline(st, &tl);
		if (!rc)
			rc = sonde_profile__set_text(p, "sched", &tl);
		sonde_strbuf__release(&tl);
	}
	return rc;
}

static void sched_cleanup(struct sonde_collection *c)
{
	struct sched_state *st = sonde_collection__priv(c);

	if (!st)
		return;
	sc_proc__free(st->proc);
	sc_bpf__free(st->bpf);
	sc_data__release(&st->d);
	free(st);
}

static const char *const sched_units[] = { "amount", "the metric's unit", NULL };

static const char *const sources[] = { "auto", "ebpf", "proc", NULL };

static const struct sonde_option sched_options[] = {
	{ SONDE_OPT_CHOICE, 0, "source", NULL, "SRC",
	  "auto (eBPF where it can load, else /proc), ebpf (or fail), proc", 0, 0, sources },
	{ SONDE_OPT_FLAG, 0, "no-timeline", NULL, NULL,
	  "count only: no per-thread state timeline (ebpf)" },
	{ SONDE_OPT_FLAG, 0, "syscalls", NULL, NULL,
	  "also trace system calls: counts, errors and latency histograms by name (ebpf; off "
	  "by default: while traced, every system call of the machine takes the kernel's "
	  "slower traced path)" },
	{ SONDE_OPT_FLAG, 0, "no-syscalls", NULL, NULL,
	  "leave system calls out (the default; overrides --syscalls)" },
	{ SONDE_OPT_INT, 0, "ring", NULL, "BYTES",
	  "the timeline's ring buffer (a power of two; default 16 MiB); what it misses is "
	  "counted",
	  4096, 1 << 30 },
	{ SONDE_OPT_DURATION, 'I', "interval", NULL, NULL,
	  "/proc: read the threads every DURATION (default 10ms; plain: milliseconds)", 1, 3.6e6,
	  .unit_s = 1e-3 },
	{ .type = SONDE_OPT_END },
};

const struct sonde_collector sonde_collector_sched = {
	.abi = SONDE_COLLECTOR_ABI,
	.name = "sched",
	.summary = "scheduler states, run-queue waits, interrupts and system calls per thread",
	.profile_type = "sched",
	.units = sched_units,
	.options = sched_options,
	.flags = SONDE_COLLECTOR_EXCLUSIVE | SONDE_COLLECTOR_NEEDS_BARRIER |
		 SONDE_COLLECTOR_ONE_RUN | SONDE_COLLECTOR_ORDER_IS_RUN,
	.before = sched_before,
	.start = sched_start,
	.stop = sched_stop,
	.exited = sched_exited,
	.after = sched_after,
	.cleanup = sched_cleanup,
};
