/* Unit tests: the map from strings to values that views group resources with. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "strmap.h"

/* A hundred thousand keys of every length: each found with its own value. */
static void test_many_keys(void **state)
{
	struct sonde_strmap m = SONDE_STRMAP_INIT;
	char key[64];
	size_t i;

	(void)state;
	for (i = 0; i < 100000; i++) {
		int len = snprintf(key, sizeof(key), "%zu%.*s", i, (int)(i % 40),
				   "/usr/include/c++/12/bits/stl_vector.h");
		bool existed = true;
		uint64_t *v = sonde_strmap__upsert(&m, key, (size_t)len, &existed);

		assert_non_null(v);
		assert_false(existed);
		assert_int_equal(*v, 0); /* a new key's value starts at 0 */
		*v = i * 3 + 1;
	}
	assert_int_equal(m.n, 100000);
	for (i = 0; i < 100000; i++) {
		int len = snprintf(key, sizeof(key), "%zu%.*s", i, (int)(i % 40),
				   "/usr/include/c++/12/bits/stl_vector.h");
		uint64_t *v = sonde_strmap__get(&m, key, (size_t)len);
		bool existed = false;

		assert_non_null(v);
		assert_int_equal(*v, i * 3 + 1);
		assert_ptr_equal(sonde_strmap__upsert(&m, key, (size_t)len, &existed), v);
		assert_true(existed);
		/* the same bytes and one more are another key */
		key[len] = '/';
		assert_true(sonde_strmap__get(&m, key, (size_t)len + 1) != v);
	}
	assert_int_equal(m.n, 100000);
	sonde_strmap__release(&m);
	assert_null(sonde_strmap__gets(&m, "0"));
}

/* Keys are bytes: NUL inside, prefixes, the empty key, long keys. */
static void test_bytes(void **state)
{
	struct sonde_strmap m = SONDE_STRMAP_INIT;
	static const char a[] = "ab\0cd", b[] = "ab\0ce";
	char longkey[3000];
	bool existed;

	(void)state;
	assert_null(sonde_strmap__gets(&m, "")); /* an empty map */
	*sonde_strmap__upsert(&m, a, 5, &existed) = 1;
	*sonde_strmap__upsert(&m, b, 5, &existed) = 2;
	*sonde_strmap__upsert(&m, a, 2, &existed) = 3; /* "ab" */
	*sonde_strmap__upserts(&m, "", &existed) = 4;
	memset(longkey, 'x', sizeof(longkey));
	*sonde_strmap__upsert(&m, longkey, sizeof(longkey), &existed) = 5;
	assert_int_equal(*sonde_strmap__get(&m, a, 5), 1);
	assert_int_equal(*sonde_strmap__get(&m, b, 5), 2);
	assert_int_equal(*sonde_strmap__gets(&m, "ab"), 3);
	assert_int_equal(*sonde_strmap__gets(&m, ""), 4);
	assert_int_equal(*sonde_strmap__get(&m, longkey, sizeof(longkey)), 5);
	assert_null(sonde_strmap__get(&m, longkey, sizeof(longkey) - 1));
	assert_null(sonde_strmap__gets(&m, "a"));
	assert_null(sonde_strmap__get(&m, a, 4));
	assert_int_equal(m.n, 5);
	sonde_strmap__release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_many_keys),
		cmocka_unit_test(test_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
