/*
 * Unit tests: the expression engine and the counter_defs.yaml loader on
 * synthetic values: reduce over several dimension instances, accumulate over
 * a series, nested derived metrics, instance ids, and every error path.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sonde/counters.h>
#include "../../lib/engines/counters/counters.h"

/* a name -> values table */
struct vals {
	const char *name[8];
	double v[8][8];
	size_t n[8];
};

static int lookup(void *ctx, const char *name, struct expr_vec *out, struct expr_error *err)
{
	struct vals *t = ctx;
	size_t i;

	(void)err;
	for (i = 0; i < 8 && t->name[i]; i++)
		if (!strcmp(t->name[i], name)) {
			out->v = t->v[i];
			out->n = t->n[i];
			return 0;
		}
	return -ENOENT;
}

static int eval(const char *src, struct vals *t, struct expr_env *env, double *out, size_t *n,
		struct expr_error *err)
{
	struct expr_node *ast = expr_parse(src, err);
	int rc;

	if (!ast)
		return -EINVAL;
	env->lookup = lookup;
	env->ctx = t;
	rc = expr_eval(ast, env, out, 64, n, err);
	expr_free(ast);
	return rc;
}

static void test_arithmetic(void **state)
{
	struct vals t = { { "a", "b" }, { { 6 }, { 4 } }, { 1, 1 } };
	struct expr_env env = { 0 };
	struct expr_error err;
	double out[64];
	size_t n;

	(void)state;
	assert_int_equal(eval("a+b*2-(a-b)/2", &t, &env, out, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_true(fabs(out[0] - (6 + 8 - 1)) < 1e-12);
	assert_int_equal(eval("-a*-b", &t, &env, out, &n, &err), 0);
	assert_true(out[0] == 24);
	assert_int_equal(eval("1e3/a", &t, &env, out, &n, &err), 0);
	assert_true(fabs(out[0] - 1000.0 / 6) < 1e-9);
}

static void test_reduce_dimensions(void **state)
{
	/* per-CPU values of two counters on four CPUs */
	struct vals t = { { "hit", "miss" }, { { 1, 2, 3, 4 }, { 4, 3, 2, 1 } }, { 4, 4 } };
	struct expr_env env = { 0 };
	struct expr_error err;
	double out[64];
	size_t n;

	(void)state;
	assert_int_equal(eval("100*reduce(hit,sum)/(reduce(hit,sum)+reduce(miss,sum))", &t, &env,
			      out, &n, &err),
			 0);
	assert_int_equal(n, 1);
	assert_true(fabs(out[0] - 50) < 1e-12);
	assert_int_equal(eval("reduce(hit,avr)", &t, &env, out, &n, &err), 0);
	assert_true(out[0] == 2.5);
	assert_int_equal(eval("reduce(hit-miss,min)", &t, &env, out, &n, &err), 0);
	assert_true(out[0] == -3);
	assert_int_equal(eval("reduce(hit*miss,max)", &t, &env, out, &n, &err), 0);
	assert_true(out[0] == 6);
	/* element-wise, a scalar stretches */
	assert_int_equal(eval("hit/reduce(hit,sum)", &t, &env, out, &n, &err), 0);
	assert_int_equal(n, 4);
	assert_true(fabs(out[3] - 0.4) < 1e-12);
}

static void test_accumulate_series(void **state)
{
	struct vals t = { { "c" }, { { 0 } }, { 1 } };
	struct expr_env env = { .series = true };
	struct expr_node *hi, *lo, *no;
	struct expr_error err;
	double out[8], want_lo[] = { 0, 0, 0, 10, 10, 10, 10, 36, 45 };
	size_t n, i;

	(void)state;
	hi = expr_parse("accumulate(c,HIGH_RES)", &err);
	lo = expr_parse("accumulate(c, LOW_RES)", &err);
	no = expr_parse("accumulate(c,NONE)", &err);
	assert_non_null(hi);
	assert_non_null(lo);
	assert_non_null(no);
	env.lookup = lookup;
	env.ctx = &t;
	for (i = 0; i < 9; i++) {
		t.v[0][0] = (double)(i + 1); /* samples 1, 2, ..., 9 */
		env.last_sample = i == 8;
		assert_int_equal(expr_eval(hi, &env, out, 8, &n, &err), 0);
		assert_true(out[0] == (double)((i + 1) * (i + 2) / 2));
		assert_int_equal(expr_eval(lo, &env, out, 8, &n, &err), 0);
		/* advanced at samples 4 and 8, and at the last (9): 10, 36, 45 */
		assert_true(out[0] == want_lo[i]);
		assert_int_equal(expr_eval(no, &env, out, 8, &n, &err), 0);
		assert_true(out[0] == (double)(i + 1));
	}
	free(env.accum);
	/* a single reading: all three equal the value */
	env = (struct expr_env){ .lookup = lookup, .ctx = &t };
	t.v[0][0] = 7;
	assert_int_equal(expr_eval(lo, &env, out, 8, &n, &err), 0);
	assert_true(out[0] == 7);
	expr_free(hi);
	expr_free(lo);
	expr_free(no);
}

static void test_division_by_zero(void **state)
{
	struct vals t = { { "a", "z" }, { { 1, 2 }, { 0, 1 } }, { 2, 2 } };
	struct expr_env env = { 0 };
	struct expr_error err;
	double out[64];
	size_t n;

	(void)state;
	assert_int_equal(eval("a / z", &t, &env, out, &n, &err), 0);
	assert_true(isnan(out[0]));
	assert_true(out[1] == 2);
	assert_int_equal(env.div0_col, 3);
}

struct bad {
	const char *src;
	int col;
	const char *msg;
};

static void test_parse_errors(void **state)
{
	static const struct bad cases[] = {
		{ "", 1, "empty expression" },
		{ "1+", 3, "expected a number" },
		{ "(a+b", 5, "expected ')'" },
		{ "a b", 3, "unexpected 'b'" },
		{ "reduce(a,median)", 10, "expected sum, avr, min or max" },
		{ "accumulate(a+b,NONE)", 13, "expected ','" },
		{ "accumulate(1,NONE)", 12, "takes a counter name" },
		{ "accumulate(a,FAST)", 14, "HIGH_RES, LOW_RES or NONE" },
		{ "foo(a)", 1, "unknown function 'foo'" },
		{ "1.2.3", 4, "unexpected '.'" },
		{ "2x", 1, "malformed number" },
		{ "a $ b", 3, "unexpected '$'" },
	};
	struct expr_error err;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct expr_node *n = expr_parse(cases[i].src, &err);

		if (n || err.col != cases[i].col || !strstr(err.msg, cases[i].msg))
			fail_msg("'%s': got column %d '%s'", cases[i].src, err.col, err.msg);
	}
	{
		char deep[300];

		memset(deep, '(', 200);
		strcpy(deep + 200, "1");
		assert_null(expr_parse(deep, &err));
		assert_non_null(strstr(err.msg, "nested deeper"));
	}
}

static void test_eval_errors(void **state)
{
	struct vals t = { { "a", "b" }, { { 1, 2 }, { 1, 2, 3 } }, { 2, 3 } };
	struct expr_env env = { 0 };
	struct expr_error err;
	double out[64];
	size_t n;

	(void)state;
	assert_int_equal(eval("a+b", &t, &env, out, &n, &err), -EINVAL);
	assert_int_equal(err.col, 2);
	assert_int_equal(eval("a+nope", &t, &env, out, &n, &err), -ENOENT);
	assert_int_equal(err.col, 3);
	assert_non_null(strstr(err.msg, "'nope'"));
}

/* instructions, cycles, task-clock = 300, 100, 50 */
static int set(void *u, const char *name, const double **vals, size_t *nv)
{
	static const double v[] = { 300, 100, 50 };
	const char *const *names = u;
	size_t i, j;

	for (i = 0; i < 3; i++) {
		for (j = 0; names[i][j] && name[j]; j++)
			if (names[i][j] != name[j] && !(names[i][j] == '-' && name[j] == '_'))
				break;
		if (!names[i][j] && !name[j]) {
			*vals = &v[i];
			*nv = 1;
			return 0;
		}
	}
	return -ENOENT;
}

static void test_catalog_nested(void **state)
{
	/* GIPS = IPC * GHZ, both derived; inputs resolved down to events */
	static const char *const names[] = { "instructions", "cycles", "task-clock" };
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	double out[4];
	size_t n;
	int div0;

	(void)state;
	assert_int_equal(sonde_counters__eval("GIPS", set, (void *)names, out, 4, &n, &div0, &err),
			 0);
	assert_true(fabs(out[0] - 6) < 1e-12);
	assert_int_equal(
		sonde_counters__eval("CPU_NUM*0+IPC", set, (void *)names, out, 4, &n, &div0, &err),
		0);
	assert_true(out[0] == 3);
	sonde_strbuf__release(&err);
}

static int count_defs(void *ctx, const struct cnt_def *d, struct sonde_strbuf *err)
{
	(void)err;
	(*(int *)ctx)++;
	if (!strcmp(d->name, "M"))
		assert_string_equal(d->expression, "2*x");
	if (!strcmp(d->name, "H")) {
		assert_string_equal(d->block, "skl");
		assert_string_equal(d->arch, "skl");
	}
	return 0;
}

static void test_defs(void **state)
{
	static const char ok[] = "M:\n  architectures:\n    a1/generic:\n      expression: 2*x\n"
				 "  description: m\n"
				 "H:\n  architectures:\n    generic:\n      block: perf\n"
				 "      event: cycles\n    skl/icl:\n      block: skl\n"
				 "      event: X\n  description: h\n"
				 "ONLY:\n  architectures:\n    zen9:\n      expression: 1\n";
	static const struct {
		const char *yaml, *msg;
	} bad[] = {
		{ "- a\n- b\n", "t:1:1: the top level must map" },
		{ "X: 1\n", "t:1:4: X: expected a mapping" },
		{ "X:\n  description: d\n", "X: no architectures" },
		{ "X:\n  architectures:\n    generic:\n      expression: 1\n      block: b\n",
		  "block or event" },
		{ "X:\n  architectures:\n    generic:\n      block: b\n",
		  "give either block and event" },
		{ "X:\n  architectures:\n    generic:\n      colour: red\n",
		  "t:4:7: X: unknown key 'colour'" },
		{ "X:\n  archs: 1\n", "t:2:3: X: unknown key 'archs'" },
		{ "1X:\n  architectures: {}\n", "'1X' is not a counter name" },
		{ "X: [\n", "t:2:1:" },
		{ "X:\n  architectures:\n    generic: [1]\n",
		  "must map block/event or expression" },
	};
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	size_t i;
	int count = 0;

	(void)state;
	assert_int_equal(
		cnt_defs__parse(ok, strlen(ok), "t", "skl", count_defs, NULL, &count, &err), 0);
	assert_int_equal(count, 2); /* ONLY has no entry for skl or generic */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sonde_strbuf__reset(&err);
		if (cnt_defs__parse(bad[i].yaml, strlen(bad[i].yaml), "t", "generic", count_defs,
				    NULL, &count, &err) != -EINVAL ||
		    !strstr(err.buf, bad[i].msg))
			fail_msg("case %zu: got '%s'", i, err.buf ? err.buf : "(nothing)");
	}
	sonde_strbuf__release(&err);
}

