/*
 * collector.c - the sampling collector: where a program's time goes, from
 * perf_event samples of its threads (inherited across fork), with user and
 * kernel stacks, on and (--off-cpu) off the CPU.
 *
 * start() opens the events on the stopped child (enabled at its exec) and a
 * reader thread keeps every record while the target runs; stop() replays
 * them in time order into a sampled calltrace (resolve.c), so the profile is
 * the sampled trace profile every trace view reads.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sonde/calltrace.h>
#include <sonde/collector.h>
#include <sonde/runner.h>
#include "sample.h"
#include "proto/sample.h"
#include "../../engines/preload/rt-host.h"
#include "proto/rt.h"
#include "../../engines/preload/py-exe.h"
#include "../../engines/counters/counters.h"

struct smp_state {
	struct smp_cfg cfg;
	bool itimer; /* the fallback: SIGPROF in libsonde-sample.so, no perf_event */
	struct rt_host host;
	struct smp_rec rec;
	bool open;
	struct smp_resolver *res;
	struct sonde_calltrace *ct;
	unsigned runs;
	uint64_t lost, lost_samples, records, rt_samples, rt_truncated;
	json_t *py; /* the Python reader's figures, of the last run that had any */
	struct sonde_strbuf why;
};

static int read_int(const char *path, int def)
{
	FILE *f = fopen(path, "re");
	int v = def;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = def;
		fclose(f);
	}
	return v;
}

/* The event to sample, through the counter catalog (perf's names, libpfm4's). */
static int pick_event(struct sonde_collection *c, struct smp_cfg *cfg)
{
	const char *name = sonde_collection__param_str(c, "event", "cpu-clock");
	struct cnt_entry *e = cnt_catalog__find(name);
	struct perf_event_attr a;

	if (!e || e->kind == SONDE_COUNTER_DERIVED || cnt_entry__attr(e, &a)) {
		sonde_collection__fail(c,
				       "collect sample: %s is not an event that can be sampled "
				       "(see sonde counters list)",
				       name);
		return -EINVAL;
	}
	cfg->event = name;
	cfg->type = a.type;
	cfg->config = a.config;
	cfg->config1 = a.config1;
	cfg->config2 = a.config2;
	cfg->time_event = a.type == PERF_TYPE_SOFTWARE && (a.config == PERF_COUNT_SW_CPU_CLOCK ||
							   a.config == PERF_COUNT_SW_TASK_CLOCK);
	return 0;
}

/*
 * The command is a CPython (an interpreter, or a script whose #! names one;
 * attached: a process whose executable is one): the reader is woken at each
 * sample, to read the Python frames while they are still those of the
 * sample. Otherwise it wakes every quarter ring or 50 ms, which costs the
 * target less; Python processes started along the way are still read.
 */
static bool python_target(struct sonde_collection *c)
{
	char *const *argv = sonde_collection__argv(c);
	char *path, **bang;
	bool yes;

	if (!argv || !argv[0])
		return false;
	if (py_exe__is_python(argv[0]))
		return true;
	path = sonde_runner__resolve(argv[0]);
	bang = path ? py_exe__shebang(path) : NULL;
	yes = bang != NULL;
	for (size_t i = 0; bang && bang[i]; i++)
		free(bang[i]);
	free(bang);
	free(path);
	return yes;
}

/* Whether this process may open a sampling event on itself (the permission the target needs). */
static int perf_refused(int *level)
{
	struct perf_event_attr a;
	long fd;

	*level = read_int("/proc/sys/kernel/perf_event_paranoid", 2);
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_freq = 99;
	a.freq = 1;
	a.disabled = 1;
	a.exclude_kernel = 1;
	fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0) {
		close((int)fd);
		return 0;
	}
	return errno == EACCES || errno == EPERM ? -errno : 0;
}

/*
 * perf_event, or the SIGPROF runtime: asked for (--fallback itimer), or
 * where perf_event is refused (--fallback auto, the default, says so).
 */
