/*
 * collector.c - the memory collector: every allocation with its call stack.
 *
 * before(): refuse a statically linked target (nothing to interpose), find the
 *           runtime, create the ring area and start the drainer thread, set
 *           LD_PRELOAD and the runtime's variables;
 * stop():   drain what the run left, analyse the run's part of the log;
 * after():  write sites, rows, snapshots and stats.memory.
 * One run unless --repeat says otherwise: this is a profile, not a timing.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sonde/clock.h>
#include <sonde/collector.h>
#include <sonde/ring.h>
#include <sonde/runner.h>
#include <sonde/sysinfo.h>
#include "memory.h"

#define RUNTIME_NAME "libsonde-memory.so"
#define RINGS	     64
#define RING_BYTES   (4u << 20)

struct mem_state {
	struct mem_analysis a;
	struct sonde_ring_area *area;
	struct sonde_ring_drainer *drainer;
	int log_fd;
	off_t run_start;
	uint64_t dropped_seen;
	bool tsc;
};

/* An invariant TSC (constant rate, ticking in every state) can time events. */
static bool invariant_tsc(void)
{
#if defined(__x86_64__)
	return sonde_sysinfo__cpu_flag("constant_tsc") && sonde_sysinfo__cpu_flag("nonstop_tsc");
#else
	return false;
#endif
}

/* One reading of both clocks, as close together as they can be taken. */
static void clock_pair(uint64_t *tick, uint64_t *ns)
{
#if defined(__x86_64__)
	uint64_t a = __builtin_ia32_rdtsc(), b;

	*ns = sonde_clock_ns();
	b = __builtin_ia32_rdtsc();
	*tick = a + (b - a) / 2;
#else
	*tick = *ns = sonde_clock_ns();
#endif
}

/* 1: dynamically linked (or a script), 0: static, -errno: unreadable. */
static int dynamic_target(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd = open(path, O_RDONLY | O_CLOEXEC), i, rc = 0;

	if (fd < 0)
		return -errno;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG)) {
		close(fd);
		return 1; /* a script: its interpreter is what runs */
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64) {
		close(fd);
		return 1;
	}
	for (i = 0; i < eh.e_phnum && !rc; i++)
		if (pread(fd, &ph, sizeof(ph),
			  (off_t)(eh.e_phoff + (Elf64_Off)i * eh.e_phentsize)) ==
			    (ssize_t)sizeof(ph) &&
		    (ph.p_type == PT_INTERP || ph.p_type == PT_DYNAMIC))
			rc = 1;
	close(fd);
	return rc;
}

/* The runtime: $SONDE_RUNTIME_DIR, else beside libsonde (installed or build tree). */
static char *find_runtime(void)
{
	const char *env = getenv("SONDE_RUNTIME_DIR");
	static const char *const rel[] = { "sonde/" RUNTIME_NAME, "../runtime/memory/" RUNTIME_NAME,
					   NULL };
	char *path = NULL, *copy, *dir;
	Dl_info di;
	size_t i;

	if (env) {
		if (asprintf(&path, "%s/%s", env, RUNTIME_NAME) < 0)
			return NULL;
		if (access(path, R_OK) == 0)
			return path;
		free(path);
		return NULL;
	}
	if (!dladdr((void *)find_runtime, &di) || !di.dli_fname)
		return NULL;
	copy = realpath(di.dli_fname, NULL);
	if (!copy)
		return NULL;
	dir = dirname(copy);
	for (i = 0; rel[i]; i++) {
		if (asprintf(&path, "%s/%s", dir, rel[i]) < 0)
			break;
		if (access(path, R_OK) == 0) {
			char *real = realpath(path, NULL);

			free(path);
			free(copy);
			return real;
		}
		free(path);
		path = NULL;
	}
	free(copy);
	return NULL;
}

static json_t *list_param(struct sonde_collection *c, const char *name)
{
	json_t *v = json_object_get(sonde_collection__params(c), name);

	return json_is_array(v) && json_array_size(v) ? json_incref(v) : NULL;
}

