/*
 * ticker.c - the periodic sampler thread (see ticker.h). Deadlines are absolute
 * on CLOCK_MONOTONIC, so a slow call delays the next tick but does not shift
 * the ones after it; a tick a whole period late or more skips the deadlines
 * it missed, and the next comes half a period to a period and a half later.
 *
 * The thread sleeps in one futex wait on the stop word, with the deadline as
 * an absolute timeout: one system call a tick. (A condition variable took
 * two: its mutex, re-taken after the wait, is always unlocked with a wake-up
 * call, and at 100 Hz that and the condition variable's bookkeeping were a
 * tenth of the system collector's own CPU time on a VM.)
 */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <sonde/clock.h>
#include <sonde/collector.h>
#include "ticker.h"

static void *ticker_main(void *arg)
{
	struct ticker *t = arg;
	uint64_t next = sonde_clock_ns() + t->period_ns;

	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
		uint64_t now, late;
		struct timespec ts = { (time_t)(next / 1000000000ull),
				       (long)(next % 1000000000ull) };

		/* FUTEX_WAIT_BITSET: an absolute timeout on CLOCK_MONOTONIC; returns at
		   once when the word is no longer 0 */
		if (syscall(SYS_futex, &t->stop, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0, &ts,
			    NULL, FUTEX_BITSET_MATCH_ANY) == 0 ||
		    errno != ETIMEDOUT)
			continue;
		now = sonde_clock_ns();
		late = now > next ? now - next : 0;
		t->late += late > t->period_ns / 10;
		if (late > t->late_max_ns)
			t->late_max_ns = late;
		/* a whole period late: the deadlines it missed are skipped (one
		   long window, not a burst of calls an instant apart), and the
		   next is the first at least half a period away (not a sliver) */
		if (late >= t->period_ns)
			next += (late + t->period_ns / 2 + t->period_ns - 1) / t->period_ns *
				t->period_ns;
		else
			next += t->period_ns;
		if (__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE))
			break;
		t->fn(t->ctx);
	}
	t->cpu_ns = sonde_clock_thread_cpu_ns();
	return NULL;
}

int ticker__start(struct ticker *t)
{
	if (!t->period_ns)
		return -EINVAL;
	t->stop = 0;
	t->cpu_ns = 0;
	t->late = t->late_max_ns = 0;
	t->running = pthread_create(&t->thread, NULL, ticker_main, t) == 0;
	return t->running ? 0 : -EAGAIN;
}

void ticker__stop(struct ticker *t)
{
	if (!t->running)
		return;
	__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &t->stop, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
	pthread_join(t->thread, NULL);
	t->running = false;
}

void ticker__add_late(struct ticker_late *acc, const struct ticker *t)
{
	acc->n += t->late;
	if (t->late_max_ns > acc->max_ns)
		acc->max_ns = t->late_max_ns;
}

void ticker__report_late(const struct ticker_late *l, uint64_t period_ns, const char *what,
			 json_t *obj, struct sonde_collection *c)
{
	json_object_set_new(obj, "samples_late", json_integer((json_int_t)l->n));
	json_object_set_new(obj, "sample_late_max_ms", json_real((double)l->max_ns / 1e6));
	if (l->max_ns > period_ns)
		sonde_collection__note(
			c,
			"%s: %llu sample(s) were taken over a tenth of their interval "
			"late, the latest by %.1f ms (the sampler was held up: it waited "
			"for a CPU, or sonde was stopped): a late sample's window is that "
			"much longer (the deadlines it missed are skipped), and the next "
			"one ends on time",
			what, (unsigned long long)l->n, (double)l->max_ns / 1e6);
}