static int pick_mode(struct sonde_collection *c, struct smp_state *st)
{
	const char *fb = sonde_collection__param_str(c, "fallback", "auto");
	struct rt_host_spec spec = {
		.collector = "sample",
		.runtime = "libsonde-sample.so",
		.ring_env = SMP_ENV_RING,
		.rings = 64,
		.ring_bytes = 1u << 20,
		.spill_rings = RT_SPILL_RINGS,
		.spill_bytes = RT_SPILL_BYTES,
	};
	char num[16];
	int level = 0, rc, refused = 0;

	st->host.log_fd = -1;
	if (!strcmp(fb, "none") || (strcmp(fb, "itimer") && !(refused = perf_refused(&level))))
		return 0;
	if (sonde_collection__attaching(c) || st->cfg.off_cpu || st->cfg.graph != SMP_FP ||
	    !st->cfg.time_event || !st->cfg.hz) {
		sonde_collection__fail(
			c,
			"collect sample: %s needs perf_event, which the SIGPROF fallback "
			"does not replace (run as root, or sysctl kernel.perf_event_paranoid=1)",
			sonde_collection__attaching(c) ? "-p"
			: st->cfg.off_cpu	       ? "--off-cpu"
			: st->cfg.graph != SMP_FP      ? "--call-graph other than fp"
			: !st->cfg.hz		       ? "-c"
						       : "an event other than cpu-clock");
		return -EOPNOTSUPP;
	}
	if (strcmp(fb, "itimer"))
		sonde_collection__note(c,
				       "perf_event is refused here (perf_event_open: %s; "
				       "kernel.perf_event_paranoid = %d): sampling by SIGPROF in a "
				       "preloaded runtime instead (--fallback itimer): user frames "
				       "by frame pointers, threads started by pthread_create",
				       strerror(-refused), level);
	st->itimer = true;
	st->cfg.kernel = false;
	st->cfg.python = st->cfg.python_now = false;
	rc = rt_host__start(&st->host, c, &spec);
	snprintf(num, sizeof(num), "%u", st->cfg.hz);
	return rc ? rc : sonde_collection__setenv(c, SMP_ENV_HZ, num);
}

static int smp_before(struct sonde_collection *c)
{
	struct smp_state *st = calloc(1, sizeof(*st));
	const char *graph = sonde_collection__param_str(c, "call-graph", "fp");
	long long period = sonde_collection__param_int(c, "period", 0);
	int rc;

	if (!st)
		return -ENOMEM;
	sonde_collection__set_priv(c, st);
	st->cfg.hz = period ? 0 : (unsigned)sonde_collection__param_int(c, "freq", 999);
	st->cfg.period = (uint64_t)period;
	st->cfg.graph = !strcmp(graph, "dwarf")	 ? SMP_DWARF
			: !strcmp(graph, "lbr")	 ? SMP_LBR
			: !strcmp(graph, "none") ? SMP_NONE
						 : SMP_FP;
	st->cfg.stack_user = (unsigned)sonde_collection__param_int(c, "stack-size", 8192);
	st->cfg.off_cpu = sonde_collection__param_bool(c, "off-cpu");
	st->cfg.python = !sonde_collection__param_bool(c, "no-python");
	st->cfg.python_now = st->cfg.python && python_target(c);
	st->cfg.kernel =
		!sonde_collection__param_bool(c, "user-only") &&
		(geteuid() == 0 || read_int("/proc/sys/kernel/perf_event_paranoid", 2) <= 1);
	st->cfg.ring_bytes = (size_t)sonde_collection__param_int(
		c, "ring", st->cfg.graph == SMP_DWARF ? 8 << 20 : 1 << 20);
	rc = pick_event(c, &st->cfg);
	if (rc)
		return rc;
	if (st->cfg.off_cpu && !st->cfg.time_event) {
		sonde_collection__fail(c,
				       "collect sample: --off-cpu adds time off the CPU to the "
				       "samples' weights, so it needs a time event "
				       "(cpu-clock, task-clock), not %s",
				       st->cfg.event);
		return -EINVAL;
	}
	if (st->cfg.stack_user % 8 || st->cfg.stack_user > 65000) {
		sonde_collection__fail(c, "collect sample: --stack-size must be a multiple of 8 "
					  "up to 65000 bytes");
		return -EINVAL;
	}
	rc = pick_mode(c, st);
	if (rc)
		return rc;
	st->res = smp_resolver__new(&st->cfg);
	return st->res ? 0 : -ENOMEM;
}

