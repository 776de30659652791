/*
 * collector.c - `sonde collect counters`: perf stat's job on the counter
 * service. Each run of the target is a process dispatch (its threads and
 * children included, counting from its exec); with -a the CPUs are agents
 * counted system-wide over the run instead. -I samples either every
 * INTERVAL ms. Regions the target marks with sonde_region_begin/end come
 * back through a shared-memory ring as dispatches of their own.
 *
 * Resources: one per counter or metric, dispatch kind (run, interval,
 * region) and dimension instance; uid = the counter's name, fixed properties
 * kind, dispatch, region, unit and the dimension positions (cpu, core,
 * package, numa) when counted per CPU; columns amount (null when the value
 * could not be measured), order (the run), timestamp and duration (ns),
 * running_fraction (time_running / time_enabled, events only).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sonde/clock.h>
#include <sonde/collector.h>
#include <sonde/ring.h>
#include "../../grow.h"
#include "../../ticker.h"
#include "../../engines/preload/rt-host.h"
#include "../../engines/counters/service.h"

enum dkind { D_RUN, D_INTERVAL, D_REGION };
static const char *const dkind_name[] = { "run", "interval", "region" };

struct cval {
	uint32_t counter;
	int pos[4]; /* cpu, core, package, numa; -1: spans it */
	double value;
	double fraction; /* running / enabled; NaN for derived */
	uint32_t flags;
};

struct cdisp {
	enum dkind kind;
	unsigned run;
	uint64_t start, end;
	char name[64];
	size_t first, n; /* into vals */
};

/* One agent's sample; its values are agent_vals[first, first + n). */
struct asample {
	uint64_t index; /* the sample within the run */
	uint32_t agent;
	uint64_t start, end;
	size_t first, n;
};

struct counters_state {
	/* what was asked for */
	uint32_t shown[CNT_MAX_REQUEST], ids[CNT_MAX_REQUEST];
	size_t nshown, nids;
	unsigned flags;
	bool all_cpus, per_cpu;
	uint64_t malformed_chunks; /* region records the target wrote over: skipped */
	double interval_ms;
	struct sonde_counters_config **cfg; /* one per agent with -a, else one */
	size_t ncfg;
	/* one run */
	struct sonde_counters_context *ctx;
	struct sonde_counters_buffer *buf;
	struct sonde_process_dispatch *proc;
	struct ticker ticker;	 /* -I: the interval sampler */
	struct ticker_late late; /* its lateness, all runs */
	pthread_mutex_t lock;
	unsigned run;
	uint64_t run_start;
	/* agent samples of the run: folded into dispatches at the stop */
	struct asample *as;
	size_t nas, ascap;
	struct cval *agent_vals;
	size_t nagent_vals, agent_cap;
	/* everything recorded */
	struct cdisp *d;
	size_t nd, dcap;
	struct cval *vals;
	size_t nvals, vcap;
	unsigned regions;
	uint64_t unread; /* -I readings that failed: merged into the next interval */
	struct rt_host host;
	bool host_started;
	char *events_env;
	pthread_t prober; /* probe_all, until join_probes */
	bool probing;
};

static int perf_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int v = 2;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 2;
		fclose(f);
	}
	return v;
}

static const char *const default_events =
	"task-clock,context-switches,cpu-migrations,page-faults,cycles,instructions,branches,"
	"branch-misses,CPU_UTIL,IPC";

/*
 * Whether each counter of the request opens here, asked on a thread of its own
 * while the session makes the target. A task's first perf event, when none is
 * open on the machine, waits for the kernel to switch its scheduler hooks on (a
 * grace period: 8-36 ms in a VM; lib/perf-warm.c starts it as the session
 * does). perf stat waits at the target's own open; probed in line, sonde
 * waited before it had even started the target, then started it.
 */
static void *probe_all(void *arg)
{
	struct counters_state *st = arg;
	size_t i;

	for (i = 0; i < st->nids; i++) {
		struct cnt_entry *e = cnt_catalog__get(st->ids[i]);

		if (e)
			cnt_entry__supported(e);
	}
	return NULL;
}

static void join_probes(struct counters_state *st)
{
	if (st->probing)
		pthread_join(st->prober, NULL);
	st->probing = false;
}

