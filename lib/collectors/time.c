/*
 * time.c - the time collector: per run wall, user and sys time, max RSS, page
 * faults, context switches and exit status, from the runner's clock and wait4's
 * rusage. No barrier, no preload: it costs nothing beyond the spawn and the wait.
 * The target is started through sonde-spawn (SONDE_COLLECTOR_OWN_RSS) so that its
 * max RSS is its own; without that program max-rss is not recorded, and said.
 *
 * Resources: one per (metric, workload), uid = the command line, with columns
 * amount, order (1-based run number), timestamp (ns since the collection began)
 * and, for numeric parameter values, structure-unit-size.
 *
 * --clock picks the clock of `real`: monotonic (the runner's), boottime or
 * realtime (the monotonic interval plus what that clock gained on it during
 * the run: a suspend, a step of the wall clock), or process-cpu (the target's
 * user + sys). --time-unit is how views print times; the profile keeps ns.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <sonde/collector.h>
#include <sonde/format.h>
#include <sonde/stats.h>
#include <sonde/warning.h>

enum metric {
	M_REAL,
	M_USER,
	M_SYS,
	M_MAXRSS,
	M_MINFLT,
	M_MAJFLT,
	M_NVCSW,
	M_NIVCSW,
	M_EXIT,
	M__COUNT,
};

static const struct {
	const char *type, *subtype;
} metrics[M__COUNT] = {
	[M_REAL] = { "time", "real" },
	[M_USER] = { "time", "user" },
	[M_SYS] = { "time", "sys" },
	[M_MAXRSS] = { "memory", "max-rss" },
	[M_MINFLT] = { "count", "minor-faults" },
	[M_MAJFLT] = { "count", "major-faults" },
	[M_NVCSW] = { "count", "voluntary-switches" },
	[M_NIVCSW] = { "count", "involuntary-switches" },
	[M_EXIT] = { "status", "exit-status" },
};

struct sample {
	long long v[M__COUNT];
	unsigned long long ts; /* ns since the collection began */
	unsigned order;	       /* 1-based within its workload */
	const char *workload;
	double size;
	int has_size;
};

struct time_state {
	struct sample *s;
	size_t n, cap;
	unsigned order;
	const char *last_workload;
	bool rss_inherited; /* a run's ru_maxrss may be sonde's: max-rss is not recorded */
	const char *clock;  /* of real: monotonic, boottime, realtime, process-cpu */
	clockid_t alt;	    /* boottime, realtime: the clock read against monotonic */
	long long off0;	    /* alt - monotonic at the run's start */
};

static const char *const clocks[] = { "monotonic", "boottime", "realtime", "process-cpu", NULL };
static const char *const time_units_shown[] = { "ns", "us", "ms", "s", NULL };

/* How far a clock is ahead of CLOCK_MONOTONIC, in ns (read back to back). */
static long long offset_of(clockid_t id)
{
	struct timespec m, a, m2;

	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(id, &a);
	clock_gettime(CLOCK_MONOTONIC, &m2);
	return (long long)a.tv_sec * 1000000000LL + a.tv_nsec -
	       ((long long)m.tv_sec * 1000000000LL + m.tv_nsec +
		((long long)(m2.tv_sec - m.tv_sec) * 1000000000LL + (m2.tv_nsec - m.tv_nsec)) / 2);
}

static int time_before(struct sonde_collection *c)
{
	struct time_state *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	sonde_collection__set_priv(c, st);
	st->clock = sonde_collection__param_str(c, "clock", "monotonic");
	st->alt = !strcmp(st->clock, "boottime")   ? CLOCK_BOOTTIME
		  : !strcmp(st->clock, "realtime") ? CLOCK_REALTIME
						   : CLOCK_MONOTONIC;
	return 0;
}

static int time_start(struct sonde_collection *c, pid_t pid)
{
	struct time_state *st = sonde_collection__priv(c);

	(void)pid;
	if (st->alt != CLOCK_MONOTONIC)
		st->off0 = offset_of(st->alt);
	return 0;
}

