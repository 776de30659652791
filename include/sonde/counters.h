/*
 * counters.h - the counter collection service (docs/counters.md).
 *
 * The flow follows rocprofiler-sdk's counter service:
 *
 *   1. query the agents (one per online CPU; GPU backends add theirs later);
 *   2. iterate the counters an agent supports and query their info;
 *   3. create an immutable profile config per agent from a set of counters
 *      (validated on creation: they exist there, and they fit together or are
 *      explicitly multiplexed);
 *   4. create a context and a buffer (records reach a callback when the
 *      buffer's watermark is reached);
 *   5. configure dispatch counting (a callback picks the config of each
 *      dispatch: a marked region, or one run of a process) or agent counting
 *      (system-wide on the agent's CPU over the time the context runs);
 *   6. start, dispatch, stop; flush the buffer.
 *
 * Counters: perf software events, tracepoint counts ("sched:sched_switch"),
 * hardware events (perf's generic ones and libpfm4's for the PMU that is
 * present), and derived metrics from counter_defs.yaml. A derived metric is
 * delivered as if it were a counter; its inputs are counted in the same pass.
 *
 * A value carries an instance id: the counter id and the position of the value
 * in each dimension (cpu, core, package, numa node, instance). A dimension the
 * value spans (a total over all CPUs) has no position.
 *
 * Thread safety: the catalog and agents are built once and read-only; configs
 * are immutable; region begin/end may be called from any thread; a buffer
 * serialises its writers; start/stop/flush are for one controlling thread.
 */
#ifndef SONDE_COUNTERS_H
#define SONDE_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sonde/strbuf.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- regions: what a program marks; a no-op unless a dispatch service runs -------------- */

/* Begin a region named name (copied, up to 63 bytes) on the calling thread; may nest. */
void sonde_region_begin(const char *name);
/* End the innermost region of the calling thread. */
void sonde_region_end(void);

/* ---- agents --------------------------------------------------------------------------- */

enum sonde_agent_type { SONDE_AGENT_CPU = 1, SONDE_AGENT_GPU = 2 };

struct sonde_agent {
	uint32_t id; /* 0..n-1 */
	enum sonde_agent_type type;
	int cpu, core, package, numa; /* sysfs topology; -1 when unknown */
	const char *name;	      /* "cpu3" */
	const char *arch;	      /* the libpfm4 PMU name, or "generic" */
};

/* All agents, in id order (built once; borrowed). NULL with errno on failure. */
const struct sonde_agent *sonde_counters__agents(size_t *n);

/* ---- dimensions and instance ids ------------------------------------------------------ */

enum sonde_dimension {
	SONDE_DIM_CPU,
	SONDE_DIM_CORE,
	SONDE_DIM_PACKAGE,
	SONDE_DIM_NUMA,
	SONDE_DIM_INSTANCE,
	SONDE_DIM__COUNT,
};

/* "cpu", "core", "package", "numa", "instance". */
const char *sonde_dimension__name(enum sonde_dimension d);
/* How many positions a dimension has on this machine. */
size_t sonde_dimension__size(enum sonde_dimension d);

/* Positions of one value; SONDE_DIM_ALL: the value spans the dimension. */
#define SONDE_DIM_ALL (-1)
struct sonde_dim_pos {
	int pos[SONDE_DIM__COUNT];
};

/* Encode a counter id and positions; -ERANGE when one does not fit. */
int sonde_instance__encode(uint32_t counter, const struct sonde_dim_pos *dp, uint64_t *id);
uint32_t sonde_instance__counter(uint64_t instance_id);
/* The position in dimension d: 0, or -ENODATA when the value spans d. */
int sonde_instance__dimension(uint64_t instance_id, enum sonde_dimension d, size_t *pos);

/* ---- the catalog ---------------------------------------------------------------------- */

enum sonde_counter_kind {
	SONDE_COUNTER_SOFTWARE = 1,
	SONDE_COUNTER_TRACEPOINT,
	SONDE_COUNTER_HARDWARE,
	SONDE_COUNTER_DERIVED,
};

struct sonde_counter_info {
	uint32_t id;
	const char *name; /* as users write it: "task-clock", "sched:sched_switch", "IPC" */
	const char *description;
	const char *unit; /* "ns", "" (a count), "%" ... */
	enum sonde_counter_kind kind;
	const char *block, *event; /* hardware: libpfm4 PMU (or "perf") and event */
	const char *expression;	   /* derived: the expression for this agent's arch */
	const char *arch;	   /* the counter_defs.yaml architecture used, or NULL */
	bool supported;		   /* false: exists, but cannot be opened here */
	const char *why;	   /* !supported: the reason ("no hardware PMU") */
};

/*
 * Load counter definitions from path on top of the built-in ones (call before
 * anything else; later calls fail with -EALREADY). Errors name file:line:col
 * in err. $SONDE_COUNTER_DEFS is loaded the same way on first use.
 */
