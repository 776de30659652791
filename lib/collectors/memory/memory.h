/*
 * memory.h - the memory collector's insides: the state kept across runs and the
 * analysis of one run's drained log.
 */
#ifndef SONDE_COLLECTORS_MEMORY_H
#define SONDE_COLLECTORS_MEMORY_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include <sonde/profile.h>
#include <sonde/symbols.h>
#include "../../u64map.h"
#include "../../engines/preload/rt-host.h"
#include "proto/memory.h"

#define MEM_HIST_BUCKETS 24 /* sizes <= 2^0 ... 2^22, and larger */
#define MEM_TIMELINE	 64

/* An allocation site with one full stack: the unit of the profile's resources. */
struct mem_site {
	char *uid;	 /* "function:source:line" */
	json_t *uid_obj; /* {function, source, line} */
	json_t *trace;	 /* [{function, source, line, module}...], innermost first */
	bool excluded;	 /* --no-source / --no-func */
};

/* One resource: a site and an operation. */
struct mem_res {
	uint32_t site;
	uint8_t op;
	uint64_t count, bytes;
	uint64_t freed, leaked, leaked_bytes, temporary;
	uint64_t peak_bytes; /* live at the peak of its process image */
	/* rows kept (see max_rows): amount, address, timestamp, freed (or -1), thread, run */
	struct mem_row *rows;
	size_t nrows, caprows;
};

struct mem_row {
	uint64_t amount, address, ts;
	int64_t freed; /* ns since the collection began, -1: never freed */
	uint32_t tid, run;
};

struct mem_totals {
	uint64_t allocations, frees, bytes, peak, peak_ts, peak_pid;
	uint64_t leaked, leaked_bytes, temporary, unmatched_frees, missed;
	uint64_t deepbind;  /* dlopen calls whose RTLD_DEEPBIND the runtime dropped */
	uint64_t malformed; /* records from the target that were not well formed: skipped */
	uint64_t excluded, processes, threads, stacks, rows_total, rows_kept, log_bytes;
	uint64_t hist_count[MEM_HIST_BUCKETS], hist_bytes[MEM_HIST_BUCKETS];
	/* the first run's timeline: allocations, bytes and heap per slice */
	uint64_t tl_start_ns; /* the timeline's start, since the collection began */
	uint64_t tl_slice_ns, tl_alloc[MEM_TIMELINE], tl_bytes[MEM_TIMELINE], tl_heap[MEM_TIMELINE];
	uint64_t tl_peak[MEM_TIMELINE]; /* each slice's highest live bytes, + 1 (0: no event) */
	bool tl_done;
	uint64_t analysis_ns, drain_cpu_ns;
	uint64_t after_run_ns; /* of analysis_ns, the part after the target's runs ended */
	uint64_t live_bytes;   /* of log_bytes, those analysed (pass 1) while it ran */
};

struct mem_snapshot_row {
	uint32_t site;
	uint32_t snapshot;
	uint64_t ts, bytes;
};

struct mem_analysis {
	/* options */
	bool all;
	struct rt_clock clock; /* TSC ticks -> ns, set once, for every run: clock_set */
	bool clock_set;
	double sampling_s;
	uint64_t max_rows;	     /* 0: every row */
	json_t *no_source, *no_func; /* arrays of strings, or NULL */
	/* what is built across runs */
	struct sonde_symbols *sym;
	struct mem_site *sites;
	size_t nsites, capsites;
	json_t *site_index; /* trace key -> site index */
	struct mem_res *res;
	size_t nres, capres;
	struct u64map res_index; /* site << 8 | op -> res index */
	struct mem_snapshot_row *snaps;
	size_t nsnaps, capsnaps;
	struct mem_totals t;
	/* each run's workload size (collect --parameter), NaN where none */
	double *sizes;
	size_t nsizes, capsizes;
};

void mem_analysis__init(struct mem_analysis *a);
void mem_analysis__release(struct mem_analysis *a);
/* Analyse one run's log (t0: the collection's start, for timestamps). */
int mem_analysis__run(struct mem_analysis *a, const void *log, size_t len, uint64_t t0,
		      unsigned run);
/*
 * One run's analysis in steps, for a follower of the log (rt-host.h): pass 1
 * (images, stacks, each thread's events indexed; live: each stack's symbols
 * resolved as it comes, so that the analysis after the run finds the debug
 * information loaded) takes the run's log in parts, in order, while the target
 * runs; finish gets the whole log once it has ended (what pass 1 has not seen
 * yet is its), replays the heap and frees the run. free: without finishing.
 * mem_analysis__run is the three at once. A live run uses a->sym, which
 * nothing else may use meanwhile.
 */
struct mem_run;
struct mem_run *mem_run__new(struct mem_analysis *a, uint64_t t0, bool live);
int mem_run__feed(struct mem_run *r, const void *log, size_t len);
int mem_run__finish(struct mem_run *r, const void *log, size_t len, unsigned run);
void mem_run__free(struct mem_run *r);
/* A run's numeric workload: its rows get it as structure-unit-size. */
int mem_analysis__size(struct mem_analysis *a, unsigned run, double size);
/* Write resources and stats.memory into the profile. */
int mem_analysis__write(struct mem_analysis *a, struct sonde_profile *p);

extern const char *const mem_op_names[MEM_OP__COUNT];

#endif