static int time_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	struct time_state *st = sonde_collection__priv(c);
	const struct sonde_run *r = ri->run;
	const struct rusage *ru = &r->rusage;
	struct sample *x;

	if (ri->warmup || ri->interrupted)
		return 0;
	if (st->n == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 64;
		struct sample *ns = realloc(st->s, cap * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		st->s = ns;
		st->cap = cap;
	}
	if (st->last_workload != ri->workload ||
	    (ri->workload && st->last_workload && strcmp(st->last_workload, ri->workload)))
		st->order = 0;
	st->last_workload = ri->workload;
	x = &st->s[st->n++];
	x->v[M_REAL] = (long long)(r->end_ns - r->start_ns);
	if (st->alt != CLOCK_MONOTONIC) /* what that clock gained on monotonic meanwhile */
		x->v[M_REAL] += offset_of(st->alt) - st->off0;
	x->v[M_USER] = (double)sonde_timeval_ns(&ru->ru_utime);
	x->v[M_SYS] = (double)sonde_timeval_ns(&ru->ru_stime);
	if (!strcmp(st->clock, "process-cpu"))
		x->v[M_REAL] = x->v[M_USER] + x->v[M_SYS];
	x->v[M_MAXRSS] = (long long)ru->ru_maxrss * 1024;
	st->rss_inherited |= r->rss_inherited;
	x->v[M_MINFLT] = ru->ru_minflt;
	x->v[M_MAJFLT] = ru->ru_majflt;
	x->v[M_NVCSW] = ru->ru_nvcsw;
	x->v[M_NIVCSW] = ru->ru_nivcsw;
	x->v[M_EXIT] = WIFEXITED(r->status) ? WEXITSTATUS(r->status) : 128 + WTERMSIG(r->status);
	x->ts = r->start_ns - ri->t0_ns;
	x->order = ++st->order;
	x->workload = ri->workload;
	x->size = ri->size;
	x->has_size = ri->has_size;
	return 0;
}

/* Warnings about the real times of one workload (samples [from, to)). 0 or -ENOMEM. */
static int warn_workload(struct sonde_profile *p, const struct sample *s, size_t n)
{
	struct sonde_summary sum;
	struct sonde_bimodal bi;
	char msg[256], a[32], b[32], where[96] = "";
	double *x = malloc(n * sizeof(*x));
	size_t i, outliers;
	int cold = 0, rc = 0;

	if (!x)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		x[i] = (double)s[i].v[M_REAL];
	if (s[0].workload)
		snprintf(where, sizeof(where), " (workload %s)", s[0].workload);
	rc = sonde_stats__summarize(x, n, &sum);
	if (rc == -ENOMEM) {
		free(x);
		return rc;
	}
	if (rc == 0) {
		if (sum.mean < 5e6) {
			snprintf(msg, sizeof(msg), "runs took %s on average%s, under 5 ms",
				 sonde_format__duration(sum.mean, a, sizeof(a)), where);
			rc |= sonde_profile__add_workload_warning(
				p, "short-run", s[0].workload, msg,
				sonde_warning__info(SONDE_WARN_SHORT_RUN)->fix);
		}
		if (n >= 3 &&
		    sonde_stats__modified_z(x[0], sum.median, sum.mad) > SONDE_OUTLIER_Z &&
		    x[0] > 1.5 * sum.median) {
			cold = 1;
			snprintf(msg, sizeof(msg), "the first run took %s, the median is %s%s",
				 sonde_format__duration(x[0], a, sizeof(a)),
				 sonde_format__duration(sum.median, b, sizeof(b)), where);
			rc |= sonde_profile__add_workload_warning(
				p, "cold-first-run", s[0].workload, msg,
				sonde_warning__info(SONDE_WARN_COLD_FIRST_RUN)->fix);
		}
		outliers = sum.outliers - (size_t)cold;
		int two = sonde_stats__bimodal(x, n, &bi);

		rc |= two < 0 ? two : 0;
		if (two == 1) {
			/* two kinds of run, not outliers of one */
			snprintf(msg, sizeof(msg),
				 "the runs form two groups: %zu around %s and %zu around %s%s",
				 bi.n_low, sonde_format__duration(bi.median_low, a, sizeof(a)),
				 bi.n_high, sonde_format__duration(bi.median_high, b, sizeof(b)),
				 where);
			rc |= sonde_profile__add_workload_warning(
				p, sonde_warning__info(SONDE_WARN_BIMODAL)->code, s[0].workload,
				msg, sonde_warning__info(SONDE_WARN_BIMODAL)->fix);
			outliers = 0;
		}
		if (outliers) {
			snprintf(msg, sizeof(msg),
				 "%zu of %zu runs are outliers (more than %.1f MADs from the "
				 "median)%s",
				 outliers, n, SONDE_OUTLIER_Z, where);
			rc |= sonde_profile__add_workload_warning(
				p, "outliers", s[0].workload, msg,
				sonde_warning__info(SONDE_WARN_OUTLIERS)->fix);
		}
	}
	free(x);
	return rc ? -ENOMEM : 0;
}