/* What needs the probes' answers, once, at the first run's start. */
static int counters_ready(struct sonde_collection *c, struct counters_state *st)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT, names = SONDE_STRBUF_INIT;
	size_t i;
	int rc;

	join_probes(st);
	if (st->cfg)
		return 0;
	st->cfg = calloc(st->ncfg, sizeof(*st->cfg));
	if (!st->cfg)
		return -ENOMEM;
	for (i = 0; i < st->ncfg; i++) {
		rc = sonde_counters_config__new((uint32_t)i, st->ids, st->nids, st->flags, &err,
						&st->cfg[i]);
		if (rc) {
			sonde_collection__fail(c, "%s", err.buf);
			sonde_strbuf__release(&err);
			return rc == -E2BIG ? -EINVAL : rc;
		}
	}
	for (i = 0; i < st->nshown; i++) {
		struct sonde_counter_info info;

		sonde_counters__info(0, st->shown[i], &info);
		if (!info.supported)
			sonde_strbuf__addf(&names, "%s%s", names.len ? ", " : "", info.name);
	}
	if (names.len)
		sonde_collection__note(
			c, "not supported here: %s (why: stats.counters.not_supported)", names.buf);
	sonde_strbuf__release(&names);
	return 0;
}

static bool shown(const struct counters_state *st, uint32_t id)
{
	size_t i;

	for (i = 0; i < st->nshown; i++)
		if (st->shown[i] == id)
			return true;
	return false;
}

static int push_disp(struct counters_state *st, enum dkind k, uint64_t start, uint64_t end,
		     const char *name)
{
	struct cdisp *d;

	if (sonde_grow((void **)&st->d, &st->dcap, st->nd + 1, sizeof(*st->d)))
		return -ENOMEM;
	d = &st->d[st->nd++];
	d->kind = k;
	d->run = st->run;
	d->start = start;
	d->end = end;
	snprintf(d->name, sizeof(d->name), "%s", name ? name : "");
	d->first = st->nvals;
	d->n = 0;
	return 0;
}

static int push_val(struct cval **arr, size_t *n, size_t *cap, const struct cval *v)
{
	if (sonde_grow((void **)arr, cap, *n + 1, sizeof(**arr)))
		return -ENOMEM;
	(*arr)[(*n)++] = *v;
	return 0;
}

/* A value of the dispatch pushed last. */
static void push_disp_val(struct counters_state *st, const struct cval *v)
{
	if (st->nd && push_val(&st->vals, &st->nvals, &st->vcap, v) == 0)
		st->d[st->nd - 1].n++;
}

static void to_cval(const struct sonde_counters_value *v, struct cval *o)
{
	static const enum sonde_dimension dims[4] = { SONDE_DIM_CPU, SONDE_DIM_CORE,
						      SONDE_DIM_PACKAGE, SONDE_DIM_NUMA };
	size_t pos;
	int i;

	o->counter = sonde_instance__counter(v->instance_id);
	for (i = 0; i < 4; i++)
		o->pos[i] =
			sonde_instance__dimension(v->instance_id, dims[i], &pos) ? -1 : (int)pos;
	o->value = v->value;
	o->fraction = v->time_enabled ? (double)v->time_running / (double)v->time_enabled : NAN;
	o->flags = v->flags;
}

/* Records of process dispatches and agent samples (buffer callback). */
static void take_records(struct sonde_counters_buffer *b,
			 const struct sonde_counters_header *const *recs, size_t n,
			 uint64_t dropped, void *user)
{
	struct counters_state *st = user;
	size_t i;

	(void)b;
	(void)dropped;
	pthread_mutex_lock(&st->lock);
	for (i = 0; i < n; i++) {
		const struct sonde_counters_dispatch *h = (const void *)recs[i];
		struct cval v;

		if (recs[i]->kind == SONDE_RECORD_DISPATCH) {
			push_disp(st, st->interval_ms > 0 ? D_INTERVAL : D_RUN, h->start_ns,
				  h->end_ns, h->name);
		} else if (recs[i]->kind == SONDE_RECORD_VALUE) {
			const struct sonde_counters_value *x = (const void *)recs[i];

			to_cval(x, &v);
			if (st->all_cpus) {
				if (st->nas && push_val(&st->agent_vals, &st->nagent_vals,
							&st->agent_cap, &v) == 0)
					st->as[st->nas - 1].n++;
			} else if (shown(st, v.counter)) {
				push_disp_val(st, &v);
			}
		} else if (recs[i]->kind == SONDE_RECORD_AGENT &&
			   !sonde_grow((void **)&st->as, &st->ascap, st->nas + 1,
				       sizeof(*st->as))) {
			st->as[st->nas++] =
				(struct asample){ h->correlation_id, h->agent,	      h->start_ns,
						  h->end_ns,	     st->nagent_vals, 0 };
		}
	}
	pthread_mutex_unlock(&st->lock);
}

