/*
 * Unit tests of the postprocessors and checks: models fitted to data generated
 * from known models with noise must find the model and its coefficients; the
 * two-sample tests must match published values; checks must give the verdicts
 * their definitions say.
 */
#include <math.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sonde/check.h>
#include <sonde/postprocess.h>
#include <sonde/stats.h>

/* A deterministic normal generator (xorshift + Box-Muller). */
static uint64_t seed = 42;

static double uniform(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return ((double)(seed >> 11) + 0.5) / 9007199254740992.0;
}

static double gauss(double sd)
{
	return sd * sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform());
}

#define N 400

struct truth {
	enum sonde_model_kind kind;
	double b0, b1, noise; /* noise: relative sd for power/exponential, else absolute */
	double b2;	      /* the quadratic's x^2 coefficient */
};

static void fit_known(const struct truth *t)
{
	double x[N], y[N];
	struct sonde_fit *f;
	struct sonde_fit want = { .kind = t->kind, .b = { t->b0, t->b1, t->b2 } };
	size_t n, best, i;

	for (i = 0; i < N; i++) {
		x[i] = 1 + (double)i / 4;
		y[i] = sonde_fit__eval(&want, x[i]);
		y[i] = t->kind >= SONDE_MODEL_POWER ? y[i] * exp(gauss(t->noise))
						    : y[i] + gauss(t->noise);
	}
	assert_int_equal(sonde_regression__run(SONDE_REGRESSION_FULL, 0, 0, x, y, N, &f, &n, &best),
			 0);
	print_message("# %s: best %s R2 %.5f b0 %.5g [%.5g, %.5g] b1 %.5g [%.5g, %.5g]\n",
		      sonde_model_names[t->kind], sonde_model_names[f[best].kind], f[best].r_square,
		      f[best].b[0], f[best].ci_low[0], f[best].ci_high[0], f[best].b[1],
		      f[best].ci_low[1], f[best].ci_high[1]);
	assert_int_equal(f[best].kind, t->kind);
	/* The truth lies in the 95 % intervals (fixed seed: no flakiness). */
	assert_true(f[best].ci_low[0] <= t->b0 && t->b0 <= f[best].ci_high[0]);
	if (t->kind != SONDE_MODEL_CONSTANT)
		assert_true(f[best].ci_low[1] <= t->b1 && t->b1 <= f[best].ci_high[1]);
	if (t->kind == SONDE_MODEL_QUADRATIC)
		assert_true(f[best].ci_low[2] <= t->b2 && t->b2 <= f[best].ci_high[2]);
	assert_true(f[best].r_square > 0.5 || t->kind == SONDE_MODEL_CONSTANT);
	assert_true(f[best].x_start == 1 && f[best].x_end == 1 + (N - 1) / 4.0);
	free(f);
}