static int memory_before(struct sonde_collection *c)
{
	struct mem_state *st = calloc(1, sizeof(*st));
	char *const *argv = sonde_collection__argv(c);
	char *exe = NULL, *runtime = NULL, tmpl[PATH_MAX], num[32];
	const char *tmp = getenv("TMPDIR");
	unsigned flags = 0;
	int rc;

	if (!st)
		return -ENOMEM;
	st->log_fd = -1;
	sonde_collection__set_priv(c, st);
	mem_analysis__init(&st->a);
	if (!st->a.sym || !st->a.site_index)
		return -ENOMEM;
	st->a.all = sonde_collection__param_bool(c, "all");
	st->a.sampling_s = sonde_collection__param_double(c, "sampling", 0);
	st->a.max_rows = (uint64_t)sonde_collection__param_int(c, "max-rows", 25000);
	st->a.no_source = list_param(c, "no-source");
	st->a.no_func = list_param(c, "no-func");
	if (sonde_collection__param_bool(c, "mmap"))
		flags |= MEM_F_MMAP;
	if (invariant_tsc()) {
		flags |= MEM_F_TSC;
		clock_pair(&st->a.tick0, &st->a.ns0);
		st->tsc = true;
	}

	exe = sonde_runner__resolve(argv[0]);
	if (exe) {
		rc = dynamic_target(exe);
		if (rc == 0) {
			sonde_collection__fail(c,
					       "'%s' is statically linked: the memory collector "
					       "interposes the allocator of a dynamically linked "
					       "program (rebuild it without -static)",
					       exe);
			free(exe);
			return -ENOTSUP;
		}
	}
	free(exe);
	runtime = find_runtime();
	if (!runtime) {
		sonde_collection__fail(c,
				       "cannot find the memory runtime %s (set "
				       "SONDE_RUNTIME_DIR to the directory that holds it)",
				       RUNTIME_NAME);
		return -ENOENT;
	}
	rc = sonde_collection__preload(c, runtime);
	free(runtime);
	if (rc)
		return rc;
	rc = sonde_ring_area__create(RINGS, RING_BYTES,
				     sonde_collection__param_bool(c, "drop-oldest")
					     ? SONDE_RING_DROP_OLDEST
					     : SONDE_RING_LOSSLESS,
				     &st->area);
	if (rc) {
		sonde_collection__fail(c, "cannot create the event rings: %s", strerror(-rc));
		return rc;
	}
	snprintf(tmpl, sizeof(tmpl), "%s/sonde-memory-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	st->log_fd = mkostemp(tmpl, O_CLOEXEC);
	if (st->log_fd < 0) {
		rc = -errno;
		sonde_collection__fail(c, "cannot create the event log in '%s': %s",
				       tmp && *tmp ? tmp : "/tmp", strerror(errno));
		return rc;
	}
	unlink(tmpl);
	rc = sonde_ring_drainer__start(st->area, st->log_fd, 1000, &st->drainer);
	if (rc)
		return rc;
	rc = sonde_collection__setenv(c, MEM_ENV_RING, sonde_ring_area__path(st->area));
	snprintf(num, sizeof(num), "%u", flags);
	rc = rc ? rc : sonde_collection__setenv(c, MEM_ENV_FLAGS, num);
	snprintf(num, sizeof(num), "%lld", sonde_collection__param_int(c, "max-depth", 64));
	rc = rc ? rc : sonde_collection__setenv(c, MEM_ENV_DEPTH, num);
	return rc;
}

static int memory_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	struct mem_state *st = sonde_collection__priv(c);
	long long n = sonde_ring_drainer__sync(st->drainer);
	off_t end, map_from;
	uint64_t dropped;
	void *map;
	int rc;

	if (n < 0) {
		sonde_collection__fail(c, "cannot write the event log: %s", strerror((int)-n));
		return (int)n;
	}
	/* every process of the run is gone: rings they held are free again */
	sonde_ring_area__reclaim(st->area, true);
	dropped = sonde_ring_area__dropped(st->area);
	sonde_collection__dropped(c, dropped - st->dropped_seen);
	st->dropped_seen = dropped;
	end = lseek(st->log_fd, 0, SEEK_END);
	if (end < 0)
		return -errno;
	if (ri->warmup || end == st->run_start) {
		st->run_start = end;
		return 0;
	}
	if (st->tsc) {
		uint64_t tick, ns;

		clock_pair(&tick, &ns);
		if (tick > st->a.tick0 && ns > st->a.ns0)
			st->a.ns_per_tick = (double)(ns - st->a.ns0) / (double)(tick - st->a.tick0);
	}
	map_from = st->run_start & ~(off_t)4095;
	map = mmap(NULL, (size_t)(end - map_from), PROT_READ, MAP_PRIVATE, st->log_fd, map_from);
	if (map == MAP_FAILED)
		return -errno;
	rc = mem_analysis__run(&st->a, (const char *)map + (st->run_start - map_from),
			       (size_t)(end - st->run_start), ri->t0_ns, ri->index);
	munmap(map, (size_t)(end - map_from));
	st->run_start = end;
	if (rc == -EINVAL)
		sonde_collection__fail(c, "run %u: the event log is corrupt", ri->index + 1);
	return rc;
}

