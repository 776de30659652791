/* Unit tests: numbers for people, held to what printf writes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <sonde/format.h>
#include "format-fast.h"

static uint64_t seed = 88172645463325252ull;

static uint64_t next(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static void same_as_printf(double v, int d, const char *suffix)
{
	char want[64], got[64];

	snprintf(want, sizeof(want), "%.*f%s", d, v, suffix ? suffix : "");
	sonde_format__fixed(v, d, suffix, got, sizeof(got));
	if (strcmp(want, got))
		fail_msg("%.17g with %d decimals: printf \"%s\", sonde \"%s\"", v, d, want, got);
}

/* Values where rounding is decided on the last bit, or by a tie. */
static void test_fixed_edges(void **state)
{
	static const double v[] = {
		0.0,	     -0.0,   0.5,
		1.5,	     2.5,    -2.5,
		0.125,	     0.375,  1e-9,
		-1e-9,	     0.0005, 0.045,
		1.005,	     2.675,  999.9995,
		123456789.5, 9.5,    0.05,
		-0.0004,     1e15,   1125899906842623.0,
		1e16,	     1e300,  INFINITY,
		-INFINITY,   NAN,    4503599627370495.5,
	};
	size_t i;
	int d;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		for (d = 0; d <= 9; d++) {
			same_as_printf(v[i], d, NULL);
			same_as_printf(v[i], d, " ms");
		}
}

/* Two million values of every kind: random bits, decimals, exact binary ties. */
static void test_fixed_random(void **state)
{
	long i, plain = 0, fast = 0;

	(void)state;
	for (i = 0; i < 2000000; i++) {
		uint64_t r = next(), bits;
		double v;

		switch (r & 3) {
		case 0:
			bits = next();
			memcpy(&v, &bits, sizeof(v));
			break;
		case 1:
			v = (double)(next() % 100000000) / pow(10, (double)(next() % 8));
			break;
		case 2:
			v = ((double)(next() >> 11) / 9007199254740992.0) *
			    pow(10, (double)((int)(next() % 20) - 6));
			break;
		default:
			v = (double)(next() % 20000) / 8.0 - 1000; /* exact ties at 3 decimals */
			break;
		}
		same_as_printf(v, (int)(next() % 10), (r & 4) ? " µs" : NULL);
		/* the values a table shows go without printf, but near a tie (a value
		   of 4 to 7 decimals ending in 5 shown with 3: about 1.5 % here) */
		if ((r & 3) == 1) {
			char buf[64];

			plain++;
			fast += sonde_format__fixed_fast(v, 3, " ms", buf, sizeof(buf));
		}
	}
	assert_true(plain > 400000 && fast > plain * 97 / 100);
}

/* A buffer too small for the digits: printf's truncation, never an overflow. */
static __attribute__((noinline)) void cut_to(size_t len)
{
	char want[64], got[64];

	memset(got, 'x', sizeof(got));
	snprintf(want, len, "%.*f%s", 3, 123456.789, " ms");
	sonde_format__fixed(123456.789, 3, " ms", got, len);
	assert_string_equal(got, want);
	assert_int_equal(got[len], 'x');
}

static void test_fixed_small_buffer(void **state)
{
	size_t len;

	(void)state;
	for (len = 1; len < 16; len++)
		cut_to(len);
}

/* The human formats built on it. */
static void test_units(void **state)
{
	char b[64];

	(void)state;
	assert_string_equal(sonde_format__duration(812, b, sizeof(b)), "812 ns");
	assert_string_equal(sonde_format__duration(12345, b, sizeof(b)), "12.35 µs");
	assert_string_equal(sonde_format__duration(4.5678e6, b, sizeof(b)), "4.568 ms");
	assert_string_equal(sonde_format__duration(123.45e9, b, sizeof(b)), "123.5 s");
	assert_string_equal(sonde_format__duration(NAN, b, sizeof(b)), "-");
	assert_string_equal(sonde_format__bytes(512, b, sizeof(b)), "512 B");
	assert_string_equal(sonde_format__bytes(1536, b, sizeof(b)), "1.5 KiB");
	assert_string_equal(sonde_format__duration_in(4560123, "us", b, sizeof(b)), "4560.123 µs");
	assert_string_equal(sonde_format__value(3, NULL, b, sizeof(b)), "3");
	assert_string_equal(sonde_format__value(3.14159, "widgets", b, sizeof(b)), "3.14");
	assert_string_equal(sonde_format__value(0.000123456, NULL, b, sizeof(b)), "0.000123");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed_edges),
		cmocka_unit_test(test_fixed_random),
		cmocka_unit_test(test_fixed_small_buffer),
		cmocka_unit_test(test_units),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
