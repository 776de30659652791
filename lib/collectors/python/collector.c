/*
 * collector.c - `sonde collect python -- python3 SCRIPT ARGS`: every Python
 * call and return of a program, by the CPU collector of sonde's Python package.
 *
 * The command is run as the same interpreter with the same interpreter
 * options, but its program becomes sonde's runner (python/sonde/run.py),
 * given the program's words after "--": the program sees the sys.argv,
 * sys.path[0] and __main__ it would have had. A script whose #! line names
 * python is run by that interpreter the same way.
 *
 * The runner records with sonde.CpuCollector (the C profile hook, or the
 * frame evaluator with --no-c-calls) into rings sonde creates (rt-host.h):
 * each thread's calls in batch records filled in place, and functions,
 * thread names and marks in a metadata ring (proto/python.h). sonde drains them
 * into its event log while the program runs, so what a crashed program had
 * recorded is kept. System calls (--syscalls) come from perf_event on the
 * raw_syscalls tracepoints, opened by sonde on the target before it runs.
 * After each run its part of the log is fed to the trace collector's
 * analysis (sonde_calltrace), merged with the system calls by time, one
 * process per run: the profile is the one `collect trace` writes, so every
 * trace view reads it.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sonde/calltrace.h>
#include <sonde/collector.h>
#include <sonde/memsample.h>
#include <sonde/runner.h>
#include <sonde/syscalls.h>
#include "config.h"
#include "proto/python.h"
#include "../../engines/preload/py-exe.h"
#include "../../engines/preload/rt-host.h"
#include "../../engines/calltree/calltree.h"
#include "../../runtime-file.h"
#include "../../grow.h"
#include "../../u64map.h"

/*
 * The runner's bootstrap, run by `python -c`: the package's directory comes
 * from the environment (so -I, -E and odd paths change nothing); a failed
 * import is said in the file $SONDE_PYTHON_ERR, and exits 125.
 */
static const char boot[] =
	"import os, sys\n"
	"sys.path.insert(0, os.environ.get('SONDE_PYTHON_DIR', ''))\n"
	"try:\n"
	"    from sonde import run\n"
	"except BaseException as e:\n"
	"    with open(os.environ['SONDE_PYTHON_ERR'], 'w') as f:\n"
	"        f.write('%s %d.%d: %s: %s' % (sys.executable, sys.version_info[0],\n"
	"                sys.version_info[1], type(e).__name__, e))\n"
	"    sys.exit(125)\n"
	"status = run.main()\n"
	"if status:\n"
	"    raise SystemExit(status)\n";

/* A system call or a call's event, in ns, for the merge by time. */
struct tev {
	uint32_t tid, type; /* PYR_CALL.. (a system call's entry is a call, its exit a return) */
	uint32_t func;	    /* the calltrace's id */
	uint64_t ns;
};

struct py_state {
	struct rt_host host;
	char dir[64];  /* private directory: err */
	char errf[80]; /* the runner could not start: why */
	char *program; /* the script, module or "-c": the process's exe */
	struct sonde_calltrace *ct;
	struct sonde_syscalls *sc;
	struct sonde_strbuf sc_why;
	struct tev *sys; /* the run's system calls */
	size_t nsys, capsys;
	struct u64map sc_ids; /* syscall number -> calltrace id + 1 */
	uint64_t events, sc_events, sc_lost;
	unsigned runs, empty_runs;
	bool sc_said;  /* why system calls were not recorded: noted once */
	bool sampling; /* --mode sampling: stacks, not calls */
	uint64_t samples, ticks, late_ticks, truncated; /* sampling: the runs' sums */
	uint64_t untimed, rerouted;			/* sampling: threads (PYR_TIMER) */
	uint64_t cpu_ns, weighed_ns;			/* sampling: CPU time (PYR_CPU) */
	uint32_t how;					/* sampling: PYR_HOW_* of every run */
	bool timed;					/* a run said how (PYR_TIMER) */
	uint32_t *ids;					/* a sample's stack, as calltrace ids */
	size_t capids;
	/* --memory: sampled allocations, named by the functions the runner described */
	struct sonde_memsample *mem;
	struct fname {
		char *name, *file;
		uint64_t line;
	} * fnames;
	size_t nfnames, capfnames;
	struct u64map fname_index; /* pid << 32 | the runner's id -> fnames + 1 */
	char numa_why[128];	   /* libnuma could not answer in the target: why */
	bool numa_said;
};

static int push(char ***v, size_t *n, const char *s)
{
	char **g = realloc(*v, (*n + 2) * sizeof(**v));

	if (!g)
		return -ENOMEM;
	*v = g;
	g[*n] = strdup(s);
	if (!g[*n])
		return -ENOMEM;
	g[++*n] = NULL;
	return 0;
}

