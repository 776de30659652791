/* Unit tests: the profile model, loading (errors, newer formats, Perun forms), saving. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <sonde/file.h>
#include <sonde/profile.h>
#include "json.h"

static void test_resources(void **state)
{
	struct sonde_profile *p = sonde_profile__new("time");
	json_t *fixed, *cols, *extra = json_pack("{s:s}", "workload", "10");
	const char *key;
	long a, b, c;

	assert_non_null(p);
	a = sonde_profile__resource(p, "./x", "time", "real", NULL);
	b = sonde_profile__resource(p, "./x", "time", "user", NULL);
	c = sonde_profile__resource(p, "./x", "time", "real", extra);
	assert_int_equal(a, 0);
	assert_int_equal(b, 1);
	assert_int_equal(c, 2);
	assert_int_equal(sonde_profile__resource(p, "./x", "time", "real", NULL), a);
	assert_int_equal(sonde_profile__append(p, a, "amount", json_integer(5)), 0);
	assert_int_equal(sonde_profile__append(p, a, "amount", json_integer(6)), 0);
	assert_int_equal(sonde_profile__append(p, 7, "amount", json_integer(6)), -ERANGE);
	assert_int_equal(sonde_profile__resource_at(p, 2, &key, &fixed, &cols), 0);
	assert_string_equal(key, "./x#2");
	assert_string_equal(json_string_value(json_object_get(fixed, "workload")), "10");
	sonde_profile__resource_at(p, 0, &key, &fixed, &cols);
	assert_int_equal(sonde_profile__column_len(cols, "amount"), 2);
	assert_int_equal(sonde_profile__resource_count(p), 3);
	json_decref(extra);
	sonde_profile__free(p);
}

static struct sonde_profile *parse(const char *s, struct sonde_strbuf *err)
{
	sonde_strbuf__reset(err);
	return sonde_profile__parse(s, strlen(s), "t.json", err);
}

static void test_errors(void **state)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;

	assert_null(parse("{\n  \"a\": [1, 2,,]\n}", &err));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err.buf, "'t.json' is not valid JSON: line 2, column"));
	assert_null(parse("[1]", &err));
	assert_non_null(strstr(err.buf, "not a JSON object"));
	assert_null(parse("{\"format_version\": 2, \"header\": {}}", &err));
	assert_int_equal(errno, ENOTSUP);
	assert_non_null(strstr(err.buf, "format_version 2 is newer"));
	assert_null(parse("{\"format_version\": \"1\"}", &err));
	assert_int_equal(errno, EINVAL);
	assert_null(parse("{\"format_version\": 1, \"resource_type_map\": {\"a#0\": {}},"
			  " \"resources\": {\"a#0\": {\"amount\": [1], \"order\": [1, 2]}}}",
			  &err));
	assert_non_null(strstr(err.buf, "differ in length"));
	assert_null(parse("{\"format_version\": 1, \"resources\": {\"a#0\": {}}}", &err));
	assert_non_null(strstr(err.buf, "no resource_type_map entry"));
	assert_null(parse("{\"x\": 1}", &err));
	sonde_strbuf__release(&err);
}

static void test_perun_records(void **state)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_profile *p =
		parse("{\"origin\": \"abc\", \"header\": {\"type\": \"time\", \"cmd\": \"./t\","
		      " \"units\": {\"time\": \"s\"}}, \"collector_info\": {\"name\": \"time\"},"
		      " \"global\": {\"timestamp\": 0.5, \"resources\": ["
		      " {\"uid\": \"./t\", \"type\": \"time\", \"subtype\": \"real\", \"order\": "
		      "1, \"amount\": 0.25},"
		      " {\"uid\": \"./t\", \"type\": \"time\", \"subtype\": \"user\", \"order\": "
		      "1, \"amount\": 0.125},"
		      " {\"uid\": \"./t\", \"type\": \"time\", \"subtype\": \"real\", \"order\": "
		      "2, \"amount\": 0.5}]}}",
		      &err);
	json_t *fixed, *cols;

	assert_non_null(p);
	assert_int_equal(sonde_profile__resource_count(p), 2);
	sonde_profile__resource_at(p, 0, NULL, &fixed, &cols);
	assert_string_equal(json_string_value(json_object_get(fixed, "subtype")), "real");
	assert_int_equal(json_array_size(json_object_get(cols, "amount")), 2);
	assert_true(json_real_value(json_array_get(json_object_get(cols, "amount"), 1)) == 0.5);
	assert_string_equal(sonde_profile__origin(p), "abc");
	assert_string_equal(
		json_string_value(json_object_get(sonde_profile__metadata(p), "converted_from")),
		"perun");
	assert_null(json_object_get(sonde_profile__root(p), "global"));
	sonde_profile__free(p);

	/* memory-style records: object uid, list form, a missing column is padded */
	p = parse(
		"{\"header\": {\"type\": \"memory\"}, \"resources\": ["
		" {\"uid\": {\"source\": \"m.c\", \"function\": \"main\", \"line\": 22},"
		"  \"type\": \"memory\", \"subtype\": \"malloc\", \"amount\": 4, \"address\": 100},"
		" {\"uid\": {\"source\": \"m.c\", \"function\": \"main\", \"line\": 22},"
		"  \"type\": \"memory\", \"subtype\": \"malloc\", \"amount\": 8}]}",
		&err);
	assert_non_null(p);
	assert_int_equal(sonde_profile__resource_count(p), 1);
	sonde_profile__resource_at(p, 0, NULL, &fixed, &cols);
	assert_string_equal(json_string_value(json_object_get(fixed, "uid")), "m.c:main:22");
	assert_true(json_is_null(json_array_get(json_object_get(cols, "address"), 1)));
	sonde_profile__free(p);
	sonde_strbuf__release(&err);
}