static void test_known_models(void **state)
{
	static const struct truth t[] = {
		{ SONDE_MODEL_CONSTANT, 7, 0, 0.5 },
		{ SONDE_MODEL_LINEAR, 5, 2, 3 },
		{ SONDE_MODEL_LOGARITHMIC, 10, 40, 2 },
		{ SONDE_MODEL_LINEARITHMIC, 3, 0.75, 3 },
		{ SONDE_MODEL_QUADRATIC, 20, 3, 40, 0.5 },
		{ SONDE_MODEL_POWER, 2, 2.5, 0.05 },
		{ SONDE_MODEL_EXPONENTIAL, 3, 1.05, 0.05 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		fit_known(&t[i]);
}

static void test_methods(void **state)
{
	double x[N], y[N];
	struct sonde_fit *f;
	size_t n, best, i;
	int m;

	(void)state;
	/* Linear below 51, quadratic from there (the halves' edge): bisection and
	   interval see both. The quadratic nests the line, so on a straight piece
	   its x^2 term comes out significant in about one draw of noise in a
	   hundred: the noise is drawn from a seed of its own, one where it does not. */
	seed = 7;
	for (i = 0; i < N; i++) {
		x[i] = 1 + (double)i / 4;
		y[i] = (x[i] < 51 ? 1000 + 10 * x[i] : 1510 + 8 * (x[i] - 51) * (x[i] - 51)) +
		       gauss(1);
	}
	for (m = SONDE_REGRESSION_FULL; m <= SONDE_REGRESSION_BISECTION; m++) {
		assert_int_equal(sonde_regression__run(m, 0, 3, x, y, N, &f, &n, &best), 0);
		assert_true(n >= 1);
		if (m == SONDE_REGRESSION_BISECTION || m == SONDE_REGRESSION_INTERVAL) {
			/* The first piece is linear and ends before the change. */
			assert_int_equal(f[0].kind, SONDE_MODEL_LINEAR);
			assert_true(f[0].x_end < 60);
			assert_true(n >= 2);
		}
		if (m == SONDE_REGRESSION_ITERATIVE || m == SONDE_REGRESSION_INITIAL_GUESS)
			assert_int_equal(n, 1); /* one model, fitted on every point */
		if (m == SONDE_REGRESSION_INITIAL_GUESS || m == SONDE_REGRESSION_ITERATIVE)
			assert_int_equal(f[0].n, N);
		free(f);
	}
	/* A log of x: fitted on the positive x only, as Perun does; none: no model. */
	x[0] = 0;
	{
		struct sonde_fit one;
		double zeros[3] = { 0, -1, 0 }, ys[3] = { 1, 2, 3 };

		assert_int_equal(sonde_regression__fit(SONDE_MODEL_LOGARITHMIC, x, y, N, &one), 0);
		assert_int_equal(one.n, N - 1);
		assert_true(one.x_start > 0);
		assert_int_equal(sonde_regression__fit(SONDE_MODEL_POWER, x, y, N, &one), 0);
		assert_int_equal(one.n, N - 1);
		assert_int_equal(sonde_regression__fit(SONDE_MODEL_LINEAR, x, y, N, &one), 0);
		assert_int_equal(one.n, N);
		assert_int_equal(sonde_regression__fit(SONDE_MODEL_LOGARITHMIC, zeros, ys, 3, &one),
				 -EDOM);
	}
}

static void test_smoothing(void **state)
{
	double x[N], y[N];
	struct sonde_curve c;
	size_t i;

	(void)state;
	for (i = 0; i < N; i++) {
		x[i] = (double)i;
		y[i] = 3 * x[i] + gauss(2);
	}
	/* The trailing mean of a line lags by (window - 1) / 2 x steps. */
	assert_int_equal(sonde_smooth__moving_average(SONDE_AVG_SMA, 11, 0, x, y, N, &c), 0);
	assert_true(fabs(c.y[200] - 3 * 195) < 3);
	assert_true(c.r_square > 0.99);
	sonde_curve__release(&c);
	assert_int_equal(sonde_smooth__moving_average(SONDE_AVG_SMM, 11, 0, x, y, N, &c), 0);
	assert_true(fabs(c.y[200] - 3 * 195) < 4);
	sonde_curve__release(&c);
	assert_true(fabs(sonde_decay__alpha(SONDE_DECAY_SPAN, 9) - 0.2) < 1e-12);
	assert_true(fabs(sonde_decay__alpha(SONDE_DECAY_COM, 1) - 0.5) < 1e-12);
	assert_true(fabs(sonde_decay__alpha(SONDE_DECAY_HALFLIFE, 1) - 0.5) < 1e-12);
	assert_true(isnan(sonde_decay__alpha(SONDE_DECAY_ALPHA, 1.5)));
	assert_int_equal(sonde_smooth__moving_average(SONDE_AVG_EMA, 0, 0.5, x, y, N, &c), 0);
	assert_true(fabs(c.y[0] - y[0]) < 1e-12);
	assert_true(fabs(c.y[1] - (0.5 * y[1] + 0.5 * y[0])) < 1e-12);
	sonde_curve__release(&c);
	/* Regressogram: 4 buckets of 100 points; bucket means of a line are its centres. */
	assert_int_equal(sonde_smooth__regressogram(4, false, x, y, N, &c), 0);
	assert_int_equal(c.n, 4);
	assert_true(fabs(c.param - 399.0 / 4) < 1e-9);
	assert_true(fabs(c.y[0] - 3 * 49.5) < 1.5);
	sonde_curve__release(&c);
	/* Kernel regression recovers the line inside the range. */
	assert_true(fabs(sonde_smooth__bandwidth(SONDE_BW_SCOTT, x, N) -
			 1.059 * sqrt(N * (N + 1.0) / 12) * pow(N, -0.2)) < 1e-6);
	assert_true(sonde_smooth__bandwidth(SONDE_BW_SILVERMAN, x, N) <
		    sonde_smooth__bandwidth(SONDE_BW_SCOTT, x, N));
	for (i = 0; i < 2; i++) {
		assert_int_equal(sonde_smooth__kernel(i, 10, 41, x, y, N, &c), 0);
		assert_int_equal(c.n, 41);
		assert_true(fabs(c.y[20] - 3 * c.x[20]) < 3);
		/* At the edge only the local-linear estimate stays on the line. */
		if (i)
			assert_true(fabs(c.y[0] - 0) < 5);
		else
			assert_true(c.y[0] > 10);
		sonde_curve__release(&c);
	}
}

static void test_tests(void **state)
{
	const double a[] = { 1, 2, 3, 4, 5 }, b[] = { 2, 4, 6, 8, 10 }, c[] = { 6, 7, 8, 9, 10 };
	struct sonde_test t;

	(void)state;
	/* Welch: t = 3 / sqrt(0.5 + 2) = 1.8974, df = 6.25 / (0.0625 + 1) = 5.882. */
	assert_int_equal(sonde_stats__welch(a, 5, b, 5, &t), 0);
	assert_true(fabs(t.statistic - 1.897367) < 1e-5);
	assert_true(fabs(t.df - 5.882353) < 1e-5);
	assert_true(fabs(t.p - 0.1075) < 0.002);
	assert_true(t.effect > 0);
	/* Mann-Whitney, every b above every a: U = 25, z = 12 / 4.787, p = 0.0122. */
	assert_int_equal(sonde_stats__mann_whitney(a, 5, c, 5, &t), 0);
	assert_true(fabs(t.statistic - 25) < 1e-12);
	assert_true(fabs(t.p - 0.01219) < 2e-4);
	assert_true(fabs(t.effect - 1) < 1e-12);
	assert_int_equal(sonde_stats__welch(a, 1, b, 5, &t), -EINVAL);
	assert_true(fabs(sonde_stats__normal_cdf(1.959964) - 0.975) < 1e-6);
	assert_true(fabs(sonde_stats__t_cdf(-2.364624, 7) - 0.025) < 1e-6);
}

static struct sonde_profile *samples(double mean_f, double mean_g, bool with_h)
{
	struct sonde_profile *p = sonde_profile__new("time");
	long f = sonde_profile__resource(p, "f", "time", "real", NULL);
	long g = sonde_profile__resource(p, "g", "time", "real", NULL);
	int i;

	for (i = 0; i < 30; i++) {
		sonde_profile__append(p, f, "amount", json_real(mean_f + gauss(2)));
		sonde_profile__append(p, g, "amount", json_real(mean_g + gauss(2)));
	}
	if (with_h)
		sonde_profile__append(p, sonde_profile__resource(p, "h", "time", "real", NULL),
				      "amount", json_real(5));
	return p;
}

static void test_check(void **state)
{
	struct sonde_profile *b = samples(100, 100, false), *t = samples(130, 90, true),
			     *same = samples(100, 100, false);
	struct sonde_check_options o = { 0 };
	struct sonde_check_result *r;
	size_t n;

	(void)state;
	assert_int_equal(sonde_check__compare(b, t, &o, &r, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(r[0].uid, "f");
	assert_int_equal(r[0].verdict, SONDE_SEVERE_DEGRADATION);
	assert_string_equal(r[0].method, "welch");
	assert_true(fabs(r[0].change - 0.3) < 0.02);
	assert_true(r[0].ratio_low < 1.3 && 1.3 < r[0].ratio_high && r[0].ratio_low > 1.2);
	assert_true(r[0].confidence > 0.999);
	assert_int_equal(r[1].verdict, SONDE_OPTIMIZATION);
	assert_int_equal(r[2].verdict, SONDE_NOT_IN_BASELINE);
	assert_true(sonde_verdict__is_degradation(r[0].verdict));
	sonde_check__free(r, n);
	/* Against a rerun of the same: no change; reversed: not in target. */
	assert_int_equal(sonde_check__compare(b, same, &o, &r, &n), 0);
	assert_int_equal(r[0].verdict, SONDE_NO_CHANGE);
	assert_int_equal(r[1].verdict, SONDE_NO_CHANGE);
	sonde_check__free(r, n);
	assert_int_equal(sonde_check__compare(t, b, &o, &r, &n), 0);
	assert_int_equal(r[2].verdict, SONDE_NOT_IN_TARGET);
	assert_int_equal(r[0].verdict, SONDE_OPTIMIZATION); /* 130 -> 100: -23 % */
	sonde_check__free(r, n);
	/* Perun's average amount: twice is a degradation, 1.3 times is not. */
	o.method = SONDE_CHECK_AVERAGE_AMOUNT;
	assert_int_equal(sonde_check__compare(b, t, &o, &r, &n), 0);
	assert_int_equal(r[0].verdict, SONDE_NO_CHANGE);
	sonde_check__free(r, n);
	sonde_profile__free(b);
	sonde_profile__free(t);
	sonde_profile__free(same);
}

/* Models through a profile: regression stored, then compared by order and integral. */
static struct sonde_profile *sized(int quadratic)
{
	struct sonde_profile *p = sonde_profile__new("mixed");
	long r = sonde_profile__resource(p, "sort", "mixed", "time", NULL);
	int i;

	for (i = 1; i <= 200; i++) {
		double y = quadratic ? 50 + 0.5 * i * i : 50 + 30 * i;

		sonde_profile__append(p, r, "amount", json_real(y + gauss(5)));
		sonde_profile__append(p, r, "structure-unit-size", json_integer(i));
	}
	return p;
}

static void test_model_checks(void **state)
{
	struct sonde_profile *b = sized(0), *t = sized(1);
	struct sonde_postprocess_options o = { .name = "regression",
					       .of = "amount",
					       .per = "structure-unit-size" };
	struct sonde_check_options co = { .method = SONDE_CHECK_BEST_MODEL_ORDER };
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_check_result *r;
	struct sonde_fit f;
	size_t added, n;

	(void)state;
	assert_int_equal(sonde_postprocess__apply(b, &o, &added, &err), 0);
	assert_true(added >= 5);
	assert_int_equal(sonde_postprocess__apply(t, &o, &added, &err), 0);
	/* Running it again replaces the models instead of adding more. */
	assert_int_equal(sonde_postprocess__apply(t, &o, &added, &err), 0);
	assert_int_equal(json_array_size(json_object_get(sonde_profile__root(t), "models")), added);
	assert_int_equal(sonde_postprocess__best(b, "sort", "mixed", "time", &f), 0);
	assert_int_equal(f.kind, SONDE_MODEL_LINEAR);
	assert_int_equal(sonde_check__compare(b, t, &co, &r, &n), 0);
	assert_int_equal(r[0].verdict, SONDE_SEVERE_DEGRADATION); /* linear -> quadratic: 2 up */
	assert_string_equal(r[0].detail, "linear -> quadratic");
	sonde_check__free(r, n);
	co.method = SONDE_CHECK_INTEGRAL;
	assert_int_equal(sonde_check__compare(b, t, &co, &r, &n), 0);
	assert_true(r[0].change > 1); /* 0.5 x^2 over 1..200 is far above 30 x */
	assert_int_equal(r[0].verdict, SONDE_SEVERE_DEGRADATION);
	sonde_check__free(r, n);
	/* No such columns: one clear message. */
	o.per = "nothing";
	assert_int_equal(sonde_postprocess__apply(b, &o, &added, &err), -EINVAL);
	assert_non_null(strstr(err.buf, "nothing"));
	sonde_strbuf__release(&err);
	sonde_profile__free(b);
	sonde_profile__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_models), cmocka_unit_test(test_methods),
		cmocka_unit_test(test_smoothing),    cmocka_unit_test(test_tests),
		cmocka_unit_test(test_check),	     cmocka_unit_test(test_model_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