static void free_words(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

/*
 * The command as run: INTERPRETER [its options] -c BOOT --dump FILE [runner
 * options] -- PROGRAM ARGS, where PROGRAM is SCRIPT, -m MODULE, -c COMMAND or
 * -. 0, or -EINVAL with the reason told to the user.
 */
static int build_argv(struct sonde_collection *c, struct py_state *st)
{
	char *const *argv = sonde_collection__argv(c);
	char **v = NULL, **bang = NULL, kind = 0;
	const char *value = NULL;
	size_t n = 0, i = 1;
	int rc = 0;

	if (py_exe__is_python(argv[0])) {
		rc = push(&v, &n, argv[0]);
		/* the interpreter's own options, up to the program */
		for (; argv[i] && !rc && !kind; i++) {
			const char *a = argv[i], *p = a + 1;

			if (a[0] != '-' || !strcmp(a, "-"))
				break;
			if (!strcmp(a, "--")) {
				i++;
				break;
			}
			if (!strncmp(a, "--", 2)) {
				if (strcmp(a, "--check-hash-based-pycs")) { /* --help, --version */
					sonde_collection__fail(
						c,
						"collect python: '%s' runs no program: "
						"give SCRIPT, -m MODULE or -c COMMAND",
						a);
					rc = -EINVAL;
					break;
				}
				rc = push(&v, &n, a);
				if (!rc && argv[i + 1])
					rc = push(&v, &n, argv[++i]);
				continue;
			}
			/* a cluster of one-letter options: -c and -m end it with the program */
			while (*p && !strchr("cmWX", *p))
				p++;
			if (*p == 'c' || *p == 'm') {
				char flags[64];

				if (p > a + 1) { /* the flags before it */
					snprintf(flags, sizeof(flags), "%.*s", (int)(p - a), a);
					rc = push(&v, &n, flags);
				}
				kind = *p;
				value = p[1] ? p + 1 : argv[i + 1];
				if (!p[1] && argv[i + 1])
					i++;
				continue;
			}
			rc = push(&v, &n, a);
			if (!rc && *p && !p[1] && argv[i + 1]) /* -W ARG, -X ARG */
				rc = push(&v, &n, argv[++i]);
		}
		if (!rc && kind && !value) {
			sonde_collection__fail(c, "collect python: -%c needs its argument", kind);
			rc = -EINVAL;
		}
		if (!rc && !kind && !argv[i]) {
			sonde_collection__fail(c, "collect python: no program to run: give SCRIPT, "
						  "-m MODULE or -c COMMAND after the interpreter");
			rc = -EINVAL;
		}
		if (!rc)
			st->program = strdup(kind == 'c' ? "-c" : kind ? value : argv[i]);
	} else {
		char *path = sonde_runner__resolve(argv[0]);

		bang = path ? py_exe__shebang(path) : NULL;
		if (!bang) {
			sonde_collection__fail(c,
					       "collect python: '%s' is not a Python interpreter "
					       "nor a script whose #! line names python; run it as "
					       "`sonde collect python -- python3 SCRIPT ARGS`",
					       argv[0]);
			free(path);
			return -EINVAL;
		}
		for (char **b = bang; *b && !rc; b++)
			rc = push(&v, &n, *b);
		st->program = path; /* the script, by the path the kernel would run */
		path = NULL;
	}
	if (!rc && !st->program)
		rc = -ENOMEM;
	rc = rc ? rc : push(&v, &n, "-c");
	rc = rc ? rc : push(&v, &n, boot);
	rc = rc ? rc : push(&v, &n, "--to-sonde");
	if (!rc && sonde_collection__param_bool(c, "no-c-calls"))
		rc = push(&v, &n, "--no-c-calls");
	if (!rc && (sonde_collection__param_bool(c, "memory") ||
		    sonde_collection__param_bool(c, "numa"))) {
		char opt[64];

		snprintf(opt, sizeof(opt), "--memory-interval=%lld",
			 sonde_collection__param_int(c, "memory-interval", 256 * 1024));
		rc = push(&v, &n, sonde_collection__param_bool(c, "numa") ? "--numa" : "--memory");
		rc = rc ? rc : push(&v, &n, opt);
	}
	if (!rc && st->sampling) {
		char opt[64];

		snprintf(opt, sizeof(opt), "--hz=%.17g",
			 sonde_collection__param_double(c, "hz", 100));
		rc = push(&v, &n, "--mode=sampling");
		rc = rc ? rc : push(&v, &n, opt);
		if (!rc && sonde_collection__param_bool(c, "wall"))
			rc = push(&v, &n, "--wall");
	}
	if (!rc) {
		char *opt = NULL;

		rc = asprintf(&opt, "--cmd=%s", st->program) < 0 ? -ENOMEM : push(&v, &n, opt);
		free(opt);
	}
	rc = rc ? rc : push(&v, &n, "--");
	if (kind) {
		char opt[3] = { '-', kind, 0 };

		rc = rc ? rc : push(&v, &n, opt);
		rc = rc ? rc : push(&v, &n, value);
	} else if (bang) {
		rc = rc ? rc : push(&v, &n, st->program);
	}
	for (; argv[i] && !rc; i++)
		rc = push(&v, &n, argv[i]);
	if (!rc)
		rc = sonde_collection__wrap_argv(c, v);
	free_words(v);
	free_words(bang);
	return rc;
}

static int py_before(struct sonde_collection *c)
{
	struct py_state *st = calloc(1, sizeof(*st));
	const char *re[2] = { sonde_collection__param_str(c, "filter", NULL),
			      sonde_collection__param_str(c, "exclude", NULL) };
	struct rt_host_spec spec = {
		.collector = "python",
		.runtime = NULL, /* nothing to preload: the runner attaches */
		.ring_env = PYR_ENV_RING,
		.rings = 64,
		.ring_bytes = 16u << 20,
		.spill_rings = RT_SPILL_RINGS,
		.spill_bytes = RT_SPILL_BYTES,
		.drop_oldest = sonde_collection__param_bool(c, "drop-oldest"),
	};
	char *pkg;
	int rc;

	if (!st)
		return -ENOMEM;
	st->host.log_fd = -1;
	sonde_collection__set_priv(c, st);
	st->sampling = !strcmp(sonde_collection__param_str(c, "mode", "calls"), "sampling");
	if ((sonde_collection__param_bool(c, "memory") ||
	     sonde_collection__param_bool(c, "numa")) &&
	    !(st->mem = sonde_memsample__new(
		      (uint64_t)sonde_collection__param_int(c, "memory-interval", 256 * 1024))))
		return -ENOMEM;
	if (st->sampling) { /* options about calls mean nothing to samples: said, not ignored */
		static const char *const calls_only[] = { "syscalls", "no-c-calls", "min-time",
							  "max-rows" };
		json_t *given = sonde_collection__params(c);

		for (size_t k = 0; k < sizeof(calls_only) / sizeof(*calls_only); k++)
			if (json_object_get(given, calls_only[k])) {
				sonde_collection__fail(c,
						       "collect python: --%s is about calls: "
						       "not with --mode sampling",
						       calls_only[k]);
				return -EINVAL;
			}
	} else if (json_object_get(sonde_collection__params(c), "hz") ||
		   sonde_collection__param_bool(c, "wall")) {
		sonde_collection__fail(c,
				       "collect python: --hz and --wall are for --mode sampling");
		return -EINVAL;
	}
	for (int k = 0; k < 2; k++) { /* bad regexes are said before anything runs */
		regex_t r;
		char msg[256];

		if (!re[k])
			continue;
		rc = regcomp(&r, re[k], REG_EXTENDED | REG_NOSUB);
		if (rc) {
			regerror(rc, &r, msg, sizeof(msg));
			sonde_collection__fail(c, "--%s '%s': %s", k ? "exclude" : "filter", re[k],
					       msg);
			return -EINVAL;
		}
		regfree(&r);
	}
	pkg = sonde_python_dir();
	if (!pkg) {
		sonde_collection__fail(c, "collect python: sonde's Python package was not found "
					  "(build with python3-dev, or set SONDE_PYTHON_DIR to the "
					  "directory that holds sonde/)");
		return -ENOTSUP;
	}
	rc = sonde_collection__setenv(c, "SONDE_PYTHON_DIR", pkg);
	free(pkg);
	if (rc)
		return rc;
	strcpy(st->dir, "/tmp/sonde-python-XXXXXX");
	if (!mkdtemp(st->dir)) {
		st->dir[0] = 0;
		return -errno;
	}
	snprintf(st->errf, sizeof(st->errf), "%s/err", st->dir);
	rc = sonde_collection__setenv(c, "SONDE_PYTHON_ERR", st->errf);
	rc = rc ? rc : rt_host__ring_bytes(c, spec.ring_bytes, &spec.ring_bytes);
	rc = rc ? rc : rt_host__start(&st->host, c, &spec);
	rc = rc ? rc : sonde_collection__setenv(c, PYR_ENV_TSC, st->host.tsc ? "1" : "0");
	return rc ? rc : build_argv(c, st);
}

/* The whole of a small file, NUL-terminated; NULL when there is none. */
static char *slurp(const char *path)
{
	char *s = calloc(1, 4096);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0 || !s) {
		if (fd >= 0)
			close(fd);
		free(s);
		return NULL;
	}
	n = read(fd, s, 4095);
	close(fd);
	if (n < 0) {
		free(s);
		return NULL;
	}
	return s;
}

