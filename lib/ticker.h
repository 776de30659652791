/*
 * ticker.h - a thread that calls a function every period, sleeping in between
 * (no polling), until stopped: the interval samplers of the counters, system
 * and power collectors.
 */
#ifndef SONDE_TICKER_H
#define SONDE_TICKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

struct ticker {
	void (*fn)(void *ctx);
	void *ctx;
	uint64_t period_ns;
	/* private */
	pthread_t thread;
	uint32_t stop; /* a futex word: 1 once stopped */
	bool running;
	uint64_t cpu_ns; /* the thread's own CPU time, known after ticker__stop() */
	/* calls made over a tenth of a period after their deadline (the thread
	   waited for a CPU), and the most one was late: read after ticker__stop() */
	uint64_t late;
	uint64_t late_max_ns;
};

/* How late a sampler's calls were, over all its runs (ticker__add_late). */
struct ticker_late {
	uint64_t n;	 /* calls over a tenth of a period late */
	uint64_t max_ns; /* the most one was */
};

struct sonde_collection;

/* Start calling t->fn(t->ctx) every t->period_ns (the first call one period from now). */
int ticker__start(struct ticker *t);
/* Stop and join; fn is not running when it returns. No-op when not running. */
void ticker__stop(struct ticker *t);
/* Add a stopped ticker's lateness to acc (the collectors add a recorded run's,
   not a warm-up's: its readings are dropped too). */
void ticker__add_late(struct ticker_late *acc, const struct ticker *t);
/*
 * Say how late the samples of `what` were: "samples_late" and
 * "sample_late_max_ms" in obj (the collector's stats), and a note when one
 * was over a whole period late (its window that much longer: the ticker
 * skips the deadlines it missed).
 */
void ticker__report_late(const struct ticker_late *l, uint64_t period_ns, const char *what,
			 json_t *obj, struct sonde_collection *c);

#endif