static int time_after(struct sonde_collection *c, struct sonde_profile *p)
{
	struct time_state *st = sonde_collection__priv(c);
	const char *cmd = json_string_value(json_object_get(sonde_profile__header(p), "cmd"));
	size_t i, from = 0;
	int m, err = 0;

	/* which clock real is on, given or not */
	if (json_is_object(json_object_get(sonde_profile__collector_info(p), "params")))
		err |= json_object_set_new(
			json_object_get(sonde_profile__collector_info(p), "params"), "clock",
			json_string(st->clock));
	if (st->rss_inherited && st->n)
		err |= sonde_profile__add_warning(
			p, sonde_warning__info(SONDE_WARN_RSS_NOT_MEASURED)->code,
			"max-rss <not supported>: sonde-spawn was not found, and a target started "
			"from sonde counts sonde's own memory in its ru_maxrss",
			sonde_warning__info(SONDE_WARN_RSS_NOT_MEASURED)->fix);
	for (i = 0; i < st->n && !err; i++) {
		const struct sample *x = &st->s[i];
		json_t *extra = x->workload ? json_pack("{s:s}", "workload", x->workload) : NULL;

		for (m = 0; m < M__COUNT && !err; m++) {
			long res;

			if (m == M_MAXRSS && st->rss_inherited)
				continue;
			res = sonde_profile__resource(p, cmd, metrics[m].type, metrics[m].subtype,
						      extra);

			if (res < 0) {
				err = (int)res;
				break;
			}
			err |= sonde_profile__append(p, res, "amount", json_integer(x->v[m]));
			err |= sonde_profile__append(p, res, "order", json_integer(x->order));
			err |= sonde_profile__append(p, res, "timestamp",
						     json_integer((json_int_t)x->ts));
			if (x->has_size)
				err |= sonde_profile__append(p, res, "structure-unit-size",
							     json_real(x->size));
		}
		json_decref(extra);
		/* Warnings per workload, once its samples are all seen. */
		if (i + 1 == st->n || st->s[i + 1].order == 1) {
			err |= warn_workload(p, st->s + from, i + 1 - from);
			from = i + 1;
		}
	}
	return err;
}

static void time_cleanup(struct sonde_collection *c)
{
	struct time_state *st = sonde_collection__priv(c);

	if (st)
		free(st->s);
	free(st);
}

static const char *const time_units[] = { "time",   "ns",     "memory", "B", "count",
					  "events", "status", "code",	NULL };

static const struct sonde_option time_options[] = {
	{ SONDE_OPT_CHOICE, 0, "clock", NULL, "CLOCK",
	  "the clock of real: monotonic (default), boottime (counts a suspend), realtime "
	  "(the wall clock, steps included) or process-cpu (the target's user + sys)",
	  0, 0, clocks },
	{ SONDE_OPT_CHOICE, 0, "time-unit", NULL, "UNIT",
	  "print times in ns, us, ms or s (the profile keeps ns)", 0, 0, time_units_shown },
	{ .type = SONDE_OPT_END },
};

const struct sonde_collector sonde_collector_time = {
	.abi = SONDE_COLLECTOR_ABI,
	.name = "time",
	.summary = "wall, user and sys time, max RSS, faults and context switches per run",
	.profile_type = "time",
	.units = time_units,
	.options = time_options,
	.flags = SONDE_COLLECTOR_EXCLUSIVE | SONDE_COLLECTOR_QUIET_TARGET | SONDE_COLLECTOR_OWN_RSS,
	.before = time_before,
	.start = time_start,
	.stop = time_stop,
	.after = time_after,
	.cleanup = time_cleanup,
};