/* resources in another order than resource_type_map, or one without an entry */
static void test_resource_order(void **state)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_profile *p =
		parse("{\"format_version\": 1, \"resource_type_map\": {\"a#0\": {\"uid\": \"a\"}, "
		      "\"b#0\": {\"uid\": \"b\"}}, \"resources\": {\"b#0\": {\"amount\": [2]}, "
		      "\"a#0\": {\"amount\": [1, 1]}}}",
		      &err);
	const char *key;
	json_t *fixed, *cols;

	assert_non_null(p);
	assert_int_equal(sonde_profile__resource_at(p, 0, &key, &fixed, &cols), 0);
	assert_string_equal(key, "a#0");
	assert_int_equal(sonde_profile__column_len(cols, "amount"), 2);
	sonde_profile__free(p);
	p = parse("{\"format_version\": 1, \"resource_type_map\": {\"a#0\": {\"uid\": \"a\"}}, "
		  "\"resources\": {\"a#0\": {\"amount\": [1]}, \"c#0\": {\"amount\": [3]}}}",
		  &err);
	assert_null(p);
	assert_non_null(strstr(err.buf, "'c#0' has no resource_type_map entry"));
	sonde_strbuf__release(&err);
}

static void test_round_trip(void **state)
{
	char dir[] = "/tmp/sonde-test-XXXXXX", path[64];
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_profile *p = sonde_profile__new("time"), *q;
	long r;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/p.json", dir);
	r = sonde_profile__resource(p, "u", "time", "real", NULL);
	sonde_profile__append(p, r, "amount", json_integer(42));
	sonde_profile__set_origin(p, "0123456789012345678901234567890123456789");
	sonde_profile__add_warning(p, "outliers", "m", "f");
	assert_int_equal(sonde_profile__save(p, path), 0);
	q = sonde_profile__load(path, &err);
	assert_non_null(q);
	assert_true(json_equal(sonde_profile__root(p), sonde_profile__root(q)));
	/* the loaded profile keeps numbering resources after the loaded ones */
	assert_int_equal(sonde_profile__resource(q, "u", "time", "user", NULL), 1);
	assert_non_null(json_object_get(
		json_object_get(sonde_profile__root(q), "resource_type_map"), "u#1"));
	/* and finds a loaded resource by its fixed properties */
	assert_int_equal(sonde_profile__resource(q, "u", "time", "real", NULL), 0);
	assert_int_equal(sonde_profile__resource(q, "u", "time", "sys", NULL), 2);
	/* saving into a missing directory fails and leaves nothing */
	snprintf(path, sizeof(path), "%s/missing/p.json", dir);
	assert_int_equal(sonde_profile__save(p, path), -ENOENT);
	sonde_profile__free(p);
	sonde_profile__free(q);
	snprintf(path, sizeof(path), "%s/p.json", dir);
	unlink(path);
	rmdir(dir);
	sonde_strbuf__release(&err);
}