int sonde_counters__load_defs(const char *path, struct sonde_strbuf *err);
/*
 * Read the definitions of architecture arch (a key of counter_defs.yaml: gfx90a,
 * say) instead of this machine's: to show or evaluate another machine's
 * derived metrics. Before the catalog is first used: 0, -EBUSY after, -EINVAL
 * for a name that is not one architecture.
 */
int sonde_counters__use_arch(const char *arch);
/* Parse definitions from memory (the YAML loader, used by the fuzzer). */
int sonde_counters__check_defs(const char *yaml, size_t len, const char *name,
			       struct sonde_strbuf *err);

typedef int (*sonde_counters_iterate_fn)(uint32_t agent, const uint32_t *ids, size_t n, void *user);
/*
 * The counters an agent supports, in one callback. Tracepoints are included
 * only with with_tracepoints (there are thousands).
 */
int sonde_counters__iterate(uint32_t agent, bool with_tracepoints, sonde_counters_iterate_fn fn,
			    void *user);
/* Info for a counter id (as seen from agent; strings borrowed). */
int sonde_counters__info(uint32_t agent, uint32_t id, struct sonde_counter_info *out);
/* Find a counter by name ('-' and '_' match each other). 0, or -ENOENT. */
int sonde_counters__find(const char *name, uint32_t *id);
/*
 * A group of counters (counter_defs.yaml's groups:): events and derived
 * metrics counted together, as LIKWID's performance groups and perf stat -M.
 * The definitions are this machine's architecture's, else "generic".
 */
struct sonde_counter_group {
	const char *name, *description;
	const char *const *counters;
	size_t n;
};
/* The groups defined here (sorted by name; *out borrowed, stable). -errno: a bad definition. */
int sonde_counters__groups(const struct sonde_counter_group *const **out, size_t *n);
/* One group by name (case does not matter). 0, -ENOENT, or -EINVAL (a bad definition). */
int sonde_counters__group(const char *name, const struct sonde_counter_group **out);
/* A note about the catalog on this machine ("no hardware PMU: ..."), or NULL. */
const char *sonde_counters__note(void);
/*
 * Why no tracepoint can be counted (tracefs not mounted, and mounting it, as
 * root does, failed), with what to do; NULL when they can be. Known after a
 * tracepoint was looked up or listed.
 */
const char *sonde_counters__tracepoint_error(void);

/*
 * Evaluate an expression over given values: set(name) supplies a name's
 * values (one per dimension instance) or returns -ENOENT to fall back to the
 * catalog's derived metrics and constants. Results in out (at most cap).
 * Returns 0 or -errno with one line in err ("column 7: ..."); *div0_col
 * gets the column of the first division by zero (0: none).
 */
typedef int (*sonde_counters_values_fn)(void *user, const char *name, const double **v, size_t *n);
int sonde_counters__eval(const char *expression, sonde_counters_values_fn set, void *user,
			 double *out, size_t cap, size_t *n, int *div0_col,
			 struct sonde_strbuf *err);

/* ---- profile configs ------------------------------------------------------------------ */

enum {
	SONDE_CONFIG_MULTIPLEX = 1u << 0, /* counters may take turns (values scaled) */
	/* refused (-EINVAL): a process's counts on each CPU do not add up to its
	   count; agent counting gives values per CPU */
	SONDE_CONFIG_PER_CPU = 1u << 1,
};

struct sonde_counters_config;

/*
 * A config for agent with n counters. Validated: unknown ids fail (-ENOENT),
 * hardware counters that do not fit together fail without MULTIPLEX (-E2BIG),
 * a counter that cannot be opened here stays in the config and is reported
 * as not supported in every record. err gets one line on failure.
 */
int sonde_counters_config__new(uint32_t agent, const uint32_t *ids, size_t n, unsigned flags,
			       struct sonde_strbuf *err, struct sonde_counters_config **out);
void sonde_counters_config__free(struct sonde_counters_config *cfg);
uint32_t sonde_counters_config__id(const struct sonde_counters_config *cfg);
uint32_t sonde_counters_config__agent(const struct sonde_counters_config *cfg);
/* The counters asked for, in order. */
const uint32_t *sonde_counters_config__counters(const struct sonde_counters_config *cfg, size_t *n);

/* ---- records -------------------------------------------------------------------------- */

enum sonde_counters_record_kind {
	SONDE_RECORD_DISPATCH = 1, /* a dispatch header, followed by its values */
	SONDE_RECORD_AGENT = 2,	   /* an agent-counting sample header, followed by values */
	SONDE_RECORD_VALUE = 3,
};

enum {
	SONDE_VALUE_NOT_SUPPORTED = 1u << 0, /* the counter cannot be counted here */
	SONDE_VALUE_NOT_COUNTED = 1u << 1,   /* it never ran (time_running == 0) */
	SONDE_VALUE_SCALED = 1u << 2,	     /* multiplexed: scaled by enabled/running */
	SONDE_VALUE_DIV0 = 1u << 3,	     /* a derived value divided by zero: NaN */
};

