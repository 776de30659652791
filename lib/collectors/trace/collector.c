/*
 * collector.c - the trace collector: every function call's entry and exit.
 *
 * Engine "instrument": the program is built with -finstrument-functions; the
 * runtime libsonde-trace.so (preloaded through rt-host.h) implements the hooks
 * and writes events into per-thread rings. Strategies, -f rules and -g
 * sampling become a rules file the runtime reads (which functions, every how
 * many calls); --filter, --exclude and --min-time are applied by the analysis
 * to the functions' names and the calls' durations.
 *
 * Engine "ebpf" (uprobes on an unmodified binary) is selected with -e ebpf.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sonde/collector.h>
#include <sonde/runner.h>
#include "trace.h"

struct tr_state {
	struct tr_analysis a;
	struct rt_host host;
	char rules_path[PATH_MAX];
};

/* ---- the binary's functions ------------------------------------------------------------ */

typedef int (*sym_fn)(void *ctx, const char *name, uint64_t addr);

/* One symbol of a table; non-zero stops the walk and is returned. */
typedef int (*elf_sym_fn)(void *ctx, const char *name, const GElf_Sym *s);

/*
 * Every named symbol of an ELF file's tables of type `type` (SHT_SYMTAB or
 * SHT_DYNSYM). -ENOENT: the file has no such table; -errno, -ENOEXEC on failure.
 */
static int elf_symbols(const char *path, Elf64_Word type, elf_sym_fn fn, void *ctx)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -ENOENT;
	Elf_Scn *scn = NULL;
	Elf *e;

	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e) {
		close(fd);
		return -ENOEXEC;
	}
	while ((rc == 0 || rc == -ENOENT) && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		rc = 0;
		d = elf_getdata(scn, NULL);
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; d && i < n && !rc; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s))
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (name && *name)
				rc = fn(ctx, name, &s);
		}
	}
	elf_end(e);
	close(fd);
	return rc;
}

struct func_walk {
	sym_fn fn;
	void *ctx;
};

static int defined_function(void *ctx, const char *name, const GElf_Sym *s)
{
	struct func_walk *w = ctx;

	if (GELF_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF || !s->st_value)
		return 0;
	return w->fn(w->ctx, name, s->st_value);
}

/* Every defined function symbol of an ELF file (symtab, else dynsym). -errno on failure. */
static int elf_functions(const char *path, sym_fn fn, void *ctx)
{
	struct func_walk w = { fn, ctx };
	int rc = elf_symbols(path, SHT_SYMTAB, defined_function, &w);

	if (rc == -ENOENT)
		rc = elf_symbols(path, SHT_DYNSYM, defined_function, &w);
	return rc == -ENOENT ? 0 : rc;
}

static int is_enter_hook(void *ctx, const char *name, const GElf_Sym *s)
{
	(void)ctx;
	(void)s;
	return strcmp(name, "__cyg_profile_func_enter") == 0;
}

/* Whether the program calls the -finstrument-functions hooks (a dynamic reference). */
static bool instrumented(const char *path)
{
	return elf_symbols(path, SHT_DYNSYM, is_enter_hook, NULL) == 1;
}

/* ---- rules ------------------------------------------------------------------------------ */

struct rules {
	struct tr_rules h;
	char (*names)[TR_RULE_NAME];
	struct tr_rule *r;
	size_t caprules;
};

struct rule_match {
	struct rules *rs;
	struct sonde_symbols *sym;
	const char *want;
	uint32_t module, every;
	unsigned matched;
};

static int push_rule(struct rules *rs, uint32_t module, uint32_t every, uint64_t addr)
{
	if (rs->h.nrules == rs->caprules) {
		size_t cap = rs->caprules ? rs->caprules * 2 : 64;
		void *n = realloc(rs->r, cap * sizeof(*rs->r));

		if (!n)
			return -ENOMEM;
		rs->r = n;
		rs->caprules = cap;
	}
	rs->r[rs->h.nrules++] = (struct tr_rule){ module, every, addr };
	return 0;
}

static int match_rule(void *ctx, const char *name, uint64_t addr)
{
	struct rule_match *m = ctx;
	const char *dm;
	size_t wl = strlen(m->want);
	struct rules *rs = m->rs;

	dm = sonde_symbols__demangle(m->sym, name);
	if (strcmp(name, m->want) != 0 && strcmp(dm, m->want) != 0 &&
	    !(strncmp(dm, m->want, wl) == 0 && dm[wl] == '('))
		return 0;
	m->matched++;
	return push_rule(rs, m->module, m->every, addr);
}