static void test_instance_ids(void **state)
{
	struct sonde_dim_pos dp = { { 3, 1, 0, SONDE_DIM_ALL, 0 } };
	uint64_t id;
	size_t pos;

	(void)state;
	assert_int_equal(sonde_instance__encode(42, &dp, &id), 0);
	assert_int_equal(sonde_instance__counter(id), 42);
	assert_int_equal(sonde_instance__dimension(id, SONDE_DIM_CPU, &pos), 0);
	assert_int_equal(pos, 3);
	assert_int_equal(sonde_instance__dimension(id, SONDE_DIM_CORE, &pos), 0);
	assert_int_equal(pos, 1);
	assert_int_equal(sonde_instance__dimension(id, SONDE_DIM_PACKAGE, &pos), 0);
	assert_int_equal(pos, 0);
	assert_int_equal(sonde_instance__dimension(id, SONDE_DIM_NUMA, &pos), -ENODATA);
	dp.pos[SONDE_DIM_CPU] = 1 << 14;
	assert_int_equal(sonde_instance__encode(1, &dp, &id), -ERANGE);
	assert_int_equal(sonde_instance__encode(1 << 16, NULL, &id), -ERANGE);
}

/* Per-CPU values of a process do not add up to its count: refused, one line. */
static void test_per_cpu_refused(void **state)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_counters_config *cfg = NULL;
	uint32_t id;

	(void)state;
	assert_int_equal(sonde_counters__find("task-clock", &id), 0);
	assert_int_equal(sonde_counters_config__new(0, &id, 1, SONDE_CONFIG_PER_CPU, &err, &cfg),
			 -EINVAL);
	assert_null(cfg);
	assert_non_null(strstr(err.buf, "agents"));
	sonde_strbuf__release(&err);
	assert_int_equal(sonde_counters_config__new(0, &id, 1, 0, &err, &cfg), 0);
	sonde_counters_config__free(cfg);
	sonde_strbuf__release(&err);
}