/*
 * A loaded profile's resources stay on the reader's tape: read through the
 * accessors without their trees, made on request, and written back in the
 * document's order (those without columns last, as before).
 */
static void test_packed(void **state)
{
	static const char doc[] = "{\"format_version\": 1, \"header\": {\"type\": \"mixed\"},"
				  " \"resource_type_map\": {"
				  "  \"a#0\": {\"uid\": \"a\", \"type\": \"time\", \"n\": 7, "
				  "\"r\": 0.5, \"b\": true, \"summary\": {\"bytes\": 64},"
				  " \"trace\": [{\"function\": \"f\"}, 3, {\"function\": 1}]},"
				  "  \"b#0\": {\"uid\": {\"f\": \"m\", \"l\": 3}},"
				  "  \"c#0\": {\"uid\": \"c\"}},"
				  " \"resources\": {\"b#0\": {\"amount\": [1, null, \"x\", 2.5]},"
				  "  \"a#0\": {\"amount\": [4], \"size\": [9]}}}";
	static const char *const abc[] = { "a#0", "b#0", "c#0" }, *const bac[] = { "b#0", "a#0",
										   "c#0" };
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_profile *p = parse(doc, &err);
	struct sonde_scalar v;
	double *vals = NULL;
	size_t cap = 0, len, i;
	const char *key;
	json_t *fixed, *cols, *back, *m;
	char *text;
	void *it;

	assert_non_null(p);
	assert_int_equal(sonde_profile__resource_count(p), 3);
	assert_int_equal(sonde_profile__fixed_scalar(p, 0, "n", &v), JSON_INTEGER);
	assert_int_equal(v.i, 7);
	assert_int_equal(sonde_profile__fixed_scalar(p, 0, "r", &v), JSON_REAL);
	assert_true(v.d == 0.5);
	assert_int_equal(sonde_profile__fixed_scalar(p, 0, "b", &v), JSON_TRUE);
	assert_int_equal(sonde_profile__fixed_scalar(p, 0, "none", &v), -1);
	assert_int_equal(v.type, -1);
	assert_int_equal(sonde_profile__fixed_scalar(p, 1, "uid", &v), JSON_OBJECT);
	assert_int_equal(sonde_profile__fixed_member(p, 0, "summary", "bytes", &v), JSON_INTEGER);
	assert_int_equal(v.i, 64);
	assert_int_equal(sonde_profile__fixed_member(p, 0, "summary", "count", &v), -1);
	assert_int_equal(sonde_profile__fixed_member(p, 0, "n", "x", &v), -1);
	{
		const char **fns = NULL;
		size_t fcap = 0;
		struct sonde_strbuf u = SONDE_STRBUF_INIT;

		assert_int_equal(
			sonde_profile__fixed_strings(p, 0, "trace", "function", &fns, &fcap), 3);
		assert_string_equal(fns[0], "f");
		assert_null(fns[1]);
		assert_null(fns[2]);
		assert_int_equal(sonde_profile__fixed_strings(p, 0, "n", "function", &fns, &fcap),
				 -ENOENT);
		free(fns);
		/* an object uid's text: its values joined (its tree made for it) */
		assert_int_equal(sonde_profile__uid_text(p, 1, &u), 0);
		assert_string_equal(u.buf, "m:3");
		sonde_strbuf__release(&u);
	}
	assert_string_equal(sonde_profile__fixed_string(p, 0, "type"), "time");
	assert_null(sonde_profile__fixed_string(p, 0, "n"));
	assert_int_equal(sonde_profile__numbers(p, 1, "amount", &vals, &cap), 4);
	assert_true(vals[0] == 1 && isnan(vals[1]) && isnan(vals[2]) && vals[3] == 2.5);
	assert_int_equal(sonde_profile__numbers(p, 0, "size", &vals, &cap), 1);
	assert_true(vals[0] == 9);
	assert_int_equal(sonde_profile__numbers(p, 2, "amount", &vals, &cap), -ENOENT);
	assert_int_equal(sonde_profile__numbers(p, 0, "nope", &vals, &cap), -ENOENT);
	/* a member other than the two maps: they stay packed */
	assert_string_equal(
		json_string_value(json_object_get(sonde_profile__part(p, "header"), "type")),
		"mixed");
	/* written from the tape, the same bytes as from the trees */
	{
		struct sonde_profile *q = parse(doc, &err);
		size_t l0, l1;
		char *t0 = sonde_profile__dump(p, &l0), *t1;

		assert_non_null(q);
		assert_non_null(sonde_profile__root(q)); /* every tree made */
		t1 = sonde_profile__dump(q, &l1);
		assert_non_null(t0);
		assert_non_null(t1);
		assert_string_equal(t0, t1);
		free(t0);
		free(t1);
		sonde_profile__free(q);
	}
	/* made on request; a change to a tree is what the accessors then read */
	assert_int_equal(sonde_profile__resource_at(p, 2, &key, &fixed, &cols), 0);
	assert_string_equal(key, "c#0");
	assert_int_equal(json_object_size(cols), 0);
	json_object_set_new(fixed, "uid", json_string("z"));
	assert_string_equal(sonde_profile__fixed_string(p, 2, "uid"), "z");
	/* written back: resource_type_map in its order, resources in theirs, c#0 last */
	text = sonde_profile__dump(p, &len);
	assert_non_null(text);
	back = json_loads(text, 0, NULL);
	assert_non_null(back);
	m = json_object_get(back, "resource_type_map");
	it = json_object_iter(m);
	for (i = 0; i < 3; i++, it = json_object_iter_next(m, it))
		assert_string_equal(json_object_iter_key(it), abc[i]);
	m = json_object_get(back, "resources");
	it = json_object_iter(m);
	for (i = 0; i < 3; i++, it = json_object_iter_next(m, it))
		assert_string_equal(json_object_iter_key(it), bac[i]);
	assert_string_equal(
		json_string_value(json_object_get(
			json_object_get(json_object_get(back, "resource_type_map"), "c#0"), "uid")),
		"z");
	assert_int_equal(json_array_size(json_object_get(json_object_get(m, "b#0"), "amount")), 4);
	/* the whole document is the tree now: the same answers, the same bytes */
	assert_int_equal(json_object_size(json_object_get(sonde_profile__root(p), "resources")), 3);
	{
		size_t l2;
		char *t2 = sonde_profile__dump(p, &l2);

		assert_non_null(t2);
		assert_string_equal(t2, text);
		free(t2);
	}
	assert_string_equal(sonde_profile__fixed_string(p, 0, "type"), "time");
	/* and a resource added to it comes after the loaded ones */
	assert_int_equal(sonde_profile__resource(p, "a", "time", NULL, NULL), 3);
	json_decref(back);
	free(text);
	free(vals);
	sonde_profile__free(p);
	/* an error found on the tape names the resource, as the tree's check did */
	assert_null(parse("{\"format_version\": 1, \"resource_type_map\": {\"a#0\": 3},"
			  " \"resources\": {}}",
			  &err));
	assert_non_null(strstr(err.buf, "resource_type_map entry 'a#0' is not an object"));
	assert_null(parse("{\"format_version\": 1, \"resource_type_map\": {\"a#0\": {}},"
			  " \"resources\": {\"a#0\": {\"amount\": 1}}}",
			  &err));
	assert_non_null(strstr(err.buf, "a column of resource 'a#0' is not an array"));
	/* a key twice: jansson reads it and refuses it */
	assert_null(parse("{\"format_version\": 1, \"resource_type_map\": {\"a#0\": {},"
			  " \"a#0\": {}}, \"resources\": {}}",
			  &err));
	assert_non_null(strstr(err.buf, "duplicate"));
	sonde_strbuf__release(&err);
}

