/*
 * check.c - degradation checks between a baseline and a target profile.
 *
 * Resources are matched by uid, type, subtype and workload. With repeated
 * measurements on both sides a two-sample test decides (Welch's t-test by
 * default, or Mann-Whitney U); the relative change and the confidence interval
 * of the ratio are those of the means (delta method on the log of the ratio).
 * Profiles with regression models can be compared by Perun's best-model-order
 * equality or integral comparison, and any two profiles by Perun's average
 * amount threshold.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/check.h>
#include <sonde/postprocess.h>
#include <sonde/stats.h>
#include "check-methods.h"
#include "grow.h"
#include "strmap.h"

const char *const sonde_verdict_names[] = {
	"no change",	      "maybe",	       "degradation",
	"severe degradation", "optimization",  "severe optimization",
	"not in baseline",    "not in target", "not enough data",
};

const char *const sonde_check_methods[] = {
	"auto",
	"welch",
	"mann-whitney",
	"average-amount",
	"best-model-order",
	"integral",
	"linear-regression",
	"polynomial-regression",
	"local-statistics",
	"exclusive-time-outliers",
	"fast-check",
	NULL,
};

bool sonde_verdict__is_degradation(enum sonde_verdict v)
{
	return v == SONDE_DEGRADATION || v == SONDE_SEVERE_DEGRADATION;
}

struct sides {
	struct side *s;
	size_t n, cap;
	struct sonde_strmap index; /* key -> position */
	double all;		   /* sampled profiles: their samples */
};

static void sides_release(struct sides *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		free(s->s[i].key);
		free(s->s[i].uid);
		free(s->s[i].type);
		free(s->s[i].subtype);
		free(s->s[i].workload);
		free(s->s[i].msubtype);
		free(s->s[i].location);
		free(s->s[i].v);
	}
	free(s->s);
	sonde_strmap__release(&s->index);
}

static char *dup0(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Resource i's key: uid, type, subtype s and workload, and its uid's text. */
static int key_of(const struct sonde_profile *p, size_t i, const char *s, struct sonde_strbuf *uid,
		  struct sonde_strbuf *key)
{
	const char *t = sonde_profile__fixed_string(p, i, "type");
	const char *w = sonde_profile__fixed_string(p, i, "workload");

	sonde_strbuf__reset(uid);
	sonde_strbuf__reset(key);
	if (sonde_profile__uid_text(p, i, uid))
		return -ENOMEM;
	return sonde_strbuf__addf(key, "%s\x1f%s\x1f%s\x1f%s", uid->buf ? uid->buf : "", t ? t : "",
				  s ? s : "", w ? w : "");
}

/* The side of key, added (with resource i's names and subtype) if new. */
static int side_of(struct sides *out, const char *key, const char *uid,
		   const struct sonde_profile *p, size_t i, const char *subtype, struct side **sp)
{
	bool hit;
	uint64_t *at = sonde_strmap__upserts(&out->index, key, &hit);
	struct side *s;

	if (at && hit) {
		*sp = &out->s[*at];
		return 0;
	}
	if (!at || sonde_grow((void **)&out->s, &out->cap, out->n + 1, sizeof(*out->s)))
		return -ENOMEM;
	*at = out->n;
	s = &out->s[out->n++];
	s->key = strdup(key);
	s->uid = strdup(uid ? uid : "");
	if (!s->key || !s->uid)
		return -ENOMEM;
	s->type = dup0(sonde_profile__fixed_string(p, i, "type"));
	s->subtype = dup0(subtype);
	s->msubtype = dup0(sonde_profile__fixed_string(p, i, "subtype"));
	s->workload = dup0(sonde_profile__fixed_string(p, i, "workload"));
	s->location = dup0(sonde_profile__fixed_string(p, i, "location"));
	*sp = s;
	return 0;
}

static int side_add(struct side *s, double v)
{
	int rc = sonde_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(double));

	if (!rc)
		s->v[s->n++] = v;
	return rc;
}

