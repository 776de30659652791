/*
 * regionpair N [EVENTS]: the cost of one sonde_region_begin/end pair, counting
 * EVENTS (default task-clock,page-faults) through dispatch counting into a
 * buffer whose callback does nothing. Prints ns per pair (the loop with
 * regions minus the same loop without, over N pairs, median of 7 rounds),
 * then the floor: two read(2)s of a perf group of the same events.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sonde/clock.h>
#include <sonde/counters.h>

static void sink(struct sonde_counters_buffer *b, const struct sonde_counters_header *const *r,
		 size_t n, uint64_t d, void *u)
{
	(void)b, (void)r, (void)n, (void)d, (void)u;
}

static void choose(const struct sonde_dispatch_info *d, const struct sonde_counters_config **cfg,
		   void *user)
{
	(void)d;
	*cfg = user;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000, i;
	char *list = strdup(argc > 2 ? argv[2] : "task-clock,page-faults"), *tok, *save;
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_counters_context *ctx;
	struct sonde_counters_buffer *buf;
	struct sonde_counters_config *cfg;
	uint32_t ids[16];
	size_t k = 0;
	double r[7];
	volatile long sink_v = 0;
	int round;

	for (tok = strtok_r(list, ",", &save); tok && k < 16; tok = strtok_r(NULL, ",", &save))
		if (sonde_counters__find(tok, &ids[k++])) {
			fprintf(stderr, "no counter %s\n", tok);
			return 2;
		}
	if (sonde_counters_config__new(0, ids, k, SONDE_CONFIG_MULTIPLEX, &err, &cfg) ||
	    sonde_counters_context__new(&ctx) ||
	    sonde_counters_buffer__new(ctx, 1 << 20, 1 << 19, SONDE_BUFFER_LOSSLESS, sink, NULL,
				       &buf) ||
	    sonde_counters__configure_dispatch(ctx, buf, choose, cfg) ||
	    sonde_counters_context__start(ctx, &err)) {
		fprintf(stderr, "regionpair: %s\n", err.buf ? err.buf : "cannot start");
		return 1;
	}
	for (round = 0; round < 7; round++) {
		uint64_t t0 = sonde_clock_ns(), t1, t2;

		for (i = 0; i < n; i++) {
			sonde_region_begin("r");
			sink_v += i;
			sonde_region_end();
		}
		t1 = sonde_clock_ns();
		for (i = 0; i < n; i++)
			sink_v += i;
		t2 = sonde_clock_ns();
		r[round] = ((double)(t1 - t0) - (double)(t2 - t1)) / (double)n;
	}
	qsort(r, 7, sizeof(double), cmp);
	printf("%.0f\n", r[3]);
	{
		/* the floor: the reads alone, one group of task-clock */
		struct perf_event_attr a = { .type = PERF_TYPE_SOFTWARE,
					     .size = sizeof(a),
					     .config = PERF_COUNT_SW_TASK_CLOCK,
					     .read_format = PERF_FORMAT_GROUP |
							    PERF_FORMAT_TOTAL_TIME_ENABLED |
							    PERF_FORMAT_TOTAL_TIME_RUNNING };
		int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
		unsigned long long v[8];

		for (round = 0; fd >= 0 && round < 7; round++) {
			uint64_t t0 = sonde_clock_ns();

			for (i = 0; i < n; i++)
				if (read(fd, v, sizeof(v)) < 0 || read(fd, v, sizeof(v)) < 0)
					return 1;
			r[round] = (double)(sonde_clock_ns() - t0) / (double)n;
		}
		qsort(r, 7, sizeof(double), cmp);
		printf("%.0f\n", fd >= 0 ? r[3] : NAN);
	}
	sonde_counters_context__stop(ctx);
	sonde_counters_context__free(ctx);
	sonde_counters_config__free(cfg);
	free(list);
	return 0;
}
