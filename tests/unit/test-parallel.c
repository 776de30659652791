/* Unit tests: independent items on several threads; a sequence through two stages. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>
#include <sonde/parallel.h>

struct seen {
	atomic_int *calls;
};

static void mark(void *ctx, size_t i)
{
	struct seen *s = ctx;

	atomic_fetch_add(&s->calls[i], 1);
}

/* Every item is done exactly once, whatever the count and the grain. */
static void test_each_item_once(void **state)
{
	static const size_t ns[] = { 0, 1, 2, 3, 15, 16, 17, 1000, 4099 };
	static const size_t grains[] = { 0, 1, 16, 5000 };
	size_t a, b, i;

	for (a = 0; a < sizeof(ns) / sizeof(ns[0]); a++) {
		for (b = 0; b < sizeof(grains) / sizeof(grains[0]); b++) {
			struct seen s = { calloc(ns[a] + 1, sizeof(atomic_int)) };

			assert_non_null(s.calls);
			sonde_parallel__for(ns[a], grains[b], mark, &s);
			for (i = 0; i < ns[a]; i++)
				assert_int_equal(atomic_load(&s.calls[i]), 1);
			assert_int_equal(atomic_load(&s.calls[ns[a]]), 0);
			free(s.calls);
		}
	}
}

/* The two stages of a pipe: numbers 0..n-1 made, and checked in order. */
struct seq {
	uint64_t n, made, taken, batches;
	size_t fail_at; /* consume fails at this batch (1-based; 0: never) */
	pthread_t producer;
	int bad;
};

static size_t make(void *ctx, void *buf, size_t cap)
{
	struct seq *q = ctx;
	uint64_t *out = buf;
	size_t k = 0;

	q->producer = pthread_self();
	while (k < cap && q->made < q->n)
		out[k++] = q->made++;
	return k;
}

static int take_seq(void *ctx, const void *buf, size_t n)
{
	struct seq *q = ctx;
	const uint64_t *in = buf;
	size_t i;

	if (++q->batches == q->fail_at)
		return -EIO;
	for (i = 0; i < n; i++)
		q->bad += in[i] != q->taken++;
	return 0;
}

/* Every item reaches consume once and in order, on one thread or on two. */
static void test_pipe_in_order(void **state)
{
	static const uint64_t ns[] = { 0, 1, 7, 8, 9, 100, 4096, 100003 };
	static const size_t batches[] = { 1, 8, 1000 };
	size_t a, b;

	(void)state;
	for (a = 0; a < sizeof(ns) / sizeof(ns[0]); a++) {
		for (b = 0; b < sizeof(batches) / sizeof(batches[0]); b++) {
			struct seq q = { .n = ns[a] }, one = { .n = ns[a] };

			assert_int_equal(sonde_parallel__pipe(sizeof(uint64_t), batches[b], ns[a],
							      make, &q, take_seq, &q),
					 0);
			assert_int_equal(q.bad, 0);
			assert_int_equal(q.taken, ns[a]);
			/* with nothing worth a thread, the same on the calling thread */
			assert_int_equal(sonde_parallel__pipe(sizeof(uint64_t), batches[b], 0, make,
							      &one, take_seq, &one),
					 0);
			assert_int_equal(one.taken, ns[a]);
			assert_int_equal(one.bad, 0);
			if (ns[a])
				assert_true(pthread_equal(one.producer, pthread_self()));
			/* enough items and a second CPU: produce has a thread of its own */
			if (ns[a] >= 4 * batches[b] && sysconf(_SC_NPROCESSORS_ONLN) > 1)
				assert_false(pthread_equal(q.producer, pthread_self()));
		}
	}
}

/* consume's error ends the sequence: it is returned and produce stops soon. */
static void test_pipe_error_stops(void **state)
{
	int threaded;

	(void)state;
	for (threaded = 0; threaded < 2; threaded++) {
		struct seq q = { .n = 1000000, .fail_at = 3 };

		assert_int_equal(sonde_parallel__pipe(sizeof(uint64_t), 10, threaded ? q.n : 0,
						      make, &q, take_seq, &q),
				 -EIO);
		assert_int_equal(q.batches, 3);
		assert_int_equal(q.taken, 20);
		/* produce was at most a few batches ahead, not through the sequence */
		assert_true(q.made <= 10 * 10);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_item_once),
		cmocka_unit_test(test_pipe_in_order),
		cmocka_unit_test(test_pipe_error_stops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
