/*
 * calltree.h - the call-tree engine: rebuilds every thread's calls from event
 * blocks (the trace runtime's, the eBPF engine's, the Python runtime's) or
 * sampled stacks, and aggregates them per function, per calling context, and
 * (for a window at the start) as timed slices for timelines. The trace, python
 * and sample collectors and the binding's CpuCollector use it.
 */
#ifndef SONDE_CALLTREE_H
#define SONDE_CALLTREE_H

#include <regex.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include <sonde/profile.h>
#include <sonde/strbuf.h>
#include <sonde/symbols.h>
#include "../../u64map.h"
#include "../preload/rt-host.h"

struct tr_named;
#include "proto/trace.h"

struct tr_row {
	uint64_t amount, exclusive, ts, order, size;
	uint32_t tid;
	bool has_size;
};

/* One distinct size of a function's calls: how many, their sum, the fastest and
   the slowest, and one chosen uniformly at random (reservoir sampling). */
struct tr_size {
	uint64_t calls, sum;
	struct tr_row lo, hi, pick;
};

struct tr_func {
	char *module;
	uint64_t offset;
	char *name;    /* set when written */
	char *display; /* the name shown, where two named functions share one */
	bool named;    /* named by its engine (Python: a file and a line), not resolved */
	uint64_t calls, total, self, min, max, sum;
	struct tr_row *rows; /* every call, or a regular sample beyond max_rows */
	size_t nrows, caprows;
	uint64_t keep_every, seen;
	/* per distinct size (calls with a size): kept whatever the sample, so that
	   models see the whole range */
	uint64_t rng; /* xorshift64 state of the reservoir sampling, fixed seed */
	struct tr_size *sizes;
	size_t nsizes, capsizes;
	struct u64map size_index; /* size -> index + 1 */
	bool hidden;		  /* left out by --filter/--exclude */
	/* sampled: samples whose stack holds it (once each), the last one counted */
	uint64_t samples, sample_seq;
};

struct tr_node { /* calling-context tree; node 0 is the root */
	uint32_t parent, func;
	uint64_t calls, incl, excl;
};

struct tr_slice {
	uint32_t pid, tid, func, depth;
	uint64_t start, dur; /* ns since the collection started; dur UINT64_MAX: open */
};

/* A sample on the timeline: its thread, time, stack (a context) and weight. */
struct tr_sample {
	uint32_t pid, tid, ctx;
	uint64_t ts, weight;
};

struct tr_totals {
	uint64_t calls, sampled_out, lost, unwound, unfinished, unmatched, filtered;
	uint64_t dropped_calls; /* in blocks a full ring dropped (--drop-oldest) */
	uint64_t malformed;	/* chunks of the log whose rest the target wrote over: skipped */
	uint64_t blocks, log_bytes, images, threads;
	uint64_t ucontexts;	 /* swapcontext contexts, besides the threads' own stacks */
	double cost_ns_per_call; /* calibrated, median over images; 0: unknown */
	uint64_t drain_cpu_ns, analysis_ns;
	uint64_t after_run_ns; /* of analysis_ns, the part after the target's runs ended */
	uint64_t live_bytes;   /* of log_bytes, those analysed while the target ran */
	uint64_t slices_dropped;
	uint64_t probes; /* ebpf: probes attached */
	/* rows written, and of functions whose rows are a sample: their count and calls */
	uint64_t rows, sampled_funcs, sampled_calls;
	/* sampled: stacks, their summed weight, those with no frame kept, timeline overflow */
	uint64_t samples, sample_weight, samples_empty, samples_dropped;
};

struct tr_analysis {
	const char *engine;   /* "instrument" or "ebpf" */
	json_t *engine_stats; /* the engine's own, into stats.trace */
	/* options */
	uint64_t min_time_ns, max_rows, max_slices;
	regex_t filter, exclude;
	bool has_filter, has_exclude;
	struct rt_clock clock; /* set once, for every run: clock_set */
	bool clock_set;
	FILE *verbose; /* -vt: every call's enter and exit, one text line each; or NULL */
	/* built across runs */
	struct sonde_symbols *sym;
	/* the PLT stubs of the modules named so far (library calls are keyed by them) */
	struct tr_plt_names {
		char *path;
		struct tr_named *v;
		size_t n;
	} * plt;
	size_t nplt, capplt;
	json_t *func_index; /* "module\x01offset" -> index */
	struct tr_func *funcs;
	size_t nfuncs, capfuncs;
	struct tr_node *nodes;
	size_t nnodes, capnodes;
	struct u64map node_index; /* parent << 32 | func -> node */
	/* per node, the last two children looked up (child 0: none), so that a
	   call from a context already seen rarely needs node_index */
	struct tr_hint {
		uint32_t func[2], child[2];
	} * hints;
	size_t caphints;
	/* the slices in blocks of TR_SLICE_BLOCK (NULL: freed, every row written) */
	struct tr_slice **sblk;
	size_t nslices, nsblk, capsblk;
	/*
	 * The slices' rows as profile text, written by the feed as they end (a
	 * follower's thread, while the target runs): slices before stext_next are
	 * in it, each row after a comma, or were open when their turn came (holes:
	 * their rows go at `at` when the profile is written). A block whose rows
	 * are all written is freed, its holes' slices kept in the holes (x).
	 */
	struct sonde_strbuf stext;
	size_t stext_next, stext_rows;
	struct tr_hole {
		size_t slice, at;
		struct tr_slice x; /* the slice, once its block is freed */
	} * holes;
	size_t nholes, capholes;
	bool written;	   /* tr_analysis__write was called: it may be, once */
	json_t *threads;   /* [{pid, tid, name, serial}] */
	json_t *processes; /* [{pid, serial, parent_serial, exe}] */
	double *calib;
	size_t ncalib, capcalib;
	/* sampled stacks instead of calls: the contexts count samples, times are weights */
	bool sampled;
	json_t *sampling; /* how they were taken, into stats.trace.sampling */
	struct tr_sample *samples;
	size_t nsamples, capsamples;
	struct tr_totals t;
};