/* The threads of process pid (/proc/PID/task). */
static int threads_of(pid_t pid, pid_t **tids, size_t *n)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	size_t cap = 0;

	*tids = NULL;
	*n = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		if (*n == cap) {
			void *nw = realloc(*tids, (cap = cap ? cap * 2 : 16) * sizeof(**tids));

			if (!nw) {
				closedir(d);
				return -ENOMEM;
			}
			*tids = nw;
		}
		(*tids)[(*n)++] = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return 0;
}

static int smp_start(struct sonde_collection *c, pid_t pid)
{
	struct smp_state *st = sonde_collection__priv(c);
	bool attach = sonde_collection__attaching(c);
	pid_t *tids = &pid;
	size_t ntid = 1;
	int rc;

	if (st->itimer)
		return 0; /* the runtime samples itself */
	sonde_strbuf__reset(&st->why);
	if (attach && (rc = threads_of(pid, &tids, &ntid)) < 0) {
		sonde_collection__fail(c, "collect sample: cannot list the threads of %d: %s",
				       (int)pid, strerror(-rc));
		return rc;
	}
	rc = smp_rec__open(&st->rec, &st->cfg, tids, ntid, !attach, &st->why);
	if (!rc && attach) { /* what it mapped and named before: from /proc; then count */
		rc = smp_rec__synthesize(&st->rec, (uint32_t)pid, tids, ntid);
		if (!rc)
			rc = perf_rings__enable(st->rec.rings, true);
		if (rc < 0)
			sonde_strbuf__addf(&st->why, "cannot read process %d's mappings: %s",
					   (int)pid, strerror(-rc));
	}
	if (tids != &pid)
		free(tids);
	if (rc < 0) {
		sonde_collection__fail(c, "collect sample: %s", st->why.buf);
		smp_rec__close(&st->rec);
		/* not ENOENT: that would say the command was not found */
		return rc == -ENOENT || rc == -ENODEV ? -EOPNOTSUPP : rc;
	}
	st->open = true;
	rc = smp_rec__start(&st->rec);
	if (rc < 0) {
		smp_rec__close(&st->rec);
		st->open = false;
	}
	return rc;
}

static json_t *how(const struct smp_state *st)
{
	static const char *const graphs[] = { "fp", "dwarf", "lbr", "none" };
	const struct smp_cfg *g = &st->cfg;

	return json_pack("{s:f, s:I, s:s, s:s, s:s, s:s, s:b, s:b, s:s}", "hz", (double)g->hz,
			 "interval_ns", (json_int_t)(g->hz ? 1e9 / g->hz : 0), "weight",
			 !g->time_event ? g->event
			 : g->off_cpu	? "cpu+off-cpu"
					: "cpu",
			 "event", g->event, "call_graph", graphs[g->graph], "timer",
			 st->itimer ? "itimer" : "perf_event", "kernel", g->kernel, "off_cpu",
			 g->off_cpu, "reader",
			 st->itimer ? "SIGPROF on each thread's CPU-time clock, frame pointers, "
				      "in libsonde-sample.so"
				    : "perf_event ring buffers, replayed in time order");
}

/* A run's records into the calltrace (made at the first run). */
static int feed(struct sonde_collection *c, struct smp_state *st, const struct sonde_run_info *ri)
{
	int rc = 0;

	if (!st->ct) {
		st->ct = sonde_calltrace__new(st->itimer ? "itimer" : "perf_event", NULL,
					      (uint32_t)ri->run->pid, sonde_collection__t0_ns(c));
		if (!st->ct)
			return -ENOMEM;
		sonde_calltrace__limits(
			st->ct, (uint64_t)sonde_collection__param_int(c, "max-slices", 200000), 0);
		rc = sonde_calltrace__filter(st->ct, sonde_collection__param_str(c, "filter", NULL),
					     sonde_collection__param_str(c, "exclude", NULL));
		if (!rc)
			rc = sonde_calltrace__sampling(st->ct, how(st));
	}
	return rc ? rc
		  : smp_resolver__run(st->res, &st->rec, st->ct, (uint32_t)ri->run->pid,
				      st->runs++ == 0);
}

