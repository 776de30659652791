/*
 * check-perun.c - Perun's model and outlier methods of sonde check.
 *
 * linear-regression and polynomial-regression compare the best and the linear
 * regression models of a resource on 1000 points of the baseline's range: the
 * verdict comes from the best models' mean relative difference, the kind of
 * change (constant, linear, quadratic) from the linear models' difference.
 * local-statistics compares eight statistics of the best models' values on 20
 * windows of those points. exclusive-time-outliers looks for outliers among
 * the changes of every function's exclusive time. The definitions and their
 * differences from Perun's are in docs/analysis.md.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/format.h>
#include <sonde/postprocess.h>
#include <sonde/stats.h>
#include "check-methods.h"
#include "grow.h"

#define POINTS	       1000   /* Perun's samples of a model's range */
#define WINDOW	       50     /* points in a local-statistics window (5 % of them) */
#define POLY_THRESHOLD 1e8    /* Perun: residual sum of squares that fits */
#define MIN_R_SQUARE   0.15   /* Perun: both models fit at least this well */
#define MZS_CORRECTION 0.6745 /* modified z-score: MAD to a normal sigma */
#define MZS_CUTOFF     3.5    /* Perun's outlier cut-offs */
#define IQR_CUTOFF     1.5
#define STDDEV_CUTOFF  2.0

static double b1_of(const struct sonde_fit *f)
{
	return isnan(f->b[1]) ? 0 : f->b[1]; /* the constant model's slope is 0 */
}

/* Residual sum of squares of the least-squares polynomial of degree d (<= 4). */
static double poly_rss(const double *x, const double *y, size_t n, int d)
{
	double a[5][6] = { { 0 } }, c[5], lo = x[0], hi = x[n - 1], mid, half, rss = 0;
	int i, j, k, m = d + 1;
	size_t p;

	/* x mapped onto [-1, 1]: the same fit, better conditioned */
	mid = (hi + lo) / 2;
	half = hi > lo ? (hi - lo) / 2 : 1;
	for (p = 0; p < n; p++) {
		double t = (x[p] - mid) / half, pw[10];

		pw[0] = 1;
		for (k = 1; k < 2 * m - 1; k++)
			pw[k] = pw[k - 1] * t;
		for (i = 0; i < m; i++) {
			for (j = 0; j < m; j++)
				a[i][j] += pw[i + j];
			a[i][m] += pw[i] * y[p];
		}
	}
	for (i = 0; i < m; i++) { /* Gaussian elimination, partial pivoting */
		int piv = i;

		for (k = i + 1; k < m; k++)
			if (fabs(a[k][i]) > fabs(a[piv][i]))
				piv = k;
		if (a[piv][i] == 0)
			return NAN;
		for (j = 0; j <= m; j++) {
			double s = a[i][j];

			a[i][j] = a[piv][j];
			a[piv][j] = s;
		}
		for (k = i + 1; k < m; k++) {
			double f = a[k][i] / a[i][i];

			for (j = i; j <= m; j++)
				a[k][j] -= f * a[i][j];
		}
	}
	for (i = m - 1; i >= 0; i--) {
		c[i] = a[i][m];
		for (j = i + 1; j < m; j++)
			c[i] -= a[i][j] * c[j];
		c[i] /= a[i][i];
	}
	for (p = 0; p < n; p++) {
		double t = (x[p] - mid) / half, v = 0;

		for (i = m - 1; i >= 0; i--)
			v = v * t + c[i];
		rss += (y[p] - v) * (y[p] - v);
	}
	return rss;
}

/* Perun's polynomial regression: the lowest degree whose fit leaves < 1e8. */
static const char *poly_change(const double *x, const double *e, size_t n)
{
	static const char *const names[] = { "constant", "linear", "quadratic" };
	double rss = poly_rss(x, e, n, 0);
	int degree;

	for (degree = 0; degree < 3; degree++) {
		if (rss < POLY_THRESHOLD)
			break;
		rss = poly_rss(x, e, n, degree + 1);
	}
	return degree < 3 ? names[degree] : "unknown";
}

/* Perun's fast check: the best model of the best models' difference. */
static const char *fast_change(const double *x, const double *e, size_t n)
{
	struct sonde_fit *fits = NULL;
	const char *kind = "unknown";
	size_t nf = 0, best = 0;

	if (sonde_regression__run(SONDE_REGRESSION_FULL, SONDE_MODELS_ALL, 0, x, e, n, &fits, &nf,
				  &best) == 0 &&
	    nf)
		kind = sonde_model_names[fits[best].kind];
	free(fits);
	return kind;
}