/*
 * Agent samples of one run become interval/run dispatches: per CPU as they
 * are (--per-cpu), or summed over the CPUs with the derived metrics
 * evaluated over the per-CPU values (so reduce() sees every CPU).
 */
static int fold_sample(struct counters_state *st, size_t s, bool last, struct expr_env *env)
{
	size_t na, i, j, k, q;
	const struct sonde_counters_config *cfg = st->cfg[0];
	double *vals, *frac;
	bool *valid, pushed = false;
	uint32_t *flags;
	uint64_t dur = 0;

	sonde_counters__agents(&na);
	vals = calloc(cfg->nin * na, sizeof(double));
	valid = calloc(cfg->nin, sizeof(bool));
	frac = calloc(cfg->nin, sizeof(double));
	flags = calloc(cfg->nin, sizeof(uint32_t));
	if (!vals || !valid || !frac || !flags) {
		free(vals);
		free(valid);
		free(frac);
		free(flags);
		return -ENOMEM;
	}
	for (k = 0; k < cfg->nin; k++) {
		valid[k] = true;
		frac[k] = 1;
	}
	for (k = 0; k < cfg->nin * na; k++)
		vals[k] = NAN;
	for (i = 0; i < st->nas; i++) {
		const struct asample *a = &st->as[i];

		if (a->index != s)
			continue;
		if (!pushed) {
			dur = a->end - a->start;
			push_disp(st, st->interval_ms > 0 ? D_INTERVAL : D_RUN, a->start, a->end,
				  "");
			pushed = true;
		}
		for (j = a->first; j < a->first + a->n; j++) {
			const struct cval *v = &st->agent_vals[j];

			if (st->per_cpu) {
				if (shown(st, v->counter))
					push_disp_val(st, v);
				continue;
			}
			for (k = 0; k < cfg->nin && cfg->in[k] != v->counter; k++)
				;
			if (k == cfg->nin || a->agent >= na)
				continue;
			vals[k * na + a->agent] = v->value;
			if (isnan(v->value))
				valid[k] = false;
			if (v->fraction < frac[k])
				frac[k] = v->fraction;
			flags[k] |= v->flags;
		}
	}
	for (q = 0; pushed && !st->per_cpu && q < st->nshown; q++) {
		struct cnt_entry *e = cnt_catalog__get(st->shown[q]);
		struct cval o = { .counter = st->shown[q], .pos = { -1, -1, -1, -1 } };

		if (e->kind == SONDE_COUNTER_DERIVED) {
			struct cnt_reading r = { cfg->in, cfg->nin, na, vals, valid, (double)dur };
			struct expr_error xe = { 0 };
			double out[EXPR_MAX_VEC];
			size_t n;

			env->last_sample = last;
			env->div0_col = 0;
			o.fraction = NAN;
			if (cnt_derive(e, &r, env, out, EXPR_MAX_VEC, &n, &xe) || n != 1) {
				o.value = NAN;
				o.flags = cnt_entry__supported(e) ? SONDE_VALUE_NOT_COUNTED
								  : SONDE_VALUE_NOT_SUPPORTED;
			} else {
				o.value = out[0];
				o.flags = env->div0_col ? SONDE_VALUE_DIV0 : 0;
			}
		} else {
			double sum = 0;
			size_t a;

			for (k = 0; k < cfg->nin && cfg->in[k] != e->id; k++)
				;
			for (a = 0; a < na; a++)
				sum += vals[k * na + a];
			o.value = valid[k] ? sum : NAN;
			o.fraction = frac[k];
			o.flags = flags[k] & (SONDE_VALUE_NOT_SUPPORTED | SONDE_VALUE_SCALED |
					      SONDE_VALUE_NOT_COUNTED);
		}
		push_disp_val(st, &o);
	}
	free(vals);
	free(valid);
	free(frac);
	free(flags);
	return 0;
}

static int fold_agent_samples(struct counters_state *st)
{
	struct expr_env env = { .series = true };
	size_t k, samples = 0, s;
	int rc = 0;

	for (k = 0; k < st->nas; k++)
		if (st->as[k].index + 1 > samples)
			samples = st->as[k].index + 1;
	for (s = 0; s < samples && !rc; s++)
		rc = fold_sample(st, s, s + 1 == samples, &env);
	free(env.accum);
	st->nas = st->nagent_vals = 0;
	return rc;
}