/* ---- the fallback: the runtime's records as the kernel's ---------------------------------- */

/* A record of sonde's own kind (pid, tid, ns first), then body. */
static int own(struct smp_rec *r, uint32_t type, uint32_t pid, uint32_t tid, uint64_t ns,
	       const void *body, size_t len)
{
	uint8_t rec[8 + 16 + 4200];
	size_t size = (8 + 16 + len + 7) & ~(size_t)7;
	struct perf_event_header h = { type, 0, (uint16_t)size };

	if (size > sizeof(rec))
		return 0;
	memset(rec, 0, size);
	memcpy(rec, &h, 8);
	memcpy(rec + 8, &pid, 4);
	memcpy(rec + 12, &tid, 4);
	memcpy(rec + 16, &ns, 8);
	memcpy(rec + 24, body, len);
	return smp_rec__append(r, rec, size);
}

static int rt_record(struct smp_state *st, const struct sonde_ring_chunk *ch, uint32_t type,
		     const uint8_t *q, uint32_t len, uint64_t *last_ns)
{
	struct smp_rec *r = &st->rec;

	if (type == RT_REC_PROC && len >= sizeof(struct rt_proc) + 1) {
		struct rt_proc pr;
		const char *exe = (const char *)q + sizeof(pr);

		memcpy(&pr, q, sizeof(pr));
		*last_ns = pr.ts;
		if (!memchr(exe, 0, len - sizeof(pr)))
			return 0;
		return own(r, SMP_REC_PROC, pr.pid, pr.pid, pr.ts, exe, strlen(exe) + 1);
	}
	if (type == RT_REC_MODULE && len >= sizeof(struct rt_module) + 1) {
		struct rt_module m;
		uint8_t body[24 + 4096];
		const char *path = (const char *)q + sizeof(m);
		size_t pl = strnlen(path, len - sizeof(m));

		memcpy(&m, q, sizeof(m));
		if (pl >= 4096)
			return 0;
		memcpy(body, &m.start, 8);
		memcpy(body + 8, &m.end, 8);
		memcpy(body + 16, &m.bias, 8);
		memcpy(body + 24, path, pl);
		body[24 + pl] = 0;
		return own(r, SMP_REC_MAP, ch->pid, ch->tid, *last_ns, body, 24 + pl + 1);
	}
	if (type == SMP_RT_SAMPLE && len >= sizeof(struct smp_rt_sample)) {
		struct smp_rt_sample m;
		uint64_t rec[8 + 2 + SMP_RT_MAX_DEPTH], id = SMP_EV_MAIN, zero = 0;
		uint32_t i, n;
		struct perf_event_header h;

		memcpy(&m, q, sizeof(m));
		n = m.n;
		if (!n || n > SMP_RT_MAX_DEPTH || (uint64_t)n * 8 > len - sizeof(m))
			return 0;
		/* identifier, ip, pid/tid, time, cpu/res, period, nr, chain */
		h = (struct perf_event_header){ PERF_RECORD_SAMPLE, 0,
						(uint16_t)(8 + 8 * (8 + n)) };
		memcpy(&rec[0], &h, 8);
		rec[1] = id;
		memcpy(&rec[2], q + sizeof(m), 8);
		memcpy(&rec[3], &ch->pid, 4);
		memcpy((uint8_t *)&rec[3] + 4, &m.tid, 4);
		rec[4] = m.ns;
		rec[5] = zero;
		rec[6] = m.weight;
		rec[7] = n + 1;
		rec[8] = (uint64_t)PERF_CONTEXT_USER;
		for (i = 0; i < n; i++)
			memcpy(&rec[9 + i], q + sizeof(m) + 8 * i, 8);
		*last_ns = m.ns;
		st->rt_samples++;
		st->rt_truncated += m.truncated != 0;
		return smp_rec__append(r, rec, 8 + 8 * (8 + (size_t)n));
	}
	return 0;
}

