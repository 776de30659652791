/* Unit tests: the periodic sampler thread (lib/ticker.c), its deadlines and
   what it says of calls made late. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>
#include <sonde/clock.h>
#include "ticker.h"

#define PERIOD_NS 10000000ull /* 10 ms */

struct calls {
	uint64_t at[64];
	unsigned n;
	unsigned hold; /* the call that takes 35 ms (3.5 periods) */
};

static void record(void *arg)
{
	struct calls *c = arg;

	if (c->n < 64)
		c->at[c->n] = sonde_clock_ns();
	if (c->n++ == c->hold) {
		struct timespec d = { 0, 35000000 };

		nanosleep(&d, NULL);
	}
}

/* A call that overruns three deadlines: the next call is late by 25 ms or
   more, counted; the deadlines it missed are skipped (no burst of calls an
   instant apart), and the one after comes at least half a period later. */
static void test_late_skips(void **state)
{
	struct calls c = { .hold = 3 };
	struct ticker t = { .fn = record, .ctx = &c, .period_ns = PERIOD_NS };
	struct timespec d = { 0, 150000000 };

	(void)state;
	assert_int_equal(ticker__start(&t), 0);
	nanosleep(&d, NULL);
	ticker__stop(&t);
	assert_true(c.n >= 6 && c.n <= 64);
	assert_true(t.late >= 1);
	assert_true(t.late_max_ns >= 24000000 && t.late_max_ns < 1000000000);
	/* the late call started over 35 ms after the held one, and the next
	   came at least half a period after it (a call late by less than a
	   period, as a loaded machine makes them, may be followed sooner) */
	assert_true(c.at[4] - c.at[3] >= 35000000);
	assert_true(c.at[5] - c.at[4] >= PERIOD_NS / 2 - 500000);
}

/* ticker__add_late keeps the count over runs and the largest lateness. */
static void test_add_late(void **state)
{
	struct ticker_late acc = { 0 };
	struct ticker a = { .late = 2, .late_max_ns = 30 }, b = { .late = 1, .late_max_ns = 20 };

	(void)state;
	ticker__add_late(&acc, &a);
	ticker__add_late(&acc, &b);
	assert_int_equal(acc.n, 3);
	assert_int_equal(acc.max_ns, 30);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_late_skips),
		cmocka_unit_test(test_add_late),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
