/*
 * collector.c - the trace collector: every function call's entry and exit.
 *
 * Engine "instrument": the program is built with -finstrument-functions; the
 * runtime libsonde-trace.so (preloaded through rt-host.h) implements the hooks
 * and writes events into per-thread rings. Strategies, -F rules and -g
 * sampling become a rules file the runtime reads (which functions, every how
 * many calls); --filter, --exclude and --min-time are applied by the analysis
 * to the functions' names and the calls' durations, which rebuilds the calls
 * while the target runs (a follower of the drained log, rt-host.h).
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
#include <sys/mman.h>
#include <unistd.h>
#include <sonde/clock.h>
#include <sonde/collector.h>
#include <sonde/runner.h>
#include <sonde/file.h>
#include <sonde/format.h>
#include "config.h"
#include "../../engines/calltree/binary.h"
#include "ebpf.h"
#include "../../engines/calltree/calltree.h"

struct tr_state {
	struct tr_analysis a;
	struct rt_host host; /* instrument */
	char rules_path[64]; /* "/proc/PID/fd/N" of rules_fd: no file to leave behind */
	int rules_fd;
	struct tr_feed *feed;  /* instrument: the run's calls, rebuilt while it runs */
	uint64_t dropped_said; /* of a.t.dropped_calls, those given to the session */
	struct te_loader *bpf; /* ebpf */
	size_t bpf_ring;       /* ebpf: bytes of the BPF ring buffer */
	uint32_t follow_every; /* ebpf: the sampling of an exec'ed program's functions */
	char *exe;
	bool pg; /* the executable is a -pg build: its calls are keyed by their mcount call */
	char verbose_path[PATH_MAX]; /* -vt: the text lines' file */
};

/* ---- rules ------------------------------------------------------------------------------ */

struct rules {
	struct tr_rules h;
	char (*names)[TR_RULE_NAME]; /* file names, for the runtime */
	char **paths;		     /* the same modules' paths, for the ebpf engine */
	struct tr_rule *r;
	size_t caprules;
};