void tr_analysis__init(struct tr_analysis *a);
/*
 * The function at `offset` (its ELF address) in `module`; `name`, when not NULL,
 * names it (a USDT pair) instead of the symbol there. Returns its index in *out.
 */
int tr_analysis__func(struct tr_analysis *a, const char *module, uint64_t offset, const char *name,
		      uint32_t *out);
void tr_analysis__release(struct tr_analysis *a);
/* One run's part of the log; t0 is the collection's start (ns). */
int tr_analysis__run(struct tr_analysis *a, const void *log, size_t len, uint64_t t0);
/* Once: the timeline's text is handed to the profile (-EINVAL after). */
int tr_analysis__write(struct tr_analysis *a, struct sonde_profile *p);

/*
 * A feed: calls given one event at a time, each thread's in order (the
 * instrument engine's blocks go through it, and the ebpf engine's ring buffer
 * events). A thread is (serial: the process image, tid). Times are monotonic ns.
 */
struct tr_feed;
struct tr_thread;
struct tr_feed *tr_feed__new(struct tr_analysis *a, uint64_t t0);
struct tr_thread *tr_feed__thread(struct tr_feed *f, uint32_t serial, uint32_t pid, uint32_t tid);
int tr_feed__process(struct tr_feed *f, uint32_t serial, uint32_t pid, uint32_t parent_serial,
		     const char *exe, size_t exe_len);
int tr_feed__enter(struct tr_feed *f, struct tr_thread *t, uint32_t func, uint64_t ns);
/* The innermost open call returns (none open: counted as unmatched). */
int tr_feed__exit(struct tr_feed *f, struct tr_thread *t, uint64_t ns);
/* Calls that ended without their exit (longjmp, unwinding), until `depth` stay open. */
int tr_feed__unwind(struct tr_feed *f, struct tr_thread *t, uint32_t depth, uint64_t ns);
void tr_feed__size(struct tr_thread *t, uint64_t size); /* of the innermost open call */
/*
 * A sample of thread t at ns: its stack (funcs, outermost first) ran for
 * `weight` ns. Hidden functions (--filter/--exclude) are left out of the stack.
 */
int tr_feed__sample(struct tr_feed *f, struct tr_thread *t, uint64_t ns, uint64_t weight,
		    const uint32_t *funcs, size_t n);
void tr_feed__name(struct tr_thread *t, const char *name);
uint32_t tr_feed__depth(const struct tr_thread *t);
/* Whole chunks of the instrument engine's drained log, in order. */
int tr_feed__log(struct tr_feed *f, const void *log, size_t len);
/* Ends the calls still open (unfinished) and frees the feed; returns rc or an error. */
int tr_feed__end(struct tr_feed *f, int rc);

/* Options of every collector whose calls the analysis rebuilds (trace, python). */
#define TR_FILTER_OPTIONS                                                                          \
	{ SONDE_OPT_DURATION,                                                                      \
	  0,                                                                                       \
	  "min-time",                                                                              \
	  NULL,                                                                                    \
	  NULL,                                                                                    \
	  "leave out calls shorter than DURATION (500ns, 20us, 1ms; plain: ns); their time "       \
	  "stays the caller's",                                                                    \
	  0,                                                                                       \
	  1e15,                                                                                    \
	  .unit_s = 1e-9 },                                                                        \
		{ SONDE_OPT_STRING, 0,                                                             \
		  "filter",	    NULL,                                                          \
		  "REGEX",	    "keep only functions whose name matches" },                    \
	{                                                                                          \
		SONDE_OPT_STRING, 0, "exclude", NULL, "REGEX",                                     \
			"leave out functions whose name matches"                                   \
	}
#define TR_LIMIT_OPTIONS                                                                           \
	{ SONDE_OPT_INT,                                                                           \
	  0,                                                                                       \
	  "max-rows",                                                                              \
	  NULL,                                                                                    \
	  "N",                                                                                     \
	  "per-call rows kept per function (10000; 0: all); summaries count every call",           \
	  0,                                                                                       \
	  1e12 },                                                                                  \
		{ SONDE_OPT_INT,                                                                   \
		  0,                                                                               \
		  "max-slices",                                                                    \
		  NULL,                                                                            \
		  "N",                                                                             \
		  "calls kept for the timeline (export --format perfetto), the first N (200000)",  \
		  0,                                                                               \
		  1e9 },                                                                           \
	{                                                                                          \
		SONDE_OPT_FLAG, 0, "drop-oldest", NULL, NULL,                                      \
			"never slow the program down: drop the oldest events when a ring is full " \
			"(counted)"                                                                \
	}

#endif
