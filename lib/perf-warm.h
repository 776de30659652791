/*
 * perf-warm.h - the kernel's perf hooks switched on while sonde starts.
 * Internal to libsonde.
 *
 * The first perf event bound to a task, when none is open on the machine,
 * makes the kernel switch its scheduler hooks on and wait for a grace period
 * before perf_event_open returns: 8-36 ms in a VM, for sonde and perf alike.
 * The hooks stay on while an event is open and for a second after the last
 * closes. sonde_perf_warm__start() opens and closes a dummy event on a thread
 * of its own, so that the wait runs beside the session's start (the catalog,
 * git, the helper, the target made) instead of before it; the collectors'
 * own opens, on any thread, then wait only for what is left of it.
 */
#ifndef SONDE_PERF_WARM_H
#define SONDE_PERF_WARM_H

#include <pthread.h>
#include <stdbool.h>

struct sonde_perf_warm {
	pthread_t thread;
	bool started;
};

/* Start the thread (nothing where it cannot start: the first open then waits). */
void sonde_perf_warm__start(struct sonde_perf_warm *w);
/* Wait for the thread, if started (done in a few tens of ms at most). */
void sonde_perf_warm__join(struct sonde_perf_warm *w);

#endif
