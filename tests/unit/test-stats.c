/* Unit tests: summary statistics against values computed by hand or from tables. */
#include <math.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sonde/stats.h>

static void test_summary(void **state)
{
	const double x[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
	struct sonde_summary s;

	assert_int_equal(sonde_stats__summarize(x, 8, &s), 0);
	assert_true(fabs(s.mean - 5) < 1e-12);
	assert_true(fabs(s.stddev - sqrt(32.0 / 7)) < 1e-12);
	assert_true(fabs(s.median - 4.5) < 1e-12);
	assert_true(s.min == 2 && s.max == 9);
	/* |x - 4.5| sorted: .5 .5 .5 .5 .5 2.5 2.5 4.5, median .5 */
	assert_true(fabs(s.mad - 0.5) < 1e-12);
	/* 95 % CI: mean ± t(0.975, 7) σ/√8, t = 2.364624 */
	assert_true(fabs(s.ci_high - (5 + 2.364624 * sqrt(32.0 / 7) / sqrt(8))) < 1e-5);
	/* 9: 4.5 / 0.5 = 9, under hyperfine's 14.826: no outlier */
	assert_int_equal(s.outliers, 0);
}

static void test_t_quantiles(void **state)
{
	/* Student-t table values */
	assert_true(fabs(sonde_stats__t_quantile(0.975, 1) - 12.706205) < 1e-5);
	assert_true(fabs(sonde_stats__t_quantile(0.975, 9) - 2.262157) < 1e-5);
	assert_true(fabs(sonde_stats__t_quantile(0.975, 30) - 2.042272) < 1e-5);
	assert_true(fabs(sonde_stats__t_quantile(0.995, 4) - 4.604095) < 1e-5);
	assert_true(fabs(sonde_stats__t_quantile(0.975, 1e6) - 1.959966) < 1e-4);
	assert_true(isnan(sonde_stats__t_quantile(0.4, 3)));
}

static void test_outliers(void **state)
{
	const double x[] = { 10, 10.1, 9.9, 10, 10.2, 9.8, 10, 30 };
	struct sonde_summary s;

	assert_int_equal(sonde_stats__summarize(x, 8, &s), 0);
	assert_int_equal(s.outliers, 1);
	assert_true(sonde_stats__modified_z(30, s.median, s.mad) > SONDE_OUTLIER_Z);
}

/* hyperfine's own cases (its outlier_detection.rs), and sonde's departures */
static void test_hyperfine_rule(void **state)
{
	const double one[] = { -0.2, 0.0, 0.2, 4.0 }, two[] = { 0.5, 0.30, 0.29, 0.31, 0.30 };
	const double normal[] = { 2.33269488,  1.42195907, -0.57527698, -0.31293437,
				  2.2948158,   0.75813273, -1.0712388,	-0.96394741,
				  -1.15897446, 1.10976285, 20.0,	-500.0 };
	const double flat[] = { 10, 10, 10, 10, 10, 10, 10, 100 };
	const double runs[] = { 1.0, 1.2, 0.9, 1.1, 5.0 }, zeros[] = { 0, 0, 0, 0, 1 };
	struct sonde_summary s;

	assert_int_equal(sonde_stats__summarize(one, 4, &s), 0);
	assert_int_equal(s.outliers, 1);
	assert_int_equal(sonde_stats__summarize(two, 5, &s), 0);
	assert_int_equal(s.outliers, 1);
	assert_int_equal(sonde_stats__summarize(normal, 10, &s), 0);
	assert_int_equal(s.outliers, 0);
	assert_int_equal(sonde_stats__summarize(normal, 12, &s), 0);
	assert_int_equal(s.outliers, 2);
	/* MAD 0: hyperfine counts 100 as an outlier; sonde does not judge */
	assert_int_equal(sonde_stats__summarize(flat, 8, &s), 0);
	assert_int_equal(s.outliers, 0);
	/* non-negative values: the interval of the mean stops at 0 */
	assert_int_equal(sonde_stats__summarize(zeros, 5, &s), 0);
	assert_true(s.ci_low == 0 && s.ci_high > 0);
	assert_int_equal(sonde_stats__summarize(runs, 5, &s), 0);
	assert_true(s.ci_low >= 0);
}

static void test_edges(void **state)
{
	const double one[] = { 3 };
	struct sonde_summary s;

	assert_int_equal(sonde_stats__summarize(one, 0, &s), -EINVAL);
	assert_int_equal(sonde_stats__summarize(one, 1, &s), 0);
	assert_true(isnan(s.stddev) && isnan(s.ci_low));
	assert_true(s.mean == 3 && s.median == 3);
	assert_true(sonde_stats__modified_z(3, 3, 0) == 0);
	assert_true(isinf(sonde_stats__modified_z(4, 3, 0)));
}

/* Two kinds of run are two groups; one group with a tail or strays is not. */
static void test_bimodal(void **state)
{
	double two[20], tail[40], stray[20], uni[50];
	struct sonde_bimodal b;
	size_t i;

	(void)state;
	for (i = 0; i < 20; i++) /* 1.2 ms and 4 ms runs, alternating, a little jitter */
		two[i] = (i % 2 ? 4.0e6 : 1.2e6) + (double)(i % 5) * 1e4;
	assert_int_equal(sonde_stats__bimodal(two, 20, &b), 1);
	assert_int_equal(b.n_low, 10);
	assert_int_equal(b.n_high, 10);
	assert_true(b.median_low > 1.19e6 && b.median_low < 1.25e6);
	assert_true(b.median_high > 3.99e6 && b.median_high < 4.05e6);
	for (i = 0; i < 40; i++) /* a heavy (exponential-like) tail */
		tail[i] = 1e6 * (1 + 0.05 * (double)i * (double)i / 40);
	assert_int_equal(sonde_stats__bimodal(tail, 40, &b), 0);
	for (i = 0; i < 20; i++) /* one stray slow run is an outlier, not a group */
		stray[i] = i == 7 ? 9e6 : 1e6 + (double)i * 1e3;
	assert_int_equal(sonde_stats__bimodal(stray, 20, &b), 0);
	for (i = 0; i < 20; i++) /* nor are two, delayed by a busy machine */
		stray[i] = i == 3 || i == 11 ? 2.5e6 : 1e6 + (double)i * 1e3;
	assert_int_equal(sonde_stats__bimodal(stray, 20, &b), 0);
	for (i = 0; i < 50; i++) /* evenly spread: no gap */
		uni[i] = 1e6 + (double)i * 2e4;
	assert_int_equal(sonde_stats__bimodal(uni, 50, &b), 0);
	assert_int_equal(sonde_stats__bimodal(two, 9, &b), 0); /* too few to tell */
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median by selection is the median of the sorted values, on every shape. */
static void test_median_selection(void **state)
{
	static double x[4099], s[4099];
	unsigned seed = 3;
	size_t n, i;
	int shape;

	for (shape = 0; shape < 6; shape++) {
		for (n = 1; n < 4099; n += n < 40 ? 1 : 97) {
			double want;

			for (i = 0; i < n; i++) {
				switch (shape) {
				case 0: /* random */
					x[i] = (double)rand_r(&seed) / RAND_MAX;
					break;
				case 1: /* sorted */
					x[i] = (double)i;
					break;
				case 2: /* reversed */
					x[i] = (double)(n - i);
					break;
				case 3: /* few distinct values */
					x[i] = (double)(rand_r(&seed) % 3);
					break;
				case 4: /* all equal */
					x[i] = 7;
					break;
				default: /* organ pipe */
					x[i] = (double)(i < n / 2 ? i : n - i);
				}
			}
			memcpy(s, x, n * sizeof(*x));
			qsort(s, n, sizeof(*s), by_value);
			want = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
			assert_true(sonde_stats__median_inplace(x, n) == want);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_t_quantiles),
		cmocka_unit_test(test_outliers),
		cmocka_unit_test(test_hyperfine_rule),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_bimodal),
		cmocka_unit_test(test_median_selection),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