static int analyse_rt(void *ctx, const void *log, size_t len, const struct sonde_run_info *ri)
{
	struct smp_state *st = ctx;
	const uint8_t *p = log, *end = p + len;
	int rc = 0;

	(void)ri;
	while (!rc && (size_t)(end - p) >= sizeof(struct sonde_ring_chunk)) {
		struct sonde_ring_chunk ch;
		const uint8_t *q, *qend;
		uint64_t last_ns = 0;

		memcpy(&ch, p, sizeof(ch));
		p += sizeof(ch);
		if (ch.bytes > (uint64_t)(end - p))
			return -EINVAL;
		for (q = p, qend = p + ch.bytes; !rc && qend - q >= 8;) {
			uint32_t h, rlen;

			memcpy(&h, q, 4);
			rlen = SONDE_RING_REC_LEN(h);
			if (rlen < 8 || rlen > (size_t)(qend - q))
				return -EINVAL;
			rc = rt_record(st, &ch, SONDE_RING_REC_TYPE(h), q, rlen, &last_ns);
			q += rlen;
		}
		p = qend;
	}
	return rc;
}

static int smp_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	struct smp_state *st = sonde_collection__priv(c);
	int rc;

	if (st->itimer) {
		memset(&st->rec, 0, sizeof(st->rec));
		st->rec.cfg = st->cfg;
		st->rec.stop_fd = -1;
		rc = rt_host__stop(&st->host, c, ri, analyse_rt, st);
		if (!rc && !ri->warmup)
			rc = feed(c, st, ri);
		smp_rec__close(&st->rec);
		return rc;
	}
	if (!st->open)
		return 0;
	rc = smp_rec__stop(&st->rec);
	st->lost += st->rec.lost;
	st->lost_samples += st->rec.lost_samples;
	st->records += st->rec.records;
	if (!rc && !ri->warmup)
		rc = feed(c, st, ri);
	if (st->rec.py) {
		json_t *py = smp_py__stats(st->rec.py);

		if (py && (!st->py || json_integer_value(json_object_get(py, "stacks")) ||
			   json_object_get(py, "not_supported"))) {
			json_decref(st->py);
			st->py = py;
		} else {
			json_decref(py);
		}
	}
	smp_rec__close(&st->rec);
	st->open = false;
	return rc;
}

static int smp_after(struct sonde_collection *c, struct sonde_profile *p)
{
	struct smp_state *st = sonde_collection__priv(c);
	json_t *s;
	int rc;

	if (!st->ct) {
		st->ct = sonde_calltrace__new(st->itimer ? "itimer" : "perf_event", NULL, 0,
					      sonde_collection__t0_ns(c));
		if (!st->ct || sonde_calltrace__sampling(st->ct, how(st)))
			return -ENOMEM;
	}
	if (st->lost || st->lost_samples) {
		sonde_collection__note(c,
				       "%llu records found the kernel's ring full and were lost "
				       "(a larger --ring keeps them)",
				       (unsigned long long)(st->lost + st->lost_samples));
		sonde_collection__dropped(c, st->lost + st->lost_samples);
	}
	s = smp_resolver__stats(st->res);
	if (!s)
		return -ENOMEM;
	json_object_set_new(s, "records", json_integer((json_int_t)st->records));
	json_object_set_new(s, "lost_records", json_integer((json_int_t)st->lost));
	json_object_set_new(s, "lost_samples", json_integer((json_int_t)st->lost_samples));
	if (st->itimer)
		json_object_set_new(s, "truncated_stacks",
				    json_integer((json_int_t)st->rt_truncated));
	rc = sonde_calltrace__engine_stat(st->ct, st->itimer ? "itimer" : "perf_event", s);
	if (!rc && st->py &&
	    (json_integer_value(json_object_get(st->py, "stacks")) ||
	     json_object_get(st->py, "not_supported"))) {
		rc = sonde_calltrace__engine_stat(st->ct, "python", st->py);
		st->py = NULL;
	}
	if (!rc)
		rc = sonde_calltrace__engine_stat(st->ct, "sampling", how(st));
	return rc ? rc : sonde_calltrace__write(st->ct, p);
}