/* Perun's trace collector was named complexity. */
static const char *collector_of(const struct sonde_profile *p)
{
	const char *n =
		json_string_value(json_object_get(sonde_profile__collector_info(p), "name"));

	return n && !strcmp(n, "complexity") ? "trace" : n;
}

/*
 * The amounts of every resource key. A trace profile's function is judged by
 * its total and self time over the run (the per-call rows are a sample, and a
 * function called once has one): two sides, subtypes "total" and "self".
 */
static int collect(const struct sonde_profile *p, struct sides *out)
{
	size_t n = sonde_profile__resource_count(p), i, j;
	struct sonde_strbuf uid = SONDE_STRBUF_INIT, key = SONDE_STRBUF_INIT;
	const char *coll = collector_of(p);
	bool trace = coll && !strcmp(coll, "trace");
	json_t *tr = json_object_get(sonde_profile__stats(p), "trace");
	double all = (double)json_integer_value(json_object_get(tr, "samples"));
	double weight = json_number_value(json_object_get(tr, "sample_weight_ns"));
	bool sampled = json_is_integer(json_object_get(tr, "samples")) && all > 0 && weight > 0;
	double *amount = NULL, *excl = NULL;
	size_t acap = 0, ecap = 0;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	out->all = sampled ? all : 0;
	for (i = 0; i < n && !rc; i++) {
		const char *sub = sonde_profile__fixed_string(p, i, "subtype");
		struct sonde_scalar total, part;
		struct side *s;
		long m;

		/* names and numbers read on the tape: no resource made into a tree */
		sonde_profile__fixed_member(p, i, "summary", "total", &total);
		if ((sampled || trace) && (total.type == JSON_INTEGER || total.type == JSON_REAL)) {
			static const char *const parts[] = { "total", "self" };

			/* sampled: the function's shares of all the samples' weight */
			for (j = 0; j < 2 && !rc; j++) {
				rc = key_of(p, i, parts[j], &uid, &key);
				if (!rc)
					rc = side_of(out, key.buf, uid.buf, p, i, parts[j], &s);
				if (!rc) {
					sonde_profile__fixed_member(p, i, "summary", parts[j],
								    &part);
					s->all = sampled ? all : 0;
					s->totals = !sampled;
					rc = side_add(s, (part.type == JSON_INTEGER ||
									  part.type == JSON_REAL
								  ? part.d
								  : 0) /
								 (sampled ? weight : 1));
				}
			}
			continue;
		}
		m = sonde_profile__numbers(p, i, "amount", &amount, &acap);
		if (m == -ENOMEM) {
			rc = -ENOMEM;
			break;
		}
		if (trace && m > 0 && !sampled) {
			/* Perun's tracer: a row per call, its exclusive time in a column; a
			   function's total and self time are the sums over its rows (and
			   over its resources: one per thread) */
			long e = sonde_profile__numbers(p, i, "exclusive", &excl, &ecap);

			if (e == -ENOMEM) {
				rc = -ENOMEM;
				break;
			}
			if (e == m) {
				double sum[2] = { 0, 0 };
				static const char *const parts[] = { "total", "self" };

				for (j = 0; j < (size_t)m; j++) {
					sum[0] += isnan(amount[j]) ? 0 : amount[j];
					sum[1] += isnan(excl[j]) ? 0 : excl[j];
				}
				for (j = 0; j < 2 && !rc; j++) {
					rc = key_of(p, i, parts[j], &uid, &key);
					if (!rc)
						rc = side_of(out, key.buf, uid.buf, p, i, parts[j],
							     &s);
					if (rc)
						break;
					s->totals = true;
					if (s->n)
						s->v[0] += sum[j];
					else
						rc = side_add(s, sum[j]);
				}
				continue;
			}
		}
		rc = key_of(p, i, sub, &uid, &key);
		if (!rc)
			rc = side_of(out, key.buf, uid.buf, p, i, sub, &s);
		for (j = 0; !rc && m > 0 && j < (size_t)m; j++)
			if (!isnan(amount[j]))
				rc = side_add(s, amount[j]);
	}
	free(amount);
	free(excl);
	sonde_strbuf__release(&uid);
	sonde_strbuf__release(&key);
	return rc;
}