static int add_every(void *ctx, const char *name, uint64_t addr)
{
	struct rule_match *m = ctx;

	(void)name;
	return push_rule(m->rs, 0, m->every, addr);
}

static uint32_t rules_module(struct rules *rs, const char *lib)
{
	const char *base = strrchr(lib, '/');
	uint32_t i;
	void *n;

	base = base ? base + 1 : lib;
	for (i = 1; i < rs->h.nmodules; i++)
		if (strcmp(rs->names[i], base) == 0)
			return i;
	n = realloc(rs->names, (size_t)(rs->h.nmodules + 1) * TR_RULE_NAME);
	if (!n)
		return 0;
	rs->names = n;
	snprintf(rs->names[rs->h.nmodules], TR_RULE_NAME, "%s", base);
	return rs->h.nmodules++;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* A library given by name: the file the dynamic linker would find, or NULL. */
static char *find_lib(const char *lib)
{
	static const char *const dirs[] = { "/lib/x86_64-linux-gnu",
					    "/usr/lib/x86_64-linux-gnu",
					    "/lib",
					    "/usr/lib",
					    "/usr/local/lib",
					    NULL };
	char path[PATH_MAX];
	size_t i;

	if (strchr(lib, '/'))
		return access(lib, R_OK) == 0 ? strdup(lib) : NULL;
	for (i = 0; dirs[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], lib);
		if (access(path, R_OK) == 0)
			return strdup(path);
	}
	return NULL;
}

/* One -f rule, LIB#FUNC#SAMPLING (LIB and SAMPLING may be left out). */
static int add_func_rule(struct sonde_collection *c, struct rules *rs, struct sonde_symbols *sym,
			 const char *binary, const char *spec, uint32_t global)
{
	char *copy = strdup(spec), *part[4], *p, *lib = NULL, *every = NULL;
	struct rule_match m = { .rs = rs, .sym = sym, .every = global };
	int n, rc;

	if (!copy)
		return -ENOMEM;
	/* up to three parts; two are FUNC#N when the second is a number, else LIB#FUNC */
	for (n = 0, p = copy; p && n < 4; n++) {
		part[n] = p;
		p = strchr(p, '#');
		if (p)
			*p++ = '\0';
	}
	if (n == 3 || (n == 2 && all_digits(part[1]))) {
		every = part[n - 1];
		n--;
	}
	if (n == 2)
		lib = part[0];
	m.want = part[n - 1];
	if (p || n > 2 || !*m.want || (every && *every && !all_digits(every))) {
		sonde_collection__fail(c, "bad -f rule '%s' (expected [LIB#]FUNC[#SAMPLING])",
				       spec);
		free(copy);
		return -EINVAL;
	}
	if (every && *every)
		m.every = (uint32_t)strtoul(every, NULL, 10);
	if (lib && *lib) {
		char *path = find_lib(lib);

		if (!path) {
			sonde_collection__fail(c, "-f rule '%s': cannot find library '%s'", spec,
					       lib);
			free(copy);
			return -EINVAL;
		}
		m.module = rules_module(rs, path);
		rc = elf_functions(path, match_rule, &m);
		free(path);
	} else {
		m.module = 0;
		rc = elf_functions(binary, match_rule, &m);
	}
	if (!rc && !m.matched) {
		sonde_collection__fail(c, "-f rule '%s': no function '%s' in %s", spec, m.want,
				       lib && *lib ? lib : binary);
		rc = -EINVAL;
	}
	free(copy);
	return rc;
}

static int write_rules(struct tr_state *st, struct rules *rs)
{
	const char *tmp = getenv("TMPDIR");
	int fd, rc = 0;
	FILE *f;

	snprintf(st->rules_path, sizeof(st->rules_path), "%s/sonde-trace-rules-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	fd = mkostemp(st->rules_path, O_CLOEXEC);
	if (fd < 0) {
		st->rules_path[0] = '\0';
		return -errno;
	}
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -errno;
	}
	rs->h.magic = TR_RULES_MAGIC;
	if (fwrite(&rs->h, sizeof(rs->h), 1, f) != 1 ||
	    fwrite(rs->names, TR_RULE_NAME, rs->h.nmodules, f) != rs->h.nmodules ||
	    (rs->h.nrules && fwrite(rs->r, sizeof(*rs->r), rs->h.nrules, f) != rs->h.nrules))
		rc = -EIO;
	if (fclose(f))
		rc = -errno;
	return rc;
}

