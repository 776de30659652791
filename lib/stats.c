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

double sonde_stats__median_inplace(double *x, size_t n)
{
	if (n == 0)
		return NAN;
	qsort(x, n, sizeof(*x), cmp_double);
	return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

double sonde_stats__modified_z(double v, double median, double mad)
{
	if (mad == 0)
		return v == median ? 0 : (v > median ? INFINITY : -INFINITY);
	return 0.6745 * (v - median) / mad;
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

	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return front * betacf(a, b, x) / a;
	return 1 - front * betacf(b, a, 1 - x) / b;
}

/* P(T <= t) for t >= 0. */
static double t_cdf(double t, double df)
{
	return 1 - 0.5 * ibeta(df / 2, 0.5, df / (df + t * t));
}

double sonde_stats__t_quantile(double p, double df)
{
	double lo = 0, hi = 1e4;
	int i;

	if (!(p > 0.5 && p < 1) || !(df > 0))
		return NAN;
	for (i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
		double mid = (lo + hi) / 2;

		if (t_cdf(mid, df) < p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
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
	for (i = 0; i < n; i++)
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
	}
	return 0;
}
