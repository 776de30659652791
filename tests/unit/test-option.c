/* Unit tests: option tables, values, errors, help. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include <sonde/option.h>

static long long repeat;
static double timeout;
static bool flag;
static int verbose;
static const char *mode, *name;
static struct sonde_strlist list;
static const char *const modes[] = { "a", "b", NULL };

static const struct sonde_option sub[] = {
	{ SONDE_OPT_STRING, 0, "name", &name, "NAME", "a name" },
	{ .type = SONDE_OPT_END },
};
static const struct sonde_option opts[] = {
	{ SONDE_OPT_INT, 'r', "repeat", &repeat, "N", "runs", 1, 1e9 },
	{ SONDE_OPT_DOUBLE, 't', "timeout", &timeout, "S", "seconds", 0, 1e9 },
	{ SONDE_OPT_FLAG, 'f', "flag", &flag, NULL, "a flag" },
	{ SONDE_OPT_COUNT, 'v', "verbose", &verbose, NULL, "more" },
	{ SONDE_OPT_CHOICE, 0, "mode", &mode, NULL, "mode", 0, 0, modes },
	{ SONDE_OPT_LIST, 'l', "list", &list, "X", "items" },
	{ SONDE_OPT_GROUP, 0, NULL, NULL, NULL, "nested", 0, 0, NULL, sub },
	{ .type = SONDE_OPT_END },
};

static int reset(void **state)
{
	repeat = 0;
	timeout = 0;
	flag = false;
	verbose = 0;
	mode = name = NULL;
	sonde_strlist__release(&list);
	return 0;
}

static int parse(int argc, char **argv, struct sonde_optparse *st)
{
	return sonde_options__parse(opts, argc, argv, st);
}

static void test_forms(void **state)
{
	char *argv[] = { "-r5",	     "--timeout=1.5", "-fvv", "--mode", "b",  "-l", "x",
			 "--list=y", "--name",	      "n",    "cmd",	"-r", "9" };
	struct sonde_optparse st = { .params = json_object() };
	int first = parse(13, argv, &st);

	assert_int_equal(first, 10);
	assert_int_equal(repeat, 5);
	assert_true(timeout == 1.5);
	assert_true(flag);
	assert_int_equal(verbose, 2);
	assert_string_equal(mode, "b");
	assert_int_equal(list.n, 2);
	assert_string_equal(list.items[1], "y");
	assert_string_equal(name, "n");
	assert_string_equal(argv[first], "cmd");
	assert_int_equal(json_integer_value(json_object_get(st.params, "repeat")), 5);
	assert_int_equal(json_integer_value(json_object_get(st.params, "verbose")), 2);
	assert_int_equal(json_array_size(json_object_get(st.params, "list")), 2);
	json_decref(st.params);
	sonde_optparse__release(&st);
}

static void test_double_dash_and_permute(void **state)
{
	char *argv[] = { "p1", "-f", "p2", "--", "-r" };
	struct sonde_optparse st = { .flags = SONDE_OPTPARSE_PERMUTE };
	int first = parse(5, argv, &st);

	assert_int_equal(first, 2);
	assert_string_equal(argv[2], "p1");
	assert_string_equal(argv[3], "p2");
	assert_string_equal(argv[4], "-r");
	assert_true(flag);
	sonde_optparse__release(&st);
}

static void expect_error(char *a, char *b, const char *msg)
{
	char *argv[] = { a, b };
	struct sonde_optparse st = { 0 };

	assert_int_equal(parse(b ? 2 : 1, argv, &st), -EINVAL);
	assert_string_equal(st.err.buf, msg);
	sonde_optparse__release(&st);
}

static void test_errors(void **state)
{
	expect_error("-r", "-1", "invalid value '-1' for '-r': must be between 1 and 1000000000");
	expect_error("-r", "abc", "invalid value 'abc' for '-r': expected an integer");
	expect_error("--repeat", "2x", "invalid value '2x' for '--repeat': expected an integer");
	expect_error("--timeout", "nan", "invalid value 'nan' for '--timeout': expected a number");
	expect_error("--mode", "c", "invalid value 'c' for '--mode': expected one of a, b");
	expect_error("--nope", NULL, "unknown option '--nope'");
	expect_error("-x", NULL, "unknown option '-x'");
	expect_error("-r", NULL, "option '-r' needs a value");
	expect_error("--flag=1", NULL, "option '--flag' takes no value");
}

static void test_help(void **state)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	char *argv[] = { "--help" };
	struct sonde_optparse st = { 0 };

	assert_int_equal(parse(1, argv, &st), 1);
	assert_true(st.help);
	sonde_options__help(opts, &sb);
	assert_non_null(strstr(sb.buf, "  -r, --repeat N"));
	assert_non_null(strstr(sb.buf, "--mode a|b"));
	assert_non_null(strstr(sb.buf, "nested:\n"));
	assert_non_null(strstr(sb.buf, "--name NAME"));
	assert_non_null(strstr(sb.buf, "-h, --help"));
	sonde_strbuf__release(&sb);
	sonde_optparse__release(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_forms, reset),
		cmocka_unit_test_setup(test_double_dash_and_permute, reset),
		cmocka_unit_test_setup(test_errors, reset),
		cmocka_unit_test_setup(test_help, reset),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);

	sonde_strlist__release(&list);
	return rc;
}