/* The mean of n values (NaN for none); *var gets their sample variance. */
static double mean_of(const double *v, size_t n, double *var)
{
	double m;

	sonde_stats__mean_var(v, n, &m, var);
	return m;
}

/* A relative change against the thresholds; significant: the data tells it from noise. */
static enum sonde_verdict classify(double change, bool significant,
				   const struct sonde_check_options *o)
{
	double a = fabs(change);

	if (isnan(change) || a < o->threshold)
		return SONDE_NO_CHANGE;
	if (!significant)
		return SONDE_MAYBE;
	if (change > 0)
		return a >= o->severe ? SONDE_SEVERE_DEGRADATION : SONDE_DEGRADATION;
	return a >= o->severe ? SONDE_SEVERE_OPTIMIZATION : SONDE_OPTIMIZATION;
}

static void by_test(const struct side *b, const struct side *t, bool mwu,
		    const struct sonde_check_options *o, struct sonde_check_result *r)
{
	double vb, vt, se, q;
	struct sonde_test test;
	int rc;

	r->method = mwu ? "mann-whitney" : "welch";
	r->baseline = mean_of(b->v, b->n, &vb);
	r->target = mean_of(t->v, t->n, &vt);
	r->change = r->baseline != 0 ? (r->target - r->baseline) / fabs(r->baseline) : NAN;
	rc = mwu ? sonde_stats__mann_whitney(b->v, b->n, t->v, t->n, &test)
		 : sonde_stats__welch(b->v, b->n, t->v, t->n, &test);
	if (rc) {
		/* no test: one side has one sample, or neither side varies; values that
		   never vary are exact, so equal is no change and different is certain */
		if (b->n >= 2 && t->n >= 2 && vb == 0 && vt == 0)
			r->verdict = classify(r->change, true, o);
		else
			r->verdict = SONDE_NOT_ENOUGH_DATA;
		return;
	}
	r->p = test.p;
	r->effect = test.effect;
	r->confidence = 1 - test.p;
	if (r->baseline > 0 && r->target > 0 && b->n > 1 && t->n > 1) {
		double ratio = r->target / r->baseline, df;

		se = sqrt(vt / ((double)t->n * r->target * r->target) +
			  vb / ((double)b->n * r->baseline * r->baseline));
		df = mwu || isnan(test.df) ? (double)(b->n < t->n ? b->n : t->n) - 1 : test.df;
		q = sonde_stats__t_quantile(0.975, df > 1 ? df : 1);
		r->ratio_low = ratio * exp(-q * se);
		r->ratio_high = ratio * exp(q * se);
	}
	r->verdict = classify(r->change, test.p < o->alpha, o);
}

/*
 * A trace function's total or self time, one per side: no test can tell it from
 * noise, so a change under --severe is not enough data (no change only when the
 * two are equal), and from --severe on a severe degradation or optimization.
 */
static void by_totals(const struct side *b, const struct side *t,
		      const struct sonde_check_options *o, struct sonde_check_result *r)
{
	double v;

	r->method = "totals";
	if (!r->unit) /* a function's total and self times are nanoseconds */
		r->unit = strdup("ns");
	r->baseline = mean_of(b->v, b->n, &v);
	r->target = mean_of(t->v, t->n, &v);
	r->change = r->baseline != 0 ? (r->target - r->baseline) / fabs(r->baseline) : NAN;
	if (r->target == r->baseline)
		r->verdict = SONDE_NO_CHANGE; /* the same time to the nanosecond */
	else if (fabs(r->change) < o->severe)
		r->verdict = SONDE_NOT_ENOUGH_DATA; /* within what one run varies by */
	else
		r->verdict = classify(r->change, true, o);
}

