/*
 * collector.c - the gpu collector: what a CUDA program ran on its GPUs, from
 * CUPTI's activity records.
 *
 * The program is not changed: sonde names its runtime (libsonde-gpu.so) in
 * CUDA_INJECTION64_PATH, the NVIDIA driver loads it when the program
 * initialises CUDA, and the runtime hands the records CUPTI completes to
 * sonde through a ring (proto/gpu.h). Per run, the profile gets a row per
 * kernel (launches; total, mean, min, max time on the GPU), per stream (busy,
 * overlapped by another stream of its device), per copy direction (copies,
 * bytes, time, bandwidth), per CUDA API function (--level api|full: calls,
 * time on the host) and for synchronisation; stats.gpu says how CUPTI's
 * clock was mapped onto sonde's and what CUPTI dropped.
 *
 * Where there is no NVIDIA driver or no CUPTI, nothing is run: one line says
 * which is missing (exit 3).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/collector.h>
#include <sonde/symbols.h>
#include "../../runtime-file.h"
#include "../../engines/gpu/gpu.h"
#include "../../engines/preload/rt-host.h"

struct gpu_state {
	struct rt_host host;
	bool host_started;
	unsigned level;
	json_t *records;	   /* Perun's list-of-records form, every run */
	struct sonde_symbols *sym; /* for demangling kernel names */
	uint64_t acts, apis, dropped, clocks, processes;
	double uncertainty_ns; /* the widest of the runs' clock mappings */
	char *status;	       /* CUPTI's refusal, the first seen */
	unsigned runs_without_cuda;
	uint64_t t0; /* the collection's start: timeline times count from it */
	/* the timeline (the profile's "gpu" part): names, streams, spans, calls */
	json_t *names, *name_ix, *streams, *stream_ix, *spans, *calls;
	long long max_spans;
	uint64_t left_out; /* spans and calls past max_spans */
	uint64_t unmapped; /* runs without a clock reading: no timeline for them */
};

static const char *const gpu_levels[] = { "kernel", "api", "full", NULL };

static int gpu_before(struct sonde_collection *c)
{
	struct gpu_state *st = calloc(1, sizeof(*st));
	const char *level = sonde_collection__param_str(c, "level", "kernel");
	struct sonde_strbuf why, cupti;
	struct rt_host_spec spec = {
		.collector = "gpu",
		.runtime = NULL, /* the driver loads it: CUDA_INJECTION64_PATH */
		.ring_env = GPU_ENV_RING,
		.rings = 16,
		.ring_bytes = 8u << 20,
	};
	char *runtime, num[16];
	int rc;

	if (!st)
		return -ENOMEM;
	sonde_collection__set_priv(c, st);
	st->host.log_fd = -1;
	st->level = !strcmp(level, "api")    ? GPU_LEVEL_API
		    : !strcmp(level, "full") ? GPU_LEVEL_FULL
					     : GPU_LEVEL_KERNEL;
	st->records = json_array();
	st->sym = sonde_symbols__new();
	st->names = json_array();
	st->name_ix = json_object();
	st->streams = json_array();
	st->stream_ix = json_object();
	st->spans = json_array();
	st->calls = json_array();
	st->max_spans = sonde_collection__param_int(c, "max-spans", 1000000);
	if (!st->records || !st->sym || !st->names || !st->name_ix || !st->streams ||
	    !st->stream_ix || !st->spans || !st->calls)
		return -ENOMEM;
	sonde_strbuf__init(&why);
	sonde_strbuf__init(&cupti);
	rc = sonde_gpu__driver(&why);
	if (!rc)
		rc = sonde_gpu__find_cupti(sonde_collection__param_str(c, "cupti", NULL), &cupti,
					   &why);
	if (rc) {
		sonde_collection__fail(c, "gpu: <not supported>: %s", why.buf);
		sonde_strbuf__release(&why);
		sonde_strbuf__release(&cupti);
		return -ENOTSUP;
	}
	sonde_strbuf__release(&why);
	runtime = sonde_runtime_file("libsonde-gpu.so");
	if (!runtime) {
		sonde_strbuf__release(&cupti);
		sonde_collection__fail(c, "cannot find the gpu runtime libsonde-gpu.so (set "
					  "SONDE_RUNTIME_DIR to the directory that holds it)");
		return -ENOENT;
	}
	snprintf(num, sizeof(num), "%u", st->level);
	rc = sonde_collection__setenv(c, "CUDA_INJECTION64_PATH", runtime);
	if (!rc)
		rc = sonde_collection__setenv(c, GPU_ENV_CUPTI, cupti.buf);
	if (!rc)
		rc = sonde_collection__setenv(c, GPU_ENV_LEVEL, num);
	free(runtime);
	sonde_strbuf__release(&cupti);
	if (!rc)
		rc = rt_host__ring_bytes(c, spec.ring_bytes, &spec.ring_bytes);
	if (!rc) {
		rc = rt_host__start(&st->host, c, &spec);
		st->host_started = true;
	}
	return rc;
}

