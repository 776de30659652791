/*
 * check-methods.h - what lib/check.c shares with the methods of
 * lib/check-perun.c (inside libsonde only).
 */
#ifndef SONDE_CHECK_METHODS_H
#define SONDE_CHECK_METHODS_H

#include <stdbool.h>
#include <stddef.h>
#include <sonde/check.h>

/* The amounts of one resource key of one profile. */
struct side {
	char *key, *uid, *type, *subtype, *workload, *location;
	char *msubtype; /* the subtype of its models (a trace side's subtype says total or self) */
	double *v;
	size_t n, cap;
	bool totals; /* a trace function's total or self time over the run */
	double all;  /* sampled: the profile's samples (v holds the function's share of them) */
};

/*
 * Perun's linear or polynomial regression or fast check on the best and
 * linear models of a resource; its local statistics on the best models. -ENOENT: a model is
 * missing on one side; -ENOMEM.
 */
int check_regression(const struct sonde_profile *pb, const struct sonde_profile *pt,
		     const struct side *s, enum sonde_check_method m, struct sonde_check_result *r);
int check_local(const struct sonde_profile *pb, const struct sonde_profile *pt,
		const struct side *s, struct sonde_check_result *r);
/*
 * Perun's exclusive time outliers over the results at rows (exclusive times of
 * functions, baseline and target; NaN where absent): the verdict of each, and
 * a result appended for each location, the total of its functions.
 */
struct check_eto_row {
	size_t row;
	const char *location; /* the function's object file; NULL: unknown */
};
int check_eto(struct sonde_check_result **res, size_t *n, size_t *cap,
	      const struct check_eto_row *rows, size_t k, const struct sonde_check_options *o);

#endif