/* The target exists, not yet exec'ed: its system calls, and its threads' to come. */
static int py_start(struct sonde_collection *c, pid_t pid)
{
	struct py_state *st = sonde_collection__priv(c);

	if (!sonde_collection__param_bool(c, "syscalls") || st->sc_said)
		return 0;
	sonde_strbuf__reset(&st->sc_why);
	if (sonde_syscalls__open(&pid, 1, 0, &st->sc, &st->sc_why) < 0 ||
	    sonde_syscalls__enable(st->sc, true) < 0) {
		if (!st->sc_why.len)
			sonde_strbuf__addf(&st->sc_why, "perf_event: %s", strerror(errno));
		sonde_collection__note(c, "system calls were not recorded: %s", st->sc_why.buf);
		sonde_syscalls__close(st->sc);
		st->sc = NULL;
		st->sc_said = true;
	}
	return 0;
}

static int sys_event(void *ctx, uint32_t pid, uint32_t tid, uint64_t ns, bool enter, long nr)
{
	struct py_state *st = ctx;
	struct tev *t;

	(void)pid;
	if (sonde_grow((void **)&st->sys, &st->capsys, st->nsys + 1, sizeof(*st->sys)))
		return -ENOMEM;
	t = &st->sys[st->nsys++];
	t->tid = tid;
	t->type = enter ? PYR_CALL : PYR_RETURN;
	t->func = (uint32_t)nr;
	t->ns = ns;
	return 0;
}

/* System calls: by thread, then time (the CPUs' rings each hold a part). */
static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static int cmp_tev(const void *a, const void *b)
{
	const struct tev *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->ns > y->ns) - (x->ns < y->ns);
}

/*
 * Calls: grouped by thread in ascending tid, each thread's in the order it
 * wrote them (a size event's ns is a size, not a time: no sort by ns).
 */