/*
 * A sampled function's share of the samples, one profile against the other:
 * the two-proportion z-test with each profile's samples as its trials. A
 * change of less than one point of share is no change, however significant.
 */
static void by_share(const struct side *b, const struct side *t,
		     const struct sonde_check_options *o, struct sonde_check_result *r)
{
	double p1 = b->v[0], p2 = t->v[0], n1 = b->all, n2 = t->all;
	double pool = (p1 * n1 + p2 * n2) / (n1 + n2);
	double se = sqrt(pool * (1 - pool) * (1 / n1 + 1 / n2));

	r->method = "share";
	free(r->unit);
	r->unit = strdup("% of samples");
	r->baseline = 100 * p1;
	r->target = 100 * p2;
	r->change = p1 > 0 ? (p2 - p1) / p1 : NAN;
	if (se > 0) {
		r->p = erfc(fabs(p2 - p1) / se / sqrt(2));
		r->confidence = 1 - r->p;
	}
	if (p1 > 0 && p2 > 0) {
		double lr = sqrt((1 - p1) / (n1 * p1) + (1 - p2) / (n2 * p2));

		r->ratio_low = p2 / p1 * exp(-1.959964 * lr);
		r->ratio_high = p2 / p1 * exp(1.959964 * lr);
	}
	if (fabs(p2 - p1) < 0.01)
		r->verdict = SONDE_NO_CHANGE;
	else
		r->verdict = classify(r->change, se > 0 && r->p < o->alpha, o);
}

static void by_average(const struct side *b, const struct side *t, struct sonde_check_result *r)
{
	double v, ratio;

	r->method = "average-amount";
	r->baseline = mean_of(b->v, b->n, &v);
	r->target = mean_of(t->v, t->n, &v);
	ratio = r->baseline != 0 ? r->target / r->baseline : NAN;
	r->change = ratio - 1;
	/* Perun's thresholds: twice as much is a degradation, half an optimization. */
	if (ratio >= 4)
		r->verdict = SONDE_SEVERE_DEGRADATION;
	else if (ratio >= 2)
		r->verdict = SONDE_DEGRADATION;
	else if (ratio > 0 && ratio <= 0.25)
		r->verdict = SONDE_SEVERE_OPTIMIZATION;
	else if (ratio > 0 && ratio <= 0.5)
		r->verdict = SONDE_OPTIMIZATION;
	else
		r->verdict = SONDE_NO_CHANGE;
}

/* Integral of both models over their common x range (each its own when disjoint). */
static double integral_change(const struct sonde_fit *fb, const struct sonde_fit *ft)
{
	double lo = fmax(fb->x_start, ft->x_start), hi = fmin(fb->x_end, ft->x_end), ib, it;

	if (hi > lo) {
		ib = sonde_fit__integral(fb, lo, hi);
		it = sonde_fit__integral(ft, lo, hi);
	} else {
		ib = sonde_fit__integral(fb, fb->x_start, fb->x_end);
		it = sonde_fit__integral(ft, ft->x_start, ft->x_end);
	}
	return ib != 0 ? (it - ib) / fabs(ib) : NAN;
}