static void pick_config(const struct sonde_dispatch_info *d,
			const struct sonde_counters_config **cfg, void *user)
{
	struct counters_state *st = user;

	(void)d;
	*cfg = st->cfg[0];
}

static void pick_agent_config(struct sonde_counters_context *ctx, uint32_t agent,
			      const struct sonde_counters_config **cfg, void *user)
{
	struct counters_state *st = user;

	(void)ctx;
	*cfg = agent < st->ncfg ? st->cfg[agent] : NULL;
}

static int add_ids(struct sonde_collection *c, struct counters_state *st, const char *list)
{
	char *copy = strdup(list), *tok, *save;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
		uint32_t id;
		size_t i;

		while (*tok == ' ')
			tok++;
		if (sonde_counters__find(tok, &id)) {
			sonde_collection__fail(c,
					       "unknown counter '%s' (see 'sonde counters list'; "
					       "tracepoints are written SYSTEM:NAME)",
					       tok);
			rc = -EINVAL;
			break;
		}
		for (i = 0; i < st->nshown && st->shown[i] != id; i++)
			;
		if (i < st->nshown)
			continue;
		if (st->nshown == CNT_MAX_REQUEST) {
			sonde_collection__fail(c, "more than %d counters", CNT_MAX_REQUEST);
			rc = -E2BIG;
			break;
		}
		st->shown[st->nshown++] = id;
	}
	free(copy);
	return rc;
}

/* The counters of the groups in list (comma-separated), after -e's. */
static int add_groups(struct sonde_collection *c, struct counters_state *st, const char *list)
{
	char *copy = strdup(list), *tok, *save;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
		const struct sonde_counter_group *g;
		size_t k;

		while (*tok == ' ')
			tok++;
		if (sonde_counters__group(tok, &g)) {
			sonde_collection__fail(c,
					       "no counter group '%s' here (sonde counters list "
					       "--groups lists this machine's)",
					       tok);
			rc = -EINVAL;
			break;
		}
		for (k = 0; k < g->n && !rc; k++)
			rc = add_ids(c, st, g->counters[k]);
	}
	free(copy);
	return rc;
}