static int group_by_thread(struct tev **ev, size_t n)
{
	struct u64map at = { 0 }; /* tid -> next slot + 1 */
	uint32_t *tids = NULL;
	size_t ntids = 0, cap = 0, i, off = 0;
	struct tev *out = malloc((n ? n : 1) * sizeof(*out));
	uint64_t v = 0;
	int rc = out ? 0 : -ENOMEM;

	for (i = 0; i < n && !rc; i++) { /* count per thread */
		if (u64map__get(&at, (*ev)[i].tid, &v)) {
			rc = u64map__put(&at, (*ev)[i].tid, v + 1) ? -ENOMEM : 0;
			continue;
		}
		rc = sonde_grow((void **)&tids, &cap, ntids + 1, sizeof(*tids)) ||
				     u64map__put(&at, (*ev)[i].tid, 1)
			     ? -ENOMEM
			     : 0;
		if (!rc)
			tids[ntids++] = (*ev)[i].tid;
	}
	if (!rc) {
		qsort(tids, ntids, sizeof(*tids), cmp_u32);
		for (i = 0; i < ntids && !rc; i++) { /* counts become each thread's first slot */
			u64map__get(&at, tids[i], &v);
			rc = u64map__put(&at, tids[i], off + 1) ? -ENOMEM : 0;
			off += v;
		}
	}
	for (i = 0; i < n && !rc; i++) {
		u64map__get(&at, (*ev)[i].tid, &v);
		out[v - 1] = (*ev)[i];
		rc = u64map__put(&at, (*ev)[i].tid, v + 1) ? -ENOMEM : 0;
	}
	u64map__release(&at);
	free(tids);
	if (rc) {
		free(out);
		return rc;
	}
	free(*ev);
	*ev = out;
	return 0;
}

/* One run's part of the log, read twice: metadata, then the calls. */
struct run_read {
	struct py_state *st;
	struct sonde_collection *c;
	const struct sonde_run_info *ri;
	struct u64map fmap; /* pid << 32 | the runner's id -> calltrace id + 1 */
	uint64_t t0, t1;    /* the collection's start and stop (ns); t1 0: never stopped */
	bool started;
	struct pyr_mark *own;
	size_t nown, capown;
	struct tev *ev; /* the calls, when system calls are merged in */
	size_t nev, capev;
	uint32_t pid;
};

typedef int (*rec_fn)(struct run_read *rr, const struct sonde_ring_chunk *ch, uint32_t type,
		      const uint8_t *rec, uint32_t len);

/* Every record of the log's chunks. */
static int walk(struct run_read *rr, const uint8_t *log, size_t len, rec_fn fn)
{
	const uint8_t *p = log, *end = log + len;

	while ((size_t)(end - p) >= sizeof(struct sonde_ring_chunk)) {
		struct sonde_ring_chunk ch;
		const uint8_t *q, *qend;

		memcpy(&ch, p, sizeof(ch));
		p += sizeof(ch);
		if (ch.bytes > (uint64_t)(end - p))
			return -EINVAL;
		for (q = p, qend = p + ch.bytes; qend - q >= 8;) {
			uint32_t h, rlen;
			int rc;

			memcpy(&h, q, 4);
			rlen = SONDE_RING_REC_LEN(h);
			if (rlen < 8 || rlen > (size_t)(qend - q))
				return -EINVAL;
			rc = fn(rr, &ch, SONDE_RING_REC_TYPE(h), q, rlen);
			if (rc < 0)
				return rc;
			q += rlen;
		}
		p = qend;
	}
	return 0;
}

static uint64_t ns_of(struct run_read *rr, uint64_t tick)
{
	return rt_clock__ns(&rr->st->host.clock, tick);
}

/*
 * The calltrace the runs feed: calls (with the limits and filters asked for),
 * or samples (--mode sampling: how they were taken goes to stats.trace.sampling).
 */
static struct sonde_calltrace *new_calltrace(struct sonde_collection *c, struct py_state *st,
					     uint32_t pid, uint64_t t0)
{
	struct sonde_calltrace *ct = sonde_calltrace__new("python", st->program, pid, t0);
	double hz = sonde_collection__param_double(c, "hz", 100);
	int rc;

	if (!ct)
		return NULL;
	sonde_calltrace__max_rows(ct, (uint64_t)sonde_collection__param_int(c, "max-rows", 10000));
	sonde_calltrace__limits(ct, (uint64_t)sonde_collection__param_int(c, "max-slices", 200000),
				(uint64_t)sonde_collection__param_double(c, "min-time", 0));
	rc = sonde_calltrace__filter(ct, sonde_collection__param_str(c, "filter", NULL),
				     sonde_collection__param_str(c, "exclude", NULL));
	if (!rc && st->sampling)
		rc = sonde_calltrace__sampling(
			ct, json_pack("{s:f, s:I, s:s, s:s, s:s}", "hz", hz, "interval_ns",
				      (json_int_t)(1e9 / hz), "weight",
				      sonde_collection__param_bool(c, "wall") ? "wall" : "cpu",
				      "timer", "unknown", "reader", "Python frames under the GIL"));
	if (rc) {
		sonde_calltrace__free(ct);
		errno = -rc;
		return NULL;
	}
	return ct;
}