/* ---- the collector ------------------------------------------------------------------------ */

static int compile(struct sonde_collection *c, regex_t *re, bool *has, const char *opt)
{
	const char *s = sonde_collection__param_str(c, opt, NULL);
	char msg[256];
	int rc;

	if (!s)
		return 0;
	rc = regcomp(re, s, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		regerror(rc, re, msg, sizeof(msg));
		sonde_collection__fail(c, "--%s '%s': %s", opt, s, msg);
		return -EINVAL;
	}
	*has = true;
	return 0;
}

/* "500ns", "20us", "1.5ms", "2s", or a number of ns. -1: not a duration. */
static double parse_duration_ns(const char *s)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = { { "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "", 1 } };
	char *end;
	double v = strtod(s, &end);
	size_t i;

	if (end == s || v < 0)
		return -1;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].unit) == 0)
			return v * units[i].ns;
	return -1;
}

static int trace_before(struct sonde_collection *c)
{
	struct tr_state *st = calloc(1, sizeof(*st));
	const struct rt_host_spec spec = {
		.collector = "trace",
		.runtime = "libsonde-trace.so",
		.ring_env = TR_ENV_RING,
		.rings = 64,
		.ring_bytes = 16u << 20,
		.drop_oldest = sonde_collection__param_bool(c, "drop-oldest"),
	};
	const char *engine = sonde_collection__param_str(c, "engine", NULL);
	const char *strategy = sonde_collection__param_str(c, "strategy", "userspace");
	const char *min_time = sonde_collection__param_str(c, "min-time", NULL);
	const char *bin_opt = sonde_collection__param_str(c, "binary", NULL);
	json_t *funcs = json_object_get(sonde_collection__params(c), "func");
	json_t *libs = json_object_get(sonde_collection__params(c), "lib");
	json_t *usdt = json_object_get(sonde_collection__params(c), "usdt");
	long long global = sonde_collection__param_int(c, "global-sampling", 0);
	bool sampled = strcmp(strategy, "u_sampled") == 0 || strcmp(strategy, "a_sampled") == 0;
	struct rules rs = { 0 };
	unsigned flags = 0;
	char *binary = NULL, num[32];
	size_t i;
	int rc;

	if (!st)
		return -ENOMEM;
	st->host.log_fd = -1;
	sonde_collection__set_priv(c, st);
	tr_analysis__init(&st->a);
	if (!st->a.sym || !st->a.func_index || !st->a.threads || !st->a.processes)
		return -ENOMEM;
	st->a.max_rows = (uint64_t)sonde_collection__param_int(c, "max-rows", 10000);
	st->a.max_slices = (uint64_t)sonde_collection__param_int(c, "max-slices", 200000);
	if (min_time) {
		double ns = parse_duration_ns(min_time);

		if (ns < 0) {
			sonde_collection__fail(c,
					       "--min-time '%s': expected a duration such as "
					       "500ns, 20us, 1.5ms or 2s",
					       min_time);
			return -EINVAL;
		}
		st->a.min_time_ns = (uint64_t)ns;
	}
	rc = compile(c, &st->a.filter, &st->a.has_filter, "filter");
	rc = rc ? rc : compile(c, &st->a.exclude, &st->a.has_exclude, "exclude");
	if (rc)
		return rc;

	binary = sonde_runner__resolve(bin_opt ? bin_opt : sonde_collection__argv(c)[0]);
	if (!binary) {
		sonde_collection__fail(c, "cannot find the program '%s'",
				       bin_opt ? bin_opt : sonde_collection__argv(c)[0]);
		return -ENOENT;
	}
	if (!engine)
		engine = instrumented(binary) ? "instrument" : "ebpf";
	if (strcmp(engine, "ebpf") == 0) {
		sonde_collection__fail(
			c,
			"'%s' is not built with -finstrument-functions%s, and this build of sonde "
			"has no ebpf engine yet: rebuild the program with -finstrument-functions",
			binary, sonde_collection__param_str(c, "engine", NULL) ? " (-e ebpf)" : "");
		free(binary);
		return -ENOTSUP;
	}
	if (!instrumented(binary)) {
		sonde_collection__fail(c,
				       "'%s' does not call __cyg_profile_func_enter: build it with "
				       "-finstrument-functions for the instrument engine",
				       binary);
		free(binary);
		return -ENOTSUP;
	}
	if (json_is_array(usdt) && json_array_size(usdt)) {
		sonde_collection__fail(c, "-u (USDT probes) needs the ebpf engine");
		free(binary);
		return -ENOTSUP;
	}
	if (sonde_collection__param_str(c, "size-arg", NULL)) {
		sonde_collection__fail(c,
				       "--size-arg reads registers with the ebpf engine; with "
				       "-finstrument-functions call sonde_trace_size(n) instead");
		free(binary);
		return -ENOTSUP;
	}

	/* the rules: strategy, -g, -f */
	if (strcmp(strategy, "all") == 0 || strcmp(strategy, "a_sampled") == 0 ||
	    (json_is_array(libs) && json_array_size(libs)))
		flags |= TR_F_LIBS;
	rs.h.default_every = strcmp(strategy, "custom") == 0 ? 0
			     : global			     ? (uint32_t)global
			     : sampled			     ? 20
							     : 1;
	rs.names = calloc(1, TR_RULE_NAME);
	if (!rs.names) {
		free(binary);
		return -ENOMEM;
	}
	snprintf(rs.names[0], TR_RULE_NAME, "%s", binary);
	rs.h.nmodules = 1;
	/* global sampling counts per function: every function of the binary gets a
	   rule (the runtime's counters live in them); -f rules, added later, win */
	if (rs.h.default_every > 1) {
		struct rule_match m = { .rs = &rs, .sym = st->a.sym, .every = rs.h.default_every };

		rc = elf_functions(binary, add_every, &m);
	}
	for (i = 0; !rc && json_is_array(funcs) && i < json_array_size(funcs); i++) {
		rc = add_func_rule(c, &rs, st->a.sym, binary,
				   json_string_value(json_array_get(funcs, i)),
				   global    ? (uint32_t)global
				   : sampled ? 20
					     : 1);
		if (rc)
			break;
	}
	if (!rc && (rs.h.nrules || rs.h.default_every != 1)) {
		flags |= TR_F_RULES;
		rc = write_rules(st, &rs);
		if (rc)
			sonde_collection__fail(c, "cannot write the trace rules: %s",
					       strerror(-rc));
	}
	free(rs.names);
	free(rs.r);
	free(binary);
	if (rc)
		return rc;

	rc = rt_host__start(&st->host, c, &spec);
	if (rc)
		return rc;
	if (st->host.tsc)
		flags |= TR_F_TSC;
	snprintf(num, sizeof(num), "%u", flags);
	rc = sonde_collection__setenv(c, TR_ENV_FLAGS, num);
	snprintf(num, sizeof(num), "%lld", sonde_collection__param_int(c, "depth", 0));
	rc = rc ? rc : sonde_collection__setenv(c, TR_ENV_DEPTH, num);
	if (!rc && st->rules_path[0])
		rc = sonde_collection__setenv(c, TR_ENV_RULES, st->rules_path);
	return rc;
}

