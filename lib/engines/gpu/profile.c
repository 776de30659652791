/*
 * profile.c - a gpu profile from the runs' records: the rows per kernel,
 * stream, copy direction, synchronisation, device and CUDA function, the
 * timeline (the profile's "gpu" part) and stats.gpu. The gpu collector feeds
 * it each run; the tests feed it logs of known content.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/profile.h>
#include <sonde/symbols.h>
#include "gpu.h"

struct sonde_gpu_builder {
	json_t *records;	   /* Perun's list-of-records form, every run */
	struct sonde_symbols *sym; /* for demangling kernel names */
	struct sonde_gpu_totals tot;
	uint64_t t0; /* the collection's start: timeline times count from it */
	/* the timeline: names, streams, spans, calls */
	json_t *names, *name_ix, *streams, *stream_ix, *spans, *calls, *ranges, *memory;
	long long max_spans;
};

struct run_of {
	unsigned index;
	bool has_size;
	double size;
};

static json_t *row(const char *uid, const char *type, const char *subtype, double amount,
		   const struct run_of *ri)
{
	json_t *r = json_pack("{s:s, s:s, s:s, s:f, s:I}", "uid", uid, "type", type, "subtype",
			      subtype, "amount", amount, "order", (json_int_t)ri->index + 1);

	if (r && ri->has_size)
		json_object_set_new(r, "structure-unit-size", json_real(ri->size));
	return r;
}

static int add(struct sonde_gpu_builder *st, json_t *r)
{
	return r && !json_array_append_new(st->records, r) ? 0 : -ENOMEM;
}

/* The run's rows from its records. */
/* NVTX ranges: per name, how many and their time (marks: how many) */
static int range_rows(struct sonde_gpu_builder *st, const struct sonde_gpu_run *run,
		      const struct run_of *ri)
{
	struct sonde_gpu_range *r;
	size_t n, unpaired, i;
	json_t *by = json_object(), *row_;
	const char *key;
	int rc = sonde_gpu__ranges(run->markers, run->nmarkers, &r, &n, &unpaired);

	if (rc || !by) {
		json_decref(by);
		if (!rc)
			free(r);
		return -ENOMEM;
	}
	st->tot.unpaired_ranges += unpaired;
	for (i = 0; !rc && i < n; i++) {
		const char *name = sonde_gpu_run__name(run, r[i].name);
		double d = (double)(r[i].end - r[i].start);

		name = name ? name : "?";
		row_ = json_object_get(by, name);
		if (!row_) {
			row_ = row(name, "nvtx", "time", 0, ri);
			if (!row_ || json_object_set_new(by, name, row_)) {
				rc = -ENOMEM;
				break;
			}
			json_object_set_new(row_, "calls", json_integer(0));
			json_object_set_new(row_, "min", json_real(d));
			json_object_set_new(row_, "max", json_real(d));
		}
		json_object_set_new(
			row_, "amount",
			json_real(json_number_value(json_object_get(row_, "amount")) + d));
		json_object_set_new(
			row_, "calls",
			json_integer(json_integer_value(json_object_get(row_, "calls")) + 1));
		if (d < json_number_value(json_object_get(row_, "min")))
			json_object_set_new(row_, "min", json_real(d));
		if (d > json_number_value(json_object_get(row_, "max")))
			json_object_set_new(row_, "max", json_real(d));
	}
	json_object_foreach(by, key, row_)
	{
		if (!rc && json_array_append(st->records, row_))
			rc = -ENOMEM;
	}
	json_decref(by);
	free(r);
	return rc;
}

/* Device memory: per device, allocations, releases, bytes, peak and what stayed */
static int memory_rows(struct sonde_gpu_builder *st, const struct sonde_gpu_run *run,
		       const struct run_of *ri)
{
	struct sonde_gpu_memory_stats *d;
	size_t n, i;
	char uid[64];
	int rc = sonde_gpu__memory(run->mems, run->nmems, &d, &n, NULL, NULL);

	for (i = 0; !rc && i < n; i++) {
		json_t *r;

		snprintf(uid, sizeof(uid), "gpu%u memory", d[i].device);
		r = row(uid, "memory", "peak", (double)d[i].peak, ri);
		if (r) {
			json_object_set_new(r, "allocations",
					    json_integer((json_int_t)d[i].allocations));
			json_object_set_new(r, "releases", json_integer((json_int_t)d[i].releases));
			json_object_set_new(r, "allocated",
					    json_integer((json_int_t)d[i].bytes_allocated));
			json_object_set_new(r, "live_at_end",
					    json_integer((json_int_t)d[i].live_end));
		}
		rc = add(st, r);
	}
	free(d);
	return rc;
}

