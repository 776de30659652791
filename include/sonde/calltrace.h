/*
 * calltrace.h - a trace profile from calls that another engine saw: function
 * enters and exits per thread, each thread's in order, with sonde's monotonic
 * clock. The Python CPU collector hands its events over this way; the
 * profile is the one `sonde collect trace` writes (per function calls, total,
 * self, min, max and per-call rows; calling contexts; timed slices per thread),
 * so every trace view reads it: show report and graph, flame graphs, Perfetto.
 *
 * Ownership: __new gives a calltrace that __free releases; it borrows nothing.
 */
#ifndef SONDE_CALLTRACE_H
#define SONDE_CALLTRACE_H

#include <stdint.h>
#include <jansson.h>
#include <sonde/profile.h>

struct sonde_calltrace;

/*
 * A calltrace of process pid running exe; engine names what saw the calls
 * ("python"). t0: the collection's start (sonde_clock_ns). NULL with errno on
 * failure.
 */
struct sonde_calltrace *sonde_calltrace__new(const char *engine, const char *exe, uint32_t pid,
					     uint64_t t0);
void sonde_calltrace__free(struct sonde_calltrace *ct);

/*
 * The events that follow are process pid's, running exe (the next run of a
 * collection: one image each, as `collect trace` keeps processes apart).
 */
int sonde_calltrace__process(struct sonde_calltrace *ct, uint32_t pid, const char *exe);

/* Keep per-call rows of at most max_rows calls per function (10 000 by default). */
void sonde_calltrace__max_rows(struct sonde_calltrace *ct, uint64_t max_rows);

/*
 * Keep at most max_slices calls for the timeline (200 000 by default), and
 * leave out calls shorter than min_time_ns (their time stays the caller's).
 */
void sonde_calltrace__limits(struct sonde_calltrace *ct, uint64_t max_slices, uint64_t min_time_ns);
/*
 * Keep only functions whose name matches filter, leave out those matching
 * exclude (POSIX extended regexes; NULL: no rule). Before the first function;
 * -EINVAL for a bad regex, -EBUSY once functions were added.
 */
int sonde_calltrace__filter(struct sonde_calltrace *ct, const char *filter, const char *exclude);

/*
 * The function called name, defined in module (a file) at line; the same
 * triple gives the same id. Returns 0 or -ENOMEM.
 */
int sonde_calltrace__func(struct sonde_calltrace *ct, const char *module, uint64_t line,
			  const char *name, uint32_t *id);
/* A thread's name (shown on its timeline track). */
int sonde_calltrace__thread_name(struct sonde_calltrace *ct, uint32_t tid, const char *name);
/* Thread tid enters function id at ns. */
int sonde_calltrace__enter(struct sonde_calltrace *ct, uint32_t tid, uint32_t id, uint64_t ns);
/* Thread tid's innermost open call returns at ns (none open: counted as unmatched). */
int sonde_calltrace__exit(struct sonde_calltrace *ct, uint32_t tid, uint64_t ns);
/* The size (elements) of thread tid's innermost open call: regression input. */
int sonde_calltrace__size(struct sonde_calltrace *ct, uint32_t tid, uint64_t size);
/*
 * The calltrace holds sampled stacks instead of calls (before any event):
 * `how` says how they were taken ({hz, weight, ...}, into
 * stats.trace.sampling; stolen). The profile's contexts then count samples
 * (trace.count is "samples"), their times are the samples' summed weights,
 * and functions have {samples, total, self} with no per-call rows.
 * -EBUSY once calls were fed.
 */
int sonde_calltrace__sampling(struct sonde_calltrace *ct, json_t *how);
/*
 * A sample of thread tid at ns: the stack ids (outermost first, n may be 0)
 * ran for weight_ns (CPU or wall time since the thread's previous sample).
 */
int sonde_calltrace__sample(struct sonde_calltrace *ct, uint32_t tid, uint64_t ns,
			    uint64_t weight_ns, const uint32_t *ids, size_t n);
/* The engine's own figures (drops, events), kept under stats.trace.engine. Steals v. */
int sonde_calltrace__engine_stat(struct sonde_calltrace *ct, const char *key, json_t *v);

/*
 * Write the calls into p (resources, trace, stats.trace); calls still open
 * end at their thread's last event and are counted as unfinished. No more
 * events may follow. Returns 0 or -errno.
 */
int sonde_calltrace__write(struct sonde_calltrace *ct, struct sonde_profile *p);

#endif