static bool in_relative(double v, double range, double rate)
{
	return fabs((1 - rate) * range) <= fabs(v) && fabs(v) <= fabs((1 + rate) * range);
}

/*
 * Perun's linear regression: the linear models' difference e(x) regressed on
 * x; a flat difference that is the constant terms' is a constant change, a
 * slope that is the slopes' difference a linear one; otherwise a quadratic fit
 * of e that beats the linear one, else e's best model.
 */
static const char *linear_change(const double *x, const double *e, size_t n, double threshold,
				 const struct sonde_fit *bb, const struct sonde_fit *bt,
				 const struct sonde_fit *lb, const struct sonde_fit *lt)
{
	struct sonde_fit line;
	double diff_b0 = bt->b[0] - bb->b[0], slope, intercept, r2, sst = 0, mean = 0, quad_r2;
	size_t i;
	const char *kind = NULL;
	bool flat_base = bb->kind == SONDE_MODEL_LINEAR || bb->kind == SONDE_MODEL_CONSTANT;

	if (sonde_regression__fit(SONDE_MODEL_LINEAR, x, e, n, &line))
		return "unknown";
	for (i = 0; i < n; i++)
		mean += e[i] / (double)n;
	slope = b1_of(&line);
	intercept = line.b[0];
	r2 = line.r_square;
	if (fabs(slope) <= fabs(threshold) && in_relative(diff_b0, intercept, 0.05) &&
	    (!flat_base || fabs(diff_b0 - intercept) < 1e-12))
		kind = "constant";
	else if (in_relative(b1_of(lt) - b1_of(lb), slope, 0.3) && r2 > 0.95)
		kind = "linear";
	/* Perun's quadratic model has a linear term: b0 + b1 x + b2 x². A difference
	   that is constant to within rounding (two models that differ by their
	   intercept) has no shape for R² to judge: its spread is noise. */
	for (i = 0; i < n; i++)
		sst += (e[i] - mean) * (e[i] - mean);
	if (sqrt(sst / (double)n) > 1e-9 * fabs(mean)) {
		quad_r2 = sst > 0 ? 1 - poly_rss(x, e, n, 2) / sst : 1;
		if (quad_r2 > 0.90 && fabs(quad_r2 - r2) > 0.01)
			kind = "quadratic";
	}
	return kind ? kind : fast_change(x, e, n);
}

static void grid(double lo, double hi, double *x, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		x[i] = n > 1 ? lo + (hi - lo) * (double)i / (double)(n - 1) : lo;
}

