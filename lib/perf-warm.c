/*
 * perf-warm.c - the kernel's perf hooks switched on while sonde starts (see
 * perf-warm.h).
 */
#include "perf-warm.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *warm(void *arg)
{
	/* user space only: allowed wherever the collectors' own opens are */
	struct perf_event_attr a = { .type = PERF_TYPE_SOFTWARE,
				     .size = sizeof(a),
				     .config = PERF_COUNT_SW_DUMMY,
				     .disabled = 1,
				     .exclude_kernel = 1,
				     .exclude_hv = 1 };
	long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);

	(void)arg;
	if (fd >= 0)
		close((int)fd);
	return NULL;
}

void sonde_perf_warm__start(struct sonde_perf_warm *w)
{
	w->started = !w->started && pthread_create(&w->thread, NULL, warm, NULL) == 0;
}

void sonde_perf_warm__join(struct sonde_perf_warm *w)
{
	if (w->started)
		pthread_join(w->thread, NULL);
	w->started = false;
}
