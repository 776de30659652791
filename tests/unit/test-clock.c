/* Unit tests: the clocks, and the TSC read together with the monotonic clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>
#include <sonde/clock.h>

/* The pair's clock reading lies between two readings taken around it. */
static void test_pair_within(void **state)
{
	uint64_t before = sonde_clock_ns(), tick, ns, after;

	sonde_clock_tsc_pair(&tick, &ns);
	after = sonde_clock_ns();
	assert_true(before <= ns && ns <= after);
	assert_true(tick > 0);
}

/* Two pairs 20 ms apart map a third TSC reading onto the clock to 200 µs. */
static void test_pair_maps(void **state)
{
	struct timespec d = { 0, 20000000 };
	uint64_t t0, n0, t1, n1, t2, n2;
	double per;

	sonde_clock_tsc_pair(&t0, &n0);
	nanosleep(&d, NULL);
	sonde_clock_tsc_pair(&t1, &n1);
	nanosleep(&d, NULL);
	sonde_clock_tsc_pair(&t2, &n2);
	assert_true(t1 > t0 && t2 > t1 && n1 > n0 + 19000000);
#if defined(__x86_64__)
	per = (double)(n1 - n0) / (double)(t1 - t0);
	{
		double want = (double)n0 + (double)(t2 - t0) * per, got = (double)n2;

		assert_true(got - want < 200000 && want - got < 200000);
	}
#else
	(void)per;
	assert_true(t0 == n0 && t2 == n2);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pair_within),
		cmocka_unit_test(test_pair_maps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
