/*
 * postprocess.h - models of how a measured amount depends on a size: parametric
 * regression (Perun's models and computation methods) and non-parametric
 * smoothing (moving averages, regressograms, kernel regression), and their
 * application to a profile, whose `models` array receives the results.
 *
 * The formulas, methods and the stored form are specified in docs/analysis.md.
 */
#ifndef SONDE_POSTPROCESS_H
#define SONDE_POSTPROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sonde/profile.h>
#include <sonde/strbuf.h>

/* The parametric models, in order of growth (best-model-order compares these). */
enum sonde_model_kind {
	SONDE_MODEL_CONSTANT,	  /* y = b0 */
	SONDE_MODEL_LOGARITHMIC,  /* y = b0 + b1 ln x */
	SONDE_MODEL_LINEAR,	  /* y = b0 + b1 x */
	SONDE_MODEL_LINEARITHMIC, /* y = b0 + b1 x ln x */
	SONDE_MODEL_QUADRATIC,	  /* y = b0 + b1 x + b2 x^2 (Perun's) */
	SONDE_MODEL_POWER,	  /* y = b0 x^b1 (fitted as ln y = ln b0 + b1 ln x) */
	SONDE_MODEL_EXPONENTIAL,  /* y = b0 b1^x (fitted as ln y = ln b0 + x ln b1) */
	SONDE_MODEL_COUNT,
};
#define SONDE_MODELS_ALL ((1u << SONDE_MODEL_COUNT) - 1)

/* "constant", "logarithmic", ... NULL-terminated, indexed by the kind. */
extern const char *const sonde_model_names[];
/* The kind named name, or -1. */
int sonde_model__kind(const char *name);

/* One fitted parametric model. */
struct sonde_fit {
	enum sonde_model_kind kind;
	size_t n;	       /* points it was fitted on */
	double b[3];	       /* b0, b1, b2 (b1 is NaN for the constant model, b2 for all
				  but the quadratic) */
	double ci_low[3];      /* 95 % confidence interval of each coefficient */
	double ci_high[3];     /* (NaN when n is too small for one) */
	double r_square;       /* on the original scale: 1 - SSE / SST */
	double p_slope;	       /* p-value of the model against the constant one: the
				  slope's t-test, the quadratic's F-test (NaN: constant,
				  or too few points) */
	double x_start, x_end; /* the x range it was fitted on */
};

/*
 * Fit one model by least squares on n points. Returns 0; -EINVAL with fewer
 * than 2 points (1 for constant, 3 for quadratic); -EDOM when the model does not apply to the
 * data (x <= 0 for logarithmic, linearithmic and power; y <= 0 for power and
 * exponential; all x equal for a model with a slope).
 */
int sonde_regression__fit(enum sonde_model_kind kind, const double *x, const double *y, size_t n,
			  struct sonde_fit *out);
/* The model's value at x. */
double sonde_fit__eval(const struct sonde_fit *f, double x);
/* The model's integral from a to b (closed forms). */
double sonde_fit__integral(const struct sonde_fit *f, double a, double b);

enum sonde_regression_method {
	SONDE_REGRESSION_FULL,		/* every model on all points */
	SONDE_REGRESSION_ITERATIVE,	/* chunks added to the best model so far */
	SONDE_REGRESSION_INTERVAL,	/* the best model of each of `steps` x intervals */
	SONDE_REGRESSION_INITIAL_GUESS, /* the best model of a first chunk, completed */
	SONDE_REGRESSION_BISECTION,	/* halve while the halves' best models differ */
};
extern const char *const sonde_regression_methods[]; /* "full", ... NULL-terminated */

/*
 * Run a regression method with the models in the mask (bit 1 << kind) over n
 * points (copied; not modified). *out gets the fits (caller frees): every
 * applicable model for full, the chosen models for the others. *best is the
 * index of the best fit (highest R^2) in *out. Returns 0, -EINVAL (no model
 * applies, too few points) or -ENOMEM.
 */
int sonde_regression__run(enum sonde_regression_method method, unsigned models, unsigned steps,
			  const double *x, const double *y, size_t n, struct sonde_fit **out,
			  size_t *nout, size_t *best);

/* A non-parametric model: a curve through (x[i], y[i]), x ascending. */
struct sonde_curve {
	double *x, *y; /* owned */
	size_t n;
	double r_square; /* of the curve against the points it smooths */
	double param;	 /* the window, bucket width or bandwidth used */
};
void sonde_curve__release(struct sonde_curve *c);

enum sonde_average { SONDE_AVG_SMA, SONDE_AVG_SMM, SONDE_AVG_EMA };
enum sonde_decay { SONDE_DECAY_COM, SONDE_DECAY_SPAN, SONDE_DECAY_HALFLIFE, SONDE_DECAY_ALPHA };
/* The smoothing factor alpha of an exponential average from one decay form. NaN: invalid. */
double sonde_decay__alpha(enum sonde_decay form, double value);

