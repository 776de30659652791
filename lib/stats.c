/*
 * stats.c - summary statistics: mean, sample deviation, median, MAD outliers,
 * and the Student-t confidence interval of the mean.
 *
 * The t quantile is found by bisection on the t distribution's CDF, computed from
 * the regularised incomplete beta function (continued fraction, Lentz's method).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/stats.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void sonde_stats__sort(double *x, size_t n)
{
	qsort(x, n, sizeof(*x), cmp_double);
}

double sonde_stats__quantile_sorted(const double *v, size_t n, double p)
{
	double h, lo;
	size_t i;

	if (n == 0)
		return NAN;
	h = p * (double)(n - 1);
	lo = floor(h);
	i = (size_t)lo;
	return i + 1 < n ? v[i] + (h - lo) * (v[i + 1] - v[i]) : v[n - 1];
}

static double median3(double a, double b, double c)
{
	return a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
}

/*
 * The k-th smallest of x[0..n) in x[k], smaller ones before it, larger after
 * (quickselect, Hoare's partition around a median of three: O(n) where a sort
 * is O(n log n)). After 2 log2(n) rounds what is left of the range is sorted
 * instead, so that no input makes it quadratic.
 */
static void select_kth(double *x, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1, budget = 2;

	for (size_t m = n; m > 1; m >>= 1)
		budget += 2;
	while (hi > lo) {
		size_t i = lo, j = hi;
		double p;

		if (hi - lo < 16 || !budget--) {
			qsort(x + lo, hi - lo + 1, sizeof(*x), cmp_double);
			return;
		}
		p = median3(x[lo], x[lo + (hi - lo) / 2], x[hi]);
		for (;;) {
			double t;

			while (x[i] < p)
				i++;
			while (x[j] > p)
				j--;
			if (i >= j)
				break;
			t = x[i], x[i] = x[j], x[j] = t;
			i++, j--;
		}
		/* x[lo..j] <= p <= x[j+1..hi] */
		if (k <= j)
			hi = j;
		else
			lo = j + 1;
	}
}

double sonde_stats__median_inplace(double *x, size_t n)
{
	double below;

	if (n == 0)
		return NAN;
	select_kth(x, n, n / 2);
	if (n % 2)
		return x[n / 2];
	below = x[0];
	for (size_t i = 1; i < n / 2; i++)
		below = x[i] > below ? x[i] : below;
	return (below + x[n / 2]) / 2;
}

double sonde_stats__modified_z(double v, double median, double mad)
{
	if (mad == 0)
		return v == median ? 0 : (v > median ? INFINITY : -INFINITY);
	return (v - median) / mad;
}

/* Continued fraction of the incomplete beta function. */
static double betacf(double a, double b, double x)
{
	const double tiny = 1e-300;
	double c = 1, d = 1 - (a + b) * x / (a + 1), h;
	int m;

	d = fabs(d) < tiny ? tiny : d;
	d = 1 / d;
	h = d;
	for (m = 1; m <= 300; m++) {
		double m2 = 2.0 * m, aa, del;

		aa = m * (b - m) * x / ((a - 1 + m2) * (a + m2));
		d = 1 + aa * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + aa / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		h *= d * c;
		aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2));
		d = 1 + aa * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + aa / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < 1e-14)
			break;
	}
	return h;
}

