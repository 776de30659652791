/*
 * rt-host.h - sonde's side of a preloaded runtime (memory, trace): check the
 * target can be preloaded, find the runtime, create the rings and the drainer
 * that copies them to an unlinked log file, and hand each run's part of the log
 * to the collector's analysis. Times the runtimes take in TSC ticks are mapped
 * onto CLOCK_MONOTONIC from readings of both clocks at start and at each stop.
 */
#ifndef SONDE_RT_HOST_H
#define SONDE_RT_HOST_H

#include <pthread.h>
#include <stdatomic.h>
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
	/* through int64_t: one instruction, where a double to uint64_t takes branches */
	return k->ns0 + (uint64_t)(int64_t)((double)(int64_t)(tick - k->tick0) * k->ns_per_tick);
}

/*
 * An analysis that follows the log while the target runs: feed gets the run's
 * whole chunks in order, in a thread of rt-host's, as the drainer writes them;
 * end is called by rt_host__stop, in the caller's thread, once everything was
 * fed (rc 0) or feeding failed (rc: feed's error).
 */
struct rt_host_feed {
	int (*feed)(void *ctx, const void *log, size_t len);
	int (*end)(void *ctx, int rc, const struct sonde_run_info *ri);
	void *ctx;
	/* the fed bytes are not read again (no analysis after the run, no log
	   kept): their pages are given back as they are fed, the log keeping its
	   size with a hole where they were */
	bool consume;
};

struct rt_host_follower {
	struct rt_host_feed f;
	pthread_t thread;
	bool running;
	int log_fd;
	struct sonde_ring_drainer *drainer;
	off_t base;	       /* where the run's log starts */
	_Atomic uint64_t fed;  /* bytes after base fed */
	uint64_t given_back;   /* consume: bytes after base whose pages went back */
	_Atomic int64_t final; /* -1, or the run's last byte: feed up to there and stop */
	int rc;
	uint64_t busy_ns;	/* time spent feeding */
	uint64_t not_before_ns; /* feeds nothing before (unless the run ended) */
	char *buf;
	size_t capbuf;
};

struct rt_host {
	struct sonde_ring_area *area;
	struct sonde_ring_drainer *drainer;
	int log_fd;
	off_t run_start;
	uint64_t dropped_seen;
	bool counts_drops; /* the collector reports what dropped records held (rt_host_spec) */
	bool tsc;	   /* the runtime is told to take TSC ticks */
	struct rt_clock clock;
	bool tamper_said;      /* the note on a tampered ring area was given */
	bool log_failed;       /* the event log could not be written (said once) */
	uint64_t drain_cpu_ns; /* of the drainers of earlier runs */
	struct rt_host_follower follow;
	uint64_t follow_ns;	    /* feeding time of the runs followed */
	uint64_t after_ns;	    /* of those, time fed after the target's run ended */
	uint64_t follow_live_bytes; /* bytes fed before the runs ended */
	pthread_t releaser;	    /* rt_host__release_async's thread, while releasing */
	bool releasing;
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
	/* the runtime counts what the records a full ring drops held (the calls of a
	   block), and the collector reports those: the rings' count of records is not */
	bool counts_drops;
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
/*
 * Follow the coming run (call from start(), not for a warm-up run): its log is
 * fed to f while the target runs, and rt_host__stop ends it with f->end, then
 * (unless end failed) calls its fn, when not NULL, on the whole run's log as
 * it would without a follower. Returns 0 or -errno (then nothing follows).
 */
int rt_host__follow(struct rt_host *h, const struct rt_host_feed *f);
/*
 * The clock conversion with the rate measured from rt_host__start to now
 * (thread-safe: h->clock's origin is fixed at start). The follower feeds
 * nothing until 20 ms after that start (or the run's end), so a rate taken at
 * its first feed is good to about 1e-6. Returns 0 or -EAGAIN (no time passed).
 */
int rt_host__clock_now(const struct rt_host *h, struct rt_clock *out);
/*
 * The conversion every run of a collection uses, chosen once into *k (*set
 * says it was): at its first use, measured now (a follower's first feed) or,
 * with now false, as the last stop fitted it (an analysis after the run).
 */
void rt_host__clock_once(const struct rt_host *h, struct rt_clock *k, bool *set, bool now);
/* CPU time the drainer used. */
uint64_t rt_host__drain_cpu_ns(struct rt_host *h);
/*
 * Keep the drained event log of every run (the chunks of ring.h's log format)
 * at path, compressed when it ends in .zst or .gz; never replacing a file.
 * Returns 0 or -errno.
 */
int rt_host__keep_log(struct rt_host *h, const char *path);
/* Stop the drainer, unmap the rings and close the log (waits for an async release). */
void rt_host__release(struct rt_host *h);
/*
 * The same in a thread of its own, once nothing more is read from the log
 * (the collector's after()): unmapping the rings and dropping the log's page
 * cache, ~10 ms for a 24 MB log, then overlap the profile's writing.
 * rt_host__release waits for it; done at once where no thread can start.
 */
void rt_host__release_async(struct rt_host *h);

#endif