static int by_models(const struct sonde_profile *pb, const struct sonde_profile *pt,
		     const struct side *s, bool order, struct sonde_check_result *r)
{
	struct sonde_fit fb, ft;
	char detail[96];
	double a;

	if (sonde_postprocess__best(pb, s->uid, s->type, s->msubtype, &fb) ||
	    sonde_postprocess__best(pt, s->uid, s->type, s->msubtype, &ft))
		return -ENOENT;
	r->method = order ? "best-model-order" : "integral";
	r->confidence = fmin(fb.r_square, ft.r_square);
	r->change = integral_change(&fb, &ft);
	snprintf(detail, sizeof(detail), "%s -> %s", sonde_model_names[fb.kind],
		 sonde_model_names[ft.kind]);
	r->detail = strdup(detail);
	if (order) {
		int d = (int)ft.kind - (int)fb.kind;

		/* Perun: a change of order counts only when both models fit (R² >= 0.9) */
		if (!(r->confidence >= 0.9))
			d = 0;
		r->verdict = d >= 2    ? SONDE_SEVERE_DEGRADATION
			     : d == 1  ? SONDE_DEGRADATION
			     : d == -1 ? SONDE_OPTIMIZATION
			     : d <= -2 ? SONDE_SEVERE_OPTIMIZATION
				       : SONDE_NO_CHANGE;
		return 0;
	}
	/* Perun's bounds: under 10 % no change, 10-25 % maybe; doubling is severe. */
	a = fabs(r->change);
	if (isnan(a) || a < 0.10)
		r->verdict = SONDE_NO_CHANGE;
	else if (a < 0.25)
		r->verdict = SONDE_MAYBE;
	else if (r->change > 0)
		r->verdict = a >= 1 ? SONDE_SEVERE_DEGRADATION : SONDE_DEGRADATION;
	else
		r->verdict = a >= 0.5 ? SONDE_SEVERE_OPTIMIZATION : SONDE_OPTIMIZATION;
	return 0;
}

static void free_result_names(struct sonde_check_result *r);

static void fill_names(struct sonde_check_result *r, const struct side *s, json_t *units)
{
	r->uid = dup0(s->uid);
	r->type = dup0(s->type);
	r->subtype = dup0(s->subtype);
	r->workload = dup0(s->workload);
	r->unit = dup0(json_string_value(json_object_get(units, s->type ? s->type : "")));
	if (!r->unit) /* a trace's resources are "mixed": their unit is their subtype's */
		r->unit = dup0(
			json_string_value(json_object_get(units, s->subtype ? s->subtype : "")));
	r->baseline = r->target = r->change = NAN;
	r->ratio_low = r->ratio_high = r->confidence = r->p = r->effect = NAN;
	r->verdict = SONDE_NOT_ENOUGH_DATA; /* until a method says otherwise */
}