/* A sample record: its stack, in calltrace ids, fed. */
static int sample(struct run_read *rr, const struct sonde_ring_chunk *ch, const uint8_t *rec,
		  uint32_t len)
{
	struct py_state *st = rr->st;
	struct pyr_sample m;
	uint32_t k;

	if (len < sizeof(m))
		return -EINVAL;
	memcpy(&m, rec, sizeof(m));
	if ((uint64_t)m.n * sizeof(uint32_t) > len - sizeof(m))
		return -EINVAL;
	if (sonde_grow((void **)&st->ids, &st->capids, m.n + 1, sizeof(*st->ids)))
		return -ENOMEM;
	for (k = 0; k < m.n; k++) {
		uint32_t id;
		uint64_t v;

		memcpy(&id, rec + sizeof(m) + k * sizeof(id), sizeof(id));
		if (!u64map__get(&rr->fmap, (uint64_t)ch->pid << 32 | id, &v))
			return -EINVAL; /* a function never described */
		st->ids[k] = (uint32_t)v - 1;
	}
	st->samples++;
	return sonde_calltrace__sample(st->ct, m.tid, ns_of(rr, m.ts), m.weight, st->ids, m.n);
}

/* A sampled allocation, its free or its node at the end: into the memory summary. */
static int mem_event(struct run_read *rr, const struct sonde_ring_chunk *ch, const uint8_t *rec,
		     uint32_t len)
{
	struct py_state *st = rr->st;
	struct sonde_memsample_event e = { 0 };
	struct pyr_mem m;
	uint64_t v;

	if (len < sizeof(m))
		return -EINVAL;
	memcpy(&m, rec, sizeof(m));
	if (!st->mem)
		return 0;
	if (m.func != UINT32_MAX &&
	    u64map__get(&st->fname_index, (uint64_t)ch->pid << 32 | m.func, &v)) {
		e.function = st->fnames[v - 1].name;
		e.file = st->fnames[v - 1].file;
		e.line = st->fnames[v - 1].line;
	}
	e.kind = m.kind;
	e.tid = m.tid;
	e.node = m.node;
	e.cpu_node = m.cpu_node;
	e.ts_ns = ns_of(rr, m.ts);
	e.ptr = m.ptr;
	e.size = m.size;
	e.weight = m.weight;
	return sonde_memsample__add(st->mem, &e);
}

/* Pass 1: functions, names, marks. */
static int meta(struct run_read *rr, const struct sonde_ring_chunk *ch, uint32_t type,
		const uint8_t *rec, uint32_t len)
{
	struct py_state *st = rr->st;
	int rc = 0;

	if (type == PYR_START || type == PYR_STOP || type == PYR_OWN || type == PYR_TICKS ||
	    type == PYR_TIMER || type == PYR_CPU) {
		struct pyr_mark m;

		if (len < sizeof(m))
			return -EINVAL;
		memcpy(&m, rec, sizeof(m));
		if (type == PYR_TICKS) {
			st->ticks += m.a;
			st->late_ticks += m.b;
			st->truncated += m.tid;
			return 0;
		}
		if (type == PYR_CPU) {
			st->cpu_ns += m.a;
			st->weighed_ns += m.b;
			return 0;
		}
		if (type == PYR_TIMER) {
			st->how |= m.tid;
			st->untimed += m.a;
			st->rerouted += m.b;
			st->timed = true;
			return 0;
		}
		/* (the run's process is taken from its first record of data: a mark
		   taking it would hide a run whose first record is its start) */
		if (type == PYR_START && !rr->started) {
			rr->started = true;
			rr->t0 = ns_of(rr, m.a);
		} else if (type == PYR_STOP) {
			rr->t1 = ns_of(rr, m.a);
		} else if (type == PYR_OWN) {
			if (sonde_grow((void **)&rr->own, &rr->capown, rr->nown + 1,
				       sizeof(*rr->own)))
				return -ENOMEM;
			m.a = ns_of(rr, m.a);
			m.b = ns_of(rr, m.b);
			rr->own[rr->nown++] = m;
		}
		return 0;
	}
	if (type != PYR_FUNC && type != PYR_NAME && type != PYR_SAMPLE && type != PYR_MEM &&
	    type != PYR_NUMA)
		return 0;
	if (!st->ct) {
		st->ct = new_calltrace(rr->c, st, ch->pid, rr->ri->t0_ns);
		if (!st->ct)
			return -ENOMEM;
		st->runs = 1;
		rr->pid = ch->pid;
	} else if (rr->pid != ch->pid) { /* the next run's process */
		rc = sonde_calltrace__process(st->ct, ch->pid, st->program);
		rr->pid = ch->pid;
		st->runs++;
	}
	if (rc)
		return rc;
	if (type == PYR_SAMPLE)
		return sample(rr, ch, rec, len);
	if (type == PYR_MEM)
		return mem_event(rr, ch, rec, len);
	if (type == PYR_NUMA) {
		struct pyr_name nm;

		if (len < sizeof(nm))
			return -EINVAL;
		memcpy(&nm, rec, sizeof(nm));
		if (nm.name_len > len - sizeof(nm))
			return -EINVAL;
		if (!nm.tid && !st->numa_why[0])
			snprintf(st->numa_why, sizeof(st->numa_why), "%.*s", (int)nm.name_len,
				 (const char *)rec + sizeof(nm));
		return 0;
	}
	if (type == PYR_FUNC) {
		struct pyr_func f;
		uint32_t id;
		char *m, *n;

		if (len < sizeof(f))
			return -EINVAL;
		memcpy(&f, rec, sizeof(f));
		if ((uint64_t)f.module_len + f.name_len > len - sizeof(f))
			return -EINVAL;
		m = strndup((const char *)rec + sizeof(f), f.module_len);
		n = strndup((const char *)rec + sizeof(f) + f.module_len, f.name_len);
		rc = m && n ? sonde_calltrace__func(st->ct, m, f.line, n, &id) : -ENOMEM;
		if (!rc && st->mem) { /* named for the memory events too */
			if (sonde_grow((void **)&st->fnames, &st->capfnames, st->nfnames + 1,
				       sizeof(*st->fnames)) ||
			    u64map__put(&st->fname_index, (uint64_t)ch->pid << 32 | f.id,
					st->nfnames + 1))
				rc = -ENOMEM;
			else
				st->fnames[st->nfnames++] = (struct fname){ n, m, f.line };
			if (!rc)
				m = n = NULL;
		}
		free(m);
		free(n);
		if (!rc && u64map__put(&rr->fmap, (uint64_t)ch->pid << 32 | f.id, (uint64_t)id + 1))
			rc = -ENOMEM;
	} else {
		struct pyr_name nm;
		char *n;

		if (len < sizeof(nm))
			return -EINVAL;
		memcpy(&nm, rec, sizeof(nm));
		if (nm.name_len > len - sizeof(nm))
			return -EINVAL;
		n = strndup((const char *)rec + sizeof(nm), nm.name_len);
		rc = n ? sonde_calltrace__thread_name(st->ct, nm.tid, n) : -ENOMEM;
		free(n);
	}
	return rc;
}

