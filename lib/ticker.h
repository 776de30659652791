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

/* Start calling t->fn(t->ctx) every t->period_ns (the first call one period from now). */
int ticker__start(struct ticker *t);
/* Stop and join; fn is not running when it returns. No-op when not running. */
void ticker__stop(struct ticker *t);

#endif