int check_regression(const struct sonde_profile *pb, const struct sonde_profile *pt,
		     const struct side *s, enum sonde_check_method m, struct sonde_check_result *r)
{
	struct sonde_fit bb, bt, lb, lt;
	double *x, *yb, *yt, *e, *d, sum = 0, rel = 0, mb = 0, mt = 0, max_err = -INFINITY;
	char detail[160];
	size_t i;

	if (sonde_postprocess__best(pb, s->uid, s->type, s->msubtype, &bb) ||
	    sonde_postprocess__best(pt, s->uid, s->type, s->msubtype, &bt) ||
	    sonde_postprocess__model(pb, s->uid, s->type, s->msubtype, SONDE_MODEL_LINEAR, &lb) ||
	    sonde_postprocess__model(pt, s->uid, s->type, s->msubtype, SONDE_MODEL_LINEAR, &lt))
		return -ENOENT;
	x = calloc(5 * POINTS, sizeof(double));
	if (!x)
		return -ENOMEM;
	yb = x + POINTS;
	yt = yb + POINTS;
	e = yt + POINTS;
	d = e + POINTS;
	grid(bb.x_start, bb.x_end, x, POINTS);
	for (i = 0; i < POINTS; i++) {
		yb[i] = sonde_fit__eval(&bb, x[i]);
		yt[i] = sonde_fit__eval(&bt, x[i]);
		d[i] = yt[i] - yb[i];
		e[i] = sonde_fit__eval(&lt, x[i]) - sonde_fit__eval(&lb, x[i]);
		sum += d[i];
		rel += yb[i] != 0 && isfinite(d[i] / yb[i]) ? d[i] / yb[i] : 0;
		max_err = fmax(max_err, d[i]);
		mb += yb[i] / POINTS;
		mt += yt[i] / POINTS;
	}
	rel = rel / POINTS;
	r->method = sonde_check_methods[m];
	r->baseline = mb;
	r->target = mt;
	r->change = rel;
	r->confidence = fmin(bb.r_square, lt.r_square);
	if (fabs(bt.b[0] - bb.b[0]) <= fabs(0.05 * bb.b[0]) &&
	    fabs(b1_of(&bt) - b1_of(&bb)) <= fabs(0.05 * b1_of(&bb))) {
		r->verdict = SONDE_NO_CHANGE;
		snprintf(detail, sizeof(detail), "%s -> %s", sonde_model_names[bb.kind],
			 sonde_model_names[bt.kind]);
	} else {
		const char *kind =
			m == SONDE_CHECK_POLYNOMIAL_REGRESSION ? poly_change(x, e, POINTS)
			: m == SONDE_CHECK_FAST_CHECK
				? fast_change(x, d, POINTS)
				: linear_change(x, e, POINTS, 0.05 * max_err, &bb, &bt, &lb, &lt);

		/* Perun: the sign of the summed difference, severity from 25 % of the
		   mean relative difference (the two may disagree: a maybe says which
		   way the sum leans, as Perun's maybe degradation or optimization) */
		if (sum > 0)
			r->verdict = rel > 0.25 ? SONDE_DEGRADATION : SONDE_MAYBE;
		else
			r->verdict = rel < -0.25 ? SONDE_OPTIMIZATION : SONDE_MAYBE;
		snprintf(detail, sizeof(detail), "%s -> %s, %s change%s",
			 sonde_model_names[bb.kind], sonde_model_names[bt.kind], kind,
			 r->verdict != SONDE_MAYBE ? ""
			 : sum > 0		   ? ", maybe a degradation"
						   : ", maybe an optimization");
	}
	r->detail = strdup(detail);
	free(x);
	return 0;
}

/* Perun's local statistics of one window: integral, mean, median, max, min, sum, q1, q3. */
#define NSTATS 8
static void window_stats(const struct sonde_fit *f, const double *x, double *y, size_t n,
			 double out[NSTATS])
{
	double sum = 0;
	size_t i;

	for (i = 0; i < n; i++)
		sum += y[i];
	sonde_stats__sort(y, n);
	out[0] = sonde_fit__integral(f, x[0], x[n - 1]);
	out[1] = sum / (double)n;
	out[2] = sonde_stats__quantile_sorted(y, n, 0.5);
	out[3] = y[n - 1];
	out[4] = y[0];
	out[5] = sum;
	out[6] = sonde_stats__quantile_sorted(y, n, 0.25);
	out[7] = sonde_stats__quantile_sorted(y, n, 0.75);
}

/* Perun's classify_change: within `none` no change, within `some` maybe, else a change. */
static enum sonde_verdict classify_perun(double v, double none, double some)
{
	if (!(fabs(v) > none))
		return SONDE_NO_CHANGE;
	if (fabs(v) <= some)
		return SONDE_MAYBE;
	return v < 0 ? SONDE_OPTIMIZATION : SONDE_DEGRADATION;
}