int sonde_check__compare(const struct sonde_profile *pb, const struct sonde_profile *pt,
			 const struct sonde_check_options *opt, struct sonde_check_result **out,
			 size_t *nout)
{
	struct sonde_check_options o = *opt;
	struct sides b, t;
	struct sonde_check_result *res = NULL;
	json_t *units = json_object_get(sonde_profile__header(pt), "units");
	size_t i, n = 0, cap = 0, neto = 0, eto_cap = 0;
	struct check_eto_row *eto = NULL;
	struct sonde_strmap modelled = SONDE_STRMAP_INIT; /* resources judged by their models */
	struct sonde_strbuf mkey = SONDE_STRBUF_INIT;
	int rc;

	o.alpha = o.alpha > 0 ? o.alpha : 0.05;
	o.threshold = o.threshold > 0 ? o.threshold : 0.05;
	o.severe = o.severe > 0 ? o.severe : 0.25;
	*out = NULL;
	*nout = 0;
	{
		const char *cb = collector_of(pb), *ct = collector_of(pt);

		if (cb && ct && strcmp(cb, ct))
			return -EXDEV;
	}
	rc = collect(pb, &b);
	if (!rc)
		rc = collect(pt, &t);
	else
		memset(&t, 0, sizeof(t));
	for (i = 0; !rc && i < b.n + t.n; i++) {
		const struct side *sb, *st;
		struct sonde_check_result *r;
		uint64_t *hit;
		enum sonde_check_method m = o.method;

		if (i < b.n) {
			sb = &b.s[i];
			hit = sonde_strmap__gets(&t.index, sb->key);
			st = hit ? &t.s[*hit] : NULL;
		} else {
			st = &t.s[i - b.n];
			if (sonde_strmap__gets(&b.index, st->key))
				continue; /* compared with its baseline above */
			sb = NULL;
		}
		/* exclusive-time-outliers judges a function by its exclusive time only */
		if (m == SONDE_CHECK_EXCLUSIVE_TIME_OUTLIERS && (sb ? sb : st)->totals &&
		    strcmp((sb ? sb : st)->subtype, "self"))
			continue;
		rc = sonde_grow((void **)&res, &cap, n + 1, sizeof(*res));
		if (rc)
			break;
		r = &res[n++];
		fill_names(r, sb ? sb : st, units);
		r->n_baseline = sb ? sb->n : 0;
		r->n_target = st ? st->n : 0;
		if ((!sb && b.all > 0 && st->all > 0) || (!st && t.all > 0 && sb->all > 0)) {
			/* sampled: a function no sample saw has a share of 0 */
			static double zero;
			struct side none = { .v = &zero, .n = 1 };

			none.all = sb ? t.all : b.all;
			by_share(sb ? sb : &none, st ? st : &none, &o, r);
			continue;
		}
		if (m == SONDE_CHECK_EXCLUSIVE_TIME_OUTLIERS && (sb ? sb : st)->totals) {
			double v;

			/* judged together once every function is here */
			rc = sonde_grow((void **)&eto, &eto_cap, neto + 1, sizeof(*eto));
			if (rc)
				break;
			eto[neto].row = n - 1;
			eto[neto++].location = (sb ? sb : st)->location;
			r->method = "exclusive-time-outliers";
			if (!r->unit)
				r->unit = strdup("ns");
			if (sb && sb->n)
				r->baseline = mean_of(sb->v, sb->n, &v);
			if (st && st->n)
				r->target = mean_of(st->v, st->n, &v);
			continue;
		}
		if (!sb || !st) {
			double v;

			r->method = "presence";
			r->verdict = sb ? SONDE_NOT_IN_TARGET : SONDE_NOT_IN_BASELINE;
			if (sb && sb->n)
				r->baseline = mean_of(sb->v, sb->n, &v);
			if (st && st->n)
				r->target = mean_of(st->v, st->n, &v);
			continue;
		}
		if (sb->all > 0 && st->all > 0) {
			by_share(sb, st, &o, r);
			continue;
		}
		if (sb->totals && (m == SONDE_CHECK_AUTO || m == SONDE_CHECK_WELCH ||
				   m == SONDE_CHECK_MANN_WHITNEY)) {
			by_totals(sb, st, &o, r);
			continue;
		}
		if (m == SONDE_CHECK_AUTO) {
			struct sonde_fit fb, ft;

			/* models stored on both sides describe the resource best (Perun) */
			if (!sonde_postprocess__best(pb, sb->uid, sb->type, sb->msubtype, &fb) &&
			    !sonde_postprocess__best(pt, sb->uid, sb->type, sb->msubtype, &ft))
				m = fb.kind != ft.kind && fmin(fb.r_square, ft.r_square) >= 0.9
					    ? SONDE_CHECK_BEST_MODEL_ORDER
					    : SONDE_CHECK_INTEGRAL;
			else if (sb->n >= 2 && st->n >= 2)
				m = SONDE_CHECK_WELCH;
			else
				m = SONDE_CHECK_AVERAGE_AMOUNT;
		}
		if (m == SONDE_CHECK_BEST_MODEL_ORDER || m == SONDE_CHECK_INTEGRAL ||
		    m == SONDE_CHECK_LINEAR_REGRESSION || m == SONDE_CHECK_POLYNOMIAL_REGRESSION ||
		    m == SONDE_CHECK_FAST_CHECK || m == SONDE_CHECK_LOCAL_STATISTICS) {
			/* a model is of the resource over all its sizes: one verdict for the
			   resource and metric, not one per size the rows were split by */
			bool seen;

			sonde_strbuf__reset(&mkey);
			rc = sonde_strbuf__addf(&mkey, "%s\x1f%s\x1f%s", sb->uid,
						sb->type ? sb->type : "",
						sb->msubtype ? sb->msubtype : "");
			if (rc || !sonde_strmap__upserts(&modelled, mkey.buf, &seen)) {
				rc = -ENOMEM;
				break;
			}
			if (seen) {
				free_result_names(r);
				n--;
				continue;
			}
			free(r->workload);
			r->workload = NULL;
		}
		switch (m) {
		case SONDE_CHECK_WELCH:
		case SONDE_CHECK_MANN_WHITNEY:
			if (sb->n && st->n)
				by_test(sb, st, m == SONDE_CHECK_MANN_WHITNEY, &o, r);
			else
				r->method = "none";
			break;
		case SONDE_CHECK_BEST_MODEL_ORDER:
		case SONDE_CHECK_INTEGRAL:
			if (by_models(pb, pt, sb, m == SONDE_CHECK_BEST_MODEL_ORDER, r))
				r->method = "none"; /* no models on one side: no verdict */
			break;
		case SONDE_CHECK_LINEAR_REGRESSION:
		case SONDE_CHECK_POLYNOMIAL_REGRESSION:
		case SONDE_CHECK_FAST_CHECK:
			rc = check_regression(pb, pt, sb, m, r);
			if (rc == -ENOENT) {
				rc = 0;
				r->method = "none"; /* no best or linear model on one side */
			}
			break;
		case SONDE_CHECK_LOCAL_STATISTICS:
			rc = check_local(pb, pt, sb, r);
			if (rc == -ENOENT) {
				rc = 0;
				r->method = "none";
			}
			break;
		case SONDE_CHECK_EXCLUSIVE_TIME_OUTLIERS:
			r->method = "none"; /* not a trace profile's function */
			break;
		default:
			if (sb->n && st->n) {
				by_average(sb, st, r);
				/* Perun's average threshold asked for by name keeps its
				   verdict; chosen for want of samples, its "no change" over
				   single values is not one */
				if (o.method == SONDE_CHECK_AUTO && r->verdict == SONDE_NO_CHANGE &&
				    (sb->n < 2 || st->n < 2) && r->target != r->baseline)
					r->verdict = SONDE_NOT_ENOUGH_DATA;
			} else {
				r->method = "none";
				r->verdict = SONDE_NOT_ENOUGH_DATA;
			}
		}
	}
	if (!rc)
		rc = check_eto(&res, &n, &cap, eto, neto, &o);
	sonde_strmap__release(&modelled);
	sonde_strbuf__release(&mkey);
	free(eto);
	sides_release(&b);
	sides_release(&t);
	if (rc) {
		sonde_check__free(res, n);
		return rc;
	}
	*out = res;
	*nout = n;
	return 0;
}

