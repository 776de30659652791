/* Unit tests: the string buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sonde/strbuf.h>

static void test_empty_is_terminated(void **state)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;

	assert_non_null(sb.buf);
	assert_string_equal(sb.buf, "");
	sonde_strbuf__release(&sb);
	assert_string_equal(sb.buf, "");
}

static void test_add_and_grow(void **state)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	int i;

	for (i = 0; i < 1000; i++)
		assert_int_equal(sonde_strbuf__addf(&sb, "%d,", i % 10), 0);
	assert_int_equal(sb.len, 2000);
	assert_int_equal(sb.buf[sb.len], '\0');
	assert_memory_equal(sb.buf, "0,1,2,", 6);
	sonde_strbuf__setlen(&sb, 3);
	assert_string_equal(sb.buf, "0,1");
	sonde_strbuf__release(&sb);
}

static void test_detach(void **state)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	size_t len;
	char *s;

	sonde_strbuf__adds(&sb, "abc");
	s = sonde_strbuf__detach(&sb, &len);
	assert_string_equal(s, "abc");
	assert_int_equal(len, 3);
	assert_int_equal(sb.len, 0);
	assert_string_equal(sb.buf, "");
	free(s);
	/* detaching an empty buffer still gives a heap string */
	s = sonde_strbuf__detach(&sb, NULL);
	assert_non_null(s);
	assert_string_equal(s, "");
	free(s);
}

/* "%*s" with SONDE_COLS pads by characters: "µs" takes one column, as "ms" does */
static void test_cols(void **state)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	const char *us = "103.3 \u00b5s", *ms = "103.3 ms";

	assert_int_equal(sonde_strbuf__cols(ms, 10), 10);
	assert_int_equal(sonde_strbuf__cols(us, 10), 11);
	assert_int_equal(sonde_strbuf__cols(us, -10), -11);
	assert_int_equal(sonde_strbuf__cols(NULL, 4), 4);
	sonde_strbuf__addf(&sb, "[%*s][%*s]", SONDE_COLS(us, 10), SONDE_COLS(us, -10));
	assert_string_equal(sb.buf, "[  103.3 \u00b5s][103.3 \u00b5s  ]");
	sonde_strbuf__reset(&sb);
	sonde_strbuf__addf(&sb, "[%*s]", SONDE_COLS(ms, 10));
	assert_string_equal(sb.buf, "[  103.3 ms]");
	/* wider than the column: as printf, nothing is cut */
	sonde_strbuf__reset(&sb);
	sonde_strbuf__addf(&sb, "[%*s]", SONDE_COLS(us, 3));
	assert_string_equal(sb.buf, "[103.3 \u00b5s]");
	sonde_strbuf__release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_is_terminated),
		cmocka_unit_test(test_add_and_grow),
		cmocka_unit_test(test_detach),
		cmocka_unit_test(test_cols),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