static int counters_before(struct sonde_collection *c)
{
	struct counters_state *st = calloc(1, sizeof(*st));
	json_t *params = sonde_collection__params(c), *ev = json_object_get(params, "events");
	struct sonde_strbuf err = SONDE_STRBUF_INIT, names = SONDE_STRBUF_INIT;
	const char *defs = sonde_collection__param_str(c, "defs", NULL);
	const char *note;
	size_t i, na;
	int rc = 0;

	if (!st)
		return -ENOMEM;
	pthread_mutex_init(&st->lock, NULL);
	st->host.log_fd = -1;
	sonde_collection__set_priv(c, st);
	if (defs && sonde_counters__load_defs(defs, &err)) {
		sonde_collection__fail(c, "%s", err.buf);
		sonde_strbuf__release(&err);
		return -EINVAL;
	}
	if (cnt_catalog__error()) { /* a bad $SONDE_COUNTER_DEFS */
		sonde_collection__fail(c, "%s", cnt_catalog__error());
		return -EINVAL;
	}
	note = sonde_counters__note();
	st->all_cpus = sonde_collection__param_bool(c, "all-cpus");
	st->per_cpu = sonde_collection__param_bool(c, "per-cpu");
	st->interval_ms = sonde_collection__param_double(c, "interval", 0);
	st->flags = sonde_collection__param_bool(c, "group") ? 0 : SONDE_CONFIG_MULTIPLEX;
	if (st->per_cpu && !st->all_cpus) {
		sonde_collection__fail(c, "--per-cpu needs -a: a process's counts on each CPU do "
					  "not add up to its count (perf refuses -A without -a for "
					  "the same reason); -a --per-cpu gives every CPU's");
		return -EINVAL;
	}
	if (st->all_cpus) {
		/* system-wide counting needs the privilege: say so before running anything */
		struct perf_event_attr attr = { .type = PERF_TYPE_SOFTWARE,
						.size = sizeof(attr),
						.config = PERF_COUNT_SW_CPU_CLOCK,
						.disabled = 1 };
		const struct sonde_agent *ag = sonde_counters__agents(&na);
		int fd = ag ? cnt_perf_open(&attr, -1, ag[0].cpu, -1, PERF_FLAG_FD_CLOEXEC)
			    : -ENODEV;

		if (fd == -EACCES || fd == -EPERM) {
			sonde_collection__fail(
				c,
				"-a counts every CPU system-wide: that needs root or "
				"CAP_PERFMON, or kernel.perf_event_paranoid <= 0 (it is "
				"%d)",
				perf_paranoid());
			return -EPERM;
		}
		if (fd >= 0)
			close(fd);
	}
	if (json_is_array(ev) && json_array_size(ev)) {
		for (i = 0; i < json_array_size(ev) && !rc; i++)
			rc = add_ids(c, st, json_string_value(json_array_get(ev, i)));
	} else if (json_is_string(ev)) {
		rc = add_ids(c, st, json_string_value(ev));
	}
	{
		json_t *gs = json_object_get(params, "metrics");

		for (i = 0; json_is_array(gs) && i < json_array_size(gs) && !rc; i++)
			rc = add_groups(c, st, json_string_value(json_array_get(gs, i)));
		if (json_is_string(gs) && !rc)
			rc = add_groups(c, st, json_string_value(gs));
	}
	if (!rc && !st->nshown) /* neither -e nor -g: perf stat's set */
		rc = add_ids(c, st, default_events);
	if (rc)
		return rc;
	/* the config counts what is shown and every input of it */
	memcpy(st->ids, st->shown, st->nshown * sizeof(uint32_t));
	st->nids = st->nshown;
	for (i = 0; i < st->nshown; i++) {
		struct cnt_entry *e = cnt_catalog__get(st->shown[i]);
		uint32_t in[CNT_MAX_INPUTS];
		size_t n = 0, j, k;

		if (e->kind != SONDE_COUNTER_DERIVED)
			continue;
		cnt_inputs(e, in, &n, CNT_MAX_INPUTS);
		for (j = 0; j < n; j++) {
			for (k = 0; k < st->nids && st->ids[k] != in[j]; k++)
				;
			if (k == st->nids && st->nids < CNT_MAX_REQUEST)
				st->ids[st->nids++] = in[j];
		}
	}
	if (!sonde_counters__agents(&na)) {
		sonde_collection__fail(c, "no CPU found in /sys/devices/system/cpu");
		return -ENODEV;
	}
	/* the base counters of the whole request fit one config (the probes aside) */
	{
		uint32_t in[CNT_MAX_INPUTS];
		size_t nin = 0;

		if (cnt_request_inputs(st->ids, st->nids, in, &nin, &err)) {
			sonde_collection__fail(c, "%s", err.buf);
			sonde_strbuf__release(&err);
			return -EINVAL;
		}
	}
	st->ncfg = st->all_cpus ? na : 1;
	if (note)
		sonde_collection__note(c, "%s", note);
	st->probing = pthread_create(&st->prober, NULL, probe_all, st) == 0;
	sonde_strbuf__reset(&names);
	/* regions: the target's libsonde builds its own context from these */
	{
		const struct rt_host_spec spec = { .collector = "counters",
						   .ring_env = CNT_ENV_RING,
						   .rings = 64,
						   .ring_bytes = 1 << 20 };
		char flags[16];

		for (i = 0; i < st->nshown; i++)
			sonde_strbuf__addf(&names, "%s%s", i ? "," : "",
					   cnt_catalog__get(st->shown[i])->name);
		st->events_env = sonde_strbuf__detach(&names, NULL);
		snprintf(flags, sizeof(flags), "%u", st->flags & SONDE_CONFIG_MULTIPLEX);
		rc = rt_host__start(&st->host, c, &spec);
		if (rc)
			return rc;
		st->host_started = true;
		rc = sonde_collection__setenv(c, CNT_ENV_EVENTS, st->events_env);
		if (!rc)
			rc = sonde_collection__setenv(c, CNT_ENV_FLAGS, flags);
	}
	sonde_strbuf__release(&err);
	return rc;
}

/* One interval sample, on the ticker's thread. */
static void sample_tick(void *arg)
{
	struct counters_state *st = arg;
	int rc = st->proc ? sonde_process_dispatch__sample(st->proc, false)
			  : sonde_counters_context__sample(st->ctx);

	/* nothing is lost: the next reading's interval starts where the last
	   good one ended */
	if (rc)
		st->unread++;
}

