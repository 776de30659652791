/* Unit tests: independent items on several threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_item_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