struct rule_match {
	struct rules *rs;
	struct sonde_symbols *sym;
	const char *want;
	uint32_t module, every;
	unsigned matched;
	uint64_t first; /* the first match's address */
	bool no_rule;	/* only find: add no rule */
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

static int match_rule(void *ctx, const char *name, uint64_t addr, uint64_t size)
{
	struct rule_match *m = ctx;
	const char *dm;
	size_t wl = strlen(m->want);
	struct rules *rs = m->rs;

	(void)size;

	dm = sonde_symbols__demangle(m->sym, name);
	if (strcmp(name, m->want) != 0 && strcmp(dm, m->want) != 0 &&
	    !(strncmp(dm, m->want, wl) == 0 && dm[wl] == '('))
		return 0;
	if (!m->matched++)
		m->first = addr;
	return m->no_rule ? 0 : push_rule(rs, m->module, m->every, addr);
}

static int add_every(void *ctx, const char *name, uint64_t addr, uint64_t size)
{
	struct rule_match *m = ctx;

	(void)name;
	(void)size;
	return push_rule(m->rs, m->module, m->every, addr);
}

/* Move the rules from `from` on before the others (a later rule for the same
   function wins). */
static int rules_to_front(struct rules *rs, uint32_t from)
{
	size_t head = from, tail = rs->h.nrules - from, sz = sizeof(*rs->r);
	void *tmp;

	if (!head || !tail)
		return 0;
	tmp = malloc(head * sz);
	if (!tmp)
		return -ENOMEM;
	memcpy(tmp, rs->r, head * sz);
	memmove(rs->r, rs->r + head, tail * sz);
	memcpy(rs->r + tail, tmp, head * sz);
	free(tmp);
	return 0;
}

/* The module of a path (0: the program; UINT32_MAX when out of memory). */
static uint32_t rules_module(struct rules *rs, const char *path)
{
	const char *base = strrchr(path, '/');
	uint32_t i;
	void *n;

	base = base ? base + 1 : path;
	for (i = 0; i < rs->h.nmodules; i++)
		if (strcmp(rs->paths[i], path) == 0)
			return i;
	n = realloc(rs->names, (size_t)(rs->h.nmodules + 1) * TR_RULE_NAME);
	if (n)
		rs->names = n;
	n = n ? realloc(rs->paths, (size_t)(rs->h.nmodules + 1) * sizeof(char *)) : NULL;
	if (!n)
		return UINT32_MAX;
	rs->paths = n;
	rs->paths[rs->h.nmodules] = strdup(path);
	if (!rs->paths[rs->h.nmodules])
		return UINT32_MAX;
	snprintf(rs->names[rs->h.nmodules], TR_RULE_NAME, "%s", base);
	return rs->h.nmodules++;
}

static void rules_release(struct rules *rs)
{
	uint32_t i;

	for (i = 0; i < rs->h.nmodules; i++)
		free(rs->paths[i]);
	free(rs->paths);
	free(rs->names);
	free(rs->r);
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

/* Split a spec at '#', in place: at most max parts; their count, or -1 when there are more. */
static int split_spec(char *s, char **part, int max)
{
	int n = 0;

	for (;;) {
		if (n == max)
			return -1;
		part[n++] = s;
		s = strchr(s, '#');
		if (!s)
			return n;
		*s++ = '\0';
	}
}

/* One -F rule, LIB#FUNC#SAMPLING (LIB and SAMPLING may be left out). */
static int add_func_rule(struct sonde_collection *c, struct rules *rs, struct sonde_symbols *sym,
			 const char *binary, const char *spec, uint32_t global)
{
	char *copy = strdup(spec), *part[3], *lib = NULL, *every = NULL;
	struct rule_match m = { .rs = rs, .sym = sym, .every = global };
	int n, rc;

	if (!copy)
		return -ENOMEM;
	/* up to three parts; two are FUNC#N when the second is a number, else LIB#FUNC */
	n = split_spec(copy, part, 3);
	if (n == 3 || (n == 2 && all_digits(part[1]))) {
		every = part[n - 1];
		n--;
	}
	if (n == 2)
		lib = part[0];
	m.want = n > 0 ? part[n - 1] : "";
	if (n < 1 || n > 2 || !*m.want || (every && *every && !all_digits(every))) {
		sonde_collection__fail(c, "bad -F rule '%s' (expected [LIB#]FUNC[#SAMPLING])",
				       spec);
		free(copy);
		return -EINVAL;
	}
	if (every && *every)
		m.every = (uint32_t)strtoul(every, NULL, 10);
	if (lib && *lib) {
		const char *me = strrchr(binary, '/') ? strrchr(binary, '/') + 1 : binary;

		if (!strcmp(lib, me))
			lib = NULL; /* the program itself, by its name */
	}
	if (lib && *lib) {
		char *path = tr_find_lib_of(binary, lib);

		if (!path) {
			sonde_collection__fail(c, "-F rule '%s': cannot find library '%s'", spec,
					       lib);
			free(copy);
			return -EINVAL;
		}
		m.module = rules_module(rs, path);
		rc = m.module == UINT32_MAX ? -ENOMEM : tr_elf_functions(path, match_rule, &m);
		free(path);
	} else {
		m.module = 0;
		rc = tr_elf_functions(binary, match_rule, &m);
	}
	if (!rc && !m.matched) {
		sonde_collection__fail(c, "-F rule '%s': no function '%s' in %s", spec, m.want,
				       lib && *lib ? lib : binary);
		rc = -EINVAL;
	}
	free(copy);
	return rc;
}

/* The rules go into a memfd that the runtimes open by its /proc path, as the rings. */
static int write_rules(struct tr_state *st, struct rules *rs)
{
	int fd, rc = 0;
	FILE *f;

	fd = memfd_create("sonde-trace-rules", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	st->rules_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (st->rules_fd < 0) {
		close(fd);
		return -errno;
	}
	snprintf(st->rules_path, sizeof(st->rules_path), "/proc/%d/fd/%d", (int)getpid(),
		 st->rules_fd);
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -errno;
	}
	rs->h.magic = TR_RULES_MAGIC;
	if (st->pg) {
		/* a -pg program's calls are keyed by where their mcount call returns */
		uint32_t i;

		for (i = 0; i < rs->h.nrules; i++)
			if (rs->r[i].module == 0) {
				uint64_t site = tr_elf_first_call_end(st->exe, rs->r[i].offset);

				if (site)
					rs->r[i].offset = site;
			}
	}
	if (fwrite(&rs->h, sizeof(rs->h), 1, f) != 1 ||
	    fwrite(rs->names, TR_RULE_NAME, rs->h.nmodules, f) != rs->h.nmodules ||
	    (rs->h.nrules && fwrite(rs->r, sizeof(*rs->r), rs->h.nrules, f) != rs->h.nrules))
		rc = -EIO;
	if (fclose(f))
		rc = -errno;
	return rc;
}

/* Whether path starts with "#!" (a script, run by its interpreter). */
static bool script(const char *path)
{
	char head[2] = { 0, 0 };
	FILE *f = fopen(path, "rb");

	if (!f)
		return false;
	if (fread(head, 1, 2, f) != 2)
		head[0] = 0;
	fclose(f);
	return head[0] == '#' && head[1] == '!';
}

/* ---- the ebpf engine's probes ------------------------------------------------------------ */
#if SONDE_HAVE_EBPF

/* The C start-up files' functions and sonde's own get no probes. */
static bool startup_function(const char *name)
{
	static const char *const names[] = { "_start", "_init", "_fini", "deregister_tm_clones",
					     "register_tm_clones", "__do_global_dtors_aux",
					     "frame_dummy", "__libc_csu_init", "__libc_csu_fini",
					     "_dl_relocate_static_pie", "sonde_trace_size",
					     "__cyg_profile_func_enter", "__cyg_profile_func_exit",
					     /* gcrt1.o and libc_nonshared.a, linked into -pg
						and other programs, are not the program's */
					     "__gmon_start__", "atexit", "at_quick_exit",
					     "__stack_chk_fail_local", NULL };
	size_t i;

	for (i = 0; names[i]; i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

/*
 * The C and C++ runtimes: -s all leaves them out, as their probes would trap in
 * every process of the machine that calls them; -l LIB still traces one.
 */
static bool runtime_library(const char *path)
{
	static const char *const libs[] = {
		"libc.so",     "libm.so",   "ld-linux",	   "libpthread.so",
		"libdl.so",    "librt.so",  "libgcc_s.so", "libstdc++.so",
		"libsonde.so", "libsonde-", NULL
	};
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t i;

	for (i = 0; libs[i]; i++)
		if (strncmp(base, libs[i], strlen(libs[i])) == 0)
			return true;
	return false;
}

struct probe_walk {
	struct te_loader *l;
	const char *path;
	uint32_t every;
};

static int add_probe(void *ctx, const char *name, uint64_t addr, uint64_t size)
{
	struct probe_walk *w = ctx;

	if (!size || startup_function(name))
		return 0;
	return te_loader__func(w->l, w->path, addr, w->every, false, 0);
}

/* An exec'ed program that has no probes yet: the strategy's functions of it. */
static int follow_probes(void *ctx, struct te_loader *l, const char *path)
{
	struct probe_walk w = { .l = l, .path = path, .every = *(const uint32_t *)ctx };

	return w.every ? tr_elf_functions(path, add_probe, &w) : 0;
}

/* Where `name` is defined in `path`: 1 and *addr, or 0. */
static int find_function(struct sonde_symbols *sym, const char *path, const char *name,
			 uint64_t *addr)
{
	struct rule_match m = { .sym = sym, .want = name, .no_rule = true };
	int rc = tr_elf_functions(path, match_rule, &m);

	if (rc < 0)
		return rc;
	*addr = m.first;
	return m.matched > 0;
}

/* Whether the first part of a spec names an object: a path, a library, or the program itself. */
static bool looks_like_lib(const char *binary, const char *s)
{
	const char *base = strrchr(binary, '/') ? strrchr(binary, '/') + 1 : binary;

	return strchr(s, '/') || strstr(s, ".so") || !strcmp(s, base);
}

static const struct tr_usdt *usdt_find(const struct tr_usdt *u, size_t n, const char *want,
				       size_t from)
{
	char full[160];
	size_t i;

	for (i = from; i < n; i++) {
		snprintf(full, sizeof(full), "%s:%s", u[i].provider, u[i].name);
		if (strcmp(u[i].name, want) == 0 || strcmp(full, want) == 0)
			return &u[i];
	}
	return NULL;
}

/* Every site of probe `want`, of one kind, into group *group. */
static int usdt_sites(struct te_loader *l, const char *path, const struct tr_usdt *u, size_t n,
		      const char *want, enum te_probe_kind kind, uint32_t *group, uint32_t every)
{
	const struct tr_usdt *s;
	uint32_t idx;
	int rc = 0;

	for (s = usdt_find(u, n, want, 0); s && !rc;
	     s = usdt_find(u, n, want, (size_t)(s - u) + 1)) {
		rc = te_loader__usdt(l, path, s, kind, *group, every, &idx);
		if (*group == UINT32_MAX)
			*group = idx;
	}
	return rc;
}

/*
 * One -u spec: [LIB#]NAME[#END][#SAMPLING]. NAME pairs with NAME_end, NAME_END
 * or NAME_exit when the file has one, or with END when given; alone, each firing
 * is a call of no duration. NAME may be provider:name.
 */
static int add_usdt_spec(struct sonde_collection *c, struct te_loader *l, const char *binary,
			 const char *spec, uint32_t every)
{
	static const char *const ends[] = { "_end", "_END", "_exit", NULL };
	char *copy = strdup(spec), *part[5], *path = NULL, end[160];
	const char *lib = NULL, *endname = NULL;
	struct tr_usdt *u = NULL;
	uint32_t group = UINT32_MAX;
	size_t nu = 0, i;
	int n, k = 0, rc;

	if (!copy)
		return -ENOMEM;
	n = split_spec(copy, part, 5);
	if (n > 1 && looks_like_lib(binary, part[0])) {
		lib = part[0];
		k = 1;
	}
	if (n - k > 1 && all_digits(part[n - 1])) {
		every = (uint32_t)strtoul(part[n - 1], NULL, 10);
		n--;
	}
	if (n < 0 || n - k < 1 || n - k > 2 || !*part[k] || (n - k == 2 && !*part[k + 1])) {
		sonde_collection__fail(
			c, "bad -u probe '%s' (expected [LIB#]NAME[#END][#SAMPLING])", spec);
		free(copy);
		return -EINVAL;
	}
	path = lib ? tr_find_lib_of(binary, lib) : strdup(binary);
	if (!path) {
		sonde_collection__fail(c, "-u probe '%s': cannot find library '%s'", spec, lib);
		free(copy);
		return -EINVAL;
	}
	rc = tr_elf_usdt(path, &u, &nu);
	if (!rc && !usdt_find(u, nu, part[k], 0)) {
		sonde_collection__fail(c, "-u probe '%s': %s has no USDT probe '%s'%s", spec, path,
				       part[k], nu ? "" : " (it has no USDT probes at all)");
		rc = -EINVAL;
	}
	if (!rc && n - k == 2) {
		endname = part[k + 1];
		if (!usdt_find(u, nu, endname, 0)) {
			sonde_collection__fail(c, "-u probe '%s': %s has no USDT probe '%s'", spec,
					       path, endname);
			rc = -EINVAL;
		}
	}
	for (i = 0; !rc && !endname && ends[i]; i++) {
		snprintf(end, sizeof(end), "%s%s", part[k], ends[i]);
		if (usdt_find(u, nu, end, 0))
			endname = end;
	}
	if (!rc)
		rc = usdt_sites(l, path, u, nu, part[k],
				endname ? TE_PK_USDT_BEGIN : TE_PK_USDT_POINT, &group, every);
	if (!rc && endname)
		rc = usdt_sites(l, path, u, nu, endname, TE_PK_USDT_END, &group, every);
	free(u);
	free(path);
	free(copy);
	return rc;
}

/*
 * -d [LIB#]LOCATION[#N] (Perun's dynamic probes): a probe of no duration on
 * one instruction, FUNC, FUNC+OFFSET or an ELF address 0xADDR, every Nth hit
 * recorded. It must begin an instruction (a uprobe inside one would break the
 * program): the function is decoded from its start to the offset.
 */
static int add_dynamic_spec(struct sonde_collection *c, struct te_loader *l, const char *binary,
			    const char *spec, uint32_t every)
{
	char *copy = strdup(spec), *part[4], *path = NULL, *func = NULL, *end, *plus;
	const char *lib = NULL, *loc;
	uint64_t vaddr = 0, start = 0, size = 0, off = 0;
	struct tr_usdt site = { "probe", "", 0, 0 };
	uint32_t idx;
	int n, k = 0, rc;

	if (!copy)
		return -ENOMEM;
	n = split_spec(copy, part, 4);
	if (n > 1 && looks_like_lib(binary, part[0])) {
		lib = part[0];
		k = 1;
	}
	if (n - k == 2 && all_digits(part[n - 1])) {
		every = (uint32_t)strtoul(part[n - 1], NULL, 10);
		n--;
	}
	if (n < 0 || n - k != 1 || !*part[k] || every == 0) {
		sonde_collection__fail(c,
				       "bad -d probe '%s' (expected [LIB#]LOCATION[#SAMPLING], "
				       "LOCATION a function, FUNC+OFFSET or 0xADDRESS)",
				       spec);
		free(copy);
		return -EINVAL;
	}
	loc = part[k];
	path = lib ? tr_find_lib_of(binary, lib) : strdup(binary);
	if (!path) {
		sonde_collection__fail(c, "-d probe '%s': cannot find library '%s'", spec, lib);
		free(copy);
		return -EINVAL;
	}
	rc = 0;
	if (!strncmp(loc, "0x", 2)) { /* an ELF address: the function around it */
		vaddr = strtoull(loc, &end, 16);
		if (*end || end == loc + 2)
			rc = -EINVAL;
		else if (tr_elf_function_of(path, NULL, vaddr, &start, &size, &func))
			rc = -ENOENT;
	} else {
		plus = strchr(loc, '+');
		func = plus ? strndup(loc, (size_t)(plus - loc)) : strdup(loc);
		if (plus) {
			off = strtoull(plus + 1, &end, 0);
			if (*end || !plus[1])
				rc = -EINVAL;
		}
		if (!rc && (!func || tr_elf_function_of(path, func, 0, &start, &size, NULL)))
			rc = -ENOENT;
		vaddr = start + off;
	}
	if (rc == -EINVAL)
		sonde_collection__fail(
			c, "-d probe '%s': '%s' is not FUNC, FUNC+OFFSET or 0xADDRESS", spec, loc);
	else if (rc)
		sonde_collection__fail(c, "-d probe '%s': %s has no function %s%s", spec, path,
				       strncmp(loc, "0x", 2) ? "named " : "holding ", loc);
	if (rc)
		rc = -EINVAL; /* a bad option value: exit 2 */
	if (!rc) {
		int b = tr_elf_insn_boundary(path, start, size, vaddr);

		if (b == 0) {
			sonde_collection__fail(c,
					       "-d probe '%s': %s+0x%llx is not the start of an "
					       "instruction of %s (a probe there would break the "
					       "program); objdump -d shows where they start",
					       spec, func, (unsigned long long)(vaddr - start),
					       path);
			rc = -EINVAL;
		} else if (b < 0 && vaddr != start) {
			sonde_collection__fail(
				c,
				"-d probe '%s': cannot tell whether %s+0x%llx starts an "
				"instruction here (%s); probe the function's entry",
				spec, func, (unsigned long long)(vaddr - start),
				b == -ENOTSUP ? "no instruction decoder for this file"
					      : strerror(-b));
			rc = -EINVAL;
		}
	}
	if (!rc) {
		snprintf(site.name, sizeof(site.name), "%s+0x%llx", func,
			 (unsigned long long)(vaddr - start));
		site.pc = vaddr;
		rc = te_loader__usdt(l, path, &site, TE_PK_USDT_POINT, UINT32_MAX, every, &idx);
	}
	free(func);
	free(path);
	free(copy);
	return rc;
}

/*
 * --with-usdt (Perun's): every USDT probe of the binary as a -u spec would
 * trace it, each pairing with its _end/_END/_exit when it has one; the ends
 * themselves are not probes of their own.
 */
static int add_all_usdt(struct sonde_collection *c, struct te_loader *l, const char *binary,
			uint32_t every)
{
	static const char *const ends[] = { "_end", "_END", "_exit", NULL };
	struct tr_usdt *u = NULL;
	size_t nu = 0, i, j, k;
	int rc = tr_elf_usdt(binary, &u, &nu);

	for (i = 0; !rc && i < nu; i++) {
		char full[160], end[160];
		bool is_end = false, seen = false;

		for (k = 0; ends[k] && !is_end; k++) { /* NAME_end of a NAME the file has */
			size_t ln = strlen(u[i].name), le = strlen(ends[k]);

			if (ln > le && !strcmp(u[i].name + ln - le, ends[k])) {
				snprintf(end, sizeof(end), "%.*s", (int)(ln - le), u[i].name);
				is_end = usdt_find(u, nu, end, 0) != NULL;
			}
		}
		for (j = 0; j < i && !seen; j++) /* one spec per probe, however many sites */
			seen = !strcmp(u[j].provider, u[i].provider) &&
			       !strcmp(u[j].name, u[i].name);
		if (is_end || seen)
			continue;
		snprintf(full, sizeof(full), "%s:%s", u[i].provider, u[i].name);
		rc = add_usdt_spec(c, l, binary, full, every);
	}
	free(u);
	return rc;
}

/* sonde_trace_size(n), wherever the program has it, sets sizes. */
static int add_size_probes(struct tr_state *st, const char *binary, char **libs)
{
	uint64_t addr;
	size_t i;
	int rc = find_function(st->a.sym, binary, "sonde_trace_size", &addr);

	if (rc > 0)
		rc = te_loader__size_probe(st->bpf, binary, addr);
	for (i = 0; rc >= 0 && libs && libs[i]; i++) {
		rc = find_function(st->a.sym, libs[i], "sonde_trace_size", &addr);
		if (rc > 0)
			rc = te_loader__size_probe(st->bpf, libs[i], addr);
	}
	return rc < 0 ? rc : 0;
}

/* --size-arg FUNC:N */
static int add_size_arg(struct sonde_collection *c, struct tr_state *st, const char *binary,
			const char *spec, uint32_t every)
{
	const char *colon = strrchr(spec, ':');
	char name[512];
	uint64_t addr;
	unsigned n;
	int rc;

	if (!colon || colon == spec || !all_digits(colon + 1) ||
	    (n = (unsigned)strtoul(colon + 1, NULL, 10)) < 1 || n > 6 ||
	    (size_t)(colon - spec) >= sizeof(name)) {
		sonde_collection__fail(c,
				       "--size-arg '%s': expected FUNC:N, N an integer argument "
				       "from 1 to 6",
				       spec);
		return -EINVAL;
	}
	snprintf(name, sizeof(name), "%.*s", (int)(colon - spec), spec);
	rc = find_function(st->a.sym, binary, name, &addr);
	if (rc == 0) {
		sonde_collection__fail(c, "--size-arg '%s': no function '%s' in %s", spec, name,
				       binary);
		return -EINVAL;
	}
	return rc < 0 ? rc : te_loader__func(st->bpf, binary, addr, every, false, n);
}

/* The probes: the strategy's functions, -F rules, -u probes, sizes; then attach. */
static int ebpf_before(struct sonde_collection *c, struct tr_state *st, const struct rules *rs,
		       const char *binary, bool libs_too, uint32_t every, bool chosen)
{
	json_t *libs = json_object_get(sonde_collection__params(c), "lib");
	json_t *usdt = json_object_get(sonde_collection__params(c), "usdt");
	json_t *dyn = json_object_get(sonde_collection__params(c), "dynamic");
	const char *size_arg = sonde_collection__param_str(c, "size-arg", NULL);
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	char **needed = tr_elf_needed(binary);
	struct probe_walk w = { .every = rs->h.default_every };
	uint32_t i;
	int rc;

	/* uretprobes and C++ exceptions: refuse now rather than abort the program later */
	if (w.every && tr_elf_references(binary, "__cxa_throw")) {
		sonde_collection__fail(c,
				       "'%s' can throw C++ exceptions, and one thrown through a "
				       "function with a return probe terminates the program (the "
				       "kernel's return trampoline has no unwind information): "
				       "trace it with -e instrument (a -finstrument-functions "
				       "build), or choose functions no exception passes through "
				       "with -s custom -F FUNC",
				       binary);
		tr_strv_free(needed);
		return -ENOTSUP;
	}
	if (chosen) /* the user did not ask for it: say why it is used */
		sonde_strbuf__addf(&err,
				   "'%s' is not built with -finstrument-functions, so it is "
				   "traced with uprobes, and ",
				   binary);
	rc = te_loader__new(&st->bpf, &st->a, &err);
	if (rc)
		goto out;
	sonde_strbuf__reset(&err);
	w.l = st->bpf;
	w.path = binary;
	if (w.every)
		rc = tr_elf_functions(binary, add_probe, &w);
	for (i = 0; !rc && w.every && libs_too && needed && needed[i]; i++) {
		if (runtime_library(needed[i]))
			continue;
		w.path = needed[i];
		rc = tr_elf_functions(needed[i], add_probe, &w);
	}
	for (i = 0; !rc && w.every && json_is_array(libs) && i < json_array_size(libs); i++) {
		char *path = tr_find_lib_of(binary, json_string_value(json_array_get(libs, i)));

		if (!path) {
			sonde_collection__fail(c, "-l: cannot find library '%s'",
					       json_string_value(json_array_get(libs, i)));
			rc = -EINVAL;
			break;
		}
		w.path = path;
		rc = tr_elf_functions(path, add_probe, &w);
		free(path);
	}
	for (i = 0; !rc && i < rs->h.nrules; i++)
		rc = te_loader__func(st->bpf, rs->paths[rs->r[i].module], rs->r[i].offset,
				     rs->r[i].every, true, 0);
	for (i = 0; !rc && json_is_array(usdt) && i < json_array_size(usdt); i++)
		rc = add_usdt_spec(c, st->bpf, binary, json_string_value(json_array_get(usdt, i)),
				   every);
	if (!rc && sonde_collection__param_bool(c, "with-usdt"))
		rc = add_all_usdt(c, st->bpf, binary, every);
	for (i = 0; !rc && json_is_array(dyn) && i < json_array_size(dyn); i++)
		rc = add_dynamic_spec(c, st->bpf, binary, json_string_value(json_array_get(dyn, i)),
				      every);
	if (!rc && size_arg)
		rc = add_size_arg(c, st, binary, size_arg, every);
	if (!rc)
		rc = add_size_probes(st, binary, needed);
	if (rc)
		goto out;
	if (!te_loader__nprobes(st->bpf)) {
		sonde_collection__fail(c, "nothing to trace in %s: no function%s to probe", binary,
				       json_is_array(usdt) || json_is_array(dyn) ? " or probe"
										 : "");
		rc = -EINVAL;
		goto out;
	}
	st->follow_every = w.every;
	te_loader__follow(st->bpf, follow_probes, &st->follow_every);
	rc = te_loader__attach(st->bpf, (uint32_t)sonde_collection__param_int(c, "depth", 0),
			       st->bpf_ring, &err);
	if (!rc && tr_elf_references(binary, "__cxa_throw"))
		sonde_collection__note(c,
				       "'%s' can throw C++ exceptions: one thrown through a probed "
				       "function terminates the program, as the kernel's return "
				       "trampoline has no unwind information",
				       binary);
	if (!rc && te_loader__failed(st->bpf))
		sonde_collection__note(c, "%zu of %zu probes could not be attached",
				       te_loader__failed(st->bpf), te_loader__nprobes(st->bpf));
out:
	if (rc && err.len)
		sonde_collection__fail(c, "%s", err.buf);
	sonde_strbuf__release(&err);
	tr_strv_free(needed);
	return rc;
}
#else
static int ebpf_before(struct sonde_collection *c, struct tr_state *st, const struct rules *rs,
		       const char *binary, bool libs_too, uint32_t every, bool chosen)
{
	(void)chosen;
	(void)st;
	(void)rs;
	(void)binary;
	(void)libs_too;
	(void)every;
	sonde_collection__fail(c, "this sonde was built without the ebpf engine (install "
				  "libbpf-dev, clang and bpftool, then rebuild)");
	return -ENOTSUP;
}
#endif

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
/*
 * Perun's options for what sonde's engines do not have: accepted, and a note
 * says why each does nothing (never silently).
 */
static void perun_noops(struct sonde_collection *c)
{
	static const struct {
		const char *name, *why;
	} noops[] = {
		{ "stap-cache-off", "sonde compiles no SystemTap script (its BPF programs are "
				    "built in)" },
		{ "watchdog", "sonde logs its steps with --debug=DOMAINS (-vv: all)" },
		{ "no-ds-update", "sonde keeps no dynamic statistics between runs" },
		{ "max-simultaneous-threads", "sonde's rings have no limit of threads (a thread "
					      "that ends gives its ring back)" },
	};
	json_t *params = sonde_collection__params(c);
	size_t i;

	for (i = 0; i < sizeof(noops) / sizeof(noops[0]); i++)
		if (json_object_get(params, noops[i].name) &&
		    !json_is_false(json_object_get(params, noops[i].name)))
			sonde_collection__note(c, "--%s does nothing here: %s", noops[i].name,
					       noops[i].why);
}

static int trace_before(struct sonde_collection *c)
{
	struct tr_state *st = calloc(1, sizeof(*st));
	struct rt_host_spec spec = {
		.collector = "trace",
		.runtime = "libsonde-trace.so",
		.ring_env = TR_ENV_RING,
		.rings = 64,
		/* 4 MiB: a ring's pages are touched once each on its first lap, and a
		   first touch is dear on some machines (~10 us a page on a VM with
		   shadow page tables); the drainer empties it at half full */
		.ring_bytes = 4u << 20,
		.spill_rings = RT_SPILL_RINGS,
		.spill_bytes = RT_SPILL_BYTES,
		.drop_oldest = sonde_collection__param_bool(c, "drop-oldest"),
		.counts_drops = true, /* the blocks' calls (tr_block.dropped) */
	};
	const char *engine = sonde_collection__param_str(c, "engine", NULL);
	const char *strategy = sonde_collection__param_str(c, "strategy", "userspace");
	json_t *min_time = json_object_get(sonde_collection__params(c), "min-time");

	perun_noops(c);
	const char *bin_opt = sonde_collection__param_str(c, "binary", NULL);
	json_t *funcs = json_object_get(sonde_collection__params(c), "func");
	json_t *libs = json_object_get(sonde_collection__params(c), "lib");
	json_t *usdt = json_object_get(sonde_collection__params(c), "usdt");
	long long global = sonde_collection__param_int(c, "global-sampling", 0);
	bool sampled = strcmp(strategy, "u_sampled") == 0 || strcmp(strategy, "a_sampled") == 0;
	bool all_libs = strcmp(strategy, "all") == 0 || strcmp(strategy, "a_sampled") == 0;
	struct rules rs = { 0 };
	unsigned flags = 0;
	uint32_t every;
	bool hooks, ebpf;
	char *binary, num[32];
	size_t i;
	int rc = 0;

	if (!st)
		return -ENOMEM;
	st->host.log_fd = -1;
	sonde_collection__set_priv(c, st);
	tr_analysis__init(&st->a);
	if (!st->a.sym || !st->a.func_index || !st->a.threads || !st->a.processes)
		return -ENOMEM;
	if (sonde_collection__param_bool(c, "verbose-trace")) {
		/* Perun's -vt: every enter and exit as a line, beside the profile */
		const char *to = sonde_collection__param_str(c, "keep-temps-to", NULL);
		int fd;

		snprintf(st->verbose_path, sizeof(st->verbose_path), "%s.txt",
			 to ? to : "trace.events");
		fd = open(st->verbose_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 || !(st->a.verbose = fdopen(fd, "w"))) {
			sonde_collection__fail(c, "--verbose-trace: cannot create '%s': %s",
					       st->verbose_path, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -EINVAL;
		}
	}
	rc = rt_host__ring_bytes(c, spec.ring_bytes, &spec.ring_bytes);
	if (rc)
		return rc;
	st->bpf_ring = sonde_collection__param_int(c, "ring-mib", 0) ? spec.ring_bytes : 32u << 20;
	st->a.max_rows = (uint64_t)sonde_collection__param_int(c, "max-rows", 10000);
	st->a.max_slices = (uint64_t)sonde_collection__param_int(c, "max-slices", 200000);
	if (min_time) {
		/* nanoseconds, or a duration as written (the C API may pass "20us") */
		double sec = json_number_value(min_time) * 1e-9;

		if (json_is_string(min_time) &&
		    sonde_format__parse_duration(json_string_value(min_time), 1e-9, &sec)) {
			sonde_collection__fail(c,
					       "--min-time '%s': expected a duration such as "
					       "500ns, 20us, 1.5ms or 2s",
					       json_string_value(min_time));
			return -EINVAL;
		}
		if (!json_is_string(min_time) && !json_is_number(min_time)) {
			sonde_collection__fail(c, "--min-time: expected a duration");
			return -EINVAL;
		}
		st->a.min_time_ns = (uint64_t)(sec * 1e9 + 0.5);
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
	st->exe = binary;
	if (!bin_opt && script(binary)) {
		sonde_collection__fail(c,
				       "'%s' is a script: name the program it runs that is to be "
				       "traced with -b FILE",
				       binary);
		return -ENOEXEC;
	}
	/* the compiler's hooks: -finstrument-functions, or -pg's mcount (-mfentry: __fentry__) */
	st->pg = !tr_elf_references(binary, "__cyg_profile_func_enter") &&
		 (tr_elf_references(binary, "mcount") || tr_elf_references(binary, "_mcount") ||
		  tr_elf_references(binary, "__fentry__"));
	hooks = st->pg || tr_elf_references(binary, "__cyg_profile_func_enter");
	ebpf = engine ? strcmp(engine, "ebpf") == 0 : !hooks;
	st->a.engine = ebpf ? "ebpf" : "instrument";
	if (!ebpf && !hooks) {
		sonde_collection__fail(c,
				       "'%s' calls neither __cyg_profile_func_enter nor mcount: "
				       "build it with -finstrument-functions or -pg for the "
				       "instrument engine",
				       binary);
		return -ENOTSUP;
	}
	if (!ebpf && all_libs && !sonde_collection__param_bool(c, "no-libcall"))
		flags |= TR_F_PLT; /* the program's library calls, at its PLT */
	if (!ebpf && (st->pg || (flags & TR_F_PLT)))
		flags |= TR_F_NO_CALIB;
	if (!ebpf && json_is_array(usdt) && json_array_size(usdt)) {
		sonde_collection__fail(c, "-u (USDT probes) needs the ebpf engine (-e ebpf)");
		return -ENOTSUP;
	}
	if (sonde_collection__param_bool(c, "with-usdt") &&
	    sonde_collection__param_bool(c, "no-usdt")) {
		sonde_collection__fail(c, "--with-usdt and --no-usdt: give one of them");
		return -EINVAL;
	}
	if (!ebpf && sonde_collection__param_bool(c, "with-usdt")) {
		sonde_collection__fail(c, "--with-usdt probes USDT markers with the ebpf engine "
					  "(-e ebpf)");
		return -ENOTSUP;
	}
	if (!ebpf && json_is_array(json_object_get(sonde_collection__params(c), "dynamic"))) {
		sonde_collection__fail(c, "-d (dynamic probes) needs the ebpf engine (-e ebpf)");
		return -ENOTSUP;
	}
	if (!ebpf && sonde_collection__param_str(c, "size-arg", NULL)) {
		sonde_collection__fail(
			c, "--size-arg reads registers with the ebpf engine (-e ebpf); "
			   "with -finstrument-functions call sonde_trace_size(n) instead");
		return -ENOTSUP;
	}

	/* the rules: strategy, -g, -f */
	if (all_libs)
		flags |= TR_F_LIBS;
	every = global ? (uint32_t)global : sampled ? 20 : 1;
	rs.h.default_every = strcmp(strategy, "custom") == 0 ? 0 : every;
	if (rules_module(&rs, binary) != 0) {
		rules_release(&rs);
		return -ENOMEM;
	}
	/* global sampling counts per function: every function of the binary gets a
	   rule (the runtime's counters live in them); -F rules, added later, win */
	if (!ebpf && rs.h.default_every > 1) {
		struct rule_match m = { .rs = &rs, .sym = st->a.sym, .every = rs.h.default_every };

		rc = tr_elf_functions(binary, add_every, &m);
	}
	/* -l LIB (instrument engine): a rule for each of LIB's functions */
	for (i = 0; !rc && !ebpf && !all_libs && i < json_array_size(libs); i++) {
		const char *lib = json_string_value(json_array_get(libs, i));
		char *path = tr_find_lib_of(binary, lib);
		struct rule_match m = { .rs = &rs, .sym = st->a.sym, .every = every };

		if (!path) {
			sonde_collection__fail(c, "-l: cannot find library '%s'", lib);
			rc = -EINVAL;
			break;
		}
		m.module = rules_module(&rs, path);
		rc = m.module == UINT32_MAX ? -ENOMEM : tr_elf_functions(path, add_every, &m);
		free(path);
	}
	for (i = 0; !rc && json_is_array(funcs) && i < json_array_size(funcs); i++)
		rc = add_func_rule(c, &rs, st->a.sym, binary,
				   json_string_value(json_array_get(funcs, i)), every);
	/* a library named by -l or -f: its functions and the program's are traced,
	   no other library's; the program's rules go first, so that -F rules win */
	if (!rc && !ebpf && !all_libs && rs.h.nmodules > 1) {
		uint32_t n0 = rs.h.nrules;

		flags |= TR_F_LIBS;
		if (rs.h.default_every == 1) {
			struct rule_match m = { .rs = &rs, .sym = st->a.sym, .every = 1 };

			rc = tr_elf_functions(binary, add_every, &m);
			if (!rc)
				rc = rules_to_front(&rs, n0);
		}
		rs.h.default_every = 0;
	}
	if (!rc && ebpf) {
		rc = ebpf_before(c, st, &rs, binary, all_libs, every, !engine);
		rules_release(&rs);
		return rc;
	}
	if (!rc && (rs.h.nrules || rs.h.default_every != 1)) {
		flags |= TR_F_RULES;
		rc = write_rules(st, &rs);
		if (rc)
			sonde_collection__fail(c, "cannot write the trace rules: %s",
					       strerror(-rc));
	}
	rules_release(&rs);
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

/* The follower's side (a thread of rt-host's): the run's log as it is drained. */
static int follow_feed(void *ctx, const void *log, size_t len)
{
	struct tr_state *st = ctx;

	rt_host__clock_once(&st->host, &st->a.clock, &st->a.clock_set, true);
	return tr_feed__log(st->feed, log, len);
}

static int follow_end(void *ctx, int rc, const struct sonde_run_info *ri)
{
	struct tr_state *st = ctx;
	uint64_t t = sonde_clock_ns();

	(void)ri;
	rc = tr_feed__end(st->feed, rc);
	st->feed = NULL;
	t = sonde_clock_ns() - t;
	st->a.t.analysis_ns += t;
	st->a.t.after_run_ns += t;
	return rc;
}

/* Whether the raw event log is kept (-k, -z, --no-profile; -vt alone keeps its text only). */
static bool keeps_log(struct sonde_collection *c)
{
	return sonde_collection__param_str(c, "keep-temps-to", NULL) &&
	       (sonde_collection__param_bool(c, "zip-temps") ||
		sonde_collection__param_bool(c, "keep-temps") ||
		sonde_collection__param_bool(c, "no-profile"));
}

/*
 * Calls are rebuilt while the target runs, by a follower of the log, so the
 * answer is ready shortly after the target exits. Not for warm-up runs (not
 * analysed) nor with --verbose-trace (its lines are written after the run).
 */
static int follow(struct sonde_collection *c, struct tr_state *st)
{
	/* the log, once fed, is read again only to be kept */
	struct rt_host_feed f = { follow_feed, follow_end, st, !keeps_log(c) };
	int rc;

	if (sonde_collection__warmup(c) || st->a.verbose)
		return 0;
	st->feed = tr_feed__new(&st->a, sonde_collection__t0_ns(c));
	if (!st->feed)
		return -ENOMEM;
	rc = rt_host__follow(&st->host, &f);
	if (rc) { /* analysed after the run, as without a follower */
		tr_feed__end(st->feed, 0);
		st->feed = NULL;
	}
	return 0;
}

static int trace_start(struct sonde_collection *c, pid_t pid)
{
	struct tr_state *st = sonde_collection__priv(c);

#if SONDE_HAVE_EBPF
	if (st->bpf)
		return te_loader__start(st->bpf, pid, st->exe, sonde_collection__t0_ns(c));
#endif
	(void)pid;
	return follow(c, st);
}

static int analyse(void *ctx, const void *log, size_t len, const struct sonde_run_info *ri)
{
	struct tr_state *st = ctx;

	rt_host__clock_once(&st->host, &st->a.clock, &st->a.clock_set, false);
	return tr_analysis__run(&st->a, log, len, ri->t0_ns);
}

static int trace_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	struct tr_state *st = sonde_collection__priv(c);

#if SONDE_HAVE_EBPF
	if (st->bpf)
		return te_loader__stop(st->bpf);
#endif
	int rc;

	/* a follower rebuilt the calls: nothing is left to analyse */
	rc = rt_host__stop(&st->host, c, ri, st->feed ? NULL : analyse, st);
	/* the calls of the blocks a full ring dropped (--drop-oldest), as the runtime
	   counted them */
	sonde_collection__dropped(c, st->a.t.dropped_calls - st->dropped_said);
	st->dropped_said = st->a.t.dropped_calls;
	return rc;
}

#if SONDE_HAVE_EBPF
/* The kernel side's counts: into the totals, with a note for each loss. */
static void ebpf_totals(struct sonde_collection *c, struct tr_state *st)
{
	uint64_t full = te_loader__stat(st->bpf, TE_ST_RINGBUF_FULL),
		 slot = te_loader__stat(st->bpf, TE_ST_NO_SLOT),
		 deep = te_loader__stat(st->bpf, TE_ST_TOO_DEEP);

	st->a.t.lost = full + slot + deep;
	st->a.t.sampled_out = te_loader__stat(st->bpf, TE_ST_SAMPLED_OUT);
	st->a.t.unmatched += te_loader__stat(st->bpf, TE_ST_UNMATCHED);
	st->a.t.probes = te_loader__nprobes(st->bpf);
	if (full)
		sonde_collection__note(c,
				       "%llu events found the BPF ring buffer full and were lost; "
				       "the calls around them are closed from the depth the next "
				       "event reports",
				       (unsigned long long)full);
	if (te_loader__unflushed(st->bpf))
		sonde_collection__note(c,
				       "processes still running when sonde stopped may have "
				       "held up to %d calls and returns each that were not "
				       "recorded: the kernel ran no task iterator",
				       TE_BATCH - 1);
	if (slot)
		sonde_collection__note(c,
				       "%llu calls found no room for their thread's stack in the "
				       "kernel (out of memory), and were not recorded",
				       (unsigned long long)slot);
	if (deep)
		sonde_collection__note(
			c,
			"%llu calls were more than %d probed calls deep (the "
			"kernel's limit of pending uretprobes) and were not recorded",
			(unsigned long long)deep, TE_MAX_DEPTH);
	if (st->a.t.lost)
		sonde_collection__dropped(c, st->a.t.lost);
	if (!st->a.t.calls && st->a.t.probes)
		sonde_collection__note(
			c,
			"none of the %llu functions probed was called; a stripped program offers "
			"only the functions it exports, unless its debug file is installed (a "
			"-dbgsym package) or beside it (.gnu_debuglink)",
			(unsigned long long)st->a.t.probes);
}
#endif

/*
 * Perun's -k / -z: the raw event log (and the rules file) kept beside the
 * profile, at the path collect passes as keep-temps-to; -z compresses them.
 */
static void keep_temps(struct sonde_collection *c, struct tr_state *st)
{
	const char *to = sonde_collection__param_str(c, "keep-temps-to", NULL);
	bool zip = sonde_collection__param_bool(c, "zip-temps");
	char path[PATH_MAX];
	int rc;

	if (!keeps_log(c))
		return;
	if (st->bpf) {
		sonde_collection__note(c, "--keep-temps: the ebpf engine keeps no raw event log "
					  "(it analyses the BPF ring buffer as it drains it)");
		return;
	}
	snprintf(path, sizeof(path), "%s%s", to, zip ? ".zst" : "");
	rc = rt_host__keep_log(&st->host, path);
	if (rc) {
		sonde_collection__note(c, "--keep-temps: cannot keep the event log in '%s': %s",
				       path, strerror(-rc));
		return;
	}
	sonde_collection__note(c,
			       "the raw event log is kept in '%s' (chunks of records, the "
			       "format of include/sonde/ring.h)",
			       path);
	if (st->rules_path[0]) {
		char *buf = NULL;
		size_t len = 0;

		snprintf(path, sizeof(path), "%s.rules%s", to, zip ? ".zst" : "");
		if (sonde_file__read(st->rules_path, &buf, &len) == 0 &&
		    sonde_file__write_data(path, buf, len, SONDE_FILE_NEW, NULL) == 0)
			sonde_collection__note(c, "the rules the runtime read are kept in '%s'",
					       path);
		free(buf);
	}
}

static int trace_after(struct sonde_collection *c, struct sonde_profile *p)
{
	struct tr_state *st = sonde_collection__priv(c);
	const struct tr_totals *t = &st->a.t;

#if SONDE_HAVE_EBPF
	if (st->bpf)
		ebpf_totals(c, st);
#endif
	st->a.t.drain_cpu_ns = rt_host__drain_cpu_ns(&st->host);
	st->a.t.analysis_ns += st->host.follow_ns;
	st->a.t.after_run_ns += st->host.after_ns;
	st->a.t.live_bytes = st->host.follow_live_bytes;
	keep_temps(c, st);
	/* the log is read: its release overlaps the profile's writing */
	rt_host__release_async(&st->host);
	if (st->a.verbose) {
		if (fflush(st->a.verbose))
			sonde_collection__note(
				c, "--verbose-trace: '%s' could not be written whole: %s",
				st->verbose_path, strerror(errno));
		else
			sonde_collection__note(
				c,
				"every call's enter and exit is in '%s' (ns since the "
				"start, pid, tid, depth, enter|exit, module+offset, and "
				"an exit's ns)",
				st->verbose_path);
	}
	if (t->malformed)
		sonde_collection__note(c,
				       "%llu chunks of the event log held records the target wrote "
				       "over: the rest of each was skipped (stats.trace."
				       "malformed_chunks)",
				       (unsigned long long)t->malformed);
	if (!st->bpf && !t->images)
		sonde_collection__note(c,
				       "nothing was recorded: the trace runtime never started in "
				       "the target (a setuid or setgid program ignores LD_PRELOAD, "
				       "a cleared environment drops it, and a process that first "
				       "made a call after its run ended records nothing)");
	if (t->lost && !st->bpf)
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
#if SONDE_HAVE_EBPF
	te_loader__free(st->bpf);
#endif
	free(st->exe);
	rt_host__release(&st->host); /* (stops a follower first) */
	if (st->feed)
		tr_feed__end(st->feed, 0);
	if (st->rules_path[0])
		close(st->rules_fd);
	if (st->a.verbose)
		fclose(st->a.verbose);
	tr_analysis__release(&st->a);
	free(st);
}

static const char *const trace_units[] = { "time", "ns", "structure-unit-size", "elements", NULL };
static const char *const engines[] = { "instrument", "ebpf", NULL };
static const char *const strategies[] = { "userspace", "all",	 "u_sampled",
					  "a_sampled", "custom", NULL };

static const struct sonde_option trace_options[] = {
	{ SONDE_OPT_CHOICE, 'e', "engine", NULL, "ENGINE",
	  "instrument (a -finstrument-functions or -pg build) or ebpf (uprobes, root); default: "
	  "instrument when the program calls the hooks, else ebpf",
	  0, 0, engines },
	{ SONDE_OPT_CHOICE, 's', "strategy", NULL, "STRATEGY",
	  "userspace (the program's functions; default), all (and its libraries'), u_sampled, "
	  "a_sampled (every 20th call, or -g), custom (only -F rules)",
	  0, 0, strategies },
	{ SONDE_OPT_LIST, 'F', "func", NULL, "[LIB#]FUNC[#N]",
	  "trace FUNC (in LIB), every Nth call (repeatable)" },
	{ SONDE_OPT_LIST, 'u', "usdt", NULL, "[LIB#]NAME[#END][#N]",
	  "trace USDT probe NAME to NAME_end/_END/_exit or END (ebpf engine; repeatable)" },
	{ SONDE_OPT_FLAG, 0, "only-extract-cg", NULL, NULL,
	  "print the binary's static call graph (its direct calls, caller -> callee) and run "
	  "nothing (Perun's -cg)" },
	{ SONDE_OPT_FLAG, 'k', "keep-temps", NULL, NULL,
	  "keep the raw event log (and the rules) beside the profile, PROFILE.events "
	  "(Perun's -k; instrument engine)" },
	{ SONDE_OPT_FLAG, 'z', "zip-temps", NULL, NULL,
	  "keep them compressed, PROFILE.events.zst (Perun's -z)" },
	{ SONDE_OPT_FLAG, 0, "verbose-trace", NULL, NULL,
	  "also write every call's enter and exit as a line of text, PROFILE.events.txt "
	  "(Perun's -vt)" },
	{ SONDE_OPT_FLAG, 0, "no-profile", NULL, NULL,
	  "keep the raw event log only, and write no profile (Perun's -np)" },
	{ SONDE_OPT_FLAG, 0, "stap-cache-off", NULL, NULL,
	  "Perun's (SystemTap): accepted, does nothing here (a note says why)" },
	{ SONDE_OPT_FLAG, 0, "watchdog", NULL, NULL,
	  "Perun's: accepted, does nothing here (sonde's --debug=DOMAINS logs its steps)" },
	{ SONDE_OPT_FLAG, 0, "no-ds-update", NULL, NULL,
	  "Perun's: accepted, does nothing here (a note says why)" },
	{ SONDE_OPT_INT, 0, "max-simultaneous-threads", NULL, "N",
	  "Perun's: accepted, does nothing here (sonde's rings have no thread limit)", 1, 1e9 },
	{ SONDE_OPT_FLAG, 0, "with-usdt", NULL, NULL,
	  "also trace every USDT probe of the binary, paired with its _end as -u does (ebpf "
	  "engine)" },
	{ SONDE_OPT_FLAG, 0, "no-usdt", NULL, NULL,
	  "trace no USDT probe but those of -u (the default)" },
	{ SONDE_OPT_LIST, 'd', "dynamic", NULL, "[LIB#]LOCATION[#N]",
	  "count hits of one instruction: FUNC, FUNC+OFFSET or 0xADDRESS (it must start an "
	  "instruction), every Nth hit (ebpf engine; repeatable)" },
	{ SONDE_OPT_INT, 'g', "global-sampling", NULL, "N",
	  "record every Nth call of each function (rules' own sampling wins)", 1, 1e9 },
	{ SONDE_OPT_INT, 0, "depth", NULL, "N", "record calls at most N deep", 1, 1e6 },
	TR_FILTER_OPTIONS,
	{ SONDE_OPT_STRING, 'b', "binary", NULL, "FILE",
	  "the traced executable, when the command is a script that runs it" },
	{ SONDE_OPT_LIST, 'l', "lib", NULL, "LIB", "also trace functions in LIB (repeatable)" },
	{ SONDE_OPT_FLAG, 0, "no-libcall", NULL, NULL,
	  "with -s all (instrument engine): leave out the program's calls into libraries, "
	  "recorded at its PLT otherwise" },
	{ SONDE_OPT_STRING, 0, "size-arg", NULL, "FUNC:N",
	  "a call's size is FUNC's Nth integer argument (ebpf engine)" },
	TR_LIMIT_OPTIONS,
	RT_HOST_RING_OPTION("4; ebpf: of the BPF ring buffer, 32"),
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
	.flags = SONDE_COLLECTOR_ONE_RUN | SONDE_COLLECTOR_NEEDS_BARRIER |
		 SONDE_COLLECTOR_FOLLOWS_CHILDREN,
	.before = trace_before,
	.start = trace_start,
	.stop = trace_stop,
	.after = trace_after,
	.cleanup = trace_cleanup,
};
