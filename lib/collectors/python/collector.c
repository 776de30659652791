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
 * The runner hooks the interpreter's C profile function, records into
 * per-thread rings, and at exit (the program's threads joined, its own exit
 * handlers run) writes what it recorded to a file in a private directory
 * (pydump.h). Each run's file is read here and fed to the trace collector's
 * analysis (sonde_calltrace), one process per run: the profile is the one
 * `collect trace` writes, so every trace view reads it.
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
#include <sonde/runner.h>
#include "config.h"
#include "pydump.h"
#include "../../runtime-file.h"

/*
 * The runner's bootstrap, run by `python -c`: the package's directory comes
 * from the environment (so -I, -E and odd paths change nothing); a failed
 * import is said in DUMP.err, and exits 125.
 */
static const char boot[] =
	"import os, sys\n"
	"sys.path.insert(0, os.environ.get('SONDE_PYTHON_DIR', ''))\n"
	"try:\n"
	"    from sonde import run\n"
	"except BaseException as e:\n"
	"    with open(sys.argv[2] + '.err', 'w') as f:\n"
	"        f.write('%s %d.%d: %s: %s' % (sys.executable, sys.version_info[0],\n"
	"                sys.version_info[1], type(e).__name__, e))\n"
	"    sys.exit(125)\n"
	"status = run.main()\n"
	"if status:\n"
	"    raise SystemExit(status)\n";

struct py_state {
	char dir[64];	/* private directory of the runs' files */
	char dump[96];	/* dir/calls: the current run's recording */
	char errf[104]; /* dump.err: the runner could not start */
	char *program;	/* the script, module or "-c": the process's exe */
	struct sonde_calltrace *ct;
	uint64_t events, dropped, lost, sc_events, sc_lost;
	unsigned runs, empty_runs;
	bool sc_said; /* why system calls were not recorded: noted once */
	int err;
};

/* basename of argv0 names a CPython interpreter: python, python3, python3.11, python3-dbg */
static bool is_python(const char *argv0)
{
	const char *b = strrchr(argv0, '/');

	b = b ? b + 1 : argv0;
	if (strncmp(b, "python", 6))
		return false;
	for (b += 6; *b; b++)
		if (!((*b >= '0' && *b <= '9') || *b == '.'))
			return !strcmp(b, "-dbg");
	return true;
}