static int memory_after(struct sonde_collection *c, struct sonde_profile *p)
{
	struct mem_state *st = sonde_collection__priv(c);

	st->a.t.drain_cpu_ns = sonde_ring_drainer__cpu_ns(st->drainer);
	if (st->a.t.missed)
		sonde_collection__note(c,
				       "%llu allocation events happened inside sonde's own hook "
				       "(a signal handler that allocates) and were not recorded",
				       (unsigned long long)st->a.t.missed);
	if (st->a.t.rows_kept < st->a.t.rows_total)
		sonde_collection__note(
			c,
			"%llu of %llu allocations have rows (every leak, and a regular "
			"sample of the rest; --max-rows 0 keeps all); the summaries count all",
			(unsigned long long)st->a.t.rows_kept,
			(unsigned long long)st->a.t.rows_total);
	return mem_analysis__write(&st->a, p);
}

static void memory_cleanup(struct sonde_collection *c)
{
	struct mem_state *st = sonde_collection__priv(c);

	if (!st)
		return;
	sonde_ring_drainer__stop(st->drainer);
	sonde_ring_area__destroy(st->area);
	if (st->log_fd >= 0)
		close(st->log_fd);
	mem_analysis__release(&st->a);
	free(st);
}

static const char *const memory_units[] = { "memory", "B", "time", "ns", NULL };

static const struct sonde_option memory_options[] = {
	{ SONDE_OPT_DOUBLE, 0, "sampling", NULL, "SECONDS",
	  "also record live bytes per site every SECONDS (snapshots)", 1e-6, 1e6 },
	{ SONDE_OPT_LIST, 0, "no-source", NULL, "FILE",
	  "leave out allocations made in FILE (repeatable)" },
	{ SONDE_OPT_LIST, 0, "no-func", NULL, "FUNC",
	  "leave out allocations made by function FUNC (repeatable)" },
	{ SONDE_OPT_FLAG, 0, "all", NULL, NULL,
	  "keep the allocator's own frames (malloc, operator new, ...) in stacks" },
	{ SONDE_OPT_INT, 0, "max-depth", NULL, "N", "record at most N frames per stack (64)", 1,
	  MEM_MAX_DEPTH },
	{ SONDE_OPT_FLAG, 0, "mmap", NULL, NULL, "also record mmap and munmap" },
	{ SONDE_OPT_FLAG, 0, "drop-oldest", NULL, NULL,
	  "never slow the target down: drop the oldest events when a ring is full "
	  "(counted)" },
	{ SONDE_OPT_INT, 0, "max-rows", NULL, "N",
	  "per-allocation rows to keep (25000; 0: all); summaries always count all", 0, 1e12 },
	{ .type = SONDE_OPT_END },
};

const struct sonde_collector sonde_collector_memory = {
	.abi = SONDE_COLLECTOR_ABI,
	.name = "memory",
	.summary = "every allocation and free with its call stack: sites, peak, leaks, "
		   "temporaries",
	.profile_type = "memory",
	.units = memory_units,
	.options = memory_options,
	.flags = SONDE_COLLECTOR_ONE_RUN,
	.before = memory_before,
	.stop = memory_stop,
	.after = memory_after,
	.cleanup = memory_cleanup,
};