static void pick(const struct sonde_dispatch_info *d, const struct sonde_counters_config **cfg,
		 void *user)
{
	(void)d;
	*cfg = user;
}

static void discard(struct sonde_counters_buffer *b,
		    const struct sonde_counters_header *const *recs, size_t n, uint64_t dropped,
		    void *user)
{
	(void)b;
	(void)recs;
	(void)n;
	(void)dropped;
	(void)user;
}

/* One context after another on a thread, each with a config freed after it: the
   thread's counters of the first are closed by the second without reading the
   freed config (ASan caught it through the Python binding). */
static void test_contexts_in_turn(void **state)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	int round;
	uint32_t ids[2];

	(void)state;
	assert_int_equal(sonde_counters__find("task-clock", &ids[0]), 0);
	assert_int_equal(sonde_counters__find("page-faults", &ids[1]), 0);
	for (round = 0; round < 3; round++) {
		struct sonde_counters_config *cfg = NULL;
		struct sonde_counters_context *ctx = NULL;
		struct sonde_counters_buffer *buf = NULL;

		assert_int_equal(sonde_counters_config__new(0, ids, 2 - (size_t)(round & 1),
							    SONDE_CONFIG_MULTIPLEX, &err, &cfg),
				 0);
		assert_int_equal(sonde_counters_context__new(&ctx), 0);
		assert_int_equal(sonde_counters_buffer__new(ctx, 4096, 2048, SONDE_BUFFER_LOSSLESS,
							    discard, NULL, &buf),
				 0);
		assert_int_equal(sonde_counters__configure_dispatch(ctx, buf, pick, cfg), 0);
		if (sonde_counters_context__start(ctx, &err)) {
			sonde_counters_context__free(ctx);
			sonde_counters_config__free(cfg);
			skip(); /* no perf_event here */
		}
		sonde_region_begin("r");
		sonde_region_end();
		sonde_counters_context__stop(ctx);
		sonde_counters_context__free(ctx);
		sonde_counters_config__free(cfg);
	}
	sonde_strbuf__release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arithmetic),	  cmocka_unit_test(test_reduce_dimensions),
		cmocka_unit_test(test_accumulate_series), cmocka_unit_test(test_division_by_zero),
		cmocka_unit_test(test_parse_errors),	  cmocka_unit_test(test_eval_errors),
		cmocka_unit_test(test_catalog_nested),	  cmocka_unit_test(test_defs),
		cmocka_unit_test(test_instance_ids),	  cmocka_unit_test(test_per_cpu_refused),
		cmocka_unit_test(test_contexts_in_turn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
