/*
 * timeline.c - the profiles of one run on one timeline: a Chrome/Perfetto
 * trace-event JSON (ui.perfetto.dev and chrome://tracing open it).
 *
 * Every collector of a run counts its timestamps from the same collection
 * start, so the profiles' events line up as they are. What each contributes:
 *   trace, sample: function slices (and samples) on each thread's track;
 *   sched: each thread's states (running, runnable, sleeping, blocked) as
 *          slices on a track of its own beside the thread's;
 *   system, power: counter tracks, one per metric (per-CPU ones included);
 *   counters (-I): counter tracks, one per counter;
 *   memory: the heap's size as a counter track (the first run);
 *   time: each run as a slice on a "runs" track;
 *   gpu: a process per GPU, a track per stream with its kernels, copies,
 *        memsets and synchronisations, and its device memory as a counter;
 *        the CUDA calls and NVTX ranges on the calling thread's track.
 * The machine-wide tracks belong to a process named "sonde: <collector>".
 *
 * The same walk over the profiles feeds two writers (struct sink): the
 * trace-event JSON, and the SVG of the HTML report, where each track is a lane
 * (spans drawn per pixel column, counters as lines).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/format.h>
#include "../grow.h"
#include "../u64map.h"
#include "views.h"

/* Pseudo process ids for tracks that belong to no process of the target. */
#define PID_RUNS   -1
#define PID_SYSTEM -2
#define PID_POWER  -3
#define PID_COUNT  -4
#define PID_MEMORY -5
/* GPU d's streams: a process each device, PID_GPU - d */
#define PID_GPU -100
/* A sched state track sits beside its thread's: tid + this. */
#define SCHED_TID 1000000000LL
/* The SVG's function lanes of a thread, one per call depth: tid + (depth + 1) * this. */
#define FUNC_TID    2000000000LL
#define FUNC_DEPTHS 3 /* the depths drawn: main, what it calls, and what they call */

void view_add_us(struct sonde_strbuf *out, long long ns)
{
	unsigned long long a = ns < 0 ? (unsigned long long)-ns : (unsigned long long)ns;

	sonde_strbuf__addf(out, "%s%llu.%03llu", ns < 0 ? "-" : "", a / 1000, a % 1000);
}

void view_add_json(struct sonde_strbuf *out, const json_t *v)
{
	char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	sonde_strbuf__adds(out, t ? t : "null");
	free(t);
}

/* What the walk over the profiles hands a writer. */
struct sink {
	/* a track's name: process (tid 0) or thread */
	void (*name)(void *ctx, long long pid, long long tid, const char *name);
	void (*span)(void *ctx, long long pid, long long tid, const char *name, const char *cat,
		     long long ts, long long dur, int cpu);
	void (*counter)(void *ctx, long long pid, const char *name, long long ts, double v);
	void *ctx;
};