static void smp_cleanup(struct sonde_collection *c)
{
	struct smp_state *st = sonde_collection__priv(c);

	if (!st)
		return;
	if (st->open)
		smp_rec__close(&st->rec);
	smp_resolver__free(st->res);
	sonde_calltrace__free(st->ct);
	sonde_strbuf__release(&st->why);
	json_decref(st->py);
	if (st->itimer)
		rt_host__release(&st->host);
	free(st);
	sonde_collection__set_priv(c, NULL);
}

static const char *const smp_units[] = { "time", "ns", NULL };

static const char *const smp_graphs[] = { "fp", "dwarf", "lbr", "none", NULL };

static const char *const smp_fallbacks[] = { "auto", "itimer", "none", NULL };

static const struct sonde_option smp_options[] = {
	{ SONDE_OPT_INT, 'F', "freq", NULL, "HZ", "samples per second of each thread (999)", 1,
	  100000 },
	{ SONDE_OPT_INT, 'c', "period", NULL, "N", "a sample every N events instead of a frequency",
	  1, 1e15 },
	{ SONDE_OPT_STRING, 'e', "event", NULL, "EVENT",
	  "the event that triggers samples: cpu-clock (default), task-clock, cycles, "
	  "instructions, ... (sonde counters list)" },
	{ SONDE_OPT_CHOICE, 'g', "call-graph", NULL, "MODE",
	  "how stacks are taken: fp (frame pointers, default), dwarf (a copy of the user "
	  "stack unwound afterwards with the objects' CFI), lbr (the CPU's last-branch "
	  "records), none",
	  0, 0, smp_graphs },
	{ SONDE_OPT_INT, 0, "stack-size", NULL, "BYTES",
	  "dwarf: bytes of user stack copied per sample (8192)", 8, 65000 },
	{ SONDE_OPT_FLAG, 0, "off-cpu", NULL, NULL,
	  "also the time threads spend off the CPU, at the stack where they left it "
	  "(frames [off-cpu], [preempted]): wall time adds up" },
	{ SONDE_OPT_CHOICE, 0, "fallback", NULL, "MODE",
	  "where perf_event is refused: auto (default) samples by SIGPROF in a preloaded "
	  "runtime and says so; itimer does that always; none fails",
	  0, 0, smp_fallbacks },
	{ SONDE_OPT_FLAG, 0, "no-python", NULL, NULL,
	  "do not read CPython frames (by default, in a CPython 3.11 process the Python "
	  "stack of each sample is read and put between the interpreter's frames)" },
	{ SONDE_OPT_FLAG, 0, "user-only", NULL, NULL,
	  "no kernel frames (they are kept when root or kernel.perf_event_paranoid <= 1)" },
	{ SONDE_OPT_INT, 0, "ring", NULL, "BYTES",
	  "the kernel's ring per CPU (1 MiB; 8 MiB with dwarf); records that find it full "
	  "are counted as lost",
	  4096, 1 << 30 },
	{ SONDE_OPT_STRING, 0, "filter", NULL, "REGEX",
	  "keep only functions whose name matches (the others' time goes to their callers)" },
	{ SONDE_OPT_STRING, 0, "exclude", NULL, "REGEX", "leave out functions whose name matches" },
	{ SONDE_OPT_INT, 0, "max-slices", NULL, "N",
	  "samples kept for the timeline (export --format perfetto), the first N (200000)", 0,
	  1e9 },
	{ .type = SONDE_OPT_END },
};

const struct sonde_collector sonde_collector_sample = {
	.abi = SONDE_COLLECTOR_ABI,
	.name = "sample",
	.summary = "where the time goes in any program: perf_event samples of every thread "
		   "with user and kernel stacks (frame pointers, DWARF, LBR), on and off "
		   "the CPU; per-function self and total, call graph, timeline",
	.profile_type = "mixed",
	.units = smp_units,
	.options = smp_options,
	.flags = SONDE_COLLECTOR_EXCLUSIVE | SONDE_COLLECTOR_ONE_RUN |
		 SONDE_COLLECTOR_NEEDS_BARRIER | SONDE_COLLECTOR_ATTACHES |
		 SONDE_COLLECTOR_PERF_TASK,
	.before = smp_before,
	.start = smp_start,
	.stop = smp_stop,
	.after = smp_after,
	.cleanup = smp_cleanup,
};