/* The #! line of path when it names python: its words (a heap vector), else NULL. */
static char **shebang(const char *path)
{
	char line[256], *p, *tok, **v;
	size_t n = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return NULL;
	if (!fgets(line, sizeof(line), f) || strncmp(line, "#!", 2) || !strstr(line, "python")) {
		fclose(f);
		return NULL;
	}
	fclose(f);
	v = calloc(8, sizeof(*v));
	if (!v)
		return NULL;
	for (p = line + 2; n < 7 && (tok = strtok(p, " \t\r\n")); p = NULL)
		v[n++] = tok;
	if (!n) {
		free(v);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) { /* own the words */
		v[i] = strdup(v[i]);
		if (!v[i]) {
			while (i)
				free(v[--i]);
			free(v);
			return NULL;
		}
	}
	return v;
}

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
	char **v = NULL, **bang = NULL, num[32], kind = 0;
	const char *value = NULL;
	size_t n = 0, i = 1;
	int rc = 0;

	if (is_python(argv[0])) {
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

		bang = path ? shebang(path) : NULL;
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
	rc = rc ? rc : push(&v, &n, "--dump");
	rc = rc ? rc : push(&v, &n, st->dump);
	if (!rc && sonde_collection__param_bool(c, "no-c-calls"))
		rc = push(&v, &n, "--no-c-calls");
	if (!rc && sonde_collection__param_bool(c, "syscalls"))
		rc = push(&v, &n, "--syscalls");
	snprintf(num, sizeof(num), "%lld",
		 sonde_collection__param_int(c, "ring-mib", 64) * 1024 * 1024);
	rc = rc ? rc : push(&v, &n, "--buffer");
	rc = rc ? rc : push(&v, &n, num);
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
	char *pkg;
	int rc;

	if (!st)
		return -ENOMEM;
	sonde_collection__set_priv(c, st);
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
	snprintf(st->dump, sizeof(st->dump), "%s/calls", st->dir);
	snprintf(st->errf, sizeof(st->errf), "%s.err", st->dump);
	return build_argv(c, st);
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

/* Cursor over a dump: take(n) bytes, or NULL past the end. */
struct cur {
	const uint8_t *p, *end;
};

static const void *take(struct cur *k, size_t n)
{
	const void *at = k->p;

	if ((size_t)(k->end - k->p) < n)
		return NULL;
	k->p += n;
	return at;
}

/* Feed one run's recording to the calltrace; -EBADMSG for a damaged file. */
static int feed(struct sonde_collection *c, struct py_state *st, const void *buf, size_t len,
		const struct sonde_run_info *ri)
{
	struct cur k = { buf, (const uint8_t *)buf + len };
	const struct pydump_head *h = take(&k, sizeof(*h));
	uint32_t *ids = NULL;
	int rc = 0;

	if (!h || memcmp(h->magic, PYDUMP_MAGIC, 8) || h->nfns > len)
		return -EBADMSG;
	if (!st->ct) {
		st->ct = sonde_calltrace__new("python", st->program, h->pid, ri->t0_ns);
		if (!st->ct)
			return -ENOMEM;
		sonde_calltrace__max_rows(
			st->ct, (uint64_t)sonde_collection__param_int(c, "max-rows", 10000));
		sonde_calltrace__limits(
			st->ct, (uint64_t)sonde_collection__param_int(c, "max-slices", 200000),
			(uint64_t)(sonde_collection__param_double(c, "min-time", 0) * 1e9));
		rc = sonde_calltrace__filter(st->ct, sonde_collection__param_str(c, "filter", NULL),
					     sonde_collection__param_str(c, "exclude", NULL));
	} else {
		rc = sonde_calltrace__process(st->ct, h->pid, st->program);
	}
	ids = calloc(h->nfns ? h->nfns : 1, sizeof(*ids));
	if (!rc && !ids)
		rc = -ENOMEM;
	for (uint32_t i = 0; i < h->nfns && !rc; i++) {
		const struct pydump_fn *f = take(&k, sizeof(*f));
		const char *mod = f ? take(&k, f->module_len) : NULL;
		const char *name = mod ? take(&k, f->name_len) : NULL;
		char *m, *nm;

		if (!name) {
			rc = -EBADMSG;
			break;
		}
		m = strndup(mod, f->module_len);
		nm = strndup(name, f->name_len);
		rc = m && nm ? sonde_calltrace__func(st->ct, m, f->line, nm, &ids[i]) : -ENOMEM;
		free(m);
		free(nm);
	}
	for (uint32_t t = 0; t < h->nthreads && !rc; t++) {
		const struct pydump_thread *th = take(&k, sizeof(*th));
		const char *name = th ? take(&k, th->name_len) : NULL;
		const struct pydump_ev *ev;

		if (!name || th->n > (uint64_t)(k.end - k.p) / sizeof(*ev)) {
			rc = -EBADMSG;
			break;
		}
		ev = take(&k, th->n * sizeof(*ev));
		if (th->name_len) {
			char *nm = strndup(name, th->name_len);

			rc = nm ? sonde_calltrace__thread_name(st->ct, th->tid, nm) : -ENOMEM;
			free(nm);
		}
		for (uint64_t i = 0; i < th->n && !rc; i++) {
			struct pydump_ev e;

			memcpy(&e, &ev[i], sizeof(e));
			if (e.type == PYD_CALL || e.type == PYD_C_CALL)
				rc = e.func < h->nfns ? sonde_calltrace__enter(st->ct, th->tid,
									       ids[e.func], e.ts)
						      : -EBADMSG;
			else if (e.type == PYD_RETURN || e.type == PYD_C_RETURN)
				rc = sonde_calltrace__exit(st->ct, th->tid, e.ts);
			else if (e.type == PYD_SIZE)
				rc = sonde_calltrace__size(st->ct, th->tid, e.ts);
			else
				rc = -EBADMSG;
		}
	}
	free(ids);
	if (!rc && (h->flags & PYD_F_SYSCALLS_WANTED) && !(h->flags & PYD_F_SYSCALLS) &&
	    !st->sc_said) {
		sonde_collection__note(c, "system calls were not recorded: %.*s",
				       (int)strnlen(h->note, sizeof(h->note)), h->note);
		st->sc_said = true;
	}
	if (!rc) {
		st->events += h->events;
		st->dropped += h->dropped;
		st->lost += h->lost;
		st->sc_events += h->sc_events;
		st->sc_lost += h->sc_lost;
		if (h->sc_lost)
			sonde_collection__dropped(c, h->sc_lost);
		if (h->dropped + h->lost)
			sonde_collection__dropped(c, h->dropped + h->lost);
	}
	return rc;
}

static int py_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	struct py_state *st = sonde_collection__priv(c);
	char *why = slurp(st->errf);
	struct stat sb;
	void *map;
	int fd, rc;

	if (why) {
		sonde_collection__fail(c,
				       "collect python: sonde's runner could not start in %s "
				       "(sonde's Python package is built for CPython %s)",
				       why, SONDE_PYTHON_VERSION);
		free(why);
		return -ENOTSUP;
	}
	fd = open(st->dump, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (!ri->warmup) {
			st->empty_runs++;
			sonde_collection__note(
				c,
				"run %u: the Python program ended without running its exit "
				"handlers (os._exit, exec, a fatal signal or a crash): its calls "
				"were not recorded",
				ri->index + 1);
		}
		return 0;
	}
	unlink(st->dump);
	if (ri->warmup) {
		close(fd);
		return 0;
	}
	if (fstat(fd, &sb) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	map = sb.st_size ? mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	rc = map ? feed(c, st, map, (size_t)sb.st_size, ri) : -EBADMSG;
	if (map)
		munmap(map, (size_t)sb.st_size);
	if (rc == -EBADMSG)
		sonde_collection__fail(c,
				       "collect python: run %u: the runner's recording is "
				       "damaged",
				       ri->index + 1);
	st->runs++;
	return rc;
}

static int py_after(struct sonde_collection *c, struct sonde_profile *p)
{
	struct py_state *st = sonde_collection__priv(c);
	int rc;

	if (!st->ct) { /* no run recorded anything: an empty profile says so */
		st->ct = sonde_calltrace__new("python", st->program, 0, sonde_collection__t0_ns(c));
		if (!st->ct)
			return -ENOMEM;
	}
	if (st->dropped)
		sonde_collection__note(c,
				       "%llu events found their thread's ring full and the oldest "
				       "were dropped; calls whose start was dropped count as "
				       "unmatched exits (a bigger --ring-mib keeps them)",
				       (unsigned long long)st->dropped);
	if (st->sc_lost)
		sonde_collection__note(c,
				       "%llu system call events found the kernel's ring full and "
				       "were lost",
				       (unsigned long long)st->sc_lost);
	if (st->lost)
		sonde_collection__note(c,
				       "%llu events came from threads that found no free ring "
				       "(1024 threads at once) and were lost",
				       (unsigned long long)st->lost);
	if (sonde_collection__param_bool(c, "syscalls") && !st->sc_said)
		rc = sonde_calltrace__engine_stat(
			st->ct, "syscalls",
			json_pack("{s:I, s:I, s:s}", "events", (json_int_t)st->sc_events, "lost",
				  (json_int_t)st->sc_lost, "source", "perf_event raw_syscalls"));
	else if (sonde_collection__param_bool(c, "syscalls"))
		rc = sonde_calltrace__engine_stat(
			st->ct, "syscalls", json_pack("{s:s}", "not_supported", "see stats.notes"));
	else
		rc = 0;
	rc = rc ? rc
		: sonde_calltrace__engine_stat(
			  st->ct, "python",
			  json_pack("{s:I, s:I, s:I, s:i, s:s}", "events", (json_int_t)st->events,
				    "dropped_events", (json_int_t)st->dropped, "lost_events",
				    (json_int_t)st->lost, "runs_without_data", (int)st->empty_runs,
				    "hook", "C profile function"));
	return rc ? rc : sonde_calltrace__write(st->ct, p);
}

static void py_cleanup(struct sonde_collection *c)
{
	struct py_state *st = sonde_collection__priv(c);

	if (!st)
		return;
	if (st->dir[0]) {
		char tmp[112];

		snprintf(tmp, sizeof(tmp), "%s.tmp", st->dump);
		unlink(tmp);
		unlink(st->dump);
		unlink(st->errf);
		rmdir(st->dir);
	}
	sonde_calltrace__free(st->ct);
	free(st->program);
	free(st);
}

static const char *const py_units[] = { "time", "ns", "structure-unit-size", "elements", NULL };

static const struct sonde_option py_options[] = {
	{ SONDE_OPT_FLAG, 0, "no-c-calls", NULL, NULL,
	  "record Python functions only, not their calls into C functions" },
	{ SONDE_OPT_FLAG, 0, "syscalls", NULL, NULL,
	  "also every system call, a call of syscall:NAME in the function that made it "
	  "(perf_event tracepoints: root, or kernel.perf_event_paranoid -1)" },
	{ SONDE_OPT_STRING, 0, "filter", NULL, "REGEX", "keep only functions whose name matches" },
	{ SONDE_OPT_STRING, 0, "exclude", NULL, "REGEX", "leave out functions whose name matches" },
	{ SONDE_OPT_DURATION, 0, "min-time", NULL, NULL,
	  "leave out calls shorter than DURATION (500ns, 20us, 1ms; plain: ns); their time "
	  "stays the caller's",
	  0, 1e15, .unit_s = 1e-9 },
	{ SONDE_OPT_INT, 0, "max-rows", NULL, "N",
	  "per-call rows kept per function (10000; 0: all); summaries count every call", 0, 1e12 },
	{ SONDE_OPT_INT, 0, "max-slices", NULL, "N",
	  "calls kept for the timeline (export --format perfetto), the first N (200000)", 0, 1e9 },
	{ SONDE_OPT_INT, 0, "ring-mib", NULL, "N",
	  "MiB of each thread's event ring (64; a power of two, 16 bytes an event): a full "
	  "ring drops its oldest events, counted",
	  1, 1024 },
	{ .type = SONDE_OPT_END },
};

const struct sonde_collector sonde_collector_python = {
	.abi = SONDE_COLLECTOR_ABI,
	.name = "python",
	.summary = "every Python call and return, and calls into C functions (a C profile "
		   "hook): per-function times, call graph, timeline per thread",
	.profile_type = "mixed",
	.units = py_units,
	.options = py_options,
	.flags = SONDE_COLLECTOR_ONE_RUN | SONDE_COLLECTOR_WRAPS_TARGET,
	.before = py_before,
	.stop = py_stop,
	.after = py_after,
	.cleanup = py_cleanup,
};
