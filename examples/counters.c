/*
 * counters.c - the counter service's C API, end to end: find the agents,
 * look counters up, make a profile config, count two regions of this program
 * through dispatch counting, and print the records the buffer delivers.
 *
 * Build: part of the sonde build (build/examples/counters); run it as is.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/counters.h>

static void on_records(struct sonde_counters_buffer *b,
		       const struct sonde_counters_header *const *recs, size_t n, uint64_t dropped,
		       void *user)
{
	size_t i;

	(void)b;
	(void)user;
	for (i = 0; i < n; i++) {
		if (recs[i]->kind == SONDE_RECORD_DISPATCH) {
			const struct sonde_counters_dispatch *d = (const void *)recs[i];

			printf("dispatch %llu: region '%s' (thread %u), %.3f ms\n",
			       (unsigned long long)d->dispatch_id, d->name, d->tid,
			       (double)(d->end_ns - d->start_ns) / 1e6);
		} else if (recs[i]->kind == SONDE_RECORD_VALUE) {
			const struct sonde_counters_value *v = (const void *)recs[i];
			struct sonde_counter_info info;

			sonde_counters__info(0, sonde_instance__counter(v->instance_id), &info);
			if (v->flags & SONDE_VALUE_NOT_SUPPORTED)
				printf("  %-18s <not supported>\n", info.name);
			else if (isnan(v->value))
				printf("  %-18s <not counted>\n", info.name);
			else
				printf("  %-18s %.6g %s\n", info.name, v->value, info.unit);
		}
	}
	if (dropped)
		printf("(%llu records dropped)\n", (unsigned long long)dropped);
}

static void choose(const struct sonde_dispatch_info *d, const struct sonde_counters_config **cfg,
		   void *user)
{
	(void)d;
	*cfg = user; /* one config for every region */
}

static double work(size_t n)
{
	double *a = malloc(n * sizeof(*a)), s = 0;
	size_t i;

	for (i = 0; a && i < n; i++)
		a[i] = (double)i;
	for (i = 0; a && i < n; i++)
		s += a[i] * 0.5;
	free(a);
	return s;
}

int main(void)
{
	static const char *const wanted[] = { "task-clock", "page-faults", "instructions",
					      "FAULT_BYTES" };
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_counters_context *ctx;
	struct sonde_counters_buffer *buf;
	struct sonde_counters_config *cfg;
	const struct sonde_agent *agents;
	uint32_t ids[4];
	size_t na, i;

	/* 1. agents: one per online CPU */
	agents = sonde_counters__agents(&na);
	if (!agents)
		return 1;
	printf("%zu agents; agent 0 is %s (%s)\n", na, agents[0].name, agents[0].arch);
	/* 2. counters by name */
	for (i = 0; i < 4; i++)
		if (sonde_counters__find(wanted[i], &ids[i])) {
			fprintf(stderr, "no counter %s\n", wanted[i]);
			return 1;
		}
	/* 3. an immutable config for agent 0 (counters may take turns) */
	if (sonde_counters_config__new(0, ids, 4, SONDE_CONFIG_MULTIPLEX, &err, &cfg)) {
		fprintf(stderr, "config: %s\n", err.buf);
		return 1;
	}
	/* 4. a context and a buffer delivering every 4 KiB */
	if (sonde_counters_context__new(&ctx) ||
	    sonde_counters_buffer__new(ctx, 64 << 10, 4096, SONDE_BUFFER_LOSSLESS, on_records, NULL,
				       &buf) ||
	    /* 5. dispatch counting: regions of this program */
	    sonde_counters__configure_dispatch(ctx, buf, choose, cfg) ||
	    sonde_counters_context__start(ctx, &err)) {
		fprintf(stderr, "cannot start: %s\n", err.buf ? err.buf : "?");
		return 1;
	}
	/* 6. regions */
	sonde_region_begin("fill 8 MiB");
	printf("sum %.0f\n", work(1 << 20));
	sonde_region_end();
	sonde_region_begin("fill 1 MiB");
	printf("sum %.0f\n", work(1 << 17));
	sonde_region_end();
	sonde_counters_context__stop(ctx);
	sonde_counters_buffer__flush(buf);
	sonde_counters_context__free(ctx);
	sonde_counters_config__free(cfg);
	sonde_strbuf__release(&err);
	return 0;
}