/*
 * A member given as text: written as it is, read as the tree its text makes
 * (only when asked for), replaced by a tree or by other text.
 */
/* What sonde_profile__write puts in a file must be the dump and a newline. */
static void written_is_dump(const struct sonde_profile *p, const char *dump)
{
	char dir[] = "/tmp/sonde-w-XXXXXX", path[64], *buf;
	size_t n;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/p.json", dir);
	assert_int_equal(sonde_profile__write(p, path, 0, NULL), 0);
	assert_int_equal(sonde_file__read(path, &buf, &n), 0);
	assert_int_equal(n, strlen(dump) + 1);
	assert_memory_equal(buf, dump, n - 1);
	assert_int_equal(buf[n - 1], '\n');
	free(buf);
	unlink(path);
	rmdir(dir);
}

static void test_text_part(void **state)
{
	struct sonde_profile *p = sonde_profile__new("time"), *q = sonde_profile__new("time");
	json_t *tree = json_pack("{s:[[i, i], [i, i]], s:s}", "rows", 1, 2, 3, 4, "k", "v");
	struct sonde_strbuf text = SONDE_STRBUF_INIT;
	char *a, *b;
	size_t la, lb;

	(void)state;
	assert_int_equal(sonde_json__dump_layout(&text, tree, 1, 1), 0);
	assert_int_equal(sonde_profile__set_text(p, "trace", &text), 0);
	assert_int_equal(text.len, 0); /* taken */
	assert_int_equal(sonde_profile__set_part(q, "trace", json_incref(tree)), 0);
	/* members set after it keep their places; nothing made to set them */
	assert_int_equal(sonde_profile__set_part(p, "machine", json_object()), 0);
	assert_int_equal(sonde_profile__set_part(q, "machine", json_object()), 0);
	a = sonde_profile__dump(p, &la);
	b = sonde_profile__dump(q, &lb);
	assert_non_null(strstr(a, "\"rows\": [\n   [1,2],\n   [3,4]\n  ]"));
	assert_string_equal(a, b);
	written_is_dump(p, b); /* the text written from where it is */
	free(a);
	assert_true(json_equal(sonde_profile__part(p, "trace"), tree));
	assert_true(json_equal(sonde_profile__root(p), sonde_profile__root(q)));
	a = sonde_profile__dump(p, &la); /* the tree, written as before */
	assert_string_equal(a, b);
	free(a);
	/* replaced by other text, then by a tree: the last one counts */
	assert_int_equal(sonde_strbuf__adds(&text, "[1]"), 0);
	assert_int_equal(sonde_profile__set_text(p, "trace", &text), 0);
	assert_int_equal(sonde_strbuf__adds(&text, "[2]"), 0);
	assert_int_equal(sonde_profile__set_text(p, "trace", &text), 0);
	a = sonde_profile__dump(p, &la);
	assert_non_null(strstr(a, "\"trace\": [2]"));
	free(a);
	assert_int_equal(sonde_profile__set_part(p, "trace", json_string("t")), 0);
	assert_string_equal(json_string_value(sonde_profile__part(p, "trace")), "t");
	a = sonde_profile__dump(p, &la);
	assert_non_null(strstr(a, "\"trace\": \"t\""));
	free(a);
	free(b);
	json_decref(tree);
	sonde_strbuf__release(&text);
	sonde_profile__free(p);
	sonde_profile__free(q);
}