/* One call event, fed now, or kept for the merge with the system calls. */
static int one(struct run_read *rr, uint32_t tid, uint32_t type, uint32_t func, uint64_t ns)
{
	struct py_state *st = rr->st;

	if (st->nsys) {
		struct tev *t;

		if (sonde_grow((void **)&rr->ev, &rr->capev, rr->nev + 1, sizeof(*rr->ev)))
			return -ENOMEM;
		t = &rr->ev[rr->nev++];
		t->tid = tid;
		t->type = type;
		t->func = func;
		t->ns = ns;
		return 0;
	}
	if (type == PYR_CALL || type == PYR_C_CALL)
		return sonde_calltrace__enter(st->ct, tid, func, ns);
	if (type == PYR_SIZE)
		return sonde_calltrace__size(st->ct, tid, ns);
	return sonde_calltrace__exit(st->ct, tid, ns);
}

/* Pass 2: the calls, batch by batch. */
static int calls(struct run_read *rr, const struct sonde_ring_chunk *ch, uint32_t type,
		 const uint8_t *rec, uint32_t len)
{
	uint32_t n, k;

	if (type != PYR_BATCH || len < PYR_BATCH_HDR || !rr->st->ct)
		return 0;
	n = (len - PYR_BATCH_HDR) / (uint32_t)sizeof(struct pyr_ev);
	for (k = 0; k < n; k++) {
		struct pyr_ev e;
		uint64_t v = 0;
		int rc;

		memcpy(&e, rec + PYR_BATCH_HDR + k * sizeof(e), sizeof(e));
		if (e.type == PYR_CALL || e.type == PYR_C_CALL) {
			if (!u64map__get(&rr->fmap, (uint64_t)ch->pid << 32 | e.func, &v))
				return -EINVAL; /* a call of a function never described */
			e.func = (uint32_t)v - 1;
		} else if (e.type != PYR_RETURN && e.type != PYR_C_RETURN && e.type != PYR_SIZE) {
			return -EINVAL;
		}
		rc = one(rr, ch->tid, e.type, e.func, e.type == PYR_SIZE ? e.ts : ns_of(rr, e.ts));
		if (rc < 0)
			return rc;
		rr->st->events++;
	}
	return 0;
}

/* A system call's function id ("syscall:write"). */
static int sys_func(struct py_state *st, long nr, uint32_t *id)
{
	uint64_t v;
	char name[64], full[80];

	if (u64map__get(&st->sc_ids, (uint64_t)nr, &v)) {
		*id = (uint32_t)v - 1;
		return 0;
	}
	sonde_syscall__name(nr, name, sizeof(name));
	snprintf(full, sizeof(full), "syscall:%s", name);
	if (sonde_calltrace__func(st->ct, "<kernel>", 0, full, id) ||
	    u64map__put(&st->sc_ids, (uint64_t)nr, (uint64_t)*id + 1))
		return -ENOMEM;
	return 0;
}

/*
 * The calls and the system calls of each thread, merged by time and fed. A
 * system call counts from the collection's start to its stop, and not while
 * the thread claimed its ring (sonde's own); an exit without its entry, and
 * an entry whose exit was lost, are left out.
 */