static int start_sampling(struct counters_state *st)
{
	st->ticker = (struct ticker){ .fn = sample_tick,
				      .ctx = st,
				      .period_ns = (uint64_t)(st->interval_ms * 1e6) };
	return ticker__start(&st->ticker);
}

static void stop_sampling(struct counters_state *st)
{
	ticker__stop(&st->ticker);
}

static int counters_start(struct sonde_collection *c, pid_t pid)
{
	struct counters_state *st = sonde_collection__priv(c);
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	char *const *argv = sonde_collection__argv(c);
	size_t i;
	int rc;

	rc = counters_ready(c, st);
	if (rc)
		return rc;
	st->run_start = sonde_clock_ns();
	rc = sonde_counters_context__new(&st->ctx);
	if (!rc)
		rc = sonde_counters_buffer__new(st->ctx, 1 << 20, 1 << 19, SONDE_BUFFER_LOSSLESS,
						take_records, st, &st->buf);
	for (i = 0; !rc && st->all_cpus && i < st->ncfg; i++)
		rc = sonde_counters__configure_agent(st->ctx, st->buf, (uint32_t)i,
						     pick_agent_config, st);
	if (!rc && !st->all_cpus)
		rc = sonde_counters__configure_dispatch(st->ctx, st->buf, pick_config, st);
	if (!rc && st->all_cpus)
		rc = sonde_counters_context__start(st->ctx, &err);
	else if (!rc)
		rc = sonde_counters__dispatch_process(st->ctx, pid, argv[0], true, &err, &st->proc);
	if (rc) {
		if (rc == -EACCES || rc == -EPERM)
			sonde_collection__fail(c, "%s", err.buf);
		else if (err.len)
			sonde_collection__fail(c, "%s", err.buf);
		sonde_strbuf__release(&err);
		return rc == -EACCES ? -EPERM : rc;
	}
	sonde_strbuf__release(&err);
	if (st->interval_ms > 0)
		start_sampling(st);
	return 0;
}

/* Region dispatches from the run's part of the ring log (times: CLOCK_MONOTONIC). */
static int take_region(void *ctx, const struct sonde_ring_chunk *ch, const uint32_t *rec)
{
	struct counters_state *st = ctx;
	const struct sonde_counters_dispatch *h;
	const struct sonde_counters_value *v;
	uint32_t len, i;

	(void)ch;
	if (!rec) { /* the rest of a chunk the target wrote over: its regions are not counted */
		st->malformed_chunks++;
		return 0;
	}
	h = (const void *)(rec + 2);
	v = (const void *)(h + 1);
	len = SONDE_RING_REC_LEN(rec[0]);
	if (SONDE_RING_REC_TYPE(rec[0]) != CNT_REC_REGION)
		return 0;
	if (len < 8 + sizeof(*h) || len < 8 + sizeof(*h) + (uint64_t)h->nvalues * sizeof(*v) ||
	    h->h.size != sizeof(*h))
		return -EINVAL;
	if (push_disp(st, D_REGION, h->start_ns, h->end_ns, h->name))
		return -ENOMEM;
	st->regions++;
	for (i = 0; i < h->nvalues; i++) {
		struct cval o;

		to_cval(&v[i], &o);
		push_disp_val(st, &o);
	}
	return 0;
}

static int analyse_regions(void *ctx, const void *log, size_t len, const struct sonde_run_info *ri)
{
	(void)ri;
	return sonde_ring_log__walk(log, len, take_region, ctx);
}

static int counters_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	struct counters_state *st = sonde_collection__priv(c);
	size_t nd0 = st->nd, nv0 = st->nvals;
	int rc = 0;

	st->run = ri->index + 1;
	stop_sampling(st);
	if (!ri->warmup && !ri->interrupted) /* as its readings: only a recorded run's */
		ticker__add_late(&st->late, &st->ticker);
	if (st->proc) {
		rc = sonde_process_dispatch__sample(st->proc, true);
		sonde_process_dispatch__free(st->proc);
		st->proc = NULL;
	} else if (st->ctx) {
		rc = sonde_counters_context__stop(st->ctx);
	}
	if (st->ctx) {
		sonde_counters_buffer__flush(st->buf);
		sonde_collection__dropped(c, sonde_counters_buffer__dropped(st->buf));
		sonde_counters_context__free(st->ctx);
		st->ctx = NULL;
	}
	if (st->all_cpus && !rc)
		rc = fold_agent_samples(st);
	st->nas = st->nagent_vals = 0;
	if (rc) {
		sonde_collection__fail(c, "cannot read the counters: %s", strerror(-rc));
		return rc;
	}
	if (st->host_started)
		rc = rt_host__stop(&st->host, c, ri, analyse_regions, st);
	if (ri->warmup || ri->interrupted) {
		st->nd = nd0; /* not recorded */
		st->nvals = nv0;
	}
	return rc;
}