static int rows(struct sonde_gpu_builder *st, const struct sonde_gpu_run *run,
		const struct run_of *ri)
{
	struct sonde_gpu_analysis a;
	char uid[128];
	size_t i;
	int rc = sonde_gpu__analyse(run->acts, run->nacts, &a);

	if (rc)
		return rc;
	for (i = 0; !rc && i < a.nkernels; i++) {
		const struct sonde_gpu_kernel_stats *k = &a.kernels[i];
		const char *name = sonde_gpu_run__name(run, k->name);
		json_t *r = row(sonde_symbols__demangle(st->sym, name ? name : "?"), "kernel",
				"time", k->total_ns, ri);

		if (r) {
			json_object_set_new(r, "calls", json_integer((json_int_t)k->count));
			json_object_set_new(r, "mean", json_real(k->total_ns / (double)k->count));
			json_object_set_new(r, "min", json_real(k->min_ns));
			json_object_set_new(r, "max", json_real(k->max_ns));
		}
		rc = add(st, r);
	}
	for (i = 0; !rc && i < a.nstreams; i++) {
		const struct sonde_gpu_stream_stats *s = &a.streams[i];
		json_t *r;

		snprintf(uid, sizeof(uid), "gpu%u:stream%u", s->device, s->stream);
		r = row(uid, "stream", "busy", s->busy_ns, ri);
		if (r) {
			json_object_set_new(r, "overlapped", json_real(s->overlapped_ns));
			json_object_set_new(r, "kernels", json_integer((json_int_t)s->kernels));
			json_object_set_new(r, "copies", json_integer((json_int_t)s->copies));
			json_object_set_new(r, "memsets", json_integer((json_int_t)s->memsets));
			json_object_set_new(r, "context", json_integer(s->context));
		}
		rc = add(st, r);
	}
	for (i = 0; !rc && i < a.ncopies; i++) {
		const struct sonde_gpu_copy_stats *m = &a.copies[i];
		json_t *r;

		snprintf(uid, sizeof(uid), "memcpy %s", sonde_gpu__copy_name(m->kind));
		r = row(uid, "memcpy", "time", m->total_ns, ri);
		if (r) {
			json_object_set_new(r, "calls", json_integer((json_int_t)m->count));
			json_object_set_new(r, "bytes", json_integer((json_int_t)m->bytes));
			if (m->total_ns > 0)
				json_object_set_new(
					r, "bandwidth",
					json_real((double)m->bytes / m->total_ns * 1e9));
		}
		rc = add(st, r);
	}
	if (!rc && a.syncs) {
		json_t *r = row("synchronize", "sync", "time", a.sync_ns, ri);

		if (r)
			json_object_set_new(r, "calls", json_integer((json_int_t)a.syncs));
		rc = add(st, r);
	}
	if (!rc && a.nstreams) {
		json_t *r = row("gpu", "device", "busy", a.busy_ns, ri);

		if (r)
			json_object_set_new(r, "concurrent", json_real(a.concurrent_ns));
		rc = add(st, r);
	}
	sonde_gpu_analysis__free(&a);
	if (!rc)
		rc = range_rows(st, run, ri);
	if (!rc)
		rc = memory_rows(st, run, ri);
	/* API calls: per function, calls and host time */
	if (!rc && run->napis) {
		json_t *by = json_object();
		const char *key;
		json_t *r;

		for (i = 0; by && i < run->napis; i++) {
			const struct gpu_api *x = &run->apis[i];
			const char *name =
				sonde_gpu_run__name(run, SONDE_GPU_API_NAME(x->driver, x->cbid));
			double d = x->end > x->start ? (double)(x->end - x->start) : 0;

			r = json_object_get(by, name ? name : "?");
			if (!r) {
				r = row(name ? name : "?", "api", x->driver ? "driver" : "runtime",
					0, ri);
				if (!r || json_object_set_new(by, name ? name : "?", r))
					break;
				json_object_set_new(r, "calls", json_integer(0));
			}
			json_object_set_new(
				r, "amount",
				json_real(json_number_value(json_object_get(r, "amount")) + d));
			json_object_set_new(
				r, "calls",
				json_integer(json_integer_value(json_object_get(r, "calls")) + 1));
		}
		if (!by || i < run->napis)
			rc = -ENOMEM;
		json_object_foreach(by, key, r)
		{
			if (!rc)
				rc = json_array_append(st->records, r) ? -ENOMEM : 0;
		}
		json_decref(by);
	}
	return rc;
}

/* The index of a name in the timeline's list, added the first time. -1: no memory. */
static json_int_t intern(struct sonde_gpu_builder *st, const char *name)
{
	json_t *ix = json_object_get(st->name_ix, name);
	json_int_t i = (json_int_t)json_array_size(st->names);

	if (ix)
		return json_integer_value(ix);
	if (json_array_append_new(st->names, json_string(name)) ||
	    json_object_set_new(st->name_ix, name, json_integer(i)))
		return -1;
	return i;
}

