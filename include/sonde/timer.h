/*
 * timer.h - named region timers for C programs: the C counterpart of Python's
 * sonde.Timer, writing the same kind of profile.
 *
 *	struct sonde_timer *t = sonde_timer__new(2);	// 2 warm-up samples per region
 *	for (i = 0; i < 100; i++) {
 *		sonde_timer__begin(t, "step");
 *		sonde_timer__begin(t, "solve");		// regions nest
 *		solve();
 *		sonde_timer__end(t, "solve");
 *		sonde_timer__end(t, "step");
 *	}
 *	sonde_timer__stats(t, "solve", &s);		// ns: s.mean, s.median, ...
 *	sonde_timer__save(t, "run.json");		// sonde show / check / report
 *	sonde_timer__free(t);
 *
 * Times are sonde's clock (CLOCK_MONOTONIC) in nanoseconds. Each thread
 * records into a buffer of its own, found through a thread-local cache, so
 * that beginning and ending a region takes no shared lock: the clock, an
 * append. Any number of threads may record into one timer at once; a region
 * begun on one thread is ended on the same thread. Nesting is per thread: a
 * sample's depth is the number of regions open around it when it began.
 * Reading (stats, profile, save) may run while other threads record; it sees
 * the samples ended before it took each thread's buffer.
 *
 * Warm-up: the first `warmup` samples of each region (in order of their end)
 * are left out of its statistics and of the profile, which counts them.
 *
 * Nothing is dropped: a sample that cannot be stored (no memory) makes
 * __end return -ENOMEM, and the timer remembers it; the profile then says how
 * many were lost.
 */
#ifndef SONDE_TIMER_H
#define SONDE_TIMER_H

#include <stddef.h>
#include <stdint.h>
#include <sonde/stats.h>

struct sonde_timer;
struct sonde_profile;

/* A timer leaving out the first warmup samples of each region; NULL (errno) on failure. */
struct sonde_timer *sonde_timer__new(unsigned warmup);
/* Free the timer and every thread's samples; no thread may record into it any more. */
void sonde_timer__free(struct sonde_timer *t);

/* The id of the region named name (made on first use): the hot-loop spelling below. >= 0, or
 * -errno. */
long sonde_timer__region(struct sonde_timer *t, const char *name);

/* Begin the region on the calling thread (regions nest). 0, -EINVAL (empty name), -ENOMEM. */
int sonde_timer__begin(struct sonde_timer *t, const char *name);
/*
 * End the innermost open region of that name on the calling thread and keep
 * its sample. 0, -ENOENT (not begun on this thread), -ENOMEM.
 */
int sonde_timer__end(struct sonde_timer *t, const char *name);
/* The same by region id (sonde_timer__region): no name lookup. -EINVAL for an unknown id. */
int sonde_timer__enter(struct sonde_timer *t, long region);
int sonde_timer__leave(struct sonde_timer *t, long region);

/* Number of regions named so far; the name of region i (borrowed), NULL past the end. */
size_t sonde_timer__count(const struct sonde_timer *t);
const char *sonde_timer__name(const struct sonde_timer *t, size_t i);

/*
 * Statistics (ns) of a region's samples after its warm-up, over all threads.
 * 0, -ENOENT (no such region, or no sample after the warm-up), -ENOMEM.
 */
int sonde_timer__stats(struct sonde_timer *t, const char *name, struct sonde_summary *out);

/*
 * A profile of type "time": a resource per region (subtype "region"), with
 * each sample's duration ("amount", ns), start ("timestamp"), nesting depth
 * and thread; cmd names the program (NULL: this process's name). The same
 * shape as a Python sonde.Timer's profile. NULL (errno) on failure.
 */
struct sonde_profile *sonde_timer__profile(struct sonde_timer *t, const char *cmd);
/* Stamp (git commit, machine) and write that profile to path, atomically. 0 or -errno. */
int sonde_timer__save(struct sonde_timer *t, const char *path);

#endif