static void set_run(struct counters_state *st, size_t from)
{
	size_t i;

	for (i = from; i < st->nd; i++)
		if (!st->d[i].run)
			st->d[i].run = st->run;
}

/* Append name to a JSON array of strings unless it is there already. */
static void add_unique(json_t *arr, const char *name)
{
	size_t i;

	for (i = 0; i < json_array_size(arr); i++)
		if (!strcmp(json_string_value(json_array_get(arr, i)), name))
			return;
	json_array_append_new(arr, json_string(name));
}

static json_t *num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static int counters_after(struct sonde_collection *c, struct sonde_profile *p)
{
	struct counters_state *st = sonde_collection__priv(c);
	json_t *stats = json_object(), *mux = json_object(), *unsup = json_object(),
	       *notc = json_array(), *div0 = json_array(), *events = json_array();
	uint64_t t0 = sonde_collection__t0_ns(c);
	static const char *const dim_names[4] = { "cpu", "core", "package", "numa" };
	size_t i, j, q;

	if (st->malformed_chunks)
		sonde_collection__note(c,
				       "%llu chunks of region records were written over by the "
				       "target: the regions in them are not counted",
				       (unsigned long long)st->malformed_chunks);
	if (st->unread)
		sonde_collection__note(
			c,
			"%llu interval readings could not be taken (a group read fails "
			"while a process of the target is exiting, and still did "
			"after 64 tries): each such interval is merged into the next, "
			"whose duration covers both (stats.counters.unread_intervals)",
			(unsigned long long)st->unread);
	join_probes(st);
	set_run(st, 0);
	for (q = 0; q < st->nshown; q++) {
		struct sonde_counter_info info;

		sonde_counters__info(0, st->shown[q], &info);
		json_array_append_new(events, json_string(info.name));
		if (!info.supported)
			json_object_set_new(unsup, info.name,
					    json_string(info.why ? info.why : "not supported"));
	}
	for (i = 0; i < st->nd; i++) {
		const struct cdisp *d = &st->d[i];

		for (j = d->first; j < d->first + d->n; j++) {
			const struct cval *v = &st->vals[j];
			struct sonde_counter_info info;
			json_t *extra = json_object();
			bool derived;
			long res;
			int k;

			if (sonde_counters__info(0, v->counter, &info)) {
				json_decref(extra);
				continue;
			}
			derived = info.kind == SONDE_COUNTER_DERIVED;
			json_object_set_new(extra, "dispatch", json_string(dkind_name[d->kind]));
			if (d->kind == D_REGION)
				json_object_set_new(extra, "region", json_string(d->name));
			json_object_set_new(extra, "unit", json_string(info.unit ? info.unit : ""));
			for (k = 0; k < 4; k++)
				if (v->pos[k] >= 0)
					json_object_set_new(extra, dim_names[k],
							    json_integer(v->pos[k]));
			if (!info.supported)
				json_object_set_new(extra, "why",
						    json_string(info.why ? info.why : ""));
			res = sonde_profile__resource(
				p, info.name,
				derived					? "metric"
				: info.kind == SONDE_COUNTER_TRACEPOINT ? "tracepoint"
				: info.kind == SONDE_COUNTER_HARDWARE	? "hardware"
									: "software",
				info.name, extra);
			json_decref(extra);
			if (res < 0)
				continue;
			sonde_profile__append(
				p, res, "amount",
				v->flags & (SONDE_VALUE_NOT_SUPPORTED | SONDE_VALUE_NOT_COUNTED)
					? json_null()
					: num_or_null(v->value));
			sonde_profile__append(p, res, "order", json_integer(d->run));
			sonde_profile__append(
				p, res, "timestamp",
				json_integer((json_int_t)(d->start > t0 ? d->start - t0 : 0)));
			sonde_profile__append(p, res, "duration",
					      json_integer((json_int_t)(d->end - d->start)));
			sonde_profile__append(p, res, "running_fraction",
					      derived ? json_null() : num_or_null(v->fraction));
			if ((v->flags & SONDE_VALUE_SCALED) && !derived) {
				json_t *m = json_object_get(mux, info.name);

				if (!m || json_real_value(m) > v->fraction)
					json_object_set_new(mux, info.name, json_real(v->fraction));
			}
			if ((v->flags & SONDE_VALUE_NOT_COUNTED) && info.supported)
				add_unique(notc, info.name);
			if (v->flags & SONDE_VALUE_DIV0)
				add_unique(div0, info.name);
		}
	}
	json_object_set_new(stats, "events", events);
	json_object_set_new(stats, "mode", json_string(st->all_cpus ? "system-wide" : "process"));
	json_object_set_new(stats, "per_cpu", json_boolean(st->per_cpu));
	if (st->interval_ms > 0) {
		json_object_set_new(stats, "interval_ms", json_real(st->interval_ms));
		json_object_set_new(stats, "unread_intervals",
				    json_integer((json_int_t)st->unread));
		ticker__report_late(&st->late, (uint64_t)(st->interval_ms * 1e6), "counters", stats,
				    c);
	}
	json_object_set_new(stats, "multiplexed", mux);
	json_object_set_new(stats, "not_supported", unsup);
	json_object_set_new(stats, "not_counted", notc);
	json_object_set_new(stats, "division_by_zero", div0);
	json_object_set_new(stats, "regions", json_integer(st->regions));
	json_object_set_new(stats, "arch", json_string(cnt_arch()));
	sonde_profile__set(sonde_profile__stats(p), "counters", stats);
	return 0;
}