static void free_result_names(struct sonde_check_result *r)
{
	free(r->uid);
	free(r->type);
	free(r->subtype);
	free(r->workload);
	free(r->unit);
	free(r->detail);
	memset(r, 0, sizeof(*r));
}

void sonde_check__free(struct sonde_check_result *r, size_t n)
{
	size_t i;

	for (i = 0; r && i < n; i++)
		free_result_names(&r[i]);
	free(r);
}

size_t sonde_check__pair(const struct sonde_profile *baseline, struct sonde_profile *target)
{
	const char *cmd_a =
		json_string_value(json_object_get(sonde_profile__header(baseline), "cmd"));
	const char *cmd_b =
		json_string_value(json_object_get(sonde_profile__header(target), "cmd"));
	size_t nres = sonde_profile__resource_count(target), n = 0, i;
	json_t *x;

	if (!cmd_a || !cmd_b)
		return 0;
	for (i = 0; i < nres; i++) {
		const char *uid = sonde_profile__fixed_string(target, i, "uid");

		/* the fixed properties' tree, made to be changed */
		if (uid && !strcmp(uid, cmd_b) &&
		    !sonde_profile__resource_at(target, i, NULL, &x, NULL) &&
		    !json_object_set_new(x, "uid", json_string(cmd_a)))
			n++;
	}
	return n;
}
