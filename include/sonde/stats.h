/*
 * stats.h - summary statistics of repeated measurements.
 *
 * Outliers are hyperfine's: the score (x_i - median) / MAD, an outlier when
 * |score| > SONDE_OUTLIER_Z = 1.4826 * 10 (ten standard deviations, the MAD
 * scaled to one); a sample whose MAD is 0 (most values equal) has none. The 95 % confidence
 * interval of the mean uses Student's t with n-1 degrees of freedom; it never
 * goes below 0 when no value does.
 */
#ifndef SONDE_STATS_H
#define SONDE_STATS_H

#include <stdbool.h>
#include <stddef.h>

#define SONDE_OUTLIER_Z (1.4826 * 10.0)

struct sonde_summary {
	size_t n;
	double mean;
	double stddev; /* sample standard deviation (n-1); NaN when n < 2 */
	double median;
	double min, max;
	double ci_low, ci_high; /* 95 % CI of the mean; NaN when n < 2 */
	double mad;		/* median absolute deviation (unscaled) */
	size_t outliers;	/* count by hyperfine's rule (see above) */
};

/* Summarise n values (not modified). Returns 0, -EINVAL for n == 0, -ENOMEM. */
int sonde_stats__summarize(const double *x, size_t n, struct sonde_summary *out);

/* Median of n values (x is reordered). NaN for n == 0. */
double sonde_stats__median_inplace(double *x, size_t n);

/* Sort n values in ascending order. */
void sonde_stats__sort(double *x, size_t n);
/* The p quantile (0 <= p <= 1) of n sorted values, interpolated linearly between
   the nearest ranks (numpy's and pandas' default). NaN for n == 0. */
double sonde_stats__quantile_sorted(const double *v, size_t n, double p);

/*
 * Modified z-score of value v against a sample's median and MAD. Returns 0 when MAD
 * is 0 and v equals the median, +/-INFINITY when MAD is 0 and v differs.
 */
double sonde_stats__modified_z(double v, double median, double mad);

/* Two groups of values with a clear gap between them (see __bimodal). */
struct sonde_bimodal {
	size_t n_low, n_high;		/* values in each group */
	double median_low, median_high; /* and their medians */
	double gap;			/* the lowest high value minus the highest low one */
};

/*
 * Whether n values (at least 10) form two groups: sorted, split at the widest
 * gap that leaves at least 15 % of them (and three) on each side, the gap wider
 * than three robust standard deviations (1.4826 MADs) of the wider group and
 * than a quarter of the overall median. A heavy tail or a few stray values are
 * not two groups. Returns 1 and fills out, 0 (not bimodal), or -ENOMEM.
 */
int sonde_stats__bimodal(const double *x, size_t n, struct sonde_bimodal *out);

/* The p quantile (0.5 < p < 1) of Student's t distribution with df degrees of freedom. */
double sonde_stats__t_quantile(double p, double df);
/* Mean and sample variance of n values (variance NaN when n < 2; mean NaN when n == 0). */
void sonde_stats__mean_var(const double *x, size_t n, double *mean, double *var);
/* P(T <= t) of Student's t distribution with df degrees of freedom (any t). */
double sonde_stats__t_cdf(double t, double df);
/* P(F > f) of Fisher's F distribution with d1 and d2 degrees of freedom (f >= 0). */
double sonde_stats__f_sf(double f, double d1, double d2);
/* P(Z <= z) of the standard normal distribution. */
double sonde_stats__normal_cdf(double z);

/* The outcome of a two-sample test of b against a (a: baseline, b: target). */
struct sonde_test {
	double statistic; /* t (Welch) or U of b (Mann-Whitney) */
	double df;	  /* Welch-Satterthwaite degrees of freedom; NaN for Mann-Whitney */
	double p;	  /* two-sided p-value */
	/*
	 * Effect size, signed so that positive means b is larger: Hedges' g for
	 * Welch (pooled deviation, small-sample corrected), Cliff's delta
	 * (= rank-biserial correlation) for Mann-Whitney.
	 */
	double effect;
};

/*
 * Welch's unequal-variance t-test. Needs na, nb >= 2. When both samples have
 * no spread, p is 1 for equal means and 0 otherwise. Returns 0 or -EINVAL.
 */
int sonde_stats__welch(const double *a, size_t na, const double *b, size_t nb,
		       struct sonde_test *out);
/*
 * The Mann-Whitney U test, normal approximation with tie and continuity
 * corrections. Needs na, nb >= 1. Returns 0, -EINVAL or -ENOMEM.
 */
int sonde_stats__mann_whitney(const double *a, size_t na, const double *b, size_t nb,
			      struct sonde_test *out);

#endif
