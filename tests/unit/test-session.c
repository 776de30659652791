/*
 * Unit tests: the session state machine (calls out of order are refused) and a
 * real series through the runner with a collector that counts its hooks.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <sonde/session.h>

static int calls_before, calls_start, calls_stop, calls_after, calls_cleanup, warm_stops;
static pid_t started_pid;

static int h_before(struct sonde_collection *c)
{
	calls_before++;
	return sonde_collection__setenv(c, "SONDE_TEST_VAR", "1");
}

static int h_start(struct sonde_collection *c, pid_t pid)
{
	calls_start++;
	started_pid = pid;
	return 0;
}

static int h_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	calls_stop++;
	warm_stops += ri->warmup;
	assert_int_equal(ri->run->pid, started_pid);
	return 0;
}

static int h_after(struct sonde_collection *c, struct sonde_profile *p)
{
	calls_after++;
	return 0;
}

static void h_cleanup(struct sonde_collection *c)
{
	calls_cleanup++;
}

static const struct sonde_collector counting = {
	.abi = SONDE_COLLECTOR_ABI,
	.name = "counting",
	.profile_type = "custom",
	.flags = SONDE_COLLECTOR_NEEDS_BARRIER,
	.before = h_before,
	.start = h_start,
	.stop = h_stop,
	.after = h_after,
	.cleanup = h_cleanup,
};

static char *exit_prog(void)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/s-exit", getenv("PROGS"));
	return path;
}

static void test_order(void **state)
{
	char *argv[] = { exit_prog(), NULL };
	struct sonde_session_opts o = { .sz = sizeof(o), .argv = argv, .repeat = 3, .warmup = 1 };
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_session *s = sonde_session__new(&o);

	assert_non_null(s);
	assert_int_equal(sonde_session__state(s), SONDE_SESSION_UNINITIALIZED);
	assert_int_equal(sonde_session__run(s, &err), -EINVAL);
	assert_int_equal(sonde_session__after(s, &err), -EINVAL);
	assert_int_equal(sonde_session__before(s, &err), -EINVAL); /* no collector */
	assert_int_equal(sonde_session__add(s, &counting, NULL), 0);
	assert_int_equal(sonde_session__before(s, &err), 0);
	assert_int_equal(sonde_session__state(s), SONDE_SESSION_IDLE);
	assert_int_equal(sonde_session__add(s, &counting, NULL), -EINVAL);
	assert_int_equal(sonde_session__before(s, &err), -EINVAL);
	assert_null(sonde_session__profile(s, 0));
	assert_int_equal(sonde_session__run(s, &err), 0);
	assert_int_equal(sonde_session__state(s), SONDE_SESSION_IDLE);
	assert_int_equal(sonde_session__run(s, &err), -EINVAL); /* one series per session */
	assert_int_equal(sonde_session__after(s, &err), 0);
	assert_int_equal(sonde_session__state(s), SONDE_SESSION_FINALIZED);
	assert_int_equal(sonde_session__after(s, &err), -EINVAL);
	assert_int_equal(sonde_session__run(s, &err), -EINVAL);
	assert_non_null(sonde_session__profile(s, 0));
	assert_int_equal(calls_before, 1);
	assert_int_equal(calls_start, 4);
	assert_int_equal(calls_stop, 4);
	assert_int_equal(warm_stops, 1);
	assert_int_equal(calls_after, 1);
	assert_int_equal(sonde_session__outcome(s)->runs, 3);
	assert_int_equal(sonde_session__outcome(s)->warmups, 1);
	sonde_session__free(s);
	assert_int_equal(calls_cleanup, 1);
	sonde_strbuf__release(&err);
}

static void test_missing_command(void **state)
{
	char *argv[] = { "/nonexistent/sonde-cmd", NULL };
	struct sonde_session_opts o = { .sz = sizeof(o), .argv = argv, .repeat = 1 };
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_session *s = sonde_session__new(&o);

	assert_int_equal(sonde_session__add(s, &counting, NULL), 0);
	assert_int_equal(sonde_session__before(s, &err), -ENOENT);
	assert_non_null(strstr(err.buf, "cannot execute '/nonexistent/sonde-cmd'"));
	assert_int_equal(sonde_session__state(s), SONDE_SESSION_UNINITIALIZED);
	sonde_session__free(s);
	sonde_strbuf__release(&err);
}

static int h_refuse(struct sonde_collection *c, pid_t pid)
{
	return -EPERM;
}

static const struct sonde_collector refusing = {
	.abi = SONDE_COLLECTOR_ABI,
	.name = "refusing",
	.profile_type = "custom",
	.flags = SONDE_COLLECTOR_NEEDS_BARRIER,
	.start = h_refuse,
};

/* When a collector cannot attach, the target waiting at the barrier never executes. */
static void test_attach_failure(void **state)
{
	char dir[] = "/tmp/sonde-attach-XXXXXX", mark[64];
	char *argv[] = { "/bin/touch", mark, NULL };
	struct sonde_session_opts o = { .sz = sizeof(o), .argv = argv, .repeat = 1 };
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_session *s;
	int i;

	assert_non_null(mkdtemp(dir));
	snprintf(mark, sizeof(mark), "%s/ran", dir);
	for (i = 0; i < 20; i++) { /* the exec raced the kill before: try it often */
		s = sonde_session__new(&o);
		assert_int_equal(sonde_session__add(s, &refusing, NULL), 0);
		assert_int_equal(sonde_session__before(s, &err), 0);
		assert_int_equal(sonde_session__run(s, &err), -EPERM);
		assert_int_equal(sonde_session__outcome(s)->runs, 0);
		sonde_session__free(s);
		assert_int_equal(access(mark, F_OK), -1);
	}
	rmdir(dir);
	sonde_strbuf__release(&err);
}

static void test_bad_opts(void **state)
{
	struct sonde_session_opts o = { .sz = sizeof(o) };

	assert_null(sonde_session__new(&o));
	assert_int_equal(errno, EINVAL);
	o.sz = 4;
	assert_null(sonde_session__new(&o));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_missing_command),
		cmocka_unit_test(test_attach_failure),
		cmocka_unit_test(test_bad_opts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