static int merge(struct run_read *rr)
{
	struct py_state *st = rr->st;
	size_t i = 0, j = 0;
	int rc = 0;

	rc = group_by_thread(&rr->ev, rr->nev);
	if (rc)
		return rc;
	qsort(st->sys, st->nsys, sizeof(*st->sys), cmp_tev);
	while ((i < rr->nev || j < st->nsys) && !rc) {
		bool take_sys = j < st->nsys &&
				(i == rr->nev || st->sys[j].tid < rr->ev[i].tid ||
				 (st->sys[j].tid == rr->ev[i].tid && rr->ev[i].type != PYR_SIZE &&
				  st->sys[j].ns < rr->ev[i].ns));

		if (!take_sys) {
			struct tev *e = &rr->ev[i++];

			rc = e->type == PYR_CALL || e->type == PYR_C_CALL
				     ? sonde_calltrace__enter(st->ct, e->tid, e->func, e->ns)
			     : e->type == PYR_SIZE ? sonde_calltrace__size(st->ct, e->tid, e->ns)
						   : sonde_calltrace__exit(st->ct, e->tid, e->ns);
			continue;
		}
		{
			struct tev *s = &st->sys[j++];
			struct tev *next = j < st->nsys ? &st->sys[j] : NULL;
			bool mine = s->ns < rr->t0 || (rr->t1 && s->ns > rr->t1);
			uint32_t id;
			size_t k;

			for (k = 0; k < rr->nown && !mine; k++)
				mine = rr->own[k].tid == s->tid && s->ns >= rr->own[k].a &&
				       s->ns <= rr->own[k].b;
			/* an entry, then its exit in the same thread: one call */
			if (mine || s->type != PYR_CALL || !next || next->tid != s->tid ||
			    next->type != PYR_RETURN)
				continue;
			if (next->ns > rr->t1 && rr->t1)
				continue;
			rc = sys_func(st, (long)(int32_t)s->func, &id);
			if (!rc)
				rc = sonde_calltrace__enter(st->ct, s->tid, id, s->ns);
			if (!rc)
				rc = sonde_calltrace__exit(st->ct, s->tid, next->ns);
			st->sc_events += 2;
			j++;
		}
	}
	return rc;
}

static int analyse(void *ctx, const void *log, size_t len, const struct sonde_run_info *ri)
{
	struct run_read *rr = ctx;
	int rc;

	rr->ri = ri;
	rc = walk(rr, log, len, meta);
	if (!rc && !rr->started) {
		rr->st->empty_runs++;
		return 0;
	}
	rc = rc ? rc : walk(rr, log, len, calls);
	if (!rc && rr->st->nsys)
		rc = merge(rr);
	return rc;
}

static int py_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	struct py_state *st = sonde_collection__priv(c);
	struct run_read rr = { .st = st, .c = c };
	char *why = slurp(st->errf);
	int rc;

	if (st->sc) { /* the run is over: its system calls */
		sonde_syscalls__enable(st->sc, false);
		st->nsys = 0;
		rc = sonde_syscalls__read(st->sc, sys_event, st);
		st->sc_lost += sonde_syscalls__lost(st->sc);
		sonde_syscalls__close(st->sc);
		st->sc = NULL;
		if (rc < 0)
			return rc;
		if (ri->warmup)
			st->nsys = 0;
	}
	if (why) {
		sonde_collection__fail(c,
				       "collect python: sonde's runner could not start in %s "
				       "(sonde's Python package is built for CPython %s)",
				       why, SONDE_PYTHON_VERSION);
		free(why);
		return -ENOTSUP;
	}
	rc = rt_host__stop(&st->host, c, ri, analyse, &rr);
	if (!rc && !ri->warmup && !rr.started)
		sonde_collection__note(
			c,
			"run %u: the Python program recorded nothing: sonde's runner "
			"never started in it",
			ri->index + 1);
	if (rc == -EINVAL)
		sonde_collection__fail(c, "collect python: run %u: the recording is damaged",
				       ri->index + 1);
	u64map__release(&rr.fmap);
	free(rr.own);
	free(rr.ev);
	return rc;
}

/*
 * The machine's NUMA nodes as the kernel lists them (/sys/devices/system/node/
 * online, "0" or "0-3,6"), as libnuma reads them in the target.
 */
static json_t *node_list(void)
{
	char *s = slurp("/sys/devices/system/node/online"), *p;
	json_t *nodes = json_array();

	if (!s || !nodes) {
		free(s);
		json_decref(nodes);
		return json_pack("{s:s}", "not_supported",
				 "/sys/devices/system/node/online could not be read");
	}
	for (p = s; *p >= '0' && *p <= '9';) {
		long a = strtol(p, &p, 10), b = a;

		if (*p == '-')
			b = strtol(p + 1, &p, 10);
		for (; a <= b && a - b < 4096; a++)
			json_array_append_new(nodes, json_integer(a));
		if (*p == ',')
			p++;
	}
	free(s);
	return json_pack("{s:o, s:s}", "nodes", nodes, "source",
			 "libnuma: move_pages (a page's node), numa_node_of_cpu");
}

