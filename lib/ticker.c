/*
 * ticker.c - the periodic sampler thread (see ticker.h). Deadlines are absolute
 * on CLOCK_MONOTONIC, so a slow call delays the next tick but does not shift
 * the ones after it.
 */
#include <errno.h>
#include <time.h>
#include <sonde/clock.h>
#include "ticker.h"

static void *ticker_main(void *arg)
{
	struct ticker *t = arg;
	uint64_t next = sonde_clock_ns() + t->period_ns;

	pthread_mutex_lock(&t->lock);
	while (!t->stop) {
		struct timespec ts = { (time_t)(next / 1000000000ull),
				       (long)(next % 1000000000ull) };

		if (pthread_cond_timedwait(&t->wake, &t->lock, &ts) != ETIMEDOUT)
			continue;
		next += t->period_ns;
		pthread_mutex_unlock(&t->lock);
		t->fn(t->ctx);
		pthread_mutex_lock(&t->lock);
	}
	t->cpu_ns = sonde_clock_thread_cpu_ns();
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int ticker__start(struct ticker *t)
{
	pthread_condattr_t ca;

	if (!t->period_ns)
		return -EINVAL;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&t->lock, NULL);
	t->stop = false;
	t->cpu_ns = 0;
	t->running = pthread_create(&t->thread, NULL, ticker_main, t) == 0;
	if (!t->running) {
		pthread_cond_destroy(&t->wake);
		pthread_mutex_destroy(&t->lock);
	}
	return t->running ? 0 : -EAGAIN;
}

void ticker__stop(struct ticker *t)
{
	if (!t->running)
		return;
	pthread_mutex_lock(&t->lock);
	t->stop = true;
	pthread_cond_signal(&t->wake);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->thread, NULL);
	pthread_cond_destroy(&t->wake);
	pthread_mutex_destroy(&t->lock);
	t->running = false;
}