int check_local(const struct sonde_profile *pb, const struct sonde_profile *pt,
		const struct side *s, struct sonde_check_result *r)
{
	struct sonde_fit fb, ft;
	double x[POINTS], yb[WINDOW], yt[WINDOW], sb[NSTATS], st[NSTATS], mb = 0, mt = 0;
	double total = 0;
	size_t w, i, k, windows = POINTS / WINDOW, changed = 0, maybe = 0;
	char detail[160];

	if (sonde_postprocess__best(pb, s->uid, s->type, s->msubtype, &fb) ||
	    sonde_postprocess__best(pt, s->uid, s->type, s->msubtype, &ft))
		return -ENOENT;
	r->method = "local-statistics";
	r->confidence = fmin(fb.r_square, ft.r_square);
	if (!(r->confidence >= MIN_R_SQUARE)) { /* Perun leaves such pairs out */
		r->verdict = SONDE_NOT_ENOUGH_DATA;
		r->detail = strdup("a model fits with R² under 0.15");
		return 0;
	}
	grid(fb.x_start, fb.x_end, x, POINTS);
	for (w = 0; w < windows; w++) {
		const double *xw = x + w * WINDOW;
		double score = 0, rel = 0;

		for (i = 0; i < WINDOW; i++) {
			yb[i] = sonde_fit__eval(&fb, xw[i]);
			yt[i] = sonde_fit__eval(&ft, xw[i]);
			mb += yb[i] / POINTS;
			mt += yt[i] / POINTS;
		}
		window_stats(&fb, xw, yb, WINDOW, sb);
		window_stats(&ft, xw, yt, WINDOW, st);
		for (k = 0; k < NSTATS; k++) {
			double d = sb[k] != 0 ? (st[k] - sb[k]) / sb[k] : 0;

			d = isfinite(d) ? d : 0;
			rel += d;
			/* each statistic scores 0, 0.5 or 1 toward a change, signed */
			if (fabs(d) > 0.25)
				score += d < 0 ? -1 : 1;
			else if (fabs(d) > 0.10)
				score += d < 0 ? -0.5 : 0.5;
		}
		switch (classify_perun(score, 0.2 * NSTATS, 0.5 * NSTATS)) {
		case SONDE_NO_CHANGE:
			break;
		case SONDE_MAYBE:
			maybe++;
			break;
		default:
			changed++;
		}
		total += rel / NSTATS;
	}
	r->baseline = mb;
	r->target = mt;
	r->change = total / (double)windows;
	r->verdict = classify_perun(r->change, 0.10, 0.25);
	snprintf(detail, sizeof(detail), "%s -> %s, %zu of %zu intervals changed, %zu maybe",
		 sonde_model_names[fb.kind], sonde_model_names[ft.kind], changed, windows, maybe);
	r->detail = strdup(detail);
	return 0;
}

/* The modified z-score of d: 0.6745 (d - median) / MAD, infinite where MAD is 0. */
static double mzs(double d, double median, double mad)
{
	if (mad > 0)
		return MZS_CORRECTION * fabs(d - median) / mad;
	return d == median ? 0 : INFINITY;
}

/* One result per location: the exclusive time of all its functions (by sonde's thresholds). */
static int eto_totals(struct sonde_check_result **res, size_t *n, size_t *cap,
		      const struct check_eto_row *rows, size_t k,
		      const struct sonde_check_options *o)
{
	size_t i, j;

	for (i = 0; i < k; i++) {
		const char *loc = rows[i].location ? rows[i].location : "(unknown object)";
		struct sonde_check_result *t;
		double b = 0, tt = 0, a;
		char detail[96];
		bool seen = false;

		for (j = 0; j < i && !seen; j++)
			seen = !strcmp(loc,
				       rows[j].location ? rows[j].location : "(unknown object)");
		if (seen)
			continue;
		for (j = i; j < k; j++) {
			const struct sonde_check_result *x = &(*res)[rows[j].row];

			if (strcmp(loc, rows[j].location ? rows[j].location : "(unknown object)"))
				continue;
			b += isnan(x->baseline) ? 0 : x->baseline;
			tt += isnan(x->target) ? 0 : x->target;
		}
		if (sonde_grow((void **)res, cap, *n + 1, sizeof(**res)))
			return -ENOMEM;
		t = &(*res)[(*n)++];
		memset(t, 0, sizeof(*t));
		t->uid = strdup(loc);
		t->subtype = strdup("self, all functions");
		t->unit = strdup("ns");
		t->method = "exclusive-time-outliers";
		t->baseline = b;
		t->target = tt;
		t->change = b > 0 ? (tt - b) / b : NAN;
		t->ratio_low = t->ratio_high = t->confidence = t->p = t->effect = NAN;
		a = fabs(t->change);
		/* Perun calls any total change a total degradation or optimization;
		   sonde holds it to its thresholds */
		if (isnan(a) || a < o->threshold)
			t->verdict = SONDE_NO_CHANGE;
		else if (t->change > 0)
			t->verdict = a >= o->severe ? SONDE_SEVERE_DEGRADATION : SONDE_DEGRADATION;
		else
			t->verdict =
				a >= o->severe ? SONDE_SEVERE_OPTIMIZATION : SONDE_OPTIMIZATION;
		snprintf(detail, sizeof(detail), "the total of the object's functions");
		t->detail = strdup(detail);
		if (!t->uid || !t->subtype || !t->unit || !t->detail)
			return -ENOMEM;
	}
	return 0;
}