/*
 * Moving average over the points sorted by x: sma (mean) and smm (median) of a
 * trailing window of `window` points (0: a tenth of the points, at least 1),
 * ema with smoothing factor alpha (s_0 = y_0, s_i = alpha y_i + (1 - alpha) s_{i-1}).
 */
int sonde_smooth__moving_average(enum sonde_average kind, size_t window, double alpha,
				 const double *x, const double *y, size_t n,
				 struct sonde_curve *out);
/*
 * Regressogram: `buckets` equal-width buckets over [min x, max x] (0: Sturges'
 * rule, ceil(log2 n) + 1); each bucket's mean or median of y at its centre. Empty
 * buckets are left out.
 */
int sonde_smooth__regressogram(size_t buckets, bool median, const double *x, const double *y,
			       size_t n, struct sonde_curve *out);

enum sonde_bandwidth { SONDE_BW_SCOTT, SONDE_BW_SILVERMAN };
/* Scott: 1.059 s n^-1/5; Silverman: 0.9 min(s, IQR / 1.349) n^-1/5. NaN: no spread. */
double sonde_smooth__bandwidth(enum sonde_bandwidth rule, const double *x, size_t n);
/*
 * Kernel regression with a Gaussian kernel of bandwidth h, evaluated at up to
 * `points` evenly spaced x (0: 200): Nadaraya-Watson (local constant) or local
 * linear.
 */
int sonde_smooth__kernel(bool local_linear, double h, size_t points, const double *x,
			 const double *y, size_t n, struct sonde_curve *out);

/* One group of points: the (x, y) of every row of the resources with one key. */
struct sonde_points {
	char *uid, *type, *subtype; /* subtype may be NULL */
	double *x, *y;
	size_t n;
};
/*
 * Collect the points of a profile: y from column `of`, x from column `per`,
 * grouped by uid, type and subtype. Rows where either is null are skipped; a
 * resource without one of the columns is left out. Caller frees with
 * sonde_points__free. Returns 0 or -ENOMEM.
 */
int sonde_points__collect(const struct sonde_profile *p, const char *of, const char *per,
			  struct sonde_points **out, size_t *n);
void sonde_points__free(struct sonde_points *g, size_t n);

/* The default --of and --per for a profile type. */
void sonde_postprocess__defaults(const char *type, const char **of, const char **per);

/* What a postprocessor does; unset fields keep their defaults (zero). */
struct sonde_postprocess_options {
	const char *name; /* regression, moving-average, regressogram, kernel-regression */
	const char *of, *per;
	/* regression */
	enum sonde_regression_method method;
	unsigned models; /* mask; 0: all */
	unsigned steps;	 /* 0: 3 */
	/* moving-average */
	enum sonde_average average;
	size_t window;
	double alpha; /* ema; 0: from decay below, else 0.5 */
	/* regressogram */
	size_t buckets;
	bool median;
	/* kernel-regression */
	bool local_linear;
	enum sonde_bandwidth bandwidth_rule;
	double bandwidth; /* > 0: this bandwidth instead of the rule */
	/* non-parametric curves: at most this many points stored (0: 1000) */
	size_t max_points;
};
extern const char *const sonde_postprocessors[]; /* NULL-terminated */

/*
 * Run a postprocessor on a profile: append its models to `models` and a record
 * of it (name and parameters) to `postprocessors`. *added gets the number of
 * models. Returns 0, -EINVAL (unknown name, no points: err says why) or -ENOMEM.
 */
int sonde_postprocess__apply(struct sonde_profile *p, const struct sonde_postprocess_options *o,
			     size_t *added, struct sonde_strbuf *err);

/*
 * The best regression model of a uid/type/subtype in a profile's models (highest
 * R^2 among the regression models of the last postprocessing of that key), as a
 * fit. Returns 0 or -ENOENT.
 */
int sonde_postprocess__best(const struct sonde_profile *p, const char *uid, const char *type,
			    const char *subtype, struct sonde_fit *out);
/*
 * The stored regression model of one kind (-1: the best) of a uid/type/subtype:
 * of several (piecewise methods), the one fitted on most points; in Perun's
 * profiles, the one of highest R^2. Returns 0 or -ENOENT.
 */
int sonde_postprocess__model(const struct sonde_profile *p, const char *uid, const char *type,
			     const char *subtype, int kind, struct sonde_fit *out);
/* A stored model (an element of `models`) as a fit. -EINVAL: not a regression model. */
int sonde_fit__from_json(json_t *model, struct sonde_fit *out);

#endif