static json_t *row(const char *uid, const char *type, const char *subtype, double amount,
		   const struct sonde_run_info *ri)
{
	json_t *r = json_pack("{s:s, s:s, s:s, s:f, s:I}", "uid", uid, "type", type, "subtype",
			      subtype, "amount", amount, "order", (json_int_t)ri->index + 1);

	if (r && ri->has_size)
		json_object_set_new(r, "structure-unit-size", json_real(ri->size));
	return r;
}

static int add(struct gpu_state *st, json_t *r)
{
	return r && !json_array_append_new(st->records, r) ? 0 : -ENOMEM;
}

/* The run's rows from its records. */
static int rows(struct gpu_state *st, const struct sonde_gpu_run *run,
		const struct sonde_run_info *ri)
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
static json_int_t intern(struct gpu_state *st, const char *name)
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

static json_int_t stream_index(struct gpu_state *st, const struct gpu_act *a)
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

static json_int_t rel(const struct gpu_state *st, const struct sonde_gpu_clock *k, uint64_t t)
{
	uint64_t h = sonde_gpu_clock__map(k, t);

	return h > st->t0 ? (json_int_t)(h - st->t0) : 0;
}

/*
 * The run's work and calls on sonde's clock, from the collection's start:
 * spans [stream, kind, name, start_ns, duration_ns, correlation] and calls
 * [pid, tid, name, start_ns, duration_ns, correlation].
 */
