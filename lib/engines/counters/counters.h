/*
 * counters.h - what the parts of the counter service share inside libsonde:
 * the catalog's entries, the definitions loader, derived-metric evaluation and
 * the perf_event plumbing.
 */
#ifndef SONDE_COUNTERS_INT_H
#define SONDE_COUNTERS_INT_H

#include <pthread.h>
#include <stdint.h>
#include <perfmon/pfmlib_perf_event.h> /* brings libpfm4's copy of perf_event.h */
#include <sonde/counters.h>
#include "expr.h"

#define CNT_MAX_INPUTS 64 /* base counters one config may open */

struct cnt_entry {
	uint32_t id;
	enum sonde_counter_kind kind;
	char *name, *desc;
	const char *unit;
	/* events: the perf_event_attr fields that name the event */
	uint32_t type;
	uint64_t config, config1, config2;
	char *block, *event; /* hardware; pfm: block = PMU, event = its event */
	bool pfm;	     /* encode through libpfm4 on first use */
	bool encoded;
	/* derived */
	char *expression, *arch;
	struct expr_node *ast;
	/* support, probed on first use */
	int probed; /* 0: not yet, 1: supported, -1: not */
	char *why;
};

/* The catalog: built on first use, then only tracepoints are added. */
struct cnt_entry *cnt_catalog__get(uint32_t id);
struct cnt_entry *cnt_catalog__find(const char *name);
/* Why the catalog is unusable (bad definitions), or NULL. */
const char *cnt_catalog__error(void);
/* Whether e can be counted here (probes it once). */
bool cnt_entry__supported(struct cnt_entry *e);
/* The perf_event_attr of an event (not derived). 0 or -errno. */
int cnt_entry__attr(struct cnt_entry *e, struct perf_event_attr *attr);
/* The architectures definitions are chosen for: the core PMU's name, "generic". */
const char *cnt_arch(void);
/* A machine constant (CPU_NUM, ...): 0 and *v, or -ENOENT. */
int cnt_constant(const char *name, double *v);
/* Whether name is an agent property counter_defs.yaml may name (simd_count, ...). */
bool cnt_agent_property(const char *name);

/* One definition of counter_defs.yaml, as the loader hands it over. */
struct cnt_def {
	const char *name, *description, *unit;
	const char *block, *event, *expression, *arch;
	int line, col, expr_line, expr_col; /* where, for messages */
};
/* A group of counters (the groups: key), as one architecture's entry has it. */
#define CNT_GROUP_MAX 64
struct cnt_group {
	const char *name, *description, *arch;
	const char *counters[CNT_GROUP_MAX];
	size_t n;
	int line;
};
/*
 * Parse a counter_defs document; fn is called per counter with the entry for
 * arch (or "generic"); counters with no entry for either are skipped. arch NULL:
 * fn is called for every entry of every counter, d->arch its key as written
 * ("a1/a2"). gfn (may be NULL) likewise per group. Errors go to err as
 * "name:line:col: message".
 */
int cnt_defs__parse(const char *yaml, size_t len, const char *file, const char *arch,
		    int (*fn)(void *ctx, const struct cnt_def *d, struct sonde_strbuf *err),
		    int (*gfn)(void *ctx, const struct cnt_group *g, struct sonde_strbuf *err),
		    void *ctx, struct sonde_strbuf *err);
/* Whether the '/'-separated architectures key names arch. */
bool cnt_defs__arch_listed(const char *keys, const char *arch);
/* The built-in definitions (data/counter_defs.yaml, embedded at build time). */
extern const char cnt_builtin_defs[];
extern const unsigned long cnt_builtin_defs_len;

/*
 * Collect the base (event) counters an entry needs into ids (deduplicated).
 * Returns 0 or -E2BIG.
 */
int cnt_inputs(struct cnt_entry *e, uint32_t *ids, size_t *n, size_t cap);

/*
 * Values of base counters for one reading, per dimension instance: the lookup
 * behind derived metrics. vals[i] holds ninst values of ids[i].
 */
struct cnt_reading {
	const uint32_t *ids;
	size_t nids, ninst;
	const double *vals; /* nids * ninst */
	const bool *valid;  /* per id: counted */
	double duration_ns;
};
/*
 * Evaluate a derived entry over a reading into out (ninst or 1 values).
 * Returns 0, -ENODATA (an input was not counted), or -errno with err set.
 */
int cnt_derive(struct cnt_entry *e, const struct cnt_reading *r, struct expr_env *env, double *out,
	       size_t cap, size_t *n, struct expr_error *err);

/* perf_event_open(2). */
int cnt_perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group, unsigned long fl);

#endif