static int py_after(struct sonde_collection *c, struct sonde_profile *p)
{
	struct py_state *st = sonde_collection__priv(c);
	int rc = 0;

	if (!st->ct) { /* no run recorded anything: an empty profile says so */
		st->ct = new_calltrace(c, st, 0, sonde_collection__t0_ns(c));
		if (!st->ct)
			return -ENOMEM;
	}
	if (st->sc_lost) {
		sonde_collection__note(c,
				       "%llu system call events found the kernel's ring full and "
				       "were lost",
				       (unsigned long long)st->sc_lost);
		sonde_collection__dropped(c, st->sc_lost);
	}
	if (sonde_collection__param_bool(c, "syscalls"))
		rc = sonde_calltrace__engine_stat(
			st->ct, "syscalls",
			st->sc_said
				? json_pack("{s:s}", "not_supported", st->sc_why.buf)
				: json_pack("{s:I, s:I, s:s}", "events", (json_int_t)st->sc_events,
					    "lost", (json_int_t)st->sc_lost, "source",
					    "perf_event raw_syscalls"));
	if (!rc && st->mem) {
		json_t *numa = NULL, *m;

		if (sonde_collection__param_bool(c, "numa"))
			numa = st->numa_why[0] ? json_pack("{s:s}", "not_supported", st->numa_why)
					       : node_list();
		m = sonde_memsample__json(st->mem, numa);
		rc = m ? sonde_calltrace__engine_stat(st->ct, "memory", m) : -ENOMEM;
	}
	if (st->sampling) {
		double hz = sonde_collection__param_double(c, "hz", 100);

		rc = rc ? rc
			: sonde_calltrace__engine_stat(
				  st->ct, "sampling",
				  pyr_sampling_json(hz, sonde_collection__param_bool(c, "wall"),
						    st->timed, st->how, st->ticks, st->late_ticks,
						    st->truncated, st->untimed, st->rerouted,
						    st->cpu_ns, st->weighed_ns));
		return rc ? rc : sonde_calltrace__write(st->ct, p);
	}
	rc = rc ? rc
		: sonde_calltrace__engine_stat(
			  st->ct, "python",
			  json_pack("{s:I, s:i, s:s}", "events", (json_int_t)st->events,
				    "runs_without_data", (int)st->empty_runs, "hook",
				    sonde_collection__param_bool(c, "no-c-calls")
					    ? "frame evaluator"
					    : "C profile function"));
	return rc ? rc : sonde_calltrace__write(st->ct, p);
}

static void py_cleanup(struct sonde_collection *c)
{
	struct py_state *st = sonde_collection__priv(c);

	if (!st)
		return;
	if (st->dir[0]) {
		unlink(st->errf);
		rmdir(st->dir);
	}
	rt_host__release(&st->host);
	sonde_syscalls__close(st->sc);
	sonde_strbuf__release(&st->sc_why);
	u64map__release(&st->sc_ids);
	free(st->sys);
	free(st->ids);
	sonde_memsample__free(st->mem);
	for (size_t i = 0; i < st->nfnames; i++) {
		free(st->fnames[i].name);
		free(st->fnames[i].file);
	}
	free(st->fnames);
	u64map__release(&st->fname_index);
	sonde_calltrace__free(st->ct);
	free(st->program);
	free(st);
}

static const char *const py_units[] = { "time", "ns", "structure-unit-size", "elements", NULL };

static const char *const py_modes[] = { "calls", "sampling", NULL };

static const struct sonde_option py_options[] = {
	{ SONDE_OPT_CHOICE, 0, "mode", NULL, "MODE",
	  "calls: every call and return (default); sampling: every thread's Python stack HZ "
	  "times a second, weighted by the CPU time it used (counts are samples, times "
	  "estimates)",
	  0, 0, py_modes },
	{ SONDE_OPT_DOUBLE, 0, "hz", NULL, "HZ", "sampling: samples per second (100)", 1, 10000 },
	{ SONDE_OPT_FLAG, 0, "wall", NULL, NULL,
	  "sampling: weight by wall time, and sample waiting threads too" },
	{ SONDE_OPT_FLAG, 0, "memory", NULL, NULL,
	  "also sample the Python allocator (about one allocation every --memory-interval "
	  "bytes): estimated bytes per function, in stats.trace.memory" },
	{ SONDE_OPT_FLAG, 0, "numa", NULL, NULL,
	  "--memory, and the NUMA node of each sampled block's page and of the CPU that "
	  "allocated it (libnuma): bytes per node, migrated and remote blocks" },
	{ SONDE_OPT_INT, 0, "memory-interval", NULL, "BYTES",
	  "--memory: the mean bytes between samples (262144)", 1, 1099511627776.0 },
	{ SONDE_OPT_FLAG, 0, "no-c-calls", NULL, NULL,
	  "record Python functions only, not their calls into C functions" },
	{ SONDE_OPT_FLAG, 0, "syscalls", NULL, NULL,
	  "also every system call, a call of syscall:NAME in the function that made it "
	  "(perf_event tracepoints: root, or kernel.perf_event_paranoid -1)" },
	TR_FILTER_OPTIONS,
	TR_LIMIT_OPTIONS,
	RT_HOST_RING_OPTION("16"),
	{ .type = SONDE_OPT_END },
};

const struct sonde_collector sonde_collector_python = {
	.abi = SONDE_COLLECTOR_ABI,
	.name = "python",
	.summary = "every Python call and return, and calls into C functions (a C profile "
		   "hook), or every thread's Python stack HZ times a second (--mode sampling); "
		   "allocations sampled by bytes (--memory, --numa): per-function times, call "
		   "graph, timeline per thread",
	.profile_type = "mixed",
	.units = py_units,
	.options = py_options,
	.flags = SONDE_COLLECTOR_ONE_RUN | SONDE_COLLECTOR_WRAPS_TARGET |
		 SONDE_COLLECTOR_NEEDS_BARRIER | SONDE_COLLECTOR_FOLLOWS_CHILDREN,
	.before = py_before,
	.start = py_start,
	.stop = py_stop,
	.after = py_after,
	.cleanup = py_cleanup,
};