/* jansson's allocations, counted (json_set_alloc_funcs) */
static size_t jansson_allocs;

static void *counting_malloc(size_t n)
{
	jansson_allocs++;
	return malloc(n);
}

/*
 * A resource's columns given as text: written as the tree of the same
 * values would be, read through every accessor as that tree, and refused
 * for a resource that is not this writer's.
 */
static void test_columns_text(void **state)
{
	struct sonde_profile *p = sonde_profile__new("time"), *q = sonde_profile__new("time");
	struct sonde_strbuf text = SONDE_STRBUF_INIT, err = SONDE_STRBUF_INIT;
	static const json_int_t a[3] = { 5, -1, 7 }, b[3] = { 1, 2, 3 };
	long r = sonde_profile__resource(p, "f", "mixed", "time", NULL), s, k;
	double *vals = NULL;
	size_t cap = 0, la, lb;
	json_t *cols;
	char *da, *db;

	(void)state;
	s = sonde_profile__resource(p, "g", "mixed", "time", NULL);
	assert_int_equal(sonde_profile__resource(q, "f", "mixed", "time", NULL), 0);
	assert_int_equal(sonde_profile__resource(q, "g", "mixed", "time", NULL), 1);
	for (k = 0; k < 3; k++) {
		sonde_profile__append(q, 0, "amount", json_integer(a[k]));
		sonde_profile__append(q, 0, "size", json_integer(b[k]));
	}
	sonde_profile__append(p, s, "amount", json_integer(9));
	sonde_profile__append(q, 1, "amount", json_integer(9));
	sonde_strbuf__addch(&text, '{');
	assert_int_equal(sonde_json__put_member(&text, "amount", 0, 0, true), 0);
	assert_int_equal(sonde_json__put_row(&text, a, 3, 0, 0, 0), 0);
	assert_int_equal(sonde_json__put_member(&text, "size", 0, 0, false), 0);
	assert_int_equal(sonde_json__put_row(&text, b, 3, 0, 0, 0), 0);
	sonde_strbuf__addch(&text, '}');
	json_set_alloc_funcs(counting_malloc, free);
	jansson_allocs = 0;
	assert_int_equal(sonde_profile__set_columns_text(p, r, &text), 0);
	assert_int_equal(text.len, 0);
	da = sonde_profile__dump(p, &la);
	assert_true(jansson_allocs < 5); /* the placeholder: no tree of the values */
	json_set_alloc_funcs(malloc, free);
	db = sonde_profile__dump(q, &lb);
	assert_string_equal(da, db);
	jansson_allocs = 0;
	json_set_alloc_funcs(counting_malloc, free);
	written_is_dump(p, db);
	assert_int_equal(jansson_allocs, 0);
	json_set_alloc_funcs(malloc, free);
	free(da);
	/* read as the tree: numbers, the columns, a value appended, then written */
	assert_int_equal(sonde_profile__numbers(p, (size_t)r, "size", &vals, &cap), 3);
	assert_true(vals[0] == 1 && vals[2] == 3);
	assert_int_equal(sonde_profile__resource_at(p, (size_t)r, NULL, NULL, &cols), 0);
	assert_int_equal(json_array_size(json_object_get(cols, "amount")), 3);
	assert_int_equal(sonde_profile__append(p, r, "amount", json_integer(8)), 0);
	assert_int_equal(sonde_profile__append(q, 0, "amount", json_integer(8)), 0);
	assert_true(json_equal(sonde_profile__root(p), sonde_profile__root(q)));
	da = sonde_profile__dump(p, &la);
	free(db);
	db = sonde_profile__dump(q, &lb);
	assert_string_equal(da, db);
	free(da);
	free(db);
	assert_int_equal(sonde_profile__set_columns_text(p, 7, &text), -ERANGE);
	sonde_profile__free(p);
	sonde_profile__free(q);
	/* a loaded (packed) resource is not the writer's */
	p = parse("{\"format_version\": 1, \"resource_type_map\": {\"a#0\": {\"uid\": \"a\"}}, "
		  "\"resources\": {\"a#0\": {\"amount\": [1]}}}",
		  &err);
	assert_non_null(p);
	sonde_strbuf__adds(&text, "{}");
	assert_int_equal(sonde_profile__set_columns_text(p, 0, &text), -EINVAL);
	sonde_profile__free(p);
	free(vals);
	sonde_strbuf__release(&text);
	sonde_strbuf__release(&err);
}