static void counters_cleanup(struct sonde_collection *c)
{
	struct counters_state *st = sonde_collection__priv(c);
	size_t i;

	if (!st)
		return;
	join_probes(st);
	stop_sampling(st);
	sonde_process_dispatch__free(st->proc);
	sonde_counters_context__free(st->ctx);
	for (i = 0; st->cfg && i < st->ncfg; i++)
		sonde_counters_config__free(st->cfg[i]);
	free(st->cfg);
	if (st->host_started)
		rt_host__release(&st->host);
	free(st->d);
	free(st->vals);
	free(st->agent_vals);
	free(st->as);
	free(st->events_env);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

static const char *const counters_units[] = { "amount", "the counter's unit", "duration",
					      "ns",	"timestamp",	      "ns",
					      NULL };

static const struct sonde_option counters_options[] = {
	{ SONDE_OPT_LIST, 'e', "events", NULL, "LIST",
	  "counters and metrics to count, comma-separated (default: perf stat's set and "
	  "CPU_UTIL, IPC); see 'sonde counters list'" },
	{ SONDE_OPT_LIST, 'g', "metrics", NULL, "GROUP",
	  "count a group of counters and its derived metrics (cpu, sched, memory, ipc, "
	  "branches, caches, tlb, topdown; comma-separated, after -e's; see 'sonde counters "
	  "list --groups')" },
	{ SONDE_OPT_FLAG, 'a', "all-cpus", NULL, NULL,
	  "count every CPU system-wide over each run (needs root or CAP_PERFMON)" },
	{ SONDE_OPT_FLAG, 0, "per-cpu", NULL, NULL, "one value per CPU instead of a total" },
	{ SONDE_OPT_DURATION, 'I', "interval", NULL, NULL,
	  "sample every DURATION (500ms, 1s; a plain number is milliseconds, as perf's): a time "
	  "series instead of one total",
	  10, 3.6e6, .unit_s = 1e-3 },
	{ SONDE_OPT_FLAG, 0, "group", NULL, NULL,
	  "count the hardware counters together or fail (default: let them take turns, scaled)" },
	{ SONDE_OPT_STRING, 0, "defs", NULL, "FILE",
	  "more counter definitions (counter_defs.yaml format)" },
	{ .type = SONDE_OPT_END },
};

const struct sonde_collector sonde_collector_counters = {
	.abi = SONDE_COLLECTOR_ABI,
	.name = "counters",
	.summary = "software, tracepoint and hardware counters with derived metrics",
	.profile_type = "counters",
	.units = counters_units,
	.options = counters_options,
	.flags = SONDE_COLLECTOR_EXCLUSIVE | SONDE_COLLECTOR_NEEDS_BARRIER |
		 SONDE_COLLECTOR_ONE_RUN | SONDE_COLLECTOR_PERF_TASK | SONDE_COLLECTOR_ORDER_IS_RUN,
	.before = counters_before,
	.start = counters_start,
	.stop = counters_stop,
	.after = counters_after,
	.cleanup = counters_cleanup,
};