static const char *sget(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* Counter tracks from resources with amount and timestamp columns (system, power, counters). */
static int counter_tracks(const struct sonde_profile *p, const struct sink *k, long long pid,
			  bool intervals_only)
{
	size_t n = sonde_profile__resource_count(p), i, j, emitted = 0;
	json_t *fixed, *cols;

	for (i = 0; i < n; i++) {
		json_t *amount, *ts;
		const char *unit;
		char name[256];

		if (sonde_profile__resource_at(p, i, NULL, &fixed, &cols))
			return -ENOMEM;
		amount = json_object_get(cols, "amount");
		ts = json_object_get(cols, "timestamp");
		if (!json_is_array(amount) || !json_is_array(ts))
			continue;
		if (intervals_only &&
		    (!sget(fixed, "dispatch") || strcmp(sget(fixed, "dispatch"), "interval")))
			continue;
		unit = sget(fixed, "unit");
		snprintf(name, sizeof(name), "%s%s%s%s",
			 sget(fixed, "uid") ? sget(fixed, "uid") : "?", unit && *unit ? " (" : "",
			 unit && *unit ? unit : "", unit && *unit ? ")" : "");
		/* a value over an interval, from the interval's start (the timestamp) */
		for (j = 0; j < json_array_size(amount) && j < json_array_size(ts); j++) {
			json_t *v = json_array_get(amount, j);

			if (!json_is_number(v))
				continue;
			k->counter(k->ctx, pid, name,
				   (long long)json_integer_value(json_array_get(ts, j)),
				   json_number_value(v));
			emitted++;
		}
	}
	return emitted ? 0 : -EINVAL;
}

static int sched_spans(const struct sonde_profile *p, const struct sink *k)
{
	json_t *sc = sonde_profile__part(p, "sched");
	json_t *states = json_object_get(sc, "states"), *x;
	struct u64map pid_of = { 0 }; /* tid -> pid */
	size_t i;

	if (!json_is_array(json_object_get(sc, "spans")))
		return -EINVAL;
	json_array_foreach(json_object_get(sc, "threads"), i, x)
	{
		long long pid = (long long)json_integer_value(json_object_get(x, "pid"));
		long long tid = (long long)json_integer_value(json_object_get(x, "tid"));
		char name[96];

		if (u64map__put(&pid_of, (uint64_t)tid, (uint64_t)pid)) {
			u64map__release(&pid_of);
			return -ENOMEM;
		}
		snprintf(name, sizeof(name), "%s %lld (scheduler)",
			 sget(x, "name") ? sget(x, "name") : "?", tid);
		k->name(k->ctx, pid, SCHED_TID + tid, name);
	}
	json_array_foreach(json_object_get(sc, "spans"), i, x)
	{
		long long tid = (long long)json_integer_value(json_array_get(x, 0));
		const char *st = json_string_value(
			json_array_get(states, (size_t)json_integer_value(json_array_get(x, 1))));
		uint64_t pid = (uint64_t)tid;

		u64map__get(&pid_of, (uint64_t)tid, &pid);
		k->span(k->ctx, (long long)pid, SCHED_TID + tid, st ? st : "?", "sched",
			(long long)json_integer_value(json_array_get(x, 2)),
			(long long)json_integer_value(json_array_get(x, 3)),
			(int)json_integer_value(json_array_get(x, 4)));
	}
	u64map__release(&pid_of);
	return 0;
}

/*
 * A trace's function calls, for the SVG only (the trace-event JSON takes the
 * trace whole, view_trace_events): the first FUNC_DEPTHS call depths of each
 * thread, a lane each.
 */
static int func_spans(const struct sonde_profile *p, const struct sink *k)
{
	json_t *tr = sonde_profile__part(p, "trace");
	json_t *funcs = json_object_get(tr, "functions"), *x;
	size_t i;
	int d;

	if (!json_is_array(json_object_get(tr, "slices")) || !json_is_array(funcs))
		return -EINVAL;
	json_array_foreach(json_object_get(tr, "threads"), i, x)
	{
		long long pid = (long long)json_integer_value(json_object_get(x, "pid"));
		long long tid = (long long)json_integer_value(json_object_get(x, "tid"));
		char name[128];

		for (d = 0; d < FUNC_DEPTHS; d++) {
			snprintf(name, sizeof(name), "%s %lld (calls, depth %d)",
				 sget(x, "name") ? sget(x, "name") : "?", tid, d);
			k->name(k->ctx, pid, FUNC_TID * (d + 1) + tid, name);
		}
	}
	json_array_foreach(json_object_get(tr, "slices"), i, x)
	{
		json_int_t depth = json_integer_value(json_array_get(x, 3));
		const char *fn = sget(
			json_array_get(funcs, (size_t)json_integer_value(json_array_get(x, 2))),
			"name");

		if (depth < 0 || depth >= FUNC_DEPTHS)
			continue;
		k->span(k->ctx, (long long)json_integer_value(json_array_get(x, 0)),
			FUNC_TID * (depth + 1) +
				(long long)json_integer_value(json_array_get(x, 1)),
			fn ? fn : "?", "function",
			(long long)json_integer_value(json_array_get(x, 4)),
			(long long)json_integer_value(json_array_get(x, 5)), -1);
	}
	return 0;
}

/* The time collector's runs: a slice each, from its start, as long as its wall time. */
static int run_spans(const struct sonde_profile *p, const struct sink *k)
{
	size_t n = sonde_profile__resource_count(p), i, j, emitted = 0;
	json_t *fixed, *cols;

	for (i = 0; i < n; i++) {
		json_t *amount, *ts;

		if (sonde_profile__resource_at(p, i, NULL, &fixed, &cols))
			return -ENOMEM;
		if (!sget(fixed, "subtype") || strcmp(sget(fixed, "subtype"), "real"))
			continue;
		amount = json_object_get(cols, "amount");
		ts = json_object_get(cols, "timestamp");
		for (j = 0; j < json_array_size(amount) && j < json_array_size(ts); j++) {
			char name[32];

			snprintf(name, sizeof(name), "run %zu", j + 1);
			k->span(k->ctx, PID_RUNS, 1, name, "run",
				(long long)json_integer_value(json_array_get(ts, j)),
				(long long)json_integer_value(json_array_get(amount, j)), -1);
			emitted++;
		}
	}
	return emitted ? 0 : -EINVAL;
}

static int heap_track(const struct sonde_profile *p, const struct sink *k)
{
	json_t *tl =
		json_object_get(json_object_get(sonde_profile__stats(p), "memory"), "timeline");
	json_t *heap = json_object_get(tl, "heap"), *peak = json_object_get(tl, "heap_peak"), *v;
	long long start = (long long)json_integer_value(json_object_get(tl, "start_ns"));
	long long slice = (long long)json_integer_value(json_object_get(tl, "slice_ns"));
	size_t i;

	if (!json_array_size(heap) || slice <= 0)
		return -EINVAL;
	json_array_foreach(heap, i, v)
		k->counter(k->ctx, PID_MEMORY, "heap (B)", start + (long long)(i + 1) * slice,
			   (double)json_integer_value(v));
	/* what the slice reached, drawn over the slice: a peak between two ends shows */
	json_array_foreach(peak, i, v)
		k->counter(k->ctx, PID_MEMORY, "heap, each slice's highest (B)",
			   start + (long long)i * slice, (double)json_integer_value(v));
	return 0;
}

static int gpu_spans(const struct sonde_profile *p, const struct sink *k)
{
	json_t *g = sonde_profile__part(p, "gpu"), *names = json_object_get(g, "names"), *x;
	json_t *streams = json_object_get(g, "streams");
	struct u64map named = { 0 }; /* devices whose process is named */
	size_t i;

	if (!json_is_array(json_object_get(g, "spans")) || !json_is_array(names))
		return -EINVAL;
	/* a process per device, named once: its streams' and its memory's */
	for (int pass = 0; pass < 2; pass++) {
		json_array_foreach(pass ? json_object_get(g, "memory") : streams, i, x)
		{
			long long dev = (long long)json_integer_value(
				pass ? json_array_get(x, 0) : json_object_get(x, "device"));
			char name[64];
			bool seen;
			uint64_t *slot = u64map__upsert(&named, (uint64_t)dev, &seen);

			if (!slot) {
				u64map__release(&named);
				return -ENOMEM;
			}
			if (!seen) {
				snprintf(name, sizeof(name), "GPU %lld", dev);
				k->name(k->ctx, PID_GPU - dev, 0, name);
			}
			if (!pass) {
				long long st =
					(long long)json_integer_value(json_object_get(x, "stream"));

				snprintf(name, sizeof(name), "stream %lld", st);
				k->name(k->ctx, PID_GPU - dev, st + 1, name);
			}
		}
	}
	u64map__release(&named);
	json_array_foreach(json_object_get(g, "spans"), i, x)
	{
		json_t *st =
			json_array_get(streams, (size_t)json_integer_value(json_array_get(x, 0)));
		const char *fn = json_string_value(
			json_array_get(names, (size_t)json_integer_value(json_array_get(x, 2))));

		if (!st)
			continue;
		k->span(k->ctx,
			PID_GPU - (long long)json_integer_value(json_object_get(st, "device")),
			(long long)json_integer_value(json_object_get(st, "stream")) + 1,
			fn ? fn : "?", json_string_value(json_array_get(x, 1)),
			(long long)json_integer_value(json_array_get(x, 3)),
			(long long)json_integer_value(json_array_get(x, 4)), -1);
	}
	json_array_foreach(json_object_get(g, "ranges"), i, x)
	{
		const char *fn = json_string_value(
			json_array_get(names, (size_t)json_integer_value(json_array_get(x, 2))));

		k->span(k->ctx, (long long)json_integer_value(json_array_get(x, 0)),
			(long long)json_integer_value(json_array_get(x, 1)), fn ? fn : "?", "nvtx",
			(long long)json_integer_value(json_array_get(x, 3)),
			(long long)json_integer_value(json_array_get(x, 4)), -1);
	}
	json_array_foreach(json_object_get(g, "memory"), i, x)
	{
		long long dev = (long long)json_integer_value(json_array_get(x, 0));

		k->counter(k->ctx, PID_GPU - dev, "device memory (B)",
			   (long long)json_integer_value(json_array_get(x, 1)),
			   (double)json_integer_value(json_array_get(x, 2)));
	}
	json_array_foreach(json_object_get(g, "calls"), i, x)
	{
		const char *fn = json_string_value(
			json_array_get(names, (size_t)json_integer_value(json_array_get(x, 2))));

		k->span(k->ctx, (long long)json_integer_value(json_array_get(x, 0)),
			(long long)json_integer_value(json_array_get(x, 1)), fn ? fn : "?", "cuda",
			(long long)json_integer_value(json_array_get(x, 3)),
			(long long)json_integer_value(json_array_get(x, 4)), -1);
	}
	return 0;
}

/* ---- the ranks of a job: a pid range each, their hosts' clocks onto the first's ---------- */

#define RANK_PIDS (1LL << 24) /* a rank's range: above any pid (pid_max is 2^22) */

long long view_place_pid(const struct view_place *pl, long long pid)
{
	if (!pl || !pl->pid_base)
		return pid;
	return pid >= 0 ? pl->pid_base + pid : pid - pl->pid_base;
}

static json_t *clock_of(const struct sonde_profile *p)
{
	return json_object_get(sonde_profile__metadata(p), "clock");
}

static long long iget_(json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

/*
 * Where each profile goes (pl[i], its name prefix in prefix[i]), when any is a
 * rank of a job; false when none is (the profiles are laid as they are). The
 * clocks: profiles of one boot share its monotonic clock (shift 0, exact);
 * another host's is mapped through both hosts' CLOCK_REALTIME, read beside
 * CLOCK_MONOTONIC when each profile was stamped, to within both clocks'
 * maxerror (adjtimex) and the time each pair took to read. Each profile's
 * timestamps count from its collection's start (metadata.clock's
 * start_monotonic_ns): the first profile's start is the timeline's zero.
 */
struct placing {
	struct view_place *pl;
	char (*prefix)[320];
	long long bound_ns; /* -1: not bounded (a clock not synchronised) */
	size_t hosts, ranks;
	bool shifted;
};

static bool place_ranks(const struct sonde_profile *const *p, size_t n, struct placing *pc)
{
	json_t *ref = NULL;
	long long ref_rank = -1;
	const char *hosts[64];
	size_t i, h;
	bool any = false;

	memset(pc, 0, sizeof(*pc));
	for (i = 0; i < n; i++)
		any |= json_is_integer(json_object_get(
			json_object_get(sonde_profile__metadata(p[i]), "job"), "rank"));
	if (!any)
		return false;
	/* the lowest rank's clock is the timeline's (a profile of no rank: after) */
	for (i = 0; i < n; i++) {
		json_t *c = clock_of(p[i]);
		json_t *rank = json_object_get(
			json_object_get(sonde_profile__metadata(p[i]), "job"), "rank");

		if (json_is_object(c) &&
		    (!ref || (json_is_integer(rank) &&
			      (ref_rank < 0 || json_integer_value(rank) < ref_rank)))) {
			ref = c;
			ref_rank = json_is_integer(rank) ? (long long)json_integer_value(rank) : -1;
		}
	}
	pc->pl = calloc(n, sizeof(*pc->pl));
	pc->prefix = calloc(n, sizeof(*pc->prefix));
	if (!pc->pl || !pc->prefix) {
		free(pc->pl);
		free(pc->prefix);
		memset(pc, 0, sizeof(*pc));
		return false;
	}
	for (i = 0; i < n; i++) {
		json_t *j = json_object_get(sonde_profile__metadata(p[i]), "job");
		json_t *c = clock_of(p[i]), *rank = json_object_get(j, "rank");
		const char *host = sget(j, "host") ? sget(j, "host") : "?";

		if (json_is_integer(rank)) {
			pc->pl[i].pid_base = ((long long)json_integer_value(rank) + 1) * RANK_PIDS;
			snprintf(pc->prefix[i], sizeof(pc->prefix[i]),
				 "rank %lld (%.200s): ", (long long)json_integer_value(rank), host);
			pc->pl[i].prefix = pc->prefix[i];
			pc->ranks++;
		}
		for (h = 0; h < pc->hosts && strcmp(hosts[h], host); h++)
			;
		if (h == pc->hosts && pc->hosts < 64)
			hosts[pc->hosts++] = host;
		if (!json_is_object(c) || c == ref)
			continue;
		/* the timestamps count from each collection's start: onto the first's */
		pc->pl[i].shift_ns =
			iget_(c, "start_monotonic_ns") - iget_(ref, "start_monotonic_ns");
		if (sget(c, "boot_id") && sget(ref, "boot_id") &&
		    !strcmp(sget(c, "boot_id"), sget(ref, "boot_id")))
			continue; /* one boot, one monotonic clock */
		pc->pl[i].shift_ns += (iget_(c, "realtime_ns") - iget_(c, "monotonic_ns")) -
				      (iget_(ref, "realtime_ns") - iget_(ref, "monotonic_ns"));
		pc->shifted = true;
		if (pc->bound_ns >= 0) {
			long long e = iget_(c, "maxerror_ns"), r = iget_(ref, "maxerror_ns");
			long long b = e < 0 || r < 0
					      ? -1
					      : e + r + iget_(c, "read_ns") + iget_(ref, "read_ns");

			if (b < 0 || b > pc->bound_ns)
				pc->bound_ns = b;
		}
	}
	return true;
}

static void placing_free(struct placing *pc)
{
	free(pc->pl);
	free(pc->prefix);
}

int sonde_view__timeline_alignment(const struct sonde_profile *const *p, size_t n, char *buf,
				   size_t len)
{
	struct placing pc;
	char b[32];

	if (!place_ranks(p, n, &pc))
		return 0;
	if (!pc.shifted)
		snprintf(buf, len, "%zu rank profile%s on one host's clock: aligned exactly",
			 pc.ranks, pc.ranks == 1 ? "" : "s");
	else if (pc.bound_ns < 0)
		snprintf(buf, len,
			 "%zu rank profiles of %zu hosts aligned through each host's wall clock "
			 "(CLOCK_REALTIME): not bounded, a host's clock is not synchronised (NTP)",
			 pc.ranks, pc.hosts);
	else
		snprintf(buf, len,
			 "%zu rank profiles of %zu hosts aligned through each host's wall clock "
			 "(CLOCK_REALTIME): to within %s (the clocks' maxerror)",
			 pc.ranks, pc.hosts,
			 sonde_format__duration((double)pc.bound_ns, b, sizeof(b)));
	placing_free(&pc);
	return 1;
}

/* A sink that places one profile's tracks (view_place) before the writer's. */
struct placed {
	const struct sink *inner;
	const struct view_place *pl;
};

static void p_name(void *ctx, long long pid, long long tid, const char *name)
{
	struct placed *x = ctx;
	char buf[512];

	if (!tid && x->pl->prefix) {
		snprintf(buf, sizeof(buf), "%s%s", x->pl->prefix, name);
		name = buf;
	}
	x->inner->name(x->inner->ctx, view_place_pid(x->pl, pid), tid, name);
}

static void p_span(void *ctx, long long pid, long long tid, const char *name, const char *cat,
		   long long ts, long long dur, int cpu)
{
	struct placed *x = ctx;

	x->inner->span(x->inner->ctx, view_place_pid(x->pl, pid), tid, name, cat,
		       ts + x->pl->shift_ns, dur, cpu);
}

static void p_counter(void *ctx, long long pid, const char *name, long long ts, double v)
{
	struct placed *x = ctx;

	x->inner->counter(x->inner->ctx, view_place_pid(x->pl, pid), name, ts + x->pl->shift_ns, v);
}

/* The profiles must come from one run: -EXDEV when their run ids differ. */
static int one_run(const struct sonde_profile *const *p, size_t n)
{
	const char *run = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		const char *r = sget(sonde_profile__header(p[i]), "run_id");

		if (n > 1 && (!r || (run && strcmp(r, run))))
			return -EXDEV;
		run = r;
	}
	return 0;
}

/* One profile's tracks (the trace-event JSON takes a trace's whole); -EINVAL: none. */
static int walk(const struct sonde_profile *p, const struct sink *k)
{
	const char *type = sonde_profile__type(p);
	json_t *ci = sonde_profile__collector_info(p);
	char name[96];

	if (!type)
		return -EINVAL;
	if (sonde_profile__part(p, "trace"))
		return func_spans(p, k);
	snprintf(name, sizeof(name), "sonde: %s", sget(ci, "name") ? sget(ci, "name") : type);
	if (!strcmp(type, "sched"))
		return sched_spans(p, k);
	if (!strcmp(type, "gpu"))
		return gpu_spans(p, k);
	if (!strcmp(type, "system") || !strcmp(type, "power")) {
		long long pid = !strcmp(type, "system") ? PID_SYSTEM : PID_POWER;

		k->name(k->ctx, pid, 0, name);
		return counter_tracks(p, k, pid, false);
	}
	if (!strcmp(type, "counters")) {
		k->name(k->ctx, PID_COUNT, 0, name);
		return counter_tracks(p, k, PID_COUNT, true);
	}
	if (!strcmp(type, "memory")) {
		k->name(k->ctx, PID_MEMORY, 0, name);
		return heap_track(p, k);
	}
	if (!strcmp(type, "time")) {
		k->name(k->ctx, PID_RUNS, 0, name);
		return run_spans(p, k);
	}
	return -EINVAL;
}

/* ---- the trace-event JSON ---------------------------------------------------------------- */

struct json_out {
	struct sonde_strbuf *out;
	bool first;
};

static void sep(struct json_out *o)
{
	sonde_strbuf__adds(o->out, o->first ? "\n" : ",\n");
	o->first = false;
}

static void j_name(void *ctx, long long pid, long long tid, const char *name)
{
	struct json_out *o = ctx;
	json_t *m = json_pack("{s:s, s:s, s:I, s:{s:s}}", "ph", "M", "name",
			      tid ? "thread_name" : "process_name", "pid", (json_int_t)pid, "args",
			      "name", name);

	if (tid)
		json_object_set_new(m, "tid", json_integer((json_int_t)tid));
	sep(o);
	view_add_json(o->out, m);
	json_decref(m);
}

static void j_span(void *ctx, long long pid, long long tid, const char *name, const char *cat,
		   long long ts, long long dur, int cpu)
{
	struct json_out *o = ctx;
	json_t *n = json_string(name);

	sep(o);
	sonde_strbuf__adds(o->out, "{\"ph\":\"X\",\"name\":");
	view_add_json(o->out, n);
	json_decref(n);
	sonde_strbuf__addf(o->out, ",\"cat\":\"%s\",\"pid\":%lld,\"tid\":%lld,\"ts\":", cat, pid,
			   tid);
	view_add_us(o->out, ts);
	sonde_strbuf__adds(o->out, ",\"dur\":");
	view_add_us(o->out, dur);
	if (cpu >= 0)
		sonde_strbuf__addf(o->out, ",\"args\":{\"cpu\":%d}", cpu);
	sonde_strbuf__addch(o->out, '}');
}

/* One counter sample: {"ph":"C","name":N,"pid":P,"ts":T,"args":{"value":V}} */
static void j_counter(void *ctx, long long pid, const char *name, long long ts, double v)
{
	struct json_out *o = ctx;
	json_t *n = json_string(name);

	sep(o);
	sonde_strbuf__adds(o->out, "{\"ph\":\"C\",\"name\":");
	view_add_json(o->out, n);
	json_decref(n);
	sonde_strbuf__addf(o->out, ",\"pid\":%lld,\"ts\":", pid);
	view_add_us(o->out, ts);
	sonde_strbuf__addf(o->out, ",\"args\":{\"value\":%.17g}}", v);
}

int sonde_view__timeline(const struct sonde_profile *const *p, size_t n, struct sonde_strbuf *out)
{
	struct json_out o = { out, true };
	const struct sink k = { j_name, j_span, j_counter, &o };
	bool any = false;
	size_t i;
	int rc = one_run(p, n);

	struct placing pc;
	bool ranked;
	char why[320];

	if (rc)
		return rc;
	ranked = place_ranks(p, n, &pc);
	sonde_strbuf__adds(out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
	for (i = 0; i < n && rc != -ENOMEM; i++) {
		const struct view_place *pl = ranked ? &pc.pl[i] : NULL;
		struct placed x = { &k, pl };
		const struct sink kp = { p_name, p_span, p_counter, &x };

		rc = sonde_profile__part(p[i], "trace") ? view_trace_events(p[i], pl, out, &o.first)
							: walk(p[i], pl ? &kp : &k);
		if (!rc)
			any = true;
	}
	if (ranked)
		placing_free(&pc);
	if (rc == -ENOMEM)
		return rc;
	if (!any)
		return -EINVAL;
	sonde_strbuf__adds(out, "\n]");
	if (sonde_view__timeline_alignment(p, n, why, sizeof(why)) > 0) {
		json_t *w = json_string(why);

		sonde_strbuf__adds(out, ",\"otherData\":{\"clock_alignment\":");
		view_add_json(out, w);
		json_decref(w);
		sonde_strbuf__addch(out, '}');
	}
	return sonde_strbuf__adds(out, "}\n");
}

int sonde_view__perfetto(const struct sonde_profile *p, struct sonde_strbuf *out)
{
	return sonde_view__timeline(&p, 1, out);
}

/* ---- the SVG of the HTML report ---------------------------------------------------------- */

#define SVG_COLS	800 /* pixel columns of the time axis */
#define SVG_NAMES	255 /* span names a lane's column can index (unsigned char, 0: none) */
#define SVG_OTHER_FUNCS "(other functions)"
#define LANE_H		18
#define LABEL_W		220

struct lane {
	char name[128];
	long long pid, tid;
	bool counter;
	/* spans: the state covering most of each column; counters: the column's last value */
	unsigned char state[SVG_COLS]; /* 0: none, else 1 + index into names */
	double cover[SVG_COLS];	       /* spans: how much of the column the drawn state covers */
	double value[SVG_COLS];	       /* counters: NAN where none */
	double lo, hi;
};

struct svg_out {
	struct lane *l;
	size_t n, cap;
	/* span names: states, "run N" folded to "run", functions; past the
	   table's end, functions fold into one name */
	char names[SVG_NAMES][48];
	bool func[SVG_NAMES];
	size_t nnames;
	double t0, t1;	/* the axis, ns */
	bool measuring; /* first pass: find t0 and t1 */
	int err;
};

static struct lane *lane_of(struct svg_out *o, long long pid, long long tid, const char *name,
			    bool counter)
{
	size_t i;

	for (i = 0; i < o->n; i++)
		if (o->l[i].pid == pid && o->l[i].tid == tid && o->l[i].counter == counter &&
		    (!counter || !strcmp(o->l[i].name, name)))
			return &o->l[i];
	if (sonde_grow((void **)&o->l, &o->cap, o->n + 1, sizeof(*o->l))) {
		o->err = -ENOMEM;
		return NULL;
	}
	memset(&o->l[o->n], 0, sizeof(o->l[o->n]));
	o->l[o->n].pid = pid;
	o->l[o->n].tid = tid;
	o->l[o->n].counter = counter;
	o->l[o->n].lo = INFINITY;
	o->l[o->n].hi = -INFINITY;
	for (i = 0; i < SVG_COLS; i++)
		o->l[o->n].value[i] = NAN;
	snprintf(o->l[o->n].name, sizeof(o->l[o->n].name), "%s", name);
	return &o->l[o->n++];
}

/* In doubles: a profile is anyone's file, and its times may be anything. */
static void extend(struct svg_out *o, double a, double b)
{
	if (a < o->t0)
		o->t0 = a;
	if (b > o->t1)
		o->t1 = b;
}

static int col_of(const struct svg_out *o, double t)
{
	double x = (t - o->t0) * SVG_COLS / (o->t1 - o->t0 + 1);

	return !(x >= 0) ? 0 : x >= SVG_COLS ? SVG_COLS - 1 : (int)x;
}

static void s_name(void *ctx, long long pid, long long tid, const char *name)
{
	struct svg_out *o = ctx;
	struct lane *l;

	if (o->measuring || !tid)
		return;
	l = lane_of(o, pid, tid, name, false);
	if (l)
		snprintf(l->name, sizeof(l->name), "%s", name);
}

/*
 * The index of a span name, added at first sight. States and runs always find
 * a place; functions fill the table but its last 16 places, and past that
 * fold into one name. o->nnames: no place (never, with fewer than 16 states).
 */
static size_t name_of(struct svg_out *o, const char *name, bool func)
{
	size_t k;

	for (k = 0; k < o->nnames && strcmp(o->names[k], name); k++)
		;
	if (k < o->nnames)
		return k;
	if (func && o->nnames >= SVG_NAMES - 16 && strcmp(name, SVG_OTHER_FUNCS))
		return name_of(o, SVG_OTHER_FUNCS, true);
	if (o->nnames >= SVG_NAMES)
		return o->nnames;
	snprintf(o->names[k], sizeof(o->names[0]), "%s", name);
	o->func[k] = func;
	return o->nnames++;
}

static void s_span(void *ctx, long long pid, long long tid, const char *name, const char *cat,
		   long long ts, long long dur, int cpu)
{
	struct svg_out *o = ctx;
	double span = (double)(o->t1 - o->t0 + 1) / SVG_COLS;
	struct lane *l;
	size_t k;
	int c, c1;

	(void)cpu;
	if (o->measuring) {
		extend(o, (double)ts, (double)ts + (double)dur);
		return;
	}
	if (!strcmp(cat, "run"))
		name = "run";
	k = name_of(o, name, !strcmp(cat, "function"));
	l = lane_of(o, pid, tid, !strcmp(cat, "run") ? "runs" : name, false);
	if (!l || k >= o->nnames)
		return;
	c1 = col_of(o, (double)ts + (double)dur);
	for (c = col_of(o, (double)ts); c <= c1; c++) {
		double a = o->t0 + c * span, b = a + span, end = (double)ts + (double)dur;
		double cov = (end < b ? end : b) - ((double)ts > a ? (double)ts : a);

		if (cov > l->cover[c]) { /* the state that covers most of the column */
			l->cover[c] = cov;
			l->state[c] = (unsigned char)(k + 1);
		}
	}
}

static void s_counter(void *ctx, long long pid, const char *name, long long ts, double v)
{
	struct svg_out *o = ctx;
	struct lane *l;

	if (o->measuring) {
		extend(o, (double)ts, (double)ts);
		return;
	}
	l = lane_of(o, pid, 0, name, true);
	if (!l || !isfinite(v))
		return;
	l->value[col_of(o, (double)ts)] = v;
	if (v < l->lo)
		l->lo = v;
	if (v > l->hi)
		l->hi = v;
}

static bool lane_shown(const struct lane *l)
{
	int c;

	if (l->counter)
		return l->hi != 0 || l->lo != 0;
	for (c = 0; c < SVG_COLS; c++)
		if (l->state[c])
			return true;
	return false;
}

/* A function's colour: a warm hue from its name, as flame graphs draw them. */
static void func_colour(const char *name, char *buf, size_t len)
{
	unsigned h = 2166136261u;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	snprintf(buf, len, "hsl(%u,%u%%,%u%%)", h % 50, 60 + (h >> 8) % 30, 50 + (h >> 16) % 15);
}

/* Colours of the states (as Perfetto's), and of anything else. */
static const char *state_colour(const char *name)
{
	static const struct {
		const char *name, *colour;
	} c[] = { { "running", "#2e9e4f" }, { "runnable", "#f0a030" }, { "sleeping", "#c8d0e0" },
		  { "blocked", "#d0453a" }, { "run", "#5b7fd6" },      { "unknown", "#999" } };
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (!strcmp(c[i].name, name))
			return c[i].colour;
	return "#888";
}

int sonde_view__timeline_svg(const struct sonde_profile *const *p, size_t n,
			     struct sonde_strbuf *out)
{
	struct svg_out o = { .t0 = INFINITY, .t1 = -INFINITY, .measuring = true };
	const struct sink k = { s_name, s_span, s_counter, &o };
	size_t i, drawn = 0;
	int rc = one_run(p, n), pass, y;
	char a[32], b[32];

	struct placing pc;
	bool ranked;

	if (rc)
		return rc;
	ranked = place_ranks(p, n, &pc);
	for (pass = 0; pass < 2; pass++) {
		o.measuring = pass == 0;
		for (i = 0; i < n; i++) {
			struct placed x = { &k, ranked ? &pc.pl[i] : NULL };
			const struct sink kp = { p_name, p_span, p_counter, &x };

			walk(p[i], ranked ? &kp : &k);
		}
		if (!(o.t1 > o.t0) || !isfinite(o.t1 - o.t0)) {
			if (ranked)
				placing_free(&pc);
			return -EINVAL;
		}
	}
	if (ranked)
		placing_free(&pc);
	if (o.err) {
		free(o.l);
		return o.err;
	}
	/* only lanes with something to see: a counter that never moves from 0, or a
	   thread's call depth it never reached, is left out */
	for (i = 0; i < o.n; i++)
		if (lane_shown(&o.l[i]))
			drawn++;
	sonde_strbuf__addf(out,
			   "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" "
			   "width=\"%d\" height=\"%zu\" font-family=\"sans-serif\" "
			   "font-size=\"11\">\n",
			   LABEL_W + SVG_COLS + 110, drawn * (LANE_H + 4) + 40);
	sonde_strbuf__addf(out, "<text x=\"%d\" y=\"12\">%s</text>", LABEL_W,
			   sonde_format__duration(o.t0, a, sizeof(a)));
	sonde_strbuf__addf(out, "<text x=\"%d\" y=\"12\" text-anchor=\"end\">%s</text>\n",
			   LABEL_W + SVG_COLS, sonde_format__duration(o.t1, b, sizeof(b)));
	y = 20;
	for (i = 0; i < o.n; i++) {
		struct lane *l = &o.l[i];
		int c;

		if (!lane_shown(l))
			continue;
		sonde_strbuf__addf(out, "<g class=\"lane\"><title>");
		sonde_view__escape(out, l->name);
		sonde_strbuf__addf(out, "</title><text x=\"0\" y=\"%d\">", y + LANE_H - 5);
		sonde_view__escape(out, l->name);
		sonde_strbuf__adds(out, "</text>");
		if (l->counter) { /* a line, scaled to the lane, its peak said */
			double range = l->hi > l->lo ? l->hi - l->lo : 1;
			bool pen = false;

			sonde_strbuf__adds(out, "<path fill=\"none\" stroke=\"#5b7fd6\" d=\"");
			for (c = 0; c < SVG_COLS; c++) {
				if (isnan(l->value[c]))
					continue;
				sonde_strbuf__addf(out, "%s%d %.1f", pen ? " L" : "M", LABEL_W + c,
						   y + LANE_H - 2 -
							   (l->value[c] - l->lo) / range *
								   (LANE_H - 4));
				pen = true;
			}
			sonde_strbuf__addf(
				out, "\"/><text x=\"%d\" y=\"%d\" fill=\"#666\">max %.4g</text>",
				LABEL_W + SVG_COLS + 4, y + LANE_H - 5, l->hi);
		} else { /* runs of columns in one state, one rect each */
			for (c = 0; c < SVG_COLS;) {
				int e = c;

				while (e + 1 < SVG_COLS && l->state[e + 1] == l->state[c])
					e++;
				if (l->state[c]) {
					const char *sn = o.names[l->state[c] - 1];
					char fc[32];

					if (o.func[l->state[c] - 1])
						func_colour(sn, fc, sizeof(fc));
					sonde_strbuf__addf(
						out,
						"<rect x=\"%d\" y=\"%d\" width=\"%d\" "
						"height=\"%d\" fill=\"%s\"><title>",
						LABEL_W + c, y, e - c + 1, LANE_H - 2,
						o.func[l->state[c] - 1] ? fc : state_colour(sn));
					sonde_view__escape(out, sn);
					sonde_strbuf__adds(out, "</title></rect>");
				}
				c = e + 1;
			}
		}
		sonde_strbuf__adds(out, "</g>\n");
		y += LANE_H + 4;
	}
	/* the legend of the states drawn (a function's name is its rectangle's title) */
	for (i = 0, drawn = 0; i < o.nnames; i++) {
		if (o.func[i])
			continue;
		sonde_strbuf__addf(
			out,
			"<rect x=\"%zu\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>"
			"<text x=\"%zu\" y=\"%d\">",
			LABEL_W + drawn * 90, y + 4, state_colour(o.names[i]),
			LABEL_W + drawn * 90 + 14, y + 13);
		sonde_view__escape(out, o.names[i]);
		sonde_strbuf__adds(out, "</text>");
		drawn++;
	}
	free(o.l);
	return sonde_strbuf__adds(out, "\n</svg>\n") ? -ENOMEM : 0;
}