static int analyse(void *ctx, const void *log, size_t len, const struct sonde_run_info *ri)
{
	struct tr_state *st = ctx;

	st->a.clock = st->host.clock;
	return tr_analysis__run(&st->a, log, len, ri->t0_ns);
}

static int trace_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	struct tr_state *st = sonde_collection__priv(c);

	return rt_host__stop(&st->host, c, ri, analyse, st);
}

static int trace_after(struct sonde_collection *c, struct sonde_profile *p)
{
	struct tr_state *st = sonde_collection__priv(c);
	const struct tr_totals *t = &st->a.t;

	st->a.t.drain_cpu_ns = rt_host__drain_cpu_ns(&st->host);
	if (t->lost)
		sonde_collection__note(c,
				       "%llu calls happened in signal handlers that interrupted "
				       "sonde's own hook and were not recorded",
				       (unsigned long long)t->lost);
	if (t->unfinished)
		sonde_collection__note(
			c,
			"%llu calls had not returned when their thread stopped "
			"(exit, exec or a crash): they end at the thread's last event",
			(unsigned long long)t->unfinished);
	if (t->slices_dropped)
		sonde_collection__note(c,
				       "the timeline keeps the first %llu calls (--max-slices); "
				       "the summaries count all %llu",
				       (unsigned long long)st->a.nslices,
				       (unsigned long long)t->calls);
	return tr_analysis__write(&st->a, p);
}

