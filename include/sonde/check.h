/*
 * check.h - did the target get slower than the baseline? A verdict per
 * resource (uid, type, subtype and workload), from a statistical test on
 * repeated measurements or from the regression models of the two profiles.
 * The methods and thresholds are specified in docs/analysis.md.
 */
#ifndef SONDE_CHECK_H
#define SONDE_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <sonde/profile.h>

enum sonde_verdict {
	SONDE_NO_CHANGE,
	SONDE_MAYBE,
	SONDE_DEGRADATION,
	SONDE_SEVERE_DEGRADATION,
	SONDE_OPTIMIZATION,
	SONDE_SEVERE_OPTIMIZATION,
	SONDE_NOT_IN_BASELINE,
	SONDE_NOT_IN_TARGET,
	/* the data cannot tell: one sample on a side, or a difference within the noise
	   of single values; never reported as "no change" */
	SONDE_NOT_ENOUGH_DATA,
	SONDE_VERDICT_COUNT
};
/* "no change", "maybe", ... indexed by the verdict. */
extern const char *const sonde_verdict_names[];

enum sonde_check_method {
	SONDE_CHECK_AUTO,	  /* per resource: welch with samples, else models, else average */
	SONDE_CHECK_WELCH,	  /* Welch's t-test on the amounts */
	SONDE_CHECK_MANN_WHITNEY, /* Mann-Whitney U on the amounts */
	SONDE_CHECK_AVERAGE_AMOUNT,    /* Perun: ratio of the averages against 2.0 and 0.5 */
	SONDE_CHECK_BEST_MODEL_ORDER,  /* Perun: the order of the best regression models */
	SONDE_CHECK_INTEGRAL,	       /* Perun: the integrals of the best models */
	SONDE_CHECK_LINEAR_REGRESSION, /* Perun: best and linear models, linear fit of the change */
	SONDE_CHECK_POLYNOMIAL_REGRESSION, /* Perun: the same, polynomial fit of the change */
	SONDE_CHECK_LOCAL_STATISTICS,	   /* Perun: statistics of the best models on 20 windows */
	SONDE_CHECK_EXCLUSIVE_TIME_OUTLIERS, /* Perun: outliers among functions' self-time changes
					      */
	SONDE_CHECK_FAST_CHECK, /* Perun: best and linear models, best model of the change */
};
extern const char *const sonde_check_methods[]; /* "auto", "welch", ... NULL-terminated */

struct sonde_check_options {
	enum sonde_check_method method;
	double alpha;	  /* significance level (0: 0.05) */
	double threshold; /* smallest relative change that counts (0: 0.05) */
	double severe;	  /* relative change that is severe (0: 0.25) */
	double cutoff;	  /* exclusive-time-outliers: smallest share (%) of the target's time */
};

struct sonde_check_result {
	char *uid, *type, *subtype, *workload, *unit; /* NULL when absent */
	const char *method;			      /* the method that decided */
	enum sonde_verdict verdict;
	size_t n_baseline, n_target;  /* samples compared */
	double baseline, target;      /* the mean amounts (NaN when absent) */
	double change;		      /* relative change of the target, (t - b) / b */
	double ratio_low, ratio_high; /* 95 % CI of target / baseline (NaN: unknown) */
	double confidence;	      /* 0..1 (NaN: the method gives none) */
	double p;		      /* p-value of the test (NaN: no test) */
	double effect;		      /* effect size (Hedges' g, Cliff's delta; NaN: none) */
	char *detail;		      /* e.g. "linear -> quadratic"; may be NULL */
};

/*
 * Compare every resource of two profiles. *out (caller frees with
 * sonde_check__free) gets the baseline's resources in order, then those only in
 * the target. A trace profile's functions are compared by their total and self
 * time (subtypes "total" and "self", method "totals"). Returns 0, -ENOMEM, or
 * -EXDEV when the profiles come from different collectors.
 */
int sonde_check__compare(const struct sonde_profile *baseline, const struct sonde_profile *target,
			 const struct sonde_check_options *o, struct sonde_check_result **out,
			 size_t *n);
void sonde_check__free(struct sonde_check_result *r, size_t n);
/*
 * Pair two configurations of one program (two command lines): the target's
 * resources named by its command (time's, the external collector's) take
 * the baseline's command as their name, so that they meet. Returns how many
 * were renamed.
 */
size_t sonde_check__pair(const struct sonde_profile *baseline, struct sonde_profile *target);
/* Whether a verdict is a (severe) degradation. */
bool sonde_verdict__is_degradation(enum sonde_verdict v);

#endif
