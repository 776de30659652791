/*
 * collector.h - the collector interface, the registry of built-ins, and plugins.
 *
 * A collector is a table: a name, the profile type it produces, its units and its
 * option table, and four hooks called by the session:
 *   before(c)        once, before any run: validate params, set the target's env;
 *   start(c, pid)    each run, once the target exists (with NEEDS_BARRIER it has
 *                    not exec'ed yet: attach perf events or eBPF filters here);
 *   stop(c, run)     each run, after the target was reaped;
 *   after(c, p)      once: write resources and stats into the profile.
 * Any hook may be NULL. A hook returns 0 or -errno; a failing hook stops the session.
 *
 * A plugin is a shared object exporting SONDE_COLLECTOR_ENTRY_NAME, a function
 * that takes the ABI version sonde speaks and returns its collector (or NULL).
 */
#ifndef SONDE_COLLECTOR_H
#define SONDE_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>
#include <sonde/option.h>
#include <sonde/profile.h>
#include <sonde/runner.h>
#include <sonde/strbuf.h>

/* 2 added exited() and reset(); a plugin of ABI 1 still loads, and is not told */
#define SONDE_COLLECTOR_ABI	   2
#define SONDE_COLLECTOR_ENTRY_NAME "sonde_collector_entry"

struct sonde_collection;

enum {
	SONDE_COLLECTOR_NEEDS_BARRIER = 1u << 0, /* start() must run before the exec */
	SONDE_COLLECTOR_WRAPS_TARGET = 1u << 1,	 /* runs as `wrapper CMD ARGS` (external) */
	SONDE_COLLECTOR_ONE_RUN = 1u << 2,	 /* without --repeat, measure one run */
	SONDE_COLLECTOR_OWN_RSS = 1u << 3,	 /* reads ru_maxrss: start through sonde-spawn */
	SONDE_COLLECTOR_ATTACHES = 1u << 4,	 /* can watch a running process (-p PID) */
	SONDE_COLLECTOR_PERF_TASK = 1u << 5,	 /* opens perf events bound to tasks */
	/* its rows mix the runs of every parameter value; their "order" is the
	   measured run's number (1-based): sonde adds each row's value */
	SONDE_COLLECTOR_ORDER_IS_RUN = 1u << 6,
	/* records the target's children too: what the target forked and did not
	   wait for gets a moment to finish before it is killed (runner linger_s) */
	SONDE_COLLECTOR_FOLLOWS_CHILDREN = 1u << 7,
	/* its numbers change when other work runs beside it (times, CPU shares,
	   machine-wide counts): `sonde run` runs its jobs alone */
	SONDE_COLLECTOR_EXCLUSIVE = 1u << 8,
	/* the target's output is discarded unless asked for (hyperfine's default
	   for timings: a terminal's speed is not the command's) */
	SONDE_COLLECTOR_QUIET_TARGET = 1u << 9,
};

/* What the session tells collectors about one finished run. */
struct sonde_run_info {
	unsigned index;	      /* 0-based among the measured runs of all workloads */
	bool warmup;	      /* a warm-up run: not to be recorded */
	const char *workload; /* parameter value, or NULL */
	double size;	      /* numeric parameter value (structure-unit-size) */
	bool has_size;
	bool interrupted; /* the run was ended by a forwarded SIGINT/SIGTERM */
	uint64_t t0_ns;	  /* monotonic start of the whole collection */
	const struct sonde_run *run;
};

struct sonde_collector {
	unsigned abi; /* SONDE_COLLECTOR_ABI */
	const char *name;
	const char *summary;
	const char *profile_type;
	const char *const *units; /* "kind", "unit" pairs, NULL-terminated */
	const struct sonde_option *options;
	unsigned flags;
	int (*before)(struct sonde_collection *c);
	int (*start)(struct sonde_collection *c, pid_t pid);
	int (*stop)(struct sonde_collection *c, const struct sonde_run_info *run);
	int (*after)(struct sonde_collection *c, struct sonde_profile *p);
	void (*cleanup)(struct sonde_collection *c); /* free private state; always called */
	/*
	 * ABI 2: the target exited and is not reaped yet, so that its /proc
	 * entries hold its final counts; stop() follows. May be NULL.
	 */
	int (*exited)(struct sonde_collection *c, pid_t pid);
	/*
	 * ABI 2: before every run after the first, clear what the last run left
	 * (before() is not called again). May be NULL.
	 */
	int (*reset)(struct sonde_collection *c);
};

typedef const struct sonde_collector *(*sonde_collector_entry_fn)(unsigned abi);

/* Built-in collectors, in one table. */
const struct sonde_collector *const *sonde_collector__builtins(size_t *n);
/* A built-in by name, or NULL with errno ENOENT. */
const struct sonde_collector *sonde_collector__find(const char *name);
/*
 * Load a plugin. NULL with errno set and a message in err: ENOENT/ENOEXEC (dlopen
 * failed), ENOSYS (no entry function), EPROTO (the plugin refused the ABI or its
 * table is incomplete).
 */
const struct sonde_collector *sonde_collector__load_plugin(const char *path,
							   struct sonde_strbuf *err);

/* --- for collectors, during a session ------------------------------------------------ */

json_t *sonde_collection__params(struct sonde_collection *c);
const struct sonde_collector *sonde_collection__collector(struct sonde_collection *c);
void *sonde_collection__priv(struct sonde_collection *c);
void sonde_collection__set_priv(struct sonde_collection *c, void *priv);
/* The target command as given (argv, NULL-terminated, borrowed). */
char *const *sonde_collection__argv(struct sonde_collection *c);
/* Whether start() attaches to a process that runs already (-p PID), not a new child. */
bool sonde_collection__attaching(struct sonde_collection *c);
/* The monotonic time (ns) the collection started: run_info.t0_ns, known from start() on. */
uint64_t sonde_collection__t0_ns(struct sonde_collection *c);
/* Whether the run being started (from start() to its stop()) is a warm-up run. */
bool sonde_collection__warmup(struct sonde_collection *c);
/* Set a variable in the target's environment (before() only). */
int sonde_collection__setenv(struct sonde_collection *c, const char *name, const char *value);
/* Add a library to the target's LD_PRELOAD (before() only). */
int sonde_collection__preload(struct sonde_collection *c, const char *path);
/* Send the target's stdout of every run to fd (WRAPS_TARGET collectors, before() only). */
int sonde_collection__set_stdout(struct sonde_collection *c, int fd);
/*
 * Run argv instead of the target's command (a copy is kept; before() only):
 * the collector's own launcher, given the command's words as it needs them.
 * One collector of a session may do this; {NAME} placeholders still apply.
 */
int sonde_collection__wrap_argv(struct sonde_collection *c, char *const *argv);
/* Count events the collector lost; shown in stats.dropped_events. */
void sonde_collection__dropped(struct sonde_collection *c, unsigned long long n);
/* Report a message for the user (goes to the log callback, and stats.notes). */
void sonde_collection__note(struct sonde_collection *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * Say why a hook is about to fail, in one line for the user (replaces the
 * generic "collector X failed: strerror" message).
 */
void sonde_collection__fail(struct sonde_collection *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Read an integer/real/string/bool param with a default. */
long long sonde_collection__param_int(struct sonde_collection *c, const char *name, long long def);
const char *sonde_collection__param_str(struct sonde_collection *c, const char *name,
					const char *def);
double sonde_collection__param_double(struct sonde_collection *c, const char *name, double def);
bool sonde_collection__param_bool(struct sonde_collection *c, const char *name);

#endif