static json_int_t stream_index(struct sonde_gpu_builder *st, const struct gpu_act *a)
{
	char key[48];
	json_t *ix;
	json_int_t i = (json_int_t)json_array_size(st->streams);

	snprintf(key, sizeof(key), "%u:%u:%u", a->device, a->context, a->stream);
	ix = json_object_get(st->stream_ix, key);
	if (ix)
		return json_integer_value(ix);
	if (json_array_append_new(st->streams,
				  json_pack("{s:i, s:i, s:i}", "device", (int)a->device, "context",
					    (int)a->context, "stream", (int)a->stream)) ||
	    json_object_set_new(st->stream_ix, key, json_integer(i)))
		return -1;
	return i;
}

static json_int_t rel(const struct sonde_gpu_builder *st, const struct sonde_gpu_clock *k,
		      uint64_t t)
{
	uint64_t h = sonde_gpu_clock__map(k, t);

	return h > st->t0 ? (json_int_t)(h - st->t0) : 0;
}

/*
 * The run's work and calls on sonde's clock, from the collection's start:
 * spans [stream, kind, name, start_ns, duration_ns, correlation] and calls
 * [pid, tid, name, start_ns, duration_ns, correlation].
 */
static int timeline(struct sonde_gpu_builder *st, const struct sonde_gpu_run *run)
{
	static const char *const kinds[] = { "?", "kernel", "memcpy", "memset", "sync" };
	struct sonde_gpu_clock k;
	size_t i;

	if (!run->nclocks) {
		st->tot.unmapped += run->nacts || run->napis;
		return 0;
	}
	if (sonde_gpu_clock__fit(run->clocks, run->nclocks, &k))
		return 0;
	if (k.uncertainty_ns > st->tot.uncertainty_ns)
		st->tot.uncertainty_ns = k.uncertainty_ns;
	for (i = 0; i < run->nacts; i++) {
		const struct gpu_act *a = &run->acts[i];
		const char *name = a->kind == GPU_ACT_KERNEL   ? sonde_gpu_run__name(run, a->name)
				   : a->kind == GPU_ACT_MEMCPY ? sonde_gpu__copy_name(a->sub)
							       : kinds[a->kind < 5 ? a->kind : 0];
		json_int_t s, n;

		if ((long long)json_array_size(st->spans) >= st->max_spans) {
			st->tot.left_out++;
			continue;
		}
		if (a->kind == GPU_ACT_KERNEL)
			name = sonde_symbols__demangle(st->sym, name ? name : "?");
		s = stream_index(st, a);
		n = intern(st, name ? name : "?");
		if (s < 0 || n < 0 ||
		    json_array_append_new(
			    st->spans,
			    json_pack("[I, s, I, I, I, I]", s, kinds[a->kind < 5 ? a->kind : 0], n,
				      rel(st, &k, a->start),
				      (json_int_t)(a->end > a->start ? a->end - a->start : 0),
				      (json_int_t)a->correlation)))
			return -ENOMEM;
	}
	if (run->nmarkers) {
		struct sonde_gpu_range *r;
		size_t n, unpaired;

		if (sonde_gpu__ranges(run->markers, run->nmarkers, &r, &n, &unpaired))
			return -ENOMEM;
		for (i = 0; i < n; i++) {
			const char *name = sonde_gpu_run__name(run, r[i].name);
			json_int_t ni;

			if ((long long)json_array_size(st->ranges) >= st->max_spans) {
				st->tot.left_out++;
				continue;
			}
			ni = intern(st, name ? name : "?");
			if (ni < 0 ||
			    json_array_append_new(st->ranges,
						  json_pack("[I, I, I, I, I]", (json_int_t)r[i].pid,
							    (json_int_t)r[i].tid, ni,
							    rel(st, &k, r[i].start),
							    (json_int_t)(r[i].end - r[i].start)))) {
				free(r);
				return -ENOMEM;
			}
		}
		free(r);
	}
	if (run->nmems) {
		struct sonde_gpu_memory_stats *d = NULL;
		uint64_t *live = malloc(run->nmems * sizeof(*live));
		size_t *order = malloc(run->nmems * sizeof(*order)), n;
		int rc = live && order
				 ? sonde_gpu__memory(run->mems, run->nmems, &d, &n, live, order)
				 : -ENOMEM;

		free(d); /* the per-device figures are the rows' */
		for (i = 0; !rc && i < run->nmems; i++) {
			const struct gpu_memory *m = &run->mems[order[i]];

			if ((long long)json_array_size(st->memory) >= st->max_spans) {
				st->tot.left_out++;
				continue;
			}
			if (json_array_append_new(
				    st->memory, json_pack("[I, I, I]", (json_int_t)m->device,
							  rel(st, &k, m->ts), (json_int_t)live[i])))
				rc = -ENOMEM;
		}
		free(live);
		free(order);
		if (rc)
			return rc;
	}
	for (i = 0; i < run->napis; i++) {
		const struct gpu_api *a = &run->apis[i];
		const char *name = sonde_gpu_run__name(run, SONDE_GPU_API_NAME(a->driver, a->cbid));
		json_int_t n;

		if ((long long)json_array_size(st->calls) >= st->max_spans) {
			st->tot.left_out++;
			continue;
		}
		n = intern(st, name ? name : "?");
		if (n < 0 ||
		    json_array_append_new(
			    st->calls,
			    json_pack("[I, I, I, I, I, I]", (json_int_t)a->pid, (json_int_t)a->tid,
				      n, rel(st, &k, a->start),
				      (json_int_t)(a->end > a->start ? a->end - a->start : 0),
				      (json_int_t)a->correlation)))
			return -ENOMEM;
	}
	return 0;
}