/*
 * What the packed reader and the text writer are for, asserted: loading a
 * profile of 20 000 resources, reading their values and saving it make no
 * tree per resource (a few hundred of jansson's allocations in all, where
 * the trees take several per resource), and a member given as text is
 * written without one.
 */
static void test_no_trees(void **state)
{
	struct sonde_strbuf doc = SONDE_STRBUF_INIT, err = SONDE_STRBUF_INIT,
			    text = SONDE_STRBUF_INIT;
	struct sonde_profile *p;
	double *vals = NULL;
	size_t cap = 0, len, i, made;
	const json_int_t row[2] = { 1, 2 };
	char *out;

	(void)state;
	sonde_strbuf__adds(&doc, "{\"format_version\": 1, \"resource_type_map\": {");
	for (i = 0; i < 20000; i++)
		sonde_strbuf__addf(&doc, "%s\"r%zu#0\": {\"uid\": \"r%zu\", \"type\": \"time\"}",
				   i ? "," : "", i, i);
	sonde_strbuf__adds(&doc, "}, \"resources\": {");
	for (i = 0; i < 20000; i++)
		sonde_strbuf__addf(&doc, "%s\"r%zu#0\": {\"amount\": [%zu, 2]}", i ? "," : "", i,
				   i);
	sonde_strbuf__adds(&doc, "}}");
	json_set_alloc_funcs(counting_malloc, free);
	jansson_allocs = 0;
	p = sonde_profile__parse(doc.buf, doc.len, "big", &err);
	assert_non_null(p);
	assert_int_equal(sonde_profile__resource_count(p), 20000);
	for (i = 0; i < 20000; i += 997)
		assert_int_equal(sonde_profile__numbers(p, i, "amount", &vals, &cap), 2);
	assert_true(vals[0] == 19940.0);    /* the last one read: r19940 */
	out = sonde_profile__dump(p, &len); /* (in parts, on the machine's CPUs) */
	assert_non_null(strstr(out, "\"r19999#0\": {\"amount\":[19999,2]}"));
	made = jansson_allocs;
	if (made >= 1000)
		fail_msg("loading, reading and saving 20000 resources made %zu jansson values",
			 made);
	/* the tree of everything, for contrast: several values a resource; it is
	   written, in one piece, as the tape was */
	assert_non_null(sonde_profile__root(p));
	assert_true(jansson_allocs - made > 40000);
	{
		size_t tlen;
		char *tree = sonde_profile__dump(p, &tlen);

		assert_int_equal(tlen, len);
		assert_string_equal(tree, out);
		free(tree);
	}
	free(out);
	sonde_profile__free(p);

	p = sonde_profile__new("time");
	sonde_strbuf__addch(&text, '[');
	for (i = 0; i < 20000; i++)
		assert_int_equal(sonde_json__put_row(&text, row, 2, 1, 1, i), 0);
	assert_int_equal(sonde_json__put_close(&text, ']', 20000, 1, 1), 0);
	jansson_allocs = 0;
	assert_int_equal(sonde_profile__set_text(p, "slices", &text), 0);
	out = sonde_profile__dump(p, &len);
	assert_non_null(strstr(out, "\"slices\": [\n  [1,2],\n  [1,2]"));
	free(out);
	assert_true(jansson_allocs < 10);
	assert_int_equal(json_array_size(sonde_profile__part(p, "slices")), 20000);
	sonde_profile__free(p);
	json_set_alloc_funcs(malloc, free);
	free(vals);
	sonde_strbuf__release(&doc);
	sonde_strbuf__release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resources),      cmocka_unit_test(test_errors),
		cmocka_unit_test(test_perun_records),  cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_resource_order), cmocka_unit_test(test_packed),
		cmocka_unit_test(test_text_part),      cmocka_unit_test(test_no_trees),
		cmocka_unit_test(test_columns_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