/* Regularised incomplete beta I_x(a, b). */
static double ibeta(double a, double b, double x)
{
	double front;
	int sign; /* lgamma_r: lgamma sets the global signgam, a race between threads */

	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	front = exp(lgamma_r(a + b, &sign) - lgamma_r(a, &sign) - lgamma_r(b, &sign) + a * log(x) +
		    b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return front * betacf(a, b, x) / a;
	return 1 - front * betacf(b, a, 1 - x) / b;
}

/* P(T <= t) for t >= 0. */
static double t_cdf(double t, double df)
{
	return 1 - 0.5 * ibeta(df / 2, 0.5, df / (df + t * t));
}

double sonde_stats__t_cdf(double t, double df)
{
	if (isnan(t) || !(df > 0))
		return NAN;
	if (isinf(t))
		return t > 0 ? 1 : 0;
	return t >= 0 ? t_cdf(t, df) : 1 - t_cdf(-t, df);
}

double sonde_stats__f_sf(double f, double d1, double d2)
{
	if (isnan(f) || !(d1 > 0) || !(d2 > 0))
		return NAN;
	if (isinf(f))
		return 0;
	if (f <= 0)
		return 1;
	return ibeta(d2 / 2, d1 / 2, d2 / (d2 + d1 * f));
}

double sonde_stats__normal_cdf(double z)
{
	return 0.5 * erfc(-z / M_SQRT2);
}

void sonde_stats__mean_var(const double *x, size_t n, double *mean, double *var)
{
	double s = 0, ss = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += x[i];
	*mean = n ? s / (double)n : NAN;
	for (i = 0; i < n; i++)
		ss += (x[i] - *mean) * (x[i] - *mean);
	*var = n > 1 ? ss / (double)(n - 1) : NAN;
}

int sonde_stats__welch(const double *a, size_t na, const double *b, size_t nb,
		       struct sonde_test *out)
{
	double ma, va, mb, vb, se2, sp, j;

	if (na < 2 || nb < 2)
		return -EINVAL;
	sonde_stats__mean_var(a, na, &ma, &va);
	sonde_stats__mean_var(b, nb, &mb, &vb);
	se2 = va / (double)na + vb / (double)nb;
	sp = sqrt(((double)(na - 1) * va + (double)(nb - 1) * vb) / (double)(na + nb - 2));
	/* Hedges' correction of Cohen's d for small samples. */
	j = 1 - 3 / (4 * (double)(na + nb) - 9);
	out->effect = sp > 0 ? j * (mb - ma) / sp : (mb == ma ? 0 : copysign(INFINITY, mb - ma));
	if (se2 == 0) {
		out->statistic = mb == ma ? 0 : copysign(INFINITY, mb - ma);
		out->df = (double)(na + nb - 2);
		out->p = mb == ma ? 1 : 0;
		return 0;
	}
	out->statistic = (mb - ma) / sqrt(se2);
	out->df = se2 * se2 /
		  ((va / na) * (va / na) / (double)(na - 1) +
		   (vb / nb) * (vb / nb) / (double)(nb - 1));
	out->p = 2 * (1 - sonde_stats__t_cdf(fabs(out->statistic), out->df));
	if (out->p > 1)
		out->p = 1;
	return 0;
}

struct ranked {
	double v;
	int from_b;
};

static int cmp_ranked(const void *x, const void *y)
{
	return cmp_double(&((const struct ranked *)x)->v, &((const struct ranked *)y)->v);
}

int sonde_stats__mann_whitney(const double *a, size_t na, const double *b, size_t nb,
			      struct sonde_test *out)
{
	size_t n = na + nb, i, j;
	struct ranked *r;
	double rb = 0, ties = 0, mu, sigma, u, z, nn = (double)n;

	if (na < 1 || nb < 1)
		return -EINVAL;
	r = malloc(n * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (i = 0; i < na; i++)
		r[i] = (struct ranked){ a[i], 0 };
	for (i = 0; i < nb; i++)
		r[na + i] = (struct ranked){ b[i], 1 };
	qsort(r, n, sizeof(*r), cmp_ranked);
	for (i = 0; i < n; i = j) {
		double rank, t;

		for (j = i + 1; j < n && r[j].v == r[i].v; j++)
			;
		rank = ((double)i + 1 + (double)j) / 2; /* mean of ranks i+1 .. j */
		t = (double)(j - i);
		ties += t * t * t - t;
		for (size_t k = i; k < j; k++)
			rb += r[k].from_b ? rank : 0;
	}
	free(r);
	u = rb - (double)nb * ((double)nb + 1) / 2;
	mu = (double)na * (double)nb / 2;
	sigma = sqrt((double)na * (double)nb / 12 * ((nn + 1) - ties / (nn * (nn - 1))));
	out->statistic = u;
	out->df = NAN;
	out->effect = 2 * u / ((double)na * (double)nb) - 1;
	if (sigma == 0) {
		out->p = 1;
		return 0;
	}
	z = (fabs(u - mu) - 0.5) / sigma;
	out->p = z <= 0 ? 1 : 2 * (1 - sonde_stats__normal_cdf(z));
	return 0;
}

double sonde_stats__t_quantile(double p, double df)
{
	/* the last few answers, per thread: a regression asks the same few (p, df)
	   for every model of every resource, and each answer is a bisection of
	   ~40 incomplete-beta evaluations */
	static _Thread_local struct {
		double p, df, q;
	} seen[4];
	static _Thread_local unsigned next;
	double lo = 0, hi = 1e4;
	int i;

	if (!(p > 0.5 && p < 1) || !(df > 0))
		return NAN;
	for (i = 0; i < 4; i++)
		if (seen[i].p == p && seen[i].df == df)
			return seen[i].q;
	for (i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
		double mid = (lo + hi) / 2;

		if (t_cdf(mid, df) < p)
			lo = mid;
		else
			hi = mid;
	}
	i = (int)(next++ % 4);
	seen[i].p = p;
	seen[i].df = df;
	seen[i].q = (lo + hi) / 2;
	return seen[i].q;
}

/* Median absolute deviation of sorted v[0..n) around its median m. */
static double mad_of(const double *v, size_t n, double m, double *tmp)
{
	for (size_t i = 0; i < n; i++)
		tmp[i] = fabs(v[i] - m);
	return sonde_stats__median_inplace(tmp, n);
}

int sonde_stats__bimodal(const double *x, size_t n, struct sonde_bimodal *out)
{
	size_t least = (n * 15 + 99) / 100 > 3 ? (n * 15 + 99) / 100 : 3, k, best = 0, i;
	double *v, *tmp, gap = -1, m, ml, mh, spread;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (n < 10)
		return 0;
	v = malloc(2 * n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	tmp = v + n;
	memcpy(v, x, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_double);
	for (k = least; k + least <= n; k++) /* low: v[0..k), high: v[k..n) */
		if (v[k] - v[k - 1] > gap) {
			gap = v[k] - v[k - 1];
			best = k;
		}
	if (best) {
		m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
		ml = best % 2 ? v[best / 2] : (v[best / 2 - 1] + v[best / 2]) / 2;
		i = n - best;
		mh = i % 2 ? v[best + i / 2] : (v[best + i / 2 - 1] + v[best + i / 2]) / 2;
		spread = 1.4826 * fmax(mad_of(v, best, ml, tmp), mad_of(v + best, i, mh, tmp));
		if (gap > 3 * spread && gap > 0.25 * fabs(m)) {
			*out = (struct sonde_bimodal){ best, i, ml, mh, gap };
			rc = 1;
		}
	}
	free(v);
	return rc;
}

int sonde_stats__summarize(const double *x, size_t n, struct sonde_summary *out)
{
	double *tmp, sum = 0, ss = 0;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (n == 0)
		return -EINVAL;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	out->n = n;
	out->min = out->max = x[0];
	for (i = 0; i < n; i++) {
		sum += x[i];
		out->min = x[i] < out->min ? x[i] : out->min;
		out->max = x[i] > out->max ? x[i] : out->max;
	}
	out->mean = sum / (double)n;
	for (i = 0; i < n; i++)
		ss += (x[i] - out->mean) * (x[i] - out->mean);
	memcpy(tmp, x, n * sizeof(*tmp));
	out->median = sonde_stats__median_inplace(tmp, n);
	for (i = 0; i < n; i++)
		tmp[i] = fabs(x[i] - out->median);
	out->mad = sonde_stats__median_inplace(tmp, n);
	free(tmp);
	for (i = 0; out->mad > 0 && i < n; i++)
		if (fabs(sonde_stats__modified_z(x[i], out->median, out->mad)) > SONDE_OUTLIER_Z)
			out->outliers++;
	if (n < 2) {
		out->stddev = out->ci_low = out->ci_high = NAN;
		return 0;
	}
	out->stddev = sqrt(ss / (double)(n - 1));
	{
		double half = sonde_stats__t_quantile(0.975, (double)(n - 1)) * out->stddev /
			      sqrt((double)n);

		out->ci_low = out->mean - half;
		out->ci_high = out->mean + half;
		if (out->min >= 0 && out->ci_low < 0)
			out->ci_low = 0; /* a non-negative metric's mean is not negative */
	}
	return 0;
}