static int timeline(struct gpu_state *st, const struct sonde_gpu_run *run)
{
	static const char *const kinds[] = { "?", "kernel", "memcpy", "memset", "sync" };
	struct sonde_gpu_clock k;
	size_t i;

	if (!run->nclocks) {
		st->unmapped += run->nacts || run->napis;
		return 0;
	}
	if (sonde_gpu_clock__fit(run->clocks, run->nclocks, &k))
		return 0;
	if (k.uncertainty_ns > st->uncertainty_ns)
		st->uncertainty_ns = k.uncertainty_ns;
	for (i = 0; i < run->nacts; i++) {
		const struct gpu_act *a = &run->acts[i];
		const char *name = a->kind == GPU_ACT_KERNEL   ? sonde_gpu_run__name(run, a->name)
				   : a->kind == GPU_ACT_MEMCPY ? sonde_gpu__copy_name(a->sub)
							       : kinds[a->kind < 5 ? a->kind : 0];
		json_int_t s, n;

		if ((long long)json_array_size(st->spans) >= st->max_spans) {
			st->left_out++;
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
	for (i = 0; i < run->napis; i++) {
		const struct gpu_api *a = &run->apis[i];
		const char *name = sonde_gpu_run__name(run, SONDE_GPU_API_NAME(a->driver, a->cbid));
		json_int_t n;

		if ((long long)json_array_size(st->calls) >= st->max_spans) {
			st->left_out++;
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

static int analyse(void *ctx, const void *log, size_t len, const struct sonde_run_info *ri)
{
	struct gpu_state *st = ctx;
	struct sonde_gpu_run run = { 0 };
	int rc = sonde_gpu_run__read(&run, log, len);

	if (!rc)
		rc = timeline(st, &run);
	if (!rc) {
		st->acts += run.nacts;
		st->apis += run.napis;
		st->dropped += run.dropped;
		st->clocks += run.nclocks;
		st->processes += run.processes;
		st->runs_without_cuda += !run.processes;
		if (run.status && !st->status)
			st->status = strdup(run.status);
		rc = rows(st, &run, ri);
	}
	sonde_gpu_run__free(&run);
	return rc;
}

static int gpu_start(struct sonde_collection *c, pid_t pid)
{
	struct gpu_state *st = sonde_collection__priv(c);

	(void)pid;
	st->t0 = sonde_collection__t0_ns(c);
	return 0;
}

static int gpu_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	struct gpu_state *st = sonde_collection__priv(c);

	return rt_host__stop(&st->host, c, ri, analyse, st);
}

static int gpu_after(struct sonde_collection *c, struct sonde_profile *p)
{
	struct gpu_state *st = sonde_collection__priv(c);
	json_t *stats = sonde_profile__stats(p), *g;

	if (st->status && !st->acts && !st->apis) {
		sonde_collection__fail(c,
				       "gpu: <not supported>: CUPTI could not record in the "
				       "program: %s",
				       st->status);
		return -ENOTSUP;
	}
	if (!st->processes) {
		sonde_collection__fail(c,
				       "gpu: the program did not initialise CUDA: no GPU work "
				       "to record (is it a CUDA program, and does it see a GPU?)");
		return -ENOTSUP;
	}
	if (st->dropped)
		sonde_collection__dropped(c, st->dropped);
	if (st->runs_without_cuda)
		sonde_collection__note(c, "%u run(s) did not initialise CUDA: no rows for them",
				       st->runs_without_cuda);
	g = json_pack("{s:I, s:I, s:I, s:I, s:{s:I, s:f}}", "activity_records",
		      (json_int_t)st->acts, "api_records", (json_int_t)st->apis, "dropped_records",
		      (json_int_t)st->dropped, "processes", (json_int_t)st->processes, "clock",
		      "pairs", (json_int_t)st->clocks, "uncertainty_ns", st->uncertainty_ns);
	if (!g || sonde_profile__set(stats, "gpu", g))
		return -ENOMEM;
	if (st->left_out) {
		sonde_collection__note(
			c,
			"the timeline keeps the first %lld spans and calls (--max-spans): "
			"%llu left out of it (the rows count them all)",
			st->max_spans, (unsigned long long)st->left_out);
		json_object_set_new(g, "timeline_left_out", json_integer((json_int_t)st->left_out));
	}
	if (st->unmapped)
		sonde_collection__note(c,
				       "%llu run(s) without a reading of CUPTI's clock: not on the "
				       "timeline",
				       (unsigned long long)st->unmapped);
	if (json_array_size(st->spans) || json_array_size(st->calls)) {
		json_t *part = json_pack("{s:O, s:O, s:O, s:O}", "names", st->names, "streams",
					 st->streams, "spans", st->spans, "calls", st->calls);

		if (!part || sonde_profile__set_part(p, "gpu", part))
			return -ENOMEM;
	}
	if (st->status)
		sonde_collection__note(c, "CUPTI: %s", st->status);
	return sonde_profile__add_records(p, st->records);
}

static void gpu_cleanup(struct sonde_collection *c)
{
	struct gpu_state *st = sonde_collection__priv(c);

	if (!st)
		return;
	if (st->host_started)
		rt_host__release(&st->host);
	json_decref(st->records);
	json_decref(st->names);
	json_decref(st->name_ix);
	json_decref(st->streams);
	json_decref(st->stream_ix);
	json_decref(st->spans);
	json_decref(st->calls);
	sonde_symbols__free(st->sym);
	free(st->status);
	free(st);
}

static const char *const gpu_units[] = { "amount", "ns (busy, time); kernels: time on the GPU",
					 "bandwidth", "B/s", NULL };

static const struct sonde_option gpu_options[] = {
	{ SONDE_OPT_CHOICE, 0, "level", NULL, "LEVEL",
	  "kernel: kernels, copies, memsets and synchronisation (default); api: the CUDA "
	  "runtime and driver calls; full: both",
	  0, 0, gpu_levels },
	{ SONDE_OPT_STRING, 0, "cupti", NULL, "PATH",
	  "the libcupti.so to load (default: found under $CUDA_HOME or /usr/local/cuda)" },
	{ SONDE_OPT_INT, 0, "max-spans", NULL, "N",
	  "keep the first N kernels, copies and calls on the timeline (1000000); the rows "
	  "count them all",
	  1, 1e12 },
	RT_HOST_RING_OPTION("8 MiB"),
	{ .type = SONDE_OPT_END },
};

const struct sonde_collector sonde_collector_gpu = {
	.abi = SONDE_COLLECTOR_ABI,
	.name = "gpu",
	.summary = "kernels, copies, streams and CUDA calls of a CUDA program (NVIDIA, CUPTI)",
	.profile_type = "gpu",
	.units = gpu_units,
	.options = gpu_options,
	.flags = SONDE_COLLECTOR_ORDER_IS_RUN,
	.before = gpu_before,
	.start = gpu_start,
	.stop = gpu_stop,
	.after = gpu_after,
	.cleanup = gpu_cleanup,
};