int check_eto(struct sonde_check_result **res, size_t *n, size_t *cap,
	      const struct check_eto_row *rows, size_t k, const struct sonde_check_options *o)
{
	struct sonde_check_result *r = *res;
	double *d, *sorted, median, mad, q1, q3, iqr, total = 0, sd = 0, mean = 0;
	size_t i, m = 0;
	int rc;

	if (!k)
		return 0;
	d = calloc(2 * k, sizeof(double));
	if (!d)
		return -ENOMEM;
	sorted = d + k;
	for (i = 0; i < k; i++) {
		struct sonde_check_result *x = &r[rows[i].row];
		double b = isnan(x->baseline) ? 0 : x->baseline,
		       t = isnan(x->target) ? 0 : x->target;

		d[i] = t - b;
		total += t; /* Perun: shares of the target's exclusive time */
	}
	memcpy(sorted, d, k * sizeof(double));
	sonde_stats__sort(sorted, k);
	median = sonde_stats__quantile_sorted(sorted, k, 0.5);
	q1 = sonde_stats__quantile_sorted(sorted, k, 0.25);
	q3 = sonde_stats__quantile_sorted(sorted, k, 0.75);
	iqr = q3 - q1;
	for (i = 0; i < k; i++)
		sorted[i] = fabs(d[i] - median);
	sonde_stats__sort(sorted, k);
	mad = sonde_stats__quantile_sorted(sorted, k, 0.5);
	/* the standard deviation of the changes that are not outliers already */
	for (i = 0; i < k; i++) {
		bool iqr_out = d[i] < q1 - IQR_CUTOFF * iqr || d[i] > q3 + IQR_CUTOFF * iqr;

		if (mzs(d[i], median, mad) <= MZS_CUTOFF && !iqr_out) {
			sorted[m++] = d[i];
			mean += d[i];
		}
	}
	mean = m ? mean / (double)m : 0;
	for (i = 0; i < m; i++)
		sd += (sorted[i] - mean) * (sorted[i] - mean);
	sd = m > 1 ? sqrt(sd / (double)(m - 1)) : NAN;
	for (i = 0; i < k; i++) {
		struct sonde_check_result *x = &r[rows[i].row];
		double z = mzs(d[i], median, mad), multiple = NAN;
		double share = total > 0 ? 100 * d[i] / total : NAN;
		const char *by;
		char detail[192], v[64];
		bool up = d[i] > 0;

		if (d[i] < q1 - IQR_CUTOFF * iqr)
			multiple = -(d[i] - q1) / iqr;
		else if (d[i] > q3 + IQR_CUTOFF * iqr)
			multiple = (d[i] - q3) / iqr;
		if (z > MZS_CUTOFF) {
			x->verdict = up ? SONDE_SEVERE_DEGRADATION : SONDE_SEVERE_OPTIMIZATION;
			by = "IQR multiple";
			if (isnan(multiple)) {
				by = "modified z-score";
				multiple = z;
			}
		} else if (!isnan(multiple)) {
			x->verdict = up ? SONDE_DEGRADATION : SONDE_OPTIMIZATION;
			by = "IQR multiple";
		} else {
			multiple = sd > 0 ? d[i] / sd : NAN;
			by = "stddev multiple";
			x->verdict = fabs(multiple) > STDDEV_CUTOFF ? SONDE_MAYBE : SONDE_NO_CHANGE;
		}
		if (isnan(x->baseline))
			x->verdict = SONDE_NOT_IN_BASELINE;
		else if (isnan(x->target))
			x->verdict = SONDE_NOT_IN_TARGET;
		else if (o->cutoff > 0 && !(fabs(share) >= o->cutoff))
			x->verdict = SONDE_NO_CHANGE; /* Perun's degradation.cutoff */
		x->change = x->baseline > 0 ? d[i] / x->baseline : NAN;
		x->effect = multiple;
		snprintf(detail, sizeof(detail),
			 "%s%s, %+.2f %% of the target's exclusive time, %s %.2f",
			 d[i] < 0 ? "-" : "+",
			 sonde_format__value(fabs(d[i]), x->unit, v, sizeof(v)), share, by,
			 multiple);
		free(x->detail);
		x->detail = strdup(detail);
		if (!x->detail) {
			free(d);
			return -ENOMEM;
		}
	}
	free(d);
	rc = eto_totals(res, n, cap, rows, k, o);
	return rc;
}