struct sonde_counters_header {
	uint32_t kind;
	uint32_t size; /* bytes, header included */
};

struct sonde_counters_dispatch {
	struct sonde_counters_header h;
	uint64_t dispatch_id;	   /* per context, from 1 */
	uint64_t correlation_id;   /* the sample within a dispatch (intervals), from 0 */
	uint32_t config_id, agent; /* agent: the config's agent */
	uint32_t pid, tid;
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
	uint32_t nvalues;
	uint32_t depth; /* region nesting depth, 0 for a process */
	char name[64];	/* the region, or the process's command */
};

struct sonde_counters_value {
	struct sonde_counters_header h;
	uint64_t dispatch_id;
	uint64_t instance_id;
	double value; /* scaled when SCALED; NaN when NOT_SUPPORTED/NOT_COUNTED/DIV0 */
	uint64_t raw; /* the count as read (derived: 0) */
	uint64_t time_enabled, time_running;
	uint32_t flags;
	uint32_t pad;
};

/* ---- context and buffer --------------------------------------------------------------- */

struct sonde_counters_context;
struct sonde_counters_buffer;

enum sonde_buffer_policy {
	SONDE_BUFFER_LOSSLESS = 0, /* a full buffer is delivered at once, in the writer */
	SONDE_BUFFER_DISCARD = 1,  /* a full buffer drops new records (counted) */
};

/*
 * Called with the records gathered (headers in order: a dispatch or agent
 * header, then its values) when the watermark is reached, the buffer is full
 * (lossless), or on flush. dropped: records discarded so far.
 */
typedef void (*sonde_buffer_fn)(struct sonde_counters_buffer *b,
				const struct sonde_counters_header *const *records, size_t n,
				uint64_t dropped, void *user);

int sonde_counters_context__new(struct sonde_counters_context **out);
/* Stops and frees; the buffers are flushed first. */
void sonde_counters_context__free(struct sonde_counters_context *ctx);

int sonde_counters_buffer__new(struct sonde_counters_context *ctx, size_t bytes, size_t watermark,
			       enum sonde_buffer_policy policy, sonde_buffer_fn fn, void *user,
			       struct sonde_counters_buffer **out);
/* Deliver what the buffer holds now. */
int sonde_counters_buffer__flush(struct sonde_counters_buffer *b);
uint64_t sonde_counters_buffer__dropped(const struct sonde_counters_buffer *b);

/* What a dispatch callback learns. */
struct sonde_dispatch_info {
	uint64_t dispatch_id;
	const char *name; /* region name, or the command */
	pid_t pid, tid;
	unsigned depth;
	bool is_region;
};

/* Pick the config for a dispatch (*cfg = NULL: do not count it). */
typedef void (*sonde_dispatch_fn)(const struct sonde_dispatch_info *d,
				  const struct sonde_counters_config **cfg, void *user);
/* Pick the config of an agent, called at each start. */
typedef void (*sonde_agent_profile_fn)(struct sonde_counters_context *ctx, uint32_t agent,
				       const struct sonde_counters_config **cfg, void *user);

int sonde_counters__configure_dispatch(struct sonde_counters_context *ctx,
				       struct sonde_counters_buffer *b, sonde_dispatch_fn fn,
				       void *user);
int sonde_counters__configure_agent(struct sonde_counters_context *ctx,
				    struct sonde_counters_buffer *b, uint32_t agent,
				    sonde_agent_profile_fn fn, void *user);

/*
 * Start: agent counting opens its counters on the agent's CPU (-EACCES without
 * the privilege: perf_event_paranoid > 0 and no CAP_PERFMON; err says so);
 * dispatch counting makes regions count. Only one context runs at a time in a
 * process (-EBUSY).
 */
int sonde_counters_context__start(struct sonde_counters_context *ctx, struct sonde_strbuf *err);
/*
 * Agent counting: emit one sample of every agent now (time series); the counts
 * are deltas. Where one agent cannot be read, no agent's sample is emitted
 * (-errno): the next call's samples then cover both intervals.
 */
int sonde_counters_context__sample(struct sonde_counters_context *ctx);
/* Stop: agent counting emits its last sample; regions stop counting. */
int sonde_counters_context__stop(struct sonde_counters_context *ctx);

/*
 * A process as a dispatch: open the config's counters on pid (and on its
 * future threads and children) before it execs (counting starts at the
 * exec), sample it with __sample_process, and finish it once the process is
 * reaped. The dispatch callback picks the config.
 */
struct sonde_process_dispatch;
int sonde_counters__dispatch_process(struct sonde_counters_context *ctx, pid_t pid,
				     const char *name, bool enable_on_exec,
				     struct sonde_strbuf *err, struct sonde_process_dispatch **out);
/* Emit a record with the counts since the previous sample (-I); last: the end. */
int sonde_process_dispatch__sample(struct sonde_process_dispatch *d, bool last);
void sonde_process_dispatch__free(struct sonde_process_dispatch *d);

#ifdef __cplusplus
}
#endif

#endif