struct sonde_gpu_builder *sonde_gpu_builder__new(uint64_t t0, long long max_spans)
{
	struct sonde_gpu_builder *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->t0 = t0;
	b->max_spans = max_spans;
	b->records = json_array();
	b->sym = sonde_symbols__new();
	b->names = json_array();
	b->name_ix = json_object();
	b->streams = json_array();
	b->stream_ix = json_object();
	b->spans = json_array();
	b->calls = json_array();
	b->ranges = json_array();
	b->memory = json_array();
	if (!b->ranges || !b->memory || !b->records || !b->sym || !b->names || !b->name_ix ||
	    !b->streams || !b->stream_ix || !b->spans || !b->calls) {
		sonde_gpu_builder__free(b);
		return NULL;
	}
	return b;
}

void sonde_gpu_builder__set_t0(struct sonde_gpu_builder *b, uint64_t t0)
{
	b->t0 = t0;
}

int sonde_gpu_builder__add_run(struct sonde_gpu_builder *b, const struct sonde_gpu_run *run,
			       unsigned index, bool has_size, double size)
{
	struct run_of ri = { index, has_size, size };
	int rc = timeline(b, run);

	if (rc)
		return rc;
	b->tot.acts += run->nacts;
	b->tot.apis += run->napis;
	b->tot.dropped += run->dropped;
	b->tot.clocks += run->nclocks;
	b->tot.processes += run->processes;
	b->tot.runs_without_cuda += !run->processes;
	if (run->status && !b->tot.status) {
		b->tot.status = strdup(run->status);
		if (!b->tot.status)
			return -ENOMEM;
	}
	return rows(b, run, &ri);
}

const struct sonde_gpu_totals *sonde_gpu_builder__totals(const struct sonde_gpu_builder *b)
{
	return &b->tot;
}

int sonde_gpu_builder__write(struct sonde_gpu_builder *b, struct sonde_profile *p)
{
	json_t *g = json_pack("{s:I, s:I, s:I, s:I, s:{s:I, s:f}}", "activity_records",
			      (json_int_t)b->tot.acts, "api_records", (json_int_t)b->tot.apis,
			      "dropped_records", (json_int_t)b->tot.dropped, "processes",
			      (json_int_t)b->tot.processes, "clock", "pairs",
			      (json_int_t)b->tot.clocks, "uncertainty_ns", b->tot.uncertainty_ns);

	if (!g || sonde_profile__set(sonde_profile__stats(p), "gpu", g))
		return -ENOMEM;
	if (b->tot.left_out &&
	    json_object_set_new(g, "timeline_left_out", json_integer((json_int_t)b->tot.left_out)))
		return -ENOMEM;
	if (b->tot.unpaired_ranges &&
	    json_object_set_new(g, "ranges_not_ended",
				json_integer((json_int_t)b->tot.unpaired_ranges)))
		return -ENOMEM;
	if (json_array_size(b->spans) || json_array_size(b->calls) || json_array_size(b->ranges) ||
	    json_array_size(b->memory)) {
		json_t *part = json_pack("{s:O, s:O, s:O, s:O, s:O, s:O}", "names", b->names,
					 "streams", b->streams, "spans", b->spans, "calls",
					 b->calls, "ranges", b->ranges, "memory", b->memory);

		if (!part || sonde_profile__set_part(p, "gpu", part))
			return -ENOMEM;
	}
	return sonde_profile__add_records(p, b->records);
}

void sonde_gpu_builder__free(struct sonde_gpu_builder *b)
{
	if (!b)
		return;
	json_decref(b->records);
	json_decref(b->names);
	json_decref(b->name_ix);
	json_decref(b->streams);
	json_decref(b->stream_ix);
	json_decref(b->spans);
	json_decref(b->calls);
	json_decref(b->ranges);
	json_decref(b->memory);
	sonde_symbols__free(b->sym);
	free(b->tot.status);
	free(b);
}