static void trace_cleanup(struct sonde_collection *c)
{
	struct tr_state *st = sonde_collection__priv(c);

	if (!st)
		return;
	rt_host__release(&st->host);
	if (st->rules_path[0])
		unlink(st->rules_path);
	tr_analysis__release(&st->a);
	free(st);
}

static const char *const trace_units[] = { "time", "ns", "structure-unit-size", "elements", NULL };
static const char *const engines[] = { "instrument", "ebpf", NULL };
static const char *const strategies[] = { "userspace", "all",	 "u_sampled",
					  "a_sampled", "custom", NULL };

static const struct sonde_option trace_options[] = {
	{ SONDE_OPT_CHOICE, 'e', "engine", NULL, "ENGINE",
	  "instrument (a -finstrument-functions build) or ebpf (uprobes); default: instrument "
	  "when the program calls the hooks",
	  0, 0, engines },
	{ SONDE_OPT_CHOICE, 's', "strategy", NULL, "STRATEGY",
	  "userspace (the program's functions; default), all (and its libraries'), u_sampled, "
	  "a_sampled (every 20th call, or -g), custom (only -f rules)",
	  0, 0, strategies },
	{ SONDE_OPT_LIST, 'f', "func", NULL, "[LIB#]FUNC[#N]",
	  "trace FUNC (in LIB), every Nth call (repeatable)" },
	{ SONDE_OPT_LIST, 'u', "usdt", NULL, "[LIB#]PROBE[#N]",
	  "trace a USDT probe (ebpf engine)" },
	{ SONDE_OPT_INT, 'g', "global-sampling", NULL, "N",
	  "record every Nth call of each function (rules' own sampling wins)", 1, 1e9 },
	{ SONDE_OPT_INT, 0, "depth", NULL, "N", "record calls at most N deep", 1, 1e6 },
	{ SONDE_OPT_STRING, 0, "min-time", NULL, "TIME",
	  "leave out calls shorter than TIME (500ns, 20us, 1ms); their time stays the caller's" },
	{ SONDE_OPT_STRING, 0, "filter", NULL, "REGEX", "keep only functions whose name matches" },
	{ SONDE_OPT_STRING, 0, "exclude", NULL, "REGEX", "leave out functions whose name matches" },
	{ SONDE_OPT_STRING, 'b', "binary", NULL, "FILE",
	  "the traced executable, when the command is a script that runs it" },
	{ SONDE_OPT_LIST, 'l', "lib", NULL, "LIB", "also trace functions in LIB (repeatable)" },
	{ SONDE_OPT_STRING, 0, "size-arg", NULL, "FUNC:N",
	  "a call's size is FUNC's Nth integer argument (ebpf engine)" },
	{ SONDE_OPT_INT, 0, "max-rows", NULL, "N",
	  "per-call rows kept per function (10000; 0: all); summaries count every call", 0, 1e12 },
	{ SONDE_OPT_INT, 0, "max-slices", NULL, "N",
	  "calls kept for the timeline (export --format perfetto), the first N (200000)", 0, 1e9 },
	{ SONDE_OPT_FLAG, 0, "drop-oldest", NULL, NULL,
	  "never slow the program down: drop the oldest events when a ring is full (counted)" },
	{ .type = SONDE_OPT_END },
};

const struct sonde_collector sonde_collector_trace = {
	.abi = SONDE_COLLECTOR_ABI,
	.name = "trace",
	.summary = "every function call's duration (-finstrument-functions or eBPF uprobes): "
		   "per-function times, call graph, timeline",
	.profile_type = "mixed",
	.units = trace_units,
	.options = trace_options,
	.flags = SONDE_COLLECTOR_ONE_RUN,
	.before = trace_before,
	.stop = trace_stop,
	.after = trace_after,
	.cleanup = trace_cleanup,
};
