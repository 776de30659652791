/* Unit tests: the region timer (include/sonde/timer.h), nesting, threads, warm-up, its profile. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <jansson.h>
#include <sonde/profile.h>
#include <sonde/timer.h>

static void spin_ns(uint64_t ns)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u + (uint64_t)(b.tv_nsec - a.tv_nsec) <
	       ns);
}

/* the named resource's column as an array (borrowed from the profile's tree) */
static json_t *column(struct sonde_profile *p, const char *uid, const char *col)
{
	json_t *rtm = sonde_profile__part(p, "resource_type_map"),
	       *res = sonde_profile__part(p, "resources"), *v;
	const char *key;

	json_object_foreach(rtm, key, v)
	{
		if (!strcmp(json_string_value(json_object_get(v, "uid")), uid))
			return json_object_get(json_object_get(res, key), col);
	}
	return NULL;
}

static void test_nesting_and_warmup(void **state)
{
	struct sonde_timer *t = sonde_timer__new(1);
	struct sonde_summary s;
	struct sonde_profile *p;
	json_t *depth, *amount;
	int i;

	assert_non_null(t);
	for (i = 0; i < 4; i++) {
		assert_int_equal(sonde_timer__begin(t, "outer"), 0);
		assert_int_equal(sonde_timer__begin(t, "inner"), 0);
		spin_ns(200000);
		assert_int_equal(sonde_timer__end(t, "inner"), 0);
		spin_ns(100000);
		assert_int_equal(sonde_timer__end(t, "outer"), 0);
	}
	assert_int_equal(sonde_timer__count(t), 2);
	assert_string_equal(sonde_timer__name(t, 0), "outer");
	assert_null(sonde_timer__name(t, 2));
	/* 4 samples, the first is warm-up */
	assert_int_equal(sonde_timer__stats(t, "inner", &s), 0);
	assert_int_equal(s.n, 3);
	assert_true(s.min >= 200000);
	assert_int_equal(sonde_timer__stats(t, "outer", &s), 0);
	assert_true(s.min >= 300000);
	/* errors: not begun, unknown, empty */
	assert_int_equal(sonde_timer__end(t, "inner"), -ENOENT);
	assert_int_equal(sonde_timer__end(t, "never"), -ENOENT);
	assert_int_equal(sonde_timer__stats(t, "never", &s), -ENOENT);
	assert_int_equal(sonde_timer__begin(t, ""), -EINVAL);
	assert_int_equal(sonde_timer__enter(t, 7), -EINVAL);

	p = sonde_timer__profile(t, "unit");
	assert_non_null(p);
	assert_string_equal(sonde_profile__type(p), "time");
	depth = column(p, "inner", "depth");
	amount = column(p, "inner", "amount");
	assert_int_equal(json_array_size(amount), 3);
	assert_int_equal(json_integer_value(json_array_get(depth, 0)), 1);
	assert_int_equal(json_integer_value(json_array_get(column(p, "outer", "depth"), 0)), 0);
	assert_true(json_integer_value(json_array_get(amount, 0)) >= 200000);
	sonde_profile__free(p);
	sonde_timer__free(t);
}

/* a region of one name open twice: end closes the innermost */
static void test_recursion(void **state)
{
	struct sonde_timer *t = sonde_timer__new(0);
	struct sonde_summary s;

	assert_int_equal(sonde_timer__begin(t, "f"), 0);
	spin_ns(300000);
	assert_int_equal(sonde_timer__begin(t, "f"), 0);
	spin_ns(100000);
	assert_int_equal(sonde_timer__end(t, "f"), 0);
	assert_int_equal(sonde_timer__end(t, "f"), 0);
	assert_int_equal(sonde_timer__stats(t, "f", &s), 0);
	assert_int_equal(s.n, 2);
	assert_true(s.min >= 100000 && s.min < s.max && s.max >= 400000);
	sonde_timer__free(t);
}

static struct sonde_timer *shared;

static void *record(void *arg)
{
	long id = sonde_timer__region(shared, "work");
	int i;

	for (i = 0; i < 1000; i++) {
		if (sonde_timer__enter(shared, id) || sonde_timer__leave(shared, id))
			return arg; /* non-NULL: a failure */
	}
	/* by name on a thread that began by id */
	if (sonde_timer__enter(shared, id) || sonde_timer__end(shared, "work"))
		return arg;
	return NULL;
}

/* eight threads at once: every sample kept, each with its thread */
static void test_threads(void **state)
{
	pthread_t th[8];
	struct sonde_summary s;
	struct sonde_profile *p;
	json_t *tids;
	void *r;
	size_t i, distinct = 0;
	long seen[8] = { 0 };
	int k;

	shared = sonde_timer__new(0);
	for (k = 0; k < 8; k++)
		assert_int_equal(pthread_create(&th[k], NULL, record, (void *)1), 0);
	/* a reader while they record: stats must not crash nor tear */
	(void)sonde_timer__stats(shared, "work", &s);
	for (k = 0; k < 8; k++) {
		assert_int_equal(pthread_join(th[k], &r), 0);
		assert_null(r);
	}
	assert_int_equal(sonde_timer__stats(shared, "work", &s), 0);
	assert_int_equal(s.n, 8 * 1001);
	p = sonde_timer__profile(shared, NULL);
	tids = column(p, "work", "thread");
	assert_int_equal(json_array_size(tids), 8 * 1001);
	for (i = 0; i < json_array_size(tids); i++) {
		long tid = (long)json_integer_value(json_array_get(tids, i));
		size_t j;

		for (j = 0; j < distinct && seen[j] != tid; j++)
			;
		if (j == distinct && distinct < 8)
			seen[distinct++] = tid;
	}
	assert_int_equal(distinct, 8);
	sonde_profile__free(p);
	sonde_timer__free(shared);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nesting_and_warmup),
		cmocka_unit_test(test_recursion),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
