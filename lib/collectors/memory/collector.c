/*
 * collector.c - the memory collector: every allocation with its call stack.
 *
 * before(): the shared runtime host (rt-host.h) refuses a statically linked
 *           target, preloads libsonde-memory.so and starts the rings; then the
 *           runtime's variables;
 * start():  a follower of the log runs the analysis's first pass while the
 *           target runs (not for warm-up runs);
 * stop():   drain what the run left, replay the run's part of the log;
 * after():  write sites, rows, snapshots and stats.memory.
 * One run unless --repeat says otherwise: this is a profile, not a timing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/collector.h>
#include "memory.h"

struct mem_state {
	struct mem_analysis a;
	struct rt_host host;
	struct mem_run *live; /* the coming run's analysis, fed while it runs */
};

static json_t *list_param(struct sonde_collection *c, const char *name)
{
	json_t *v = json_object_get(sonde_collection__params(c), name);

	return json_is_array(v) && json_array_size(v) ? json_incref(v) : NULL;
}

static int memory_before(struct sonde_collection *c)
{
	struct mem_state *st = calloc(1, sizeof(*st));
	struct rt_host_spec spec = {
		.collector = "memory",
		.runtime = "libsonde-memory.so",
		.ring_env = MEM_ENV_RING,
		.rings = 64,
		.ring_bytes = 4u << 20,
		.spill_rings = RT_SPILL_RINGS,
		.spill_bytes = RT_SPILL_BYTES,
		.drop_oldest = sonde_collection__param_bool(c, "drop-oldest"),
	};
	unsigned flags = 0;
	char num[32];
	int rc;

	if (!st)
		return -ENOMEM;
	st->host.log_fd = -1;
	sonde_collection__set_priv(c, st);
	rc = rt_host__ring_bytes(c, spec.ring_bytes, &spec.ring_bytes);
	if (rc)
		return rc;
	mem_analysis__init(&st->a);
	if (!st->a.sym || !st->a.site_index)
		return -ENOMEM;
	st->a.all = sonde_collection__param_bool(c, "all");
	st->a.sampling_s = sonde_collection__param_double(c, "sampling", 0);
	st->a.max_rows = (uint64_t)sonde_collection__param_int(c, "max-rows", 25000);
	st->a.no_source = list_param(c, "no-source");
	st->a.no_func = list_param(c, "no-func");
	rc = rt_host__start(&st->host, c, &spec);
	if (rc)
		return rc;
	if (sonde_collection__param_bool(c, "mmap"))
		flags |= MEM_F_MMAP;
	if (st->host.tsc)
		flags |= MEM_F_TSC;
	snprintf(num, sizeof(num), "%u", flags);
	rc = sonde_collection__setenv(c, MEM_ENV_FLAGS, num);
	snprintf(num, sizeof(num), "%lld", sonde_collection__param_int(c, "max-depth", 64));
	return rc ? rc : sonde_collection__setenv(c, MEM_ENV_DEPTH, num);
}

static int analyse(void *ctx, const void *log, size_t len, const struct sonde_run_info *ri)
{
	struct mem_state *st = ctx;
	struct mem_run *r = st->live;

	st->live = NULL;
	rt_host__clock_once(&st->host, &st->a.clock, &st->a.clock_set, false);
	if (ri->has_size && mem_analysis__size(&st->a, ri->index, ri->size)) {
		mem_run__free(r);
		return -ENOMEM;
	}
	if (!r)
		return mem_analysis__run(&st->a, log, len, ri->t0_ns, ri->index);
	return mem_run__finish(r, log, len, ri->index);
}

/* The follower's side (a thread of rt-host's): pass 1, while the target runs. */
static int live_feed(void *ctx, const void *log, size_t len)
{
	struct mem_state *st = ctx;

	rt_host__clock_once(&st->host, &st->a.clock, &st->a.clock_set, true);
	return mem_run__feed(st->live, log, len);
}

static int live_end(void *ctx, int rc, const struct sonde_run_info *ri)
{
	struct mem_state *st = ctx;

	(void)ri;
	if (rc) { /* analyse would read a log pass 1 has only seen part of */
		mem_run__free(st->live);
		st->live = NULL;
	}
	return rc;
}

/*
 * The analysis replays the run's events in time order across threads once it
 * has ended; while it runs, a follower of the log does the first pass (and
 * resolves the stacks' symbols, most of the rest of the time).
 */
static int memory_start(struct sonde_collection *c, pid_t pid)
{
	struct mem_state *st = sonde_collection__priv(c);
	struct rt_host_feed f = { live_feed, live_end, st };

	(void)pid;
	if (sonde_collection__warmup(c))
		return 0;
	st->live = mem_run__new(&st->a, sonde_collection__t0_ns(c), true);
	if (!st->live)
		return -ENOMEM;
	if (rt_host__follow(&st->host, &f)) { /* analysed after the run, all of it */
		mem_run__free(st->live);
		st->live = NULL;
	}
	return 0;
}

static int memory_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	struct mem_state *st = sonde_collection__priv(c);

	int rc = rt_host__stop(&st->host, c, ri, analyse, st);

	mem_run__free(st->live); /* a run that wrote nothing is not analysed */
	st->live = NULL;
	return rc;
}

static int memory_after(struct sonde_collection *c, struct sonde_profile *p)
{
	struct mem_state *st = sonde_collection__priv(c);

	st->a.t.drain_cpu_ns = rt_host__drain_cpu_ns(&st->host);
	st->a.t.after_run_ns += st->host.after_ns;
	st->a.t.live_bytes = st->host.follow_live_bytes;
	/* the log is read: its release overlaps the profile's writing */
	rt_host__release_async(&st->host);
	if (!st->a.t.processes)
		sonde_collection__note(c,
				       "nothing was recorded: the target made no allocation (a "
				       "program can live on static buffers), or the memory runtime "
				       "never started in it (a setuid or setgid program ignores "
				       "LD_PRELOAD, a cleared environment drops it, and a process "
				       "that first allocated after its run ended records nothing)");
	if (st->a.t.missed)
		sonde_collection__note(c,
				       "%llu allocation events happened inside sonde's own hook "
				       "(a signal handler that allocates) and were not recorded",
				       (unsigned long long)st->a.t.missed);
	if (st->a.t.deepbind)
		sonde_collection__note(
			c,
			"%llu dlopen calls asked for RTLD_DEEPBIND; the flag was dropped so "
			"that the library's allocations reach sonde's hooks (as heaptrack "
			"does)",
			(unsigned long long)st->a.t.deepbind);
	if (st->a.t.malformed)
		sonde_collection__note(
			c,
			"%llu records of the target's event log were malformed (written "
			"over by the target?) and were skipped",
			(unsigned long long)st->a.t.malformed);
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
	rt_host__release(&st->host); /* (stops a follower first) */
	mem_run__free(st->live);
	mem_analysis__release(&st->a);
	free(st);
}

static const char *const memory_units[] = { "memory", "B", "time", "ns", NULL };

static const struct sonde_option memory_options[] = {
	{ SONDE_OPT_DURATION, 0, "sampling", NULL, NULL,
	  "also record live bytes per site every DURATION (10ms, 1s; plain: seconds)", 1e-6, 1e6 },
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
	RT_HOST_RING_OPTION("4"),
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
	.flags = SONDE_COLLECTOR_ONE_RUN | SONDE_COLLECTOR_FOLLOWS_CHILDREN,
	.before = memory_before,
	.start = memory_start,
	.stop = memory_stop,
	.after = memory_after,
	.cleanup = memory_cleanup,
};
