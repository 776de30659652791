/*
 * rt-host.h - sonde's side of a preloaded runtime (memory, trace): check the
 * target can be preloaded, find the runtime, create the rings and the drainer
 * that copies them to an unlinked log file, and hand each run's part of the log
 * to the collector's analysis. Times the runtimes take in TSC ticks are mapped
 * onto CLOCK_MONOTONIC from readings of both clocks at start and at each stop.
 */
#ifndef SONDE_RT_HOST_H
#define SONDE_RT_HOST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sonde/collector.h>
#include <sonde/ring.h>

struct rt_clock {
	/* ns = ns0 + (tick - tick0) * ns_per_tick; ns_per_tick 0: ticks are ns */
	uint64_t tick0, ns0;
	double ns_per_tick;
};

static inline uint64_t rt_clock__ns(const struct rt_clock *k, uint64_t tick)
{
	if (k->ns_per_tick == 0)
		return tick;
	return k->ns0 + (uint64_t)((double)(int64_t)(tick - k->tick0) * k->ns_per_tick);
}

struct rt_host {
	struct sonde_ring_area *area;
	struct sonde_ring_drainer *drainer;
	int log_fd;
	off_t run_start;
	uint64_t dropped_seen;
	bool tsc; /* the runtime is told to take TSC ticks */
	struct rt_clock clock;
	bool tamper_said;      /* the note on a tampered ring area was given */
	bool log_failed;       /* the event log could not be written (said once) */
	uint64_t drain_cpu_ns; /* of the drainers of earlier runs */
};

/*
 * Rings after the big ones: one per live thread up to 64 + 4032, 512 KiB each.
 * The area is sparse, so they cost memory only when used.
 */
#define RT_SPILL_RINGS 4032u
#define RT_SPILL_BYTES (512u << 10)

struct rt_host_spec {
	const char *collector; /* for messages: "memory" */
	const char *runtime;   /* file name: "libsonde-memory.so"; NULL: none to preload */
	const char *ring_env;  /* the variable that gives the runtime the ring path */
	unsigned rings;	       /* big rings, for the first threads */
	size_t ring_bytes;
	unsigned spill_rings; /* smaller ones for the threads after them */
	size_t spill_bytes;
	bool drop_oldest;
};

/*
 * --ring-mib: the bytes of each thread's ring (a power of two, 1 to 1024 MiB;
 * def when not given). -EINVAL, the collection failed with one line, when bad.
 */
int rt_host__ring_bytes(struct sonde_collection *c, size_t def, size_t *out);
/* The option, for the collectors' tables. */
#define RT_HOST_RING_OPTION(def_mib)                                                               \
	{                                                                                          \
		SONDE_OPT_INT, 0, "ring-mib", NULL, "N",                                           \
			"MiB of each thread's event ring (" def_mib                                \
			"; a power of two): larger rings wait "                                    \
			"or drop less",                                                            \
			1, 1024                                                                    \
	}

/* Everything before the first run; fails the collection with one line. */
int rt_host__start(struct rt_host *h, struct sonde_collection *c, const struct rt_host_spec *s);

/* The run's part of the log, mapped; times in ticks map through h->clock. */
typedef int (*rt_host_analyse_fn)(void *ctx, const void *log, size_t len,
				  const struct sonde_run_info *ri);
/*
 * After a run: drain, salvage what dead writers left open, count drops, and
 * (not for warm-up runs) call fn on the run's part of the log.
 */
int rt_host__stop(struct rt_host *h, struct sonde_collection *c, const struct sonde_run_info *ri,
		  rt_host_analyse_fn fn, void *ctx);
/* CPU time the drainer used. */
uint64_t rt_host__drain_cpu_ns(struct rt_host *h);
/*
 * Keep the drained event log of every run (the chunks of ring.h's log format)
 * at path, compressed when it ends in .zst or .gz; never replacing a file.
 * Returns 0 or -errno.
 */
int rt_host__keep_log(struct rt_host *h, const char *path);
void rt_host__release(struct rt_host *h);

#endif
